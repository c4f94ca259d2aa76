"""Capture and replay on real loop devices: fio runs a known mixed job on loop A while `iosched capture`
records it; the capture agrees with A's diskstats; replayed onto loop B, B's diskstats agree with the capture;
`compare B --replay` reaches a verdict; a write capture is refused where writes may not go."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import pytest
from link_support import digest, make_victim, plant, temporaries
from schema_support import problems

from iosched.core.load.capture_summary import summarize
from iosched.core.load.iolog import meta_path, read_capture

from conftest import need_real, one_sentence_exit_2, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def diskstats(name: str) -> dict[str, int]:
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if f[2] == name:
            return {"reads": int(f[3]), "read_bytes": int(f[5]) * 512, "writes": int(f[7]),
                    "write_bytes": int(f[9]) * 512}
    raise AssertionError(f"{name} not in /proc/diskstats")


def delta(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: b[k] - a[k] for k in a}


@pytest.fixture
def two_loops(make_loop) -> Iterator[tuple]:
    directory = Path(tempfile.mkdtemp(prefix="iosched-test-", dir="/dev/shm"))
    try:
        yield make_loop("256M", directory / "a"), make_loop("256M", directory / "b")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def start_capture(dev: str, out: Path, duration: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "capture", dev, "-o", str(out), "--duration",
                             str(duration)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    # Ready once the loader's status lines start: on a pipe, one line saying so and no figure that would go stale.
    assert proc.stderr is not None
    line = proc.stderr.readline()
    clock = f"{int(duration) // 60:02d}:{int(duration) % 60:02d}"
    assert line == f"iosched: capturing {dev} for up to {clock} (Ctrl-C ends it sooner and keeps what was captured)\n" \
        or time.monotonic() > deadline, line
    return proc


def fio(*args: str) -> None:
    subprocess.run(["fio", "--output=/dev/null", "--ioengine=libaio", "--direct=1", *args], check=True, timeout=60)


def test_capture_agrees_with_diskstats_and_replays_exactly(two_loops, tmp_path):
    need_real("fio", "setpriv")
    a, b = two_loops
    out = tmp_path / "mixed.iolog"
    proc = start_capture(a.name, out, 60)
    try:
        before = diskstats(a.name)
        fio("--name=mixed", f"--filename={a.path}", "--rw=randrw", "--rwmixread=70", "--bsrange=4k-64k",
            "--iodepth=8", "--size=200M", "--time_based", "--runtime=2")
        fio("--name=seq", f"--filename={a.path}", "--rw=write", "--bs=128k", "--size=32M")
        time.sleep(0.3)
        moved = delta(before, diskstats(a.name))
        proc.send_signal(signal.SIGINT)  # Ctrl-C keeps what was captured
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert "capturing" not in stderr  # no progress line after the first into a pipe
    assert "captured" in stdout and "ended early (what was captured is kept)" in stdout, stdout
    cap = read_capture(out)
    m = cap.meta
    assert m.ended == "interrupted" and m.lost == 0 and m.device.name == a.name
    for key, got in (("reads", m.reads), ("writes", m.writes), ("read_bytes", m.read_bytes),
                     ("write_bytes", m.write_bytes)):
        assert moved[key] > 0
        assert abs(got - moved[key]) <= 0.01 * moved[key], (key, got, moved[key])
    s = summarize(cap)  # the whole iolog checked against its metadata
    assert s.counts["read"] == m.reads and s.counts["write"] == m.writes
    assert 0.6 < s.share("read") < 0.8 and s.sequential["write"] >= 250  # the 128k stream: 256 in a row
    assert m.depth_max >= 2

    # `report` on the capture says what kind of workload it was.
    rep = run_cli("report", str(out))
    assert rep.returncode == 0, rep.stderr
    assert "IO mix" in rep.stdout and "queue depth" in rep.stdout and "kind: mixed read/write" in rep.stdout
    js = json.loads(run_cli("report", str(out), "--json").stdout)
    assert js["summary"]["counts"]["read"] == m.reads

    # Replayed onto B: B's diskstats show the capture's requests and bytes, exactly.
    before_b = diskstats(b.name)
    private_tmp = tmp_path / "tmp"  # fio's work folders of this run alone: other runs on the machine have theirs
    private_tmp.mkdir()
    res = run_cli("compare", b.name, "--replay", str(out), "--schedulers", "none,bfq", "--repeat", "2",
                  "--settle", "0.2", "--destroy-data", b.name, "--json", timeout=240, env={"TMPDIR": str(private_tmp)})
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    replayed = delta(before_b, diskstats(b.name))
    runs = len(doc["runs"])
    assert runs == 4 and all(r["valid"] for r in doc["runs"]), doc["runs"]
    for r in doc["runs"]:  # fio's own counts: every request of the capture, once a run
        (job,) = r["fio"]["jobs"]
        assert (job["read"]["total_ios"], job["write"]["total_ios"]) == (m.reads, m.writes)
    # B's diskstats: the same, but for a few reads udev's probe makes after each run's writes.
    assert 0 <= replayed["reads"] - runs * m.reads <= 100 * runs and replayed["writes"] == runs * m.writes
    assert replayed["write_bytes"] == runs * m.write_bytes
    assert 0 <= replayed["read_bytes"] - runs * m.read_bytes <= 0.01 * runs * m.read_bytes
    assert doc["primary_metric"] == "mb_s"
    assert problems("experiment.schema.json", doc) == [] and problems("capture-meta.schema.json", asdict(m)) == []
    assert doc["workload"]["replay"]["requests"] == m.requests and doc["workload"]["replay"]["writes"]
    (comp,) = [c for c in doc["comparisons"] if c["metric"] == "mb_s"]
    assert comp["primary"] and comp["ratio"] > 0 and doc["judgement"]["status"] == "final"
    assert b.current() == "none"  # put back
    assert list(private_tmp.iterdir()) == []  # the work folder and the replay's checked copy are gone


def test_a_write_capture_goes_only_where_writes_may(two_loops, make_loop, tmp_path):
    need_real("fio", "setpriv", "mkfs.ext4")
    a, b = two_loops
    out = tmp_path / "w.iolog"
    proc = start_capture(a.name, out, 2)
    fio("--name=w", f"--filename={a.path}", "--rw=randwrite", "--bs=4k", "--size=64M", "--io_size=8M")
    _out, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    assert read_capture(out).meta.writes > 0
    # Its tables written now, not by the kernel's lazy init once mounted: the device's writes below are iosched's.
    subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", b.path], check=True,
                   capture_output=True)
    before = b.file.read_bytes()[:1 << 20]
    # Holding a filesystem: refused unless the name is typed, and the device is left as it was.
    err = one_sentence_exit_2("compare", b.name, "--replay", str(out), "--schedulers", "none,bfq")
    assert "destroy data" in err and f"--destroy-data {b.name}" in err and "--dir" not in err  # raw only
    assert b.file.read_bytes()[:1 << 20] == before
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-o", "noinit_itable", b.path, str(mnt)], check=True)
    try:
        writes = diskstats(b.name)["writes"]
        err = one_sentence_exit_2("compare", b.name, "--replay", str(out), "--schedulers", "none,bfq",
                                  "--destroy-data", b.name)
        assert "mounted" in err and "--dir" not in err and diskstats(b.name)["writes"] == writes
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    assert b.current() == "none"
    # A hostile capture: one sentence, nothing written to the device.
    bad = tmp_path / "bad.iolog"
    lines = out.read_text().splitlines(keepends=True)
    lines[4] = "1000 /etc/passwd write 0 4096\n"
    bad.write_text("".join(lines))
    shutil.copy(str(out) + ".meta.json", str(bad) + ".meta.json")
    meta = json.loads(Path(str(bad) + ".meta.json").read_text())
    meta["iolog"] = bad.name
    Path(str(bad) + ".meta.json").write_text(json.dumps(meta))
    writes = diskstats(b.name)["writes"]
    err = one_sentence_exit_2("compare", b.name, "--replay", str(bad), "--schedulers", "none,bfq",
                              "--destroy-data", b.name)
    assert "line 5" in err and "/etc/passwd" in err and diskstats(b.name)["writes"] == writes
    # Larger than the target: refused with both sizes named, before anything runs.
    small = make_loop("16M", tmp_path / "small")
    err = one_sentence_exit_2("compare", small.name, "--replay", str(out), "--schedulers", "none,bfq",
                              "--destroy-data", small.name)
    assert f"{16 << 20} bytes" in err and "at least as large" in err


def far_capture(path: Path, max_extent: int | None) -> Path:
    """A read capture of a 1 TiB device whose lines lie at 500 GiB; its metadata gives ``max_extent`` (None: the
    truth), as a hostile or edited file may."""
    from iosched.core.kernel.device_doc import DeviceDoc
    from iosched.core.load.iolog import CaptureWriter, meta_path, write_meta

    t0, far = 10**12, 500 << 30
    with open(path, "w") as out:
        w = CaptureWriter(out, "/dev/vdz", t0)
        for i in range(50):
            w.add(t0 + i * 1_000_000, 0, far // 512 + i * 8, 4096, 1)
        end_us = w.finish(t0 + 60_000_000)
    dev = DeviceDoc(name="vdz", maj_min="252:0", size_bytes=1 << 40, rotational=False, removable=False,
                    read_only=False, scheduler="none", schedulers=["none", "bfq"], nr_requests=128, read_ahead_kb=128)
    write_meta(w.meta(iolog=path.name, device=dev, kernel="6.1.0", started="2026-11-27T00:00:00+00:00",
                      duration_s=end_us / 1e6, ended="duration", timestamps="begin", lost=0, untracked=0), path)
    if max_extent is not None:
        doc = json.loads(meta_path(path).read_text())
        doc["max_extent"] = max_extent
        meta_path(path).write_text(json.dumps(doc))
    return path


def test_a_capture_reaching_past_the_target_is_refused_and_fio_doing_no_io_is_invalid(make_loop, tmp_path):
    """Lines at 500 GiB under metadata that says 1 MiB once replayed onto 256 MiB as four "valid" runs at 0 IOPS:
    the lines are checked against the target; and a run whose fio moved no data is invalid, whatever the job."""
    need_real("fio", "setpriv")
    from iosched.core.documents.params import parse_variants
    from iosched.core.experiment import service
    from iosched.core.experiment.compare import ComparePlan
    from iosched.core.experiment.local_plan import TargetRequest
    from iosched.core.load.iolog import copy_for_replay
    from iosched.core.load.replay import ReplayJob, replay_options

    b = make_loop("256M")
    before = diskstats(b.name)
    err = one_sentence_exit_2("compare", b.name, "--replay", str(far_capture(tmp_path / "far.iolog", 1 << 20)),
                              "--schedulers", "none,bfq", "--repeat", "2", "--settle", "0")
    assert "line 4" in err and f"past the end of {b.name} ({256 << 20} bytes)" in err, err
    assert diskstats(b.name) == before and b.current() == "none"  # nothing ran, nothing changed

    # Past every check (an honest capture copied for fio without its target's size), fio counts each request past
    # the end as done with 0 bytes: each run is kept, invalid, with that reason; none is a figure.
    honest = read_capture(far_capture(tmp_path / "honest.iolog", None))
    work = Path(tempfile.mkdtemp(prefix="iosched-test-"))
    try:
        copy_for_replay(honest, work / "replay.iolog", b.path)
        job = ReplayJob(str(honest.iolog), (("replay", replay_options(honest, "fast")),), honest, "fast",
                        str(work / "replay.iolog"), str(work))
        plan = ComparePlan(b.name, parse_variants("none,bfq"), job=job, repeat=1, settle=0.0,
                           target=TargetRequest(raw=True))
        outcome = service.run(plan)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    runs = outcome.doc.runs
    assert outcome.status == "final" and service.all_invalid(outcome.doc) and len(runs) == 2, runs
    assert all("fio did no IO: its 50 requests moved no data" in (r.invalid_reason or "") for r in runs), runs
    assert b.current() == "none"


def test_links_another_user_plants_while_capturing_receive_nothing(loopdev, others_dir, tmp_path):
    """In a folder anyone may write: a link at the metadata's name, planted after the capture started, is refused
    (exit 2, nothing written through it, no iolog without metadata left); links at the names the metadata went
    through before are no door."""
    need_real("setpriv")
    victim = make_victim(tmp_path)
    before = digest(victim)
    out = others_dir / "cap.iolog"
    for planted_at_target in (True, False):
        proc = start_capture(loopdev.name, out, 1)
        try:
            old = others_dir / f".cap.iolog.meta.json.{proc.pid}.tmp"
            plant(old, victim)
            if planted_at_target:
                plant(meta_path(out), victim)
            _stdout, stderr = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert digest(victim) == before
        if planted_at_target:
            assert proc.returncode == 2, stderr
            lines = stderr.strip().splitlines()
            assert len(lines) == 1 and "cap.iolog.meta.json is a symlink, not a regular file" in lines[0], stderr
            assert not out.exists() and meta_path(out).is_symlink()
            meta_path(out).unlink()
        else:
            assert proc.returncode == 0, stderr
            assert read_capture(out).meta.device.name == loopdev.name and not meta_path(out).is_symlink()
        assert temporaries(others_dir) == [old.name]
        old.unlink()
