"""Make the capture example of docs/capture-replay.md: record what a "server" did, then judge schedulers on a
spare disk by replaying it.

    sudo python3 docs/make_capture_example.py [--seconds 60]

Attaches a loop device over a file in /var/tmp (on the disk) with ext4 on it, the "server": fio plays a small
database (8k random reads and writes, an fsync every 32 writes), its log (4k appends, each fdatasync'd) and a
backup reading a large file, rate-limited as a real server is. `iosched capture` records the device meanwhile.
A second loop device over a blank file in /var/tmp is the spare disk: `iosched compare SPARE --replay FILE
--until-verdict` replays the capture there under each scheduler. Writes docs/capture-example.txt and the block
between the `capture-example` markers in docs/capture-replay.md. Everything is removed afterwards, whatever happens.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402  (imported first: a kill unwinds through the finally blocks)

START, END = "<!-- capture-example:start -->", "<!-- capture-example:end -->"
ARGS = ["--schedulers", "mq-deadline,none,bfq", "--until-verdict", "--max-runs", "8", "--settle", "1"]
SERVER = """\
[global]
directory=MNT
ioengine=libaio
direct=1
time_based=1
runtime=SECONDS

[db]
rw=randrw
rwmixread=75
bs=8k
size=512M
iodepth=4
fsync=32
rate_iops=1500

[log]
rw=write
bs=4k
size=64M
ioengine=psync
fdatasync=1
rate_iops=200

[backup]
rw=read
bs=1M
size=768M
ioengine=psync
rate=24m
"""


def run(*cmd: str, **kw: object) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: {out.stderr}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=60)
    seconds = ap.parse_args().seconds
    iosched = shutil.which("iosched") or str(ROOT / ".venv/bin/iosched")
    with tempfile.TemporaryDirectory(prefix="iosched-capture-", dir="/var/tmp") as tmp, \
            common.ext4_on_loop(Path(tmp), "2G") as (dev, mnt), \
            common.extra_loop_devices(1, "2G", direct=True, under="/var/tmp") as (spare,):
        job = Path(tmp, "server.fio")
        job.write_text(SERVER.replace("MNT", str(mnt)).replace("SECONDS", str(seconds)))
        run("fio", "--create_only=1", str(job))  # the files laid out before the capture starts
        run("sync")
        name, spare_name = Path(dev).name, Path(spare).name
        log = Path(tmp, "server.iolog")
        capture = subprocess.Popen([iosched, "capture", name, "-o", str(log), "--duration", str(seconds + 2)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert capture.stderr is not None and "capturing" in capture.stderr.readline()
        time.sleep(1)
        server = subprocess.run(["fio", "--output=/dev/null", str(job)], capture_output=True, text=True)
        said, err = capture.communicate(timeout=120)
        if capture.returncode != 0 or server.returncode != 0:
            raise SystemExit(err + server.stderr)
        report = run(iosched, "report", str(log)).stdout
        compared = run(iosched, "compare", spare_name, "--replay", str(log), *ARGS)
        looks = [line for line in compared.stderr.splitlines() if line.startswith("iosched: ")]
        rename = {str(log): "server.iolog", str(Path(tmp)) + "/": "", name: "loopA", spare_name: "loopB"}
        text = "\n".join([
            f"$ iosched capture loopA -o server.iolog --duration {seconds + 2}", said.rstrip(),
            "", "$ iosched report server.iolog", report.rstrip(),
            "", f"$ iosched compare loopB --replay server.iolog {' '.join(ARGS)}", *looks,
            compared.stdout.rstrip()]) + "\n"
        for old, new in rename.items():
            text = text.replace(old, new)
    (HERE / "capture-example.txt").write_text(text)
    common.put_in_page(HERE / "capture-replay.md", START, END, text)


if __name__ == "__main__":
    main()
