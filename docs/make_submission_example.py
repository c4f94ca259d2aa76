"""Make the submission-cost table of docs/performance.md: bench/submission_cost.py (each scheduler's CPU per IO split
into the submitting task's and the kernel workers', at depth 1 and at saturation, on a loop device over memory), its
command and table put between the `submission-cost` markers.

    sudo .venv/bin/python docs/make_submission_example.py [the options of bench/submission_cost.py]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "bench"))

import common  # noqa: E402
import submission_cost  # noqa: E402

START, END = "<!-- submission-cost:start -->", "<!-- submission-cost:end -->"


def main() -> int:
    text = submission_cost.run(submission_cost.parse())
    common.put_in_page(HERE / "performance.md", START, END, text)
    print(text)
    print("docs/performance.md written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
