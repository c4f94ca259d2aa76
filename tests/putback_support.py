"""What "put back exactly as it was" is checked against (tests/real/test_putback_real.py, the browser's dropped tab):
a device set by hand beforehand, every setting read as it is, and what a run may leave behind."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from conftest import Loop

# Set by hand before a run, in this order: async_depth after nr_requests, whose write resets it (kernel 6.x);
# read_expire a whole number of jiffies at HZ 100, 250 and 1000, so that it reads back as written.
HAND_SET = {"nr_requests": "64", "iosched/read_expire": "200", "iosched/async_depth": "16"}


def hand_set(loop: Loop) -> dict[str, str]:
    """mq-deadline, with nr_requests and two of its tunables set by hand; every setting as it reads then."""
    (loop.sysdir / "queue/scheduler").write_text("mq-deadline")
    for name, value in HAND_SET.items():
        (loop.sysdir / "queue" / name).write_text(value)
    now = settings_of(loop)
    assert {name: now[name] for name in HAND_SET} == HAND_SET
    return now


def settings_of(loop: Loop) -> dict[str, str]:
    """The scheduler, each of its tunables and each queue knob iosched may change, as they read now (read again
    when a switch made them vanish on the way)."""
    from iosched.core.settings.writes import QUEUE_KNOBS

    queue = loop.sysdir / "queue"
    for _ in range(10):
        try:
            out = {"scheduler": loop.current()}
            tunables = sorted((queue / "iosched").iterdir()) if (queue / "iosched").is_dir() else []  # none's: none
            for p in tunables:
                out[f"iosched/{p.name}"] = p.read_text().strip()
            for name in sorted(QUEUE_KNOBS):
                if (queue / name).exists():
                    out[name] = (queue / name).read_text().strip()
            return out
        except (FileNotFoundError, OSError):  # OSError: ENODEV from a tunable of the scheduler just switched away
            continue
    raise AssertionError(f"the settings of {loop.name} could not be read")


def journal_entries(run_dir: Path) -> list[dict]:
    path = run_dir / "journal.json"
    return json.loads(path.read_text())["entries"] if path.exists() else []


def starts_left(run_dir: Path) -> list[str]:
    """Runs' starting points still written down (core/settings/putback.py): none once each is put back."""
    return sorted(p.name for p in (run_dir / "starts").glob("*")) if (run_dir / "starts").is_dir() else []


def work_folders(pid: int) -> list[str]:
    """fio's work folders of one process (core/load/workdirs.py names them by their owner's pid)."""
    return sorted(str(p) for p in Path(tempfile.gettempdir()).glob(f"iosched-fio-{pid}-*"))
