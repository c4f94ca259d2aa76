"""The start-up capture iosched ships: installed with the package, read back whole, a cold interpreter start that
only read, small enough to ship."""

from __future__ import annotations

import pytest

from iosched.core.base.errors import BadInput
from iosched.core.load.bundled import STARTUPS, bundled_startup, startup_path
from iosched.core.load.iolog import check_iolog, meta_path


def test_the_bundled_startup_is_a_whole_cold_command_capture():
    for name in STARTUPS:
        cap = bundled_startup(name)
        m, c = cap.meta, cap.meta.command
        assert c is not None and c.cold and c.exit_status == 0 and c.cmd.startswith("/usr/bin/python3 -c 'import ")
        assert m.ended == "command" and m.timestamps == "submit" and m.lost == 0
        assert m.reads >= 500 and m.writes == m.discards == 0 and not m.has_writes  # it replays anywhere
        assert check_iolog(cap) == m.requests
        assert m.read_bytes == c.accounted_read_bytes  # every byte the kernel charged the interpreter is a line
        size = startup_path(name).stat().st_size + meta_path(startup_path(name)).stat().st_size
        assert size < 128 << 10


def test_an_unknown_bundled_capture_is_one_sentence():
    with pytest.raises(BadInput, match="no bundled start-up capture named 'x'"):
        startup_path("x")
