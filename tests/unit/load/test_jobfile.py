"""User job files: the allow-list parser, the file fio reads, and random input that never gets through."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosched.core.base.errors import BadInput
from iosched.core.load.jobfile import ALLOWED, JobFileError, parse_job_file, read_job_file
from iosched.core.load.jobs import CATALOG, space_needed

from conftest import need


@pytest.mark.parametrize(("line", "why"), [
    ("include=/etc/passwd", "include (in either spelling)"),
    ("include /tmp/other.fio", "include (in either spelling)"),
    ("INCLUDE=x.fio", "include (in either spelling)"),
    ("exec_prerun=rm -rf /", "option exec_prerun runs a shell command"),
    ("exec_postrun=/bin/true", "option exec_postrun runs a shell command"),
    ("ioscheduler=kyber", "option ioscheduler switches the device's scheduler"),
    ("write_bw_log=/tmp/bw", "option write_bw_log writes a file"),
    ("write_lat_log=/tmp/lat", "option write_lat_log writes a file"),
    ("write_iops_log=/tmp/iops", "option write_iops_log writes a file"),
    ("write_hist_log=/tmp/hist", "option write_hist_log writes a file"),
    ("write_iolog=/etc/shadow", "option write_iolog writes a file"),
    ("read_iolog=/tmp/log", "option read_iolog replays IO"),
    ("filename=/dev/vda", "option filename picks its own target"),
    ("directory=/data", "option directory picks its own target"),
    ("allow_mounted_write=1", "option allow_mounted_write"),
    ("cgroup=x", "option cgroup"),
    ("verify=md5", "option verify is not an option iosched accepts"),
    ("bs=${X}", "${VAR}, $(...) and backticks are not accepted"),
    ("bs=$(reboot)", "${VAR}"),
    ("bs=`reboot`", "backticks"),
    ("size=$mb_memory", "${VAR}"),
    ("ioengine=exec", "option ioengine=exec: expected one of"),
    ("ioengine=external:/tmp/evil.so", "option ioengine=external:/tmp/evil.so: expected one of"),
    ("rw=trim", "option rw=trim: expected one of"),
    ("bs=4k-64k", "option bs=4k-64k: expected a size"),
    ("bs=4k/50:64k/50", "option bs=4k/50:64k/50: expected a size"),
    ("iodepth=0", "option iodepth=0: expected a whole number from 1 to 4096"),
    ("numjobs=65", "option numjobs=65"),
    ("rwmixread=101", "option rwmixread=101"),
    ("runtime=-5", "option runtime=-5: expected a duration"),
    ("direct=maybe", "option direct=maybe: expected 0 or 1"),
    ("iodepth", "option iodepth needs a value"),
    ("random_distribution=zoned:50/5:50/95", "option random_distribution"),
    ("[bad name]", "a section name is"),
    ("rw=read\x00", "control or non-ASCII"),
])
def test_everything_off_the_allow_list_is_refused_naming_the_line(line, why):
    text = f"[global]\nbs=4k\n\n[job]\n{line}\nrw=read\n"
    with pytest.raises(JobFileError) as e:
        parse_job_file(text, "x.fio")
    assert str(e.value).startswith("refused x.fio line 5: ")
    assert why in str(e.value)
    assert isinstance(e.value, BadInput)  # exit code 2 at the edge


def test_allowed_values_are_written_back_canonical():
    jf = parse_job_file("[global]\nblocksize=4k,64KiB\ndirect\nreadwrite=randrw:8\nruntime=1500ms\ntime_based\n"
                        "[a]\nsize=50%\nrandom_distribution=zipf:1.2\nwait_for_previous\n[b]\ndirect=0\n", "y.fio")
    text = jf.render(None, "/dev/loop7")
    assert text.splitlines()[:3] == ["[global]", "filename=/dev/loop7", "group_reporting=1"]
    for want in ("bs=4096,65536", "direct=1", "rw=randrw:8", "runtime=1500ms", "time_based=1", "size=50%",
                 "random_distribution=zipf:1.2", "stonewall=1", "direct=0"):
        assert want in text.splitlines()
    assert jf.writes and jf.runtime == 1.5
    assert parse_job_file("[a]\nrw=read\nruntime=9\n").runtime is None  # not time based: may end early
    assert parse_job_file("[global]\nrw=write\n[a]\nrw=read\n").writes is False


def test_malformed_files():
    with pytest.raises(BadInput, match="line 1: an option before the first"):
        parse_job_file("rw=read\n[job]\n", "a.fio")
    with pytest.raises(BadInput, match="defines no job"):
        parse_job_file("[global]\nrw=read\n", "b.fio")
    with pytest.raises(BadInput, match="320 fio threads in all"):
        parse_job_file("[global]\nnumjobs=64\n" + "".join(f"[j{i}]\n" for i in range(5)), "t.fio")
    with pytest.raises(BadInput, match="larger than"):
        parse_job_file("[a]\n" + "rw=read\n" * 200_000, "c.fio")


def test_binary_and_special_files_are_refused(tmp_path):
    f = tmp_path / "bin.fio"
    f.write_bytes(b"\xff\xfe[job]\n")
    with pytest.raises(BadInput, match="cannot read job file"):
        read_job_file(str(f))
    with pytest.raises(BadInput, match="not a regular file"):
        read_job_file("/dev/zero")


# --- random input --------------------------------------------------------------------------------------------

_keys = st.sampled_from([*ALLOWED, "include", "exec_prerun", "ioscheduler", "write_bw_log", "filename", "name"])
_values = st.one_of(st.text(max_size=20), st.sampled_from(["4k", "1", "0", "read", "randrw", "libaio", "50%",
                                                           "${X}", "$(id)", "`id`", "/etc/passwd", "10s"]))
_line = st.one_of(
    st.builds(lambda k, v, sp: f"{k}{sp}={sp}{v}", _keys, _values, st.sampled_from(["", " "])),
    st.builds(lambda k: k, _keys),
    st.builds(lambda n: f"[{n}]", st.text(max_size=12)),
    st.text(max_size=40),
)
_file = st.lists(_line, max_size=12).map(lambda ls: "\n".join(["[job]", *ls]))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_file)
def test_random_job_files_are_parsed_or_refused_with_a_typed_error(text):
    try:
        jf = parse_job_file(text, "r.fio")
    except JobFileError:
        return
    rendered = jf.render(3, "/dev/null")
    # What passed is only allowed options with plain values: nothing fio would expand, include or execute.
    for line in rendered.splitlines()[1:]:
        if not line or line.startswith("["):
            continue
        key, _, value = line.partition("=")
        assert key in {n for n, _ in ALLOWED.values()} | {"filename"}
        assert not any(c in value for c in "$`;#/ ") or key == "filename"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(sorted(ALLOWED)),
                          st.sampled_from(["4k", "1", "0", "randread", "read", "libaio", "psync", "50%", "10",
                                           "2s", "zipf:1.2", "4k,8k"])), max_size=8))
def test_what_passes_is_a_job_file_fio_accepts(tmp_path_factory, opts):
    need(shutil.which("fio") is not None, "needs fio on PATH")
    text = "[job]\n" + "\n".join(f"{k}={v}" for k, v in opts)
    try:
        jf = parse_job_file(text, "f.fio")
    except JobFileError:
        return
    d = tmp_path_factory.mktemp("parse")
    job = d / "job.fio"
    job.write_text(jf.render(1, str(d / "target")))
    out = subprocess.run(["fio", "--parse-only", str(job)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr


def test_max_extent_is_the_largest_offset_plus_size():
    jf = parse_job_file("[global]\nsize=1g\n[a]\nrw=write\nnumjobs=4\n[b]\nrw=write\noffset=2g\nsize=3g\n"
                        "[c]\nrw=read\nio_size=10t\n[d]\nrw=read\nsize=50%\n", "x.fio")
    # One file for every job (iosched sets filename): numjobs clones share it, so no multiplication;
    # io_size only repeats IO inside the size it is given with.
    assert jf.max_extent() == 5 << 30
    assert parse_job_file("[c]\nrw=write\nio_size=10t\n").max_extent() == 10 << 40
    assert parse_job_file("[a]\nrw=write\nsize=64t\noffset=64t\n").max_extent() == 128 << 40
    assert parse_job_file("[a]\nrw=write\nsize=50%\n").max_extent() is None
    # Clones each from their own part: the last starts numjobs - 1 increments on; a percentage adds nothing.
    assert parse_job_file("[a]\nrw=read\nsize=1g\nnumjobs=4\noffset_increment=1g\n").max_extent() == 4 << 30
    assert parse_job_file("[a]\nrw=read\nsize=1g\nnumjobs=4\noffset_increment=25%\n").max_extent() == 1 << 30
    assert space_needed([parse_job_file("[a]\nrw=write\n")], 5) == 5
    assert space_needed([CATALOG["4k-write"], parse_job_file("[a]\nrw=write\nsize=8g\n")]) == 8 << 30


def test_the_target_path_is_escaped_for_fio_or_refused():
    jf = parse_job_file("[a]\nrw=read\n")
    assert "filename=/mnt/a\\:b/iosched.dat\n" in jf.render(1, "/mnt/a:b/iosched.dat")
    for bad in ("/mnt/x\nexec_prerun=id", "/mnt/x\ry", "/mnt/x\0", "/mnt/a\\:b"):
        with pytest.raises(BadInput, match="refused target path"):
            jf.render(1, bad)


def test_job_file_with_a_colon_target_passes_fio_parse(tmp_path):
    need(shutil.which("fio") is not None, "needs fio on PATH")
    job = tmp_path / "job.fio"
    job.write_text(parse_job_file("[a]\nrw=write\nsize=1m\n").render(1, str(tmp_path / "a:b")))
    out = subprocess.run(["fio", "--parse-only", str(job)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
