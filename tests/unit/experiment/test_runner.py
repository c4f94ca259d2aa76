"""Experiment planning as pure functions: variants and their interleaved order."""


import pytest

from iosched.core.base.errors import BadInput
from iosched.core.documents.params import parse_variants
from iosched.core.experiment.variants import alternation_order, plan_order


def test_variants_with_settings_and_a_a_labels():
    vs = parse_variants("none, mq-deadline:read_expire=100:fifo_batch=8,none")
    assert [v.label for v in vs] == ["none", "mq-deadline:read_expire=100:fifo_batch=8", "none#2"]
    assert vs[1].scheduler == "mq-deadline" and vs[1].settings == (("read_expire", "100"), ("fifo_batch", "8"))
    for bad in ("none", "none,,bfq", "none,bfq:read_expire"):
        with pytest.raises(BadInput):
            parse_variants(bad)


def test_interleaved_order():
    assert plan_order(2, 3) == [0, 1, 1, 0, 0, 1]
    assert plan_order(3, 2) == [0, 1, 2, 2, 1, 0]
    # Live alternation: A B B A, then B A A B, so neighbouring blocks see slow drift with opposite signs.
    assert alternation_order(2, 4) == [0, 1, 1, 0, 1, 0, 0, 1]
    assert alternation_order(3, 2) == [0, 1, 2, 2, 1, 0]
