"""The experiment screen: pick schedulers, job and repeats (or live alternation), watch it run, read the verdict.

The experiment itself runs in core on a worker thread; this screen only sends the form, shows the
events it gets back, and cancels (at once: fio is signalled, the worker waits for it). Cancelling or leaving
puts the device back as it was (core does that). It gets the monitor and the device when it is made and
reports back to the screen that opened it with typed messages; while it is shown, the live screen's keys
(switch, job, tune) are simply not active.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.message_pump import MessagePump
from textual.screen import Screen
from textual.widgets import Input, Label, ProgressBar, Select, SelectionList, Static

from iosched.cli.report import text_report
from iosched.core.base.errors import IoschedError
from iosched.core.base.units import short_number
from iosched.core.experiment import service
from iosched.core.experiment.matrix import MatrixPlan, find_resumable
from iosched.core.experiment.results import default_results_dir
from iosched.core.experiment.runner import Control, Event, parse_variants
from iosched.core.experiment.service import ExperimentPlan, Kind, ResultFile, TargetRequest
from iosched.core.kernel.devices import BlockDevice
from iosched.core.load.jobs import CATALOG, GROUPS, Job, JobFile, resolve_jobs, space_needed
from iosched.core.load.targets import Refused
from iosched.tui.checklist import MarkedCheckbox, SchedulerChecklist
from iosched.tui.dialogs import TypeNameScreen
from iosched.tui.footer import KeysFooter
from iosched.tui.job_run import SUGGESTED, TUI_MAX_SIZE

if TYPE_CHECKING:
    from iosched.core.live.monitor import Monitor


class ExperimentEvent(Message):
    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event

    def can_replace(self, message: Message) -> bool:
        # A newer fio status replaces a stale one still queued; run boundaries are never dropped.
        return (isinstance(message, ExperimentEvent) and message.event.kind == "progress"
                and self.event.kind == "progress")


class ExperimentEnded(Message):
    def __init__(self, doc: dict | None, error: str = "", refused: Refused | None = None,
                 saved: Path | None = None, save_error: str = "", kind: str = "") -> None:
        super().__init__()
        self.kind = kind  # compare, alternate or matrix
        self.doc = doc
        self.error = error
        self.refused = refused
        self.saved = saved  # the file holding the result (or a cancelled matrix's finished runs)
        self.save_error = save_error  # where and why it could not be saved ("PATH: reason")


SERVED_NOTICE = ("a browser view runs catalog jobs and groups only: commands (cmd:) and job files are refused, "
                 "even with --allow-writes; run those with `iosched compare` in a terminal")


def catalog_only(spec: str) -> bool:
    """Whether every item of a job field names a catalog job or group (no command, no file by path)."""
    return all(part.strip() in CATALOG or part.strip() in GROUPS for part in spec.split(","))


def _number(text: str, lo: float, hi: float, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what} must be a number") from None
    if not lo <= value <= hi:
        raise ValueError(f"{what} must lie between {lo:g} and {hi:g}")
    return value


class CompareScreen(Screen[None]):
    HELP_KEYS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("(shift+)tab", "move between the fields"),
        ("↑/↓ · space", "highlight a scheduler · tick or untick it"),
    )
    HELP_TEXT: ClassVar[str] = (
        "[b]The experiment[/b]: every ticked scheduler runs the job (repeats × runtime s) in an order balanced "
        "against drift (A B B A A B …); a group runs every job of it (a matrix). Live "
        "alternation runs one load and switches every few seconds instead. The device is put back afterwards, "
        "also on Esc.\n"
        "[b]The verdict[/b] compares each scheduler with the baseline on IOPS (wall time for cmd:): the ratio "
        "of the two with its 95% confidence interval, Holm-corrected across schedulers, or \"no significant "
        "difference\" when the interval allows none. Other figures are shown alongside and called significant "
        "only once the IOPS verdicts all are. \"cannot judge\" names what is missing (e.g. fewer than 2 "
        "valid runs).\n"
        "[b]Table[/b]: mean ± half-width of its 95% CI over the runs — wide with few repeats; more repeats "
        "narrow it."
    )
    class RunStarted(Message):
        """A run began: the device now runs ``scheduler`` (a marker on its graphs)."""

        def __init__(self, device: str, scheduler: str) -> None:
            super().__init__()
            self.device = device
            self.scheduler = scheduler

    class Finished(Message):
        """The experiment ended (done, failed or cancelled) and the device is back as it was."""

        def __init__(self, device: str) -> None:
            super().__init__()
            self.device = device

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "start", "Start", tooltip="start the experiment"),
        # Priority: a text field's own ctrl+e (end of line) would take it; hidden, it goes on to the field.
        Binding("ctrl+e", "resume", "Resume matrix", priority=True,
                tooltip="resume the unfinished matrix last saved for this device (shown when there is one)"),
        Binding("escape", "back", "Back / cancel",
                tooltip="cancel a running experiment (the device is put back), else go back"),
        # Priority: the checklist's own page keys would take them, and the results are what needs paging.
        Binding("pagedown", "page_results(1)", "Results down", show=False, priority=True,
                tooltip="scroll the results down"),
        Binding("pageup", "page_results(-1)", "Results up", show=False, priority=True,
                tooltip="scroll the results up"),
    ]
    # Every row counts at 80x24: the form takes 7 rows (borderless list and select), the status lines one row
    # each, so the verdict of a three-variant comparison has 13 rows below the progress bar.
    DEFAULT_CSS = """
    CompareScreen { layout: vertical; }
    CompareScreen #form { height: auto; padding: 0 1; }
    CompareScreen #form Horizontal { height: auto; }
    CompareScreen #left { width: 30; height: auto; }
    CompareScreen SelectionList, CompareScreen SelectionList:focus { height: auto; max-height: 6; border: none;
                                                                     padding: 0; }
    CompareScreen #baseline { color: $text-muted; }
    CompareScreen #right { width: 1fr; height: auto; margin-left: 1; }
    CompareScreen #job-info { padding: 0 1; color: $text-muted; max-height: 3; }
    CompareScreen #right Input#spec { width: 1fr; }
    CompareScreen ProgressBar Bar { width: 1fr; }
    CompareScreen ProgressBar { width: 1fr; }
    CompareScreen Input { width: 8; height: 1; border: none; padding: 0 1; }
    CompareScreen Checkbox, CompareScreen Checkbox:focus { height: 1; border: none; padding: 0; }
    CompareScreen Input:focus { border: none; }
    CompareScreen #form Label { padding: 0 1; }
    CompareScreen #progress-row { height: 1; padding: 0 1; }
    CompareScreen #eta { width: auto; padding-left: 1; color: $text-muted; display: none; }
    CompareScreen #live { height: 1; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    CompareScreen #so-far { height: auto; padding: 0 1; color: $accent; display: none; }
    CompareScreen #results { height: 1fr; padding: 0 1; }
    """

    def __init__(self, monitor: Monitor, device: BlockDevice, listener: MessagePump, served: bool = False) -> None:
        super().__init__()
        self.monitor = monitor
        self.listener = listener  # gets RunStarted and Finished
        self.served = served  # a browser tab: catalog jobs and groups only, never a command or a file by path
        self.device = device.name
        self.current = device.scheduler
        self.available = list(device.schedulers)
        self.ctl: Control | None = None
        self.thread: threading.Thread | None = None
        self.running = False
        self.leave_when_done = False
        self.resuming = False  # the running (or refused) experiment continues a saved matrix
        self.fio_iops: float | None = None
        self.doc: dict | None = None
        self.results_dir = default_results_dir(monitor.root)
        self.resumable: tuple[Path, dict, MatrixPlan] | None = None

    def compose(self) -> ComposeResult:
        other = next((s for s in ("bfq", "mq-deadline", "kyber", "none") if s != self.current
                      and s in self.available), None)
        picks = {self.current, other}
        jobs = [(n, n) for n in SUGGESTED if not CATALOG[n].writes]
        jobs += [(f"group {g.name} ({len(g.jobs)} jobs)", g.name) for g in GROUPS.values()]
        jobs += [(j.name, j.name) for j in CATALOG.values() if j.name not in SUGGESTED]
        yield Static(f"[b]Compare schedulers on {self.device}[/b] · ctrl+r starts · Esc cancels / goes back",
                     id="title")
        with Vertical(id="form"):
            with Horizontal():
                with Vertical(id="left"):
                    yield SchedulerChecklist(self.available, picks, id="schedulers")
                    yield Static("", id="baseline")
                with Vertical(id="right"):
                    yield Select(jobs, value=SUGGESTED[0], allow_blank=False, compact=True, id="job")
                    yield Static(CATALOG[SUGGESTED[0]].description, id="job-info")
                    yield Input(placeholder="or: a group or catalog jobs" if self.served
                                else "or: a group, jobs, job files or cmd: COMMAND", id="spec")
            with Horizontal():
                yield Label("repeats")
                yield Input("3", id="repeat")
                yield Label("runtime s")
                yield Input("5", id="runtime")
            with Horizontal():
                yield MarkedCheckbox("live alternation", id="alternate")
                yield Label("every s")
                yield Input("3", id="every")
                yield Label("for s")
                yield Input("30", id="duration")
        with Horizontal(id="progress-row"):
            yield ProgressBar(total=1, show_eta=False, id="progress")
            yield Static("", id="eta")  # a matrix's own estimate, corrected by the runs so far
        yield Static("", id="live")
        yield Static("", id="so-far")
        with VerticalScroll(id="results"):
            yield Static("", id="report", markup=False)  # plain text: a model or path may hold "["
        yield KeysFooter()

    def on_mount(self) -> None:
        self._name_baseline()
        self._look_for_resumable()

    class ResumableFound(Message):
        def __init__(self, found: tuple[Path, dict, MatrixPlan] | None, announce: bool) -> None:
            super().__init__()
            self.found = found
            self.announce = announce

    @work(thread=True, group="resumable", exclusive=True, exit_on_error=False)
    def _look_for_resumable(self, announce: bool = True) -> None:
        """Offer the unfinished matrix last saved for this device: saved files are read in a worker (a large
        matrix takes a moment to parse) and the answer comes back as a message."""
        found = None if self.served else find_resumable(self.device, self.results_dir, self.monitor.root)
        self.post_message(self.ResumableFound(found, announce))

    def on_compare_screen_resumable_found(self, message: ResumableFound) -> None:
        self.resumable = message.found
        if self.resumable is not None and message.announce and not self.running:
            _, doc, plan = self.resumable
            jobs = ", ".join(j.name for j in plan.jobs[:3]) + (" …" if len(plan.jobs) > 3 else "")
            self.query_one("#live", Static).update(
                f"unfinished matrix: {len(doc['runs'])} of {plan.runs} runs ({jobs}) · ctrl+e resumes it")
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The resume key is shown only when there is something to resume.
        return not (action == "resume" and (self.resumable is None or self.running))

    def on_selection_list_selected_changed(self, _event: SelectionList.SelectedChanged) -> None:
        self._name_baseline()

    def _name_baseline(self) -> None:
        """Say before the run which variant every other is judged against, and how to choose it."""
        order = self.query_one(SchedulerChecklist).order
        if not order:
            text = "baseline: pick a scheduler"
        elif len(order) == 1:
            text = f"baseline: {order[0]} (A/A)"
        else:
            text = f"baseline: {order[0]} (b sets)"
        self.query_one("#baseline", Static).update(text)

    def action_page_results(self, pages: int) -> None:
        results = self.query_one("#results", VerticalScroll)
        results.scroll_to(y=results.scroll_y + pages * max(1, results.scrollable_content_region.height - 1),
                          animate=False)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.value in CATALOG:
            self.query_one("#job-info", Static).update(CATALOG[str(event.value)].description)
        elif event.value in GROUPS:
            self.query_one("#job-info", Static).update("a matrix: " + GROUPS[str(event.value)].description)

    def _workloads(self, runtime: float) -> tuple[list[Job | JobFile], bool, str | None]:
        """What the form asks for: the jobs (one, or several for a matrix), dropped caches, or a command."""
        spec = self.query_one("#spec", Input).value.strip() or str(self.query_one("#job", Select).value)
        if self.served and not catalog_only(spec):
            raise ValueError(SERVED_NOTICE)
        if spec.startswith("cmd:"):
            if not spec[4:].strip():
                raise ValueError("cmd: needs a command after it")
            return [], False, spec[4:].strip()
        try:
            jobs, group = resolve_jobs(spec)
        except IoschedError as e:
            raise ValueError(str(e)) from None
        jobs = [j.scaled(runtime=runtime, size=min(j.size, TUI_MAX_SIZE)) if isinstance(j, Job) else j for j in jobs]
        return jobs, bool(group and group.drop_caches), None

    def _read_only(self) -> bool:
        """The live screen was opened read-only: a second guard behind its own refusal of `c`."""
        return bool(getattr(self.listener, "read_only", False))

    # ---- starting -----------------------------------------------------------------------------
    def action_start(self, destroy: bool = False) -> None:
        if self._read_only():
            self.notify("This is a read-only view: experiments are off.", title="Read-only", severity="warning")
            return
        if self.running:
            self.notify("An experiment is already running.", severity="warning")
            return
        try:
            names = self.query_one(SchedulerChecklist).order  # the baseline first: core judges against it
            if len(names) < 2:
                names = names * 2  # one scheduler picked: an A/A check
            if not names:
                raise ValueError("pick at least one scheduler")
            alternate = self.query_one("#alternate", MarkedCheckbox).value
            repeat = int(_number(self.query_one("#repeat", Input).value, 2, 100, "repeats"))
            runtime = _number(self.query_one("#runtime", Input).value, 0.5, 3600, "runtime")
            every, duration = 3.0, 0.0
            if alternate:  # its fields mean nothing to a batch comparison: never refuse one over them
                every = _number(self.query_one("#every", Input).value, 2, 600, "every")
                # Alternation runs whole blocks of two passes, at least two blocks (core/experiment/runner.py).
                duration = _number(self.query_one("#duration", Input).value, 4 * len(names) * every, 24 * 3600,
                                   "duration")
            jobs, drop, cmd = self._workloads(duration + 10 if alternate else runtime)
            if alternate and (cmd or len(jobs) > 1 or not isinstance(jobs[0], Job)):
                raise ValueError("live alternation runs one catalog job")
            variants = parse_variants(",".join(names))
            matrix = MatrixPlan(variants, jobs, repeat, drop, 0.5, runtime) if len(jobs) > 1 else None
        except (ValueError, IoschedError) as e:
            self.notify(str(e), severity="error")
            return
        kind: Kind = "matrix" if matrix else "alternate" if alternate else "compare"
        plan = ExperimentPlan(self.device, kind, variants, job=jobs[0] if jobs and not matrix else None, cmd=cmd,
                              runtime=None if jobs and isinstance(jobs[0], Job) else runtime, matrix=matrix,
                              repeat=repeat, settle=0.5, every=every, duration=duration, root=self.monitor.root,
                              target=self._target(jobs, destroy))
        passes = int(duration // every) // len(variants) // 2 * 2
        total = passes * len(variants) if alternate else plan.total_runs
        self.query_one(ProgressBar).update(total=total, progress=0)
        self.query_one("#report", Static).update("")
        self.ctl = Control()
        self._show_so_far([])
        self._started()
        self._run(plan)

    def _target(self, jobs: list[Job | JobFile], destroy: bool) -> TargetRequest:
        """Where the TUI's jobs write: sized for the TUI; over the device's data only once its name was typed."""
        return TargetRequest(destroy_data=self.device if destroy else None, size=space_needed(jobs, TUI_MAX_SIZE))

    def _started(self, resuming: bool = False) -> None:
        self._show_eta("")
        self.resumable = None  # the offer is taken or stale; a look after the run offers what is left then
        self.running = True
        self.resuming = resuming
        self.refresh_bindings()

    def action_resume(self, destroy: bool = False) -> None:
        """Continue the unfinished matrix on offer, into the same file: finished runs are kept."""
        if self._read_only():
            self.notify("This is a read-only view: experiments are off.", title="Read-only", severity="warning")
            return
        if self.running or self.resumable is None or self.served:
            return
        # The worker reads the file again under its lock: it may have moved on since it was offered.
        path, doc, plan = self.resumable
        self.query_one(ProgressBar).update(total=plan.runs, progress=len(doc["runs"]))
        self.query_one("#report", Static).update("")
        self.query_one("#live", Static).update(f"resuming {path.name}…")
        self.ctl = Control()
        self._show_so_far([])
        self._started(resuming=True)
        self._run(ExperimentPlan(self.device, "matrix", plan.variants, matrix=plan, resume=doc,
                                 root=self.monitor.root, target=self._target(list(plan.jobs), destroy)), path)

    @work(thread=True, group="experiment", exit_on_error=False)
    def _run(self, plan: ExperimentPlan, resume: Path | None = None) -> None:
        """The worker: the experiment service runs ``plan``; its events and outcome come back as messages."""
        self.thread = threading.current_thread()
        assert self.ctl is not None
        if self._read_only() or (self.served and (plan.cmd or not all(isinstance(j, Job) for j in plan.jobs))):
            self.post_message(ExperimentEnded(None, "refused: " + (SERVED_NOTICE if self.served else "read-only")))
            return
        saver = ResultFile(resume) if resume else ResultFile.new_in(self.results_dir, self.device, plan.kind)

        def emit(e: Event) -> None:
            self.post_message(ExperimentEvent(e))

        try:
            outcome = service.run(plan, saver, emit, self.ctl,
                                  reload=(lambda: self._saved_matrix(resume)) if resume else None)
        except Refused as e:  # nothing ran: maybe the device's name, typed, allows it
            self.post_message(ExperimentEnded(None, str(e), e))
            return
        except Exception as e:  # nothing ran (busy, gone, bad input), or a fault: never take the app down
            why = str(e) if isinstance(e, IoschedError) else f"{type(e).__name__}: {e}"
            self.post_message(ExperimentEnded(None, why, saved=saver.saved, save_error=saver.error, kind=plan.kind))
            return
        final = outcome.status == "final"
        why = "" if final else str(outcome.error) if outcome.error is not None else outcome.reason
        self.post_message(ExperimentEnded(outcome.doc if final else None, why, saved=outcome.saved,
                                          save_error=outcome.save_error, kind=plan.kind))

    def _saved_matrix(self, path: Path) -> dict:
        """The saved matrix at ``path``, read again under its lock (it may have moved on since it was offered)."""
        again = find_resumable(self.device, self.results_dir, self.monitor.root, only=path)
        if again is None:
            raise IoschedError(f"{path.name} is no longer an unfinished matrix of {self.device}")
        return again[1]

    # ---- progress -----------------------------------------------------------------------------
    def on_experiment_event(self, message: ExperimentEvent) -> None:
        e = message.event
        if e.kind in ("run-start", "run-end") and e.text:  # only a matrix sends its time left
            self._show_eta(f"about {e.text} left")
        if e.kind == "run-start":
            sched = e.variant.split(" · ")[-1].split(":")[0].split("#")[0]  # a matrix names "job · variant"
            self.listener.post_message(self.RunStarted(self.device, sched))
        elif e.kind == "progress" and e.progress is not None:
            self.fio_iops = e.progress.iops
            self._live(e)
        elif e.kind == "run-end" and e.run is not None:
            self.query_one(ProgressBar).advance(1)
            if self.doc is None:
                self.doc = {"runs": []}
            m = e.run["metrics"]
            bad = "" if e.run["valid"] else f"  INVALID: {e.run['invalid_reason']}"
            line = (f"run {e.index + 1}: {e.variant}  {short_number(m.get('iops', 0))} IOPS  "
                    f"CPU/IO {m.get('cpu_us_per_io', 0):.1f} µs{bad}")
            rep = self.query_one("#report", Static)
            rep.update(f"{rep.content}\n{line}" if str(rep.content) else line)
            if e.lines:  # a compare's interim estimates (a matrix is judged at the end)
                self._show_so_far(e.lines)

    def _show_eta(self, text: str) -> None:
        """A matrix's time left beside the progress bar; no room taken from the bar otherwise."""
        eta = self.query_one("#eta", Static)
        eta.update(text)
        eta.display = bool(text)

    def _show_so_far(self, lines: list[str]) -> None:
        """The interim estimates while the run goes on; hidden (not left above the verdict) when it ends."""
        so_far = self.query_one("#so-far", Static)
        so_far.update("\n".join(f"so far: {t}" for t in lines))
        so_far.display = bool(lines)

    def _live(self, e: Event) -> None:
        rates = self.monitor.last_rates
        dev = ""
        if rates is not None and self.device in rates.disks:
            d = rates.disks[self.device]
            dev = f"   device (sampler) {short_number(d.r_s + d.w_s)} IOPS, r_await {d.r_await:.2f} ms"
        p = e.progress
        assert p is not None
        self.query_one("#live", Static).update(
            f"now: {e.variant}   fio {short_number(p.iops)} IOPS, clat {p.clat_mean_us or 0:.0f} µs{dev}")

    def on_experiment_ended(self, message: ExperimentEnded) -> None:
        self._show_eta("")
        self.running = False
        self.thread = None
        self.refresh_bindings()
        if message.refused is not None and message.refused.confirmable:
            def confirmed(yes: bool | None) -> None:
                if yes:
                    (self.action_resume if self.resuming else self.action_start)(destroy=True)

            self.app.push_screen(TypeNameScreen(self.device, message.refused.why), confirmed)
            return
        if message.doc is None:
            if self.ctl is not None and self.ctl.cancelled.is_set():
                self.notify("Experiment cancelled; the device is back as it was.")
            else:
                self.notify(message.error, title="experiment failed", severity="error", timeout=10)
            self.query_one("#live", Static).update(f"stopped: {message.error}")
            if message.saved is not None:
                self._look_for_resumable()  # a cancelled matrix is offered at once
                matrix = message.kind == "matrix"
                how = "c, then ctrl+e, resumes" if self.leave_when_done else "ctrl+e resumes"  # leaving: main screen
                self.notify(f"The finished runs are saved in {message.saved}"
                            + (f"; {how} the matrix." if matrix else "."), timeout=10)
        else:
            self.doc = message.doc
            self._show_so_far([])  # the final verdict replaces the interim lines
            # The verdict comes first; the rest (secondary metrics, tables, charts) is further down.
            self.query_one("#live", Static).update("done; the device is back as it was · PgDn/PgUp scroll the "
                                                   "results")
            if message.doc.get("kind") == "matrix":
                from iosched.cli.matrix import matrix_text

                report = matrix_text(message.doc, message.doc["judgement"])
            else:
                report = text_report(message.doc, message.doc["judgement"], verdict_first=True)
            if message.saved is not None:
                report += f"\nSaved to {message.saved}: `iosched report FILE` shows it again (--plot draws it).\n"
            self.query_one("#report", Static).update(report)
            self._look_for_resumable(announce=False)  # a finished matrix is no longer on offer
            self._show_charts(message.doc)
            self.query_one("#results", VerticalScroll).scroll_home(animate=False)  # a second run's verdict too
        if message.save_error:
            self.notify(f"results are not saved: {message.save_error}", severity="warning", timeout=10)
        self.listener.post_message(self.Finished(self.device))
        if self.leave_when_done:
            self.dismiss(None)

    def _show_charts(self, doc: dict) -> None:
        from iosched.tui.result_charts import ResultCharts  # plotext loads with the first result

        results = self.query_one("#results", VerticalScroll)
        results.query(ResultCharts).remove()
        results.mount(ResultCharts(doc))

    # ---- leaving ------------------------------------------------------------------------------
    def action_back(self) -> None:
        if self.running and self.ctl is not None:
            self.leave_when_done = True
            self.ctl.cancel()
            self.query_one("#live", Static).update("cancelling: stopping fio and putting the device back…")
            return
        self.dismiss(None)

    def cancel(self) -> None:
        """Quit path: stop fio now; the worker then puts the device back (see wait())."""
        if self.running and self.ctl is not None:
            self.ctl.cancel()

    def wait(self, timeout: float = 20.0) -> None:
        """After the UI is gone: give core the time to put the device back before the process ends."""
        t = self.thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout)
