"""Block-layer tracing on a real loop device under fio: counts against diskstats, time in the scheduler under
none and bfq, total time against await, bpftrace killed mid-run, iosched SIGKILLed, switching map sets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from iosched.core.kernel.procfs import read_diskstats
from iosched.core.settings.scheduler import switch_scheduler
from iosched.core.trace.parse import TraceSample
from iosched.core.trace.tracer import (
    Tracer,
    TracerStopped,
)

from conftest import detach_loop, need, need_real


def need_tracing() -> None:
    need_real("fio", "bpftrace", "setpriv")


def fio(dev: str, seconds: float, extra: tuple[str, ...] = ()) -> subprocess.Popen:
    return subprocess.Popen(["fio", "--name=load", f"--filename={dev}", "--direct=1", "--rw=randrw", "--bs=4k",
                             "--iodepth=16", "--ioengine=libaio", "--time_based", f"--runtime={seconds:g}",
                             "--thread", "--output-format=terse", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def completed(name: str) -> tuple[int, int]:
    d = read_diskstats()[name]
    return d.reads + d.writes, d.ms_reading + d.ms_writing


def samples_until(tracer: Tracer, mono: float, timeout: float = 30.0) -> list[TraceSample]:
    """Every sample up to the first one that ends after ``mono``."""
    out: list[TraceSample] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ev = tracer.get(timeout=1.0)
        if isinstance(ev, TracerStopped):
            pytest.fail(f"the tracer stopped: {ev.reason}")
        if isinstance(ev, TraceSample):
            out.append(ev)
            if ev.mono > mono:
                return out
    pytest.fail("no sample arrived after the load ended")


@pytest.fixture
def tracer_of():
    made: list[Tracer] = []

    def make(devices: list[str], interval: float = 0.5) -> Tracer:
        t = Tracer(interval=interval, devices=devices)
        made.append(t)
        t.start()
        t.wait_ready()
        return t

    yield make
    for t in made:
        t.stop()


def test_traced_count_matches_diskstats_and_total_time_matches_await(loopdev, tracer_of):
    need_tracing()
    tracer = tracer_of([loopdev.name])
    ios0, ms0 = completed(loopdev.name)
    load = fio(loopdev.path, 3)
    assert load.wait(timeout=60) == 0, load.stderr.read()
    time.sleep(0.2)  # the last completions land in diskstats
    ios1, ms1 = completed(loopdev.name)
    samples = samples_until(tracer, time.monotonic())
    devs = [s.devices[loopdev.name] for s in samples if loopdev.name in s.devices]
    traced = sum(d.ios for d in devs)
    real = ios1 - ios0
    assert real > 1000
    assert abs(traced - real) <= 0.01 * real, (traced, real)
    # Total time runs from the moment diskstats starts timing a request: its mean is await.
    timed = sum(d.total.total for d in devs)
    assert timed >= 0.97 * real  # completions skipped in interrupts lack a time, and only those
    traced_mean_ms = sum(d.total_ns for d in devs) / timed / 1e6
    await_ms = (ms1 - ms0) / real
    assert traced_mean_ms == pytest.approx(await_ms, rel=0.1), (traced_mean_ms, await_ms)


def test_switch_none_to_bfq_shows_time_in_the_scheduler(loopdev, tracer_of):
    need_tracing()
    if "bfq" not in loopdev.scheduler_text():
        need(False, "bfq is not available on this kernel")
    if loopdev.current() != "none":
        switch_scheduler(loopdev.name, "none")
    tracer = tracer_of([loopdev.name])
    load = fio(loopdev.path, 4)
    try:
        time.sleep(1.5)
        switched_at = time.monotonic()
        switch_scheduler(loopdev.name, "bfq")
        assert load.wait(timeout=60) == 0, load.stderr.read()
    finally:
        if load.poll() is None:
            load.kill()
    samples = samples_until(tracer, time.monotonic())
    # Whole intervals before and after the switch (the one holding it mixes both).
    before = [s.devices[loopdev.name] for s in samples
              if s.mono < switched_at and loopdev.name in s.devices and s.devices[loopdev.name].ios > 100]
    after = [s.devices[loopdev.name] for s in samples
             if s.mono - s.interval > switched_at + 0.1 and loopdev.name in s.devices
             and s.devices[loopdev.name].ios > 100]
    assert before and after
    # Under none requests go straight to the driver: no insert, zero time in the scheduler.
    assert all(d.sched.percentile(0.99) == 0.0 for d in before)
    assert all(d.sched.percentile(0.5) > 0 for d in after)
    assert all(d.device.total > 0 for d in before + after)


def test_bpftrace_killed_mid_run_is_a_clear_stop(loopdev, tracer_of):
    need_tracing()
    tracer = tracer_of([loopdev.name])
    load = fio(loopdev.path, 3)
    try:
        first = tracer.get(timeout=10)
        assert isinstance(first, TraceSample)
        os.kill(tracer.pid, signal.SIGKILL)
        ev = tracer.get(timeout=10)
        while isinstance(ev, TraceSample):
            ev = tracer.get(timeout=10)
        assert isinstance(ev, TracerStopped)
        assert ev.reason is not None and "killed by signal 9" in ev.reason
        assert not tracer.running
        # The rest goes on: the load is unaffected and a new tracer starts.
        assert load.wait(timeout=60) == 0
    finally:
        if load.poll() is None:
            load.kill()
    again = tracer_of([loopdev.name])
    assert isinstance(again.get(timeout=10), TraceSample)


def bpftrace_children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid), "bpftrace"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_iosched_sigkilled_leaves_no_bpftrace(loopdev):
    need_tracing()
    cli = subprocess.Popen([sys.executable, "-m", "iosched.cli", "latency", loopdev.name, "-i", "0.5", "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = cli.stdout.readline()
        assert line, cli.stderr.read()
        assert loopdev.name in json.loads(line)["devices"] or json.loads(line)["devices"] == {}
        children = bpftrace_children(cli.pid)
        assert len(children) == 1
        cli.send_signal(signal.SIGKILL)
        cli.wait(timeout=10)
        deadline = time.monotonic() + 10
        while alive(children[0]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(children[0])
    finally:
        if cli.poll() is None:
            cli.kill()


def test_latency_json_contract_under_load(loopdev):
    need_tracing()
    load = fio(loopdev.path, 30)  # killed once iosched is done
    try:
        time.sleep(0.5)
        r = subprocess.run([sys.executable, "-m", "iosched.cli", "latency", loopdev.name, "-i", "0.5", "-c", "3",
                            "--json"], capture_output=True, text=True, timeout=60)
    finally:
        load.kill()
        load.wait()
    assert r.returncode == 0, r.stderr
    lines = [json.loads(ln) for ln in r.stdout.splitlines()]
    assert len(lines) == 3
    busy = [ln["devices"][loopdev.name] for ln in lines if loopdev.name in ln["devices"]]
    assert busy and busy[-1]["ios"] > 0
    for dev in busy:
        assert set(dev["ops"]) <= {"read", "write", "flush", "discard", "other"}
        for key in ("sched_us", "device_us", "total_us"):
            assert {"p50", "p99", "hist"} <= set(dev[key])
            assert all(lo < hi and n > 0 for lo, hi, n in dev[key]["hist"])


def test_top_traced_names_fio_on_the_device(loopdev):
    need_tracing()
    load = fio(loopdev.path, 30)  # killed once iosched is done
    try:
        time.sleep(0.5)
        r = subprocess.run([sys.executable, "-m", "iosched.cli", "top", loopdev.name, "-i", "0.5", "-c", "2",
                            "--json"], capture_output=True, text=True, timeout=60)
    finally:
        load.kill()
        load.wait()
    assert r.returncode == 0, r.stderr
    last = json.loads(r.stdout.splitlines()[-1])
    assert last["source"] == "trace"
    assert last["processes"] and last["processes"][0]["comm"] == "fio"
    assert all(p["device"] == loopdev.name for p in last["processes"])


def test_top_without_root_falls_back_to_procfs():
    need_real("setpriv")
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                        "iosched.cli", "top", "-i", "0.2", "-c", "1", "--json"],
                       capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode == 0, r.stderr
    assert "needs root" in r.stderr and "/proc/PID/io" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    obj = json.loads(r.stdout)
    assert obj["source"] == "procfs" and obj["system_wide"] is True


def test_latency_without_root_is_one_sentence():
    need_real("setpriv")
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                        "iosched.cli", "latency", "-c", "1"], capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode == 1
    assert r.stderr.strip() == "iosched: block-layer tracing needs root (run iosched with sudo)"
    assert r.stdout == ""


def test_compare_with_trace_records_scheduler_and_device_time_per_run(loopdev, tmp_path):
    need_tracing()
    saved = tmp_path / "exp.json"
    r = subprocess.run([sys.executable, "-m", "iosched.cli", "compare", loopdev.name, "--schedulers", "none,bfq",
                        "--job", "randread-q16t2", "--runtime", "1.5", "--repeat", "1", "--settle", "0.2",
                        "--trace", "--save", str(saved)], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    doc = json.loads(saved.read_text())
    assert doc["traced"] is True and not doc["notes"]
    runs = {run["variant"]: run for run in doc["runs"]}
    for run in runs.values():
        assert run["trace"]["ios"] > 0 and run["trace"]["device_us"]
        assert run["metrics"]["device_p50_us"] > 0 and "tracer_cpu" in run["metrics"]
        # The traced run covers the run's own IO: fio's count, give or take the edges.
        assert run["trace"]["ios"] == pytest.approx(run["metrics"]["dev_ios"], rel=0.05)
    assert runs["none"]["metrics"]["sched_p99_us"] == 0.0
    assert runs["bfq"]["metrics"]["sched_p50_us"] > 0
    assert "scheduler p50" in r.stdout
    assert loopdev.current() == loopdev.initial_scheduler  # put back


def test_trace_refused_with_live_alternation(loopdev):
    need_real()
    r = subprocess.run([sys.executable, "-m", "iosched.cli", "compare", loopdev.name, "--schedulers", "none,bfq",
                        "--job", "randread-q16t2", "--alternate", "2", "--trace"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--trace applies to repeated runs" in r.stderr


def test_a_device_removed_while_traced_leaves_tracing_running(loopdev, tmp_path, tracer_of, make_loop):
    need_tracing()
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    other = make_loop("64M", other_dir)
    tracer = tracer_of([loopdev.name, other.name])
    subprocess.run(["dd", "if=/dev/zero", f"of={other.path}", "bs=4k", "count=256", "oflag=direct"],
                   check=True, capture_output=True)
    detach_loop(other)
    load = fio(loopdev.path, 1.5)
    assert load.wait(timeout=60) == 0
    samples = samples_until(tracer, time.monotonic())
    assert tracer.running
    assert sum(s.devices[other.name].ios for s in samples if other.name in s.devices) >= 256
    assert sum(s.devices[loopdev.name].ios for s in samples if loopdev.name in s.devices) > 1000


def test_real_switching_map_sets_keeps_timing_every_request(tmp_path, make_loop):
    need_real("fio", "bpftrace", "setpriv")
    loop = make_loop()
    tracer = Tracer(interval=0.1, devices=[loop.name], reset_period=0.2)  # clear and switch every other tick
    load = None
    try:
        tracer.start()
        tracer.wait_ready()
        load = subprocess.Popen(["fio", "--name=reset", f"--filename={loop.path}", "--direct=1", "--rw=randread",
                                 "--bs=4k", "--iodepth=32", "--ioengine=libaio", "--time_based", "--runtime=3",
                                 "--thread", "--output-format=terse"], stdout=subprocess.DEVNULL)
        samples: list[TraceSample] = []
        while load.poll() is None or len(samples) < 5:
            ev = tracer.get(timeout=5)
            if isinstance(ev, TracerStopped):
                pytest.fail(f"the tracer stopped: {ev.reason}")
            if isinstance(ev, TraceSample):
                samples.append(ev)
        assert load.wait(timeout=60) == 0
        assert tracer.running  # dozens of clears under load, none raced with the probes
        busy = [s.devices[loop.name] for s in samples if loop.name in s.devices]
        ios = sum(d.ios for d in busy)
        assert ios > 1000
        # Requests in flight across a switch are still timed; only a missed completion goes untimed.
        assert sum(d.total.total for d in busy) >= 0.97 * ios
        assert sum(s.dropped_requests for s in samples) <= 0.03 * ios
    finally:
        if load is not None and load.poll() is None:
            load.kill()
            load.wait()
        tracer.stop()
