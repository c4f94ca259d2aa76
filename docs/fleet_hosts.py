"""Three "hosts" on this VM for the fleet examples (docs/make_fleet_example.py, docs/make_same_disks_example.py):
network namespaces joined to this one by veth pairs, each with its own sshd and 1 GiB loop device (the real fleet
test's set-up, tests/real/test_fleet_real.py), reached over SSH with a key made for the run. The namespaces, sshds,
keys and loop devices are removed afterwards, whatever happens.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests"), str(ROOT / "tests/real")]

import common  # noqa: E402,F401  (imported first: a kill unwinds through the finally blocks)
from test_fleet_real import host_namespaces  # noqa: E402

from conftest import Loop, attach_loop, detach_loop  # noqa: E402


@dataclass(frozen=True)
class Fleet:
    hosts: Path  # the hosts file: one "ADDRESS LOOP" a line
    loops: list[Loop]
    ssh: Path  # the ssh wrapper that reaches them
    iosched: str  # this machine's iosched, which the hosts run too
    tmp: Path  # a folder for the run's files

    @property
    def listing(self) -> str:
        return self.hosts.read_text()

    @property
    def reach(self) -> list[str]:
        """The flags that reach the hosts' iosched over the run's ssh."""
        return ["--remote-iosched", self.iosched, "--ssh", str(self.ssh)]


@contextlib.contextmanager
def three_hosts(size: str = "1G") -> Iterator[Fleet]:
    iosched = shutil.which("iosched") or str(ROOT / ".venv/bin/iosched")
    tmp = Path(tempfile.mkdtemp(prefix="iosched-fleet-", dir="/dev/shm"))
    loops: list[Loop] = []
    try:
        for n in range(3):
            (tmp / f"disk{n}").mkdir()
            loops.append(attach_loop(tmp / f"disk{n}", size))
        with host_namespaces(tmp, 3) as (addresses, ssh):
            hosts = tmp / "fleet.txt"
            hosts.write_text("".join(f"{a} {lp.name}\n" for a, lp in zip(addresses, loops, strict=True)))
            yield Fleet(hosts, loops, ssh, iosched, tmp)
    finally:
        for lp in loops:
            detach_loop(lp)
        shutil.rmtree(tmp, ignore_errors=True)
