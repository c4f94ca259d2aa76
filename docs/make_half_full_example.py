"""Make the example of docs/recipes.md's "My SSD is half full": a compare on a device filled to 50% first, each run
waiting for steady state, then the saved result as the markdown a tracker comment holds.

    sudo python3 docs/make_half_full_example.py

Attaches a blank 512 MiB loop device (direct IO) over a sparse file in /var/tmp (on a disk, not tmpfs; a loop
device takes discards, so the trim before the fill is real), runs `iosched compare … --fill 50% --steady …` on it,
short (the wait's window and timeout cut to seconds), then `iosched report … --markdown -` on the saved result, and
replaces the block between the `half-full-example` markers in docs/recipes.md with the commands and what they said
(the progress lines of the fill and the first runs, the summary, the page from its conditions on). The loop device
and its file are removed afterwards, whatever happens.
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

START, END = "<!-- half-full-example:start -->", "<!-- half-full-example:end -->"
ARGS = ["--schedulers", "mq-deadline,bfq", "--job", "4k-randwrite", "--runtime", "2", "--repeat", "4", "--settle",
        "0.5", "--fill", "50%", "--steady", "--steady-window", "3", "--steady-timeout", "8"]
PAGE_LINES = 40  # of the markdown: the answer, the conditions and the first rows of the tables


def iosched(*argv: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([sys.executable, "-m", "iosched.cli", *argv], capture_output=True, text=True, cwd=ROOT)
    if out.returncode not in (0, 1):
        raise SystemExit(f"iosched {' '.join(argv)}: exit {out.returncode}\n{out.stderr}")
    return out


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="iosched-half-") as tmp, \
            extra_loop_devices(1, size="512M", direct=True, under="/var/tmp") as (path,):
        dev = Path(path).name
        Path(f"/sys/block/{dev}/queue/scheduler").write_text("none")  # a loop device keeps its last user's
        saved = Path(tmp, "half.json")
        run = iosched("compare", dev, *ARGS, "--save", str(saved))
        page = iosched("report", str(saved), "--markdown", "-")
    said = run.stderr.replace(dev, "loopN").strip().splitlines()
    progress = [line for line in said if not line.startswith("iosched: the result is")]
    runs = [i for i, line in enumerate(progress) if line.startswith("[")]
    if len(runs) > 3:  # the fill and the first two runs, then the last
        progress = [*progress[: runs[1] + 1], "…", *progress[runs[-1]:]]
    shown = " ".join(["iosched compare", "loopN", *ARGS, "--save", "half.json"])
    # The page from its conditions on: its answer and summary are the terminal's, above.
    lines = page.stdout.replace(dev, "loopN").splitlines()
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("- measured on")):]
    cut = [*lines[:PAGE_LINES], f"… ({len(lines) - PAGE_LINES} more lines)"] if len(lines) > PAGE_LINES else lines
    text = "\n".join([f"$ {shown}", *progress, run.stdout.replace(dev, "loopN").rstrip(), "",
                      "$ iosched report half.json --markdown - | sed -n '/^- measured on/,$p'", *cut])
    common.put_in_page(HERE / "recipes.md", START, END, text)
    print("docs/recipes.md written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
