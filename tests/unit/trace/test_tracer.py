"""The tracer: why tracing cannot start, in one sentence each (no bpftrace, not root, too old, lockdown, no
tracepoints); the per-request maps reset with the loss counted; the tracefs mount bounded."""

from __future__ import annotations

import psutil
import pytest

import iosched.core.trace.tracer as tracer
from iosched.core.trace.parse import FrameBuilder, interval_sample
from iosched.core.trace.tracer import (
    TracingUnavailable,
    build_script,
    check_available,
    mount_tracefs,
    reset_every,
)

from conftest import run_cli


@pytest.fixture
def machine(monkeypatch, tree):
    """A root machine with bpftrace 0.17 and the block tracepoints, in a fixture tree."""
    monkeypatch.setattr(tracer.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(tracer.os, "geteuid", lambda: 0)
    monkeypatch.setattr(tracer, "_bpftrace_version", lambda binary: (0, 17, 0))
    for tp in tracer.TRACEPOINTS:
        tree.write(f"sys/kernel/tracing/events/block/{tp}/format", "name: x\n")
    return tree


def test_all_present(machine):
    assert check_available(machine.root) == "/usr/bin/bpftrace"


def test_bpftrace_missing(machine, monkeypatch):
    monkeypatch.setattr(tracer.shutil, "which", lambda name: None)
    with pytest.raises(TracingUnavailable, match=r"needs bpftrace \(on Debian: apt-get install -y bpftrace\)"):
        check_available(machine.root)


def test_not_root(machine, monkeypatch):
    monkeypatch.setattr(tracer.os, "geteuid", lambda: 1000)
    with pytest.raises(TracingUnavailable, match="needs root"):
        check_available(machine.root)


@pytest.mark.parametrize("version", [(0, 12, 0), None])
def test_too_old_or_unreadable_version(machine, monkeypatch, version):
    monkeypatch.setattr(tracer, "_bpftrace_version", lambda binary: version)
    with pytest.raises(TracingUnavailable, match="too old"):
        check_available(machine.root)


def test_lockdown(machine):
    machine.write("sys/kernel/security/lockdown", "none integrity [confidentiality]\n")
    with pytest.raises(TracingUnavailable, match="lockdown"):
        check_available(machine.root)
    machine.write("sys/kernel/security/lockdown", "[none] integrity confidentiality\n")
    assert check_available(machine.root)


def test_no_block_tracepoints(machine):
    (machine.root / "sys/kernel/tracing/events/block/block_rq_insert/format").unlink()
    (machine.root / "sys/kernel/tracing/events/block/block_rq_insert").rmdir()
    with pytest.raises(TracingUnavailable, match="lacks the block tracepoints block_rq_insert"):
        check_available(machine.root)


def test_script_filters_devices_and_counts_at_issue():
    s = build_script(0.5, [7340072, 7340073])
    assert "interval:ms:500" in s
    assert s.count("/args->dev == 7340072 || args->dev == 7340073/") == 4  # io_start, insert, issue, complete
    issue = s[s.index("tracepoint:block:block_rq_issue"):s.index("tracepoint:block:block_rq_complete")]
    assert "@ios[" in issue
    assert "block_io_start" not in build_script(1.0, None, io_start=False)
    assert "kprobe" not in s


@pytest.mark.parametrize(("args", "message"), [
    (("latency", "nosuchdev"), "iosched: no block device named nosuchdev"),
    (("latency", "-c", "0"), "iosched latency: argument -c/--count: must be at least 1"),
    (("top", "-n", "0"), "iosched top: argument -n/--lines: must be at least 1"),
    (("top", "nosuchdev"), "iosched: no block device named nosuchdev"),
])
def test_bad_input_is_one_sentence_and_exit_2(args, message):
    r = run_cli(*args)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(message) and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_script_clears_only_the_idle_request_maps_and_switches_later():
    assert reset_every(1.0) == 60 and reset_every(0.5) == 120 and reset_every(120.0) == 2
    for io_start in (True, False):
        script = build_script(1.0, [7340032], io_start, reset_period=10)
        block = script[script.index("@resetn = @resetn + 1"):script.index("iosched-tick %lld\\n\", nsecs);\n}")]
        # Cleared at tick 8 (the idle set: the other one than @epoch names), switched at tick 10.
        assert "if (@resetn == 8) { if (@epoch) { print(@sadd0);" in block
        assert "if (@resetn >= 10) { @epoch = @epoch ? 0 : 1;" in block
        for m in ("@start", "@pid", "@ins", "@iss", "@sadd", "@sdel", "@shit"):
            assert f"clear({m}0)" in block and f"clear({m}1)" in block
        probes = script[:script.index("interval:ms:")]
        assert "clear(" not in probes and "print(" not in probes
        # A completion deletes from the current set only.
        assert "delete(@start1[" in probes and "$t = @start0[args->dev, args->sector]; if ($t) { @shit0" in probes


def test_dropped_requests_are_what_the_idle_set_held_when_cleared():
    lines = [
        '{"type": "printf", "data": "iosched-tick 1000000000"}',
        '{"type": "map", "data": {"@sadd1": {"0": 50, "1": 30}}}',
        '{"type": "map", "data": {"@sdel1": {"0": 45, "1": 30}}}',
        '{"type": "map", "data": {"@shit1": {"1": 2}}}',
        '{"type": "printf", "data": "iosched-tick 2000000000"}',
        '{"type": "printf", "data": "iosched-tick 3000000000"}',
    ]
    b = FrameBuilder()
    frames = [f for f in (b.feed(ln) for ln in lines) if f is not None]
    s1 = interval_sample(frames[0], frames[1], {})
    s2 = interval_sample(frames[1], frames[2], {})
    assert s1 is not None and s1.dropped_requests == 3 and s1.to_json(0.0)["dropped_requests"] == 3
    assert s2 is not None and s2.dropped_requests == 0  # counted at the clear only, not carried over


def test_a_hanging_mount_times_out_with_one_sentence(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "mount"
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    with pytest.raises(TracingUnavailable) as e:
        mount_tracefs(tmp_path / "tracing", timeout=0.3)
    msg = str(e.value)
    assert "did not finish within 0.3 s" in msg and "\n" not in msg
    assert not any(p.info["name"] == "sleep" and p.info["ppid"] == psutil.Process().pid
                   for p in psutil.process_iter(["name", "ppid"]))
