"""`iosched advise --dry-run` takes exactly the checks the real run takes, on a real loop device: what the run would
refuse, the printed plan refuses in the same sentence (a candidate its scheduler cannot take, a --dir fio could not
write in, an output path that takes no file), and nothing on the device changes either way. And the plan printed
to a stdout that cannot be written is one sentence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


SHORT = ["--job", "randread-q16t2", "--goal", "throughput", "--runtime", "1", "--budget", "60", "--settle", "0"]


def _journal_empty(run_dir: Path) -> bool:
    path = run_dir / "journal.json"
    return not path.exists() or json.loads(path.read_text())["entries"] == []


@pytest.mark.parametrize(("extra", "why"), [
    (["--candidates", "kyber:read_lat_nsec=-1"], "read_lat_nsec must lie between"),
    (["--candidates", "bfq:no_such_setting=1"], "has no setting 'no_such_setting'"),
    (["--candidates", "bfq", "--dir", "/proc"], "holds no files"),
    (["--candidates", "bfq", "--dir", "/etc/passwd"], "does not exist or is not a directory"),
    (["--candidates", "bfq", "--save", "/proc/self/x.json"], "cannot save to /proc/self/x.json"),
    (["--candidates", "bfq", "--markdown", "/sys/x.md"], "cannot save to /sys/x.md"),
], ids=lambda a: " ".join(a)[:40] if isinstance(a, list) else None)
def test_the_printed_plan_refuses_what_the_run_refuses(loopdev, private_journal, extra, why):
    need_real("fio")
    before = loopdev.current()
    said = []
    for mode in ("--dry-run", "--yes"):
        r = run_cli("advise", loopdev.name, *SHORT, *extra, mode, timeout=120)
        assert r.returncode == 2, (mode, r.stdout, r.stderr)
        last = r.stderr.strip().splitlines()[-1]
        assert last.startswith("iosched: ") and why in last and "Traceback" not in r.stderr, (mode, r.stderr)
        said.append(last)
        assert "[3/5 test]" not in r.stderr and loopdev.current() == before and _journal_empty(private_journal)
    assert said[0] == said[1]


def test_a_plan_that_would_run_is_printed_and_nothing_changes(loopdev, private_journal):
    need_real("fio")
    before = loopdev.current()
    r = run_cli("advise", loopdev.name, *SHORT, "--candidates", "bfq,kyber:read_lat_nsec=500000", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "kyber:read_lat_nsec=500000" in r.stdout and loopdev.current() == before
    assert _journal_empty(private_journal)


def test_the_plan_to_a_full_stdout_is_one_sentence(loopdev, private_journal):
    need_real("fio")
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "iosched.cli", "advise", loopdev.name, *SHORT, "--dry-run"],
                           stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "iosched: cannot write to standard output: No space left on device"
