"""`compare --plan` (core/statistics/planning.py): the pilot's pooled noise on the log scale, the runs each
difference needs at it, and the words (the real pilot: tests/real/test_plan_real.py)."""

import math

from doc_support import experiment_doc

from iosched.core.base.encode import encode
from iosched.core.documents.document import ExperimentDoc
from iosched.core.present.sentences import pilot_lines as plan_lines
from iosched.core.statistics.planning import pilot_noise, plan, seconds_per_run
from iosched.core.statistics.stats import runs_needed


def _doc(values: dict[str, list[float]], invalid: float | None = None) -> ExperimentDoc:
    runs = []
    t = 0.0
    for v, xs in values.items():
        for x in xs:
            runs.append({"variant": v, "valid": True, "metrics": {"iops": x}, "start": t, "end": t + 4.0})
            t += 5.0
    if invalid is not None:
        runs.append({"variant": "none", "valid": False, "metrics": {"iops": invalid}, "start": t, "end": t + 4})
    return experiment_doc({"variants": [{"label": v} for v in values], "runs": runs})


def test_the_noise_is_pooled_within_variants_on_the_log_scale():
    doc = _doc({"none": [100.0, 110.0], "bfq": [60.0, 63.0]}, invalid=1e9)  # the invalid run is left out
    sd, df = pilot_noise(doc, "iops")
    a = math.log(110) - math.log(100)
    b = math.log(63) - math.log(60)
    assert df == 2 and math.isclose(sd, math.sqrt((a * a / 2 + b * b / 2) / 2))
    assert pilot_noise(_doc({"none": [100.0], "bfq": [60.0]}), "iops") == (None, 0)
    assert pilot_noise(_doc({"none": [0.0, 0.0]}), "iops") == (None, 0)  # no positive values: no log


def test_the_plan_gives_runs_and_minutes_per_difference():
    doc = _doc({"none": [100.0, 110.0], "bfq": [60.0, 63.0], "kyber": [90.0, 99.0]})
    typed = plan(doc, "iops", 0.05)
    p = encode(typed)
    sd = p["noise_sd_log"]
    assert [r["difference"] for r in p["rows"]] == [0.1, 0.2, 0.3]
    ten = p["rows"][0]
    assert ten["runs_per_variant"] == runs_needed(sd, 1.1, 0.025)  # Holm's first step over two comparisons
    assert ten["runs"] == 3 * ten["runs_per_variant"]
    assert seconds_per_run(doc) == (5.0 * 5 + 4.0) / 6
    assert math.isclose(ten["minutes"], ten["runs"] * seconds_per_run(doc) / 60)
    runs = [r["runs_per_variant"] for r in p["rows"]]
    assert runs == sorted(runs, reverse=True)  # a larger difference needs fewer runs
    text = "\n".join(plan_lines(typed))
    assert "to detect a 10% difference:" in text and "over 2 comparisons (Holm)" in text and "a first guess" in text


def test_a_plan_without_noise_says_so():
    p = plan(_doc({"none": [100.0], "bfq": [60.0]}), "iops")
    assert plan_lines(p) == ["the pilot has no two valid runs of a variant with a positive IOPS: no noise to plan "
                             "from"]
