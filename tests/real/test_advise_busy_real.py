"""A busy machine is "cannot tell", the competitors named: the test starts two CPU hogs (Python busy loops) and a fio
write flood on a second loop device it makes, then advises on a first one. The answer names the hogs' pids and the
flooded device, says a quieter time (or --on a spare) would decide, exits 1, and is never keep.

Measures nothing and needs the machine to itself (the competitors are the test's own): not plumbing. About 40 s;
the hogs and the flood are killed and the loop devices detached whatever happens."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from schema_support import valid

from conftest import need_real, run_cli

HOG = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end:\n    pass\n"


@contextmanager
def competing(flooded: str) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Two CPU hogs and a write flood on ``flooded``, each ended (and reaped) on the way out."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs += [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(2)]
        procs.append(subprocess.Popen(
            ["fio", "--name=flood", f"--filename={flooded}", "--rw=write", "--bs=256k", "--direct=1",
             "--ioengine=libaio", "--iodepth=8", "--time_based", "--runtime=120", "--output=/dev/null"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(timeout=30)


def test_a_busy_machine_is_cannot_tell_with_the_competitors_named(make_loop, shm_dir: Path, private_journal,
                                                                  tmp_path: Path):
    need_real("setpriv", "fio")
    tested = make_loop("256M")
    flooded = make_loop("512M", shm_dir)
    with competing(flooded.path) as procs:
        hogs = procs[:2]
        comm = Path(f"/proc/{hogs[0].pid}/comm").read_text().strip()
        r = run_cli("advise", tested.name, "--cmd", "sleep 0.3", "--goal", "throughput", "--candidates",
                    "mq-deadline", "--settle", "0", "--budget", "40", "--yes", "--json",
                    "--save", str(tmp_path / "a.json"), timeout=120)
        assert all(p.poll() is None for p in procs), "a competitor ended before the advice did"
    assert r.returncode == 1, (r.returncode, r.stderr)
    doc = json.loads(r.stdout)
    valid("advice.schema.json", doc)
    [goal] = doc["advice"]
    assert goal["outcome"] == "cannot-tell" and "busy" in goal["reasons"], goal
    named = " | ".join(goal["busy"])
    assert all(f"{comm} (pid {p.pid})" in named for p in hogs), named
    assert flooded.name in named and tested.name not in named, named
    assert not doc["keep"] and tested.current() == tested.initial_scheduler
    words = run_cli("report", str(tmp_path / "a.json"), timeout=60).stdout
    line = next(x for x in words.splitlines() if "cannot tell" in x)  # the answer, its first reason the busy machine
    assert "the machine was busy beside the tests: " in line, words
    assert any(f"(pid {p.pid})" in line for p in hogs) or flooded.name in line, line  # the heaviest: the test's
    assert "a quieter time" in line and "--on a spare" in line, line
    assert "keep" not in line, line
