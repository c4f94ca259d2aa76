"""Which files `persist` may rewrite, and what it keeps of them: mode, blank lines, lines not ours."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.core.base.errors import BadInput
from iosched.core.settings.persist import DEFAULT_RULES, Rule, merged, parse_rules, read_rules_file, render_rules

from conftest import run_cli


def test_a_new_rules_file_anywhere_is_fine_but_not_in_a_missing_directory(tmp_path):
    assert read_rules_file(tmp_path / "new.rules") == ""
    with pytest.raises(BadInput, match="does not exist"):
        read_rules_file(tmp_path / "nope" / "new.rules")


_lines = st.lists(st.one_of(st.text(alphabet=st.characters(blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85"
                                                           "\u2028\u2029"), max_size=30),
                            st.just(""), st.just("# iosched: by=kernel-name match=sda")), max_size=10)


@settings(max_examples=300, deadline=None)
@given(_lines)
def test_merging_keeps_every_foreign_line_and_is_idempotent(lines):
    text = "\n".join(lines) + "\n"
    rule = Rule("kernel-name", "loop9", "bfq")
    once = merged(text, rule)
    assert merged(once, rule) == once
    _, before = parse_rules(text)
    rules, after = parse_rules(once)
    assert rule in rules
    assert [ln for ln in before if ln.strip()] == [ln for ln in after if ln.strip()]


def test_the_rules_file_is_read_after_the_one_that_sets_the_ids_it_matches():
    # udev reads rules files in name order within one event; ID_SERIAL, ID_WWN and ID_MODEL come from
    # 60-persistent-storage.rules, so a rule matching them must live in a file named after it.
    assert sorted([Path(DEFAULT_RULES).name, "60-persistent-storage.rules"])[-1] == Path(DEFAULT_RULES).name


def test_an_earlier_versions_rules_file_is_pointed_out(tmp_path):
    d = tmp_path / "rules.d"
    d.mkdir()
    earlier = d / "60-iosched.rules"
    earlier.write_text(render_rules([Rule("serial", "DISK-1", "bfq")], []))
    before = earlier.read_text()
    r = run_cli("persist", "--rules-dir", str(d), "--list")
    assert r.returncode == 0
    assert "60-iosched.rules holds 1 rule(s) from an earlier iosched" in r.stderr
    assert earlier.read_text() == before  # pointed out, never rewritten behind the user's back
    earlier.write_text("# someone's own comment\n")
    assert "earlier iosched" not in run_cli("persist", "--rules-dir", str(d), "--list").stderr
