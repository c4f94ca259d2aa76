"""`compare --hosts` over three "hosts": network namespaces joined to this one by veth pairs, each with its own
sshd (Debian's openssh-server, with a host key and an authorized key the test makes) and its own loop device.
Traffic stays on the veth pairs the test makes. One host's sshd is killed mid-run: that host is marked failed,
the others finish and are pooled, and every loop device ends on its original scheduler."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from schema_support import valid

from conftest import need_real, one_sentence_exit_2

# Per test process, so two suites on one machine (worktrees, a CI beside a session) never share an address.
NET = f"10.{200 + os.getpid() % 50}"
# A test that starts hosts is not marked plumbing (tests/run runs it alone): each remote iosched keeps its session's
# folder in /run/iosched/fleet, the one place `restore` reads whatever IOSCHED_RUN_DIR says, so a restore beside it
# would list that live session as left alone.


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=30)


@contextlib.contextmanager
def host_namespaces(tmp_path: Path, count: int, sshd_extra: dict[int, str] | None = None
                    ) -> Iterator[tuple[list[str], Path]]:
    """``count`` namespaces, each reachable at NET.N.2 with an sshd (``sshd_extra``: more sshd_config lines for
    host N); the ssh wrapper that reaches them with the test's key. Everything is removed afterwards."""
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
                           f"PidFile {tmp_path}/sshd_{n}.pid\n{(sshd_extra or {}).get(n, '')}")
            sh("ip", "netns", "exec", ns, "/usr/sbin/sshd", "-f", str(cfg))
            addresses.append(f"{NET}.{n}.2")
        for address in addresses:  # sshd may return before it listens: a host refused at once fails its fleet
            deadline = time.monotonic() + 15
            while True:
                try:
                    socket.create_connection((address, 22), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
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


def reads(loop) -> int:
    return int(Path(f"/sys/block/{loop.name}/stat").read_text().split()[0])


def test_one_compare_on_three_hosts_survives_a_lost_host(make_loop, tmp_path):
    """The lockstep fleet: each host's iosched switches, each host's fio server runs the load fio's client sends
    through the SSH forward. Host 2's sshd dies in its first run."""
    need_real("fio", "setpriv", "sshd", "ssh", "ssh-keygen", "ip")
    loops = [make_loop("256M", tmp_path / f"disk{n}") for n in range(3)]
    with host_namespaces(tmp_path, 3) as (addresses, ssh):
        hosts = tmp_path / "hosts"
        hosts.write_text("# the fleet\n" + "".join(f"{a} {lp.name}\n" for a, lp in zip(addresses, loops, strict=True)))
        iosched = str(Path(sys.executable).with_name("iosched"))
        proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "compare", "--hosts", str(hosts), loops[0].name,
                                 "--schedulers", "none,bfq", "--job", "randread-q16t2", "--runtime", "1",
                                 "--repeat", "2", "--settle", "0.2", "--remote-iosched", iosched, "--ssh", str(ssh),
                                 "--json", "--save", str(tmp_path / "fleet.json")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Every host's fio server is up, in its own namespace, on a socket only root may reach.
        ns2 = f"iosched-t{os.getpid() % 1000}-2"
        start = reads(loops[1])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and reads(loops[1]) - start < 2000:
            time.sleep(0.1)
        assert reads(loops[1]) - start >= 2000, "host 2 never ran its load"
        servers = [p for p in pids_in(ns2) if comm(p) == "fio"]
        assert servers, "no fio server in host 2's namespace"
        cmdline = Path(f"/proc/{servers[0]}/cmdline").read_bytes().split(b"\0")
        sock = Path(next(a for a in cmdline if a.startswith(b"--server=sock:"))[len(b"--server=sock:"):].decode())
        assert sock.parent.stat().st_mode & 0o777 == 0o700 and sock.parent.stat().st_uid == 0
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
                runs = h["result"]["runs"]
                assert [r["variant"] for r in runs] == ["none", "bfq", "bfq", "none"]
                assert all(r["valid"] for r in runs), runs
                # fio's figures came through the client; the host's own sampler saw the same load.
                for r in runs:
                    m, ios = r["metrics"], sum(j["read"]["total_ios"] for j in r["fio"]["jobs"])
                    assert m["iops"] > 0 and abs(m["dev_ios"] - ios) <= 0.02 * ios + 50, (m, ios)
                    assert r["config"]["scheduler"] == r["variant"]
                assert "lockstep" in h["result"]["notes"][0]
        # The runs were in lockstep: both hosts' n-th runs overlap in time on this one clock... each host's
        # run starts on its own session clock, so compare their order instead: the same variants in step.
        done = [h for h in doc["hosts"] if h["status"] == "done"]
        assert [r["variant"] for r in done[0]["result"]["runs"]] == [r["variant"] for r in done[1]["result"]["runs"]]
        assert failed["scheduler_after"] is None and "could not be checked" in failed["put_back"]
        (row,) = doc["pooled"]["pooled"]
        assert row["variant"] == "bfq" and "pooled over 2 hosts" in row["sentence"]
        assert "[fleet] run 4/4 (none)" in err  # each run's figures, host by host
        # One file holds the fleet; `report` judges it again, host by host and pooled, as the run said.
        valid("fleet.schema.json", doc)
        saved = json.loads((tmp_path / "fleet.json").read_text())
        assert saved["mode"] == "lockstep" and saved["hosts"] == doc["hosts"]
        valid("fleet.schema.json", saved)
        again = subprocess.run([sys.executable, "-m", "iosched.cli", "report", str(tmp_path / "fleet.json"), "--json"],
                               capture_output=True, text=True, timeout=60)
        assert again.returncode == 0 and json.loads(again.stdout)["pooled"] == doc["pooled"], again.stderr
        valid("fleet.schema.json", json.loads(again.stdout))
        # The lost host's iosched saw its input end: it puts its device back, stops its fio server and ends.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(comm(p) in ("fio", "iosched", "python3") for p in pids_in(ns2)):
            time.sleep(0.2)
        assert not any(comm(p) in ("fio", "iosched", "python3") for p in pids_in(ns2))
        assert not sock.parent.exists()
    for lp in loops:
        assert lp.current() == lp.initial_scheduler


def test_independent_hosts_each_run_their_own_compare(make_loop, tmp_path):
    """--independent: each host's own iosched runs the whole compare, a job at a time (here a matrix of two); the
    controller judges and pools them, Holm over the matrix."""
    need_real("fio", "setpriv", "sshd", "ssh", "ssh-keygen", "ip")
    loops = [make_loop("256M", tmp_path / f"disk{n}") for n in range(2)]
    with host_namespaces(tmp_path, 2) as (addresses, ssh):
        hosts = tmp_path / "hosts"
        hosts.write_text("".join(f"{a} {lp.name}\n" for a, lp in zip(addresses, loops, strict=True)))
        iosched = str(Path(sys.executable).with_name("iosched"))
        out = subprocess.run([sys.executable, "-m", "iosched.cli", "compare", "--hosts", str(hosts), loops[0].name,
                              "--schedulers", "none,bfq", "--jobs", "randread-q16t2,sweep-read-64k", "--runtime",
                              "1", "--repeat", "2", "--settle", "0.2", "--remote-iosched", iosched, "--ssh", str(ssh),
                              "--json", "--independent"], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        matrix = json.loads(out.stdout)
        valid("fleet-matrix.schema.json", matrix)
        assert matrix["mode"] == "independent" and matrix["pooled"]["cells"] == 2
        for doc, job in zip(matrix["fleets"], ["randread-q16t2", "sweep-read-64k"], strict=True):
            assert [h["status"] for h in doc["hosts"]] == ["done", "done"] and doc["job"] == job
            for h in doc["hosts"]:
                assert h["put_back"].endswith("back on none")
                assert not any("lockstep" in n for n in h["result"]["notes"])
                assert len(h["result"]["runs"]) == 4 and h["result"]["workload"]["job"]["name"] == job
            (row,) = doc["pooled"]["pooled"]
            assert "pooled over 2 hosts" in row["sentence"]
        assert f"[{addresses[0]}]" in out.stderr  # each host's own progress, named
    for lp in loops:
        assert lp.current() == lp.initial_scheduler


def test_ctrl_c_on_the_controller_puts_every_host_back(make_loop, tmp_path):
    """--independent: each remote iosched is hung up with its session and puts its device back."""
    need_real("fio", "setpriv", "sshd", "ssh", "ssh-keygen", "ip")
    loop = make_loop("256M", tmp_path / "disk")
    with host_namespaces(tmp_path, 2) as (addresses, ssh):
        iosched = str(Path(sys.executable).with_name("iosched"))
        proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "compare", "--hosts",
                                 ",".join(addresses), loop.name, "--schedulers", "bfq,none", "--job",
                                 "randread-q16t2", "--runtime", "30", "--repeat", "2", "--settle", "0.2",
                                 "--remote-iosched", iosched, "--ssh", str(ssh), "--independent"],
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
        # Each host's iosched puts the device back and clears its journal entries as it exits: waited out before
        # the namespaces go (their ending signals whatever is left in them).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (loop.current() != loop.initial_scheduler or remote_compares(loop)):
            time.sleep(0.2)
        assert not remote_compares(loop)
    assert loop.current() == loop.initial_scheduler


def remote_compares(loop) -> list[str]:
    """The hosts' own `iosched compare` processes on ``loop`` still running."""
    out = subprocess.run(["pgrep", "-f", f"compare {loop.name} --schedulers"], capture_output=True, text=True)
    return out.stdout.split()


def test_lockstep_until_every_host_decides_beside_a_host_that_will_not_forward(make_loop, tmp_path):
    """--until-verdict in lockstep: each host's compare carries the boundary; the fleet stops once every live host
    has crossed it, and report judges each host at its looks as the run did. Host 3's sshd will not forward to a
    unix socket: it fails before the first run with that reason, and the others go on."""
    need_real("fio", "setpriv", "sshd", "ssh", "ssh-keygen", "ip")
    loops = [make_loop("256M", tmp_path / f"disk{n}") for n in range(3)]
    with host_namespaces(tmp_path, 3, {3: "AllowStreamLocalForwarding no\n"}) as (addresses, ssh):
        hosts = tmp_path / "hosts"
        hosts.write_text("".join(f"{a} {lp.name}\n" for a, lp in zip(addresses, loops, strict=True)))
        saved = tmp_path / "fleet.json"
        iosched = str(Path(sys.executable).with_name("iosched"))
        out = subprocess.run([sys.executable, "-m", "iosched.cli", "compare", "--hosts", str(hosts), loops[0].name,
                              "--schedulers", "none,bfq", "--job", "randread-q16t2", "--runtime", "1",
                              "--until-verdict", "--max-runs", "8", "--settle", "0", "--remote-iosched", iosched,
                              "--ssh", str(ssh), "--json", "--save", str(saved)],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 1, out.stderr  # host 3 failed
        doc = json.loads(out.stdout)
        assert doc["until_verdict"] and doc["repeat"] == 8
        refused = doc["hosts"].pop()
        assert refused["status"] == "failed" and "will not forward" in refused["reason"]
        assert "--independent" in refused["reason"] and refused["put_back"].endswith("back on none")
        for h in doc["hosts"]:
            result = h["result"]
            assert result["sequential"]["looks"] and result["status"] == "final"
            # Every host's boundary crossed stops them all early; hosts sharing two CPUs may need every run allowed.
            crossed = any("every host's boundary was crossed" in n for n in result["notes"])
            assert len(result["runs"]) <= 16 and (crossed or len(result["runs"]) == 16), result["notes"]
            assert f"{h['host']}: boundary crossed" in out.stderr
        for row in doc["pooled"]["hosts"]:
            (c,) = [c for c in row["judgement"]["comparisons"] if c.get("primary")]
            assert "fewer IOPS" in c["verdict"]  # bfq costs a loop device on tmpfs about a third of its IOPS
        again = subprocess.run([sys.executable, "-m", "iosched.cli", "report", str(saved), "--json"],
                               capture_output=True, text=True, timeout=60)
        assert json.loads(again.stdout)["pooled"] == doc["pooled"], again.stderr
    for lp in loops:
        assert lp.current() == lp.initial_scheduler


@pytest.mark.plumbing
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


@pytest.mark.parametrize(("flag", "why"), [
    (["--until-verdict", "--max-runs", "2"], "--max-runs: must be at least 4 and at most 200, not 2"),
    (["--drop-caches"], "add --independent"),
    (["--job", "cgroup-weights"], "add --independent"),
])
@pytest.mark.plumbing
def test_what_lockstep_leaves_to_independent_hosts(flag, why):
    err = one_sentence_exit_2("compare", "loop0", "--hosts", "h1,h2", "--schedulers", "none,bfq", "--job",
                              "randread-q16t2", *flag)
    assert why in err


@pytest.mark.plumbing
@pytest.mark.parametrize("flag", [["--alternate", "5"], ["--destroy-data", "loop0"], ["--cmd", "true"]])
def test_what_a_fleet_compare_cannot_take(flag):
    err = one_sentence_exit_2("compare", "loop0", "--hosts", "h1,h2", "--schedulers", "none,bfq", "--job",
                              "randread-q16t2", *flag)
    assert "does not apply" in err


@pytest.mark.parametrize(("jobs", "extra", "why"), [
    ("seq-read", (), "drop the caches before each run"), ("contention", (), "add --independent"),
    ("randread-q16t2,my.fio", (), "a job file lies on this machine only"),
    ("4k-matrix", ("--job", "4k-read"), "give --job or --jobs, not both"),
])
@pytest.mark.plumbing
def test_a_group_lockstep_cannot_run_is_one_sentence(jobs, extra, why):
    err = one_sentence_exit_2("compare", "loop0", "--hosts", "h1,h2", "--schedulers", "none,bfq", "--jobs", jobs,
                              *extra)
    assert why in err


def test_a_group_of_jobs_on_two_hosts_is_one_matrix_stopped_and_resumed(make_loop, tmp_path):
    """--jobs across hosts: one lockstep fleet per job, one after another, saved after every slot. Ctrl-C in the
    second job ends the fio clients and every session (each host's iosched puts its device back), keeps the first
    job whole and the second's finished runs, judges them, saves them and exits 130. --resume goes on in the
    second job where it stopped, on one clock; the verdicts are pooled per job and Holm-corrected over the
    matrix's cells, and report says the same."""
    need_real("fio", "setpriv", "sshd", "ssh", "ssh-keygen", "ip")
    loops = [make_loop("256M", tmp_path / f"disk{n}") for n in range(2)]
    with host_namespaces(tmp_path, 2) as (addresses, ssh):
        hosts = tmp_path / "hosts"
        hosts.write_text("".join(f"{a} {lp.name}\n" for a, lp in zip(addresses, loops, strict=True)))
        saved = tmp_path / "matrix.json"
        iosched = str(Path(sys.executable).with_name("iosched"))
        proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "compare", "--hosts", str(hosts),
                                 loops[0].name, "--schedulers", "none,bfq", "--jobs", "randread-q16t2,sweep-read-64k",
                                 "--runtime", "1", "--repeat", "2", "--settle", "0", "--remote-iosched", iosched,
                                 "--ssh", str(ssh), "--save", str(saved)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def second_job_runs() -> int:
            try:
                doc = json.loads(saved.read_text())
            except (OSError, ValueError):
                return 0
            if len(doc["fleets"]) < 2:
                return 0
            return min(len(h["result"]["runs"]) if h["result"] else 0 for h in doc["fleets"][1]["hosts"])

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and second_job_runs() < 1:
            time.sleep(0.1)
        if second_job_runs() < 1:
            proc.kill()
            raise AssertionError(f"no run of the second job was saved: {proc.communicate(timeout=30)[1][-3000:]}")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "job 2/2: sweep-read-64k" in err and "the matrix: each cell pooled over the hosts" in out
        doc = json.loads(saved.read_text())
        valid("fleet-matrix.schema.json", doc)
        first, second = doc["fleets"]
        assert [h["status"] for h in first["hosts"]] == ["done", "done"]
        assert all(len(h["result"]["runs"]) == 4 for h in first["hosts"])
        for h in second["hosts"]:
            assert h["status"] == "cancelled" and h["result"]["status"] == "cancelled"
            assert any("ended early (Ctrl-C)" in n for n in h["result"]["notes"])
        kept = len(second["hosts"][0]["result"]["runs"])
        stopped = subprocess.run([sys.executable, "-m", "iosched.cli", "report", str(saved)], capture_output=True,
                                 text=True, timeout=60)
        assert stopped.returncode == 0 and "sweep-read-64k:" in stopped.stdout, stopped.stderr
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(lp.current() != lp.initial_scheduler for lp in loops):
            time.sleep(0.2)
        assert all(lp.current() == lp.initial_scheduler for lp in loops)
        err = one_sentence_exit_2("compare", "--hosts", str(hosts), loops[0].name, "--resume", str(saved),
                                  "--jobs", "randread-q16t2")
        assert "differs from the saved fleet's randread-q16t2,sweep-read-64k" in err
        done = subprocess.run([sys.executable, "-m", "iosched.cli", "compare", "--hosts", str(hosts), loops[0].name,
                               "--resume", str(saved), "--remote-iosched", iosched, "--ssh", str(ssh), "--json"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        final = json.loads(done.stdout)
        assert final == json.loads(saved.read_text())  # saved as shown
        valid("fleet-matrix.schema.json", final)
        job_one = {k: v for k, v in final["fleets"][0].items() if k != "pooled"}  # judged again over more cells
        assert job_one == {k: v for k, v in first.items() if k != "pooled"}  # the finished job is kept as it was
        for h in final["fleets"][1]["hosts"]:
            runs = h["result"]["runs"]
            assert h["status"] == "done" and h["result"]["status"] == "final"
            assert [r["index"] for r in runs] == list(range(4)) and [r["variant"] for r in runs] == [
                "none", "bfq", "bfq", "none"]
            assert any(f"resumed at run {kept + 1} of 4" in n for n in h["result"]["notes"])
            assert all(b["start"] > a["end"] for a, b in itertools.pairwise(runs))  # one clock across the sessions
        pooled = final["pooled"]
        assert pooled["cells"] == 2 and [v["job"] for v in pooled["verdicts"]] == ["randread-q16t2", "sweep-read-64k"]
        assert "over the matrix's 2 pooled cells" in final["fleets"][0]["pooled"]["correction"]
        again = subprocess.run([sys.executable, "-m", "iosched.cli", "report", str(saved), "--json"],
                               capture_output=True, text=True, timeout=60)
        assert json.loads(again.stdout)["pooled"] == pooled, again.stderr
        valid("fleet-matrix.schema.json", json.loads(again.stdout))
        csv_out = subprocess.run([sys.executable, "-m", "iosched.cli", "report", str(saved), "--csv"],
                                 capture_output=True, text=True, timeout=60).stdout.splitlines()
        assert csv_out[0].startswith("job,host,run,") and len(csv_out) == 1 + 2 * 2 * 4
    for lp in loops:
        assert lp.current() == lp.initial_scheduler


HOSTILE = r'''
import re, subprocess, sys
real, args = sys.argv[1], sys.argv[2:]
out = sys.stdout.buffer
if args[:2] == ["list", "--json"]:  # a device list of a gigabyte
    try:
        for _ in range(1 << 14):
            out.write(b"[" * (1 << 16))
    except OSError:
        pass
    sys.exit(0)
# In front of a real fleet-host: its first window's start becomes a 400-digit number.
child = subprocess.Popen([real, *args], stdout=subprocess.PIPE)
changed = False
for line in child.stdout:
    if not changed and line.startswith(b'{"ok":true,"start":'):
        line, changed = re.sub(rb'^[{]"ok":true,"start":[^,]+', b'{"ok":true,"start":1' + b"0" * 400, line), True
    try:
        out.write(line)
        out.flush()
    except OSError:
        break
sys.exit(child.wait())
'''


def test_a_hostile_host_in_front_of_a_real_one_fails_alone_and_puts_back(make_loop, tmp_path):
    """Host 2 is a real fleet-host behind a front that sends a 400-digit start in its first window and a gigabyte
    for its device list. The controller fails host 2 with the place and the bound, reads no more than the bound,
    says first that one host cannot be judged, exits 1; host 2's real iosched sees its session end and puts its
    device back."""
    need_real("fio", "setpriv", "sshd", "ssh", "ssh-keygen", "ip")
    loops = [make_loop("256M", tmp_path / f"disk{n}") for n in range(2)]
    with host_namespaces(tmp_path, 2) as (addresses, ssh):
        iosched = str(Path(sys.executable).with_name("iosched"))
        (tmp_path / "hostile.py").write_text(HOSTILE)
        front = tmp_path / "iosched-front"
        front.write_text(f"#!/bin/sh\ncase \"$SSH_CONNECTION\" in\n  *\" {addresses[1]} \"*) exec {sys.executable} "
                         f"{tmp_path / 'hostile.py'} {iosched} \"$@\" ;;\nesac\nexec {iosched} \"$@\"\n")
        front.chmod(0o755)
        hosts = tmp_path / "hosts"
        hosts.write_text("".join(f"{a} {lp.name}\n" for a, lp in zip(addresses, loops, strict=True)))
        out = subprocess.run([sys.executable, "-m", "iosched.cli", "compare", "--hosts", str(hosts), loops[0].name,
                              "--schedulers", "none,bfq", "--job", "randread-q16t2", "--runtime", "1", "--repeat",
                              "1", "--settle", "0", "--remote-iosched", str(front), "--ssh", str(ssh), "--json"],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        said = [line for line in out.stderr.splitlines() if not line.startswith("[")]  # the hosts' own words aside
        assert said[-1].startswith("iosched: cannot judge: 1 of 2 hosts finished runs"), out.stderr
        doc = json.loads(out.stdout)
        good, bad = doc["hosts"]
        assert good["status"] == "done" and len(good["result"]["runs"]) == 2 and good["put_back"].endswith("none")
        assert bad["status"] == "failed" and "answer to 'end' was not understood: start is not a number of a " \
            "sensible size" in bad["reason"], bad
        assert "its `iosched list --json` was larger than 4 MiB" in bad["put_back"], bad
        ns2 = f"iosched-t{os.getpid() % 1000}-2"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (loops[1].current() != loops[1].initial_scheduler or any(
                comm(p) in ("fio", "iosched", "python3") for p in pids_in(ns2))):
            time.sleep(0.2)
        assert not any(comm(p) in ("fio", "iosched", "python3") for p in pids_in(ns2))
    for lp in loops:
        assert lp.current() == lp.initial_scheduler
