"""The capture's reader against stand-in loaders (scripts that print what the real one prints, or worse): records
become a whole capture; a loader that never gets ready or writes junk leaves no file behind."""

from __future__ import annotations

import os
import shlex
import signal
import stat
from pathlib import Path

import pytest
from link_support import digest, make_victim, nobody, temporaries

from iosched.core.base.errors import BadInput
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.load.iolog import CaptureWriter, check_iolog, meta_path, read_capture
from iosched.core.trace.capture import CaptureFailed, CaptureRun

from conftest import need

DEVICE = DeviceDoc(name="loop7", maj_min="7:7", size_bytes=64 << 20, rotational=False, removable=False,
                   read_only=False, scheduler="bfq", schedulers=["none", "bfq"], nr_requests=128, read_ahead_kb=128)


def loader(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "fake-loader"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def run(tmp_path: Path, body: str, monkeypatch, duration: float | None = 5.0) -> tuple[CaptureRun, Path]:
    need(Path("/usr/bin/setpriv").exists(), "setpriv")
    fake = loader(tmp_path, body)
    monkeypatch.setattr(CaptureRun, "check", lambda self: (fake, DEVICE, 7 << 20 | 7))
    out = tmp_path / "c.iolog"
    return CaptureRun("loop7", out, duration, 1 << 30, "/"), out


RECORDS = """
echo '{"ready":1,"t":1000000000,"io_start":true,"capture":true}'
echo '1002000000 1 8 4096 2'
echo '1001000000 0 0 4096 1'
echo '1003000000 2 0 0 1'
echo '{"t":1250000000,"lost":0,"full":0}'
echo '1004000000 3 16 8192 1'
echo '{"t":1500000000,"lost":3,"full":1,"end":1}'
"""


def test_records_become_a_whole_capture(tmp_path, monkeypatch):
    capture, out = run(tmp_path, RECORDS, monkeypatch)
    result = capture.run()
    m = result.meta
    assert (m.reads, m.writes, m.flushes, m.discards, m.lost, m.untracked) == (1, 1, 1, 1, 3, 1)
    assert m.scheduler == "bfq" and m.timestamps == "begin" and m.duration_s == pytest.approx(0.5)
    cap = read_capture(out)
    assert check_iolog(cap) == 4
    lines = out.read_text().splitlines()
    assert lines[3:7] == ["1000 /dev/loop7 read 0 4096", "2000 /dev/loop7 write 4096 4096",
                          "3000 /dev/loop7 sync 0 0", "4000 /dev/loop7 trim 8192 8192"]
    assert m.ended == "stopped"  # the loader ended by itself


def test_a_loader_that_never_gets_ready_leaves_nothing(tmp_path, monkeypatch):
    capture, out = run(tmp_path, "echo 'cannot load the BPF programs: Operation not permitted' >&2\nexit 1\n",
                       monkeypatch)
    with pytest.raises(CaptureFailed, match="Operation not permitted"):
        capture.run()
    assert not out.exists() and not meta_path(out).exists()


def test_junk_from_the_loader_is_a_failure_not_a_traceback(tmp_path, monkeypatch):
    capture, out = run(tmp_path, RECORDS.replace("'1004000000 3 16 8192 1'", "'1004000000 three 16'"), monkeypatch)
    with pytest.raises(CaptureFailed, match="cannot read"):
        capture.run()
    assert not out.exists()


def test_the_duration_ends_it(tmp_path, monkeypatch):
    # A loader that reports until told to stop (SIGTERM), as the real one does.
    body = """
trap 'echo "{\\"t\\":9000000000,\\"lost\\":0,\\"full\\":0,\\"end\\":1}"; exit 0' TERM
echo '{"ready":1,"t":1000000000,"io_start":false,"capture":true}'
while :; do echo '{"t":1100000000,"lost":0,"full":0}'; sleep 0.05; done
"""
    capture, out = run(tmp_path, body, monkeypatch, duration=0.3)
    result = capture.run()
    assert result.meta.ended == "duration" and result.meta.timestamps == "issue" and result.meta.requests == 0
    assert read_capture(out).meta.requests == 0


def test_ctrl_c_midway_through_a_batch_keeps_the_batch(tmp_path, monkeypatch):
    # Ctrl-C lands while a batch of records is being written (a reader lagging its loader spends its time there):
    # the capture ends with every record the loader wrote, the iolog agreeing with its metadata.
    body = """
trap 'echo "{\\"t\\":9000000000,\\"lost\\":0,\\"full\\":0,\\"end\\":1}"; exit 0' TERM
echo '{"ready":1,"t":1000000000,"io_start":true,"capture":true}'
echo '1001000000 0 0 4096 1'
echo '1002000000 1 8 4096 2'
echo '{"t":2500000000,"lost":0,"full":0}'
for i in $(seq 100); do echo '{"t":2600000000,"lost":0,"full":0}'; sleep 0.05; done
echo '{"t":9000000000,"lost":0,"full":0,"end":1}'
"""
    capture, out = run(tmp_path, body, monkeypatch, duration=None)
    write = CaptureWriter._line
    hits = []

    def line_then_ctrl_c(self, text):
        if "read" in text and not hits:  # the first batch of records, its counts taken, its lines not yet written
            hits.append(text)
            os.kill(os.getpid(), signal.SIGINT)
        write(self, text)

    monkeypatch.setattr(CaptureWriter, "_line", line_then_ctrl_c)
    result = capture.run()
    assert hits and result.meta.ended == "interrupted" and isinstance(capture.interrupted, KeyboardInterrupt)
    assert (result.meta.reads, result.meta.writes) == (1, 1) and check_iolog(read_capture(out)) == 2
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Ctrl-C is Python's own again


def planting_loader(*commands: list[str]) -> str:
    """The stand-in loader's records with ``commands`` run halfway (as another user), as a capture runs."""
    lines = RECORDS.strip().splitlines()
    return "\n".join([*lines[:4], *(shlex.join(c) for c in commands), *lines[4:]]) + "\n"


def test_a_link_planted_at_the_metadata_while_capturing_receives_nothing(others_dir, tmp_path, monkeypatch):
    victim = make_victim(tmp_path)
    before = digest(victim)
    capture, _ = run(tmp_path, "", monkeypatch)
    out = capture.out = others_dir / "cap.iolog"
    old_tmp = others_dir / f".cap.iolog.meta.json.{os.getpid()}.tmp"  # the name it went through before
    fake = loader(tmp_path, planting_loader(nobody("ln", "-s", str(victim), str(meta_path(out))),
                                            nobody("ln", "-s", str(victim), str(old_tmp))))
    monkeypatch.setattr(CaptureRun, "check", lambda self: (fake, DEVICE, 7 << 20 | 7))
    with pytest.raises(BadInput, match=r"cap\.iolog\.meta\.json is a symlink, not a regular file"):
        capture.run()
    assert digest(victim) == before
    assert not out.exists() and meta_path(out).is_symlink()  # no iolog without metadata; theirs left alone
    assert temporaries(others_dir) == [old_tmp.name]


def test_an_iolog_swapped_for_a_link_while_capturing_gets_no_metadata(others_dir, tmp_path, monkeypatch):
    victim = make_victim(tmp_path)
    before = digest(victim)
    capture, _ = run(tmp_path, "", monkeypatch)
    out = capture.out = others_dir / "cap.iolog"
    fake = loader(tmp_path, planting_loader(nobody("mv", str(out), str(others_dir / "moved")),
                                            nobody("ln", "-s", str(victim), str(out))))
    monkeypatch.setattr(CaptureRun, "check", lambda self: (fake, DEVICE, 7 << 20 | 7))
    with pytest.raises(BadInput, match="was moved or replaced while the capture ran"):
        capture.run()
    assert digest(victim) == before and out.is_symlink() and not meta_path(out).exists()
    assert temporaries(others_dir) == []
