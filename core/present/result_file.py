"""Where a result is saved: one JSON file, written atomically after every run a plan saves and at the end, with its
sentence fields written from its numbers as `--json` prints them (worded.py). The experiment service knows it only
as a ``Saver`` (core/experiment/service.py); the front ends make one per result."""

from __future__ import annotations

from pathlib import Path

from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.experiment.results import new_result_path, save_result
from iosched.core.present.worded import worded_json


class ResultFile:
    """A result saved to one file (atomically), after each run of a matrix and at the end, with its sentences
    written (worded.py): the experiment service's saver (core/experiment/service.py ``Saver``). ``path`` None: not
    saved. The TUI's own files wait for a finished run; a file the user named (``keep_empty``) holds a matrix's
    plan from the start, so a matrix stopped in its first run can still be resumed."""

    def __init__(self, path: Path | None, error: str = "", keep_empty: bool = False) -> None:
        self.path = path
        self.error = error
        self.keep_empty = keep_empty
        self.failed = False
        self.refused = False  # the save was refused as bad input (a link planted at the file): exit 2

    @classmethod
    def new_in(cls, directory: Path, device: str, kind: str) -> ResultFile:
        """A fresh name in the results directory (the TUI keeps every result there)."""
        try:
            return cls(new_result_path(device, kind, directory))
        except OSError as e:
            return cls(None, f"{directory}: {e.strerror or e}")

    def save(self, doc: object, empty: bool = False) -> bool:
        if self.path is None or self.failed:
            return False
        if empty and not self.keep_empty and not self.path.exists():  # no run finished: no file
            return True
        try:
            save_result(worded_json(doc), self.path)
        except (OSError, IoschedError) as e:
            self.error = f"{self.path}: {e.strerror or e}" if isinstance(e, OSError) else f"{self.path}: {e}"
            self.failed, self.refused = True, isinstance(e, BadInput)
            return False
        return True

    @property
    def saved(self) -> Path | None:
        """The file holding the result, once one was written and no save failed since."""
        return self.path if self.path is not None and not self.failed and self.path.exists() else None
