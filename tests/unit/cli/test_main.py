"""The command line on fixture trees: output shapes, key names and exit codes; a PermissionError no check
named is one sentence."""

import argparse
import json
import os
import subprocess
import sys

from iosched.cli.main import run

from conftest import run_cli
from fixtree import diskstats_line

IOSTAT_KEYS = ["r/s", "w/s", "d/s", "f/s", "rkB/s", "wkB/s", "dkB/s", "rrqm/s", "wrqm/s", "drqm/s", "rrqm",
               "wrqm", "drqm", "r_await", "w_await", "d_await", "f_await", "rareq-sz", "wareq-sz", "dareq-sz",
               "aqu-sz", "util"]
MPSTAT_KEYS = ["usr", "nice", "sys", "iowait", "irq", "soft", "steal", "guest", "gnice", "idle"]


def test_list_json_has_the_documented_fields(tree):
    tree.add_disk("sda", "8:0", rotational=True, scheduler="none [mq-deadline]")
    tree.add_disk("zram0", "252:0", scheduler=None)
    r = run_cli("--root", str(tree.root), "list", "--json")
    assert r.returncode == 0, r.stderr
    devices = {d["name"]: d for d in json.loads(r.stdout)}
    sda = devices["sda"]
    assert sda["maj_min"] == "8:0" and sda["rotational"] is True and sda["size_bytes"] == 2048 * 512
    assert sda["scheduler"] == "mq-deadline" and sda["schedulers"] == ["none", "mq-deadline"]
    assert sda["mountpoints"] == [] and "model" in sda
    assert devices["zram0"]["scheduler"] is None and devices["zram0"]["schedulers"] == []


def test_list_text_shows_current_scheduler_in_brackets(tree):
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline] bfq")
    r = run_cli("--root", str(tree.root), "list")
    assert r.returncode == 0
    assert "[mq-deadline]" in r.stdout and "sda" in r.stdout


def test_watch_json_uses_sysstat_key_names(tree):
    tree.add_disk("sda", "8:0")
    tree.set_diskstats([diskstats_line(8, 0, "sda", [0] * 17)])
    tree.set_stat({"all": [1, 0, 1, 8], "0": [1, 0, 1, 8]})
    r = run_cli("--root", str(tree.root), "watch", "--json", "-i", "0.1", "-c", "2")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(lines) == 2
    assert list(lines[0]["disks"]["sda"]) == IOSTAT_KEYS
    assert list(lines[0]["cpu"]["all"]) == MPSTAT_KEYS
    assert set(lines[0]) == {"time", "interval", "disks", "cpu"}
    assert 0.05 < lines[0]["interval"] < 0.5


def test_watch_rejects_bad_interval_and_unknown_device(tree):
    r = run_cli("--root", str(tree.root), "watch", "-i", "0")
    assert r.returncode == 2 and "interval" in r.stderr
    r = run_cli("--root", str(tree.root), "watch", "nosuch")
    assert r.returncode == 2 and "no block device named nosuch" in r.stderr


def test_restore_with_empty_journal_is_a_no_op(tree, tmp_path):
    # fio work directories live in the temporary folder, not under --root: another test's leftovers are not ours
    (tmp_path / "tmp").mkdir()
    r = run_cli("--root", str(tree.root), "restore", env={"TMPDIR": str(tmp_path / "tmp")})
    assert r.returncode == 0 and "nothing to restore" in r.stdout


def test_output_cut_short_by_a_pipe_is_not_an_error():
    r = subprocess.run(f"{sys.executable} -m iosched.cli jobs | head -1", shell=True, capture_output=True, text=True,
                       timeout=60)
    assert r.stdout.strip() == "4k matrix:" and "Traceback" not in r.stderr


def _denied(args: argparse.Namespace) -> int:
    raise PermissionError(13, "Permission denied", "/run/iosched/somewhere")


def test_a_permission_error_no_check_named_is_one_sentence(monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 65534)
    assert run(argparse.Namespace(func=_denied)) == 1
    assert capsys.readouterr().err == "iosched: permission denied on /run/iosched/somewhere: run as root\n"


def test_every_interval_states_its_range_and_the_tuis_is_its_steps():
    """-i says what it takes: the TUI's the steps its + and - go through (core's), a command's core's one range."""
    from iosched.cli.main import build_parser
    from iosched.core.live.monitor import MAX_INTERVAL, MIN_INTERVAL, REFRESH_STEPS

    parser = build_parser()
    (tui,) = [a for a in parser._actions if a.dest == "tui_interval"]
    assert tui.help == ("TUI refresh in seconds, the nearest of 0.25, 0.5, 1, 2 and 5 (default 1; at least 0.25 and at "
                        "most 5)")
    assert (REFRESH_STEPS[0], REFRESH_STEPS[-1]) == (0.25, 5.0)
    refused = run_cli("-i", "0.1", "list")
    assert refused.returncode == 2 and "must be at least 0.25 and at most 5, not 0.1" in refused.stderr
    sub = next(a for a in parser._actions if a.dest == "command").choices
    for name in ("watch", "record", "latency", "top", "export"):
        (interval,) = [a for a in sub[name]._actions if a.dest == "interval"]
        assert f"at least {MIN_INTERVAL:g} and at most {MAX_INTERVAL:g}" in interval.help, name


def test_an_unknown_command_is_answered_with_the_commands_a_person_uses():
    r = run_cli("nosuch")
    assert r.returncode == 2 and "invalid choice: 'nosuch' (choose from 'list', " in r.stderr, r.stderr
    assert "fleet-host" not in r.stderr and "'top')" in r.stderr  # hidden as in --help; the rest all there
    assert "fleet-host" not in run_cli("--help").stdout
