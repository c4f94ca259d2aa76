"""`iosched capture` refuses before anything starts: a bad device, a file it would overwrite, a bad bound."""

from __future__ import annotations

import pytest

from iosched.core.base.errors import BadInput
from iosched.core.trace.capture import check_output

from conftest import one_sentence_exit_2


def test_capture_refuses_a_bad_device_name(tmp_path):
    err = one_sentence_exit_2("capture", "../sda", "-o", str(tmp_path / "c.iolog"))
    assert "sda" in err


def test_capture_never_overwrites(tmp_path):
    existing = tmp_path / "c.iolog"
    existing.write_text("keep me")
    with pytest.raises(BadInput, match="exists"):
        check_output(existing)
    (tmp_path / "d.iolog.meta.json").write_text("{}")
    with pytest.raises(BadInput, match=r"meta\.json exists"):
        check_output(tmp_path / "d.iolog")
    with pytest.raises(BadInput, match="is not a directory"):
        check_output(tmp_path / "nowhere" / "e.iolog")
    assert existing.read_text() == "keep me"


def test_capture_bounds_are_checked_by_the_parser(tmp_path):
    err = one_sentence_exit_2("capture", "loop0", "-o", str(tmp_path / "c.iolog"), "--duration", "-3")
    assert "duration" in err
    err = one_sentence_exit_2("compare", "loop0", "--replay", "x.iolog", "--schedulers", "none,bfq",
                              "--replay-mode", "slow")
    assert "replay-mode" in err


@pytest.mark.parametrize(("args", "said"), [
    ([], "name a device to capture, or a command with --cmd CMD"),
    (["loop0", "--cold"], "--cold goes with --cmd"),
    (["--cmd", " "], "--cmd is empty"),
    (["--cmd", "x" * 70_000], "--cmd is longer than 64 KiB"),
    (["../sda", "--cmd", "true"], "sda"),
])
def test_capture_of_a_command_refuses_before_anything_starts(tmp_path, args, said):
    out = tmp_path / "c.iolog"
    err = one_sentence_exit_2("capture", *args, "-o", str(out))
    assert said in err and not out.exists()
