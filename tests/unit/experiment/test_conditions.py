"""--fill and --steady checked before anything is locked (core/experiment/conditions.py): one sentence where they
cannot apply, nothing read from a device that need not be."""

from __future__ import annotations

import pytest

from iosched.core.base.errors import BadInput
from iosched.core.documents.params import parse_variants
from iosched.core.experiment.conditions import check_conditions
from iosched.core.experiment.matrix import MatrixPlan
from iosched.core.experiment.service import ExperimentPlan, TargetRequest
from iosched.core.load.jobs import CATALOG, parse_job_file
from iosched.core.load.steady import SteadyWait

WAIT = SteadyWait(criterion="iops_slope:1%", window_s=10, ramp_s=0, timeout_s=60)
VARIANTS = parse_variants("none,bfq")


def plan(tree, **kw: object) -> ExperimentPlan:
    tree.add_disk("sdx", "8:16")
    kw.setdefault("job", CATALOG["rnd4k-q1t1-read"])
    return ExperimentPlan("sdx", kw.pop("kind", "compare"), VARIANTS, root=tree.root, **kw)  # type: ignore[arg-type]


def test_a_one_stream_job_may_wait_and_fill(tree) -> None:
    check_conditions(plan(tree, steady=WAIT, fill=50.0))


@pytest.mark.parametrize("kw, said", [
    ({"kind": "alternate"}, "live alternation"),
    ({"job": None, "cmd": "true"}, "a command or a replayed capture"),
    ({"job": CATALOG["interactive-under-writes"]}, "interactive-under-writes cannot wait for steady state: it has "
                                                   "roles"),
    ({"job": parse_job_file("[a]\nrw=read\n[b]\nrw=read\n", "two.fio")}, "two or more job sections"),
])
def test_steady_where_fio_cannot_judge_one_stream(tree, kw: dict, said: str) -> None:
    with pytest.raises(BadInput, match=said):
        check_conditions(plan(tree, steady=WAIT, **kw))


def test_a_matrix_checks_every_job(tree) -> None:
    tree.add_disk("sdx", "8:16")
    m = MatrixPlan(VARIANTS, [CATALOG["rnd4k-q1t1-read"], CATALOG["fair-share"]], steady=WAIT)
    with pytest.raises(BadInput, match="fair-share cannot wait"):
        check_conditions(ExperimentPlan("sdx", "matrix", VARIANTS, matrix=m, root=tree.root))


def test_fill_where_it_would_not_be_the_raw_device(tree) -> None:
    with pytest.raises(BadInput, match="--dir runs on a scratch file"):
        check_conditions(plan(tree, fill=50.0, target=TargetRequest(dir="/tmp")))
    with pytest.raises(BadInput, match="a command alone"):
        check_conditions(plan(tree, fill=50.0, job=None, cmd="true"))
    tree.write("proc/self/mountinfo", "36 25 8:16 / /srv rw,relatime shared:1 - ext4 /dev/sdx rw\n")
    with pytest.raises(BadInput, match=r"mounted or in use \(/srv\)"):
        check_conditions(plan(tree, fill=50.0))


def test_a_cancelled_fill_says_what_it_left(tree, monkeypatch) -> None:
    """A cancel during the fill: one sentence, what was stopped and what is left; the target released."""
    from iosched.core.base.errors import IoschedError
    from iosched.core.experiment import conditions
    from iosched.core.experiment.control import Cancelled, Control
    from iosched.core.load.fill import FillPlan
    from iosched.core.load.targets import Target

    ctl, released, said = Control(), [], []

    def stopped(*_a: object, **_k: object) -> None:
        ctl.cancelled.set()
        raise IoschedError("fio was stopped")

    monkeypatch.setattr(conditions, "plan_fill", lambda *_a: FillPlan("sdx", 50, 256 << 20, True, 500.0))
    monkeypatch.setattr(conditions, "run_fill", stopped)
    target = Target("sdx", "/dev/sdx", "device")
    monkeypatch.setattr(target, "release", lambda root: released.append(root))
    with pytest.raises(Cancelled, match=r"^cancelled while filling sdx to 50%: it is left trimmed and partly "
                                        r"written, and no run was made$"):
        conditions.prepare_conditions(plan(tree, fill=50.0), target, said.append, ctl)
    assert released == [tree.root]


def test_a_cancelled_wait_for_steady_state_says_which_run_it_stopped(monkeypatch) -> None:
    from types import SimpleNamespace

    from iosched.core.base.errors import IoschedError
    from iosched.core.experiment import runner
    from iosched.core.experiment.control import Cancelled, Control

    ctl = Control()

    def stopped(*_a: object, **_k: object) -> None:
        ctl.cancelled.set()
        raise IoschedError("fio was stopped")

    monkeypatch.setattr(runner, "wait_for_steady", stopped)
    workload = SimpleNamespace(steady=WAIT, job=CATALOG["rnd4k-q1t1-read"], target=object())
    with pytest.raises(Cancelled, match=r"^cancelled while run 4 waited for steady state \(0 s of at most 60 s\): "
                                        r"that run was not made$") as e:
        runner._steady_first(workload, ctl, lambda p: None, lambda r: None, 3)  # type: ignore[arg-type]
    assert runner.why_ended(e.value) == str(e.value)  # the saved note and the command line's last line say it
    assert runner.why_ended(Cancelled("")) == "cancelled"
