"""`iosched latency`: why a device is gone, and the text that says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from iosched.cli.latency import latency_text
from iosched.core.kernel.sysfs import device_identity, gone_reason

from conftest import run_cli
from fixtree import FixTree


@pytest.fixture
def disks(tmp_path: Path) -> FixTree:
    t = FixTree(tmp_path / "root")
    t.add_disk("sda", "8:0")
    return t


def test_gone_reasons(disks):
    root = disks.root
    was = device_identity("sda", root)
    assert gone_reason("sda", was, root) is None
    (root / "sys/block/sda/size").write_text("0\n")
    assert gone_reason("sda", was, root) == "no medium attached"
    (root / "sys/block/sda/size").write_text("2048\n")
    (root / "sys/block/sda/dev").write_text("8:16\n")
    assert gone_reason("sda", was, root) == "another device now has its name"
    assert gone_reason("sdz", was, root) == "removed"


def test_a_gone_device_is_said_to_be_gone_in_the_text():
    from datetime import datetime

    from iosched.core.trace.parse import TraceSample

    sample = TraceSample(mono=1.0, interval=1.0, devices={})
    text = latency_text(sample, datetime(2026, 1, 1), ["sda", "sdb"], {"sda": "removed"})
    assert "sda        gone (removed)" in text and "sdb        all" in text and "(no IO completed)" in text


def test_latency_help_says_what_traces_the_co_re_program_first():
    """`latency --help` said "(bpftrace)", though iosched's CO-RE program is what runs wherever it can."""
    for command in ("latency", "top"):
        r = run_cli(command, "--help")
        text = " ".join(r.stdout.split())
        assert r.returncode == 0 and "CO-RE BPF program" in text and "else bpftrace" in text, r.stdout
        assert "µs of CPU per IO" in text
    listed = " ".join(run_cli("--help").stdout.split())
    assert "(bpftrace)" not in listed and "per interval (block-layer tracing)" in listed
