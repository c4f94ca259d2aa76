"""The CO-RE tracer's output: its records parsed strictly (random lines give a typed error, never another
exception), intervals as differences of cumulative totals, processes as they come, the cost per IO; where the
loader is looked for and why it cannot run."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.core.trace.histograms import Log2Hist
from iosched.core.trace.parse import TraceOutputError
from iosched.core.trace.program import ProgramUnavailable, check_program, loader_argv
from iosched.core.trace.program_parse import ProgramFrame, Ready, parse_line, program_sample

DEV = (7 << 20) | 3  # loop3


def frame(t: float, ios: int, *, discards: int = 0, procs: list | None = None, issued: int = 0,
          prog_ns: int | None = 0, untimed: int = 0) -> str:
    ops = [[DEV, 0, ios, ios * 4096, ios * 50_000, [ios], [0, 0, 0, 0, 0, ios], [0, 0, 0, 0, 0, 0, ios]]]
    if discards:
        ops.append([DEV, 3, discards, discards << 20, 0, [discards], [discards], []])
    return json.dumps({"t": int(t * 1e9), "ops": ops, "procs": procs or [], "untimed": untimed, "full": 0,
                       "swept": 0, "issued": issued, "timed": None if prog_ns is None else issued // 2,
                       "prog_ns": prog_ns, "prog_runs": None if prog_ns is None else issued * 4})


def test_ready_and_frames_parse():
    ready = parse_line('{"ready":1,"t":5,"io_start":true,"stats":false}')
    assert ready == Ready(5, True, False)
    f = parse_line(frame(1.0, 10, procs=[[DEV, 42, "fio é", 10, 40960, [0, 0, 0, 10]]]))
    assert isinstance(f, ProgramFrame)
    assert f.ops[(DEV, "read")].ios == 10 and f.ops[(DEV, "read")].device == Log2Hist.of([0, 0, 0, 0, 0, 10])
    assert f.processes[0][:3] == (DEV, 42, "fio é")


def test_an_interval_is_the_difference_of_two_frames():
    names = {DEV: "loop3"}
    a = parse_line(frame(1.0, 100, discards=2, issued=150, prog_ns=100_000, untimed=1))
    b = parse_line(frame(1.5, 300, discards=5, procs=[[DEV, 42, "fio", 200, 819200, [0, 0, 0, 200]]],
                         issued=350, prog_ns=350_000, untimed=4))
    assert isinstance(a, ProgramFrame) and isinstance(b, ProgramFrame)
    s = program_sample(a, b, names, loader_cpu_s=0.00005)
    assert s is not None and s.interval == pytest.approx(0.5) and s.tracer == "libbpf"
    d = s.devices["loop3"]
    assert d.ops["read"].ios == 200 and d.ops["read"].bytes == 200 * 4096
    assert d.ops["read"].total_ns == 200 * 50_000 and d.ops["read"].total.total == 200
    # A discard's range is an extent, not data moved.
    assert d.ops["discard"].ios == 3 and d.ops["discard"].bytes == 0 and d.ops["discard"].extent_bytes == 3 << 20
    assert [(p.pid, p.comm, p.ios) for p in s.processes] == [(42, "fio", 200)]
    assert s.dropped_requests == 3
    # 250 µs of programs over the 100 requests issued while the kernel timed them, and 50 µs of loader over
    # the 200 requests issued on the machine.
    assert s.cost_us_per_io == pytest.approx(2.75)
    assert s.cost_text() == "CO-RE tracer 2.8 µs/IO"
    # An interval the kernel did not time takes the programs' last figure.
    c = parse_line(frame(2.0, 400, issued=550, prog_ns=350_000))
    assert isinstance(c, ProgramFrame)
    c = dataclasses.replace(c, timed=b.timed)
    later = program_sample(b, c, names, loader_cpu_s=0.0, programs_us=2.5)
    assert later is not None and later.cost_us_per_io == pytest.approx(2.5)
    assert program_sample(b, c, names).cost_us_per_io is None  # never timed yet
    assert program_sample(b, a, names) is None  # out of order


def test_without_the_kernels_run_times_the_cost_is_unknown():
    a, b = parse_line(frame(1.0, 1, prog_ns=None)), parse_line(frame(2.0, 5, prog_ns=None, issued=9))
    assert isinstance(a, ProgramFrame) and isinstance(b, ProgramFrame)
    s = program_sample(a, b, {})
    assert s is not None and s.cost_us_per_io is None and s.cost_text() == "CO-RE tracer"
    assert set(s.devices) == {"7:3"}  # a device no longer in /sys/block keeps its numbers


@pytest.mark.parametrize("line", [
    "", "garbage", "[]", '{"t": -1}', '{"t": 1.5}', '{"t": 1, "ops": {}}', '{"t": true}',
    '{"ready": 1, "t": 1, "io_start": 1, "stats": true}',
    '{"t":1,"ops":[[1,9,1,1,1,[],[],[]]],"procs":[],"untimed":0,"full":0,"swept":0,"issued":0}',
    '{"t":1,"ops":[[1,0,1,1,1,[],[],[' + ",".join(["1"] * 40) + ']]],"procs":[],"untimed":0,"full":0,'
    '"swept":0,"issued":0}',
    '{"t":1,"ops":[],"procs":[[1,2,"a very long command name",1,1,[]]],"untimed":0,"full":0,"swept":0,"issued":0}',
])
def test_bad_lines_are_a_typed_error(line):
    with pytest.raises(TraceOutputError):
        parse_line(line)


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.text(max_size=200), st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(
        st.sampled_from(["t", "ops", "procs", "untimed", "full", "swept", "issued", "prog_ns", "ready"]), inner),
    max_leaves=30).map(json.dumps)))
def test_random_lines_parse_or_are_a_typed_error(line):
    try:
        got = parse_line(line)
    except TraceOutputError:
        return
    assert isinstance(got, Ready | ProgramFrame)


def test_the_loader_is_refused_with_the_reason_it_was_not_built(tmp_path):
    (tmp_path / "BUILD-FAILED").write_text("warning\nclang is not installed\n")
    with pytest.raises(ProgramUnavailable, match=r"^the CO-RE tracer was not built when iosched was installed "
                                                 r"\(clang is not installed\); to build it: apt-get"):
        check_program("/", tmp_path / "iosched-blktrace")


def test_the_loader_needs_btf_and_a_recent_kernel(tmp_path, tree):
    loader = tmp_path / "iosched-blktrace"
    loader.write_text("#!/bin/sh\n")
    loader.chmod(0o755)
    with pytest.raises(ProgramUnavailable, match="has no BTF"):
        check_program(tree.root, loader, release="6.1.0")
    tree.write("sys/kernel/btf/vmlinux", "")
    with pytest.raises(ProgramUnavailable, match=r"needs Linux 5\.11 or later"):
        check_program(tree.root, loader, release="5.10.0-28-amd64")
    assert check_program(tree.root, loader, release="5.11.0") == loader


def test_loader_arguments():
    assert loader_argv(Path("/x"), 0.5, None) == ["/x", "--interval-ms", "500"]
    assert loader_argv(Path("/x"), 1.0, [9, 3, 9]) == ["/x", "--interval-ms", "1000", "--dev", "3", "--dev", "9"]
    assert loader_argv(Path("/x"), 1.0, []) == ["/x", "--interval-ms", "1000", "--dev", "0"]  # nothing at all
