"""Tunables and queue knobs on fixture trees: meanings and validation."""


import pytest

from iosched.core.base.errors import BadInput
from iosched.core.settings.tunables import list_settings, parse_assignments, validate

DEADLINE = {"read_expire": "500", "write_expire": "5000", "fifo_batch": "16", "writes_starved": "2",
            "front_merges": "1"}


def deadline_disk(tree):
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline] kyber bfq",
                  extra={**{f"queue/iosched/{k}": v for k, v in DEADLINE.items()},
                         "queue/max_hw_sectors_kb": "512", "queue/rq_affinity": "1"})


def test_settings_listed_with_meanings(tree):
    deadline_disk(tree)
    settings = {s.name: s for s in list_settings("sda", tree.root)}
    assert settings["read_expire"].value == "500" and settings["read_expire"].unit == "ms"
    assert settings["read_expire"].scope == "mq-deadline" and "deadline" in settings["read_expire"].meaning
    assert settings["nr_requests"].scope == "queue" and settings["rq_affinity"].meaning.startswith("complete IO")


@pytest.mark.parametrize(("pair", "message"), [
    ("read_expire=abc", "takes an integer"),
    ("front_merges=2", "between 0 and 1"),
    ("rq_affinity=3", "between 0 and 2"),
    ("slice_idle=0", "has no setting 'slice_idle'"),
    ("max_sectors_kb=1024", "must not exceed max_hw_sectors_kb (512)"),
])
def test_validation_names_the_problem(tree, pair, message):
    deadline_disk(tree)
    with pytest.raises(BadInput, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate("sda", parse_assignments([pair]), tree.root)


def test_validation_for_another_scheduler(tree):
    deadline_disk(tree)
    validate("sda", [("low_latency", "0")], tree.root, scheduler="bfq")
    with pytest.raises(BadInput, match="bfq has no setting 'read_expire'"):
        validate("sda", [("read_expire", "1")], tree.root, scheduler="bfq")
    with pytest.raises(BadInput, match="not KEY=VALUE"):
        parse_assignments(["read_expire"])
