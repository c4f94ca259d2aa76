"""What a restore says, the same from `iosched restore` and from quitting the TUI: only what was put back
(or would be), what could not be, and one plain sentence when nothing needed restoring."""

from __future__ import annotations

from collections.abc import Sequence

from iosched.core.settings.writes import RestoreOutcome

NOTHING_NEEDED = "nothing needed restoring: every setting iosched changed is back at its original value"
NOTHING_ELSE = "nothing else could be restored: each line above says why it was left alone"
NOTHING_RECORDED = "nothing to restore: iosched has changed nothing that is still recorded"


def restore_lines(outcomes: Sequence[RestoreOutcome]) -> list[str]:
    """One line per value put back, failed, or left alone because its device is gone or replaced or another
    process made the entry; one line per device left alone because another iosched has it under load.

    Values already at their original ("unchanged") and a scheduler's tunables whose scheduler no longer runs
    ("skipped": the switch back reset them) needed nothing, so they are not listed.
    """
    if not outcomes:
        return [NOTHING_RECORDED]
    lines = []
    held: set[str] = set()
    stuck: set[str] = set()
    for o in outcomes:
        what = f"{o.device} {o.attr.removeprefix('queue/')}"
        if o.status in ("restored", "would restore"):
            lines.append(f"{what}: {o.status} {o.current} -> {o.original}")
        elif o.status in ("failed", "gone", "replaced"):
            lines.append(f"{what}: {o.status}{': ' + o.detail if o.detail else ''}")
        elif o.status == "not ours":
            lines.append(f"{what}: left alone: {o.detail}; `iosched restore` puts it back")
        elif o.status == "stuck" and o.device not in stuck:  # one line for the device: nothing is written to it
            stuck.add(o.device)
            lines.append(f"{o.device}: left alone: {o.detail}")
        elif o.status == "held" and o.device not in held:  # one line for the device, not one per value
            held.add(o.device)
            lines.append(f"{o.device}: left alone: under load from iosched ({o.detail}), which puts back its own "
                         "changes; `iosched restore` after it ends puts back the rest")
    if all(o.status in ("unchanged", "skipped") for o in outcomes):
        lines.append(NOTHING_NEEDED)
    elif not any(o.status in ("restored", "would restore", "failed") for o in outcomes):
        lines.append(NOTHING_ELSE)  # only values left alone (gone, replaced, held, not ours): none put back
    return lines


def restore_failed(outcomes: Sequence[RestoreOutcome]) -> bool:
    """Whether something could not be put back: a failed write, or a device the kernel still owes a write."""
    return any(o.status in ("failed", "stuck") for o in outcomes)
