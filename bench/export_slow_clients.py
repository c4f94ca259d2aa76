#!/usr/bin/env python3
"""`iosched export` under clients that do not play fair: the time a scrape with the token takes, beside N
connections trickling a header line every few seconds (re-opened as soon as closed, from the scraper's own
address, as on loopback), and beside one client holding many idle connections open.

A real exporter process over the machine's devices (read-only); raw sockets; one scrape every 0.2 s for the
whole run. Prints, per load: scrapes, failures (no answer within 5 s, or not 200), median, p99 and max time.
Usage: python3 bench/export_slow_clients.py [--seconds 20] [--trickle 0,16,64,256] [--idle 1000] [--every 4]
"""

from __future__ import annotations

import argparse
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

TOKEN = "bench-" + "x" * 26


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> float | None:
    """Seconds to a whole 200 answer, or None."""
    t0 = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(f"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
                      .encode())
            answer = b"".join(iter(lambda: s.recv(65536), b""))
    except OSError:
        return None
    return time.monotonic() - t0 if answer.startswith(b"HTTP/1.0 200") else None


def trickle(port: int, every: float, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(b"GET /metrics HTTP/1.1\r\n")
                while not stop.wait(every):
                    s.sendall(b"X-Slow: 1\r\n")
        except OSError:
            stop.wait(0.05)


def measure(port: int, seconds: float, trickling: int, idle: int, every: float) -> list[float | None]:
    stop = threading.Event()
    threads = [threading.Thread(target=trickle, args=(port, every, stop), daemon=True) for _ in range(trickling)]
    for t in threads:
        t.start()
    held = []
    for _ in range(idle):
        try:
            held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError:
            break
    time.sleep(1)
    times: list[float | None] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        times.append(scrape(port))
        time.sleep(0.2)
    stop.set()
    for s in held:
        s.close()
    for t in threads:
        t.join(10)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--trickle", default="0,16,64,256")
    ap.add_argument("--idle", type=int, default=1000, help="idle connections one client holds, in the last load")
    ap.add_argument("--every", type=float, default=4, help="seconds between a trickling client's header lines")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4096)), hard))
    with tempfile.TemporaryDirectory() as tmp:
        token = Path(tmp) / "token"
        token.write_text(TOKEN + "\n")
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "export", "--listen", f"127.0.0.1:{port}",
                                 "--token-file", str(token)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        try:
            assert proc.stderr is not None and "metrics on" in proc.stderr.readline()
            loads = [(int(n), 0) for n in args.trickle.split(",")] + [(16, args.idle)]
            print(f"{'trickling':>9} {'idle':>5} {'scrapes':>7} {'failed':>6} {'median ms':>9} {'p99 ms':>7} "
                  f"{'max ms':>7}")
            for trickling, idle in loads:
                times = measure(port, args.seconds, trickling, idle, args.every)
                good = sorted(t * 1000 for t in times if t is not None)
                p99 = good[min(len(good) - 1, int(0.99 * len(good)))] if good else float("nan")
                print(f"{trickling:>9} {idle:>5} {len(times):>7} {len(times) - len(good):>6} "
                      f"{statistics.median(good) if good else float('nan'):>9.1f} {p99:>7.1f} "
                      f"{max(good, default=float('nan')):>7.1f}", flush=True)
        finally:
            proc.terminate()
            proc.wait(10)
        err = proc.stderr.read() if proc.stderr else ""
        print(f"exporter's stderr: {len(err.splitlines())} lines, traceback: {'Traceback' in err}")


if __name__ == "__main__":
    main()
