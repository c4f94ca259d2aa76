"""Persistence on real loop devices: `iosched persist` writes, lists and removes udev rules, `udevadm test`
shows a rule matches, only rules files are rewritten, and the demo sandbox is refused."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from link_support import digest, make_victim, plant, temporaries

from iosched.core.settings.persist import (
    parse_rules,
)

from conftest import need, need_real, one_sentence_exit_2, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def test_cli_persist_writes_lists_removes(loopdev, tmp_path):
    rules_dir = tmp_path / "rules.d"
    rules_dir.mkdir()
    d = ["--rules-dir", str(rules_dir)]
    r = run_cli("persist", loopdev.name, "bfq", "--by", "kernel-name", "--set", "low_latency=0", "--dry-run", *d)
    assert r.returncode == 0 and "+# iosched: by=kernel-name" in r.stdout and not any(rules_dir.iterdir())
    r = run_cli("persist", loopdev.name, "bfq", "--by", "kernel-name", "--set", "low_latency=0", *d)
    assert r.returncode == 0 and "udevadm control --reload" in r.stdout
    f = rules_dir / "61-iosched.rules"
    assert oct(f.stat().st_mode & 0o777) == "0o644"
    assert run_cli("persist", "--list", *d).stdout.strip() == f"kernel-name={loopdev.name}: bfq low_latency=0"
    assert "already has this rule" in run_cli("persist", loopdev.name, "bfq", "--by", "kernel-name",
                                              "--set", "low_latency=0", *d).stdout
    r = run_cli("persist", loopdev.name, "bfq", "--by", "serial", *d)
    assert r.returncode == 2 and "no serial" in r.stderr
    r = run_cli("persist", loopdev.name, "bfq", "--by", "rotational", *d)
    assert r.returncode == 2 and "is not one: use --by kernel-name" in r.stderr
    r = run_cli("persist", loopdev.name, "--remove", "--by", "kernel-name", *d)
    assert r.returncode == 0 and not f.exists()
    assert loopdev.current() == loopdev.initial_scheduler  # persisting never touched the device


def test_udevadm_test_shows_the_rule_matches_and_sets(loopdev, tmp_path):
    need_real()
    need(shutil.which("udevadm") is not None, "needs udevadm (Debian package udev)")
    # udevadm test reads the system rule directories only: /run/udev/rules.d is tmpfs and ours for the test.
    run_rules = Path("/run/udev/rules.d")
    run_rules.mkdir(parents=True, exist_ok=True)
    name = f"60-iosched-test-{os.getpid()}.rules"
    r = run_cli("persist", loopdev.name, "kyber", "--by", "kernel-name", "--set", "read_lat_nsec=1000000",
                "--rules-file", str(run_rules / name))
    assert r.returncode == 0, r.stderr
    try:
        out = subprocess.run(["udevadm", "test", "--action=change", f"/sys/class/block/{loopdev.name}"],
                             capture_output=True, text=True, timeout=60)
        text = out.stdout + out.stderr
        attr = re.escape(f"/sys/devices/virtual/block/{loopdev.name}/queue/scheduler")
        assert re.search(rf"{re.escape(name)}:\d+ ATTR '{attr}' writing 'kyber'", text), text
        assert "queue/iosched/read_lat_nsec' writing '1000000'" in text
    finally:
        (run_rules / name).unlink(missing_ok=True)
    # udevadm test applies ATTR writes: the rule really took; the fixture puts the scheduler back.
    assert loopdev.current() == "kyber"


def refused(loop, path, why: str) -> None:
    before = path.read_bytes() if path.exists() else None
    out = run_cli("persist", loop.name, "bfq", "--by", "kernel-name", "--rules-file", str(path))
    assert out.returncode == 2, out
    assert len(out.stderr.strip().splitlines()) == 1 and why in out.stderr and "Traceback" not in out.stderr
    assert (path.read_bytes() if path.exists() else None) == before


def test_only_rules_files_are_rewritten(loopdev, tmp_path):
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\n")
    refused(loopdev, passwd, "its name must end in .rules")
    link = tmp_path / "rules.d"
    link.mkdir()
    (link / "60-x.rules").symlink_to(passwd)
    refused(loopdev, link / "60-x.rules", "is not a regular file")
    other = tmp_path / "notes.rules"
    other.write_text("# mine\n")
    refused(loopdev, other, "outside a rules.d directory and holds no iosched rule")
    binary = link / "61-bin.rules"
    binary.write_bytes(b"\xff\xfe\x00binary")
    refused(loopdev, binary, "is not a text rules file")
    assert passwd.read_text() == "root:x:0:0:root:/root:/bin/bash\n"


def test_an_existing_rules_file_keeps_its_mode_blank_lines_and_foreign_lines(loopdev, tmp_path):
    d = tmp_path / "rules.d"
    d.mkdir()
    f = d / "60-iosched.rules"
    foreign = "# my disks\n\nKERNEL==\"sdz\", ATTR{queue/scheduler}=\"none\"\n\n# end\n"
    f.write_text(foreign)
    os.chmod(f, 0o600)
    for sched in ("bfq", "mq-deadline", "mq-deadline"):
        out = run_cli("persist", loopdev.name, sched, "--by", "kernel-name", "--rules-file", str(f))
        assert out.returncode == 0, out.stderr
    assert f.stat().st_mode & 0o777 == 0o600
    assert f.read_text().endswith("\n" + foreign)
    (rule,), _ = parse_rules(f.read_text())
    assert rule.scheduler == "mq-deadline"
    new = d / "61-new.rules"
    assert run_cli("persist", loopdev.name, "bfq", "--by", "kernel-name", "--rules-file", str(new)).returncode == 0
    assert new.stat().st_mode & 0o777 == 0o644


def test_cli_warns_shows_then_writes_and_refuses_the_sandbox(loopdev, tmp_path):
    rules_dir = tmp_path / "rules.d"
    rules_dir.mkdir()
    d = ["--rules-dir", str(rules_dir)]
    r = run_cli("persist", loopdev.name, "bfq", "--show", *d)  # --by auto: a loop device has only its name
    assert r.returncode == 0, r.stderr
    (warning,) = r.stderr.splitlines()
    assert warning.startswith("iosched: warning: ") and "loop device" in warning
    added = [line for line in r.stdout.splitlines() if line.startswith("+") and "KERNEL==" in line]
    assert len(added) == 1 and f'KERNEL=="{loopdev.name}"' in added[0]
    assert not any(rules_dir.iterdir())
    r = run_cli("persist", loopdev.name, "bfq", *d)
    assert r.returncode == 0 and "loop device" in r.stderr and '+ACTION=="add|change"' in r.stdout
    assert (rules_dir / "61-iosched.rules").exists()
    r = run_cli("persist", loopdev.name, "--remove", *d)
    assert r.returncode == 0 and not (rules_dir / "61-iosched.rules").exists()


def test_cli_refuses_a_rule_for_the_demo_sandbox(tmp_path, make_loop):
    need_real()
    (tmp_path / "iosched-demo-test").mkdir()
    loop = make_loop("64M", tmp_path / "iosched-demo-test")
    rules_dir = tmp_path / "rules.d"
    rules_dir.mkdir()
    for extra in ([], ["--show"], ["--format", "tuned"]):
        r = run_cli("persist", loop.name, "bfq", "--rules-dir", str(rules_dir), *extra)
        assert r.returncode == 2 and r.stdout == ""
        assert len(r.stderr.strip().splitlines()) == 1 and "demo sandbox" in r.stderr
    assert not any(rules_dir.iterdir())


def test_persist_into_a_folder_anyone_may_write_never_writes_through_a_link(loopdev, others_dir, tmp_path):
    """`persist --rules-dir DIR`, DIR 0777 and not sticky, links planted there by another user: the name the rule
    went through before is no door, a link at the rules file or in place of a folder is refused with nothing
    written (the link planted between the command's look and its write: tests/unit/settings/test_writes.py)."""
    need_real("setpriv")
    victim = make_victim(tmp_path)
    before = digest(victim)
    plant(others_dir / ".61-iosched.rules.iosched-tmp", victim)
    args = ("persist", loopdev.name, "bfq", "--by", "kernel-name")
    r = run_cli(*args, "--rules-dir", str(others_dir))
    rules = others_dir / "61-iosched.rules"
    assert r.returncode == 0, r.stderr
    assert "bfq" in rules.read_text() and not rules.is_symlink() and rules.stat().st_mode & 0o7777 == 0o644
    plant(rules, victim, over=True)  # in place of the file iosched wrote
    assert "is not a regular file" in one_sentence_exit_2(*args, "--rules-dir", str(others_dir))
    private = tmp_path / "private"
    private.mkdir()
    plant(others_dir / "sub", private)
    r = run_cli(*args, "--rules-dir", str(others_dir / "sub"))  # after the kernel name's warning, one sentence
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "reached through the link sub" in r.stderr.strip().splitlines()[-1]
    assert digest(victim) == before and list(private.iterdir()) == []
    assert temporaries(others_dir) == [".61-iosched.rules.iosched-tmp"]


def test_cli_class_rules_on_a_real_device_in_a_rules_dir_the_test_makes(loopdev, tmp_path):
    rules_dir = tmp_path / "rules.d"
    rules_dir.mkdir()
    d = ["--rules-dir", str(rules_dir)]
    f = rules_dir / "61-iosched.rules"
    # Device-free: every non-rotational disk, the scheduler checked against what the kernel offers.
    r = run_cli("persist", "--class", "non-rotational", "mq-deadline", "--set", "read_expire=100", *d)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].startswith("reaches: every non-rotational disk (sd*, vd*, xvd*, hd*, nvme*n*")
    # With the loop device named, its own scheduler list checks the name; a class rule never reaches a loop device.
    r = run_cli("persist", loopdev.name, "bfq", "--class", "rotational", *d)
    assert r.returncode == 0, r.stderr
    assert f"{loopdev.name} is not among the disks a class rule reaches" in r.stderr
    r = run_cli("persist", loopdev.name, "nosuch", "--class", "rotational", *d)
    assert r.returncode == 2 and f"{loopdev.name} has no scheduler 'nosuch'" in r.stderr
    assert run_cli("persist", "--list", *d).stdout.splitlines() == ["rotational=0: mq-deadline read_expire=100",
                                                                     "rotational=1: bfq"]
    text = f.read_text()
    assert 'ATTR{queue/rotational}=="0", TEST=="queue/scheduler", ATTR{queue/scheduler}="mq-deadline", ' \
           'ATTR{queue/iosched/read_expire}="100"' in text
    tuned = run_cli("persist", "--class", "ssd", "kyber", "--format", "tuned", *d)
    assert tuned.returncode == 0 and "elevator=kyber" in tuned.stdout and f.read_text() == text
    assert run_cli("persist", "--remove", "--class", "hdd", *d).returncode == 0
    assert [(x.by, x.match) for x in parse_rules(f.read_text())[0]] == [("rotational", "0")]
    assert loopdev.current() == loopdev.initial_scheduler  # persisting never touched the device


def _default_rules_state() -> tuple[bool, float | None]:
    default = Path("/etc/udev/rules.d/61-iosched.rules")
    return default.exists(), default.stat().st_mtime if default.exists() else None


def test_a_dry_run_shows_the_rule_on_a_machine_without_udevs_rules_directory(loopdev, tmp_path):
    need_real("unshare", "mount")
    before = _default_rules_state()
    # A --rules-dir that does not exist: the rule is shown, the folder is not made.
    missing = tmp_path / "no-udev" / "rules.d"
    for extra in (["--dry-run"], ["--format", "tuned"]):
        r = run_cli("persist", loopdev.name, "bfq", "--by", "kernel-name", "--rules-dir", str(missing), *extra)
        assert r.returncode == 0, r.stderr
        assert f'KERNEL=="{loopdev.name}"' in r.stdout or f"devices={loopdev.name}" in r.stdout
    assert not missing.parent.exists()
    # The default path on a machine without /etc/udev/rules.d: a private mount namespace hides it behind an empty
    # tmpfs for this one command (gone with it), so the machine's own directory is never in play.
    hide = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount -t tmpfs iosched-test /etc/udev && exec "$@"', "sh"] if Path("/etc/udev").is_dir() else []
    for extra in (["--dry-run"], ["--format", "tuned"], ["--class", "ssd", "--dry-run"]):
        args = ["persist", loopdev.name, "bfq", *extra] if "--class" not in extra else ["persist", "bfq", *extra]
        r = run_cli(*args, preexec=hide)
        assert r.returncode == 0, r.stderr
        if "--format" not in extra:
            assert "rules directory /etc/udev/rules.d does not exist on this machine" in r.stdout
            assert "+ACTION==\"add|change\"" in r.stdout and "(dry run: nothing written" in r.stdout
        else:
            assert r.stdout.startswith("[disk]\n")
    r = run_cli("persist", loopdev.name, "bfq", "--by", "kernel-name", preexec=hide)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "rules directory /etc/udev/rules.d does not exist" in r.stderr
    assert _default_rules_state() == before  # the machine's own rules file: not made, not changed
    assert loopdev.current() == loopdev.initial_scheduler
