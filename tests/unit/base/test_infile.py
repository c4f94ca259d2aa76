"""Reading a file the user names (core/base/infile.py): a regular file within its bound, else one sentence, and no
descriptor left open; the bound said as it is (a study file over 64 KiB said "larger than 0 MiB")."""

import os
from pathlib import Path

import pytest

from iosched.core.base.errors import BadInput
from iosched.core.base.infile import bound_words, open_regular, read_bounded
from iosched.core.experiment.study import MAX_FILE, read_study


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


def test_a_bound_is_said_in_its_own_unit():
    assert [bound_words(n) for n in (900, 1024, 64 << 10, 1 << 20, 64 << 20, (3 << 20) // 2, 1 << 30)] == \
        ["900 bytes", "1 KiB", "64 KiB", "1 MiB", "64 MiB", "1.5 MiB", "1 GiB"]


def test_a_study_file_over_its_bound_says_the_bound(tmp_path):
    study = tmp_path / "study.toml"
    study.write_text("# " + "x" * MAX_FILE + "\n")
    with pytest.raises(BadInput) as e:
        read_study(study)
    assert f"is larger than {MAX_FILE >> 10} KiB" in str(e.value) and "0 MiB" not in str(e.value)
    with pytest.raises(BadInput, match="larger than 10 bytes"):
        read_bounded(study, 10, "thing")
