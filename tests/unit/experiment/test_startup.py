"""A start-up's runs without a device: its figures and its time against the cap from fio's JSON (fio replaced), its
time alone measured once per capture, the runs over the cap said per cell, and a start-up matrix's saved plan."""

import json
from dataclasses import replace

import pytest
from matrix_support import plan_document
from startup_support import flood_result, replay_entry

from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.documents.document import RunDoc
from iosched.core.documents.params import parse_variants
from iosched.core.experiment import startup
from iosched.core.experiment.control import Control
from iosched.core.experiment.matrix import MatrixPlan, job_spec, plan_from_doc
from iosched.core.load.fio_result import parse_result
from iosched.core.load.jobs import CATALOG
from iosched.core.load.startup_replay import BUNDLED, startup_job
from iosched.core.load.startup_timing import StartupTiming
from iosched.core.load.targets import Target


def prepared(job):
    """``job`` as if the service had read its capture (the bundled one, 1563 reads)."""
    from iosched.core.load.bundled import bundled_startup
    from iosched.core.load.replay import ReplayJob
    from iosched.core.load.startup_replay import OPTIONS

    fg = ReplayJob(job.path, (("fg", OPTIONS),), bundled_startup())
    return replace(job, foreground=fg, alone_s=0.15)


@pytest.mark.parametrize(("ios", "lat_ns", "runtime_ms", "over"), [(1563, 1_900_000.0, 2970, False),
                                                                   (907, 8_000_000.0, 7500, True)])
def test_a_run_beside_its_background_has_its_time_its_own_figures_and_the_backgrounds(monkeypatch, ios, lat_ns,
                                                                                      runtime_ms, over):
    job = prepared(startup_job(BUNDLED, CATALOG["seq-writers-1"]))
    fg = parse_result({"jobs": [replay_entry(ios, lat_ns, runtime_ms)]})
    caps = []

    def fake_run_fio(what, target, cap, progress, hold, root):
        caps.append(cap)
        return fg

    def fake_beside(background, target, ctl, on_progress, root, foreground, what):
        assert background.name == "seq-writers-1" and what == "the start-up"
        return foreground(), flood_result(), False

    monkeypatch.setattr(startup, "run_fio", fake_run_fio)
    monkeypatch.setattr(startup, "beside", fake_beside)
    target = Target("loop9", "/dev/loop9", "device")
    figures, result, why, timing = startup.run_startup(job, target, Control(), lambda p: None)
    assert caps == [pytest.approx(7.5)] and why is None and timing.over_cap is over
    assert figures["startup_s"] == (7.5 if over else pytest.approx(ios * lat_ns / 1e9))
    assert figures["fg:iops"] == fg.iops and figures["bg:mb_s"] == pytest.approx(3000.0)
    assert [j["jobname"] for j in result.raw["jobs"]] == ["fg", "seq-writers-1"]  # both kept in the run's fio


def test_a_background_that_ended_first_makes_the_run_no_sample(monkeypatch):
    job = prepared(startup_job(BUNDLED, CATALOG["seq-writers-1"]))
    monkeypatch.setattr(startup, "run_fio", lambda *a: parse_result({"jobs": [replay_entry(1563, 95_000.0, 149)]}))
    monkeypatch.setattr(startup, "beside", lambda *a: (a[5](), flood_result(), True))
    _f, _r, why, _t = startup.run_startup(job, Target("loop9", "/dev/loop9", "device"), Control(), print)
    assert why == "the background job ended before the start-up did"


def test_the_time_alone_is_measured_once_per_capture_for_every_row():
    jobs = [startup_job(BUNDLED), startup_job(BUNDLED, CATALOG["seq-readers-5"]), CATALOG["4k-read"]]
    measured = []
    out, said = startup.with_alone(jobs, lambda j: measured.append(j.name) or 0.2)
    assert measured == ["python-imports alone"] and [getattr(j, "alone_s", None) for j in out] == [0.2, 0.2, None]
    assert out[1].cap_s == pytest.approx(10.0) and len(said) == 1
    assert "alone took 0.200 s" in said[0] and "10.00 s (50 x that, at least 2 s)" in said[0]


def run(variant: str, startup_s: float, over: bool, valid: bool = True) -> RunDoc:
    timing = StartupTiming(startup_s=startup_s, alone_s=0.15, cap_s=7.5, over_cap=over,
                           requests=900 if over else 1563, of=1563)
    return RunDoc(index=0, variant=variant, start=0.0, end=1.0, valid=valid, invalid_reason=None, config={},
                  metrics={"startup_s": startup_s}, startup=timing)


def test_the_runs_over_the_cap_are_counted_per_cell_and_said_to_be_a_lower_bound():
    runs = [run("none", 7.5, True), run("none", 7.5, True), run("none", 3.1, False), run("bfq", 0.2, False),
            run("none", 7.5, True, valid=False)]
    note = startup.over_cap_note([(r.variant, r) for r in runs])
    assert note is not None and note.startswith("over the cap (7.50 s): none 2 of 3; each counted at the cap")
    assert "understated, never invented" in note
    assert startup.over_cap_note([(r.variant, r) for r in runs if not r.startup.over_cap]) is None


def test_a_startup_matrix_reads_back_as_planned_and_a_tampered_one_is_refused():
    jobs = [startup_job(BUNDLED, None, 20), startup_job(BUNDLED, CATALOG["seq-writers-5"], 20)]
    plan = MatrixPlan(parse_variants("none,bfq"), jobs, repeat=2)
    doc = encode(plan_document(plan))
    assert doc["jobs"][1] == {"startup": "bundled", "cap_multiple": 20.0,
                              "background": {"catalog": "seq-writers-5", "runtime": 10.0, "size": 1 << 30}}
    assert doc["primary_metrics"] == {"python-imports alone": "startup_s",
                                      "python-imports beside seq-writers-5": "startup_s"}
    back = plan_from_doc(json.loads(json.dumps(doc)))
    assert [job_spec(j) for j in back.jobs] == [job_spec(j) for j in jobs]
    assert [j.name for j in back.jobs] == [j.name for j in jobs] and back.jobs[1].foreground is None  # read again
    for bad in ({"startup": "bundled", "background": {"catalog": "rm -rf", "runtime": 1.0, "size": 5},
                 "cap_multiple": 20}, {"startup": "bundled", "background": None, "cap_multiple": 1.0},
                {"startup": "", "background": None, "cap_multiple": 20}):
        doc["jobs"][1] = bad
        with pytest.raises(BadInput):
            plan_from_doc(doc)


def test_the_time_alone_is_the_median_of_its_replays_each_cold(monkeypatch):
    job = prepared(startup_job(BUNDLED, CATALOG["seq-writers-1"]))
    took = iter([0.30, 0.10, 0.20])
    dropped, limits = [], []

    def fake_run_fio(what, target, cap, progress, hold, root):
        limits.append(cap)
        return parse_result({"jobs": [replay_entry(1563, next(took) / 1563 * 1e9, 300)]})

    monkeypatch.setattr(startup, "run_fio", fake_run_fio)
    monkeypatch.setattr(startup, "drop_caches", lambda root: dropped.append(root))
    got = startup.measure_alone(job, Target("loop9", "/dev/loop9", "device"), Control(), "/x")
    assert got == pytest.approx(0.20) and dropped == ["/x"] * 3 and limits == [startup.ALONE_LIMIT_S] * 3


def test_a_startup_that_outlives_the_limit_alone_is_one_sentence(monkeypatch):
    job = prepared(startup_job(BUNDLED, CATALOG["seq-writers-1"]))
    monkeypatch.setattr(startup, "run_fio", lambda *a: parse_result({"jobs": [replay_entry(400, 1e8, 60_000)]}))
    monkeypatch.setattr(startup, "drop_caches", lambda root: None)
    with pytest.raises(IoschedError) as e:
        startup.measure_alone(job, Target("loop9", "/dev/loop9", "device"), Control(), "/x")
    assert str(e.value) == ("the start-up python-imports completed 400 of its 1563 requests on loop9 alone in 60 s: it "
                            "cannot be timed under load there")
