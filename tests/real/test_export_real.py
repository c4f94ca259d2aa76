"""`iosched export` scraped by a real Prometheus (Debian's `prometheus`, started by the test on loopback with its
own config and storage): its query API returns the scheduler metric, and a switch made by `iosched set` is
counted. The exporter refuses a scrape without the token, with a foreign Host or a foreign Origin.

Its textfile mode against directories that take no file, each made for real: a read-only bind mount, a folder
only root may write seen by `nobody`, a full tmpfs, /proc, a directory or a link at the name; and, while it
runs, a filesystem that fills up and a link planted by another user (a warning, the next writes tried, nothing
written through the link)."""

from __future__ import annotations

import hashlib
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from conftest import need, need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def query(base: str, promql: str) -> list[dict]:
    status, body = get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
    assert status == 200, body
    return json.loads(body)["data"]["result"]


def until(what: str, check, within: float = 30.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.25)
    pytest.fail(f"never happened: {what}")


def test_prometheus_scrapes_the_scheduler_and_counts_a_switch(loopdev, tmp_path):
    need_real("prometheus")
    port, prom_port = free_port(), free_port()
    token_file = tmp_path / "token"
    token_file.write_text("t0k3n-" + "x" * 20 + "\n")
    token_file.chmod(0o600)
    exporter = subprocess.Popen([sys.executable, "-m", "iosched.cli", "export", loopdev.name, "--listen",
                                 f"127.0.0.1:{port}", "--token-file", str(token_file), "-i", "0.5", "--trace"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    config = tmp_path / "prometheus.yml"
    config.write_text(f"""\
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: iosched
    authorization:
      credentials_file: {token_file}
    static_configs:
      - targets: ['127.0.0.1:{port}']
""")
    prom = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                             f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{prom_port}"
    metrics = f"http://127.0.0.1:{port}/metrics"
    auth = {"Authorization": f"Bearer {token_file.read_text().strip()}"}
    try:
        assert exporter.stderr is not None and "metrics on http://127.0.0.1" in exporter.stderr.readline()
        status, text = get(metrics, auth)
        assert status == 200 and f'iosched_scheduler{{device="{loopdev.name}",iosched_scheduler="none"}} 1.0' in text
        # The guard: no token, a wrong one, another Host (DNS rebinding), another page's Origin.
        assert get(metrics)[0] == 403 and get(metrics, {"Authorization": "Bearer nope"})[0] == 403
        assert get(metrics, {**auth, "Host": "evil.example:80"})[0] == 403
        assert get(metrics, {**auth, "Origin": "http://evil.example"})[0] == 403

        sel = f'iosched_scheduler{{device="{loopdev.name}"}} == 1'
        got = until("Prometheus has the scheduler", lambda: query(base, sel))
        assert got[0]["metric"]["iosched_scheduler"] == "none"
        out = run_cli("set", loopdev.name, "bfq")
        assert out.returncode == 0, out.stderr
        switch = f'iosched_scheduler_switches_total{{device="{loopdev.name}",from="none",to="bfq"}}'
        got = until("the switch counted", lambda: query(base, switch))
        assert float(got[0]["value"][1]) == 1.0
        got = until("the new scheduler", lambda: [r for r in query(base, sel)
                                                   if r["metric"]["iosched_scheduler"] == "bfq"])
        assert got and query(base, f'iosched_rotational{{device="{loopdev.name}"}}')
        # Traced: device time as a histogram, every read of the device counted.
        subprocess.run(["dd", f"if={loopdev.path}", "of=/dev/null", "bs=4k", "count=500", "iflag=direct"],
                       check=True, capture_output=True)
        done = f'iosched_device_time_seconds_bucket{{device="{loopdev.name}",le="+Inf"}} >= 500'
        assert until("the traced reads", lambda: query(base, done))
        assert query(base, f'histogram_quantile(0.99, iosched_device_time_seconds_bucket{{device="{loopdev.name}"}})')
    finally:
        for p in (exporter, prom):
            p.terminate()
        for p in (exporter, prom):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    assert exporter.returncode == 143, exporter.stderr.read() if exporter.stderr else ""  # SIGTERM: 128 + 15
    assert token_file.exists()  # a token file the user gave is theirs


def test_textfile_mode_writes_node_exporters_format(loopdev, tmp_path):
    need_real()
    out = run_cli("export", loopdev.name, "--textfile", str(tmp_path), "-i", "0.2", "-c", "3")
    assert out.returncode == 0, out.stderr
    text = Path(tmp_path, "iosched.prom").read_text()
    assert f'iosched_scheduler{{device="{loopdev.name}",iosched_scheduler="none"}} 1.0' in text
    assert f'iosched_reads_per_second{{device="{loopdev.name}"}}' in text
    assert not list(tmp_path.glob("*.tmp*"))  # replaced whole


def need_root() -> None:
    need(os.geteuid() == 0, "needs root (mounts)")
    need(shutil.which("setpriv") is not None, "needs setpriv")


@contextmanager
def mounted(*args: str) -> Iterator[None]:
    """A mount of the test's own, always undone."""
    target = args[-1]
    subprocess.run(["mount", *args], check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", target], check=False, capture_output=True)


def fill(directory: Path) -> Path:
    """Fills the filesystem of ``directory`` with one file; returns it."""
    filler = directory / "filler"
    with suppress(OSError), filler.open("wb") as f:
        while True:
            f.write(b"\0" * 65536)
    return filler


def export_textfile(directory: Path | str, *more: str, preexec: list[str] | None = None):
    return run_cli("export", "--textfile", str(directory), "-i", "0.1", "-c", "2", *more, preexec=preexec,
                   timeout=60)


def one_sentence(out: subprocess.CompletedProcess[str], code: int, words: str) -> None:
    assert out.returncode == code, out
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, out.stderr
    assert words in out.stderr, out.stderr


def test_a_textfile_directory_that_takes_no_file_is_one_sentence(tmp_path):
    need_root()
    # The name holds a directory, or a link another user could have planted (its target left as it was).
    (tmp_path / "dir" / "iosched.prom").mkdir(parents=True)
    one_sentence(export_textfile(tmp_path / "dir"), 2, "iosched.prom is a directory")
    victim = tmp_path / "victim"
    victim.write_text("root's own\n")
    (tmp_path / "link").mkdir()
    (tmp_path / "link" / "iosched.prom").symlink_to(victim)
    one_sentence(export_textfile(tmp_path / "link"), 2, "iosched.prom is a symbolic link")
    assert victim.read_text() == "root's own\n"
    # /proc, where no file can be made.
    one_sentence(export_textfile("/proc"), 2, "a pseudo-filesystem such as /proc")
    # A read-only bind mount.
    ro = tmp_path / "ro"
    ro.mkdir()
    with mounted("--bind", str(ro), str(ro)):
        subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], check=True)
        one_sentence(export_textfile(ro), 2, "Read-only file system")
    assert list(ro.iterdir()) == []
    # A folder only root may write, as an unprivileged user sees it.
    base = Path(tempfile.mkdtemp(prefix="iosched-textfile-"))
    try:
        base.chmod(0o755)
        one_sentence(export_textfile(base, preexec=NOBODY), 2, "Permission denied")
        assert list(base.iterdir()) == []
    finally:
        shutil.rmtree(base)
    # A full filesystem: the machine's failure, not the argument's (exit 1), and nothing left behind.
    full = tmp_path / "full"
    full.mkdir()
    with mounted("-t", "tmpfs", "-o", "size=64k", "tmpfs", str(full)):
        filler = fill(full)
        one_sentence(export_textfile(full), 1, "No space left on device")
        assert list(full.iterdir()) == [filler]


class Lines:
    """A running exporter's stderr, read as it comes."""

    def __init__(self, proc: subprocess.Popen) -> None:
        assert proc.stderr is not None
        self.proc, self.text = proc, ""
        os.set_blocking(proc.stderr.fileno(), False)

    def wait_for(self, words: str, times: int = 1, within: float = 20.0) -> str:
        """All said so far, once ``words`` were said ``times`` times."""
        assert self.proc.stderr is not None
        deadline = time.monotonic() + within
        while self.text.count(words) < times:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                pytest.fail(f"never said {words!r}: {self.text}")
            select.select([self.proc.stderr], [], [], 0.2)
            with suppress(BlockingIOError, TypeError):
                self.text += (os.read(self.proc.stderr.fileno(), 65536) or b"").decode()
        return self.text


def test_a_textfile_that_cannot_be_written_while_running_is_a_warning_and_tried_again():
    need_root()
    base = Path(tempfile.mkdtemp(prefix="iosched-textfile-"))  # where another user can reach
    try:
        base.chmod(0o755)
        running_then_failing(base)
    finally:
        shutil.rmtree(base)


def running_then_failing(base: Path) -> None:
    # A tiny tmpfs anyone may write (0777, not sticky): another user may rename things over root's files there.
    folder = base / "textfile"
    folder.mkdir()
    victim = base / "victim"  # root's, 0600, outside the folder
    victim.write_text("root's secret\n")
    victim.chmod(0o600)
    before = hashlib.sha256(victim.read_bytes()).hexdigest()
    target = folder / "iosched.prom"
    with mounted("-t", "tmpfs", "-o", "size=256k,mode=0777", "tmpfs", str(folder)):
        proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "export", "--textfile", str(folder), "-i", "0.2"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        lines = Lines(proc)
        try:
            lines.wait_for("every 0.2 s")
            assert target.is_file()
            # The filesystem fills up: said once, tried again, and said again when it works.
            filler = fill(folder)
            lines.wait_for("No space left on device; trying again every interval")
            time.sleep(1)  # several failed intervals: still one line
            filler.unlink()
            lines.wait_for(f"writing {target} again")
            # Another user plants a link at the name: never written through, never replaced, said once.
            planted = subprocess.run([*NOBODY, sys.executable, "-c", "import os, sys; os.symlink(sys.argv[1], "
                                      "sys.argv[2] + '.x'); os.replace(sys.argv[2] + '.x', sys.argv[2])",
                                      str(victim), str(target)], capture_output=True, text=True)
            assert planted.returncode == 0, planted.stderr
            lines.wait_for("iosched.prom is a symbolic link")
            time.sleep(1)
            assert target.is_symlink() and hashlib.sha256(victim.read_bytes()).hexdigest() == before
            target.unlink()
            text = lines.wait_for(f"writing {target} again", times=2)
            assert target.is_file() and not target.is_symlink()
        finally:
            proc.terminate()
            proc.wait(10)
    assert "Traceback" not in text and len(text.strip().splitlines()) == 5, text
    assert proc.returncode == 143
    assert hashlib.sha256(victim.read_bytes()).hexdigest() == before
