"""The boundary's levels made once (core/statistics/sequential.py ``KNOWN``) are the simulation's own: recomputed for
the smallest schedule, `advise`'s usual one (looks at 4, 6, 8; seven arms), compare's two-arm one, and two more drawn
at random from the table; and every schedule and arm count they cover is in it."""

from __future__ import annotations

import random

import pytest

from iosched.core.statistics.sequential import KNOWN, look_schedule, pocock_level, simulated_level


def test_the_table_covers_the_schedules_up_to_twenty_runs_and_eight_arms():
    expected = {(look_schedule(n), arms) for n in range(5, 21) for arms in range(2, 9)}
    assert set(KNOWN) == expected
    for (looks, _arms), level in KNOWN.items():
        assert 0.05 / (2 * len(looks)) < level < 0.05  # between Bonferroni over the looks and alpha


@pytest.mark.parametrize("key", [((4, 5), 2), ((4, 6, 8), 7), ((4, 6, 8, 10, 12), 2),
                                 *random.Random(46).sample(sorted(KNOWN), 2)])
def test_a_known_level_is_the_simulation_s(key):
    looks, arms = key
    assert simulated_level(looks, 0.05, arms) == KNOWN[key]
    assert pocock_level(looks, 0.05, arms) == KNOWN[key]
    assert pocock_level(looks, 0.05, arms, "paired") != KNOWN[key]  # another design is simulated, not read
