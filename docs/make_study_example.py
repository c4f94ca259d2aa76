"""Make the study example of docs/recipes.md: hdparm-like reads, gzip and a tar extraction as one study, until a
verdict.

    sudo python3 docs/make_study_example.py

Attaches a loop device over a file in /var/tmp (on the disk), makes an ext4 filesystem on it with a 256 MiB file
of compressible text and its tar archive, writes a study file (the `seq-read` group, `gzip -c` of the file, `tar -x`
of the archive then `sync`), runs `iosched compare … --study FILE --until-verdict --drop-caches`, writes
docs/study-example.txt and replaces the block between the `study-example` markers in docs/recipes.md with the study
file, the command and the report. The filesystem, the loop device and its file are removed afterwards, whatever
happens.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402  (imported first: a kill unwinds through the finally blocks)

START, END = "<!-- study-example:start -->", "<!-- study-example:end -->"
ARGS = ["--schedulers", "mq-deadline,bfq", "--runtime", "3", "--size", "256M", "--until-verdict", "--max-runs", "8",
        "--drop-caches", "--settle", "1"]
STUDY = """\
[[workload]]
job = "seq-read"                 # what hdparm -t and hdparm --direct -t measure

[[workload]]
name = "gzip"
cmd = "gzip -1 -c MNT/data.txt > /dev/null"

[[workload]]
name = "untar"
cmd = "rm -rf MNT/out && mkdir MNT/out && tar -xf MNT/data.tar -C MNT/out && sync"
"""


def fill(mnt: Path) -> None:
    """256 MiB of text that compresses like source code (the man pages and docs this machine has, repeated),
    and a tar of it in 64 files."""
    parts = [p for p in Path("/usr/share/doc").rglob("*") if p.is_file() and p.suffix in ("", ".txt", ".md")][:400]
    chunk = b"".join(p.read_bytes()[:65536] for p in parts) or b"iosched study example\n" * 4096
    with open(mnt / "data.txt", "wb") as f:
        while f.tell() < 256 << 20:
            f.write(chunk)
    src = mnt / "src"
    src.mkdir()
    data = (mnt / "data.txt").read_bytes()
    for i in range(64):
        (src / f"part{i:02d}.txt").write_bytes(data[i * (4 << 20):(i + 1) * (4 << 20)])
    subprocess.run(["tar", "-cf", str(mnt / "data.tar"), "-C", str(src), "."], check=True)
    shutil.rmtree(src)
    subprocess.run(["sync"], check=True)


def _give_to_sudo_user(mnt: Path) -> None:
    """The study's commands run as the user who ran this script through sudo (a command runs as sudo's user:
    docs/safety.md), and write in the filesystem: it is theirs."""
    uid, gid = os.environ.get("SUDO_UID"), os.environ.get("SUDO_GID")
    if not uid or not uid.isdigit() or int(uid) == 0:
        return
    ids = (int(uid), int(gid) if gid and gid.isdigit() else int(uid))
    for path in (mnt, *mnt.rglob("*")):
        os.chown(path, *ids, follow_symlinks=False)


def main() -> None:
    iosched = shutil.which("iosched") or str(ROOT / ".venv/bin/iosched")
    with tempfile.TemporaryDirectory(prefix="iosched-study-", dir="/var/tmp") as tmp, \
            common.ext4_on_loop(Path(tmp)) as (dev, mnt):
        study = Path(tmp, "study.toml")
        fill(mnt)
        _give_to_sudo_user(Path(mnt))
        study.write_text(STUDY.replace("MNT", str(mnt)))
        name = Path(dev).name
        out = subprocess.run([iosched, "compare", name, "--study", str(study), *ARGS], capture_output=True,
                             text=True)
        if out.returncode != 0:
            raise SystemExit(out.stderr)
        said = [line for line in out.stderr.splitlines()
                if line.startswith(("iosched: matrix of", "iosched: look at"))]
        report = "\n".join([*said, out.stdout.rstrip()]).replace(str(mnt), "MNT").replace(name, "loopN")
    command = " ".join(["iosched compare loopN --study study.toml", *ARGS])
    text = f"$ cat study.toml\n{STUDY}\n$ {command}\n{report}\n"
    (HERE / "study-example.txt").write_text(text)
    common.put_in_page(HERE / "recipes.md", START, END, text)
    print(text)


if __name__ == "__main__":
    main()
