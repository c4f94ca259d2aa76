"""`iosched latency` (block-layer latency histograms per interval) and `iosched top` (IO per process)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, TextIO

from iosched.cli.numbers import number
from iosched.core.base.errors import BadInput, DeviceGone
from iosched.core.kernel.sysfs import check_device_name, device_identity, gone_reason

if TYPE_CHECKING:
    # The tracer and its parser load when `latency` or `top` runs: every `iosched` start parses these
    # arguments, the TUI's included, and would pay for them otherwise.
    from iosched.core.trace.parse import DeviceLatency, OpLatency, TraceSample
    from iosched.core.trace.tracer import Tracer


# What traces, said where a user looks first (`latency --help`): the first choice, then the fallback.
TRACING_WORDS = ("Block-layer tracing (root): iosched's CO-RE BPF program (iosched-blktrace, built at install "
                 "against this kernel's BTF), else bpftrace where it cannot run (not built, no BTF, kernel older "
                 "than 5.11), said on stderr with why. Each interval names the tracer and its cost: µs of CPU per "
                 "IO for the CO-RE program, bpftrace's share of a CPU.")


def add_arguments(sub: argparse._SubParsersAction, interval_type: Callable[[str], float]) -> None:
    s = sub.add_parser("latency", help="time in the IO scheduler vs device time, per interval (block-layer "
                                       "tracing)", description=TRACING_WORDS)
    s.add_argument("devices", nargs="*", metavar="DEV", help="only these devices (default: every device with IO)")
    s.add_argument("-i", "--interval", type=interval_type, default=1.0, help="seconds (default 1)")
    s.add_argument("-c", "--count", type=number(1, 10**9, integer=True), default=None, help="stop after N intervals")
    s.add_argument("--json", action="store_true", help="one JSON object per interval and line")
    s.set_defaults(func=cmd_latency)

    s = sub.add_parser("top", help="IO per process (block-layer tracing, else /proc/PID/io)",
                       description=TRACING_WORDS + " Without it (not root, no tracer, --no-trace): bytes per "
                                                   "process from /proc/PID/io, every device together.")
    s.add_argument("device", nargs="?", metavar="DEV", help="only IO to this device (needs tracing)")
    s.add_argument("-i", "--interval", type=interval_type, default=1.0, help="seconds (default 1)")
    s.add_argument("-c", "--count", type=number(1, 10**9, integer=True), default=None, help="stop after N intervals")
    s.add_argument("-n", "--lines", type=number(1, 10_000, integer=True), default=15,
                   help="processes shown per interval (default 15)")
    s.add_argument("--json", action="store_true", help="one JSON object per interval and line")
    s.add_argument("--no-trace", action="store_true", help="use /proc/PID/io even when tracing is available")
    s.set_defaults(func=cmd_top)


def _check_count(count: int | None) -> None:
    if count is not None and count < 1:
        raise BadInput("--count must be at least 1")


def _us(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.0f}" if v >= 10 else f"{v:.1f}"


LAT_HEADER = (f"{'DEVICE':<10} {'OP':<8} {'IO/s':>9} {'MB/s':>8}  {'sched p50':>9} {'p99':>7}  "
              f"{'device p50':>10} {'p99':>7}  {'total p50':>9} {'p99':>7} {'mean':>7}  (µs)")


def _lat_row(name: str, op: str, x: DeviceLatency | OpLatency, dt: float) -> str:
    from iosched.core.trace.parse import NO_DATA_OPS

    mean = x.total_ns / x.total.total / 1e3 if x.total.total else None
    # Discards and flushes move no data: no MB/s of their own, and none in the device's "all" row.
    mb_s = "-" if op in NO_DATA_OPS else f"{x.bytes / dt / 1e6:.2f}"
    return (f"{name:<10} {op:<8} {x.ios / dt:9.0f} {mb_s:>8}  "
            f"{_us(x.sched.percentile(0.5)):>9} {_us(x.sched.percentile(0.99)):>7}  "
            f"{_us(x.device.percentile(0.5)):>10} {_us(x.device.percentile(0.99)):>7}  "
            f"{_us(x.total.percentile(0.5)):>9} {_us(x.total.percentile(0.99)):>7} {_us(mean):>7}")


def latency_text(sample: TraceSample, wall: datetime, devices: list[str] | None,
                 gone: Mapping[str, str] | None = None) -> str:
    """One interval; a named device in ``gone`` (name -> why) is said to be gone rather than idle."""
    cpu = f"  {sample.cost_text()}"
    dropped = f"  {sample.dropped_requests} requests untimed" if sample.dropped_requests else ""
    lines = [f"{wall:%H:%M:%S}  interval {sample.interval:.2f}s{cpu}{dropped}", LAT_HEADER]
    names = devices if devices else sorted(sample.devices)
    for n in names:
        d = sample.devices.get(n)
        if d is None and gone and n in gone:
            lines.append(f"{n:<10} gone ({gone[n]})")
            continue
        if d is None:
            lines.append(f"{n:<10} {'all':<8} {0:9.0f} {0:8.2f}  (no IO completed)")
            continue
        lines.append(_lat_row(n, "all", d, sample.interval))
        if len(d.ops) > 1:
            lines.extend(_lat_row("", op, o, sample.interval) for op, o in d.ops.items())
    return "\n".join(lines) + "\n"


def latency_json(sample: TraceSample, wall: datetime, devices: list[str] | None,
                 gone: Mapping[str, str] | None = None) -> dict:
    obj = sample.to_json(0.0, set(devices) if devices else None)
    obj["time"] = wall.isoformat(timespec="seconds")
    if gone:
        obj["gone"] = dict(gone)
    return obj


def _start_tracer(interval: float, devices: list[str] | None, root: str) -> Tracer:
    from iosched.core.trace.tracer import Tracer

    tracer = Tracer(interval=interval, devices=devices, root=root)
    tracer.start()
    tracer.wait_ready()
    if tracer.fallback:  # said once: each interval's header names the tracer that runs
        print(f"iosched: tracing with bpftrace, since {tracer.fallback}", file=sys.stderr, flush=True)
    return tracer


def _events(tracer: Tracer, count: int | None):
    """Samples until ``count``; a tracer that dies ends the stream with TracingFailed."""
    from iosched.core.trace.tracer import TracerStopped, TracingFailed

    k = 0
    while count is None or k < count:
        ev = tracer.get(timeout=max(tracer.interval * 3, 5.0))
        if ev is None:
            if not tracer.running:
                raise TracingFailed(tracer.error or "bpftrace stopped")
            continue
        if isinstance(ev, TracerStopped):
            raise TracingFailed(ev.reason or "tracing stopped")
        k += 1
        yield ev


class Presence:
    """The named devices that are gone (detached, removed, or another device under the name), each said once."""

    def __init__(self, devices: list[str], root: str) -> None:
        self.root = root
        self.was = {d: device_identity(d, root) for d in devices}
        self.gone: dict[str, str] = {}

    def look(self) -> None:
        for d, was in self.was.items():
            if d not in self.gone and (why := gone_reason(d, was, self.root)):
                self.gone[d] = why
                print(f"iosched: {d} is gone ({why})", file=sys.stderr, flush=True)

    @property
    def all_gone(self) -> bool:
        return bool(self.was) and len(self.gone) == len(self.was)


def cmd_latency(args: argparse.Namespace) -> int:
    for dev in args.devices:
        check_device_name(dev, args.root)
    _check_count(args.count)
    devices = list(dict.fromkeys(args.devices)) or None  # a name given twice is one device
    presence = Presence(devices or [], args.root)
    presence.look()
    if presence.all_gone:
        raise DeviceGone("every device named is gone: nothing to trace")
    tracer = _start_tracer(args.interval, devices, args.root)
    out: TextIO = sys.stdout
    try:
        for sample in _events(tracer, args.count):
            wall = datetime.now().astimezone()
            presence.look()
            if args.json:
                out.write(json.dumps(latency_json(sample, wall, devices, presence.gone)) + "\n")
            else:
                out.write(latency_text(sample, wall, devices, presence.gone) + "\n")
            out.flush()
            if presence.all_gone:  # nothing named is left to trace: say so rather than print empty intervals
                print("iosched: every device named is gone: stopped", file=sys.stderr)
                return 1
    finally:
        tracer.stop()
    return 0


TOP_TRACE_HEADER = f"{'DEVICE':<10} {'PID':>7} {'COMMAND':<16} {'IO/s':>9} {'MB/s':>8} {'p99 µs':>8}"
TOP_PROC_HEADER = f"{'PID':>7} {'COMMAND':<16} {'read MB/s':>10} {'write MB/s':>10}"


def _top_traced(args: argparse.Namespace, tracer: Tracer, out: TextIO) -> None:
    for sample in _events(tracer, args.count):
        wall = datetime.now().astimezone()
        procs = [p for p in sample.processes if args.device is None or p.device == args.device][: args.lines]
        if args.json:
            out.write(json.dumps({"time": wall.isoformat(timespec="seconds"), "interval": round(sample.interval, 4),
                                  "source": "trace", "tracer": sample.tracer, "tracer_cpu": sample.tracer_cpu,
                                  "tracer_us_per_io": sample.cost_us_per_io,
                                  "processes": [p.to_json(sample.interval) for p in procs]}) + "\n")
        else:
            lines = [f"{wall:%H:%M:%S}  interval {sample.interval:.2f}s  block-layer IO per process", TOP_TRACE_HEADER]
            for p in procs:
                lines.append(f"{p.device:<10} {p.pid:>7} {p.comm[:16]:<16} {p.ios / sample.interval:9.0f} "
                             f"{p.bytes / sample.interval / 1e6:8.2f} {_us(p.total.percentile(0.99)):>8}")
            out.write("\n".join(lines) + "\n\n")
        out.flush()


def _top_procfs(args: argparse.Namespace, out: TextIO, count: int | None) -> None:
    from iosched.core.kernel.procio import process_rates, read_process_io

    prev, t_prev = read_process_io(), time.monotonic()
    start = t_prev
    k = 0
    while count is None or k < count:
        k += 1
        delay = start + k * args.interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        cur, t = read_process_io(), time.monotonic()
        rates = process_rates(prev, cur, t - t_prev, args.lines)
        prev, t_prev = cur, t
        wall = datetime.now().astimezone()
        if args.json:
            out.write(json.dumps({"time": wall.isoformat(timespec="seconds"), "interval": round(t - start, 4)
                                  if k == 1 else round(args.interval, 4), "source": "procfs", "system_wide": True,
                                  "processes": [r.to_json() for r in rates]}) + "\n")
        else:
            lines = [f"{wall:%H:%M:%S}  system-wide bytes per process (/proc/PID/io)", TOP_PROC_HEADER]
            lines += [f"{r.pid:>7} {r.comm[:16]:<16} {r.read_bytes_s / 1e6:10.2f} {r.write_bytes_s / 1e6:10.2f}"
                      for r in rates]
            out.write("\n".join(lines) + "\n\n")
        out.flush()


def cmd_top(args: argparse.Namespace) -> int:
    if args.device is not None:
        check_device_name(args.device, args.root)
    _check_count(args.count)
    if args.lines < 1:
        raise BadInput("--lines must be at least 1")
    out: TextIO = sys.stdout
    if not args.no_trace:
        from iosched.core.trace.tracer import TracingFailed, TracingUnavailable

        try:
            tracer = _start_tracer(args.interval, [args.device] if args.device else None, args.root)
        except (TracingUnavailable, TracingFailed) as e:
            print(f"iosched: {e}; showing system-wide IO per process from /proc/PID/io instead", file=sys.stderr)
        else:
            try:
                _top_traced(args, tracer, out)
                return 0
            finally:
                tracer.stop()
    elif args.device is not None:
        print("iosched: without tracing IO per process is system-wide, not per device", file=sys.stderr)
    _top_procfs(args, out, args.count)
    return 0
