"""Make the S suite's table of docs/startup.md: bench/startup_table.py (the bundled start-up under each scheduler,
alone and beside the S suite's loads, on a loop device on this machine's disk), its command, verdict and table put
between the `startup-table` markers.

    sudo python3 docs/make_startup_example.py [the options of bench/startup_table.py]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "bench"))

import common  # noqa: E402
import startup_table  # noqa: E402

START, END = "<!-- startup-table:start -->", "<!-- startup-table:end -->"


def main() -> int:
    text, took, runs = startup_table.run(startup_table.parse())
    common.put_in_page(HERE / "startup.md", START, END, text)
    print(f"docs/startup.md written ({took:.0f} s of machine time, {runs} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
