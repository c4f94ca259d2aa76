"""`iosched export` scraped by a real Prometheus (Debian's `prometheus`, started by the test on loopback with its
own config and storage): its query API returns the scheduler metric, and a switch made by `iosched set` is
counted. The exporter refuses a scrape without the token, with a foreign Host or a foreign Origin."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import need_real, run_cli


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
