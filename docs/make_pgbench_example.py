"""Make the database recipe's example of docs/recipes.md: PostgreSQL on a filesystem on a scratch loop device,
pgbench as the workload, its TPS and average latency as the metrics.

    sudo python3 docs/make_pgbench_example.py

PostgreSQL 15 and pgbench are Debian packages (`postgresql`): installed first when missing, and then the
cluster Debian makes and starts on installing (15/main on port 5432) is stopped, since only this script's own is
wanted.

Attaches a loop device over a file in /var/tmp (on the disk: commits wait for it), makes an ext4 filesystem on it,
starts a PostgreSQL cluster of its own there (unix socket only, no TCP), fills it with `pgbench -i`, runs
`iosched compare … --cmd "pgbench …" --cmd-metric tps=… --cmd-metric latency=…`, writes docs/pgbench-example.txt
and replaces the block between the `pgbench-example` markers in docs/recipes.md with the command and the report. The
cluster is stopped and the filesystem, the loop device and its file are removed afterwards, whatever happens.
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402  (imported first: a kill unwinds through the finally blocks)

START, END = "<!-- pgbench-example:start -->", "<!-- pgbench-example:end -->"
PORT = "5439"
SCALE = "20"  # about 300 MB of tables: more than the cluster's shared buffers, less than this VM's memory
PGBENCH = "-c 8 -j 2 -T 15 -n"  # 8 clients, 15 s per run, no vacuum between runs (the runs take turns)


def pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise SystemExit(f"{name} not found: sudo apt-get install -y postgresql")
    return found[-1]


def as_postgres(*argv: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["runuser", "-u", "postgres", "--", *argv], check=True, text=True, **kw)  # type: ignore[call-overload]


def install_postgresql() -> None:
    if glob.glob("/usr/lib/postgresql/*/bin/pgbench"):
        return
    print("installing: postgresql (apt-get)", file=sys.stderr)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "install", "-y", "-qq", "postgresql"], check=True, env=env, stdout=subprocess.DEVNULL)
    for version in glob.glob("/etc/postgresql/*/main"):
        subprocess.run(["pg_ctlcluster", Path(version).parent.name, "main", "stop"], check=False,
                       capture_output=True)


def main() -> None:
    install_postgresql()
    iosched = shutil.which("iosched") or str(ROOT / ".venv/bin/iosched")
    with tempfile.TemporaryDirectory(prefix="iosched-pgbench-", dir="/var/tmp") as tmp:
        t = Path(tmp)
        image, mnt, sock = t / "disk.img", t / "mnt", t / "sock"
        subprocess.run(["truncate", "-s", "4G", str(image)], check=True)
        dev = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", str(image)], check=True,
                             capture_output=True, text=True).stdout.strip()
        mounted = started = False
        data = mnt / "pgdata"
        try:
            subprocess.run(["mkfs.ext4", "-q", dev], check=True)
            mnt.mkdir()
            subprocess.run(["mount", dev, str(mnt)], check=True)
            mounted = True
            for d in (data, sock):
                d.mkdir()
                shutil.chown(d, "postgres", "postgres")
            os.chmod(t, 0o755)
            as_postgres(pg_bin("initdb"), "-D", str(data), "-A", "trust", "--no-instructions",
                        stdout=subprocess.DEVNULL)
            as_postgres(pg_bin("pg_ctl"), "-D", str(data), "-w", "-l", str(data / "log"), "-o",
                        f"-c listen_addresses='' -c unix_socket_directories={sock} -p {PORT}", "start",
                        stdout=subprocess.DEVNULL)
            started = True
            as_postgres(pg_bin("createdb"), "-h", str(sock), "-p", PORT, "bench")
            as_postgres(pg_bin("pgbench"), "-h", str(sock), "-p", PORT, "-i", "-q", "-s", SCALE, "bench",
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            name = Path(dev).name
            cmd = f"runuser -u postgres -- pgbench -h {sock} -p {PORT} {PGBENCH} bench"
            shown_cmd = f"runuser -u postgres -- pgbench -h SOCKDIR -p {PORT} {PGBENCH} bench"
            args = ["compare", name, "--schedulers", "mq-deadline,bfq,none", "--cmd", cmd,
                    "--cmd-metric", "tps=^tps = ([0-9.]+):higher",
                    "--cmd-metric", "latency=^latency average = ([0-9.]+) ms:lower",
                    "--repeat", "4", "--settle", "2"]
            # The command becomes postgres with runuser, which only root may: iosched runs it as root itself, not as
            # the user who ran this script through sudo (a command runs as sudo's user: docs/safety.md).
            root_itself = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
            out = subprocess.run([iosched, *args], capture_output=True, text=True, env=root_itself)
            if out.returncode != 0:
                raise SystemExit(out.stderr)
            report = out.stdout.replace(str(sock), "SOCKDIR").replace(name, "loopN")
        finally:
            if started:
                as_postgres(pg_bin("pg_ctl"), "-D", str(data), "-w", "-m", "fast", "stop", stdout=subprocess.DEVNULL)
            if mounted:
                subprocess.run(["umount", str(mnt)], check=False)
            subprocess.run(["losetup", "-d", dev], check=False)
    shown = ["iosched", *args[:1], "loopN", *args[2:]]
    shown[shown.index("--cmd") + 1] = shown_cmd
    command = " ".join(shlex.quote(a) for a in shown)
    (HERE / "pgbench-example.txt").write_text(f"$ {command}\n{report}")
    common.put_in_page(HERE / "recipes.md", START, END, f"$ {command}\n{report}")
    print(report)


if __name__ == "__main__":
    main()
