"""core/live/recording.py's file: made new, never through a link, never over a file that is there."""

from __future__ import annotations

import pytest
from link_support import digest, make_victim, plant
from tui_support import populated_tree

from iosched.core.base.errors import BadInput
from iosched.core.live.recording import Recorder, load


def test_a_recording_is_made_new_and_never_through_a_link_another_user_planted(others_dir, tmp_path):
    tree = populated_tree(tmp_path / "t")
    victim = make_victim(tmp_path)
    before = digest(victim)
    path = others_dir / "r.jsonl"
    plant(path, victim)
    with pytest.raises(BadInput, match=r"r\.jsonl is a symlink, not a regular file"):
        Recorder(path, None, 1.0, tree.root)
    plant(others_dir / "d", tmp_path)  # a folder of root's in place of one the user named
    with pytest.raises(BadInput, match="reached through the link d"):
        Recorder(others_dir / "d" / "r.jsonl", None, 1.0, tree.root)
    assert digest(victim) == before and not (tmp_path / "r.jsonl").exists()
    mine = others_dir / "mine.jsonl"
    recorder = Recorder(mine, None, 1.0, tree.root)
    recorder.step()
    recorder.close()
    assert load(mine).header.interval == 1.0
    with pytest.raises(BadInput, match="exists"):
        Recorder(mine, None, 1.0, tree.root)
