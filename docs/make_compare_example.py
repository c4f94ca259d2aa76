"""Make the example of docs/statistics.md: a newcomer's first compare, as it prints, on a scratch loop device.

    sudo python3 docs/make_compare_example.py

Attaches a 1 GiB loop device (direct IO) over a sparse file in the temp directory, runs
`iosched compare DEV --schedulers none,mq-deadline,bfq --job randread-q16t2 --runtime 2 --repeat 3` on it with its
output into a pipe (the progress one line per run, as into a file), and replaces the block between the
`compare-example` markers in docs/statistics.md with the command, the progress and the result. The loop device and
its file are removed afterwards.
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

START, END = "<!-- compare-example:start -->", "<!-- compare-example:end -->"
ARGS = ["--schedulers", "none,mq-deadline,bfq", "--job", "randread-q16t2", "--runtime", "2", "--repeat", "3"]


def main() -> int:
    with extra_loop_devices(1, size="1G", direct=True) as (path,):
        dev = Path(path).name
        cmd = [sys.executable, "-m", "iosched.cli", "compare", dev, *ARGS]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return out.returncode
    shown = " ".join(["iosched compare", "loopN", *ARGS])
    text = out.stderr.rstrip() + "\n\n" + out.stdout.rstrip()
    common.put_in_page(HERE / "statistics.md", START, END, f"$ {shown}\n{text.replace(dev, 'loopN')}")
    print("docs/statistics.md written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
