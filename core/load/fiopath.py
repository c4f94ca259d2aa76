"""A target path as fio's ``filename`` option.

fio reads ``filename`` from a job file line or a ``--filename=`` argument: a line break in the path would
start a new option (``exec_prerun`` runs a command), and ``:`` separates several files (fio's HOWTO: a
colon in the wanted path is escaped as ``\\:``). Mountpoints come from mountinfo, which decodes ``\\012``.
"""

from __future__ import annotations

from iosched.core.base.errors import BadInput

_REFUSED = {"\n": "a line break", "\r": "a carriage return", "\0": "a NUL byte", "\\": "a backslash"}


def check_target_path(path: str) -> str:
    """``path`` unchanged; BadInput when fio could not be given it safely."""
    for ch, what in _REFUSED.items():
        if ch in path:
            raise BadInput(f"refused target path {path!r}: it holds {what}, which fio cannot take as a file name")
    return path


def fio_filename(path: str) -> str:
    """``path`` for fio's ``filename`` option: checked, with every ``:`` escaped."""
    return check_target_path(path).replace(":", "\\:")
