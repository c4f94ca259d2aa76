"""`iosched latency`: why a device is gone, and the text that says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from iosched.cli.latency import latency_text
from iosched.core.kernel.sysfs import device_identity, gone_reason

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
