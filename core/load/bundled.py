"""The start-up captures iosched ships (package data, core/load/startup/): real applications' cold starts, each the
IO one command's processes submitted (`iosched capture --cmd … --cold`), for a foreground that is real IO where
a synthetic burst of reads would stand in: "start an application while the disk is flooded".

``python-imports``: Debian's python3 importing a large set of the standard library and of Debian's Python packages,
cold, on a virtio disk of the machine iosched is developed on; `sudo python3 docs/make_startup_capture.py` makes it
again (on the machine it runs on). Read back like any capture, every line checked (core/load/iolog.py).
"""

from __future__ import annotations

from pathlib import Path

from iosched.core.base.errors import BadInput
from iosched.core.load.iolog import Capture, read_capture

STARTUP_DIR = Path(__file__).with_name("startup")
STARTUPS = ("python-imports",)


def startup_path(name: str = STARTUPS[0]) -> Path:
    """The iolog of a bundled start-up capture (its metadata beside it)."""
    if name not in STARTUPS:
        raise BadInput(f"no bundled start-up capture named {name[:40]!r} (there is {', '.join(STARTUPS)})")
    return STARTUP_DIR / f"{name}.iolog"


def bundled_startup(name: str = STARTUPS[0]) -> Capture:
    """A bundled start-up capture, its metadata read and checked (its lines are checked as they are read)."""
    return read_capture(startup_path(name))
