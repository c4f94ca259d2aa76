"""`compare DEV --startup` on real loop devices: a cold command's reads of known files on loop A, captured
(`capture --cmd --cold`) with their bytes within 2%, replayed onto loop B beside a write flood; the bundled start-up
(a cold Python start) likewise; each slower beside the flood under none than alone, judged per scheduler on its
start-up time; a start-up capture with writes onto a device holding data is one sentence, and nothing is written."""

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from capture_support import make_capture, mixed
from fio_support import no_fio_left, start_cli
from schema_support import valid

from iosched.core.load.iolog import read_capture
from iosched.core.settings.cmd_cgroup import own_cgroup

from conftest import need, need_real, one_sentence_exit_2


def filled(loop) -> None:
    """Data where the start-up reads: a read of a sparse file's hole never reaches a disk."""
    subprocess.run(["dd", "if=/dev/urandom", f"of={loop.path}", "bs=1M", "oflag=direct", "status=none"], check=False)


def beside_a_flood(loop, *startup: str, of: int, name: str) -> dict:
    """`compare LOOP --startup ... --background seq-writers-1` under none and bfq, twice each: its document, checked
    as a start-up's (``of`` requests each run, slower under none beside the flood than alone, judged per scheduler)."""
    p = start_cli("compare", loop.name, "--schedulers", "none,bfq", "--startup", *startup, "--background",
                  "seq-writers-1", "--repeat", "2", "--settle", "0.2", "--json")
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    doc = json.loads(out)
    assert doc["primary_metric"] == "startup_s" and doc["drop_caches"]
    assert doc["workload"]["job"]["name"] == f"{name} beside seq-writers-1"
    assert doc["workload"]["background"]["name"] == "seq-writers-1" and doc["workload"]["replay"]["iodepth"] == 1
    assert any("alone took" in n for n in doc["notes"])
    runs = doc["runs"]
    assert len(runs) == 4 and all(r["valid"] for r in runs), [r["invalid_reason"] for r in runs]
    for r in runs:
        s, m = r["startup"], r["metrics"]
        assert m["startup_s"] == s["startup_s"] > 0 and m["bg:mb_s"] > 0 and m["fg:iops"] > 0
        assert s["of"] == of and (s["requests"] == of or s["over_cap"])
        if r["variant"] == "none":  # beside the flood, the start-up's reads queue behind the writes
            assert s["startup_s"] > s["alone_s"], s
    primary = [c for c in doc["comparisons"] if c["primary"]]  # the verdict: each scheduler against the baseline
    assert [(c["metric"], c["variant"], c["baseline"]) for c in primary] == [("startup_s", "bfq", "none")]
    assert primary[0]["n"] == [2, 2] and "start-up time" in primary[0]["verdict"]
    assert set(doc["judgement"]["summaries"]) == {"none", "bfq"}
    assert {"bg:mb_s", "fg:clat_p99_us"} <= {c["metric"] for c in doc["comparisons"]}  # the flood's cost beside it
    valid("experiment.schema.json", doc)
    assert loop.current() == loop.initial_scheduler
    no_fio_left(loop.path)
    return doc


def test_the_bundled_startup_beside_a_write_flood_is_slower_under_none_than_alone(make_loop):
    need_real("fio", "setpriv")
    loop = make_loop("128M")
    filled(loop)
    beside_a_flood(loop, of=1563, name="python-imports")  # `--startup` alone: the bundled capture


def mounted_ext4(loop, where: Path) -> Path:
    subprocess.run(["mkfs.ext4", "-q", "-F", "-b", "4096", "-E", "lazy_itable_init=0,lazy_journal_init=0", loop.path],
                   check=True, capture_output=True)
    where.mkdir(mode=0o755)
    subprocess.run(["mount", "-o", "noinit_itable", loop.path, str(where)], check=True)
    return where


def test_a_cold_commands_reads_captured_on_one_loop_are_a_startup_on_another(make_loop, tmp_path):
    need_real("fio", "setpriv", "mkfs.ext4", "mount")
    need(own_cgroup() is not None, "needs a cgroup2 group that hands no controller down")
    a, b = make_loop("128M"), make_loop("128M")
    top = Path(tempfile.mkdtemp(prefix="iosched-startup-", dir="/tmp"))
    mnt = None
    try:
        mnt = mounted_ext4(a, top / "a")
        rng = random.Random(41)
        sizes = [100_000, 1 << 20, (2 << 20) + 123, 777_777] + [300_000] * 8
        for i, size in enumerate(sizes):
            (mnt / f"f{i:02d}").write_bytes(rng.randbytes(size))
        os.sync()
        log = tmp_path / "cat.iolog"
        env = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
        res = subprocess.run([sys.executable, "-m", "iosched.cli", "capture", a.name, "--cmd",
                              f"cat {mnt}/f* > /dev/null", "--cold", "-o", str(log)], capture_output=True, text=True,
                             env=env, timeout=120)
        assert res.returncode == 0, res.stderr
    finally:
        if mnt is not None:
            subprocess.run(["umount", str(mnt)], check=False)
        shutil.rmtree(top, ignore_errors=True)
    m = read_capture(log).meta
    # The files' bytes, within 2% (the rest is ext4's own inodes, directory and extent blocks).
    assert [f.device.name for f in m.files] == [a.name] and sum(sizes) <= m.read_bytes <= 1.02 * sum(sizes)
    assert m.write_bytes == 0 and m.command is not None and m.command.cold
    filled(b)
    beside_a_flood(b, str(log), of=m.reads + m.writes + m.discards, name="cat")


def digest(path: str, size: int = 16 << 20) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read(size)).hexdigest()


@pytest.mark.plumbing
def test_a_startup_with_writes_onto_a_device_holding_data_is_one_sentence_and_writes_nothing(make_loop, tmp_path):
    need_real("fio", "setpriv", "mkfs.ext4")
    loop = make_loop("64M")
    subprocess.run(["mkfs.ext4", "-q", "-F", loop.path], check=True)
    before = digest(loop.path)
    log = make_capture(tmp_path / "writes.iolog", mixed(40))  # reads and writes, as a start-up that saves its state
    err = one_sentence_exit_2("compare", loop.name, "--schedulers", "none,bfq", "--startup", str(log))
    assert f"refused: a write workload on raw {loop.name} would destroy data" in err
    assert f"--destroy-data {loop.name}" in err
    assert digest(loop.path) == before and loop.current() == loop.initial_scheduler
    no_fio_left(loop.path)
