"""Make the example matrix of docs/statistics.md: a real 4k matrix on a scratch loop device, its table and charts.

    sudo python3 docs/make_matrix_example.py

Attaches a loop device over a sparse file in /dev/shm (tmpfs: blocks never written and blocks the write
workloads wrote are both served from memory, so the reads do not change speed half-way through the matrix,
as they would over a file on a disk), runs `iosched compare … --jobs 4k-matrix --until-verdict` on it, writes
docs/matrix-example.txt (table and every chart, plain characters) and docs/matrix-example.html (the
charts in colour), and replaces the block between the
`matrix-example` markers in docs/statistics.md with the command, the table and the IOPS chart. The loop device
and its file are removed afterwards.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402
from common import extra_loop_devices  # noqa: E402

START, END = "<!-- matrix-example:start -->", "<!-- matrix-example:end -->"
ARGS = ["--schedulers", "none,mq-deadline,bfq", "--jobs", "4k-matrix", "--runtime", "2", "--size", "64M",
        "--until-verdict", "--max-runs", "10", "--settle", "0.5"]


def main() -> int:
    work = tempfile.TemporaryDirectory(prefix="iosched-example-")
    with work, extra_loop_devices(1, size="1G", direct=True, under="/dev/shm") as (path,):
        dev = Path(path).name
        save = Path(work.name, "matrix-example.json")
        cmd = [sys.executable, "-m", "iosched.cli", "compare", dev, *ARGS, "--save", str(save),
               "--plot-file", str(HERE / "matrix-example.html")]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return out.returncode
        # The plain-character charts, at a fixed width, re-drawn from the saved file.
        txt = subprocess.run([sys.executable, "-m", "iosched.cli", "report", str(save), "--plot-file",
                              str(HERE / "matrix-example.txt")], capture_output=True, text=True, cwd=ROOT,
                             check=True)
    charts = (HERE / "matrix-example.txt").read_text()
    (HERE / "matrix-example.txt").write_text(txt.stdout + "\n" + charts)
    first_chart = charts.split("\n\n")[0].rstrip()
    shown = " ".join(["iosched compare", "loopN", *ARGS, "--plot"])
    # What the matrix said while it ran: its plan and each look (stderr), before the result.
    said = [line for line in out.stderr.splitlines() if line.startswith(("iosched: matrix of", "iosched: look at"))]
    common.put_in_page(HERE / "statistics.md", START, END,
                       "\n".join([f"$ {shown}", *said, txt.stdout.rstrip(), "", first_chart]))
    print("docs/statistics.md, docs/matrix-example.txt and docs/matrix-example.html written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
