"""Every command run as `nobody` on a real loop device: it either works (reading needs no root) or says in one
sentence that root is needed. Never a traceback, never fio's raw "error 13", never advice to move the journal
aside, and nothing changes: not the device's scheduler, not its data, not the journal, not the rules file.

Two states of the run directory, as a machine has them: root's alone (/run/iosched, mode 700, what iosched
makes) and readable by all (an administrator opened it), which lets each command get further before it needs
root."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import Loop, attach_loop, detach_loop, need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
OK = "ok"
ROOT = "root"

# (id, arguments with {dev} {rules} {scratch} {out}, expected with a private run dir, with an open one)
CASES = [
    ("list", "list", OK, OK),
    ("jobs", "jobs", OK, OK),
    ("watch", "watch {dev} -c 1 -i 0.2", OK, OK),
    ("record", "record {out}/rec.jsonl -i 0.2 {dev} --duration 0.5", OK, OK),
    ("top", "top {dev} -c 1 -i 0.2", OK, OK),  # falls back to /proc/PID/io, saying tracing needs root
    ("tune-show", "tune {dev}", OK, OK),
    ("tune-set", "tune {dev} nr_requests=64", ROOT, ROOT),
    ("set", "set {dev} bfq", ROOT, ROOT),
    ("restore-list", "restore --list", ROOT, OK),
    ("restore", "restore", ROOT, ROOT),
    ("persist-list", "persist --list --rules-dir {rules}", OK, OK),
    ("persist-dry-run", "persist {dev} bfq --dry-run", ROOT, OK),
    ("persist-tuned", "persist {dev} bfq --format tuned", ROOT, OK),
    ("persist-write", "persist {dev} mq-deadline --by kernel-name --rules-dir {rules}", ROOT, ROOT),
    ("persist-remove", "persist {dev} --remove --by kernel-name --rules-dir {rules}", ROOT, ROOT),
    ("run-raw", "run {dev} --job randread-q16t2 --runtime 1", ROOT, ROOT),
    ("run-scratch", "run {dev} --job randread-q16t2 --runtime 1 --dir {scratch}", ROOT, ROOT),
    ("compare", "compare {dev} --schedulers none,bfq --job randread-q16t2 --runtime 1 --repeat 1", ROOT, ROOT),
    ("compare-trace", "compare {dev} --schedulers none,bfq --job randread-q16t2 --runtime 1 --repeat 1 --trace",
     ROOT, ROOT),
    ("compare-matrix", "compare {dev} --schedulers none,bfq --jobs seq-read --runtime 1 --repeat 1", ROOT, ROOT),
    ("latency", "latency {dev} -c 1", ROOT, ROOT),
    ("demo", "demo", ROOT, ROOT),
]


@dataclass
class Machine:
    loop: Loop
    base: Path
    run_dir: Path
    rules: Path
    scratch: Path
    out: Path

    def env(self) -> dict[str, str]:
        return {"IOSCHED_RUN_DIR": str(self.run_dir), "IOSCHED_RESULTS_DIR": str(self.base / "results")}

    def state(self) -> tuple:
        """What no command run as nobody may change."""
        data = hashlib.sha256(self.loop.file.read_bytes()).hexdigest()
        files = {p: p.read_bytes() for p in (self.run_dir / "journal.json", self.rules / "61-iosched.rules")}
        return self.loop.scheduler_text(), data, files, sorted(os.listdir(self.scratch))


@pytest.fixture(scope="module", params=["private", "open"])
def machine(request: pytest.FixtureRequest) -> Iterator[Machine]:
    need_real("setpriv", "fio", "bpftrace")
    base = Path(tempfile.mkdtemp(prefix="iosched-nobody-"))
    base.chmod(0o755)  # like /run: anyone may look in, and the run dir inside decides
    loop = attach_loop(base, "64M")
    try:
        m = Machine(loop, base, base / "iosched", base / "rules", base / "scratch", base / "out")
        for d in (m.rules, m.scratch, m.out):
            d.mkdir(mode=0o755)
        m.out.chmod(0o777)  # where nobody may write a recording
        # As root: a journal with an entry (a switch and back) and a rule for the device, as a used machine has.
        for args in (("set", loop.name, "bfq"), ("set", loop.name, "none"),
                     ("persist", loop.name, "bfq", "--by", "kernel-name", "--rules-dir", str(m.rules))):
            r = run_cli(*args, env=m.env())
            assert r.returncode == 0, r.stderr
        assert (m.run_dir / "journal.json").is_file()
        assert (m.run_dir.stat().st_mode & 0o777) == 0o700
        if request.param == "open":
            m.run_dir.chmod(0o755)
        yield m
    finally:
        detach_loop(loop)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_as_nobody_it_works_or_says_root_is_needed(machine, case, request):
    _, template, private, opened = case
    expected = private if request.node.callspec.params["machine"] == "private" else opened
    args = template.format(dev=machine.loop.name, rules=machine.rules, scratch=machine.scratch,
                           out=machine.out).split()
    before = machine.state()
    r = run_cli(*args, env=machine.env(), preexec=NOBODY, timeout=120)
    assert "Traceback" not in r.stderr and "Errno" not in r.stderr and "error 13" not in r.stderr, r.stderr
    assert "move it aside" not in r.stderr
    if expected == OK:
        assert r.returncode == 0, r.stderr
    else:
        last = r.stderr.strip().splitlines()[-1]
        assert r.returncode == 1, r.stderr
        assert last.startswith("iosched: ") and "root" in last, last
    assert machine.state() == before
