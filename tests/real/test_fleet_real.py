"""`compare --hosts` over three "hosts": network namespaces joined to this one by veth pairs, each with its own
sshd (Debian's openssh-server, with a host key and an authorized key the test makes) and its own loop device.
Traffic stays on the veth pairs the test makes. One host's sshd is killed mid-run: that host is marked failed,
the others finish and are pooled, and every loop device ends on its original scheduler."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import need_real, one_sentence_exit_2

NET = "10.213"


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=30)


@contextlib.contextmanager
def host_namespaces(tmp_path: Path, count: int) -> Iterator[tuple[list[str], Path]]:
    """``count`` namespaces, each reachable at NET.N.2 with an sshd; the ssh wrapper that reaches them with the
    test's key. Everything is removed afterwards."""
    keys = tmp_path / "keys"
    keys.mkdir()
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / "id"))
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / "hostkey"))
    shutil.copy(keys / "id.pub", keys / "authorized_keys")
    Path("/run/sshd").mkdir(exist_ok=True)
    config = tmp_path / "ssh_config"
    config.write_text(f"Host *\n  User root\n  IdentityFile {keys / 'id'}\n  StrictHostKeyChecking no\n"
                      "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n")
    wrapper = tmp_path / "ssh"
    wrapper.write_text(f"#!/bin/sh\nexec ssh -F {config} \"$@\"\n")
    wrapper.chmod(0o755)
    made: list[tuple[str, str]] = []
    addresses = []
    try:
        for n in range(1, count + 1):
            ns, veth = f"iosched-t{os.getpid() % 1000}-{n}", f"ist{os.getpid() % 1000}h{n}"
            sh("ip", "netns", "add", ns)
            made.append((ns, veth))
            sh("ip", "link", "add", veth, "type", "veth", "peer", "name", f"{veth}n")
            sh("ip", "link", "set", f"{veth}n", "netns", ns)
            sh("ip", "addr", "add", f"{NET}.{n}.1/24", "dev", veth)
            sh("ip", "link", "set", veth, "up")
            sh("ip", "-n", ns, "addr", "add", f"{NET}.{n}.2/24", "dev", f"{veth}n")
            sh("ip", "-n", ns, "link", "set", f"{veth}n", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            cfg = tmp_path / f"sshd_{n}"
            cfg.write_text(f"ListenAddress {NET}.{n}.2\nHostKey {keys / 'hostkey'}\n"
                           f"AuthorizedKeysFile {keys / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
                           "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                           f"PidFile {tmp_path}/sshd_{n}.pid\n")
            sh("ip", "netns", "exec", ns, "/usr/sbin/sshd", "-f", str(cfg))
            addresses.append(f"{NET}.{n}.2")
        yield addresses, wrapper
    finally:
        for ns, veth in made:
            kill_namespace(ns)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            subprocess.run(["ip", "link", "del", veth], capture_output=True)


def pids_in(ns: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def kill_namespace(ns: str) -> None:
    for pid in pids_in(ns):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL if comm(pid) == "sshd" else signal.SIGTERM)


def test_one_compare_on_three_hosts_survives_a_lost_host(make_loop, tmp_path):
    need_real("fio", "setpriv", "sshd", "ssh", "ssh-keygen", "ip")
    loops = [make_loop("256M", tmp_path / f"disk{n}") for n in range(3)]
    with host_namespaces(tmp_path, 3) as (addresses, ssh):
        hosts = tmp_path / "hosts"
        hosts.write_text("# the fleet\n" + "".join(f"{a} {lp.name}\n" for a, lp in zip(addresses, loops, strict=True)))
        iosched = str(Path(sys.executable).with_name("iosched"))
        proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "compare", "--hosts", str(hosts), loops[0].name,
                                 "--schedulers", "none,bfq", "--job", "randread-q16t2", "--runtime", "1",
                                 "--repeat", "2", "--settle", "0.2", "--remote-iosched", iosched, "--ssh", str(ssh),
                                 "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Once the second host's first run is under way, its sshd (every sshd process of that namespace) dies.
        ns2 = f"iosched-t{os.getpid() % 1000}-2"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(comm(p) == "fio" for p in pids_in(ns2)):
            time.sleep(0.2)
        assert any(comm(p) == "fio" for p in pids_in(ns2)), "host 2 never started fio"
        assert loops[1].current() in ("none", "bfq")
        for pid in pids_in(ns2):
            if comm(pid) == "sshd":
                os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 1, err  # a host failed: the others' verdicts still come
        doc = json.loads(out)
        status = {h["host"]: h["status"] for h in doc["hosts"]}
        assert status == {addresses[0]: "done", addresses[1]: "failed", addresses[2]: "done"}, err
        failed = next(h for h in doc["hosts"] if h["status"] == "failed")
        assert "SSH session was lost" in failed["reason"] or "exited" in failed["reason"]
        # The controller read each reachable host's device before and after: back where it was.
        for h in doc["hosts"]:
            assert h["scheduler_before"] == "none"
            if h["status"] == "done":
                assert h["scheduler_after"] == "none" and h["put_back"].endswith("back on none")
        assert failed["scheduler_after"] is None and "could not be checked" in failed["put_back"]
        (row,) = doc["pooled"]["pooled"]
        assert row["variant"] == "bfq" and "pooled over 2 hosts" in row["sentence"]
        assert f"[{addresses[0]}]" in err  # each host's progress, named
        # The lost host's iosched was hung up: it puts its device back and ends.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any("iosched" in comm(p) or comm(p) == "python3" for p in pids_in(ns2)):
            time.sleep(0.2)
    for lp in loops:
        assert lp.current() == lp.initial_scheduler


def test_ctrl_c_on_the_controller_puts_every_host_back(make_loop, tmp_path):
    need_real("fio", "setpriv", "sshd", "ssh", "ssh-keygen", "ip")
    loop = make_loop("256M", tmp_path / "disk")
    with host_namespaces(tmp_path, 2) as (addresses, ssh):
        iosched = str(Path(sys.executable).with_name("iosched"))
        proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "compare", "--hosts",
                                 ",".join(addresses), loop.name, "--schedulers", "bfq,none", "--job",
                                 "randread-q16t2", "--runtime", "30", "--repeat", "2", "--settle", "0.2",
                                 "--remote-iosched", iosched, "--ssh", str(ssh)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Both "hosts" share this machine's loop device: one holds it, the other's iosched is refused by the
        # device lock, as a second iosched on one device must be.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and loop.current() != "bfq":
            time.sleep(0.2)
        assert loop.current() == "bfq"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        # Each remote iosched was hung up with its session and put the device back.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and loop.current() != loop.initial_scheduler:
            time.sleep(0.2)
    assert loop.current() == loop.initial_scheduler


def test_bad_hosts_are_refused_before_anything_runs(tmp_path):
    err = one_sentence_exit_2("compare", "loop0", "--hosts=-oProxyCommand=x,h2", "--schedulers", "none,bfq",
                              "--job", "randread-q16t2")
    assert "not a host name" in err
    f = tmp_path / "hosts"
    f.write_text("h1 loop0 -o ProxyCommand=evil\nh2 loop1\n")
    err = one_sentence_exit_2("compare", "loop0", "--hosts", str(f), "--schedulers", "none,bfq", "--job",
                              "randread-q16t2")
    assert "line 1" in err and "ssh config" in err
    err = one_sentence_exit_2("compare", "loop0", "--hosts", "h1,h2", "--schedulers", "none,bfq", "--job",
                              "/etc/passwd")
    assert "catalog job" in err
    err = one_sentence_exit_2("compare", "loop0", "--hosts", "h1", "--schedulers", "none,bfq", "--job",
                              "randread-q16t2")
    assert "two hosts" in err
    f.write_text("h1 ../../etc\nh2 loop1\n")
    err = one_sentence_exit_2("compare", "loop0", "--hosts", str(f), "--schedulers", "none,bfq", "--job",
                              "randread-q16t2")
    assert "not a device name" in err


@pytest.mark.parametrize("flag", [["--save", "x.json"], ["--destroy-data", "loop0"], ["--cmd", "true"]])
def test_what_a_fleet_compare_cannot_take(flag):
    err = one_sentence_exit_2("compare", "loop0", "--hosts", "h1,h2", "--schedulers", "none,bfq", "--job",
                              "randread-q16t2", *flag)
    assert "does not apply" in err
