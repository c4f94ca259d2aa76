"""Make the fleet examples of docs/fleet.md: one compare on three "hosts" from one controller, judged per host and
pooled; with --matrix, two jobs on them as one matrix (`--jobs`), Holm over its cells.

    sudo python3 docs/make_fleet_example.py [--matrix]

The hosts are network namespaces joined to this one by veth pairs, each with its own sshd and loop device (the
real test's set-up, tests/real/test_fleet_real.py); `iosched compare --hosts FILE` reaches them over SSH with a
key made for the run. Writes docs/fleet-example.txt (docs/fleet-matrix-example.txt) and the block between the
`fleet-example` (`fleet-matrix-example`) markers in docs/fleet.md. The namespaces, sshds, keys and loop devices are
removed afterwards, whatever happens.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests"), str(ROOT / "tests/real")]

import common  # noqa: E402  (imported first: a kill unwinds through the finally blocks)
from test_fleet_real import host_namespaces  # noqa: E402

from conftest import attach_loop, detach_loop  # noqa: E402

ARGS = ["--schedulers", "none,bfq", "--job", "randread-q16t2", "--runtime", "2", "--repeat", "6",
        "--settle", "0.5"]
MATRIX_ARGS = ["--schedulers", "none,bfq", "--jobs", "randread-q16t2,sweep-read-64k", "--runtime", "2", "--repeat",
               "4", "--settle", "0.5"]


def main() -> None:
    matrix = "--matrix" in sys.argv[1:]
    name = "fleet-matrix-example" if matrix else "fleet-example"
    args = MATRIX_ARGS if matrix else ARGS
    iosched = shutil.which("iosched") or str(ROOT / ".venv/bin/iosched")
    tmp = Path(tempfile.mkdtemp(prefix="iosched-fleet-", dir="/dev/shm"))
    loops = []
    try:
        for n in range(3):
            (tmp / f"disk{n}").mkdir()
            loops.append(attach_loop(tmp / f"disk{n}", "1G"))
        with host_namespaces(tmp, 3) as (addresses, ssh):
            hosts = tmp / "fleet.txt"
            hosts.write_text("".join(f"{a} {lp.name}\n" for a, lp in zip(addresses, loops, strict=True)))
            out = subprocess.run([iosched, "compare", "--hosts", str(hosts), loops[0].name, *args,
                                  "--remote-iosched", iosched, "--ssh", str(ssh)], capture_output=True, text=True)
            if out.returncode not in (0, 1):
                raise SystemExit(out.stderr)
            listing = hosts.read_text()
    finally:
        for lp in loops:
            detach_loop(lp)
        shutil.rmtree(tmp, ignore_errors=True)
    # The progress on stderr: the first line, the first two runs and the last, as the terminal shows them.
    said = out.stderr.strip().splitlines()
    runs = [line for line in said if line.startswith("[fleet] run ")]
    progress = [*said[:1], *runs[:2], "…", *runs[-1:]] if len(runs) > 3 else said
    if matrix:  # the first line, and where each job starts
        progress = [*said[:1], *(line for line in said if line.startswith("iosched: job "))]
    text = (f"$ cat fleet.txt\n{listing}\n$ iosched compare --hosts fleet.txt {loops[0].name} {' '.join(args)}\n"
            + "\n".join(progress) + f"\n{out.stdout.rstrip()}\n")
    (HERE / f"{name}.txt").write_text(text)
    common.put_in_page(HERE / "fleet.md", f"<!-- {name}:start -->", f"<!-- {name}:end -->", text)


if __name__ == "__main__":
    main()
