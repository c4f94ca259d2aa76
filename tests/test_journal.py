"""The journal read as outside input: every shape checked, and no change while it is unreadable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tui_support import SteppedSampler, populated_tree

from iosched.core.settings.journal import Journal, JournalEntry, JournalUnreadable, new_entry
from iosched.tui.app import IoschedApp

from conftest import run_cli

GOOD = {"device": "loop9", "attr": "queue/scheduler", "original": "none"}


@pytest.mark.parametrize(("text", "why"), [
    ("[]", 'not an object with a list of "entries"'),
    ("null", 'not an object with a list of "entries"'),
    ("{}", 'not an object with a list of "entries"'),
    ('{"entries": {}}', 'not an object with a list of "entries"'),
    ('{"entries": [1]}', "entry 1 is not an object"),
    ('{"entries": [{"device": "loop9", "attr": "queue/scheduler"}]}', "entry 1 has no original text"),
    (json.dumps({"entries": [GOOD, {**GOOD, "original": 5}]}), "entry 2 has no original text"),
    (json.dumps({"entries": [{**GOOD, "diskseq": "7"}]}), "entry 1 has a diskseq of the wrong type"),
    (json.dumps({"entries": [{**GOOD, "pid": True}]}), "entry 1 has a pid that is not"),
    (json.dumps({"entries": [{**GOOD, "changed_at": "now"}]}), "entry 1 has a changed_at"),
    ("{not json", "not JSON"),
    ("", "not JSON"),
])
def test_wrong_shapes_are_one_sentence_naming_the_file(tmp_path, text, why):
    journal = Journal(tmp_path)
    journal.path.write_text(text)
    with pytest.raises(JournalUnreadable) as e:
        journal.entries()
    msg = str(e.value)
    assert why in msg and str(journal.path) in msg and f"mv {journal.path} {journal.path}.bad" in msg
    with pytest.raises(JournalUnreadable), journal.locked():
        pass
    assert journal.path.read_text() == text


def test_a_good_journal_round_trips(tmp_path):
    journal = Journal(tmp_path)
    with journal.locked() as entries:
        e = new_entry("loop9", "queue/scheduler", "none", diskseq=4, backing_file="/x")
        entries[e.key] = e
    assert journal.entries() == {e.key: e}


def test_a_journal_from_an_older_iosched_without_pids_is_read(tmp_path):
    """Entries an older iosched wrote name no process: read as pid 0, "unknown process" (a quit leaves them)."""
    journal = Journal(tmp_path)
    journal.path.write_text(json.dumps({"version": 1, "entries": [GOOD]}))
    (entry,) = journal.entries().values()
    assert (entry.device, entry.attr, entry.original, entry.pid) == ("loop9", "queue/scheduler", "none", 0)


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                     max_leaves=20)
_entry = st.fixed_dictionaries({}, optional={k: _json for k in JournalEntry.__dataclass_fields__})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(_json, st.builds(lambda es: {"version": 1, "entries": es}, st.lists(_entry, max_size=4)),
                 st.builds(lambda es: {"entries": es}, st.lists(st.one_of(_json, _entry), max_size=4))))
def test_random_journals_read_or_refuse_and_never_change(tmp_path_factory, raw):
    journal = Journal(tmp_path_factory.mktemp("j"))
    text = json.dumps(raw)
    journal.path.write_text(text)
    try:
        entries = journal.entries()
    except JournalUnreadable:
        with pytest.raises(JournalUnreadable), journal.locked() as _:
            pass
    else:
        for e in entries.values():
            assert all(isinstance(x, str) for x in (e.device, e.attr, e.original))
            assert isinstance(e.pid, int) and isinstance(e.changed_at, float)
    assert journal.path.read_text() == text


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
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
        assert f"the journal {path} is unreadable" in out.stderr and f"mv {path}" in out.stderr
    assert loopdev.scheduler_text() == before and (loopdev.sysdir / "queue/nr_requests").read_text() == nr
    assert path.read_text() == text


def write_bad_journal(run_dir: Path) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "journal.json").write_text('{"entries": [1]}')


def read_journal_text(run_dir: Path) -> str:
    return (run_dir / "journal.json").read_text()


async def test_the_tui_warns_at_start_about_an_unreadable_journal(tmp_path, private_journal):
    write_bad_journal(private_journal)
    tree = populated_tree(tmp_path / "root")
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        warnings = [n.message for n in app._notifications if n.severity == "warning"]
        assert any("journal" in m and "is unreadable (entry 1 is not an object)" in m for m in warnings)
        assert not any("Traceback" in n.message or "KeyError" in n.message for n in app._notifications)
    assert read_journal_text(private_journal) == '{"entries": [1]}'


async def test_a_tui_switch_is_refused_while_the_journal_is_unreadable(loopdev, private_journal):
    write_bad_journal(private_journal)
    other = "bfq" if loopdev.current() != "bfq" else "mq-deadline"
    app = IoschedApp(interval=0.25, watch_udev=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.live.settings.start_switch(loopdev.name, other)
        for _ in range(100):
            await pilot.pause(0.05)
            if any(n.severity == "error" for n in app._notifications):
                break
        (err,) = [n for n in app._notifications if n.severity == "error"]
        assert "is unreadable" in err.message and "mv " in err.message and "Traceback" not in err.message
    assert loopdev.current() == loopdev.initial_scheduler
