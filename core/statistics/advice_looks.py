"""One goal's test looked at on its sequential schedule: which variants go on, which leave early, and the estimates
the rule decides on (core/statistics/advice_rule.py). Pure, and the one loop every caller goes through: the
simulated tests (advice_simulation.py, bench/advise_rule.py), `iosched advise` while it runs, and `report` when it
decides again from the saved runs (core/advice/decision.py), so the three cannot drift apart.

At each look the candidates still running are judged against the current setting (a judge's estimates, turned into
the rule's by ``estimates_of`` at the boundary's per-look level, Holm over those still running); before the last
look, the clearly worse leave (``drop_at_look``); at the last look the survivors' estimates are final, and a dropped
variant keeps the estimate it left with. Given the rule's margin, the test also ends at an interim look of at least
``WIN_RUNS`` runs a variant where a candidate already wins as the rule's switch asks (``wins_at_look``: its interval
at the per-look level clears no change the better way and its estimate reaches the margin): the survivors'
estimates are final there. That costs no error: the boundary holds any crossing at any look, either way, to alpha,
and a switch needs one; what it saves is the runs of a large effect on a noisy machine. Not before 6 runs: a
candidate whose runs fall in two groups (bfq's weight raise, caught in some runs) has all of its first 4 in its
better group 1 time in 16, and nothing in 4 runs tells that from a real win; in its first 6, 1 time in 64.

Behind the leader: at an interim look where the best candidate's estimate is at least the margin better than the
current setting (a switch is in sight), every other candidate shown worse than that leader on their own runs (Welch
on the logs, p below the per-look level over the number compared, Bonferroni) leaves too (``behind_leader``): the
switch is the best of the winners, and a candidate shown worse than another cannot be it, so its later runs could
only serve a keep, which a leader a margin ahead makes unlikely. It never becomes the switch (``GoalEvidence.behind``),
even where its own estimate would pass, and it stays in Holm's count at every later look as a comparison that found
nothing (p = 1, ``estimates_of``'s ``family``). That keeps the error rate: with no difference anywhere, a switch needs
a crossing of the boundary by a candidate still running, at Holm's first step over the whole family (its smallest
p-value times the number of candidates below the per-look level); the runs of the current setting and of a candidate
still running are the same whether or not others left, so that event lies inside the event that some candidate of
the whole family crosses at some look with no one leaving, whose probability the boundary holds to alpha
(core/statistics/sequential.py). The comparison with the leader spends none of it: it can take a candidate out, never
put one in. What it may cost is power: a leader a margin ahead by chance (the estimate of the best of several is
biased upwards) may leave a candidate as good behind, and the switch then waits for the leader to win on its own
runs. A keep is judged as before, a candidate left behind on its estimate at the look it left (fewer runs: a wider
interval, so more often "cannot tell", never a keep it did not show).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from iosched.core.statistics.advice_rule import (
    Design,
    Estimate,
    Goal,
    GoalEvidence,
    drop_at_look,
    estimates_of,
    higher_is_better,
    wins_at_look,
)
from iosched.core.statistics.sequential import look_schedule, pocock_level
from iosched.core.statistics.stats import CannotJudge, RatioEstimate, log_ratio_welch

Judged = Mapping[str, RatioEstimate | CannotJudge]
Values = Mapping[str, Sequence[float]]  # each variant's valid runs on the goal's metric, in run order
WIN_RUNS = 6  # runs a variant before a win may end a test at an interim look


def leader(estimates: Sequence[Estimate], metric: str, margin: float) -> str | None:
    """The candidate with the best estimate, when that estimate is at least ``margin`` better than the current
    setting (a switch is in sight); None otherwise."""
    higher = higher_is_better(metric)
    best: tuple[float, str] | None = None
    for e in estimates:
        if e.judged and e.ratio is not None:
            point = math.log(e.ratio) if higher else -math.log(e.ratio)
            if best is None or point > best[0]:
                best = (point, e.variant)
    return best[1] if best is not None and best[0] >= math.log1p(margin) else None


def behind_leader(values: Values, lead: str, others: Sequence[str], metric: str, level: float) -> list[str]:
    """The candidates among ``others`` shown worse than ``lead`` on their runs' ``values``: Welch on the logs, two-sided
    p below ``level`` over the number compared (Bonferroni), and worse the metric's way."""
    higher = higher_is_better(metric)
    rivals = [v for v in others if v != lead]
    out = []
    for v in rivals:
        e = log_ratio_welch(values.get(lead, ()), values.get(v, ()), 0.95)
        if isinstance(e, RatioEstimate) and e.p_value < level / len(rivals) and (e.ratio < 1.0) == higher:
            out.append(v)
    return out


def schedule(runs: int, sequential: bool = True) -> tuple[int, ...]:
    """Runs per variant at each look: 4, 6, 8 … up to ``runs`` (one look at ``runs`` when not sequential)."""
    return look_schedule(runs) if sequential else (runs,)


def look_level(looks: Sequence[int], alpha: float, arms: int) -> float:
    """The per-look level: the group-sequential boundary over ``looks`` for ``arms`` (the current setting and the
    candidates), so that with no difference anywhere any crossing at any look happens with probability alpha; alpha
    itself with a single look."""
    return pocock_level(tuple(looks), alpha, arms) if len(looks) > 1 else alpha


@dataclass(frozen=True)
class Dropped:
    variant: str
    at: int  # runs per variant at the look it left
    estimate: Estimate


class Looks:
    """A goal's test as it is looked at: ``look(n, judged)`` at each planned look, in order; ``active`` the variants
    still running; ``evidence()`` what the rule gets once the last look is reached (or every candidate left, or,
    given the rule's ``margin``, a candidate won at an interim look)."""

    def __init__(self, goal: Goal, metric: str, baseline: str, labels: Sequence[str], looks: Sequence[int],
                 level: float, design: Design = "two-sample", margin: float | None = None) -> None:
        if not looks:
            raise ValueError("a test needs at least one look")
        self.goal, self.metric, self.baseline = goal, metric, baseline
        self.labels, self.looks, self.level, self.design = tuple(labels), tuple(looks), level, design
        self.margin = margin  # None: every test runs to its last look unless every candidate left
        self.active: list[str] = list(labels)
        self.dropped: list[Dropped] = []
        self.behind: list[str] = []  # of the dropped, those shown worse than the leader: still in Holm's count
        self.final: dict[str, Estimate] = {}
        self.reached = 0  # runs per variant at the last look taken
        self.stopped = False  # the budget stopped the test before its last look (``stop``)
        self.won = False  # a candidate won at an interim look: the test ended there

    @property
    def done(self) -> bool:
        return self.reached == self.looks[-1] or not self.active or self.stopped or self.won

    def next_look(self) -> int | None:
        """Runs per variant at the next look (None: done)."""
        return None if self.done else next(n for n in self.looks if n > self.reached)

    def _estimates(self, judged: Judged) -> tuple[Estimate, ...]:
        """The active candidates' estimates at the per-look level, Holm counting those left behind the leader."""
        return estimates_of({v: judged[v] for v in self.active if v in judged}, self.level,
                            len(self.active) + len(self.behind))

    def look(self, n: int, judged: Judged, values: Values | None = None) -> list[str]:
        """The look at ``n`` runs per variant, each active candidate judged against the current setting (and, given
        each variant's runs' ``values`` and the rule's margin, against the leader); returns the variants that leave
        here (none at the last look)."""
        if n != self.next_look():
            raise ValueError(f"look at {n} runs per variant out of schedule {self.looks}")
        estimates = self._estimates(judged)
        self.reached = n
        if n == self.looks[-1] or (self.margin is not None and n >= WIN_RUNS
                                   and wins_at_look(estimates, self.metric, self.margin)):
            self.final = {e.variant: e for e in estimates}
            self.won = n != self.looks[-1]
            return []
        drops = drop_at_look(estimates, self.metric, self.level)
        by = {e.variant: e for e in estimates}
        for v in drops:
            self.dropped.append(Dropped(v, n, by[v]))
            self.active.remove(v)
        if values is None or self.margin is None or self.design != "two-sample":
            return drops
        lead = leader([by[v] for v in self.active if v in by], self.metric, self.margin)
        if lead is None:
            return drops
        behind = behind_leader(values, lead, [v for v in self.active if v in by], self.metric, self.level)
        for v in behind:
            self.dropped.append(Dropped(v, n, by[v]))
            self.behind.append(v)
            self.active.remove(v)
        return [*drops, *behind]

    def stop(self, runs: int, judged: Judged) -> None:
        """The budget's stop in place of the looks not reached: the candidates still running judged on the runs
        there are (``runs`` per variant, the fewest any has) at the per-look level, and final."""
        if self.done:
            return
        self.final = {e.variant: e for e in self._estimates(judged)}
        self.reached = max(self.reached, runs)
        self.stopped = True

    def estimates(self) -> tuple[Estimate, ...]:
        """Every candidate's estimate, in the test's order: the survivors' at the last look, the dropped ones' at
        the look they left."""
        left = {d.variant: d.estimate for d in self.dropped}
        return tuple(self.final.get(v) or left[v] for v in self.labels if v in self.final or v in left)

    def evidence(self) -> GoalEvidence:
        return GoalEvidence(self.goal, self.metric, self.baseline, self.estimates(), self.reached, self.design,
                            self.level, stopped=self.stopped, behind=tuple(self.behind))
