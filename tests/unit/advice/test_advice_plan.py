"""The advice plan through the experiment service with a simulated runner: equal candidates keep what the device has
(with the smallest effect the tests could see), a better one is named with its margin, a clearly worse one leaves at
a look, a Ctrl-C keeps the runs and gives no advice, and the saved document decides again to the same answer."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from advice_support import SimulatedRunner, nvme_disk
from saved_support import call
from schema_support import valid

from iosched.core.advice.advice_plan import merged
from iosched.core.advice.decision import decide_doc, goal_doc, looks_again
from iosched.core.advice.request import AdviceRequest, parse_budget, parse_goals, prepare_advice
from iosched.core.base.decode import decode
from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput
from iosched.core.documents.document import AdviceDoc
from iosched.core.documents.params import parse_candidates
from iosched.core.experiment import service
from iosched.core.experiment.events import RunEnded
from iosched.core.present.advice_report import advice_lines, advice_markdown, headline
from iosched.core.present.worded import worded


def prepared(tree, goals=("throughput",), candidates="mq-deadline,kyber,bfq", budget=None, **kw):
    nvme_disk(tree)
    req = AdviceRequest("nvme0n1", goals=goals, candidates=tuple(parse_candidates(candidates)), runtime=1.0,
                        settle=0.0, budget_s=budget, root=tree.root, **kw)
    return prepare_advice(req)


def run(prep, runner, steps=None):
    events = []
    outcome = service.run(prep.plan_to_run(runner, (lambda s, w: steps.append(s)) if steps is not None else None),
                          None, events.append)
    return outcome, events


def test_equal_candidates_are_kept_shown_equal_with_the_margin(tree):
    prep = prepared(tree)
    steps: list[str] = []
    outcome, events = run(prep, SimulatedRunner(noise=0.05), steps)
    doc = outcome.doc
    assert outcome.status == "final" and doc.status == "final"
    (g,) = doc.advice
    assert g.recommended is None and g.baseline == "none" and doc.keep == []
    assert g.outcome == "keep-equal" and g.reasons == [] and g.margin == 0.1 and g.better == "higher"
    assert g.effect_level == pytest.approx(0.9) and g.effect_low < g.effect < g.effect_high < 0.1
    assert g.smallest_effect is not None and 0.02 < g.smallest_effect < 0.5
    top = headline(doc)
    assert top.startswith("nvme0n1: keep none — shown equal: no candidate is more than 10% better (90% intervals "
                          "within "), top
    lines = advice_lines(doc)
    assert lines[0] == top and "keep none — shown equal" in lines[1] and "nothing to change" in lines
    assert steps == ["test", "test", "decide", "keep"]
    # Every run is numbered over the whole advice and labelled with its goal.
    ended = [e for e in events if isinstance(e, RunEnded)]
    assert [e.index for e in ended] == list(range(len(ended))) and ended[0].label.startswith("throughput · ")
    assert ended[-1].total == len(ended) == 3 + sum(len(t.result.runs) for t in doc.tests)
    # The total said never grows: the pilot's runs are counted before they end, the runs only fall (drops, the pilot).
    totals = [e.total for e in ended]
    assert totals == sorted(totals, reverse=True), totals


def test_a_better_candidate_is_named_with_its_margin_and_its_cost(tree):
    prep = prepared(tree, goals=("throughput", "latency"))
    runner = SimulatedRunner({"kyber": {"iops": 1.3, "mb_s": 1.3, "clat_p99_us": 0.98}}, noise=0.03)
    outcome, _ = run(prep, runner)
    doc = outcome.doc
    thr = {g.goal: g for g in doc.advice}["throughput"]
    assert thr.recommended == "kyber" and thr.estimate is not None and 1.2 < thr.estimate.ratio < 1.4
    assert thr.estimate.ci_low > 1.0 and thr.costs and thr.costs[0][0] == "clat_p99_us"
    assert [k.variant for k in doc.keep] == ["kyber"] and doc.keep[0].commands == ["iosched set nvme0n1 kyber"]
    assert doc.tradeoff == ""  # its words are written from the rule's numbers (core/present/worded.py)
    said = worded(doc)
    assert said.tradeoff is not None and said.tradeoff.startswith("switch to kyber for throughput: IOPS +")
    assert headline(doc) == f"nvme0n1: {said.tradeoff}"
    assert thr.outcome == "switch" and thr.effect is not None and thr.effect_low is not None and thr.effect_low > 0
    assert thr.effect_level == thr.estimate.level
    md = advice_markdown(doc, "9.9")
    assert md.startswith("### iosched advise nvme0n1\n") and "| throughput | switch to kyber: +" in md
    assert "`iosched set nvme0n1 kyber`" in md
    # Saved and read back: the same document, valid against the published schema, deciding the same answer.
    saved = json.loads(json.dumps(encode(doc)))
    valid("advice.schema.json", saved)
    back = decode(AdviceDoc, saved, "advice.json")
    assert back == doc
    again = decide_doc(back)
    assert again is not None and [goal_doc(g) for g in again.goals] == doc.advice


def test_a_clearly_worse_candidate_leaves_at_a_look(tree):
    prep = prepared(tree, budget=parse_budget("30m"))
    runner = SimulatedRunner({"bfq": {"iops": 0.5}}, noise=0.03)
    outcome, _ = run(prep, runner)
    (t,) = outcome.doc.tests
    assert [d.variant for d in t.dropped] == ["bfq"] and t.dropped[0].at == t.looks[0]
    assert all("bfq" not in labels for labels, _ in runner.segments[2:])  # after the pilot and the first segment
    bfq_runs = [r for r in t.result.runs if r.variant == "bfq"]
    assert len(bfq_runs) == t.looks[0] < t.runs
    assert outcome.doc.advice[0].recommended is None
    lines = [line.strip() for line in advice_lines(outcome.doc)]
    assert f"bfq left at {t.looks[0]} runs per variant: clearly worse than none" in lines


def test_candidates_behind_a_clear_leader_leave_at_a_look_and_the_saved_runs_decide_the_same(tree):
    prep = prepared(tree, budget=parse_budget("30m"))
    runner = SimulatedRunner({"kyber": {"iops": 1.6}, "mq-deadline": {"iops": 1.2}}, noise=0.03)
    outcome, _ = run(prep, runner)
    (t,) = outcome.doc.tests
    assert {d.variant for d in t.dropped} == {"mq-deadline", "bfq"} and {d.at for d in t.dropped} == {t.looks[0]}
    assert all(set(labels) == {"none", "kyber"} for labels, _ in runner.segments[2:])
    (g,) = outcome.doc.advice
    assert g.outcome == "switch" and g.recommended == "kyber"
    lines = [line.strip() for line in advice_lines(outcome.doc)]
    assert f"mq-deadline left at {t.looks[0]} runs per variant: clearly worse than the leading candidate" in lines
    back = decode(AdviceDoc, json.loads(json.dumps(encode(outcome.doc))), "advice.json")
    again = decide_doc(back)
    assert again is not None and [goal_doc(x) for x in again.goals] == outcome.doc.advice
    assert looks_again(t, outcome.doc.rule.margin).behind == [d.variant for d in t.dropped]


def test_a_large_win_ends_its_test_at_a_look_and_the_saved_runs_decide_the_same(tree):
    prep = prepared(tree, budget=parse_budget("30m"))
    runner = SimulatedRunner({"kyber": {"iops": 1.6}}, noise=0.12)  # the pilot's noise plans looks past 6
    outcome, _ = run(prep, runner)
    (t,) = outcome.doc.tests
    assert t.looks[-1] > 6 and t.looked and len(t.looked) < len(t.looks)  # it stopped at an interim look
    per_variant = {v: sum(r.variant == v for r in t.result.runs) for v in t.variants}
    assert max(per_variant.values()) < t.looks[-1]
    (g,) = outcome.doc.advice
    assert g.outcome == "switch" and g.recommended == "kyber"
    back = decode(AdviceDoc, json.loads(json.dumps(encode(outcome.doc))), "advice.json")
    again = decide_doc(back)
    assert again is not None and [goal_doc(x) for x in again.goals] == outcome.doc.advice
    # The saved test ends on a win at the rule's margin; looked at without it, it has not reached its last look.
    assert looks_again(t, outcome.doc.rule.margin).won and not looks_again(t).done


def test_the_pilot_sets_the_runs_never_above_the_accepted(tree):
    prep = prepared(tree)
    accepted = prep.plan.tests[0].runs
    quiet, _ = run(prepared(tree), SimulatedRunner(noise=0.005))
    assert quiet.doc.tests[0].runs == 4 and quiet.doc.tests[0].looks == [4]
    noisy, _ = run(prepared(tree), SimulatedRunner(noise=0.4))
    assert noisy.doc.tests[0].runs == accepted and noisy.doc.tests[0].noise > 0.2


def test_ctrl_c_keeps_the_runs_and_gives_no_advice(tree):
    prep = prepared(tree)
    outcome, _ = run(prep, SimulatedRunner(stop_after=9))
    assert outcome.status == "cancelled" and isinstance(outcome.error, KeyboardInterrupt)
    doc = outcome.doc
    assert doc.status == "cancelled" and doc.advice == [] and doc.keep == []
    assert sum(len(t.result.runs) for t in doc.tests if t.result) + 3 == 9
    assert headline(doc).startswith("nvme0n1: no advice: stopped before every test finished")
    with pytest.raises(KeyboardInterrupt):  # before any run finished: as if refused
        run(prepared(tree), SimulatedRunner(stop_after=0))


def test_merged_segments_number_their_runs_on():
    from fleet_support import compare_doc

    a = compare_doc(["none", "bfq"], [{"index": 0, "variant": "none", "metrics": {"iops": 1.0}},
                                      {"index": 1, "variant": "bfq", "metrics": {"iops": 2.0}}])
    b = compare_doc(["none"], [{"index": 0, "variant": "none", "metrics": {"iops": 3.0}}])
    m = merged(a, b)
    assert [r.index for r in m.runs] == [0, 1, 2] and m.runs[2].start == a.runs[-1].end + 0.0
    assert m.repeat == 2 and m.variants == a.variants and merged(None, b) is b


def test_the_request_is_checked_before_anything_is_read(tree):
    nvme_disk(tree)
    with pytest.raises(BadInput, match="both name the workload"):
        prepare_advice(AdviceRequest("nvme0n1", job="4k-read", cmd="true", root=tree.root))
    with pytest.raises(BadInput, match="catalog job"):
        prepare_advice(AdviceRequest("nvme0n1", job="/etc/passwd", root=tree.root))
    with pytest.raises(BadInput, match="not the device itself"):
        prepare_advice(AdviceRequest("nvme0n1", on="nvme0n1", root=tree.root))
    with pytest.raises(BadInput, match="only what nvme0n1 has now"):
        prepare_advice(AdviceRequest("nvme0n1", candidates=tuple(parse_candidates("none")), root=tree.root))
    with pytest.raises(BadInput, match="no scheduler"):
        prepare_advice(AdviceRequest("nvme0n1", candidates=tuple(parse_candidates("cfq")), root=tree.root))
    assert parse_goals("all") == ("throughput", "latency", "interactive")
    assert parse_goals("latency,throughput") == ("throughput", "latency")
    for bad in ("", "speed"):
        with pytest.raises(BadInput):
            parse_goals(bad)
    assert parse_budget("15m") == 900 and parse_budget("2h") == 7200 and parse_budget("90") == 90
    for bad in ("0", "nan", "soon", "9999h"):
        with pytest.raises(BadInput):
            parse_budget(bad)


def test_a_planned_advice_is_a_document_too(tree):
    prep = prepared(tree)
    doc = replace(prep.doc)
    assert doc.status == "planned" and doc.tests[0].result is None
    valid("advice.schema.json", json.loads(json.dumps(encode(doc))))
    assert headline(doc) == "nvme0n1: planned, not run"


def test_a_saved_advice_is_judged_from_its_runs_never_from_its_conclusion(tree, tmp_path):
    """A saved advice whose runs were taken out still showed its stored "kyber for throughput +30%": the answer comes
    from the runs, so without them there is none, and the report says why (exit 0: a file shown, no advice in it)."""
    prep = prepared(tree, goals=("throughput", "latency"))
    outcome, _ = run(prep, SimulatedRunner({"kyber": {"iops": 1.3, "mb_s": 1.3, "clat_p99_us": 0.98}}, noise=0.03))
    saved = json.loads(json.dumps(encode(outcome.doc)))
    assert saved["advice"] and saved["keep"]
    for t in saved["tests"]:
        t.update(result=None, pilot=None, noise=None, looked=[], dropped=[])
    for status in ("final", "running", "cancelled"):
        path = tmp_path / f"{status}.json"
        path.write_text(json.dumps(dict(saved, status=status)))
        code, out, err = call("report", str(path))
        assert code == 0, err
        assert "kyber" not in out.splitlines()[0] and "+3" not in out and "iosched set" not in out, out
        assert out.startswith("nvme0n1: no advice"), out
        code, out, _ = call("report", str(path), "--json")
        again = json.loads(out)
        assert again["advice"] == [] and again["keep"] == [] and again["tradeoff"] is None
