"""The schedulers this kernel could load as modules (core/kernel/modules.py), and a switch to one on request
(core/settings/scheduler.py, the modprobe in core/settings/writes.py): the refusal names the modprobe, --load-module
runs it (a fake here: it adds the name to every disk's list, as the kernel does), and one that never ends is left by
its deadline."""

from __future__ import annotations

import os
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.core.base.errors import IoschedError, UnknownScheduler
from iosched.core.kernel.modules import installed_schedulers, scheduler_module
from iosched.core.settings import writes
from iosched.core.settings.scheduler import available_schedulers, switch_scheduler

from conftest import one_sentence_exit_2, run_cli
from fixtree import LAYOUTS, FixTree, add_kernel_disk, kernel_writes

ALIASES = """\
# Aliases extracted from modules themselves.
alias bfq-iosched bfq
alias mq-deadline-iosched mq_deadline
alias mq-adios-iosched adios
alias pci:v00008086d* e1000e
alias kpp-iosched kpp
alias ../../x-iosched evil
alias -rf-iosched dash
"""
DEP = """\
kernel/block/bfq.ko.zst:
kernel/block/kyber-iosched.ko.zst:
kernel/block/mq-deadline.ko.zst:
updates/dkms/adios.ko.xz:
kernel/drivers/net/e1000e.ko.zst:
"""


def modules(tree: FixTree, release: str = "6.18.3-test") -> None:
    tree.write("proc/sys/kernel/osrelease", release + "\n")
    tree.write(f"lib/modules/{release}/modules.alias", ALIASES)
    tree.write(f"lib/modules/{release}/modules.dep", DEP)


def test_the_scheduler_modules_a_kernel_has_installed(tree):
    assert installed_schedulers(tree.root) == {}  # no index: nothing to load
    modules(tree)
    assert installed_schedulers(tree.root) == {"bfq": "bfq", "mq-deadline": "mq-deadline", "adios": "adios",
                                               "kpp": "kpp", "kyber": "kyber-iosched"}
    assert scheduler_module("adios", tree.root) == "adios" and scheduler_module("e1000e", tree.root) is None
    assert scheduler_module("../../x", tree.root) is None and scheduler_module("-rf", tree.root) is None
    tree.write("proc/sys/kernel/osrelease", "../../etc\n")
    assert installed_schedulers(tree.root) == {}


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_index_text_gives_names_and_modules_that_are_plain_words(tmp_path_factory, text):
    tree = FixTree(tmp_path_factory.mktemp("root"))
    tree.write("proc/sys/kernel/osrelease", "6.1.0-x\n")
    tree.write("lib/modules/6.1.0-x/modules.alias", text)
    tree.write("lib/modules/6.1.0-x/modules.dep", text)
    for name, module in installed_schedulers(tree.root).items():
        assert name[0].isalnum() and module[0].isalnum() and "/" not in name + module and " " not in name + module


@pytest.fixture
def fake_modprobe(tree: FixTree, tmp_path, monkeypatch):
    """A modprobe that lists the module's scheduler on every disk of the tree, as loading it does."""
    script = tmp_path / "modprobe"
    script.write_text(f"""#!/bin/sh
[ "$1" = -- ] && shift
for f in {tree.root}/sys/block/*/queue/scheduler; do
  printf '%s %s\\n' "$(cat "$f")" "$1" > "$f"
done
echo "$1" >> {tmp_path}/loaded
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(writes, "MODPROBE", (str(script),))
    return tmp_path / "loaded"


def test_a_scheduler_not_loaded_is_refused_naming_its_modprobe_then_loaded_on_request(tree, monkeypatch,
                                                                                        fake_modprobe):
    add_kernel_disk(tree, "sda", "8:0", LAYOUTS["6.18"], "mq-deadline")
    modules(tree)
    with pytest.raises(UnknownScheduler, match=r"^sda has no scheduler 'adios' loaded; its module adios is installed: "
                                               r"load it with `modprobe adios` \(or `iosched set sda adios "
                                               r"--load-module`\); available now: none, mq-deadline, kyber, bfq$"):
        switch_scheduler("sda", "adios", tree.root)
    assert not fake_modprobe.exists()
    with pytest.raises(UnknownScheduler, match=r"^sda has no scheduler 'cfq'; available: none, mq-deadline"):
        switch_scheduler("sda", "cfq", tree.root, load=True)  # no module of that name: nothing run
    assert not fake_modprobe.exists()
    kernel_writes(monkeypatch, tree, LAYOUTS["6.18"])
    r = switch_scheduler("sda", "adios", tree.root, load=True)
    assert (r.old, r.new) == ("mq-deadline", "adios") and fake_modprobe.read_text() == "adios\n"
    assert available_schedulers("sda", tree.root) == ("adios", ["none", "mq-deadline", "kyber", "bfq", "adios"])


def test_the_command_line_refuses_in_one_sentence_naming_the_modprobe(tree):
    add_kernel_disk(tree, "sda", "8:0", LAYOUTS["6.1"], "mq-deadline")
    modules(tree)
    said = one_sentence_exit_2("--root", str(tree.root), "set", "sda", "kpp")
    assert "its module kpp is installed: load it with `modprobe kpp`" in said
    help_text = run_cli("set", "--help").stdout
    assert "--load-module" in help_text


@pytest.mark.parametrize("args", [
    ["compare", "sda", "--schedulers", "none,kpp", "--job", "rnd4k-q1t1-read"],
    ["compare", "sda", "--schedulers", "none,kpp", "--jobs", "rnd4k-q1t1-read,rnd4k-q1t1-write"],
    ["advise", "sda", "--candidates", "kpp"],
])
def test_compare_and_advise_name_the_modprobe_of_a_scheduler_installed_but_not_loaded(tree, args):
    add_kernel_disk(tree, "sda", "8:0", LAYOUTS["6.1"], "mq-deadline")
    modules(tree)
    said = one_sentence_exit_2("--root", str(tree.root), *args)
    assert "sda has no scheduler 'kpp' loaded; its module kpp is installed: load it with `modprobe kpp`" in said


def test_a_modprobe_that_does_not_end_is_left_by_its_deadline(tree, tmp_path, monkeypatch):
    add_kernel_disk(tree, "sda", "8:0", LAYOUTS["6.18"], "mq-deadline")
    modules(tree)
    script = tmp_path / "modprobe"
    script.write_text("#!/bin/sh\nexec sleep 3600\n")
    script.chmod(0o755)
    monkeypatch.setattr(writes, "MODPROBE", (str(script),))
    monkeypatch.setenv("IOSCHED_WRITE_DEADLINE", "0.3")
    before = (tree.root / "sys/block/sda/queue/scheduler").read_text()
    with pytest.raises(IoschedError, match=r"`\S+ adios` has not ended within 0\.3 s; it is left to the kernel and "
                                           "not run again"):
        switch_scheduler("sda", "adios", tree.root, load=True)
    assert (tree.root / "sys/block/sda/queue/scheduler").read_text() == before
    for proc in writes._WRITER.left:
        proc.wait(10)  # killed when left: it ends at once (a modprobe stuck in the kernel would end when it returns)
    writes._WRITER.left.clear()


def test_a_modprobe_that_fails_says_why(tree, tmp_path, monkeypatch):
    add_kernel_disk(tree, "sda", "8:0", LAYOUTS["6.18"], "mq-deadline")
    modules(tree)
    script = tmp_path / "modprobe"
    script.write_text("#!/bin/sh\necho 'modprobe: ERROR: could not insert adios: Invalid argument' >&2\nexit 1\n")
    script.chmod(0o755)
    monkeypatch.setattr(writes, "MODPROBE", (str(script),))
    with pytest.raises(IoschedError, match=r"adios` failed: modprobe: ERROR: could not insert adios: Invalid "
                                           r"argument$"):
        switch_scheduler("sda", "adios", tree.root, load=True)


def test_a_modprobe_on_the_path_is_never_the_one_run(tmp_path, monkeypatch):
    """Root runs modprobe from fixed places, not whatever a PATH entry holds (a folder another user could write)."""
    planted = tmp_path / "bin"
    planted.mkdir()
    (planted / "modprobe").write_text(f"#!/bin/sh\ntouch {tmp_path}/ran\n")
    (planted / "modprobe").chmod(0o755)
    monkeypatch.setenv("PATH", f"{planted}:{os.environ['PATH']}")
    with pytest.raises(IoschedError, match=r"^`modprobe iosched-no-such-module` failed: .*not found"):
        writes.load_module("iosched-no-such-module")  # the system's modprobe, which finds no such module
    assert not (tmp_path / "ran").exists()


def test_modprobe_is_the_first_of_its_places_that_is_there(tmp_path, monkeypatch):
    script = tmp_path / "modprobe"
    script.write_text(f"#!/bin/sh\ntouch {tmp_path}/ran\n")
    script.chmod(0o755)
    monkeypatch.setattr(writes, "MODPROBE", ("/nonexistent/modprobe", str(script)))
    writes.load_module("iosched-test")
    assert (tmp_path / "ran").exists()
    monkeypatch.setattr(writes, "MODPROBE", ("/nonexistent/modprobe",))
    with pytest.raises(IoschedError, match=r"^modprobe is not in /nonexistent/modprobe \(apt-get install -y kmod\)$"):
        writes.load_module("iosched-test")


@pytest.mark.parametrize("mode", [0o775, 0o757])
def test_a_modprobe_others_could_have_changed_is_not_run(tmp_path, monkeypatch, mode):
    script = tmp_path / "modprobe"
    script.write_text(f"#!/bin/sh\ntouch {tmp_path}/ran\n")
    script.chmod(mode)
    monkeypatch.setattr(writes, "MODPROBE", (str(script),))
    with pytest.raises(IoschedError, match=rf"^{script} is not run: {script} is writable by others than root$"):
        writes.load_module("iosched-test")
    assert not (tmp_path / "ran").exists()
    script.chmod(0o755)
    folder = tmp_path.stat().st_mode
    tmp_path.chmod(mode)  # the folder above it: anyone could put another program in its place
    try:
        with pytest.raises(IoschedError, match=rf"^{script} is not run: {tmp_path} is writable by others than root$"):
            writes.load_module("iosched-test")
    finally:
        tmp_path.chmod(folder)
