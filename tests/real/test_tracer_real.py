"""Block-layer tracing on a real loop device under fio: counts against diskstats, time in the scheduler under
none and bfq, total time against await, the tracer killed mid-run, iosched SIGKILLed, switching map sets; the
CO-RE tracer by default, bpftrace where named, and the fall back from one to the other."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iosched.core.kernel.procfs import read_diskstats
from iosched.core.settings.scheduler import switch_scheduler
from iosched.core.trace.parse import TraceSample
from iosched.core.trace.tracer import (
    Tracer,
    TracerStopped,
    TracingUnavailable,
)

from conftest import detach_loop, need, need_real


def need_tracing() -> None:
    need_real("fio", "bpftrace", "setpriv")


@pytest.fixture
def loopdev(tmpfs_loop):
    return tmpfs_loop  # fio writes at random here: see tmpfs_loop


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

    def make(devices: list[str], interval: float = 0.5, use: str | None = None) -> Tracer:
        t = Tracer(interval=interval, devices=devices, use=use)
        made.append(t)
        t.start()
        t.wait_ready()
        return t

    yield make
    for t in made:
        t.stop()


@pytest.mark.parametrize("use", ["libbpf", "bpftrace"])
def test_traced_count_matches_diskstats_and_total_time_matches_await(loopdev, tracer_of, use):
    need_tracing()
    tracer = tracer_of([loopdev.name], use=use)
    assert tracer.get(timeout=10) is not None and tracer.kind == use
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
    # Under none requests go straight to the driver: no insert, zero time in the scheduler. Under bfq each request
    # waits in it, on a fast machine mostly under a microsecond (the histogram's first bucket, shown as 0), but
    # its tail is always a microsecond or more.
    assert all(d.sched.percentile(0.99) == 0.0 for d in before)
    assert all(d.sched.percentile(0.99) > 0 for d in after)
    assert all(d.device.total > 0 for d in before + after)


@pytest.mark.plumbing
def test_the_tracer_killed_mid_run_is_a_clear_stop(loopdev, tracer_of):
    need_tracing()
    tracer = tracer_of([loopdev.name])
    assert tracer.kind == "libbpf"  # the CO-RE tracer was built by the install and runs here
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


def tracer_children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid), "-f", "iosched-blktrace|bpftrace"], capture_output=True,
                         text=True).stdout
    return [int(p) for p in out.split()]


PROGRAMS = ("block_io_start", "block_rq_insert", "block_rq_issue", "block_rq_complete")


def loaded_programs_of(pid: int) -> list[str]:
    """Names of the BPF programs a process holds: the prog_id of each of its descriptors (fdinfo), named by
    bpftool's list of loaded programs."""
    ids = set()
    for info in Path(f"/proc/{pid}/fdinfo").iterdir():
        with contextlib.suppress(OSError):
            for line in info.read_text().splitlines():
                if line.startswith("prog_id:"):
                    ids.add(int(line.split()[1]))
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout
    return [p["name"] for p in json.loads(out or "[]") if p.get("id") in ids]


def our_programs_loaded() -> int:
    """Programs with our names held by no process at all would be a leak; counted from bpftool's list."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout
    return sum(1 for p in json.loads(out or "[]") if p.get("name") in PROGRAMS and p.get("type") == "tracing")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_iosched_sigkilled_leaves_no_tracer_and_nothing_loaded(loopdev):
    need_tracing()
    need_real("bpftool")
    before = our_programs_loaded()
    cli = subprocess.Popen([sys.executable, "-m", "iosched.cli", "latency", loopdev.name, "-i", "0.5", "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = cli.stdout.readline()
        assert line, cli.stderr.read()
        assert loopdev.name in json.loads(line)["devices"] or json.loads(line)["devices"] == {}
        children = tracer_children(cli.pid)
        assert len(children) == 1
        assert sorted(loaded_programs_of(children[0])) == sorted(PROGRAMS)  # the CO-RE tracer runs
        assert our_programs_loaded() == before + len(PROGRAMS)
        cli.send_signal(signal.SIGKILL)
        cli.wait(timeout=10)
        deadline = time.monotonic() + 10
        while (alive(children[0]) or our_programs_loaded() > before) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(children[0])
        # Its programs and links went with its file descriptors: nothing pinned, nothing left loaded.
        assert our_programs_loaded() == before
    finally:
        if cli.poll() is None:
            cli.kill()


@pytest.mark.plumbing
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
    assert all(ln["tracer"] == "libbpf" and "tracer_us_per_io" in ln for ln in lines)
    assert "tracing with bpftrace" not in r.stderr
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


@pytest.mark.plumbing
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


@pytest.mark.plumbing
def test_latency_without_root_is_one_sentence():
    need_real("setpriv")
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                        "iosched.cli", "latency", "-c", "1"], capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode == 1
    assert r.stderr.strip() == "iosched: block-layer tracing needs root (run iosched with sudo)"
    assert r.stdout == ""


@pytest.mark.plumbing
def test_compare_with_trace_records_scheduler_and_device_time_per_run(loopdev, tmp_path):
    need_tracing()
    saved = tmp_path / "exp.json"
    r = subprocess.run([sys.executable, "-m", "iosched.cli", "compare", loopdev.name, "--schedulers", "none,bfq",
                        "--job", "randread-q16t2", "--runtime", "1.5", "--repeat", "1", "--settle", "0.2",
                        "--trace", "--save", str(saved), "--details"], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    doc = json.loads(saved.read_text())
    assert doc["traced"] is True and not [n for n in doc["notes"] if not n.startswith("busy machine")]
    runs = {run["variant"]: run for run in doc["runs"]}
    for run in runs.values():
        assert run["trace"]["ios"] > 0 and run["trace"]["device_us"]
        assert run["metrics"]["device_p50_us"] > 0 and "tracer_cpu" in run["metrics"]
        # The traced run covers the run's own IO: fio's count, give or take the edges.
        assert run["trace"]["ios"] == pytest.approx(run["metrics"]["dev_ios"], rel=0.05)
    assert runs["none"]["metrics"]["sched_p99_us"] == 0.0
    assert runs["bfq"]["metrics"]["sched_p99_us"] > 0  # its median may be under a microsecond: shown as 0
    assert "scheduler p50" in r.stdout
    assert loopdev.current() == loopdev.initial_scheduler  # put back


@pytest.mark.plumbing
def test_a_traced_matrix_keeps_each_runs_histograms_and_plots_them_per_workload(loopdev, tmp_path):
    """`compare --jobs … --trace`: each run carries its block-layer figures as a compare's do, and `report --plot`
    draws the histograms per workload and variant."""
    need_tracing()
    saved = tmp_path / "matrix.json"
    r = subprocess.run([sys.executable, "-m", "iosched.cli", "compare", loopdev.name, "--schedulers", "none,bfq",
                        "--jobs", "4k-randread,4k-read", "--runtime", "1", "--size", "16M", "--repeat", "2",
                        "--settle", "0.2", "--trace", "--save", str(saved)], capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stderr
    assert "block-layer tracing over every run" in r.stderr
    doc = json.loads(saved.read_text())
    assert doc["traced"] is True and not [n for n in doc["notes"] if not n.startswith("busy machine")]
    assert len(doc["runs"]) == 8
    for run in doc["runs"]:
        assert run["valid"] and run["trace"]["ios"] > 0 and run["trace"]["device_us"]
        assert run["trace"]["ios"] == pytest.approx(run["metrics"]["dev_ios"], rel=0.05)
        assert run["metrics"]["device_p50_us"] > 0 and "tracer_cpu" in run["metrics"]
        if run["variant"] == "none":
            assert run["metrics"]["sched_p99_us"] == 0.0
    assert any(run["metrics"]["sched_p99_us"] > 0 for run in doc["runs"] if run["variant"] == "bfq")
    assert loopdev.current() == loopdev.initial_scheduler  # put back
    plot = subprocess.run([sys.executable, "-m", "iosched.cli", "report", str(saved), "--plot"],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "100"})
    assert plot.returncode == 0, plot.stderr
    for workload in ("4k-randread", "4k-read"):
        assert f"{workload}: time in the scheduler (block-layer tracing)" in plot.stdout
        assert f"{workload}: device time (block-layer tracing)" in plot.stdout
    traced = [line for line in plot.stdout.splitlines() if "IOs traced" in line]
    assert len(traced) == 4 and all("none: " in line and "bfq: " in line for line in traced)


@pytest.mark.plumbing
def test_trace_refused_with_live_alternation(loopdev):
    need_real()
    r = subprocess.run([sys.executable, "-m", "iosched.cli", "compare", loopdev.name, "--schedulers", "none,bfq",
                        "--job", "randread-q16t2", "--alternate", "2", "--trace"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--trace applies to repeated runs" in r.stderr


@pytest.mark.plumbing
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
    # bpftrace's own map sets: clear and switch every other tick
    tracer = Tracer(interval=0.1, devices=[loop.name], reset_period=0.2, use="bpftrace")
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


@pytest.mark.plumbing
@pytest.mark.parametrize("broken", ["fails to load", "was not built"])
def test_where_the_core_tracer_cannot_run_bpftrace_does_and_says_why(loopdev, tmp_path, broken):
    need_tracing()
    loader = tmp_path / "iosched-blktrace"
    if broken == "fails to load":  # as a kernel that refuses the programs: the loader ends before it is ready
        loader.write_text("#!/bin/sh\necho 'libbpf: prog block_io_start: failed to load' >&2\n"
                          "echo 'cannot load the BPF programs: Operation not permitted' >&2\nexit 1\n")
        loader.chmod(0o755)
    else:  # as an install on a machine without clang: build.sh's reason kept beside it
        (tmp_path / "BUILD-FAILED").write_text("clang is not installed\n")
    tracer = Tracer(interval=0.5, devices=[loopdev.name], loader=loader)
    try:
        tracer.start()
        tracer.wait_ready()
        load = fio(loopdev.path, 1)
        assert load.wait(timeout=60) == 0
        samples = samples_until(tracer, time.monotonic())
    finally:
        tracer.stop()
    assert tracer.kind == "bpftrace" and all(s.tracer == "bpftrace" for s in samples)
    assert sum(s.devices[loopdev.name].ios for s in samples if loopdev.name in s.devices) > 100
    why = {"fails to load": "the CO-RE tracer did not load: cannot load the BPF programs: Operation not permitted",
           "was not built": "the CO-RE tracer was not built when iosched was installed (clang is not installed)"}
    assert tracer.fallback is not None and tracer.fallback.startswith(why[broken])
    assert tracer.description.startswith("bpftrace, since " + why[broken])


@pytest.mark.plumbing
def test_the_core_tracer_alone_refuses_where_it_cannot_run(loopdev, tmp_path):
    need_tracing()
    tracer = Tracer(interval=0.5, devices=[loopdev.name], loader=tmp_path / "absent", use="libbpf")
    with pytest.raises(TracingUnavailable, match=r"^the CO-RE tracer was not built when iosched was installed; "):
        tracer.start()
    assert not tracer.running
