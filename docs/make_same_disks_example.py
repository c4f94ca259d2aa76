"""Make the example of docs/recipes.md's "A fleet of the same disks": one compare on three "hosts" of one disk model
from one controller, judged per host and pooled, its hosts' results kept, and `advise --hosts` as it answers today.

    sudo python3 docs/make_same_disks_example.py

The hosts are network namespaces joined to this one by veth pairs, each with its own sshd and loop device (the real
fleet test's set-up, tests/real/test_fleet_real.py, as docs/make_fleet_example.py uses it); `iosched compare --hosts
FILE` reaches them over SSH with a key made for the run. Replaces the block between the `same-disks-example` markers
in docs/recipes.md. The namespaces, sshds, keys and loop devices are removed afterwards, whatever happens.
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

START, END = "<!-- same-disks-example:start -->", "<!-- same-disks-example:end -->"
ARGS = ["--schedulers", "none,bfq", "--job", "randread-q16t2", "--runtime", "2", "--repeat", "4", "--settle", "0.5"]


def main() -> None:
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
            listing = hosts.read_text()
            compare = subprocess.run([iosched, "compare", "--hosts", str(hosts), loops[0].name, *ARGS,
                                      "--remote-iosched", iosched, "--ssh", str(ssh), "--save",
                                      str(tmp / "fleet.json")], capture_output=True, text=True)
            if compare.returncode not in (0, 1):
                raise SystemExit(compare.stderr)
            advise = subprocess.run([iosched, "advise", "--hosts", str(hosts), loops[0].name], capture_output=True,
                                    text=True)
            if advise.returncode != 2:
                raise SystemExit(f"advise --hosts: exit {advise.returncode}, not the refusal\n{advise.stderr}")
    finally:
        for lp in loops:
            detach_loop(lp)
        shutil.rmtree(tmp, ignore_errors=True)
    said = compare.stderr.strip().splitlines()
    runs = [line for line in said if line.startswith("[fleet] run ")]
    progress = [*said[:1], *runs[:1], "…", *runs[-1:]] if len(runs) > 2 else said
    text = "\n".join([
        "$ cat fleet.txt", listing.rstrip(), "",
        f"$ iosched compare --hosts fleet.txt {loops[0].name} {' '.join(ARGS)} --save fleet.json",
        *progress, compare.stdout.rstrip(), "",
        f"$ iosched advise --hosts fleet.txt {loops[0].name}", advise.stderr.rstrip(), "$ echo $?", "2"])
    common.put_in_page(HERE / "recipes.md", START, END, text)
    print("docs/recipes.md written")


if __name__ == "__main__":
    main()
