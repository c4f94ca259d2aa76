"""Reading a file the user names (core/base/infile.py): a regular file within its bound, else one sentence, and no
descriptor left open."""

import os
from pathlib import Path

import pytest

from iosched.core.base.errors import BadInput
from iosched.core.base.infile import open_regular, read_bounded


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_regular_file_within_its_bound_is_read_whole(tmp_path: Path) -> None:
    f = tmp_path / "saved.json"
    f.write_bytes(b"x" * (3 << 20))  # more than one read
    assert read_bounded(f, 3 << 20) == b"x" * (3 << 20)


def test_what_is_not_a_regular_file_within_its_bound_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * ((2 << 20) + 1))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: an open that blocked would hang here
    before = open_fds()
    for path, said in ((big, "is larger than 2 MiB: not a matrix iosched wrote"),
                       (fifo, "is not a regular file: give a saved matrix"),
                       (tmp_path, "is not a regular file: give a saved matrix"),
                       (Path("/dev/zero"), "is not a regular file: give a saved matrix"),
                       (tmp_path / "missing", "no such file")):
        with pytest.raises(BadInput, match=said):
            read_bounded(path, 2 << 20, "matrix")
    assert open_fds() == before


def test_a_link_to_a_regular_file_is_read_and_the_descriptor_is_the_callers(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("data")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    fd = open_regular(tmp_path / "link", "capture")
    try:
        assert os.read(fd, 10) == b"data"
    finally:
        os.close(fd)


def test_an_unreadable_file_is_refused_in_one_sentence(tmp_path: Path) -> None:
    f = tmp_path / "secret"
    f.write_text("x")
    f.chmod(0)
    if os.geteuid() == 0:  # root reads it all the same: a name too long to open stands for the failure instead
        f = tmp_path / ("n" * 300)
    with pytest.raises(BadInput, match="cannot read"):
        read_bounded(f, 1 << 20)
