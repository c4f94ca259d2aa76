"""A command's capture against stand-in loaders (scripts that print what the real one prints, or worse), around a
real command in a real cgroup: records become a capture naming each device; a loader that dies, or writes junk,
leaves no file, no process and no cgroup behind."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from iosched.core.load.iolog import check_iolog, meta_path, read_capture
from iosched.core.settings.cmd_cgroup import own_cgroup
from iosched.core.trace.capture import CaptureFailed
from iosched.core.trace.cmd_capture import CmdCaptureRun, CommandCaptureRefused

from conftest import need

# Prints what the loader's --capture-cgroup mode prints, its records timed after the command was let start.
FAKE = '''
import json, signal, sys, time
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
print(json.dumps({"ready": 1, "t": time.monotonic_ns(), "io_start": True, "capture": True, "cgroup": True}),
      flush=True)
time.sleep(0.3)
now = time.monotonic_ns()
for i in range(RECORDS):
    print(f"{now + i * 1000} {i % 2} {i * 8} 4096 1 {DEV if i % 3 else OTHER}")
if JUNK:
    print(JUNK, flush=True)
while not stop and not DIE:
    print(json.dumps({"t": time.monotonic_ns(), "lost": 0, "full": 0}), flush=True)
    time.sleep(0.05)
print(json.dumps({"t": time.monotonic_ns(), "lost": 2, "full": 0, "end": 1}), flush=True)
'''


def disk(name: str) -> int:
    major, minor = (int(x) for x in Path(f"/sys/block/{name}/dev").read_text().split(":"))
    return major << 20 | minor


def fake_run(tmp_path: Path, monkeypatch, make_loop, cmd: str, *, records: int = 9, junk: str = "",
             die: bool = False, max_bytes: int = 1 << 30) -> tuple[CmdCaptureRun, Path, str]:
    """A capture of ``cmd`` whose loader is FAKE, its records on two loop devices made for the test (the devices
    are named from sysfs, as the real loader's are)."""
    need(os.geteuid() == 0 and own_cgroup() is not None, "needs root and a cgroup2 group to make one in")
    dev, other = disk(make_loop("64M").name), disk(make_loop("64M").name)
    script = tmp_path / "fake-loader"
    body = (FAKE.replace("RECORDS", str(records)).replace("OTHER", str(other)).replace("DEV", str(dev))
            .replace("JUNK", repr(junk)).replace("DIE", str(die)))
    script.write_text(f"#!{sys.executable}\n{body}")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(CmdCaptureRun, "check_command", lambda self: (script, 0))
    out = tmp_path / "c.iolog"
    marker = f"sleep 7.{os.getpid()}"
    return CmdCaptureRun(cmd.replace("MARK", marker), out, 30.0, max_bytes), out, marker


def left(marker: str) -> str:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout


def groups(run: CmdCaptureRun) -> list[str]:
    here = own_cgroup()
    assert here is not None
    return [p.name for p in here.iterdir() if p.name.startswith(f"iosched-cmd-{os.getpid()}-")]


def test_records_become_a_capture_naming_each_device(tmp_path, monkeypatch, make_loop):
    run, out, _marker = fake_run(tmp_path, monkeypatch, make_loop, "sleep 0.6; exit 4")
    result = run.run()
    m = result.meta
    assert m.command is not None and m.command.exit_status == 4 and m.command.ios == 9 + 2  # lost ones counted
    assert m.command.wall_s == pytest.approx(0.6, abs=0.3) and m.ended == "command" and m.timestamps == "submit"
    assert m.devices is not None and len(m.devices) == 2 and m.requests == 9 and m.reads == 5 and m.writes == 4
    assert m.devices[0].requests == 6 and m.devices[1].requests == 3  # the device most bytes went to first
    assert check_iolog(read_capture(out)) == 9
    assert groups(run) == [] and run.left_behind is None


def test_a_loader_that_dies_before_the_command_ends_leaves_nothing(tmp_path, monkeypatch, make_loop):
    run, out, marker = fake_run(tmp_path, monkeypatch, make_loop, "MARK & MARK", die=True)
    with pytest.raises(CaptureFailed, match="ended before the command did"):
        run.run()
    assert not out.exists() and not meta_path(out).exists()
    assert left(marker) == "" and groups(run) == []


def test_junk_from_the_loader_ends_the_command_and_leaves_nothing(tmp_path, monkeypatch, make_loop):
    run, out, marker = fake_run(tmp_path, monkeypatch, make_loop, "MARK", junk="1 2 three")
    with pytest.raises(CaptureFailed, match="cannot read"):
        run.run()
    assert not out.exists() and left(marker) == "" and groups(run) == []


def test_lines_past_the_size_bound_end_the_command_and_write_nothing(tmp_path, monkeypatch, make_loop):
    run, out, marker = fake_run(tmp_path, monkeypatch, make_loop, "MARK", records=2000, max_bytes=4096)
    with pytest.raises(CommandCaptureRefused, match=r"did more IO than --max-size 4\.0K of capture holds"):
        run.run()
    assert not out.exists() and left(marker) == "" and groups(run) == []


def test_the_program_a_command_line_starts(tmp_path):
    """Its first word after any NAME=value, found on the command's PATH or as a path; a shell word is none."""
    from iosched.core.trace.cmd_capture import program_of

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    prog = bin_dir / "prog"
    prog.write_text("#!/bin/sh\n")
    prog.chmod(0o755)
    env = {"PATH": str(bin_dir)}
    assert program_of("prog --headless 'a b' > /dev/null", env, "/") == str(prog)
    assert program_of("LANG=C X='1 2' prog", env, "/") == str(prog)
    assert program_of("./bin/prog x", env, tmp_path) == str(tmp_path / "bin/prog")
    assert program_of(f"{prog}", {}, "/") == str(prog)
    for shell_word in ("cd /srv && make", "for f in *; do cat $f; done", "nosuch --x", "'unclosed", "", "A=1"):
        assert program_of(shell_word, env, tmp_path) is None, shell_word


def test_the_default_disk_is_the_one_its_program_is_on_or_says_why_not(tmp_path):
    """The disk of the command's program (else of its working directory), in words; none, or several (a mirror),
    is one sentence naming the way to choose."""
    from iosched.core.base.errors import BadInput
    from iosched.core.trace.cmd_capture import default_disk

    from fixtree import FixTree

    (tmp_path / "prog").write_text("#!/bin/sh\n")
    (tmp_path / "prog").chmod(0o755)
    st = os.stat(tmp_path)
    here = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"  # the real filesystem's device, described by a fixture
    tree = FixTree(tmp_path / "root")
    tree.add_disk("sdz", here)
    link = tree.root / "sys/dev/block" / here
    link.parent.mkdir(parents=True)
    with pytest.raises(BadInput, match="is on no disk a capture can see .*: name the disk to capture "
                                       r"\(iosched capture DEV --cmd …\), or --every-disk"):
        default_disk("./prog", {}, tmp_path, tree.root)
    link.symlink_to(tree.root / "sys/block/sdz")
    assert default_disk("./prog --x", {}, tmp_path, tree.root) == ("sdz", f"the disk {tmp_path}/prog is on")
    assert default_disk("cd x && y", {}, tmp_path, tree.root) == ("sdz", f"the disk {tmp_path} is on")
