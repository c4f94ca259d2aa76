"""`iosched export`: what iosched sees, for Prometheus, through the official client (prometheus-client).

Per device: the scheduler as a state set (``iosched_scheduler{device="sda",iosched_scheduler="bfq"} 1``), the
rotational flag and identity, the iostat rates of the last interval, and the scheduler switches seen since the
start, whoever made them (``iosched_scheduler_switches_total{device,from,to}``). With ``--trace`` (the block
tracer, root): time in the scheduler and device time since the start, as histograms whose buckets are the
tracer's own log2 microsecond buckets. They are classic histograms: the official Python client serves no native
histograms in a form Prometheus scrapes (that needs the protobuf format), and their sum is not exported, since
the tracer keeps buckets, not times. Read-only.

Served over HTTP on loopback unless told (``--listen HOST:PORT`` and ``--public`` for another address), with the
same guard as `serve`: the Host must be this server, an Origin must be its own, and every scrape carries the
token (``Authorization: Bearer TOKEN``; Prometheus: ``authorization: {credentials_file: FILE}``), since every
page a browser opens can reach localhost. The server (cli/scrape_server.py) reads request heads within a
deadline and bounds the connections per client and in all, so a slow client costs only itself. A token file is
read only when it is a small regular file, not through a link. ``--textfile DIR`` writes node_exporter's
textfile-collector format instead (DIR/iosched.prom, replaced whole each interval, only over a regular file),
for hosts that already run node_exporter.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import stat
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest, make_wsgi_app
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    StateSetMetricFamily,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from iosched.cli.scrape_server import ScrapeServer
from iosched.cli.web_guard import Guard, is_loopback, new_token
from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.base.outfile import WriteRefused, write_file
from iosched.core.kernel.sysfs import check_device_name
from iosched.core.live.exported import ExportState, Snapshot
from iosched.core.live.monitor import Monitor, Ticker
from iosched.core.settings.journal import default_run_dir

DEFAULT_PORT = 9477
TEXTFILE = "iosched.prom"
# Gauges from a device's DiskRates: (metric name, help, field, scale to the metric's unit).
RATES: list[tuple[str, str, str, float]] = [
    ("iosched_reads_per_second", "Reads completed per second (iostat r/s)", "r_s", 1.0),
    ("iosched_writes_per_second", "Writes completed per second (iostat w/s)", "w_s", 1.0),
    ("iosched_read_bytes_per_second", "Bytes read per second (iostat rkB/s)", "rkB_s", 1024.0),
    ("iosched_written_bytes_per_second", "Bytes written per second (iostat wkB/s)", "wkB_s", 1024.0),
    ("iosched_read_await_seconds", "Mean time of a read, queueing included (iostat r_await)", "r_await", 1e-3),
    ("iosched_write_await_seconds", "Mean time of a write, queueing included (iostat w_await)", "w_await", 1e-3),
    ("iosched_queue_depth", "Mean requests in flight (iostat aqu-sz)", "aqu_sz", 1.0),
    ("iosched_utilization_ratio", "Share of the interval with a request in flight (iostat %util / 100)", "util",
     0.01),
]


class TraceTotals:
    """Each device's time in the scheduler and device time, log2 µs buckets summed over every traced interval
    since the start (the tracer's thread adds, a scrape reads)."""

    HISTS = (("sched", "iosched_scheduler_time_seconds", "Time requests spent in the IO scheduler (insert to "
              "issue; 0 when issued without an insert), block-layer tracing"),
             ("device", "iosched_device_time_seconds", "Time requests spent in the device (issue to complete), "
              "block-layer tracing"))

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], list[int]] = {}  # (which, device) -> counts per bucket

    def add(self, event: object) -> None:
        from iosched.core.trace.parse import TraceSample

        if not isinstance(event, TraceSample):
            return
        with self._lock:
            for name, dev in event.devices.items():
                for op in dev.ops.values():
                    for which in ("sched", "device"):
                        counts = self._counts.setdefault((which, name), [])
                        for k, n in enumerate(getattr(op, which).counts):
                            if k >= len(counts):
                                counts.extend([0] * (k + 1 - len(counts)))
                            counts[k] += n

    def families(self) -> list[Metric]:
        out: list[Metric] = []
        with self._lock:
            counts = {k: list(v) for k, v in self._counts.items()}
        for which, name, text in self.HISTS:
            fam = HistogramMetricFamily(name, text, labels=["device"])
            for (w, dev), c in sorted(counts.items()):
                if w == which:
                    fam.add_metric([dev], log2_buckets(c), None)
            out.append(fam)
        return out


def log2_buckets(counts: list[int]) -> list[tuple[str, float]]:
    """Cumulative (le, count) pairs of log2 µs buckets (bucket k holds [2^(k-1), 2^k) µs, bucket 0 holds 0),
    in seconds, ending at +Inf."""
    out, total = [], 0
    for k, n in enumerate(counts):
        total += n
        out.append((f"{(1 << k) * 1e-6:g}", float(total)))
    out.append(("+Inf", float(total)))
    return out


class SnapshotCollector(Collector):
    """Metric families from the newest snapshot of an ExportState (read at each scrape), and the traced
    histograms when tracing runs."""

    def __init__(self, snapshot: Callable[[], Snapshot], traced: TraceTotals | None = None) -> None:
        self.snapshot = snapshot
        self.traced = traced

    def collect(self) -> Iterable[Metric]:
        return families(self.snapshot()) + (self.traced.families() if self.traced is not None else [])


def families(snap: Snapshot) -> list[Metric]:
    sched = StateSetMetricFamily("iosched_scheduler", "The device's IO scheduler (one state per scheduler it "
                                 "offers; 1 for the current)", labels=["device"])
    info = InfoMetricFamily("iosched_device", "The device's identity", labels=["device"])
    rot = GaugeMetricFamily("iosched_rotational", "1 for a rotational device (the kernel's flag)", labels=["device"])
    gauges = [(GaugeMetricFamily(name, text, labels=["device"]), fld, scale) for name, text, fld, scale in RATES]
    for name, st in sorted(snap.devices.items()):
        d = st.device
        if d.schedulers:
            sched.add_metric([name], {s: s == d.scheduler for s in d.schedulers})
        info.add_metric([name], {"model": d.model or "", "serial": d.serial or "", "maj_min": d.maj_min,
                                 "size_bytes": str(d.size_bytes)})
        rot.add_metric([name], 1.0 if d.rotational else 0.0)
        if st.rates is not None:
            for g, fld, scale in gauges:
                g.add_metric([name], float(getattr(st.rates, fld)) * scale)
    switches = CounterMetricFamily("iosched_scheduler_switches", "Scheduler switches seen since the exporter "
                                   "started, by anyone (iosched, a udev rule, an echo into sysfs)",
                                   labels=["device", "from", "to"])
    for (dev, old, new), n in sorted(snap.switches.items()):
        switches.add_metric([dev, old, new], float(n))
    return [sched, info, rot, *(g for g, _, _ in gauges), switches]


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536 or not host:
        raise BadInput(f"--listen {text[:60]!r}: give HOST:PORT, e.g. 127.0.0.1:{DEFAULT_PORT}")
    return host.strip("[]"), int(port)


def guarded(app: Callable[..., Any], guard: Guard) -> Callable[..., Any]:
    """The WSGI app behind the guard: a request that is not this server's, or lacks the token, gets 403."""

    def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        auth = environ.get("HTTP_AUTHORIZATION", "")
        token = auth[7:].strip() if auth[:7].lower() == "bearer " else None
        why = guard.refusal(environ.get("HTTP_HOST"), environ.get("HTTP_ORIGIN"), token, need_token=True)
        if why is not None:
            start_response("403 Forbidden", [("Content-Type", "text/plain; charset=utf-8")])
            return [f"refused: {why}\n".encode()]
        return app(environ, start_response)  # type: ignore[no-any-return]

    return wsgi


class TextfileRefused(BadInput):
    """The textfile's name holds something iosched does not replace: a link, a directory, a FIFO, a device."""


def _kind(mode: int) -> str:
    for test, words in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                        (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device")):
        if test(mode):
            return words
    return "not a regular file"


def check_textfile_target(target: Path) -> None:
    """The textfile's name must hold nothing or a regular file: TextfileRefused otherwise (a link is never
    written through, nor replaced: someone put it there)."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise TextfileRefused(f"{target} is {_kind(mode)}: iosched replaces only a regular file there (remove it, or "
                              "name another directory)")


def write_textfile(target: Path, registry: CollectorRegistry) -> None:
    """node_exporter's textfile, replaced whole through the one link-safe writer (core/base/outfile.py: a new file
    of our own beside it, renamed over a target that is still absent or a regular file). 0644 whatever was there:
    node_exporter may run as another user. TextfileRefused for a target that is not a regular file; OSError for a
    directory that takes no file (read-only, full, gone)."""
    check_textfile_target(target)
    try:
        write_file(target, generate_latest(registry), mode=0o644, keep=False)
    except WriteRefused as e:
        check_textfile_target(target)  # the same words as the first look, when that is what changed
        raise TextfileRefused(str(e)) from None


def textfile_failure(directory: Path, target: Path, error: OSError) -> str:
    """Why the textfile could not be written, in words."""
    if error.errno == errno.ENOENT and directory.is_dir():
        return f"cannot create a file in {directory}: a pseudo-filesystem such as /proc or /sys takes none"
    return f"cannot write {target}: {error.strerror or error}"


MAX_TOKEN_BYTES = 4096


def read_token(path: str) -> str:
    """The scrape token in ``path``: a small regular file, not reached through a link (opened O_NOFOLLOW and
    O_NONBLOCK, so a FIFO cannot hang the start), read to a bound. BadInput in one sentence otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise BadInput(f"--token-file {path}: no such file") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise BadInput(f"--token-file {path} is a symbolic link: give the file itself "
                           f"({os.path.realpath(path)})") from None
        raise BadInput(f"cannot read --token-file {path}: {e.strerror}") from None
    try:
        info = os.fstat(fd)
        mode, size = info.st_mode, info.st_size
        if not stat.S_ISREG(mode):
            raise BadInput(f"--token-file {path} is {_kind(mode)}: give a small regular file holding the token")
        data = os.read(fd, MAX_TOKEN_BYTES + 1) if size <= MAX_TOKEN_BYTES else b""
        if size > MAX_TOKEN_BYTES or len(data) > MAX_TOKEN_BYTES:
            raise BadInput(f"--token-file {path} is over {MAX_TOKEN_BYTES} bytes: a token file holds the token alone")
    except OSError as e:
        raise BadInput(f"cannot read --token-file {path}: {e.strerror}") from None
    finally:
        os.close(fd)
    token = data.decode("ascii", "replace").strip()
    if len(token) < 16 or not (token.isascii() and token.isprintable()) or " " in token:
        raise BadInput(f"--token-file {path}: the token must be at least 16 printable ASCII characters, no spaces")
    return token


def _token(path: str | None, root: str) -> tuple[str, Path]:
    """The scrape token: read from ``path`` when given, else a new one written (0600) under the run dir."""
    if path is not None:
        return read_token(path), Path(path)
    token = new_token()
    run_dir = default_run_dir(root)
    run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    out = run_dir / f"export-{os.getpid()}.token"
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token, out


@contextlib.contextmanager
def _serving(host: str, port: int, app: Callable[..., Any]) -> Iterator[ScrapeServer]:
    try:
        server = ScrapeServer(host, port, app)
    except OSError as e:
        raise IoschedError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    thread = threading.Thread(target=server.serve_forever, name="export-http", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def cmd_export(args: argparse.Namespace) -> int:
    for dev in args.devices:
        check_device_name(dev, args.root)
    state = ExportState(Monitor(root=args.root, capacity=1), args.devices or None, args.root)
    traced = TraceTotals() if args.trace else None
    registry = CollectorRegistry(auto_describe=True)
    registry.register(SnapshotCollector(state.snapshot, traced))
    with _tracing(traced, args.devices or None, args.interval, args.root):
        return _export(args, state, registry)


@contextlib.contextmanager
def _tracing(totals: TraceTotals | None, devices: list[str] | None, interval: float, root: str) -> Iterator[None]:
    """The block tracer feeding ``totals`` while the exporter runs (nothing without ``--trace``)."""
    if totals is None:
        yield
        return
    from iosched.core.trace.tracer import Tracer, TracingFailed, TracingUnavailable

    tracer = Tracer(max(interval, 0.5), devices, root, on_event=totals.add)
    try:
        tracer.start()
        tracer.wait_ready()
    except (TracingUnavailable, TracingFailed) as e:
        tracer.stop()
        raise IoschedError(f"--trace: {e}") from None
    try:
        yield
    finally:
        tracer.stop()


def _export(args: argparse.Namespace, state: ExportState, registry: CollectorRegistry) -> int:
    ticker = Ticker(args.interval)
    if args.textfile:
        return _textfiles(Path(args.textfile), state, ticker, args.count, registry)
    host, port = parse_listen(args.listen)
    if not is_loopback(host) and not args.public:
        raise BadInput(f"{host} is not a loopback address and scrapes travel unencrypted: add --public to listen "
                       "there anyway (the token still guards it)")
    token, token_file = _token(args.token_file, args.root)
    guard = Guard.for_server(host, port, token)
    with _serving(host, port, guarded(make_wsgi_app(registry), guard)):
        shown = f"[{host}]" if ":" in host else host
        print(f"iosched: metrics on http://{shown}:{port}/metrics; scrape with 'Authorization: Bearer <token>', the "
              f"token in {token_file} (Prometheus: authorization: {{credentials_file: {token_file}}}); "
              "ctrl+c stops", file=sys.stderr, flush=True)
        try:
            with contextlib.suppress(KeyboardInterrupt):
                _loop(state, ticker, args.count, lambda: None)
        finally:
            if args.token_file is None:
                token_file.unlink(missing_ok=True)
    return 0


def _textfiles(directory: Path, state: ExportState, ticker: Ticker, count: int | None,
               registry: CollectorRegistry) -> int:
    """The textfile written at once (what is known before the first interval: identity and schedulers), then
    every interval. At the start a directory that takes no file is the argument's fault (exit 2; a full
    filesystem is the machine's, exit 1). Later a failed write (the filesystem filled up or went read-only, a
    link planted at the name) is said once, with its reason, and tried again every interval, and its recovery is
    said too: an exporter is a long-running service, and one that exits on a passing disk-full loses its switch
    counts and needs someone to start it again, while node_exporter already flags a stale textfile by its mtime."""
    if not directory.is_dir():
        raise BadInput(f"--textfile {directory}: not a directory (node_exporter's --collector.textfile.directory)")
    target = directory / TEXTFILE
    try:
        write_textfile(target, registry)
    except TextfileRefused as e:
        raise BadInput(f"--textfile {directory}: {e}") from None
    except OSError as e:
        why = f"--textfile {directory}: {textfile_failure(directory, target, e)}"
        raise (IoschedError(why) if e.errno in (errno.ENOSPC, errno.EDQUOT) else BadInput(why)) from None
    print(f"iosched: writing {target} every {ticker.interval:g} s (ctrl+c stops)", file=sys.stderr, flush=True)
    failing: list[str] = []  # the reason of the last write, when it failed

    def write() -> None:
        try:
            write_textfile(target, registry)
        except (TextfileRefused, OSError) as e:
            why = str(e) if isinstance(e, TextfileRefused) else textfile_failure(directory, target, e)
            if failing != [why]:
                print(f"iosched: warning: {why}; trying again every interval", file=sys.stderr, flush=True)
            failing[:] = [why]
            return
        if failing:
            print(f"iosched: writing {target} again", file=sys.stderr, flush=True)
            failing.clear()

    with contextlib.suppress(KeyboardInterrupt):
        _loop(state, ticker, count, write)
    return 1 if failing else 0


def _loop(state: ExportState, ticker: Ticker, count: int | None, after: Callable[[], object]) -> None:
    n = 0
    while count is None or n < count:
        ticker.next()
        state.step()
        after()
        n += 1
