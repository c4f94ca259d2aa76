"""Where a run's CPU per IO goes (core/load/submission.py): fio's job threads from its own JSON, the kernel's workers
from their stat over the window."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from iosched.core.kernel.workers import PF_KTHREAD
from iosched.core.load.submission import TASK, WORKERS, SubmissionClock, task_cpu_seconds


def stat(pid: int, comm: str, stime: int) -> str:
    """A kernel thread's /proc/PID/stat line: flags (field 9) and stime (field 15) set."""
    rest = ["S", "2", "0", "0", "0", "-1", str(PF_KTHREAD), "0", "0", "0", "0", "0", str(stime)] + ["0"] * 39
    return f"{pid} ({comm}) " + " ".join(rest) + "\n"


def entry(usr: float, sys_: float, runtime_ms: int) -> dict[str, object]:
    return {"jobname": "x", "usr_cpu": usr, "sys_cpu": sys_, "job_runtime": runtime_ms}


def test_fio_threads_cpu_from_its_json() -> None:
    # Group reporting: two threads of 3 s each are one entry of 6157 ms at 12.08% each (fio 3.33 on a loop device).
    assert abs(task_cpu_seconds({"jobs": [entry(3.459477, 8.62433, 6157)]}) - 0.744) < 0.001
    # One entry per role: summed.
    assert task_cpu_seconds({"jobs": [entry(10, 20, 1000), entry(5, 5, 2000)]}) == 0.3 + 0.2


FIGURES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.text(max_size=3))


@given(st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(
    st.dictionaries(st.sampled_from(["usr_cpu", "sys_cpu", "job_runtime"]), FIGURES), max_size=3)))
def test_any_json_gives_seconds_or_none(jobs: object) -> None:
    got = task_cpu_seconds({"jobs": jobs})
    assert got is None or got >= 0


def test_a_runs_split_per_io(tree) -> None:
    tree.write("proc/57/stat", stat(57, "kworker/1:1H-kblockd", stime=100))
    tree.write("proc/58/stat", stat(58, "kworker/0:1-events", stime=100))
    clock = SubmissionClock.start("loop3", tree.root)
    tree.write("proc/57/stat", stat(57, "kworker/1:1H-kblockd", stime=150))  # 0.5 s of kblockd
    tree.write("proc/58/stat", stat(58, "kworker/0:1-events", stime=900))  # another load's
    got = clock.figures({"jobs": [entry(10, 40, 2000)]}, 100_000)
    assert got == {WORKERS: 0.5 * 1e6 / 100_000, TASK: 1.0 * 1e6 / 100_000}


def test_no_ios_no_figures_and_a_command_has_no_task(tree) -> None:
    clock = SubmissionClock.start("loop3", tree.root)
    assert clock.figures({"jobs": [entry(1, 1, 1000)]}, 0) == {}
    assert clock.figures({"jobs": [entry(1, 1, 1000)]}, None) == {}
    assert clock.figures(None, 1000) == {WORKERS: 0.0}
