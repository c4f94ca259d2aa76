"""Make the example of docs/recipes.md's "A fleet of the same disks": one compare on three "hosts" of one disk model
from one controller, judged per host and pooled, then `advise --hosts` on the same three: each host's own advice,
pooled per model, whether the hosts agree said before the one answer.

    sudo python3 docs/make_same_disks_example.py

The hosts are docs/fleet_hosts.py's three (network namespaces, each with its own sshd and loop device); `iosched
compare --hosts FILE` and `iosched advise --hosts FILE` reach them over SSH with a key made for the run. Replaces the
block between the `same-disks-example` markers in docs/recipes.md.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import fleet_hosts
from common import put_in_page

HERE = Path(__file__).resolve().parent
START, END = "<!-- same-disks-example:start -->", "<!-- same-disks-example:end -->"
ARGS = ["--schedulers", "none,bfq", "--job", "randread-q16t2", "--runtime", "2", "--repeat", "4", "--settle", "0.5"]
ADVISE = ["--goal", "throughput", "--candidates", "bfq", "--runtime", "2", "--settle", "0.5", "--yes"]


def main() -> None:
    with fleet_hosts.three_hosts() as fleet:
        first = fleet.loops[0].name
        compare = subprocess.run([fleet.iosched, "compare", "--hosts", str(fleet.hosts), first, *ARGS, *fleet.reach,
                                  "--save", str(fleet.tmp / "fleet.json")], capture_output=True, text=True)
        if compare.returncode not in (0, 1):
            raise SystemExit(compare.stderr)
        advise = subprocess.run([fleet.iosched, "advise", first, "--hosts", str(fleet.hosts), *ADVISE, *fleet.reach],
                                capture_output=True, text=True)
        if advise.returncode not in (0, 1):
            raise SystemExit(f"advise --hosts: exit {advise.returncode}\n{advise.stderr}")
        listing = fleet.listing
    said = compare.stderr.strip().splitlines()
    runs = [line for line in said if line.startswith("[fleet] run ")]
    progress = [*said[:1], *runs[:1], "…", *runs[-1:]] if len(runs) > 2 else said
    advised = advise.stderr.strip().splitlines()[:1]  # its first line; each host's own lines follow on a terminal
    text = "\n".join([
        "$ cat fleet.txt", listing.rstrip(), "",
        f"$ iosched compare --hosts fleet.txt {first} {' '.join(ARGS)} --save fleet.json",
        *progress, compare.stdout.rstrip(), "",
        f"$ iosched advise {first} --hosts fleet.txt {' '.join(ADVISE)}", *advised, "…", advise.stdout.rstrip(),
        "$ echo $?", str(advise.returncode)])
    put_in_page(HERE / "recipes.md", START, END, text)
    print("docs/recipes.md written")


if __name__ == "__main__":
    main()
