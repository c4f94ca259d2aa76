"""Make the example of docs/contention.md: the contention group under every scheduler on a scratch loop device.

    sudo python3 docs/make_contention_example.py

Attaches a loop device over a file in /var/tmp (on a disk, not tmpfs: the effects of this group are about requests
that wait, and a device in memory never makes them wait), writes every block of it once, runs
`iosched compare … --jobs contention` on it (each job judged on its own metric), writes its output to
docs/contention-example.txt (the table, the verdict lines and each role's means, all as iosched prints them) and
replaces the block between the `contention-example` markers in docs/contention.md with the command and that output.
The loop device and its file are removed afterwards.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402
from common import extra_loop_devices  # noqa: E402

START, END = "<!-- contention-example:start -->", "<!-- contention-example:end -->"
ARGS = ["--schedulers", "none,mq-deadline,kyber,bfq", "--jobs", "contention", "--runtime", "6", "--repeat", "3",
        "--settle", "0.5"]


def main() -> int:
    with extra_loop_devices(1, size="4G", direct=True, under="/var/tmp") as (path,):
        dev = Path(path).name
        # Every block written first: a read of a hole in a sparse backing file never reaches the disk, and a
        # reader beside writers would be fast or slow by where it happened to read, not by the scheduler.
        subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=4M", "oflag=direct", "status=none"], check=False)
        # No --raw: nothing is mounted from the device, so the jobs run on it raw anyway.
        cmd = [sys.executable, "-m", "iosched.cli", "compare", dev, *ARGS]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return out.returncode
    # iosched prints each role's means itself, under the matrix's verdict lines.
    assert "Each role's means:" in out.stdout, out.stdout
    (HERE / "contention-example.txt").write_text(out.stdout)
    shown = " ".join(["iosched compare", "loopN", *ARGS])
    common.put_in_page(HERE / "contention.md", START, END, "\n".join([f"$ {shown}", out.stdout.rstrip()]))
    print("docs/contention.md and docs/contention-example.txt written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
