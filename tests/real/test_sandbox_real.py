"""The demo's sandbox on a real loop node: it starts from the kernel's default scheduler, whatever the node kept
from its last user (a node keeps its scheduler when it is detached, and losetup hands it out again)."""

from __future__ import annotations

from pathlib import Path

from iosched.core.settings import sandbox

from conftest import detach_loop, need_real


def test_a_sandbox_starts_from_the_kernels_default_not_the_nodes_last(tmp_path, private_journal, make_loop):
    need_real("losetup")
    loop = make_loop("64M")
    before = loop.node_scheduler
    node = Path("/sys/block", loop.name, "queue/scheduler")
    loop.node_scheduler = "mq-deadline"  # left so at detaching, as a previous sandbox's user left it
    detach_loop(loop)
    sb = sandbox.create(64 << 20, tmp_path)
    try:
        text = Path("/sys/block", sb.device, "queue/scheduler").read_text()
        assert f"[{sandbox.loop_default()}]" in text, (sb.device, loop.name, text)
    finally:
        sandbox.destroy(sb)
        # The node ours again only while free: put back what it had before this test (size 0: no one's).
        if Path("/sys/block", loop.name, "size").read_text().strip() == "0":
            node.write_text(before)


def test_the_kernels_default_for_a_loop_device():
    assert sandbox.loop_default("6.18.44-fc-v669") == sandbox.loop_default("5.15.0") == "none"
    assert sandbox.loop_default("5.10.0-28-amd64") == "mq-deadline"
