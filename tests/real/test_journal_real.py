"""The journal on a real loop device: set, tune, restore and compare change nothing while it is unreadable."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


GOOD = {"device": "loop9", "attr": "queue/scheduler", "original": "none"}


@pytest.mark.parametrize("text", ["[]", '{"entries": [1]}', json.dumps({"entries": [{**GOOD, "original": 5}]})])
def test_set_tune_and_restore_refuse_while_the_journal_is_unreadable(loopdev, private_journal, text):
    private_journal.mkdir(parents=True, exist_ok=True)
    path = private_journal / "journal.json"
    path.write_text(text)
    other = "bfq" if loopdev.current() != "bfq" else "mq-deadline"
    before = loopdev.scheduler_text()
    nr = (loopdev.sysdir / "queue/nr_requests").read_text()
    compare = ("compare", loopdev.name, "--schedulers", f"{loopdev.current()},{other}", "--job", "4k-randread",
               "--runtime", "1", "--size", "16M", "--repeat", "1")
    for args in (("set", loopdev.name, other), ("tune", loopdev.name, "nr_requests=32"), ("restore",), compare):
        out = run_cli(*args)
        assert out.returncode == 1, out
        said = [line for line in out.stderr.splitlines() if not line.startswith("iosched: busy machine")]
        assert "Traceback" not in out.stderr and len(said) == 1, out.stderr  # a loaded machine is said beside it
        assert f"the journal {path} is unreadable" in out.stderr and f"mv {path}" in out.stderr
    assert loopdev.scheduler_text() == before and (loopdev.sysdir / "queue/nr_requests").read_text() == nr
    assert path.read_text() == text
