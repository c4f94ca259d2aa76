"""`advise`'s first look at a real loop device: the kernel's default on this machine's kernel, then the same
device switched by iosched (its journal names this process), then put back."""

from __future__ import annotations

import os

import pytest

from iosched.core.advice.observe import observation_lines, observe
from iosched.core.settings.scheduler import switch_scheduler
from iosched.core.settings.writes import restore

from conftest import need_real

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def test_a_fresh_loop_device_has_the_kernels_default_then_iosched_switches_it(loopdev):
    need_real()
    obs = observe(loopdev.name)
    assert obs.scheduler == "none" and obs.set_by.kind == "kernel"
    assert obs.kernel.scheduler == "none" and "loop driver" in obs.kernel.why
    assert obs.device.kind == "loop" and obs.device.backing_file == str(loopdev.file)
    assert obs.device.hw_queues == 1 and obs.device.hw_depth and obs.device.hw_depth > 0
    assert "bfq" in obs.schedulers
    try:
        switch_scheduler(loopdev.name, "bfq")
        obs = observe(loopdev.name)
        assert obs.scheduler == "bfq" and obs.set_by.kind == "iosched"
        assert f"a running iosched (pid {os.getpid()}), which changed it from none" == obs.set_by.words
        assert any(t.name == "slice_idle" and not t.changed for t in obs.tunables)  # bfq's own default
        assert observation_lines(obs)[0] == (f"{loopdev.name}: bfq, set by a running iosched (pid {os.getpid()}), "
                                             "which changed it from none")
    finally:
        restore()
    assert loopdev.current() == "none"
