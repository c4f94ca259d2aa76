"""The restore summary's rules on outcomes this machine cannot produce on demand (a failed write, a replaced
device, a device under load elsewhere)."""

from __future__ import annotations

from iosched.core.settings.restore_report import (
    NOTHING_ELSE,
    NOTHING_RECORDED,
    restore_failed,
    restore_lines,
)
from iosched.core.settings.writes import RestoreOutcome


def test_failures_and_replaced_devices_are_listed_unchanged_and_skipped_are_not():
    outcomes = [
        RestoreOutcome("sda", "queue/scheduler", "mq-deadline", "bfq", "failed", "the kernel refused it"),
        RestoreOutcome("sda", "queue/nr_requests", "64", "64", "unchanged"),
        RestoreOutcome("sda", "queue/iosched/low_latency", "1", None, "skipped", "belongs to bfq"),
        RestoreOutcome("sdb", "queue/scheduler", "none", None, "replaced", "another device now has this name"),
    ]
    assert restore_lines(outcomes) == ["sda scheduler: failed: the kernel refused it",
                                       "sdb scheduler: replaced: another device now has this name"]
    assert restore_failed(outcomes)
    # A replaced device was not put back: never "every setting is back at its original value".
    assert restore_lines(outcomes[1:]) == ["sdb scheduler: replaced: another device now has this name",
                                           NOTHING_ELSE]
    assert restore_lines([]) == [NOTHING_RECORDED]


def test_a_device_under_load_elsewhere_is_one_line_naming_its_holder():
    outcomes = [RestoreOutcome("loop4", attr, "x", None, "held", "pid 4242, compare")
                for attr in ("queue/scheduler", "queue/nr_requests", "queue/iosched/read_expire")]
    lines = restore_lines(outcomes)
    assert lines == ["loop4: left alone: under load from iosched (pid 4242, compare), which puts back its own "
                     "changes; `iosched restore` after it ends puts back the rest", NOTHING_ELSE]
    assert not restore_failed(outcomes)
