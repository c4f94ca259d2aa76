"""--fill and --steady checked before anything is locked (core/experiment/conditions.py, as each plan on this machine
calls it: ``LocalPlan.check_conditions``): one sentence where they cannot apply, nothing read from a device that need
not be."""

from __future__ import annotations

import pytest

from iosched.core.base.errors import BadInput
from iosched.core.documents.params import parse_variants
from iosched.core.experiment.alternation import AlternationPlan
from iosched.core.experiment.compare import ComparePlan
from iosched.core.experiment.local_plan import TargetRequest
from iosched.core.experiment.matrix import MatrixPlan, MatrixRunPlan
from iosched.core.load.jobs import CATALOG, parse_job_file
from iosched.core.load.replay import ReplayRequest
from iosched.core.load.steady import SteadyWait

WAIT = SteadyWait(criterion="iops_slope:1%", window_s=10, ramp_s=0, timeout_s=60)
VARIANTS = parse_variants("none,bfq")


def plan(tree, **kw: object) -> ComparePlan:
    tree.add_disk("sdx", "8:16")
    kw.setdefault("job", CATALOG["rnd4k-q1t1-read"])
    return ComparePlan("sdx", VARIANTS, root=tree.root, **kw)  # type: ignore[arg-type]


def test_a_one_stream_job_may_wait_and_fill(tree) -> None:
    plan(tree, steady=WAIT, fill=50.0).check_conditions()


@pytest.mark.parametrize("kw, said", [
    ({"job": None, "cmd": "true"}, "a command or a replayed capture"),
    ({"job": None, "replay": ReplayRequest("x.iolog", "fast")}, "a command or a replayed capture"),
    ({"job": CATALOG["interactive-under-writes"]}, "interactive-under-writes cannot wait for steady state: it has "
                                                   "roles"),
    ({"job": parse_job_file("[a]\nrw=read\n[b]\nrw=read\n", "two.fio")}, "two or more job sections"),
])
def test_steady_where_fio_cannot_judge_one_stream(tree, kw: dict, said: str) -> None:
    with pytest.raises(BadInput, match=said):
        plan(tree, steady=WAIT, **kw).check_conditions()


def test_a_live_alternation_does_not_wait(tree) -> None:
    tree.add_disk("sdx", "8:16")
    alternate = AlternationPlan("sdx", VARIANTS, job=CATALOG["rnd4k-q1t1-read"], every=5.0, duration=80.0,
                                steady=WAIT, root=tree.root)
    with pytest.raises(BadInput, match="live alternation"):
        alternate.check_conditions()


def test_a_matrix_checks_every_job(tree) -> None:
    tree.add_disk("sdx", "8:16")
    m = MatrixPlan(VARIANTS, [CATALOG["rnd4k-q1t1-read"], CATALOG["fair-share"]], steady=WAIT)
    with pytest.raises(BadInput, match="fair-share cannot wait"):
        MatrixRunPlan("sdx", VARIANTS, matrix=m, root=tree.root).check_conditions()


def test_fill_where_it_would_not_be_the_raw_device(tree) -> None:
    with pytest.raises(BadInput, match="--dir runs on a scratch file"):
        plan(tree, fill=50.0, target=TargetRequest(dir="/tmp")).check_conditions()
    with pytest.raises(BadInput, match="a command alone"):
        plan(tree, fill=50.0, job=None, cmd="true").check_conditions()
    tree.write("proc/self/mountinfo", "36 25 8:16 / /srv rw,relatime shared:1 - ext4 /dev/sdx rw\n")
    with pytest.raises(BadInput, match=r"mounted or in use \(/srv\)"):
        plan(tree, fill=50.0).check_conditions()


def test_a_resumed_matrix_is_not_filled_again(tree) -> None:
    from matrix_support import plan_document

    tree.add_disk("sdx", "8:16")
    m = MatrixPlan(VARIANTS, [CATALOG["rnd4k-q1t1-read"]])
    going_on = MatrixRunPlan("sdx", VARIANTS, matrix=m, resume=plan_document(m, "sdx"), fill=50.0, root=tree.root)
    with pytest.raises(BadInput, match="a resumed matrix goes on with the device as it is"):
        going_on.check_conditions()


def test_a_cancelled_fill_says_what_it_left(tree, monkeypatch) -> None:
    """A cancel during the fill: one sentence, what was stopped and what is left; the target released."""
    from iosched.core.base.errors import IoschedError
    from iosched.core.experiment import conditions
    from iosched.core.experiment.control import Cancelled, Control
    from iosched.core.load.fill import FillPlan
    from iosched.core.load.targets import Target

    tree.add_disk("sdx", "8:16")
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
        conditions.prepare_conditions("sdx", 50.0, None, target, said.append, ctl, tree.root)
    assert released == [tree.root]


def test_a_cancelled_wait_for_steady_state_says_which_run_it_stopped(monkeypatch) -> None:
    from types import SimpleNamespace

    from iosched.core.base.errors import IoschedError
    from iosched.core.experiment import runner
    from iosched.core.experiment.control import Cancelled, Control
    from iosched.core.experiment.slots import why_ended

    ctl = Control()

    def stopped(*_a: object, **_k: object) -> None:
        ctl.cancelled.set()
        raise IoschedError("fio was stopped")

    monkeypatch.setattr(runner, "wait_for_steady", stopped)
    workload = SimpleNamespace(steady=WAIT, job=CATALOG["rnd4k-q1t1-read"], target=object())
    with pytest.raises(Cancelled, match=r"^cancelled while run 4 waited for steady state \(0 s of at most 60 s\): "
                                        r"that run was not made$") as e:
        runner._steady_first(workload, ctl, lambda p: None, lambda r: None, 3)  # type: ignore[arg-type]
    assert why_ended(e.value) == str(e.value)  # the saved note and the command line's last line say it
    assert why_ended(Cancelled("")) == "cancelled"
