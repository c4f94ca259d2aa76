"""The journal read as outside input: every shape checked, and no change while it is unreadable; a journal
that is root's alone is said to be so."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from link_support import digest, make_victim, plant, plant_while_writing, temporaries

from iosched.core.base.errors import BadInput
from iosched.core.settings import journal
from iosched.core.settings.journal import Journal, JournalEntry, JournalUnreadable, new_entry

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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
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


def test_the_tui_hears_that_the_journal_is_roots(monkeypatch, tmp_path):
    def entries(self: journal.Journal) -> dict:
        raise journal.JournalNeedsRoot(self.path)

    monkeypatch.setattr(journal.Journal, "entries", entries)
    problem = journal.journal_problem(tmp_path)
    assert problem is not None and "root" in problem and "moved aside" not in problem


def test_the_journal_never_goes_through_a_link_another_user_planted(others_dir, tmp_path, monkeypatch):
    victim = make_victim(tmp_path)
    before = digest(victim)
    journal = Journal(others_dir)
    plant(others_dir / "journal.tmp", victim)  # the name the journal went through before
    with journal.locked() as entries:
        e = new_entry("loop9", "queue/scheduler", "none")
        entries[e.key] = e
    assert journal.entries() == {e.key: e}
    plant_while_writing(monkeypatch, journal.path, victim)
    journal.path.unlink()
    with pytest.raises(BadInput, match=r"journal\.json is a symlink, not a regular file"), journal.locked() as entries:
        entries[e.key] = e
    assert digest(victim) == before and temporaries(others_dir) == []
