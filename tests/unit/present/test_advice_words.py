"""Advice's words (core/present/advice_words.py), from the numbers the rule returns: the rule itself stated before
the first run, and the smallest effect said as the metric moves (the rule's decisions with their words:
tests/unit/statistics/test_advice_rule.py)."""

from __future__ import annotations

import math

from iosched.core.present.advice_words import mde_words, the_rule
from iosched.core.statistics.advice_rule import Rule


def test_the_rule_is_stated_in_words():
    text = "\n".join(the_rule(Rule(alpha=0.05, margin=0.1)))
    assert "fixed before the first run" in text and "keep, shown equal" in text and "within 10%" in text
    assert "90% interval" in text and "no correction needed" in text and "cannot tell" in text


def test_the_smallest_effect_is_said_as_the_metric_moves():
    """Every effect is signed as the figure moves: a rate's smallest effect rises, a latency's falls (the document
    once held 9.87, "the better way", for a latency ten times lower)."""
    assert mde_words("iops", 0.04) == "+4.0%"
    assert mde_words("fg:clat_p50_us", -0.91) == "−91%" and mde_words("clat_p99_us", -0.2) == "−20%"
    assert mde_words("iops", None) == mde_words("iops", math.inf) == mde_words("iops", -1.0) == "unknown"
