"""advise under stated conditions: a fill planned first with its time in the budget, runs that wait for steady state
where one stream runs, and the offer of the same advice at ≥ 50% full for an SSD tested below half full."""

from __future__ import annotations

from iosched.core.advice.device_class import DeviceClass
from iosched.core.advice.plan import plan_advice, plan_lines
from iosched.core.load.fill import FillPlan
from iosched.core.load.steady import SteadyWait

ALL = ("none", "mq-deadline", "kyber", "bfq")
GOALS = ("throughput", "latency", "interactive")
HALF = FillPlan("d0", 50, 256 << 30, True, 1000.0)  # 128 GiB at an assumed 1 GB/s: about 2.3 min
WAIT = SteadyWait(criterion="iops_slope:1%", window_s=10, ramp_s=0, timeout_s=60)


def device(kind: str = "nvme", rotational: bool = False) -> DeviceClass:
    return DeviceClass(name="d0", kind=kind, rotational=rotational, model=None, vendor=None, serial=None,
                       transport=None, size_bytes=256 << 30, hw_queues=1, hw_depth=32, nr_requests=64,
                       partitions=(), holders=(), sits_on=(), backing_file=None, mountpoints=(), notes=())


def test_the_fill_comes_first_and_counts_against_the_budget() -> None:
    plain = plan_advice("d0", device(), "none", ALL, {}, GOALS)
    filled = plan_advice("d0", device(), "none", ALL, {}, GOALS, fill=HALF)
    # At most: the fill to fio's time bound for its write (three times its estimate), not its estimate.
    assert filled.seconds == plain.seconds + HALF.most_s and HALF.most_s > 2 * HALF.seconds
    lines = plan_lines(filled)
    assert lines.index(f"  first: {HALF.words()}") < next(i for i, x in enumerate(lines) if "pilot:" in x)
    assert any("--fill writes the whole of raw d0" in x for x in filled.changes())
    short = plan_advice("d0", device(), "none", ALL, {}, GOALS, budget_s=plain.seconds + 10, fill=HALF)
    assert short.fits and short.cuts  # the fill's minutes are taken from the tests, not added to the budget


def test_an_ssd_below_half_full_is_offered_the_advice_again_at_half() -> None:
    for kind in ("nvme", "ssd", "mmc"):
        offers = plan_advice("d0", device(kind), "none", ALL, {}, GOALS).offers
        assert len(offers) == 1 and offers[0].startswith("re-run at ≥ 50% full: d0 is an SSD")
        assert "--fill 50% --on SPARE" in offers[0]
    quarter = FillPlan("d0", 25, 256 << 30, True, 1000.0)
    assert "tested 25% full" in plan_advice("d0", device(), "none", ALL, {}, GOALS, fill=quarter).offers[0]
    on_spare = plan_advice("d0", device(), "none", ALL, {}, GOALS, tested_on="d1").offers[0]
    assert "--fill 50% --on d1" in on_spare
    for kind, rotational in (("hdd", True), ("loop", False), ("zram", False), ("virtual", False)):
        assert plan_advice("d0", device(kind, rotational), "none", ALL, {}, GOALS).offers == ()
    assert plan_advice("d0", device(), "none", ALL, {}, GOALS, fill=HALF).offers == ()
    assert "  offer: re-run at ≥ 50% full" in "\n".join(plan_lines(plan_advice("d0", device(), "none", ALL, {},
                                                                               GOALS)))


def test_one_stream_tests_wait_and_the_flood_does_not() -> None:
    plan = plan_advice("d0", device(), "none", ALL, {}, GOALS, steady=WAIT)
    waits = {t.goal: t.wait_s for t in plan.tests}
    assert waits == {"throughput": 60.0, "latency": 60.0, "interactive": 0.0}
    plain = plan_advice("d0", device(), "none", ALL, {}, GOALS)
    for t, p in zip(plan.tests, plain.tests, strict=True):
        assert t.run_s_with_overhead == p.run_s_with_overhead + t.wait_s
    assert any("the interactive use test's runs do not wait for steady state" in n for n in plan.notes)
    assert any("waits for steady state first: IOPS slope within 1%/s" in x for x in plan_lines(plan))


def test_an_advice_keeps_its_conditions_and_they_read_back(tree) -> None:
    import json

    import pytest
    from advice_support import SimulatedRunner, nvme_disk

    from iosched.core.advice.decision import read_advice
    from iosched.core.advice.request import AdviceRequest, prepare_advice
    from iosched.core.base.encode import encode
    from iosched.core.base.errors import BadInput
    from iosched.core.documents.params import parse_candidates
    from iosched.core.experiment import service
    from iosched.core.present.advice_report import advice_lines, advice_markdown

    nvme_disk(tree)
    req = AdviceRequest("nvme0n1", goals=("throughput",), candidates=tuple(parse_candidates("bfq")), runtime=1.0,
                        settle=0.0, root=tree.root, steady=WAIT)
    doc = service.run(prepare_advice(req).plan_to_run(SimulatedRunner(noise=0.05))).doc
    assert doc.conditions is not None and doc.conditions.device == "nvme0n1"
    assert doc.conditions.steady == WAIT and doc.conditions.fill is None
    lines = "\n".join(advice_lines(doc))
    assert "measured on: nvme0n1" in lines and "offer: re-run at ≥ 50% full: nvme0n1 is an SSD" in lines
    assert "- measured on: nvme0n1" in advice_markdown(doc)
    raw = json.loads(json.dumps(encode(doc)))
    assert read_advice(raw, "a.json").conditions == doc.conditions
    raw["conditions"]["steady"]["criterion"] = "lat:1%"
    with pytest.raises(BadInput, match=r"a\.json is not a saved iosched advice: its steady-state criterion"):
        read_advice(raw, "a.json")
