"""The Advise screen (`a` in the live view, or the palette): `iosched advise` for the selected device.

Goal and budget; ctrl+r plans (observe and plan: nothing changes on the device) and shows the plan with its time;
ctrl+r again runs it. The five steps (observe, plan, test, decide, keep) show as they go, the current one live;
the result is a card: the answer with its trade-offs, how to keep it, and a Persist button that writes the udev
rule through the live view's own persist path (confirmed there). Everything shown is what core sends: the plan's
lines (core/advice/plan.py), the service's events, the advice's words (core/present/advice_report.py). The work runs
in workers, as the command line runs it (core/advice/request.py, then the experiment service); Esc cancels and the
device is put back (core does that).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Button, Input, Label, Select, Static

from iosched.core.advice.advice_plan import STEPS
from iosched.core.advice.plan import over_budget_words, plan_lines
from iosched.core.advice.request import AdviceRequest, Prepared, parse_budget, parse_goals, prepare_advice
from iosched.core.base.errors import IoschedError
from iosched.core.base.terminal_text import printable_text
from iosched.core.documents.document import AdviceDoc
from iosched.core.experiment import service
from iosched.core.experiment.control import Control
from iosched.core.experiment.events import Event, RunStarted
from iosched.core.experiment.local_plan import Runs
from iosched.core.experiment.results import default_results_dir
from iosched.core.load.targets import Refused
from iosched.core.present.advice_report import headline, keep_lines, outcome_lines
from iosched.core.present.advice_words import the_rule
from iosched.core.present.result_file import ResultFile
from iosched.core.statistics.advice_rule import GOALS, Rule
from iosched.tui.dialogs import TypeNameScreen
from iosched.tui.footer import KeysFooter
from iosched.tui.plain import marked
from iosched.tui.worker_run import WorkerRun

if TYPE_CHECKING:
    from iosched.core.kernel.device_doc import DeviceDoc
    from iosched.core.live.monitor import Monitor
    from iosched.tui.live_screen import LiveScreen

RunnerFactory = Callable[[Prepared], Runs | None]
DEFAULT_BUDGET = "15m"  # every goal on a disk offering four schedulers fits, the pilot included


def fio_runner(prep: Prepared) -> Runs | None:
    """The real runs (None: this machine's): fio on the device's own filesystem's scratch file, or the raw device
    when it holds no data (or its name was typed)."""
    return None


def steps_text(current: str | None, done: bool = False) -> str:
    """"✓ observe  ✓ plan  ▶ test  · decide  · keep": the steps before the current one done, the current one live."""
    at = STEPS.index(current) if current in STEPS else -1
    parts = []
    for i, name in enumerate(STEPS):
        if done or i < at:
            parts.append(f"[$success]✓ {name}[/]")
        elif i == at:
            parts.append(f"[b $accent]▶ {name}[/]")
        else:
            parts.append(f"[$text-muted]· {name}[/]")
    return "  ".join(parts)


class StepChanged(Message):
    """Core reached one of the five steps (``what`` says what it does there)."""

    def __init__(self, step: str, what: str) -> None:
        super().__init__()
        self.step = step
        self.what = what


class Planned(Message):
    """Observe and plan ended: the plan to show, or why there is none (``refused``: a raw device holding data,
    which typing its name may allow)."""

    def __init__(self, prep: Prepared | None, error: str = "", refused: Refused | None = None) -> None:
        super().__init__()
        self.prep = prep
        self.error = error
        self.refused = refused


class AdviceEvent(Message):
    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class AdviceEnded(Message):
    """The tests ended: the advice (None when stopped or failed, with why), the device back as it was."""

    def __init__(self, doc: AdviceDoc | None, error: str = "", saved: str = "") -> None:
        super().__init__()
        self.doc = doc
        self.error = error
        self.saved = saved


class AdviseScreen(WorkerRun, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "go", "Plan / run", tooltip="make the plan (nothing changes); again: run it"),
        Binding("escape", "back", "Back / cancel",
                tooltip="cancel the running tests (the device is put back), else go back"),
    ]
    DEFAULT_CSS = """
    AdviseScreen { layout: vertical; }
    AdviseScreen #title { padding: 0 1; }
    AdviseScreen #form { height: 1; padding: 0 1; }
    AdviseScreen #form Label { padding: 0 1; }
    AdviseScreen #goal { width: 22; }
    AdviseScreen #goal SelectCurrent { border: none; height: 1; padding: 0 1; }
    AdviseScreen #budget { width: 10; height: 1; border: none; padding: 0 1; }
    AdviseScreen #steps { height: 1; padding: 0 1; margin-top: 1; }
    AdviseScreen #doing { height: 1; padding: 0 1; color: $text-muted; }
    AdviseScreen #body { height: 1fr; padding: 0 1; }
    AdviseScreen #card { height: auto; border: round $accent; padding: 0 1; display: none; }
    AdviseScreen #card #answer { text-style: bold; }
    AdviseScreen #card Button { margin: 0; }
    """

    running: reactive[bool] = reactive(False, repaint=False, init=False)
    """Observe and plan, or the tests, run in a worker: ctrl+r starts nothing, Esc cancels."""
    step: reactive[str | None] = reactive(None, repaint=False, init=False)
    """The step core last reached (one of core/advice/advice_plan.py STEPS); None before the first."""

    def __init__(self, monitor: Monitor, device: DeviceDoc, live: LiveScreen,
                 runner: RunnerFactory = fio_runner) -> None:
        super().__init__()
        self.monitor = monitor
        self.device = device.name
        self.live = live  # its persist path keeps the advice; it hears when the device is back
        self.runner = runner
        self.prep: Prepared | None = None  # the plan shown, which ctrl+r runs
        self.doc: AdviceDoc | None = None  # the advice, once decided
        self.ctl: Control | None = None
        self.thread: threading.Thread | None = None
        self.leave_when_done = False

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="title")
        with Horizontal(id="form"):
            yield Label("goal")
            yield Select([(g, g) for g in (*GOALS, "all")], value="all", allow_blank=False, id="goal")
            yield Label("budget")
            yield Input(DEFAULT_BUDGET, id="budget")
        yield Static(steps_text(None), id="steps")
        yield Static("ctrl+r makes the plan: nothing changes on the device until you run it", id="doing",
                     markup=False)
        with VerticalScroll(id="body"):
            with Vertical(id="card"):
                yield Static("", id="answer", markup=False)
                yield Button("Persist", id="persist", variant="primary")
                yield Static("", id="keep", markup=False)
            yield Static("", id="text", markup=False)  # the plan, then the runs as they end
        yield KeysFooter()

    def _title(self) -> Content:
        if self.running:
            keys = "running · Esc cancels it"
        elif self.prep is not None and self.doc is None:
            keys = "ctrl+r runs this plan · Esc goes back"
        else:
            keys = "ctrl+r plans · Esc goes back"
        return marked(f"[b]Advise: which scheduler for $device?[/b] · {keys}", device=self.device)

    def _retitle(self) -> None:
        self.query_one("#title", Static).update(self._title())

    def watch_running(self) -> None:
        self._retitle()

    def watch_step(self, step: str | None) -> None:
        self.query_one("#steps", Static).update(steps_text(step, done=self.doc is not None))

    def _doing(self, text: str) -> None:
        self.query_one("#doing", Static).update(text)

    def _text(self, lines: list[str]) -> None:
        self.query_one("#text", Static).update(printable_text("\n".join(lines)))

    def on_input_changed(self, _: Input.Changed) -> None:
        self._stale()

    def on_select_changed(self, _: Select.Changed) -> None:
        self._stale()

    def _stale(self) -> None:
        """A changed goal or budget: the plan shown is no longer the one ctrl+r would run."""
        if self.prep is not None and not self.running:
            self.prep = None
            self._text([])
            self._doing("ctrl+r makes the plan again")
            self._retitle()

    def _request(self, destroy_data: str | None = None) -> AdviceRequest:
        goal = self.query_one("#goal", Select).value
        budget = self.query_one("#budget", Input).value.strip()
        return AdviceRequest(device=self.device, goals=parse_goals(str(goal)),
                             budget_s=parse_budget(budget) if budget else None, destroy_data=destroy_data,
                             root=self.monitor.root)

    # ---- plan, then run -----------------------------------------------------------------------
    def action_go(self, destroy_data: str | None = None) -> None:
        if self.running:
            return
        if self.live.read_only:
            self.notify("This is a read-only view: advice runs tests, which are off.", severity="warning")
            return
        if self.prep is not None and self.doc is None:
            self._run(self.prep)
            return
        try:
            request = self._request(destroy_data)
        except IoschedError as e:
            self.notify(str(e), severity="error")
            return
        self.doc = None
        self.ctl = None  # nothing to cancel while it plans (a read), nor a last run's control
        self.query_one("#card").display = False
        self.running = True
        self._plan(request)

    def _on_step(self, step: str, what: str) -> None:
        self.post_message(StepChanged(step, what))

    @work(thread=True, group="advise-plan", exclusive=True, exit_on_error=False)
    def _plan(self, request: AdviceRequest) -> None:
        """Observe and plan: core reads the device (and a few files), changes nothing."""
        try:
            prep = prepare_advice(request, on_step=self._on_step)
        except Refused as e:
            self.post_message(Planned(None, str(e), e))
        except Exception as e:  # bad input, a vanished device, a fault: never take the app down
            self.post_message(Planned(None, str(e) if isinstance(e, IoschedError) else f"{type(e).__name__}: {e}"))
        else:
            self.post_message(Planned(prep))

    def on_planned(self, message: Planned) -> None:
        self.running = False
        if message.refused is not None and message.refused.confirmable:
            def confirmed(yes: bool | None) -> None:
                if yes:
                    self.action_go(destroy_data=self.device)

            self.app.push_screen(TypeNameScreen(self.device, message.refused.why), confirmed)
            return
        if message.prep is None:
            self.step = None
            self._doing(f"no plan: {message.error}")
            self.notify(message.error, title="advise", severity="error", timeout=10)
            return
        self.prep = message.prep
        plan = message.prep.plan
        self._text([*plan_lines(plan, message.prep.target), *(f"  note: {n}" for n in message.prep.notes),
                    *the_rule(Rule(alpha=message.prep.request.alpha))])
        if plan.fits:
            self._doing(f"the plan takes at most about {plan.seconds / 60:.0f} min: ctrl+r runs it (nothing has "
                        "changed yet)")
        else:
            self.prep = None  # over budget: nothing to run
            self._doing(f"over budget: {over_budget_words(plan, form=True)}; ctrl+r plans again")
        self._retitle()

    def _run(self, prep: Prepared) -> None:
        self.ctl = Control()
        self.running = True
        self._text([])
        self._doing("the tests start: the device is put back after each run")
        self._tests(prep, self.ctl)

    @work(thread=True, group="advise-run", exclusive=True, exit_on_error=False)
    def _tests(self, prep: Prepared, ctl: Control) -> None:
        """Test, decide, keep: the accepted plan through the experiment service; the advice saved in the results
        directory after every run, as the TUI keeps every result."""
        self.thread = threading.current_thread()
        saver = ResultFile.new_in(default_results_dir(self.monitor.root), self.device, "advice")
        saver.keep_empty = True

        def emit(e: Event) -> None:
            self.post_message(AdviceEvent(e))

        try:
            advice = prep.plan_to_run(self.runner(prep), self._on_step)
            outcome = service.run(advice, saver, emit, ctl)
        except Exception as e:  # nothing ran (busy, gone, refused), or a fault: never take the app down
            self.post_message(AdviceEnded(None, str(e) if isinstance(e, IoschedError) else f"{type(e).__name__}: {e}"))
            return
        saved = str(outcome.saved) if outcome.saved is not None else ""
        if outcome.status == "final":
            self.post_message(AdviceEnded(outcome.doc, saved=saved))
        else:
            why = str(outcome.error) if outcome.error is not None else outcome.reason
            self.post_message(AdviceEnded(None, why or "cancelled", saved))

    def on_step_changed(self, message: StepChanged) -> None:
        self.step = message.step
        self._doing(message.what)

    def on_advice_event(self, message: AdviceEvent) -> None:
        e = message.event
        if isinstance(e, RunStarted):
            self._doing(f"run {e.index + 1} of {e.total} · {e.label}")
            self.live.monitor.mark(self.device, e.label.split(" · ")[-1].split(":")[0], kind="run")

    def on_advice_ended(self, message: AdviceEnded) -> None:
        self.running = False
        self.thread = None
        self.prep = None
        self.live.refresh_inventory()  # the advice put the device back
        if message.doc is None:
            cancelled = self.ctl is not None and self.ctl.cancelled.is_set()
            self._doing(f"stopped: {message.error}; the device is back as it was")
            if cancelled:
                self.notify("Advice cancelled; the device is back as it was.")
            else:
                self.notify(message.error, title="advise failed", severity="error", timeout=10)
            if message.saved:
                self.notify(f"The finished runs are saved in {message.saved}.", timeout=10)
        else:
            self.show_advice(message.doc, message.saved)
            self._doing("done; the device is back as it was")
        self._retitle()
        if self.leave_when_done:
            self.dismiss(None)

    def show_advice(self, doc: AdviceDoc, saved: str = "") -> None:
        """The card: the answer and its trade-offs, how to keep it, and Persist when there is one setting to keep."""
        self.doc = doc
        self.step = "keep"
        self.watch_step("keep")  # every step done, also when it already read "keep"
        per_goal = outcome_lines(doc)  # each goal's outcome, and why it cannot tell
        if len(doc.advice) == 1:
            per_goal = per_goal[1:]  # one goal: the headline is its outcome; what follows is why
        answer = "\n".join([headline(doc), *(f"  {s}" for s in per_goal)])
        self.query_one("#answer", Static).update(printable_text(answer))
        keep = [line for k in doc.keep for line in keep_lines(k, doc.device)]
        self.query_one("#keep", Static).update(printable_text("\n".join(keep or ["nothing to change"])))
        persist = self.query_one("#persist", Button)
        persist.display = (len(doc.keep) == 1 and doc.keep[0].rule is not None and  # offered only on a switch
                           any(g.outcome == "switch" and g.recommended == doc.keep[0].variant for g in doc.advice))
        if persist.display:
            persist.label = f"Persist {doc.keep[0].variant}"
        self.query_one("#card").display = True
        self._text(["", f"The evidence, each run and the rule: iosched report {saved}" if saved else
                    "The advice could not be saved.", "ctrl+r plans again."])

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id != "persist" or self.doc is None or len(self.doc.keep) != 1:
            return
        k = self.doc.keep[0]
        dev = next((d for d in self.monitor.devices if d.name == self.device), None)
        if dev is None:
            self.notify(f"{self.device} is gone.", severity="error")
            return
        self.live.settings.persist(dev, k.scheduler, list(k.settings.items()))

    # ---- leaving (cancel and wait: tui/worker_run.py) ---------------------------------------
    def action_back(self) -> None:
        if self.cancel_to_leave():
            self._doing("cancelling: stopping fio and putting the device back…")
            return
        if not self.running:  # while it plans (a read, no Control to stop) Esc waits for the plan
            self.dismiss(None)
