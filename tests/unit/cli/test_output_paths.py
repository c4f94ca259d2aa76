"""Every output path of every command is looked at before the first run, and taking a file there is tried then:
/proc, /sys, a folder this user may not write are one sentence naming the path as given, exit 2, nothing run."""

from __future__ import annotations

import errno
import os

import pytest
from saved_support import SAVED

from iosched.core.base.outfile import check_target, write_file

from conftest import one_sentence_exit_2

JOB = ["--schedulers", "none,bfq", "--job", "4k-read"]


@pytest.mark.parametrize(("args", "named"), [
    (["advise", "nodev", "--save", "/proc/self/x.json"], "/proc/self/x.json"),
    (["advise", "nodev", "--markdown", "/sys/x.md"], "/sys/x.md"),
    (["advise", "nodev", "--dry-run", "--save", "/proc/self/x.json"], "/proc/self/x.json"),
    (["compare", "nodev", *JOB, "--save", "/proc/self/x.json"], "/proc/self/x.json"),
    (["compare", "nodev", "--schedulers", "none,bfq", "--jobs", "4k-read,4k-write", "--save", "/proc/self/m.json"],
     "/proc/self/m.json"),
    (["compare", "nodev", *JOB, "--plot-file", "/sys/x.html"], "/sys/x.html"),
    (["report", str(SAVED / "experiment.json"), "--plot-file", "/proc/self/x.txt"], "/proc/self/x.txt"),
], ids=lambda a: " ".join(a)[:40] if isinstance(a, list) else a)
def test_an_output_path_that_takes_no_file_is_refused_before_anything_runs(args, named):
    err = one_sentence_exit_2(*args)
    assert f"cannot save to {named}: " in err, err


def test_the_early_look_makes_and_removes_a_file_where_the_write_will(tmp_path):
    assert check_target(tmp_path / "out.json") is None and list(tmp_path.iterdir()) == []
    for path, code in (("/proc/self/x.json", errno.ENOENT), ("/sys/x.md", errno.EACCES)):
        with pytest.raises(OSError) as e:
            check_target(path)
        assert e.value.errno == code and e.value.filename == path


@pytest.mark.skipif(os.geteuid() != 0, reason="root: /sys refuses even root a new file")
def test_a_failed_write_names_the_path_as_given_not_a_temporary_file():
    with pytest.raises(OSError) as e:
        write_file("/sys/x.md", "# advice\n")
    assert e.value.filename == "/sys/x.md"
