"""A command's run timed once before `advise` plans (``time_command``): the plan holds its budget from the length
measured, not from a guess. The command runs as every run of it does (core/experiment/commands.py ``run_cmd``: as
sudo's user, in a cgroup of its own, its whole tree ended), at the device's current setting, which nothing changes;
a run longer than the bound is ended there (the budget cannot hold the runs it would need) and one that fails is
refused: each of its runs would be invalid.
"""

from __future__ import annotations

import threading
from pathlib import Path

from iosched.core.base.errors import BadInput
from iosched.core.experiment.commands import run_cmd
from iosched.core.experiment.control import Cancelled, Control


def time_command(cmd: str, bound_s: float, root: str | Path = "/") -> float:
    """One run of ``cmd``, its wall time in seconds; BadInput when it fails or lasts longer than ``bound_s``
    (ended there). Ctrl-C ends it as it ends any run."""
    ctl = Control()
    timer = threading.Timer(bound_s, ctl.cancelled.set)
    timer.daemon = True
    timer.start()
    try:
        figures, _output, failed = run_cmd(cmd, ctl, lambda: None, root)
    except Cancelled:
        raise BadInput(f"one run of `{cmd}` lasted longer than {bound_s:.0f} s, the longest run the budget could "
                       "hold (it was ended there; nothing was changed): give a larger --budget or a shorter "
                       "command") from None
    finally:
        timer.cancel()
    if failed is not None:
        raise BadInput(f"`{cmd}` failed when timed before the plan: {failed}; every run of it would be invalid "
                       "(nothing was changed)")
    return figures["wall_s"]
