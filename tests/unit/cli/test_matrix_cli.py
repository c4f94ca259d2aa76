"""cli/matrix.py's file output: `--plot-file`, looked at when it is written, not only when the command starts."""

from __future__ import annotations

import argparse

import pytest
from link_support import digest, make_victim, plant, temporaries

from iosched.cli.matrix import check_plot_file, plot_result
from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.present import charts


@pytest.mark.parametrize("name", ["p.html", "p.txt"])
def test_a_link_planted_while_the_charts_are_drawn_receives_nothing(others_dir, tmp_path, monkeypatch, name):
    victim = make_victim(tmp_path)
    before = digest(victim)
    target = others_dir / name
    check_plot_file(str(target))  # the early look passes: nothing there yet

    def drawn_meanwhile(*args, **kwargs):
        plant(target, victim)  # as another user, after the command started
        return ["\x1b[31mIOPS\x1b[0m " + "█" * 4000]

    monkeypatch.setattr(charts, "all_charts", drawn_meanwhile)
    with pytest.raises(BadInput, match=f"{name} is a symlink, not a regular file: nothing was written"):
        plot_result({}, {}, argparse.Namespace(plot=False, plot_file=str(target)))
    assert digest(victim) == before and temporaries(others_dir) == []


def test_charts_go_to_a_new_or_regular_file(tmp_path, monkeypatch):
    monkeypatch.setattr(charts, "all_charts", lambda *a, **k: ["IOPS chart"])
    for name in ("p.txt", "p.txt", "p.html"):
        plot_result({}, {}, argparse.Namespace(plot=False, plot_file=str(tmp_path / name)))
    assert (tmp_path / "p.txt").read_text() == "IOPS chart\n"
    assert "IOPS chart" in (tmp_path / "p.html").read_text()


def test_charts_on_a_full_disk_are_one_sentence(tmp_path, monkeypatch):
    """A full (or read-only) filesystem under --plot-file: the command's own sentence, never a traceback."""
    import errno

    import iosched.cli.matrix as cli_matrix

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(charts, "all_charts", lambda *a, **k: ["IOPS chart"])
    monkeypatch.setattr(cli_matrix, "write_file", full)
    with pytest.raises(IoschedError, match=r"^the charts could not be written to .*p\.txt: No space left on device$"):
        plot_result({}, {}, argparse.Namespace(plot=False, plot_file=str(tmp_path / "p.txt")))
