"""A fleet's hosts as the user names them, the ssh command line built from checked values only, and the remote
command's hang-up when its session ends (run here with sh, as sshd would run it)."""

from __future__ import annotations

import subprocess
import time

import pytest

from iosched.core.base.errors import BadInput
from iosched.core.fleet.fleet import Host, parse_hosts, tied


def test_hosts_from_a_list_and_from_a_file(tmp_path):
    assert parse_hosts("db1,db2.example.com, 10.0.0.3", "sdb") == [
        Host("db1", "sdb"), Host("db2.example.com", "sdb"), Host("10.0.0.3", "sdb")]
    key = tmp_path / "key"
    key.write_text("k")
    f = tmp_path / "hosts"
    f.write_text(f"# fleet\ndb1 nvme0n1 -p 2222 -l ops -i {key}\n[fe80::1]\n\ndb3 sdc\n")
    assert parse_hosts(str(f), "sdb") == [Host("db1", "nvme0n1", 2222, "ops", str(key)), Host("[fe80::1]", "sdb"),
                                           Host("db3", "sdc")]


@pytest.mark.parametrize(("spec", "why"), [
    ("db1", "two hosts"), ("db1,db1", "twice"), ("-oProxyCommand=x,db2", "not a host name"),
    ("db1,db2;rm", "not a host name"), ("a/b,c", "not a host name"),
])
def test_bad_host_lists(spec, why):
    with pytest.raises(BadInput, match=why):
        parse_hosts(spec, "sdb")


@pytest.mark.parametrize(("line", "why"), [
    ("db1 sdb -o ProxyCommand=x", "ssh config"), ("db1 sdb -p 0", "ssh config"), ("db1 sdb -l Root;", "ssh config"),
    ("db1 sdb -i /nonexistent", "ssh config"), ("db1 sdb -p", "no value"), ("db1 $(reboot)", "not a device"),
    ("db1 sdb -p ²", "ssh config"), ("db1 sdb -p ٢٢", "ssh config"),
])
def test_bad_host_lines(tmp_path, line, why):
    f = tmp_path / "hosts"
    f.write_text(f"{line}\ndb2 sdb\n")
    with pytest.raises(BadInput, match=why) as e:
        parse_hosts(str(f), None)
    assert "line 1" in str(e.value)


def test_the_ssh_command_line_quotes_every_remote_word():
    argv = Host("db1", "sdb", 2222, "ops").ssh_argv(["iosched", "compare", "sdb", "--schedulers", "none,bfq x"])
    assert argv[:2] == ["ssh", "-T"] and "BatchMode=yes" in argv and argv[argv.index("-p") + 1] == "2222"
    assert argv[-3:-1] == ["--", "db1"] and "'none,bfq x'" in argv[-1]
    assert argv[-1].startswith("exec 3<&0; ")  # tied to its session
    plain = Host("db1", "sdb").ssh_argv(["iosched", "list", "--json"], tie=False)
    assert plain[-1] == "iosched list --json"


def test_the_remote_command_ends_when_its_session_does():
    # Session open: the command runs to its end and its status comes back.
    p = subprocess.Popen(["sh", "-c", tied(["sh", "-c", "exit 3"])], stdin=subprocess.PIPE)
    assert p.wait(timeout=10) == 3
    p.stdin.close()  # type: ignore[union-attr]
    # Session lost (its stdin closes): the command is hung up, at once.
    p = subprocess.Popen(["sh", "-c", tied(["sleep", "30"])], stdin=subprocess.PIPE)
    time.sleep(0.3)
    start = time.monotonic()
    p.stdin.close()  # type: ignore[union-attr]
    assert p.wait(timeout=10) != 0 and time.monotonic() - start < 5
