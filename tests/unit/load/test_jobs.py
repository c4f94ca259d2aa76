"""The job catalog as data, and validation of user job files."""

import pytest

from iosched.core.base.errors import BadInput
from iosched.core.load.jobs import CATALOG, GROUPS, GiB, catalog_job, load_job, parse_job_file


def test_catalog_holds_every_family():
    groups = {j.group for j in CATALOG.values()}
    assert groups >= {"4k matrix", "1M write patterns", "request-size sweep", "sequential-read check",
                      "desktop presets"}
    m = CATALOG["4k-randwrite"]
    assert (m.bs, m.numjobs, m.iodepth, m.ioengine, m.writes) == ("4k", 8, 4, "libaio", True)
    assert len([j for j in CATALOG.values() if j.group == "1M write patterns"]) == 8
    assert CATALOG["1m-seq-1"].size == 32 * GiB and CATALOG["1m-rand-4"].numjobs == 4
    assert len([j for j in CATALOG.values() if j.group == "request-size sweep"]) == 24
    assert {"seq1m-q8t1-read", "seq1m-q1t1-write", "rnd4k-q32t1-read", "rnd4k-q1t1-write"} <= set(CATALOG)
    assert not CATALOG["seqread-buffered"].direct and CATALOG["seqread-direct"].direct
    assert all(j.description and len(j.description) < 100 for j in CATALOG.values())


def test_scaling_and_fio_options():
    j = CATALOG["randread-q16t2"].scaled(runtime=1.5, size=64 << 20)
    opts = dict(j.fio_options())
    assert opts["runtime"] == "1500ms" and opts["size"] == str(64 << 20)
    assert opts["rw"] == "randread" and opts["iodepth"] == "16" and opts["numjobs"] == "2"
    assert opts["time_based"] == "1" and opts["group_reporting"] == "1"
    assert dict(CATALOG["4k-read"].scaled(runtime=3).fio_options())["runtime"] == "3"


def test_unknown_job_suggests_names():
    with pytest.raises(BadInput, match="did you mean 4k-randread"):
        catalog_job("4k-randre")


GOOD = """; a plain job
[global]
ioengine=libaio
direct=1
runtime=30

[rand]
rw=randrw
bs=4k
iodepth=8
"""


def test_valid_job_file_is_rendered_with_our_overrides():
    jf = parse_job_file(GOOD, "mine.fio")
    assert jf.writes
    text = jf.render(runtime=2)
    assert "runtime=30" not in text and "runtime=2" in text and "time_based=1" in text
    assert "group_reporting=1" in text and "[rand]" in text and "bs=4096" in text
    reads = parse_job_file("[r]\nrw=randread\n")
    assert not reads.writes


def test_load_job_from_path_or_catalog(tmp_path):
    f = tmp_path / "j.fio"
    f.write_text(GOOD)
    assert load_job(str(f)).name == "j.fio"
    assert load_job("4k-read").name == "4k-read"
    with pytest.raises(BadInput, match="no job file"):
        load_job(str(tmp_path / "missing.fio"))
    with pytest.raises(BadInput, match="not a regular file"):
        load_job(str(tmp_path))


def test_a_jobs_natural_figure_is_its_primary_metric(tree):
    """hdparm's recipe (seq-read), the desktop SEQ1M presets and the 1M write patterns measure bandwidth: a compare
    and a matrix judge them on MB/s unless --metric says otherwise; a 4k job stays on IOPS."""
    from matrix_support import plan_document

    from iosched.cli.main import build_parser
    from iosched.cli.matrix import build_plan
    from iosched.cli.workloads import _compare_plan

    bandwidth = [*GROUPS["seq-read"].jobs, *GROUPS["1m-patterns"].jobs, "seq1m-q8t1-read", "seq1m-q1t1-write"]
    assert {CATALOG[n].primary for n in bandwidth} == {"mb_s"}
    assert {CATALOG[n].primary for n in [*GROUPS["4k-matrix"].jobs, "rnd4k-q1t1-read", "randread-q16t2"]} == {None}
    assert {CATALOG[n].primary for n in GROUPS["size-sweep"].jobs} == {None}  # one sweep, one unit on its chart
    tree.add_disk("sda", "8:0")

    def args(*given: str):
        return build_parser().parse_args(["--root", str(tree.root), "compare", "sda", "--schedulers", "none,bfq",
                                          *given])

    assert _compare_plan(args("--job", "seqread-direct")).primary == "mb_s"
    assert _compare_plan(args("--job", "seqread-direct", "--metric", "iops")).primary == "iops"
    assert _compare_plan(args("--job", "4k-randread")).primary == "iops"
    matrix, _ = build_plan(args("--jobs", "seq-read"))
    assert plan_document(matrix).primary_metrics == {"seqread-buffered": "mb_s", "seqread-direct": "mb_s"}
