"""The live screen's background fio job: pick, start, progress in the status line, stop, and the way out.

fio runs in a thread worker (the thread that spawns fio waits for it: `setpriv --pdeathsig` follows that
thread). The UI thread only signals: stopping or quitting never waits for fio to die; the worker reaps it and
removes the scratch file, then says so with ``JobEnded``.

``BackgroundJob`` is a part of the live screen (``screen.jobs``, a widget: live_part.py): it owns the running job
(its ``job`` reactive, which the status line shows), the worker that runs it and that worker's messages. The
screen keeps the keys and hands over the device to run on.

A job of several sections (roles: fg and bg) is shown role by role: each one's IOPS and latency in the status
line, and the latency of the role it is judged on over time in a chart under the device's graphs
(``history``; the chart is mounted inside this part on first use and shown while the job's device is selected:
the screen's ``roles_shown``), so a switch marker falls where the foreground latency moves.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual import on
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive

from iosched.core.base.errors import IoschedError
from iosched.core.base.units import short_number
from iosched.core.load.targets import Refused, target_hint
from iosched.tui.dialogs import JobPicker, TypeNameScreen
from iosched.tui.live_part import LivePart
from iosched.tui.status_line import EXTRA, KEEP, SPARE, USEFUL
from iosched.tui.widgets.line_chart import LineChart

if TYPE_CHECKING:  # the workload modules load on first use: a faster first frame
    from collections.abc import Sequence

    from iosched.core.kernel.device_doc import DeviceDoc
    from iosched.core.live.monitor import Marker, Monitor
    from iosched.core.load.fio import FioProgress
    from iosched.core.load.fio_result import FioResult
    from iosched.tui.job_roles import RoleHistory
    from iosched.tui.job_run import JobState


class JobProgressed(Message):
    """fio's latest status; a newer one replaces a stale copy still queued (a slow frame drops old progress)."""

    bubble = False  # the part's own

    def __init__(self, state: JobState, progress: FioProgress) -> None:
        super().__init__()
        self.state = state
        self.progress = progress

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, JobProgressed) and message.state is self.state


class JobEnded(Message):
    """The job finished (result), failed or was stopped (error), or needs the device name typed (refused)."""

    bubble = False

    def __init__(self, state: JobState, result: FioResult | None = None, error: str = "",
                 refused: Refused | None = None) -> None:
        super().__init__()
        self.state = state
        self.result = result
        self.error = error
        self.refused = refused


# Listed in LiveScreen.BINDINGS.
JOB_KEYS: list[BindingType] = [
    Binding("j", "job", "Job", tooltip="run a fio job on the selected device in the background (W = writes)"),
    # The status line says "x stops" while a job runs, so the footer need not.
    Binding("x", "stop_job", "Stop job", show=False, tooltip="stop the running job"),
]


class BackgroundJob(LivePart):
    """Pick, start, follow and stop one live screen's background fio job; ``job`` is the running one."""

    job: reactive[JobState | None] = reactive(None, repaint=False, init=False)
    """The background fio job now running (j starts it, x stops it), or None: the status line shows its progress
    instead of the settings line."""

    def __init__(self, monitor: Monitor, read_only: bool, demo: bool = False) -> None:
        super().__init__(monitor, read_only, id="job-part")
        self.demo = demo  # `iosched demo`: the picker puts first the job whose effect an audience should see
        self.history: RoleHistory | None = None  # the last role job's chart, kept until the next job starts
        self.shown = False  # the role chart is shown (the screen's roles_shown)

    def watch_job(self) -> None:
        self.status_changed()

    def pick(self, dev: DeviceDoc) -> None:
        """The job picker for ``dev``, unless a job runs already."""
        if self.job is not None:
            self.notify(f"{self.job.job.name} is still running on {self.job.device}: x stops it.",
                        severity="warning")
            return

        def chosen(name: str | None) -> None:
            if name is not None:
                self.start(dev.name, name)

        from iosched.tui.job_run import TUI_RUNTIME_S, picker_jobs

        self.app.push_screen(JobPicker(dev.name, picker_jobs(demo=self.demo), target_hint(dev), TUI_RUNTIME_S),
                             chosen)

    def start(self, device: str, name: str, destroy: bool = False) -> None:
        if self.job is not None or self.read_only:
            return
        from iosched.tui.job_roles import RoleHistory, chart_role, chart_title
        from iosched.tui.job_run import JobState, tui_job

        state = JobState(device, tui_job(name))
        role = chart_role(state.job)
        self.history = None if role is None else RoleHistory(device, role, chart_title(state.job, role))
        self.monitor.mark(device, "job", state.started, "job")
        self.job = state
        self.run_thread(partial(self._run, state, destroy), name="job", group="job")

    def _run(self, state: JobState, destroy: bool) -> None:
        """In a worker thread, which spawns fio and waits for it (``setpriv --pdeathsig`` follows it)."""
        from iosched.tui.job_run import run_job

        post = self.post_message
        try:
            result = run_job(state, destroy, self.monitor.root, lambda p: post(JobProgressed(state, p)))
        except Refused as e:
            post(JobEnded(state, error=str(e), refused=e))
        except IoschedError as e:
            post(JobEnded(state, error=str(e)))
        except Exception as e:  # a job must never take the app down
            post(JobEnded(state, error=f"{type(e).__name__}: {e}"))
        else:
            post(JobEnded(state, result=result))

    @on(JobProgressed)
    def progressed(self, message: JobProgressed) -> None:
        if self.job is message.state:
            p = self.job.progress = message.progress
            fio = message.state.fio
            if self.history is not None and p.roles and fio is not None:
                self.history.add(fio.started, p.elapsed, p.roles)
                if self.shown:  # the chart's figure moves with the status line's, not a tick later
                    self._draw(self.history)
            self.status_changed()

    @on(JobEnded)
    def ended(self, message: JobEnded) -> None:
        state = message.state
        self.monitor.mark(state.device, "end", kind="end")
        if self.job is state:
            self.job = None
            if self.history is not None:
                self.history.running = False
        r = message.result
        if r is not None:
            if r.roles:
                from iosched.tui.job_roles import chart_role, role_summary

                figures = role_summary(r.roles, chart_role(state.job))
            else:
                figures = f"{short_number(r.iops)} IOPS, {r.mb_s:.0f} MB/s, p99 {r.clat_p99_us or 0:.0f} µs"
            self.notify(f"{state.job.name} on {state.device}: {figures}", timeout=8)
        elif message.refused is not None and message.refused.confirmable:
            def confirmed(yes: bool | None) -> None:
                if yes:
                    self.start(state.device, state.job.name, destroy=True)

            self.app.push_screen(TypeNameScreen(state.device, message.refused.why), confirmed)
        elif state.stopping:
            self.notify(f"{state.job.name} on {state.device} stopped.")
        else:
            self.notify(message.error, title=f"{state.device}: job failed", severity="error", timeout=10)

    def stop(self) -> None:
        if self.job is None:
            self.notify("No job is running.")
            return
        self.job.stop()

    def status_parts(self) -> list[tuple[str, int]]:
        """The running job for the status line as (text, priority) parts: name, progress, IOPS and the way to
        stop it stay; latency and the device's own rate go first when the line is short."""
        job = self.job
        if job is None:
            return []
        stop = ("· x stops", KEEP)
        p = job.progress
        if p is None:
            return [(f"▶ {job.job.name}", KEEP), (f"on {job.device}: starting…", USEFUL), stop]
        elapsed = (f"{p.elapsed:.0f}/{job.job.runtime:.0f}s", KEEP)
        if job.job.roles:  # never the roles pooled into one figure, even before fio reports each
            from iosched.tui.job_roles import chart_role, role_parts

            # Each role's figures matter more than the job's name, which the chart's title also shows.
            parts = [("▶", KEEP), (job.job.name, EXTRA), elapsed, *role_parts(p.roles, chart_role(job.job))]
        else:
            parts = [(f"▶ {job.job.name}", KEEP), elapsed, (f"fio {short_number(p.iops)} IOPS", KEEP)]
            if p.clat_mean_us is not None:
                parts.append((f"{p.clat_mean_us:.0f}µs", EXTRA))
        rates = self.monitor.last_rates
        if rates is not None and job.device in rates.disks:
            d = rates.disks[job.device]
            parts.append((f"· dev {short_number(d.r_s + d.w_s)}", SPARE))
        return [*parts, stop]

    def draw_chart(self, dev: DeviceDoc | None, times: Sequence[float], marks: Sequence[Marker]) -> bool:
        """The role chart beside the device's graphs, on their times and markers, while the device of the last role
        job is selected (the picture stays after the job ends, until the next job starts); whether it is shown."""
        history = self.history
        self.shown = not (history is None or dev is None or dev.name != history.device
                          or not (history.running or history.points))
        if history is not None and self.shown:
            chart = self._chart()
            chart.retitle(history.title, [history.role])
            if chart.display and chart.size.width:
                chart.set_data(times, [history.series(times)], marks)
        return self.shown

    def _draw(self, history: RoleHistory) -> None:
        """The role chart again, at a fio report: the newest samples it has room for, its device's markers."""
        chart = self._chart()
        if chart.display and chart.size.width:
            times = self.monitor.history.recent_times(max(2, chart.size.width * 2))
            chart.set_data(times, [history.series(times)], self.monitor.markers_of(history.device))

    def _chart(self) -> LineChart:
        """The role chart, mounted inside this part (under the device's graphs) on first use; themes/base.tcss
        shows it while the screen has the ``-roles`` class."""
        found = self.query("#role-chart")
        if found:
            return found.first(LineChart)
        chart = LineChart("", [], id="role-chart")
        self.mount(chart)
        return chart
