"""The compare screen's form: schedulers (the baseline first), a job, group, job files, a command (with the figures
to read from its output) or a start-up beside a load, repeats and runtime, or live alternation; read into the
experiment service's plan, or a sentence saying what is wrong."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Label, Select, SelectionList, Static

from iosched.core.base.errors import IoschedError
from iosched.core.documents.params import MAX_SECONDS, MIN_SECONDS, BadValue, number, parse_variants
from iosched.core.experiment.alternation import AlternationPlan
from iosched.core.experiment.cmd_metrics import CmdMetric, parse_cmd_metrics
from iosched.core.experiment.compare import ComparePlan
from iosched.core.experiment.local_plan import LocalPlan, TargetRequest
from iosched.core.experiment.matrix import MatrixPlan, MatrixRunPlan
from iosched.core.load.jobs import CATALOG, GROUPS, Job, JobFile, resolve_jobs, space_needed
from iosched.core.load.replay import ReplayRequest
from iosched.core.load.startup_replay import StartupJob, startup_job
from iosched.tui.checklist import MarkedCheckbox, SchedulerChecklist
from iosched.tui.job_run import DEMO_FIRST, SUGGESTED, TUI_MAX_SIZE
from iosched.tui.plain import plain

CMD_METRIC_START = re.compile(r"[a-z][a-z0-9_]{0,31}=")  # where the next NAME=REGEX of the figure field begins
SERVED_NOTICE = ("a browser view runs catalog jobs and groups only: commands (cmd:), replays (replay:) and job files "
                 "are refused, even with --allow-writes; run those with `iosched compare` in a terminal")
# "replay: FILE" or "replay timed: FILE": a capture replayed as the workload (`compare --replay`).
REPLAY_SPEC = re.compile(r"replay(?:\s+(fast|timed))?:\s*(\S.*)")
# The job field's hint fits the field at 80 columns (45 wide; the groups are in the list above); its tooltip says
# it in words.
SPEC_HINT = "or: jobs, job files, cmd: CMD, replay: FILE"
SPEC_TOOLTIP = ("Instead of the job above: a catalog group or jobs (comma-separated, `iosched jobs` lists them), "
                "fio job files, cmd: COMMAND (a command timed under each scheduler), replay: CAPTURE (a capture "
                "replayed; replay timed: CAPTURE keeps its timing), or startup: CAPTURE beside JOB (an application's "
                "start-up beside a load: startup: bundled beside startup-under-load is the S suite's table)")
# "startup: FILE beside JOB|GROUP" (or "startup: FILE" alone): a start-up replayed beside a load (`compare --startup`).
STARTUP_SPEC = re.compile(r"startup:\s*(\S+)(?:\s+beside\s+(\S+))?")
# The demo's preset: its first scene, an application started while the disk is flooded (the bundled start-up beside
# a write flood, judged on its start-up time), until a verdict, looks at 4 and 6 runs per variant.
DEMO_STARTUP = "startup: bundled beside seq-writers-1"
DEMO_STARTUP_LABEL = "start an application while the disk is flooded"
DEMO_STARTUP_INFO = ("a cold Python start, its 1563 reads replayed one at a time beside a write flood: its start-up "
                     "time under each scheduler")  # whole in the 3 rows it has at 80 columns
DEMO_RUNTIME_S, DEMO_REPEATS = 10, 6


def catalog_only(spec: str) -> bool:
    """Whether every item of a job field names a catalog job or group (no command, no file by path)."""
    return all(part.strip() in CATALOG or part.strip() in GROUPS for part in spec.split(","))


def _number(text: str, lo: float, hi: float, what: str) -> float:
    """A number typed in the form, read as a flag's is (core/documents/params.py: ASCII digits, in range)."""
    try:
        return float(number(lo, hi)(text.strip()))
    except BadValue:
        raise ValueError(f"{what} must be a number between {lo:g} and {hi:g}") from None


def tui_target(device: str, jobs: list[Job | JobFile], destroy: bool) -> TargetRequest:
    """Where the TUI's jobs write: sized for the TUI; over the device's data only once its name was typed."""
    return TargetRequest(destroy_data=device if destroy else None, size=space_needed(jobs, TUI_MAX_SIZE))


class CompareForm(Vertical):
    """The form; `plan()` reads it. A browser tab (``served``) takes catalog jobs and groups only."""

    def __init__(self, device: str, current: str | None, available: list[str], served: bool,
                 spec: str = "", demo: bool = False) -> None:
        super().__init__(id="form")
        self.device = device
        self.current = current
        self.available = available
        self.served = served
        self.spec = spec  # the job field's first text (the live screen's last capture: "replay: FILE")
        self.demo = demo  # `iosched demo`'s sandbox: its contention job preset, until a verdict

    def compose(self) -> ComposeResult:
        other = next((s for s in ("bfq", "mq-deadline", "kyber", "none", *self.available) if s != self.current
                      and s in self.available), None)  # one outside the four when the device lists no other
        picks = {self.current, other}
        first = (DEMO_FIRST,) if self.demo else ()
        jobs = [(DEMO_STARTUP_LABEL, DEMO_STARTUP)] if self.demo else []
        jobs += [(n, n) for n in (*first, *SUGGESTED) if n == DEMO_FIRST or not CATALOG[n].writes]
        jobs += [(f"group {g.name} ({len(g.jobs)} jobs)", g.name) for g in GROUPS.values() if not g.startup]
        jobs += [(j.name, j.name) for j in CATALOG.values() if j.name not in (*first, *SUGGESTED)]
        preset = jobs[0][1]
        with Horizontal():
            with Vertical(id="left"):
                # What the device runs now is what the others are judged against (b makes another the baseline).
                yield SchedulerChecklist(self.available, picks, id="schedulers", baseline=self.current)
                yield Static("", id="baseline")
            with Vertical(id="right"):
                yield Select(jobs, value=preset, allow_blank=False, compact=True, id="job")
                yield Static(DEMO_STARTUP_INFO if preset == DEMO_STARTUP else CATALOG[preset].description,
                             id="job-info")
                spec = Input(self.spec, placeholder="or: a group or catalog jobs" if self.served else SPEC_HINT,
                             id="spec")
                spec.tooltip = None if self.served else SPEC_TOOLTIP
                yield spec
        with Horizontal():
            yield Label("repeats")
            yield Input(str(DEMO_REPEATS) if self.demo else "3", id="repeat")
            yield Label("runtime s")
            yield Input(str(DEMO_RUNTIME_S) if self.demo else "5", id="runtime")
            if not self.served:  # a browser tab runs no command, so it reads no command's figure
                yield Label("cmd figure")
                yield Input(placeholder="NAME=REGEX[:higher|lower]", id="cmd-metric")
        with Horizontal():
            yield MarkedCheckbox("live alternation", id="alternate")
            yield Label("every s")
            yield Input("3", id="every")
            yield Label("for s")
            yield Input("30", id="duration")
            # Stop when the verdict is reached, the repeats (or the duration's blocks) being the most it runs.
            yield MarkedCheckbox("until a verdict", self.demo, id="until-verdict")

    def on_mount(self) -> None:
        self.name_baseline()

    def on_selection_list_selected_changed(self, _event: SelectionList.SelectedChanged) -> None:
        self.name_baseline()

    def name_baseline(self) -> None:
        """Say before the run which variant every other is judged against, and how to choose it."""
        order = self.query_one(SchedulerChecklist).order
        if not order:
            text = "baseline: pick a scheduler"
        elif len(order) == 1:
            text = f"baseline: {order[0]} (A/A)"
        else:
            text = f"baseline: {order[0]} (b sets)"
        self.query_one("#baseline", Static).update(plain(text))

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.value == DEMO_STARTUP:
            self.query_one("#job-info", Static).update(DEMO_STARTUP_INFO)
        elif event.value in CATALOG:
            self.query_one("#job-info", Static).update(CATALOG[str(event.value)].description)
        elif event.value in GROUPS:
            self.query_one("#job-info", Static).update("a matrix: " + GROUPS[str(event.value)].description)

    def replay(self) -> ReplayRequest | None:
        """A capture to replay ("replay: FILE", "replay timed: FILE"), or None."""
        m = REPLAY_SPEC.fullmatch(self.query_one("#spec", Input).value.strip())
        return ReplayRequest(m.group(2).strip(), m.group(1) or "fast") if m else None

    def workloads(self, runtime: float) -> tuple[list[Job | JobFile], bool, str | None]:
        """What the form asks for: the jobs (one, or several for a matrix), dropped caches, or a command."""
        spec = self.query_one("#spec", Input).value.strip() or str(self.query_one("#job", Select).value)
        if self.served and not catalog_only(spec):
            raise ValueError(SERVED_NOTICE)
        if spec.startswith("replay"):
            if self.replay() is None:
                raise ValueError("replay: needs a capture after it (replay: FILE, or replay timed: FILE)")
            return [], False, None
        if spec.startswith("cmd:"):
            if not spec[4:].strip():
                raise ValueError("cmd: needs a command after it")
            return [], False, spec[4:].strip()
        if spec.startswith("startup"):
            return self.startups(spec, runtime), True, None
        try:
            jobs, group = resolve_jobs(spec)
        except IoschedError as e:
            raise ValueError(str(e)) from None
        jobs = [j.scaled(runtime=runtime, size=min(j.size, TUI_MAX_SIZE)) if isinstance(j, Job) else j for j in jobs]
        return jobs, bool(group and group.drop_caches), None

    @staticmethod
    def startups(spec: str, runtime: float) -> list[Job | JobFile]:
        """"startup: FILE beside JOB|GROUP": the start-up beside each load (a group's start-up alone first), or
        alone; its capture is read by the experiment service."""
        m = STARTUP_SPEC.fullmatch(spec)
        if m is None:
            raise ValueError("startup: needs a capture after it (startup: FILE, or startup: bundled beside JOB)")
        try:
            if m.group(2) is None:
                return [startup_job(m.group(1))]
            loads, group = resolve_jobs(m.group(2), startup=True)
            alone = [startup_job(m.group(1))] if group is not None and group.startup else []
            return [*alone, *(startup_job(m.group(1), j.scaled(runtime=runtime, size=min(j.size, TUI_MAX_SIZE))
                                          if isinstance(j, Job) else j) for j in loads)]
        except IoschedError as e:
            raise ValueError(str(e)) from None

    def cmd_metrics(self, cmd: str | None) -> list[CmdMetric]:
        """The figures to read from the command's output (as --cmd-metric, comma-separated; a regex keeps its own
        commas when the next item does not start with NAME=)."""
        fields = self.query("#cmd-metric")
        text = fields.first(Input).value.strip() if fields else ""
        if not text:
            return []
        if cmd is None:
            raise ValueError("a figure is read from a command's output: give cmd: COMMAND in the job field")
        items: list[str] = []
        for part in text.split(","):
            if items and not CMD_METRIC_START.match(part.strip()):
                items[-1] += "," + part  # a comma inside the regex
            else:
                items.append(part.strip())
        try:
            return parse_cmd_metrics(items, probe=False)  # no child on the UI thread: each run's deadline holds
        except IoschedError as e:
            raise ValueError(str(e)) from None

    def plan(self, root: str | Path, destroy: bool) -> tuple[LocalPlan[Any], int]:
        """The experiment the form asks for and its number of runs; ValueError or IoschedError, one sentence."""
        names = self.query_one(SchedulerChecklist).order  # the baseline first: core judges against it
        if len(names) < 2:
            names = names * 2  # one scheduler picked: an A/A check
        if not names:
            raise ValueError("pick at least one scheduler")
        alternate = self.query_one("#alternate", MarkedCheckbox).value
        repeat = int(_number(self.query_one("#repeat", Input).value, 2, 100, "repeats"))
        runtime = _number(self.query_one("#runtime", Input).value, MIN_SECONDS, MAX_SECONDS, "runtime")
        every, duration = 3.0, 0.0
        if alternate:  # its fields mean nothing to a batch comparison: never refuse one over them
            every = _number(self.query_one("#every", Input).value, 2, 600, "every")
            # Alternation runs whole blocks of two passes, at least two blocks (core/experiment/runner.py).
            duration = _number(self.query_one("#duration", Input).value, 4 * len(names) * every, MAX_SECONDS,
                               "duration")
        jobs, drop, cmd = self.workloads(duration + 10 if alternate else runtime)
        replay = self.replay() if not jobs and cmd is None else None
        if alternate and (cmd or replay or len(jobs) > 1 or not isinstance(jobs[0], Job)):
            raise ValueError("live alternation runs one catalog job")
        variants = parse_variants(",".join(names))
        # Until a verdict: the repeats are the most runs per variant (a first look needs 4); in alternation,
        # the duration's blocks are the most.
        until = self.query_one("#until-verdict", MarkedCheckbox).value
        if until and not alternate:
            repeat = max(4, repeat)
        most = (int(duration // every) // len(variants) // 2 if alternate else repeat) if until else None
        if most is not None and most < 3:
            raise ValueError("until a verdict, live alternation needs at least three blocks: "
                             f"a duration of {6 * len(variants) * every:g} s")
        # A matrix's boundary is made by the experiment service, in the worker (its simulation takes a second).
        matrix = MatrixPlan(variants, [*jobs], repeat, drop, 0.5, runtime) if len(jobs) > 1 else None
        reads = self.cmd_metrics(cmd)
        target = tui_target(self.device, jobs, destroy)
        plan: LocalPlan[Any]
        if matrix is not None:
            plan = MatrixRunPlan(self.device, variants, matrix=matrix, root=root, until_verdict=most, target=target)
        elif alternate:
            plan = AlternationPlan(self.device, variants, job=jobs[0], every=every, duration=duration,
                                   runtime=runtime, root=root, until_verdict=most, drop_caches=drop, settle=0.5,
                                   target=target)
        else:
            # A replay runs whole: the runtime field (5 s unless changed) would cut most captures short.
            plan = ComparePlan(self.device, variants, job=jobs[0] if jobs else None, cmd=cmd, cmd_metrics=reads,
                               replay=replay,
                               runtime=None if (jobs and isinstance(jobs[0], (Job, StartupJob))) or replay
                               else runtime,
                               repeat=repeat, drop_caches=drop, settle=0.5, root=root, until_verdict=most,
                               target=target)
        passes = int(duration // every) // len(variants) // 2 * 2
        runs = passes * len(variants) if alternate else matrix.runs if matrix is not None else repeat * len(variants)
        return plan, runs
