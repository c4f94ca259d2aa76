"""`iosched capture --cmd` on real loop devices: a cold command that reads known files from ext4 on loop A is
captured with their bytes (every block of the files read, within 2% in all: the rest is ext4's own metadata),
and agrees with the kernel's IO accounting of the command; by default the disk its program is on, said, every disk
on request (each named, and refused by a replay);
writes it flushes itself are its lines, those left to writeback are only counted; under sudo it runs as the user;
and a command that did no IO, or outlives its bound, is one sentence, exit 2, with nothing left behind: no file, no
process, no cgroup."""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import pytest
from fio_support import wait_for
from schema_support import problems

from iosched.core.load.iolog import check_iolog, meta_path, read_capture
from iosched.core.settings.cmd_cgroup import own_cgroup

from conftest import need, need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


BLOCK = 4096


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without sudo's: the command runs as root unless a test says otherwise."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}, **extra}


def capture(*args: str, env: dict[str, str] | None = None,
            timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], int]:
    """`iosched capture ARGS` in a child; its result and its pid (the name of its command's cgroup)."""
    proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "capture", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env or clean_env())
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), proc.pid


def nothing_left(pid: int, run_dir: Path, *markers: str) -> None:
    """No cgroup of that iosched's commands, no registration of one, no process with a marker in its command."""
    here = own_cgroup()
    assert here is not None
    assert [p.name for p in here.iterdir() if p.name.startswith(f"iosched-cmd-{pid}-")] == []
    registry = run_dir / "cmdgroups"
    assert not registry.exists() or list(registry.iterdir()) == []
    for m in markers:
        assert subprocess.run(["pgrep", "-f", m], capture_output=True).returncode == 1, m


@pytest.fixture
def ext4(make_loop) -> Iterator[tuple]:
    """Two loop devices, each holding an ext4 filesystem mounted in a folder anyone may enter (the command may run
    as another user); unmounted afterwards, before make_loop detaches them."""
    need_real("mkfs.ext4", "mount", "filefrag", "setpriv")
    need(own_cgroup() is not None, "needs a cgroup2 group that hands no controller down")
    top = Path(tempfile.mkdtemp(prefix="iosched-cmdcap-", dir="/tmp"))
    top.chmod(0o755)
    mounts = []
    try:
        for name in ("a", "b"):
            loop = make_loop("256M", top / f"img-{name}")
            subprocess.run(["mkfs.ext4", "-q", "-F", "-b", str(BLOCK), "-E", "lazy_itable_init=0,lazy_journal_init=0",
                            loop.path], check=True, capture_output=True)
            mnt = top / name
            mnt.mkdir(mode=0o755)
            subprocess.run(["mount", "-o", "noinit_itable", loop.path, str(mnt)], check=True)
            mounts.append(mnt)
            mnt.chmod(0o755)
        yield mounts[0], mounts[1], top
    finally:
        for mnt in mounts:
            subprocess.run(["umount", str(mnt)], check=False)
        shutil.rmtree(top, ignore_errors=True)


def loop_of(mnt: Path) -> str:
    src = subprocess.run(["findmnt", "-n", "-o", "SOURCE", str(mnt)], capture_output=True, text=True).stdout.strip()
    return Path(src).name


def write_files(folder: Path, sizes: list[int]) -> list[Path]:
    rng = random.Random(41)
    files = []
    for i, size in enumerate(sizes):
        f = folder / f"f{i:02d}"
        f.write_bytes(rng.randbytes(size))
        f.chmod(0o644)
        files.append(f)
    os.sync()
    return files


def extents(f: Path) -> list[tuple[int, int]]:
    """The file's blocks on its device, as (offset, length) in bytes (filefrag, in 4 KiB units)."""
    out = subprocess.run(["filefrag", "-e", "-b4096", str(f)], capture_output=True, text=True, check=True).stdout
    found = []
    for m in re.finditer(r"^\s*\d+:\s+\d+\.\.\s*\d+:\s+(\d+)\.\.\s*(\d+):", out, re.M):
        first, last = int(m.group(1)), int(m.group(2))
        found.append((first * BLOCK, (last - first + 1) * BLOCK))
    return found


def reads_on(log: Path, dev: str) -> list[tuple[int, int]]:
    return [(int(p[3]), int(p[4])) for p in (line.split() for line in log.read_text().splitlines()[1:])
            if len(p) == 5 and p[1] == f"/dev/{dev}" and p[2] == "read"]


def covered(blocks: list[tuple[int, int]], reads: list[tuple[int, int]]) -> int:
    """Bytes of ``blocks`` that ``reads`` cover."""
    seen: set[int] = set()
    for off, n in reads:
        seen.update(range(off // BLOCK, (off + n + BLOCK - 1) // BLOCK))
    return sum(BLOCK for off, n in blocks for b in range(off // BLOCK, (off + n) // BLOCK) if b in seen)


def test_a_cold_commands_reads_are_its_files_bytes(ext4, tmp_path, private_journal):
    a, _b, _top = ext4
    sizes = [1000, 4096, 5000, 65536, 100_000, 1 << 20, 3 << 20, (2 << 20) + 123, 777_777] + [300_000] * 15
    files = write_files(a, sizes)
    blocks = [e for f in files for e in extents(f)]
    file_bytes, block_bytes = sum(sizes), sum(n for _, n in blocks)
    out = tmp_path / "cat.iolog"
    res, pid = capture("--cmd", f"cat {a}/f* > /dev/null", "--cold", "--every-disk", "-o", str(out), "--json")
    assert res.returncode == 0, res.stderr
    nothing_left(pid, private_journal)
    cap = read_capture(out)
    m, c = cap.meta, cap.meta.command
    assert c is not None and c.exit_status == 0 and c.cold and c.uid == 0 and m.ended == "command"
    dev = loop_of(a)
    (on_a,) = [f for f in m.files if f.device.name == dev]
    # Every block of the files was read, once: the device's reads are the files' bytes, and at most 2% more
    # (ext4's inodes, directory and extent blocks; readahead stops at a file's end).
    reads = reads_on(out, dev)
    assert covered(blocks, reads) == block_bytes
    assert file_bytes <= block_bytes <= on_a.read_bytes <= 1.02 * file_bytes, (file_bytes, on_a.read_bytes)
    assert on_a.read_bytes == sum(n for _, n in reads) and on_a.write_bytes == 0
    # What the kernel's own accounting charged to the command: the same bytes, on every device it read.
    assert abs(m.read_bytes - c.accounted_read_bytes) <= 0.01 * c.accounted_read_bytes, (m.read_bytes, asdict(c))
    assert c.ios == m.requests and m.lost == 0 and m.timestamps == "submit"
    assert check_iolog(cap) == m.requests
    assert problems("capture-meta.schema.json", asdict(m)) == []
    rep = subprocess.run([sys.executable, "-m", "iosched.cli", "report", str(out)], capture_output=True, text=True)
    assert rep.returncode == 0 and f"command 'cat {a}/f* > /dev/null', cold, as uid 0" in rep.stdout, rep.stderr


def test_several_devices_are_each_named_and_one_is_kept_to_on_request(ext4, tmp_path, private_journal):
    a, b, _top = ext4
    fa, fb = write_files(a, [2 << 20])[0], write_files(b, [1 << 20])[0]
    cmd = f"cat {fa} {fb} > /dev/null"
    out = tmp_path / "two.iolog"
    res, _pid = capture("--cmd", cmd, "--cold", "--every-disk", "-o", str(out))
    assert res.returncode == 0, res.stderr
    m = read_capture(out).meta
    got = {f.device.name: f for f in m.files}
    on_a, on_b = got[loop_of(a)], got[loop_of(b)]
    assert 2 << 20 <= on_a.read_bytes <= 1.02 * (2 << 20) and 1 << 20 <= on_b.read_bytes <= 1.02 * (1 << 20)
    assert m.files[0].read_bytes == max(f.read_bytes for f in m.files) and m.files[0].base == 0
    assert all(later.base >= earlier.base + earlier.max_extent for earlier, later in zip(m.files, m.files[1:]))
    assert check_iolog(read_capture(out)) == m.requests
    # Kept to loop A: B's reads, and the disk `cat` itself came from, are not its lines.
    only = tmp_path / "a.iolog"
    res, _pid = capture(loop_of(a), "--cmd", cmd, "--cold", "-o", str(only))
    assert res.returncode == 0, res.stderr
    m = read_capture(only).meta
    assert [f.device.name for f in m.files] == [loop_of(a)] and 2 << 20 <= m.read_bytes <= 1.02 * (2 << 20)


def test_by_default_the_disk_its_program_is_on_and_a_replay_refuses_several(ext4, tmp_path, private_journal,
                                                                            make_loop):
    """No disk named: the capture keeps to the disk the command's program is on, and says so first; a capture of
    several disks (--every-disk) is refused by a start-up's replay in one sentence that names the command to run."""
    need_real("fio")
    a, b, _top = ext4
    prog = a / "reader"
    shutil.copy2(shutil.which("cat") or "/bin/cat", prog)
    fa, fb = write_files(a, [1 << 20])[0], write_files(b, [1 << 20])[0]
    out = tmp_path / "own.iolog"
    res, _pid = capture("--cmd", f"{prog} {fa} {fb} > /dev/null", "--cold", "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert res.stderr.startswith(f"iosched: capturing its IO on {loop_of(a)}, the disk {prog} is on"), res.stderr
    m = read_capture(out).meta
    assert [f.device.name for f in m.files] == [loop_of(a)] and 1 << 20 <= m.read_bytes <= 1.1 * (1 << 20)
    both = tmp_path / "both.iolog"
    res, _pid = capture("--cmd", f"cat {fa} {fb} > /dev/null", "--cold", "--every-disk", "-o", str(both))
    assert res.returncode == 0 and len(read_capture(both).meta.files) >= 2, res.stderr
    target = make_loop()
    before = target.scheduler_text()
    r = run_cli("compare", target.name, "--schedulers", "none,bfq", "--startup", str(both), "--background",
                "seq-readers-1", "--repeat", "2")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r
    assert "both.iolog holds the IO of" in r.stderr and "a replay is of one disk's requests" in r.stderr
    assert f"iosched capture {read_capture(both).meta.files[0].device.name} --cmd 'cat " in r.stderr
    assert target.scheduler_text() == before


def test_writes_it_flushes_are_its_lines_and_those_left_to_writeback_are_counted(ext4, tmp_path):
    a, _b, _top = ext4
    size = 4 << 20
    synced, left = tmp_path / "synced.iolog", tmp_path / "left.iolog"
    res, _ = capture(loop_of(a), "--cmd", f"dd if=/dev/zero of={a}/w1 bs=64k count=64 conv=fsync status=none",
                     "-o", str(synced))
    assert res.returncode == 0, res.stderr
    c = read_capture(synced).meta
    assert c.command is not None and size <= c.write_bytes <= 1.02 * size and c.command.accounted_write_bytes >= size
    res, _ = capture(loop_of(a), "--cmd", f"dd if=/dev/zero of={a}/w2 bs=64k count=64 status=none; cat {a}/w1 "
                     "> /dev/null", "--cold", "-o", str(left))
    assert res.returncode == 0, res.stderr
    m = read_capture(left).meta
    assert m.command is not None and m.write_bytes < 0.05 * size <= size <= m.command.accounted_write_bytes
    assert "the rest reaches the disk later from the kernel's writeback threads" in res.stdout


def test_under_sudo_the_command_runs_as_the_user(ext4, tmp_path):
    a, _b, _top = ext4
    (f,) = write_files(a, [1 << 20])
    out = tmp_path / "user.iolog"
    env = clean_env(SUDO_UID="65534", SUDO_GID="65534", SUDO_USER="nobody")
    res, _ = capture(loop_of(a), "--cmd", f"id -u; id -g; echo $HOME; cat {f} > /dev/null", "--cold", "-o", str(out),
                     env=env)
    assert res.returncode == 0, res.stderr
    assert res.stderr.split()[:2] == ["65534", "65534"]  # its output, on iosched's stderr
    m = read_capture(out).meta
    assert m.command is not None and (m.command.uid, m.command.gid) == (65534, 65534)
    (on_a,) = [x for x in m.files if x.device.name == loop_of(a)]
    assert 1 << 20 <= on_a.read_bytes <= 1.02 * (1 << 20)


@pytest.mark.parametrize(("args", "said"), [
    (["--cmd", "true", "--every-disk"],
     "'true' did no IO on any block device (what it read came from the page cache: --cold"),
    (["--cmd", "true"], ", the disk {true} is on (what it read came from the page cache: --cold drops that first; or "
                        "it read another disk: name that one (iosched capture DEV --cmd …))"),
    (["--cmd", "cat {a}/f00 >/dev/null; sleep 41.{n} & setsid sleep 42.{n} & sleep 43.{n}", "--cold",
      "--duration", "2", "--every-disk"], "was still running after --duration 2 s: it was ended with every process "
                                          "it started, and nothing was written (give it longer with --duration)"),
    (["--cmd", "dd if={a}/f00 of=/dev/null bs=4k iflag=direct status=none; sleep 44.{n}", "--cold", "--max-size",
      "4k", "--every-disk"], "did more IO than --max-size 4.0K of capture holds"),
])
def test_no_io_or_a_bound_is_one_sentence_and_leaves_nothing(ext4, tmp_path, private_journal, args, said):
    a, _b, _top = ext4
    write_files(a, [8 << 20])
    n = os.getpid()
    out = tmp_path / "x.iolog"
    t0 = time.monotonic()
    res, pid = capture(*[x.format(a=a, n=n) for x in args], "-o", str(out), timeout=60)
    sentences = [line for line in res.stderr.strip().splitlines() if not line.startswith("iosched: capturing its IO")]
    assert res.returncode == 2 and len(sentences) == 1, res
    assert said.format(true=shutil.which("true")) in res.stderr and "Traceback" not in res.stderr
    assert not out.exists() and not meta_path(out).exists() and time.monotonic() - t0 < 30
    nothing_left(pid, private_journal, *(f"sleep 4{k}.{n}" for k in range(1, 5)))


def test_the_size_bound_holds_exactly_for_a_command_that_ends_between_two_looks(ext4, tmp_path, private_journal):
    """`--max-size 4k` let a 5.9 kB iolog be written (exit 0): the bound was looked at now and then, and a command
    that did its IO and ended between two looks passed it. A few hundred cold reads in well under a look's time:
    refused, nothing written; the same with room for them: written, within its bound."""
    a, _b, _top = ext4
    files = write_files(a, [BLOCK] * 300)
    cmd = f"cat {' '.join(str(f) for f in files)} > /dev/null"
    out = tmp_path / "x.iolog"
    res, pid = capture("--cmd", cmd, "--cold", "--max-size", "4k", "-o", str(out))
    assert res.returncode == 2 and "did more IO than --max-size 4.0K of capture holds" in res.stderr, res
    assert not out.exists() and not meta_path(out).exists()
    nothing_left(pid, private_journal)
    res, _ = capture("--cmd", cmd, "--cold", "--max-size", "64k", "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert 4096 < out.stat().st_size <= 65536 and read_capture(out).meta.requests >= 100


def test_ctrl_c_ends_the_command_and_writes_nothing(ext4, tmp_path, private_journal):
    n = os.getpid()
    out = tmp_path / "i.iolog"
    proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "capture", "--cmd", f"sleep 45.{n}", "-o", str(out)],
                            stderr=subprocess.PIPE, text=True, env=clean_env())
    wait_for(f"45.{n}", proc)  # sleep itself (iosched holds "sleep 45.N" as one word): a signal before Python is up
    # would kill iosched outright (-2), not interrupt it
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted: the command was ended" in err and "Traceback" not in err, err
    assert not out.exists()
    nothing_left(proc.pid, private_journal, f"sleep 45.{n}")
