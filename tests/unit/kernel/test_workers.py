"""The kernel's block workers' CPU (core/kernel/workers.py): only kernel threads named kworker, counted for a device
when they name kblockd or its own workqueue at either edge of the window."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from iosched.core.kernel.workers import PF_KTHREAD, WorkerTime, parse_worker, read_workers, worker_seconds


def stat(pid: int, comm: str, flags: int = PF_KTHREAD | 0x40, utime: int = 0, stime: int = 0) -> str:
    """A /proc/PID/stat line with the fields that matter set (proc(5): 9 flags, 14 utime, 15 stime)."""
    rest = ["S", "2", "0", "0", "0", "-1", str(flags), "0", "0", "0", "0", str(utime), str(stime)] + ["0"] * 39
    return f"{pid} ({comm}) " + " ".join(rest) + "\n"


def test_a_kworker_is_read_with_its_ticks() -> None:
    assert parse_worker(stat(57, "kworker/1:1H-kblockd", utime=1, stime=41)) == WorkerTime("kworker/1:1H-kblockd", 42)


def test_a_user_thread_calling_itself_kworker_is_not_one() -> None:
    assert parse_worker(stat(4242, "kworker/0:1-kblockd", flags=0x400040, stime=99)) is None


def test_other_kernel_threads_and_odd_names_are_left_out() -> None:
    assert parse_worker(stat(15, "ksoftirqd/1", stime=5)) is None
    assert parse_worker(stat(16, "kworker/u4:0 (x) y", stime=5)) == WorkerTime("kworker/u4:0 (x) y", 5)
    assert parse_worker("57 (kworker/1:1H) S 2") is None  # too few fields


@given(st.text(max_size=300))
def test_any_stat_text_reads_or_is_none(text: str) -> None:
    got = parse_worker(text)
    assert got is None or got.ticks >= 0


def test_a_devices_workers_over_a_window() -> None:
    before = {1: WorkerTime("kworker/0:1H-kblockd", 100), 2: WorkerTime("kworker/u4:2-loop3", 50),
              3: WorkerTime("kworker/u4:3-ext4-rsv-conversion", 10), 4: WorkerTime("kworker/1:0-events", 5),
              5: WorkerTime("kworker/1:2-loop30", 0), 6: WorkerTime("kworker/0:2-kblockd", 500)}
    after = {1: WorkerTime("kworker/0:1H-events_highpri", 130),  # kblockd at the start: counted
             2: WorkerTime("kworker/u4:2-loop3", 70),  # the device's own workqueue
             3: WorkerTime("kworker/u4:3-ext4-rsv-conversion", 90),  # another load: left out
             4: WorkerTime("kworker/1:0-kblockd", 8),  # kblockd at the end: counted
             5: WorkerTime("kworker/1:2-loop30", 40),  # another loop device
             6: WorkerTime("kworker/0:2-kblockd", 3),  # a new worker under a reused pid: left out
             7: WorkerTime("kworker/0:3-kblockd", 60)}  # started meanwhile: no start to count from
    assert worker_seconds(before, after, "loop3") == (30 + 20 + 3) / 100


def test_read_from_a_tree(tree) -> None:
    tree.write("proc/57/stat", stat(57, "kworker/1:1H-kblockd", stime=7))
    tree.write("proc/58/stat", stat(58, "bash", flags=0, stime=7))
    tree.write("proc/self/stat", stat(1, "x"))
    assert read_workers(tree.root) == {57: WorkerTime("kworker/1:1H-kblockd", 7)}
    assert read_workers(tree.root / "nowhere") == {}
