"""Helpers shared by the benchmark scripts: extra loop devices, process CPU/RSS sampling, tmux sessions."""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


# Every benchmark imports this module: a kill (or ^C, which a shell's background job would ignore) unwinds
# through the scripts' finally blocks, so loop devices, tmux servers and fio never outlive a stopped run.
for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    if _sig == signal.SIGHUP and signal.getsignal(_sig) is signal.SIG_IGN:
        continue  # under nohup: a dropped session must not stop an hour-long run
    signal.signal(_sig, _exit_on_signal)


@contextlib.contextmanager
def extra_loop_devices(count: int, size: str = "64M", direct: bool = False,
                       under: str | None = None) -> Iterator[list[str]]:
    """Attach ``count`` loop devices over sparse temp files (in ``under``, e.g. /dev/shm, else the temp
    directory); always detached afterwards."""
    paths: list[str] = []
    with tempfile.TemporaryDirectory(prefix="iosched-bench-", dir=under) as tmp:
        try:
            for i in range(count):
                f = Path(tmp, f"d{i}.img")
                subprocess.run(["truncate", "-s", size, str(f)], check=True)
                cmd = ["losetup", "-f", "--show", *(["--direct-io=on"] if direct else []), str(f)]
                out = subprocess.run(cmd, check=True, capture_output=True, text=True)
                paths.append(out.stdout.strip())
            yield paths
        finally:
            for p in paths:
                subprocess.run(["losetup", "-d", p], capture_output=True)


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as /proc/loadavg says them."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


@contextlib.contextmanager
def cpu_hog(count: int | None = None) -> Iterator[int]:
    """A controlled load: ``count`` busy loops (default one per CPU), each its own process at normal priority, for
    as long as the block runs; always stopped afterwards. Yields how many run."""
    n = count if count is not None else os.cpu_count() or 1
    procs = [subprocess.Popen(["python3", "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(1.0)  # the scheduler has spread them before the first measurement
        yield n
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of a process and its waited-for children, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / CLK_TCK


def _cpu_or_zero(pid: int) -> float:
    try:
        return process_cpu_seconds(pid)
    except OSError:  # exited meanwhile
        return 0.0


def tree_pids(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    pids = [pid]
    for child in out:
        pids += tree_pids(int(child))
    return pids


def rss_mb(pid: int) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # exited meanwhile
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure_process(pid: int, seconds: float) -> tuple[float, float]:
    """CPU% of one core over ``seconds`` (the process and its live children) and RSS at the end, in MB."""
    pids = tree_pids(pid)
    before = sum(_cpu_or_zero(p) for p in pids)
    t0 = time.monotonic()
    time.sleep(seconds)
    after = sum(_cpu_or_zero(p) for p in pids)
    return (after - before) / (time.monotonic() - t0) * 100, sum(rss_mb(p) for p in pids)


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def summary_us(samples: list[float]) -> str:
    us = [s * 1e6 for s in samples]
    return f"median {statistics.median(us):7.1f} µs   p99 {percentile(us, 0.99):7.1f} µs"


@contextlib.contextmanager
def tmux_session(name: str, command: str, width: int, height: int) -> Iterator[int]:
    """Run ``command`` in a detached tmux session; yields the pid of the pane's process."""
    subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", str(width), "-y", str(height), command],
                   check=True)
    try:
        pid = int(subprocess.run(["tmux", "display-message", "-p", "-t", name, "#{pane_pid}"],
                                 capture_output=True, text=True, check=True).stdout)
        yield pid
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def put_in_page(page: Path, start: str, end: str, text: str) -> None:
    """Replace what lies between the ``start`` and ``end`` markers of ``page`` (one of docs/*.md) with ``text`` in a
    code block: the examples the docs/ scripts make. A page without both markers is an error, never skipped."""
    body = page.read_text()
    if start not in body or end not in body:
        raise SystemExit(f"{page} has no {start} ... {end} block to replace: the example was not written there")
    block = f"{start}\n```\n{text.rstrip()}\n```\n{end}"
    page.write_text(body[:body.index(start)] + block + body[body.index(end) + len(end):])


@contextlib.contextmanager
def ext4_on_loop(under: Path, size: str = "4G") -> Iterator[tuple[str, Path]]:
    """A loop device (direct IO) over a file in ``under`` with an ext4 filesystem mounted at ``under``/mnt: its
    device path and mount point; unmounted and detached afterwards, whatever happens."""
    image, mnt = under / "disk.img", under / "mnt"
    subprocess.run(["truncate", "-s", size, str(image)], check=True)
    dev = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", str(image)], check=True,
                         capture_output=True, text=True).stdout.strip()
    mounted = False
    try:
        subprocess.run(["mkfs.ext4", "-q", dev], check=True)
        mnt.mkdir()
        subprocess.run(["mount", dev, str(mnt)], check=True)
        mounted = True
        yield dev, mnt
    finally:
        if mounted:
            subprocess.run(["umount", str(mnt)], check=False)
        subprocess.run(["losetup", "-d", dev], check=False)
