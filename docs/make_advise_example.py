"""Make the example of docs/advise.md (and the README's "What should I set?" recipe): `iosched advise` on a scratch
loop device, for an interactive reader beside a write flood.

    sudo python3 docs/make_advise_example.py

Attaches a loop device (direct IO) over a sparse file in /var/tmp (on a disk, not tmpfs: a reader only waits behind
writers when the writes take time), runs `iosched advise … --goal interactive --yes` on it (the catalog's
interactive-under-writes as the workload, two candidates, a short budget), writes docs/advise-example.txt (the steps
and the plan it printed on stderr, then the answer on stdout) and replaces the block between the `advise-example`
markers in docs/advise.md with the command and the answer. The loop device and its file are removed afterwards.
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

START, END = "<!-- advise-example:start -->", "<!-- advise-example:end -->"
ARGS = ["--goal", "interactive", "--job", "interactive-under-writes", "--runtime", "3", "--settle", "0.5",
        "--candidates", "mq-deadline,bfq", "--budget", "2m"]


def main() -> int:
    with extra_loop_devices(1, size="1G", direct=True, under="/var/tmp") as (path,):
        dev = Path(path).name
        # A loop device keeps its queue when detached: start from the kernel's default, whatever the last user left.
        Path(f"/sys/block/{dev}/queue/scheduler").write_text("none")
        cmd = [sys.executable, "-m", "iosched.cli", "advise", dev, *ARGS, "--yes"]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if out.returncode not in (0, 1):  # 1: an answer too, that cannot tell
            print(out.stderr, file=sys.stderr)
            return out.returncode
    # The answer names the device: loopN in the page, as the command shown does.
    answer = out.stdout.replace(dev, "loopN")
    (HERE / "advise-example.txt").write_text(out.stderr.replace(dev, "loopN") + "\n" + answer)
    shown = " ".join(["iosched advise", "loopN", *ARGS])
    common.put_in_page(HERE / "advise.md", START, END, "\n".join([f"$ {shown}", answer.rstrip()]))
    print("docs/advise.md and docs/advise-example.txt written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
