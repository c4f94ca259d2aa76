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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from iosched.core.statistics.advice_rule import (
    Design,
    Estimate,
    Goal,
    GoalEvidence,
    drop_at_look,
    estimates_of,
    wins_at_look,
)
from iosched.core.statistics.sequential import look_schedule, pocock_level
from iosched.core.statistics.stats import CannotJudge, RatioEstimate

Judged = Mapping[str, RatioEstimate | CannotJudge]
WIN_RUNS = 6  # runs a variant before a win may end a test at an interim look


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

    def look(self, n: int, judged: Judged) -> list[str]:
        """The look at ``n`` runs per variant, each active candidate judged against the current setting; returns
        the variants that leave here (none at the last look)."""
        if n != self.next_look():
            raise ValueError(f"look at {n} runs per variant out of schedule {self.looks}")
        estimates = estimates_of({v: judged[v] for v in self.active if v in judged}, self.level)
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
        return drops

    def stop(self, runs: int, judged: Judged) -> None:
        """The budget's stop in place of the looks not reached: the candidates still running judged on the runs
        there are (``runs`` per variant, the fewest any has) at the per-look level, and final."""
        if self.done:
            return
        self.final = {e.variant: e for e in estimates_of({v: judged[v] for v in self.active if v in judged},
                                                         self.level)}
        self.reached = max(self.reached, runs)
        self.stopped = True

    def estimates(self) -> tuple[Estimate, ...]:
        """Every candidate's estimate, in the test's order: the survivors' at the last look, the dropped ones' at
        the look they left."""
        left = {d.variant: d.estimate for d in self.dropped}
        return tuple(self.final.get(v) or left[v] for v in self.labels if v in self.final or v in left)

    def evidence(self) -> GoalEvidence:
        return GoalEvidence(self.goal, self.metric, self.baseline, self.estimates(), self.reached, self.design,
                            self.level, stopped=self.stopped)
