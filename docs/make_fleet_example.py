"""Make the fleet examples of docs/fleet.md: one compare on three "hosts" from one controller, judged per host and
pooled; with --matrix, two jobs on them as one matrix (`--jobs`), Holm over its cells.

    sudo python3 docs/make_fleet_example.py [--matrix]

The hosts are docs/fleet_hosts.py's three (network namespaces, each with its own sshd and loop device);
`iosched compare --hosts FILE` reaches them over SSH with a key made for the run. Writes docs/fleet-example.txt
(docs/fleet-matrix-example.txt) and the block between the `fleet-example` (`fleet-matrix-example`) markers in
docs/fleet.md.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import fleet_hosts
from common import put_in_page

HERE = Path(__file__).resolve().parent
ARGS = ["--schedulers", "none,bfq", "--job", "randread-q16t2", "--runtime", "2", "--repeat", "6",
        "--settle", "0.5"]
MATRIX_ARGS = ["--schedulers", "none,bfq", "--jobs", "randread-q16t2,sweep-read-64k", "--runtime", "2", "--repeat",
               "4", "--settle", "0.5"]


def main() -> None:
    matrix = "--matrix" in sys.argv[1:]
    name = "fleet-matrix-example" if matrix else "fleet-example"
    args = MATRIX_ARGS if matrix else ARGS
    with fleet_hosts.three_hosts() as fleet:
        out = subprocess.run([fleet.iosched, "compare", "--hosts", str(fleet.hosts), fleet.loops[0].name, *args,
                              *fleet.reach], capture_output=True, text=True)
        if out.returncode not in (0, 1):
            raise SystemExit(out.stderr)
        listing, first = fleet.listing, fleet.loops[0].name
    # The progress on stderr: the first line, the first two runs and the last, as the terminal shows them.
    said = out.stderr.strip().splitlines()
    runs = [line for line in said if line.startswith("[fleet] run ")]
    progress = [*said[:1], *runs[:2], "…", *runs[-1:]] if len(runs) > 3 else said
    if matrix:  # the first line, and where each job starts
        progress = [*said[:1], *(line for line in said if line.startswith("iosched: job "))]
    text = (f"$ cat fleet.txt\n{listing}\n$ iosched compare --hosts fleet.txt {first} {' '.join(args)}\n"
            + "\n".join(progress) + f"\n{out.stdout.rstrip()}\n")
    (HERE / f"{name}.txt").write_text(text)
    put_in_page(HERE / "fleet.md", f"<!-- {name}:start -->", f"<!-- {name}:end -->", text)


if __name__ == "__main__":
    main()
