"""`compare DEV --startup` on a real loop device: the bundled start-up (a cold Python start) replayed onto a loop that
holds data, alone and beside a write flood, judged per scheduler on its start-up time; a start-up capture with writes
onto a device holding data is one sentence, and nothing is written."""

import hashlib
import json
import subprocess

from capture_support import make_capture, mixed
from fio_support import no_fio_left, start_cli
from schema_support import valid

from conftest import need_real, one_sentence_exit_2


def filled(loop) -> None:
    """Data where the start-up reads: a read of a sparse file's hole never reaches a disk."""
    subprocess.run(["dd", "if=/dev/urandom", f"of={loop.path}", "bs=1M", "oflag=direct", "status=none"], check=False)


def test_a_startup_beside_a_write_flood_is_slower_under_none_than_alone_and_judged_per_scheduler(make_loop):
    need_real("fio", "setpriv")
    loop = make_loop("128M")
    filled(loop)
    p = start_cli("compare", loop.name, "--schedulers", "none,bfq", "--startup", "--background", "seq-writers-1",
                  "--repeat", "2", "--settle", "0.2", "--json")
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    doc = json.loads(out)
    assert doc["primary_metric"] == "startup_s" and doc["drop_caches"]
    assert doc["workload"]["job"]["name"] == "python-imports beside seq-writers-1"
    assert doc["workload"]["background"]["name"] == "seq-writers-1" and doc["workload"]["replay"]["iodepth"] == 1
    assert any("alone took" in n for n in doc["notes"])
    runs = doc["runs"]
    assert len(runs) == 4 and all(r["valid"] for r in runs), [r["invalid_reason"] for r in runs]
    for r in runs:
        s, m = r["startup"], r["metrics"]
        assert m["startup_s"] == s["startup_s"] > 0 and m["bg:mb_s"] > 0 and m["fg:iops"] > 0
        assert s["of"] == 1563 and (s["requests"] == 1563 or s["over_cap"])
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


def digest(path: str, size: int = 16 << 20) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read(size)).hexdigest()


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
