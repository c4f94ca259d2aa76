"""The nets behind the checks of tests/test_not_root_real.py: fio refused its target, a PermissionError no check
named, and the TUI's word on a journal that is root's alone, each one sentence saying root is needed."""

from __future__ import annotations

import argparse
import os

import pytest

from iosched.cli.main import run
from iosched.core.load.fio import FioFailed, FioRefused, parse_result
from iosched.core.settings import journal

REFUSED = {"jobs": [{"jobname": "randread", "error": 13}]}


def test_fio_refused_its_target_asks_for_root(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 65534)
    with pytest.raises(FioRefused) as e:
        parse_result(REFUSED)
    assert str(e.value) == "fio was refused access to its target (permission denied): run as root"


def test_fio_refused_as_root_keeps_fios_error():
    if os.geteuid() != 0:
        pytest.skip("the root branch")
    with pytest.raises(FioFailed) as e:
        parse_result(REFUSED)
    assert not isinstance(e.value, FioRefused) and "error 13" in str(e.value)


def _denied(args: argparse.Namespace) -> int:
    raise PermissionError(13, "Permission denied", "/run/iosched/somewhere")


def test_a_permission_error_no_check_named_is_one_sentence(monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 65534)
    assert run(argparse.Namespace(func=_denied)) == 1
    assert capsys.readouterr().err == "iosched: permission denied on /run/iosched/somewhere: run as root\n"


def test_the_tui_hears_that_the_journal_is_roots(monkeypatch, tmp_path):
    def entries(self: journal.Journal) -> dict:
        raise journal.JournalNeedsRoot(self.path)

    monkeypatch.setattr(journal.Journal, "entries", entries)
    problem = journal.journal_problem(tmp_path)
    assert problem is not None and "root" in problem and "moved aside" not in problem
