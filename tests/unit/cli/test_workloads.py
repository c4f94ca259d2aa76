"""The workload commands (cli/workloads.py) on fixture trees: `compare --cmd "…" --background JOB`, its arguments and
the plan they make, and what is refused before anything runs, a cgroup job on a system without cgroup weights too
(real runs on loop devices: tests/real/test_background_real.py, tests/real/test_cgroups_real.py)."""

import shutil

import pytest

from iosched.cli.main import build_parser
from iosched.cli.workloads import _compare_plan
from iosched.core.base.encode import encode
from iosched.core.experiment import service
from iosched.core.experiment.compare import ComparePlan
from iosched.core.experiment.runner import Workload
from iosched.core.load.jobs import CATALOG, Job
from iosched.core.load.startup_replay import StartupJob
from iosched.core.load.targets import Refused

from conftest import need, one_sentence_exit_2


def plan(tree, *extra: str) -> ComparePlan:
    tree.add_disk("sda", "8:0")
    args = build_parser().parse_args(["--root", str(tree.root), "compare", "sda", "--schedulers", "none,bfq",
                                      "--cmd", "sleep 1", *extra])
    return _compare_plan(args)


def test_a_background_job_is_the_plans_only_fio_job(tree):
    need(shutil.which("fio") is not None, "needs fio on PATH (a background job checks for it)")
    p = plan(tree, "--background", "4k-randwrite", "--size", "64M")
    assert p.cmd == "sleep 1" and p.job is None and isinstance(p.background, Job)
    assert p.background.name == "4k-randwrite" and p.background.size == 64 << 20
    assert p.jobs == [p.background] and p.primary == "wall_s"  # its target is chosen (and checked) like a job's
    assert plan(tree).jobs == [] and plan(tree).background is None


def test_the_workload_says_what_ran_beside_the_command():
    wl = Workload(cmd="make", background=CATALOG["4k-randwrite"])
    assert wl.name == "cmd: make under 4k-randwrite"
    assert encode(wl.doc())["background"]["name"] == "4k-randwrite" and encode(wl.doc())["cmd"] == "make"
    assert "background" not in encode(Workload(cmd="make").doc())


def test_a_background_needs_a_command(tree):
    tree.add_disk("sda", "8:0")
    for extra in ((), ("--jobs", "4k-matrix")):
        err = one_sentence_exit_2("--root", str(tree.root), "compare", "sda", "--schedulers", "none,bfq",
                                  "--background", "4k-randwrite", *extra)
        assert "--background loads the device while a command or a start-up runs: give --cmd or --startup too" in err


def test_the_backgrounds_figures_are_the_role_bg(tree):
    need(shutil.which("fio") is not None, "needs fio on PATH (a background job checks for it)")
    tree.add_disk("sda", "8:0")
    base = ("--root", str(tree.root), "compare", "sda", "--schedulers", "none,bfq", "--cmd", "true")
    err = one_sentence_exit_2(*base, "--background", "4k-randwrite", "--metric", "fg:clat_p99_us")
    assert "has no role 'fg'; its roles are bg" in err
    err = one_sentence_exit_2(*base, "--metric", "bg:iops")  # no background: no role
    assert "has no role 'bg'" in err


def test_a_writing_background_is_refused_where_a_writing_job_is(tree):
    need(shutil.which("fio") is not None, "needs fio on PATH (a background job checks for it)")
    p = plan(tree, "--background", "4k-randwrite", "--metric", "bg:clat_p99_us")
    tree.write("run/udev/data/b8:0", "E:ID_FS_TYPE=xfs\n")
    with pytest.raises(Refused, match="a write workload on raw sda would destroy data: it carries a xfs signature"):
        service.run(p)


def test_a_cgroup_job_where_cgroups_cannot_be_made_is_one_sentence_and_changes_nothing(tree, private_journal):
    need(shutil.which("fio") is not None, "needs fio on PATH")
    tree.add_disk("sda", "8:0")
    tree.write("proc/self/mountinfo", "22 1 0:21 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
    tree.write("sys/fs/cgroup/cgroup.controllers", "cpu memory\n")
    err = one_sentence_exit_2("--root", str(tree.root), "run", "sda", "--job", "cgroup-weights")
    assert err.startswith("iosched: cgroup-weights runs its roles in cgroups of different bfq weights, which this "
                          "system cannot make: neither cgroup v2's io controller nor cgroup v1's blkio")
    err = one_sentence_exit_2("--root", str(tree.root), "compare", "sda", "--schedulers", "none,bfq", "--jobs",
                              "contention")
    assert "leave it out and the rest can run; nothing was changed" in err
    assert not private_journal.exists() or not any(private_journal.rglob("*.json"))
    assert not (tree.root / "sys/fs/cgroup/iosched").exists()


def startup_plan(tree, *extra: str) -> ComparePlan:
    tree.add_disk("sda", "8:0")
    args = build_parser().parse_args(["--root", str(tree.root), "compare", "sda", "--schedulers", "none,bfq",
                                      "--startup", *extra])
    return _compare_plan(args)


def test_a_startup_is_the_plans_job_with_its_background_inside_and_caches_dropped(tree):
    need(shutil.which("fio") is not None, "needs fio on PATH (a start-up checks for it)")
    p = startup_plan(tree, "--background", "seq-writers-1", "--startup-cap", "20")
    assert isinstance(p.job, StartupJob) and p.job.given == "bundled" and p.job.cap_multiple == 20
    assert p.job.background is not None and p.job.background.name == "seq-writers-1" and p.background is None
    assert p.primary == "startup_s" and p.drop_caches and p.cmd is None
    alone = startup_plan(tree, "/srv/lo.iolog").job
    assert isinstance(alone, StartupJob) and alone.path == "/srv/lo.iolog" and alone.background is None


@pytest.mark.parametrize(("extra", "said"), [
    (("--startup", "--cmd", "true"), "--startup replays a start-up beside a background: --cmd does not apply"),
    (("--startup", "--replay", "x.iolog"), "--replay does not apply"),
    (("--startup", "--job", "4k-read"), "--job does not apply"),
    (("--startup", "--alternate", "3"), "--alternate does not apply"),
    (("--startup", "--jobs", "seq-writers-1", "--background", "seq-writers-5"),
     "beside --background JOB or beside each of --jobs: give one of them"),
    (("--startup", "--background", "seq-writers-1", "--no-drop-caches"), "--no-drop-caches does not apply"),
    (("--startup", "--background", "seq-writers-1", "--startup-cap", "1"), "--startup-cap: must be at least 2"),
    (("--startup", "--hosts", "h1,h2"), "--startup runs on this machine's device: --hosts does not apply"),
    (("--jobs", "startup-under-load"), "startup-under-load is the loads a start-up is replayed beside: give "
                                       "--startup FILE"),
    (("--startup", "--background", "no-such-job"), "no job named 'no-such-job'"),
])
def test_what_a_startup_does_not_take_is_one_sentence(tree, extra, said):
    need(shutil.which("fio") is not None, "needs fio on PATH (a start-up checks for it)")
    tree.add_disk("sda", "8:0")
    err = one_sentence_exit_2("--root", str(tree.root), "compare", "sda", "--schedulers", "none,bfq", *extra)
    assert said in err


def test_max_time_bounds_a_single_compare_as_a_matrix(tree):
    """A compare says what it will do and for how long before its first run (a matrix of its one workload's
    estimate), and --max-time refuses one estimated longer, in one sentence before anything runs."""
    from iosched.cli.workloads import compare_estimate, compare_words

    need(shutil.which("fio") is not None, "needs fio on PATH (a job checks for it)")
    tree.add_disk("sda", "8:0")
    base = ("--root", str(tree.root), "compare", "sda", "--schedulers", "none,bfq")
    said = one_sentence_exit_2(*base, "--job", "randread-q16t2", "--runtime", "2", "--max-time", "10")
    assert "the compare exceeds --max-time 10 s: it could take about 24 s; scale it with --runtime or --repeat" in said
    said = one_sentence_exit_2(*base, "--job", "randread-q16t2", "--runtime", "2", "--until-verdict",
                               "--max-runs", "6", "--max-time", "40")
    assert "it could take about 48 s; scale it with --max-runs or --runtime" in said
    assert "cannot be" in one_sentence_exit_2(*base, "--cmd", "true", "--max-time", "60")
    args = build_parser().parse_args([*base, "--job", "randread-q16t2", "--runtime", "2"])
    p = _compare_plan(args)
    assert compare_words(p, compare_estimate(p)) == "compare of 2 variants x 3 runs = 6 runs; estimated about 24 s"


def test_the_estimate_counts_the_fill_and_the_waits_to_their_bounds(tree):
    """--steady and --fill: each run's wait counted to its timeout, the fill to its time bound; the estimate then
    says "up to", and --max-time refuses what those bounds could make too long."""
    from iosched.cli.workloads import compare_estimate, compare_words
    from iosched.core.load.fill import fill_most_s

    need(shutil.which("fio") is not None, "needs fio on PATH (a job checks for it)")
    tree.add_disk("sda", "8:0")
    base = ("--root", str(tree.root), "compare", "sda", "--schedulers", "none,bfq", "--job", "randread-q16t2",
            "--runtime", "2")
    p = _compare_plan(build_parser().parse_args([*base, "--steady", "--steady-timeout", "30"]))
    assert compare_estimate(p) == 24 + 6 * 30
    assert compare_words(p, compare_estimate(p)).endswith(
        "estimated up to 3 min 24 s (each wait for steady state to its timeout)")
    p = _compare_plan(build_parser().parse_args([*base, "--fill", "50%"]))
    fill = fill_most_s("sda", 50, tree.root)
    assert fill >= 60 and compare_estimate(p) == 24 + fill
    assert "estimated up to" in compare_words(p, compare_estimate(p))
    said = one_sentence_exit_2(*base, "--steady", "--steady-timeout", "30", "--max-time", "50")
    assert "the compare exceeds --max-time 50 s: it could take up to 3 min 24 s (each wait for steady state to its " \
           "timeout)" in said
    said = one_sentence_exit_2(*base[:-4], "--jobs", "randread-q16t2,rnd4k-q1t1-read", "--runtime", "2",
                               "--fill", "50%", "--max-time", "50")
    assert "the matrix exceeds --max-time 50 s: it could take up to" in said and "the fill to its time bound" in said
