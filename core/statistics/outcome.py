"""A comparison's outcome, where compare, a matrix cell or a fleet's verdict is summarised: ``differs`` (significant:
better or worse), ``equal`` (its equivalence interval, two-sided at 1 - 2 alpha (90% at alpha 0.05), inside
±margin: both one-sided tests of TOST pass) or ``cannot-tell`` with reason codes (the words are core/present's):
``too-wide`` (the interval reaches past the margin), ``two-groups`` (the variant's or the baseline's runs on the
metric fall in two groups: run_groups.py), ``too-few-runs`` and ``unjudged`` (it could not be judged, for want of
runs or for another reason) and ``replay-behind`` (a replay's runs fell behind its capture). Two groups and a replay
fallen behind stop ``equal``, never ``differs``: the significance stands, the split is said beside it.

The margin is symmetric on the log scale: equal means inside 1 / (1 + margin) .. 1 + margin. The outcome depends on
the margin only through ``equal`` and ``too-wide``, so a judgement's comparisons keep the codes that stand whatever
the margin and ``with_margin`` decides again at another one (`compare --margin`, `report --margin`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from iosched.core.documents.document import CompareReason, ComparisonDoc, JudgementDoc
from iosched.core.statistics.stats import CannotJudge, RatioEstimate, t_ppf

Outcome = Literal["differs", "equal", "cannot-tell"]
MARGIN = 0.10  # the default: compare's, matrix's and fleet's --margin
FEW_RUNS = ("few-runs", "few-blocks")


def equal_interval(e: RatioEstimate, alpha: float) -> tuple[float, float]:
    """The estimate's interval at 1 - 2 alpha, before any correction (each end a one-sided test at alpha)."""
    return interval_at(e.ratio, e.ci_low, e.ci_high, e.level, e.df, alpha)


def interval_at(ratio: float, low: float, high: float, level: float, df: float, alpha: float) -> tuple[float, float]:
    """A t-based interval (``low``..``high`` at ``level`` on ``df``) made again at 1 - 2 alpha."""
    se = (math.log(high) - math.log(low)) / 2.0 / t_ppf(0.5 + level / 2.0, df)
    # An alpha a hair under 0.5 (the flag's open end) leaves 1 - alpha at 0.5 in floating point: a zero-width level.
    half = t_ppf(1.0 - alpha, df) * se if 1.0 - alpha > 0.5 else 0.0
    d = math.log(ratio)
    return math.exp(d - half), math.exp(min(d + half, 709.0))


def standing(e: RatioEstimate | CannotJudge, split: bool, behind: bool) -> list[CompareReason]:
    """The reason codes that hold whatever the margin."""
    out: list[CompareReason] = []
    if isinstance(e, CannotJudge):
        out.append("too-few-runs" if e.reason.split(":")[0] in FEW_RUNS else "unjudged")
    if split:
        out.append("two-groups")
    if behind:
        out.append("replay-behind")
    return out


def decide(significant: bool, judged: bool, interval: tuple[float, float] | None, margin: float,
           standing_reasons: Sequence[CompareReason]) -> tuple[Outcome, list[CompareReason]]:
    """The outcome and its reasons (cannot-tell's), from the significance, the equivalence interval and the codes
    that hold whatever the margin."""
    if judged and significant:
        return "differs", []
    inside = interval is not None and 1.0 / (1.0 + margin) < interval[0] and interval[1] < 1.0 + margin
    if judged and inside and not standing_reasons:
        return "equal", []
    wide: list[CompareReason] = [] if inside or not judged else ["too-wide"]
    return "cannot-tell", [*wide, *standing_reasons]


def with_margin(j: JudgementDoc, margin: float) -> JudgementDoc:
    """The judgement's primary comparisons decided again at ``margin`` (from what each keeps)."""
    comps = []
    for c in j.comparisons:
        if c.outcome is not None:
            kept = [r for r in c.reasons if r != "too-wide"]
            outcome, reasons = decide(c.significant, c.ratio is not None, c.equal_interval, margin, kept)
            c = replace(c, outcome=outcome, reasons=reasons)
        comps.append(c)
    return replace(j, comparisons=comps, margin=margin)


def comparison_outcome(c: ComparisonDoc, e: RatioEstimate | CannotJudge, alpha: float, margin: float, split: bool,
                       behind: bool) -> ComparisonDoc:
    """A primary comparison with its outcome, reasons and equivalence interval."""
    interval = equal_interval(e, alpha) if isinstance(e, RatioEstimate) else None
    outcome, reasons = decide(c.significant, isinstance(e, RatioEstimate), interval, margin,
                              standing(e, split, behind))
    return replace(c, outcome=outcome, reasons=reasons, equal_interval=interval)
