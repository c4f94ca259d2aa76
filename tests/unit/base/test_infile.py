"""core/base/infile.py: a file the user names, read only when regular and within its bound, the bound said as
it is (a study file over 64 KiB said "larger than 0 MiB")."""

from __future__ import annotations

import pytest

from iosched.core.base.errors import BadInput
from iosched.core.base.infile import bound_words, read_bounded
from iosched.core.experiment.study import MAX_FILE, read_study


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
