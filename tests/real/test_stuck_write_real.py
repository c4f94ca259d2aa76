"""A scheduler switch the kernel does not return from, made on a real loop device: its backing file lies on a
filesystem that is frozen (fsfreeze) with a write in flight, so the switch, which freezes the queue and waits for the
requests in flight, waits in the kernel until the filesystem thaws (the hang of kernel bugzilla 219166, made at
will). iosched reports it by its deadline, journals it, writes nothing more to the device, and restores once the
kernel lets go."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fio_support import start_cli

from iosched.core.kernel.processes import running
from iosched.core.settings.journal import Journal

from conftest import Loop, detach_loop, need_real, run_cli


@dataclass
class Frozen:
    loop: Loop  # the device whose requests cannot complete while the filesystem is frozen
    mount: Path
    writer: subprocess.Popen[bytes]  # a direct write in flight on it

    def thaw(self) -> None:
        subprocess.run(["fsfreeze", "-u", str(self.mount)], check=False, capture_output=True)


def wait_for(check: Callable[[], bool], what: str, within: float = 30.0) -> None:
    end = time.monotonic() + within
    while not check():
        assert time.monotonic() < end, f"never {what}"
        time.sleep(0.05)


def state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return "gone"


@pytest.fixture
def frozen(make_loop: Callable[..., Loop], tmp_path: Path) -> Iterator[Frozen]:
    need_real("fsfreeze", "mkfs.ext4", "dd")
    outer = make_loop("96M")
    subprocess.run(["mkfs.ext4", "-q", "-F", outer.path], check=True, capture_output=True)
    mount = tmp_path / "fs"
    mount.mkdir()
    subprocess.run(["mount", outer.path, str(mount)], check=True)
    inner = None
    dd = None
    try:
        inner = make_loop("32M", mount / "inner")
        subprocess.run(["fsfreeze", "-f", str(mount)], check=True)
        dd = subprocess.Popen(["dd", "if=/dev/zero", f"of={inner.path}", "bs=4k", "count=1", "oflag=direct"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: state(dd.pid) == "D", "saw the write wait in the kernel")
        f = Frozen(inner, mount, dd)
        yield f
    finally:
        subprocess.run(["fsfreeze", "-u", str(mount)], check=False, capture_output=True)
        if dd is not None:
            dd.wait(60)
        if inner is not None:
            detach_loop(inner)  # before the filesystem its file lies on goes
        subprocess.run(["umount", str(mount)], check=False)


def test_a_switch_that_hangs_is_reported_by_its_deadline_journaled_and_restored_later(frozen, private_journal):
    loop = frozen.loop
    deadline = {"IOSCHED_WRITE_DEADLINE": "1"}
    out = run_cli("set", loop.name, "bfq", env=deadline, timeout=60)  # the command returns: iosched is not held
    assert out.returncode == 1, out
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert f"the kernel has not returned from writing 'bfq' to {loop.name} scheduler within 1 s" in out.stderr
    assert "kernel bugzilla 219166" in out.stderr
    # The journal holds the original and the write on its way, whose writer still waits in the kernel.
    journaled = (private_journal / "journal.json").read_text()
    entries = Journal(private_journal).entries()
    entry = entries[f"{loop.name}/queue/scheduler"]
    assert entry.original == "none" and entry.pending is not None and entry.pending.value == "bfq"
    writer = entry.pending.pid
    assert running(writer, entry.pending.start) and state(writer) == "D"
    assert loop.current() == "none"  # left as the kernel has it
    # Not made again, nor anything else on that device, nor a restore of it; each answer comes at once.
    again = run_cli("set", loop.name, "kyber", env=deadline, timeout=60)
    assert again.returncode == 1 and "still has a write the kernel has not returned from ('bfq'" in again.stderr
    tune = run_cli("tune", loop.name, "read_ahead_kb=256", env=deadline, timeout=60)
    assert tune.returncode == 1 and "iosched writes nothing more to" in tune.stderr
    assert (private_journal / "journal.json").read_text() == journaled  # the refusals added nothing
    left_alone_then_put_back(frozen, writer, entry.pending.start, private_journal, deadline)


def left_alone_then_put_back(frozen: Frozen, writer: int, start: int, journal: Path,
                             env: dict[str, str] | None = None) -> None:
    """While the kernel holds the write, `restore` leaves the device alone and the journal intact (nothing dropped,
    nothing added); once the kernel lets go, the writer ends, the switch has happened after all, and `restore` puts
    the original back."""
    loop = frozen.loop
    journaled = (journal / "journal.json").read_text()
    held = run_cli("restore", env=env, timeout=60)
    assert held.returncode == 1 and f"{loop.name}: left alone: the kernel has not returned from writing 'bfq'" \
        in held.stdout, held
    assert (journal / "journal.json").read_text() == journaled
    frozen.thaw()
    wait_for(lambda: not running(writer, start), "saw the writer end")
    assert loop.current() == "bfq"
    done = run_cli("restore", timeout=60)
    assert done.returncode == 0, done
    assert f"{loop.name} scheduler: restored bfq -> none" in done.stdout
    assert loop.current() == "none" and Journal(journal).entries() == {}


def writer_of(pid: int) -> int | None:
    """The one door's writer process iosched ``pid`` started (its child running the writer's code), if any."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rpartition(")")[2].split()[1])
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid and b"-I" in cmd and b"-S" in cmd and b"-c" in cmd:
            return int(d.name)
    return None


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGKILL, -9)])
def test_a_compare_ended_while_the_kernel_is_in_its_switch_leaves_it_journaled(frozen, private_journal, sig, code):
    """Ctrl-C, or SIGKILL, while the compare's first switch waits in the kernel: the write was journaled before it
    was sent, so when the kernel makes the switch after iosched has gone, `iosched restore` puts the original back."""
    loop = frozen.loop
    p = start_cli("compare", loop.name, "--schedulers", "bfq,kyber", "--cmd", "true", "--repeat", "1",
                  "--settle", "0")
    try:
        writer: int | None = None

        def in_switch() -> bool:
            nonlocal writer
            writer = writer_of(p.pid)
            return writer is not None and state(writer) == "D"

        wait_for(in_switch, "saw the switch wait in the kernel")
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == code, err
    assert "Traceback" not in err
    if sig == signal.SIGINT:  # the put-back says why it wrote nothing
        assert (f"iosched: {loop.name} was not put back: the kernel has not returned from writing 'bfq' to scheduler "
                f"(pid {writer}): nothing is written to {loop.name} until it does") in err, err
    entry = Journal(private_journal).entries()[f"{loop.name}/queue/scheduler"]
    assert entry.original == "none" and entry.pending is not None
    assert (entry.pending.value, entry.pending.pid) == ("bfq", writer)
    assert running(writer, entry.pending.start) and state(writer) == "D"
    # The kernel lets go later: the switch happens after all, with no iosched waiting for it.
    left_alone_then_put_back(frozen, writer, entry.pending.start, private_journal)
    assert not list((private_journal / "starts").glob("*.json"))
