"""Why tracing cannot start, in one sentence each: no bpftrace, not root, too old, lockdown, no tracepoints."""

from __future__ import annotations

import pytest

import iosched.core.trace.tracer as tracer
from iosched.core.trace.tracer import TracingUnavailable, build_script, check_available

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
