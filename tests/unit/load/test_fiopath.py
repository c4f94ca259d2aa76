"""A target path as fio's `filename` (core/load/fiopath.py): a path fio would read as more than one file, or as a
new option, is refused; a colon is escaped."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iosched.core.base.errors import BadInput
from iosched.core.load.fiopath import check_target_path, fio_filename


def test_a_colon_is_escaped_and_a_plain_path_kept() -> None:
    assert fio_filename("/dev/loop0") == "/dev/loop0"
    assert fio_filename("/mnt/by-id/usb-0:0/f") == "/mnt/by-id/usb-0\\:0/f"


@pytest.mark.parametrize(("path", "what"), [
    ("/mnt/a\nexec_prerun=x", "a line break"), ("/mnt/a\rb", "a carriage return"), ("/mnt/a\0b", "a NUL byte"),
    ("/mnt/a\\:b", "a backslash"),
])
def test_what_fio_cannot_take_as_a_name_is_refused(path: str, what: str) -> None:
    with pytest.raises(BadInput, match=f"it holds {what}"):
        fio_filename(path)


@given(st.text(max_size=60))
def test_any_path_is_one_fio_file_name_or_a_refusal(path: str) -> None:
    try:
        name = fio_filename(path)
    except BadInput:
        assert any(ch in path for ch in "\n\r\0\\")
    else:
        assert check_target_path(path) == path and "\n" not in name
        # fio splits at a colon not escaped: every colon here is escaped, and unescaping gives the path back.
        assert name.count(":") == name.count("\\:") and name.replace("\\:", ":") == path
