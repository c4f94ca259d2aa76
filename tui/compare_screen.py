"""The experiment screen: pick schedulers, job and repeats (or live alternation), watch it run, read the verdict.

The experiment itself runs in core's experiment service on a worker thread; this screen reads its form
(compare_form.py) into a plan, hands the events it gets back and the result to its ``RunView`` (compare_run.py),
and cancels (at once: fio is signalled, the worker waits for it). Cancelling or leaving
puts the device back as it was (core does that). It gets the monitor and the device when it is made and
reports back to the screen that opened it with typed messages; while it is shown, the live screen's keys
(switch, job, tune) are simply not active.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.message_pump import MessagePump
from textual.reactive import reactive, var
from textual.screen import Screen
from textual.widgets import Static

from iosched.core.base.errors import IoschedError
from iosched.core.documents.document import AlternationDoc, CompareDoc, MatrixDoc
from iosched.core.experiment import service
from iosched.core.experiment.compare import ComparePlan
from iosched.core.experiment.control import Control
from iosched.core.experiment.events import Event, RunStarted
from iosched.core.experiment.local_plan import LocalPlan
from iosched.core.experiment.matrix import MatrixPlan, MatrixRunPlan, find_resumable
from iosched.core.experiment.results import default_results_dir
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.load.jobs import Job
from iosched.core.load.targets import Refused
from iosched.core.present.result_file import ResultFile
from iosched.tui.compare_form import SERVED_NOTICE, CompareForm, tui_target
from iosched.tui.compare_run import ExperimentEnded, ExperimentEvent, RunView
from iosched.tui.dialogs import TypeNameScreen
from iosched.tui.footer import KeysFooter
from iosched.tui.plain import marked
from iosched.tui.status_line import EXTRA
from iosched.tui.worker_run import WorkerRun

if TYPE_CHECKING:
    from iosched.core.live.monitor import Monitor


class CompareScreen(WorkerRun, Screen[None]):
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
        "of the two with its confidence interval, which carries the same Holm correction as the verdict (95% for "
        "one comparison); one not significant is \"equal within ±10%\" (its 90% interval inside the margin) or "
        "\"cannot tell\" with why, beside the smallest difference the runs could have shown. Runs that fall in two "
        "groups are named. \"cannot judge\" names what is missing (e.g. fewer than "
        "2 valid runs).\n"
        "[b]Table[/b]: per figure, each run as a dot on a log scale shared by the rows, the mean, and the "
        "difference from the baseline when significant. ctrl+d: every metric with its 95% CI, every comparison "
        "and the charts."
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
        # Priority: a text field's own ctrl+d (delete right) would take it; without a result it goes on to the field.
        Binding("ctrl+d", "details", "Details", priority=True,
                tooltip="a compare's result: every metric, every comparison and the charts, or back to its summary"),
        # Priority: the checklist's own page keys would take them, and the results are what needs paging.
        Binding("pagedown", "page_results(1)", "Results down", show=False, priority=True,
                tooltip="scroll the results down"),
        Binding("pageup", "page_results(-1)", "Results up", show=False, priority=True,
                tooltip="scroll the results up"),
    ]
    # Every row counts at 80x24: the form takes 7 rows (borderless list and select), the run view's status lines
    # one row each, so the verdict of a three-variant comparison has 13 rows below the progress bar.
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
    CompareScreen Input#cmd-metric { width: 1fr; }
    CompareScreen Input { width: 8; height: 1; border: none; padding: 0 1; }
    CompareScreen Checkbox, CompareScreen Checkbox:focus { height: 1; border: none; padding: 0; }
    CompareScreen Input:focus { border: none; }
    CompareScreen #form Label { padding: 0 1; }
    """

    running: reactive[bool] = reactive(False, repaint=False, bindings=True, init=False)
    """An experiment runs: Esc cancels it, ctrl+r and ctrl+e start nothing; the title says so."""
    resumable: reactive[tuple[Path, MatrixDoc, MatrixPlan] | None] = reactive(None, repaint=False, bindings=True,
                                                                             init=False)
    """The unfinished matrix last saved for this device (file, document, plan), which ctrl+e resumes: the key is
    shown only while there is one."""
    doc: var[CompareDoc | AlternationDoc | MatrixDoc | None] = var(None)
    """The last finished experiment's document, judged (the result shown)."""

    def __init__(self, monitor: Monitor, device: DeviceDoc, listener: MessagePump, served: bool = False,
                 spec: str = "", demo: bool = False) -> None:
        super().__init__()
        self.spec = spec  # the job field's first text
        self.demo = demo  # the demo's sandbox: the form presets its contention job, until a verdict
        self.monitor = monitor
        self.listener = listener  # gets RunStarted and Finished
        self.served = served  # a browser tab: catalog jobs and groups only, never a command or a file by path
        self.device = device.name
        self.current = device.scheduler
        self.available = list(device.schedulers)
        # What the experiment's worker and whoever may stop it share (not shown: no reactives).
        self.ctl: Control | None = None
        self.thread: threading.Thread | None = None
        self.leave_when_done = False  # Esc cancelled: go back once the device is put back
        self.resuming = False  # the running (or refused) experiment continues a saved matrix
        self.results_dir = default_results_dir(monitor.root)
        self.view = RunView(monitor, self.device)

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="title")
        yield CompareForm(self.device, self.current, self.available, self.served, self.spec, self.demo)
        yield self.view
        yield KeysFooter()

    def _title(self) -> Content:
        """What the keys do now: starting is no longer on offer while an experiment runs."""
        keys = "running · Esc cancels it" if self.running else "ctrl+r starts · Esc goes back"
        return marked(f"[b]Compare schedulers on $device[/b] · {keys}", device=self.device)

    def on_mount(self) -> None:
        self._look_for_resumable()

    def watch_running(self) -> None:
        self.query_one("#title", Static).update(self._title())

    class ResumableFound(Message):
        def __init__(self, found: tuple[Path, MatrixDoc, MatrixPlan] | None, announce: bool) -> None:
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
            # The key stays whatever the width; the jobs go first when the row is short.
            self.view.status(f"unfinished matrix: {len(doc.runs)} of {plan.runs} runs", (jobs, EXTRA),
                             "ctrl+e resumes it")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The resume key is shown only when there is something to resume, the details key with a compare's result.
        if action == "details":
            return not self.running and self.doc is not None and not isinstance(self.doc, MatrixDoc)
        return not (action == "resume" and (self.resumable is None or self.running))

    def action_details(self) -> None:
        self.view.toggle_details()

    def action_page_results(self, pages: int) -> None:
        self.view.page(pages)

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
            plan, total = self.query_one(CompareForm).plan(self.monitor.root, destroy)
        except (ValueError, IoschedError) as e:
            self.notify(str(e), severity="error")
            return
        self.view.start(total)
        self.ctl = Control()
        self._started()
        self._run(plan)

    def _started(self, resuming: bool = False) -> None:
        self.view.eta("")
        self.resumable = None  # the offer is taken or stale; a look after the run offers what is left then
        self.resuming = resuming
        self.running = True

    def action_resume(self, destroy: bool = False) -> None:
        """Continue the unfinished matrix on offer, into the same file: finished runs are kept."""
        if self._read_only():
            self.notify("This is a read-only view: experiments are off.", title="Read-only", severity="warning")
            return
        if self.running or self.resumable is None or self.served:
            return
        # The worker reads the file again under its lock: it may have moved on since it was offered.
        path, doc, plan = self.resumable
        self.view.start(plan.runs, len(doc.runs))
        self.view.status(f"resuming {path.name}…")
        self.ctl = Control()
        self._started(resuming=True)
        self._run(MatrixRunPlan(self.device, plan.variants, matrix=plan, resume=doc, root=self.monitor.root,
                                target=tui_target(self.device, plan.fio_jobs, destroy)), path)

    @work(thread=True, group="experiment", exit_on_error=False)
    def _run(self, plan: LocalPlan[Any], resume: Path | None = None) -> None:
        """The worker: the experiment service runs ``plan``; its events and outcome come back as messages."""
        self.thread = threading.current_thread()
        assert self.ctl is not None
        command = isinstance(plan, ComparePlan) and plan.cmd is not None
        if self._read_only() or (self.served and (command or not all(isinstance(j, Job) for j in plan.jobs))):
            self.post_message(ExperimentEnded(None, "refused: " + (SERVED_NOTICE if self.served else "read-only")))
            return
        saver = ResultFile(resume) if resume else ResultFile.new_in(self.results_dir, self.device, plan.kind)

        def emit(e: Event) -> None:
            self.post_message(ExperimentEvent(e))

        if resume and isinstance(plan, MatrixRunPlan):
            plan.reload = lambda: self._saved_matrix(resume)
        try:
            outcome = service.run(plan, saver, emit, self.ctl)
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

    def _saved_matrix(self, path: Path) -> MatrixDoc:
        """The saved matrix at ``path``, read again under its lock (it may have moved on since it was offered)."""
        again = find_resumable(self.device, self.results_dir, self.monitor.root, only=path)
        if again is None:
            raise IoschedError(f"{path.name} is no longer an unfinished matrix of {self.device}")
        return again[1]

    # ---- progress -----------------------------------------------------------------------------
    def on_experiment_event(self, message: ExperimentEvent) -> None:
        e = message.event
        if isinstance(e, RunStarted):
            sched = e.label.split(" · ")[-1].split(":")[0].split("#")[0]  # a matrix names "job · variant"
            self.listener.post_message(self.RunStarted(self.device, sched))
        self.view.show(e)

    def on_experiment_ended(self, message: ExperimentEnded) -> None:
        self.view.eta("")
        self.running = False
        self.thread = None
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
            self.view.status(f"stopped: {message.error}")
            if message.saved is not None:
                self._look_for_resumable()  # a cancelled matrix is offered at once
                matrix = message.kind == "matrix"
                how = "c, then ctrl+e, resumes" if self.leave_when_done else "ctrl+e resumes"  # leaving: main screen
                self.notify(f"The finished runs are saved in {message.saved}"
                            + (f"; {how} the matrix." if matrix else "."), timeout=10)
        else:
            self.doc = message.doc
            self.view.so_far([])  # the final verdict replaces the interim lines
            # The verdict comes first; the rest (secondary metrics, tables, charts) is further down.
            self.view.status("done; the device is back as it was · PgDn/PgUp scroll the results")
            self.view.show_result(message.doc, message.saved)
            self.refresh_bindings()  # ctrl+d shows with a compare's result
            self._look_for_resumable(announce=False)  # a finished matrix is no longer on offer
        if message.save_error:
            self.notify(f"results are not saved: {message.save_error}", severity="warning", timeout=10)
        self.listener.post_message(self.Finished(self.device))
        if self.leave_when_done:
            self.dismiss(None)

    # ---- leaving (cancel and wait: tui/worker_run.py) ---------------------------------------
    def action_back(self) -> None:
        if self.cancel_to_leave():
            self.view.status("cancelling: stopping fio and putting the device back…")
            return
        self.dismiss(None)
