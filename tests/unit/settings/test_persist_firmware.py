"""A rule by model that names the firmware too (udev's ID_REVISION): its text, its tag read back, one rule per model
and firmware, `persist --list` and `--remove` knowing it; the rule an advice on many hosts writes for a model, from
the model and firmware the hosts said (outside input: a value that cannot stand in a rule makes none, or leaves the
firmware out, said)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from iosched.core.advice.keep import model_keep
from iosched.core.documents.params import Variant
from iosched.core.settings.persist import Rule, merged, parse_rules, render_rules, without

from conftest import run_cli
from fixtree import FixTree

MODEL = "Samsung_SSD_970_EVO_1TB"


def test_a_rule_by_model_and_firmware_matches_both_and_reads_back():
    r = Rule("model", MODEL, "kyber", revision="2B2QEXE7")
    assert f'ENV{{ID_MODEL}}=="{MODEL}", ENV{{ID_REVISION}}=="2B2QEXE7", TEST=="queue/scheduler"' in r.line()
    assert r.tag() == f"# iosched: by=model match={MODEL} revision=2B2QEXE7"
    (back,), _ = parse_rules(merged("", r))
    assert back == r
    # Without a firmware, the rule is today's: the model alone, its tag as before.
    plain = Rule("model", MODEL, "kyber")
    assert "ID_REVISION" not in plain.line() and plain.tag() == f"# iosched: by=model match={MODEL}"


def test_one_rule_per_model_and_firmware():
    text = merged(merged(merged("", Rule("model", MODEL, "kyber", revision="A1")),
                         Rule("model", MODEL, "bfq", revision="B2")), Rule("model", MODEL, "none"))
    assert [(r.revision, r.scheduler) for r in parse_rules(text)[0]] == [("A1", "kyber"), ("B2", "bfq"), ("", "none")]
    text = merged(text, Rule("model", MODEL, "mq-deadline", revision="A1"))  # replaces A1's only
    assert [(r.revision, r.scheduler) for r in parse_rules(text)[0]] == [("B2", "bfq"), ("", "none"),
                                                                         ("A1", "mq-deadline")]
    left, found = without(text, "model", MODEL, "B2")
    assert found and [r.revision for r in parse_rules(left)[0]] == ["", "A1"]
    assert not without(left, "model", MODEL, "C3")[1]


def test_a_revision_word_on_another_kind_of_rule_stays_its_match():
    text = render_rules([], []) + "# iosched: by=kernel-name match=sda revision=x\n" + \
        'ACTION=="add|change", KERNEL=="sda", ATTR{queue/scheduler}="bfq"\n'
    (r,), _ = parse_rules(text)
    assert (r.by, r.match, r.revision) == ("kernel-name", "sda revision=x", "")


def test_the_fleets_rule_names_the_firmware_the_hosts_recorded():
    k = model_keep(MODEL, "2B2QEXE7", Variant("kyber", "kyber"), [("db1", "nvme0n1")])
    assert k.rule is not None and 'ENV{ID_REVISION}=="2B2QEXE7"' in k.rule
    assert k.scope is not None and "on firmware 2B2QEXE7" in k.scope and not k.warnings
    none = model_keep(MODEL, None, Variant("kyber", "kyber"), [("db1", "nvme0n1")])
    assert none.rule is not None and "ID_REVISION" not in none.rule
    assert none.scope is not None and "on any firmware (the hosts recorded none)" in none.scope
    odd = model_keep(MODEL, "1.0 beta", Variant("kyber", "kyber"), [("db1", "nvme0n1")])
    assert odd.rule is not None and "ID_REVISION" not in odd.rule
    assert odd.warnings and "firmware the hosts recorded cannot be matched safely" in odd.warnings[0]


@given(st.text(max_size=60), st.one_of(st.none(), st.text(max_size=50)))
def test_outside_names_make_a_safe_rule_or_none_said(model, firmware):
    k = model_keep(model, firmware, Variant("bfq", "bfq"), [("h", "sda")])
    if k.rule is None:
        assert k.warnings and k.warnings[0].startswith("no rule for the model")
        return
    revision = "ID_REVISION" in k.rule
    # Nothing from outside adds a quote, a key or a line: the rule is exactly its matchers and its one assignment.
    assert "\n" not in k.rule and k.rule.count('"') == (14 if revision else 12)
    assert k.rule.endswith('ATTR{queue/scheduler}="bfq"')
    # Read back from a rules file as `persist --list` and `--remove` read it: the same model and firmware.
    made = Rule("model", model, "bfq", revision=firmware if revision and firmware else "")
    assert made.line() == k.rule
    (back,), foreign = parse_rules(merged("", made))
    assert (back.by, back.match, back.revision) == ("model", model, made.revision) and foreign == []
    if firmware is not None and not revision:  # a firmware recorded but left out of the rule: said
        assert any("on any firmware" in w for w in k.warnings)


def test_persist_list_and_remove_know_the_firmware(tmp_path):
    tree = FixTree(tmp_path / "root")
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline] kyber bfq")
    tree.write("run/udev/data/b8:0", f"E:ID_MODEL={MODEL}\nE:ID_REVISION=A1\n")
    rules_dir = tmp_path / "rules.d"
    rules_dir.mkdir()
    f = rules_dir / "61-iosched.rules"
    f.write_text(render_rules([Rule("model", MODEL, "kyber", revision="A1"), Rule("model", MODEL, "bfq", revision="B2"),
                               Rule("model", MODEL, "none")], []))
    root, into = ["--root", str(tree.root)], ["--rules-dir", str(rules_dir)]
    r = run_cli(*root, "persist", "--list", *into)
    assert r.stdout.splitlines() == [f"model={MODEL} revision=A1: kyber", f"model={MODEL} revision=B2: bfq",
                                     f"model={MODEL}: none"]
    r = run_cli(*root, "persist", "--remove", "sda", *into)  # auto: a rule by model is named, not removed
    assert r.returncode == 0 and f"a rule by model ({MODEL}) also covers sda" in r.stderr
    assert len(parse_rules(f.read_text())[0]) == 3
    r = run_cli(*root, "persist", "--remove", "sda", "--by", "model", *into)
    assert r.returncode == 0, r.stderr
    # This disk's firmware's rule and the any-firmware one go; another firmware's stays: it never reached sda.
    assert [(x.revision, x.scheduler) for x in parse_rules(f.read_text())[0]] == [("B2", "bfq")]
