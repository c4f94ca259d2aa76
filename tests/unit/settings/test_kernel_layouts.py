"""Every kernel layout iosched meets (tests/fixtree.py's LAYOUTS: 6.1, 6.12, 6.18 and the one where async_depth moved
to queue/), each with an out-of-tree scheduler (adios) beside the four: list, set, tune, persist and restore read and
write each setting where that kernel keeps it, and treat the scheduler outside the four like the others.

A fixture file is not sysfs: `kernel_writes` makes the tree show, after each write through the one door, what that
kernel would (a switch's folder, nr_requests and queue/ tunables reset)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosched.core.base.errors import BadInput, UnknownScheduler
from iosched.core.documents.params import parse_variants
from iosched.core.experiment.variants import Configurator, check_variants
from iosched.core.settings.journal import Journal, default_run_dir
from iosched.core.settings.persist import build_class_rule, build_rule, parse_rules
from iosched.core.settings.putback import note, put_back, starting_point
from iosched.core.settings.scheduler import available_schedulers, read_knobs, read_tunables, switch_scheduler
from iosched.core.settings.tunables import apply, list_settings, validate
from iosched.core.settings.writes import restore

from conftest import run_cli
from fixtree import ADIOS, LAYOUTS, FixTree, Layout, add_kernel_disk, kernel_writes

ALL = ("none", "mq-deadline", "kyber", "bfq", "adios")
layouts = pytest.mark.parametrize("layout", LAYOUTS.values(), ids=list(LAYOUTS))


def value(tree: FixTree, attr: str, device: str = "sda") -> str:
    return (tree.root / "sys/block" / device / attr).read_text().strip()


def entries(tree: FixTree) -> dict[str, tuple[str, str | None]]:
    """attr -> (original, scheduler) of sda's journal entries."""
    return {e.attr: (e.original, e.scheduler) for e in Journal(default_run_dir(tree.root)).entries().values()}


@layouts
def test_async_depth_is_read_as_mq_deadlines_wherever_the_kernel_keeps_it(tree, layout: Layout):
    add_kernel_disk(tree, "sda", "8:0", layout, "mq-deadline")
    (tree.root / "sys/block/sda" / layout.async_depth_attr()).write_text("48\n")
    tunables = read_tunables("sda", tree.root)
    assert tunables == {**layout.tunables["mq-deadline"], "async_depth": "48"}
    assert "async_depth" not in read_knobs("sda", tree.root)  # a scheduler's setting: a switch resets it
    (setting,) = [s for s in list_settings("sda", tree.root) if s.name == "async_depth"]
    assert (setting.scope, setting.value) == ("mq-deadline", "48") and "async IO" in setting.meaning
    out = run_cli("--root", str(tree.root), "tune", "sda")
    assert out.returncode == 0 and "mq-deadline tunables:" in out.stdout
    assert any(line.split()[:2] == ["async_depth", "48"] for line in out.stdout.splitlines())


@layouts
def test_async_depth_is_written_journaled_and_restored_where_it_lives(tree, monkeypatch, layout: Layout):
    add_kernel_disk(tree, "sda", "8:0", layout, "mq-deadline")
    made = kernel_writes(monkeypatch, tree, layout)
    (r,) = apply("sda", [("async_depth", "32")], tree.root)
    assert (r.attr, r.old, r.new) == (layout.async_depth_attr(), "256", "32")
    assert value(tree, layout.async_depth_attr()) == "32" and made == [("sda", layout.async_depth_attr(), "32")]
    assert entries(tree) == {layout.async_depth_attr(): ("256", "mq-deadline")}
    # A switch resets it with the scheduler's folder: on the new layout kyber has one too, reset with the switch.
    switch_scheduler("sda", "kyber", tree.root)
    assert ("async_depth" in read_tunables("sda", tree.root)) == ("async_depth" in layout.in_queue)
    assert restore(tree.root)[0].status == "restored"
    assert value(tree, "queue/scheduler") == "none [mq-deadline] kyber bfq"
    assert value(tree, layout.async_depth_attr()) == "256" and entries(tree) == {}


@layouts
def test_a_hand_tuned_async_depth_comes_back_after_a_switch_and_restore(tree, monkeypatch, layout: Layout):
    add_kernel_disk(tree, "sda", "8:0", layout, "mq-deadline")
    (tree.root / "sys/block/sda" / layout.async_depth_attr()).write_text("24\n")  # tuned by hand, before iosched
    kernel_writes(monkeypatch, tree, layout)
    switch_scheduler("sda", "bfq", tree.root)
    assert entries(tree)[layout.async_depth_attr()] == ("24", "mq-deadline")
    assert value(tree, "queue/nr_requests") == "256"
    statuses = {o.attr: o.status for o in restore(tree.root)}
    assert statuses["queue/scheduler"] == "restored" and statuses[layout.async_depth_attr()] == "restored"
    assert value(tree, layout.async_depth_attr()) == "24" and entries(tree) == {}


@layouts
def test_a_scheduler_outside_the_four_is_listed_with_its_settings_alone(tree, layout: Layout):
    add_kernel_disk(tree, "sda", "8:0", layout, "adios", ALL)
    assert available_schedulers("sda", tree.root) == ("adios", list(ALL))
    tunables = read_tunables("sda", tree.root)
    # Its folder also holds a version, a statistics table, a two-line model and write-only triggers: none a setting.
    moved = {"async_depth": "256"} if layout.in_queue else {}
    assert tunables == {**ADIOS, **moved}
    settings = {s.name: s for s in list_settings("sda", tree.root)}
    assert settings["lat_target_read"].scope == "adios" and settings["lat_target_read"].value == "2000000"
    out = run_cli("--root", str(tree.root), "tune", "sda")
    assert out.returncode == 0 and "adios tunables:" in out.stdout and "lat_target_read" in out.stdout
    assert "adios_version" not in out.stdout and "batch_actual_max" not in out.stdout
    listed = run_cli("--root", str(tree.root), "list")
    assert listed.returncode == 0 and "[adios]" in listed.stdout


@layouts
@pytest.mark.parametrize(("pair", "message"), [
    (("adios_version", "4"), "has no setting 'adios_version'"),  # read-only
    (("batch_actual_max", "0"), "has no setting 'batch_actual_max'"),  # a table
    (("lat_model_read", "1 2"), "has no setting 'lat_model_read'"),  # two numbers: iosched cannot check it
    (("reset_lat_model", "1"), "has no setting 'reset_lat_model'"),  # a trigger, not a setting
    (("../../size", "1"), "has no setting '../../size'"),
    (("lat_target_read", "soon"), "takes an integer"),
    (("lat_target_read", str(2**64)), "must lie between"),
])
def test_an_out_of_tree_schedulers_values_are_checked_like_the_others(tree, monkeypatch, layout, pair, message):
    add_kernel_disk(tree, "sda", "8:0", layout, "adios", ALL)
    made = kernel_writes(monkeypatch, tree, layout)
    with pytest.raises(BadInput, match=message.replace("(", r"\(")):
        apply("sda", [pair], tree.root)
    assert made == [] and entries(tree) == {}


@layouts
def test_an_out_of_tree_scheduler_is_switched_tuned_and_restored(tree, monkeypatch, layout: Layout):
    add_kernel_disk(tree, "sda", "8:0", layout, "adios", ALL)
    (tree.root / "sys/block/sda/queue/iosched/lat_target_read").write_text("1000000\n")  # tuned by hand
    kernel_writes(monkeypatch, tree, layout)
    (r,) = apply("sda", [("read_priority", "-5")], tree.root)  # a negative value where it takes one
    assert (r.attr, r.new) == ("queue/iosched/read_priority", "-5")
    r = switch_scheduler("sda", "mq-deadline", tree.root)
    assert (r.old, r.new) == ("adios", "mq-deadline")
    journaled = entries(tree)
    assert journaled["queue/scheduler"] == ("adios", None)
    assert journaled["queue/iosched/lat_target_read"] == ("1000000", "adios")
    assert journaled["queue/iosched/read_priority"] == ("8", "adios")
    assert not any(name in attr for attr in journaled for name in ("version", "actual", "model_read", "reset"))
    restore(tree.root)
    assert value(tree, "queue/scheduler").split() == ["none", "mq-deadline", "kyber", "bfq", "[adios]"]
    assert value(tree, "queue/iosched/lat_target_read") == "1000000"
    assert value(tree, "queue/iosched/read_priority") == "8" and entries(tree) == {}
    # And back the other way: from one of the four to the scheduler outside them, then restored.
    switch_scheduler("sda", "bfq", tree.root)
    switch_scheduler("sda", "adios", tree.root)
    apply("sda", [("batch_limit_read", "12")], tree.root)
    restore(tree.root)
    assert available_schedulers("sda", tree.root)[0] == "adios" and entries(tree) == {}


@layouts
def test_a_rule_keeps_an_out_of_tree_scheduler_and_async_depth_where_the_kernel_has_them(tree, layout: Layout):
    add_kernel_disk(tree, "sda", "8:0", layout, "adios", ALL)
    rule = build_rule("sda", "adios", [("lat_target_read", "1000000")], "kernel-name", tree.root)
    line = rule.line()
    assert 'ATTR{queue/scheduler}="adios"' in line and 'ATTR{queue/iosched/lat_target_read}="1000000"' in line
    (back,), _ = parse_rules(f"{rule.tag()}\n{line}\n")
    assert back == rule
    deadline = build_rule("sda", "mq-deadline", [("async_depth", "64"), ("read_expire", "100")], "kernel-name",
                          tree.root)
    assert f'ATTR{{{layout.async_depth_attr()}}}="64"' in deadline.line()
    (back,), _ = parse_rules(f"{deadline.tag()}\n{deadline.line()}\n")
    assert back == deadline and back.line() == deadline.line()
    # For a class of disks with no device at hand: a scheduler a disk here lists, with settings from its folder.
    klass = build_class_rule("ssd", "adios", [("batch_limit_read", "12")], root=tree.root)
    assert 'ATTR{queue/scheduler}="adios"' in klass.line()
    with pytest.raises(BadInput, match="adios has no setting 'adios_version'"):
        build_class_rule("ssd", "adios", [("adios_version", "1")], root=tree.root)
    klass = build_class_rule("ssd", "mq-deadline", [("async_depth", "64")], root=tree.root)
    assert f'ATTR{{{layout.async_depth_attr()}}}="64"' in klass.line()


def test_a_class_rule_names_a_scheduler_this_machine_lists_or_could_load(tree):
    add_kernel_disk(tree, "sda", "8:0", LAYOUTS["6.18"], "mq-deadline")
    with pytest.raises(BadInput, match="no scheduler 'kpp' here: the kernel's are none, mq-deadline, kyber, bfq, and "
                                       "this machine lists or could load no other"):
        build_class_rule("ssd", "kpp", [], root=tree.root)
    tree.write("proc/sys/kernel/osrelease", "6.18.3-test\n")
    tree.write("lib/modules/6.18.3-test/modules.alias", "alias kpp-iosched kpp\nalias mq-adios-iosched adios\n")
    assert build_class_rule("ssd", "kpp", [], root=tree.root).scheduler == "kpp"
    # Not running anywhere, its settings cannot be known: one sentence, nothing written.
    with pytest.raises(BadInput, match="no disk here runs kpp now"):
        build_class_rule("ssd", "kpp", [("quantum", "4")], root=tree.root)
    with pytest.raises(BadInput, match="no disk here runs adios now"):
        validate("sda", [("lat_target_read", "1")], tree.root, scheduler="adios")


def test_a_variant_of_a_scheduler_running_on_another_disk_is_checked_against_its_folder(tree):
    add_kernel_disk(tree, "sda", "8:0", LAYOUTS["6.18"], "mq-deadline", ALL)
    add_kernel_disk(tree, "sdb", "8:16", LAYOUTS["6.18"], "adios", ALL)
    validate("sda", [("lat_target_read", "500000")], tree.root, scheduler="adios")
    with pytest.raises(BadInput, match="has no setting 'adios_version'"):
        validate("sda", [("adios_version", "1")], tree.root, scheduler="adios")


def test_a_name_the_kernel_does_not_list_is_refused_naming_what_it_does(tree):
    add_kernel_disk(tree, "sda", "8:0", LAYOUTS["6.18"], "mq-deadline", ALL)
    with pytest.raises(UnknownScheduler, match="sda has no scheduler 'kpp'; available: none, mq-deadline, kyber, "
                                               "bfq, adios"):
        switch_scheduler("sda", "kpp", tree.root)


@layouts
def test_a_variant_puts_async_depth_and_an_out_of_tree_schedulers_settings_in_place(tree, monkeypatch, layout):
    add_kernel_disk(tree, "sda", "8:0", layout, "mq-deadline", ALL)
    kernel_writes(monkeypatch, tree, layout)
    variants = parse_variants("adios:batch_limit_read=12,mq-deadline:async_depth=8")
    with pytest.raises(BadInput, match="no disk here runs adios now"):  # its settings are known from its folder
        check_variants("sda", variants, tree.root)
    add_kernel_disk(tree, "sdb", "8:16", layout, "adios", ALL)
    check_variants("sda", variants, tree.root)
    configured = Configurator("sda", variants, tree.root)
    now = configured.apply(variants[1])
    assert now["scheduler"] == "mq-deadline" and now["async_depth"] == "8"
    assert value(tree, layout.async_depth_attr()) == "8"
    now = configured.apply(variants[0])
    assert now["scheduler"] == "adios" and now["batch_limit_read"] == "12"
    configured.put_back()
    assert available_schedulers("sda", tree.root)[0] == "mq-deadline"
    assert value(tree, layout.async_depth_attr()) == "256"
    assert {o.status for o in restore(tree.root)} <= {"unchanged", "skipped"}  # nothing left to put back


@layouts
def test_a_runs_own_async_depth_entry_goes_with_its_put_back_wherever_it_lives(tree, monkeypatch, layout):
    """async_depth moved by the kernel under the run (a write to nr_requests resets it) and then set by the run: its
    entry's original is not where the run found it, and it goes all the same once put back, in queue/ too."""
    add_kernel_disk(tree, "sda", "8:0", layout, "mq-deadline")
    kernel_writes(monkeypatch, tree, layout)
    (tree.root / "sys/block/sda" / layout.async_depth_attr()).write_text("48\n")
    start = note(starting_point("sda", tree.root), tree.root)
    assert start.value_of(layout.async_depth_attr()) == "48"
    (tree.root / "sys/block/sda" / layout.async_depth_attr()).write_text("64\n")  # as nr_requests' write resets it
    apply("sda", [("async_depth", "8")], tree.root)
    assert entries(tree) == {layout.async_depth_attr(): ("64", "mq-deadline")}
    done = put_back(start, tree.root)
    assert done.status == "put back" and value(tree, layout.async_depth_attr()) == "48"
    assert entries(tree) == {}


_name = st.text(st.sampled_from("abcz09_-./ \n["), min_size=1, max_size=12)
_value = st.one_of(st.integers(-(2**70), 2**70).map(str), st.text(max_size=12))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(_name, _value), max_size=3))
def test_any_setting_of_an_out_of_tree_scheduler_is_one_sentence_or_written_as_given(tree, monkeypatch, pairs):
    if not (tree.root / "sys/block/sda").exists():
        add_kernel_disk(tree, "sda", "8:0", LAYOUTS["6.18"], "adios", ALL)
        kernel_writes(monkeypatch, tree, LAYOUTS["6.18"])
    before = {p.name: p.read_bytes() for p in (tree.root / "sys/block/sda/queue/iosched").iterdir()}
    try:
        results = apply("sda", pairs, tree.root)
    except BadInput:
        now = {p.name: p.read_bytes() for p in (tree.root / "sys/block/sda/queue/iosched").iterdir()}
        assert now == before  # refused: nothing changed
        return
    for r in results:  # taken: a setting of its folder, a whole number, written where it lives
        assert r.attr.startswith("queue/") and ".." not in r.attr and r.new.lstrip("-").isdigit()
    restore(tree.root)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.text(st.sampled_from("abz09_-. "), min_size=1, max_size=10), st.text(max_size=30),
                       max_size=6))
def test_only_whole_numbers_under_plain_names_are_an_unknown_schedulers_tunables(tmp_path_factory, files):
    tree = FixTree(tmp_path_factory.mktemp("root"))
    add_kernel_disk(tree, "sda", "8:0", LAYOUTS["next"], "kpp", ("none", "kpp"))
    folder = tree.root / "sys/block/sda/queue/iosched"
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        if name not in (".", ".."):
            (folder / name).write_text(text)
    for name, text in read_tunables("sda", tree.root).items():
        assert re.fullmatch(r"[a-z0-9_]{1,40}", name) and re.fullmatch(r"-?[0-9]{1,20}", text)
