"""`iosched record`, `iosched replay`, and `iosched report` of a recording."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from iosched.cli.numbers import number
from iosched.cli.watch import rates_to_json
from iosched.core.base.errors import BadInput
from iosched.core.kernel.sysfs import check_device_name
from iosched.core.live.rates import SYSSTAT_DISK_KEYS
from iosched.core.live.recording import read_header, record, scan
from iosched.core.live.sampler import Rates, Sample, compute_rates

SYSSTAT_CSV_KEYS = tuple(SYSSTAT_DISK_KEYS.values())


def add_arguments(sub: argparse._SubParsersAction, interval_type) -> None:
    s = sub.add_parser("record", help="sample headless into a file (replay it later in the TUI)")
    s.add_argument("file")
    s.add_argument("devices", nargs="*", metavar="DEV", help="only these devices (default: every whole disk)")
    s.add_argument("-i", "--interval", type=interval_type, default=1.0, help="seconds (default 1)")
    s.add_argument("--duration", type=number(0, 366 * 86400, lo_open=True),
                   help="stop after this many seconds (default: until Ctrl-C)")
    s.set_defaults(func=cmd_record)

    s = sub.add_parser("replay", help="open a recording in the TUI, time-scrubbable")
    s.add_argument("file")
    s.set_defaults(func=cmd_replay)


def cmd_record(args: argparse.Namespace) -> int:
    for dev in args.devices:
        check_device_name(dev, args.root)
    if args.duration is not None and args.duration <= 0:
        raise BadInput("--duration must be positive")
    what = ", ".join(args.devices) or "every whole disk"
    print(f"recording {what} every {args.interval:g} s to {args.file}; Ctrl-C stops", file=sys.stderr)
    try:
        n = record(args.file, args.devices or None, args.interval, args.duration, args.root)
        print(f"{n} samples recorded", file=sys.stderr)
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from iosched.tui.launch import TuiOptions, run_replay  # opens the TUI: loaded only here

    read_header(args.file)  # not a recording: one sentence before any screen opens
    # The TUI opens at once and reads the recording in a worker, showing how far it got; q quits meanwhile.
    return run_replay(TuiOptions(args.root, theme=args.theme), Path(args.file))


def recording_report(path: str, args: argparse.Namespace) -> None:
    """One streaming pass: JSON and CSV lines are written as the samples come, the summary keeps a row per
    device; the setting changes are read in a second pass that parses only their lines."""
    header = read_header(path)
    devices = header.devices
    start = datetime.fromtimestamp(header.start_wall).astimezone()
    first: list[Sample] = []
    prev: list[Sample] = []

    def each_interval(emit: Callable[[Rates, datetime], None]) -> Callable[[Sample], None]:
        def on_sample(s: Sample) -> None:
            if not first:
                first.append(s)
            else:
                emit(compute_rates(prev[0], s), start + timedelta(seconds=s.time - first[0].time))
            prev[:] = [s]
        return on_sample

    if args.json:
        def emit_json(rates: Rates, wall: datetime) -> None:
            print(json.dumps(rates_to_json(rates, wall, devices)))

        scan(path, on_sample=each_interval(emit_json))
        return
    if args.csv:
        w = csv.writer(sys.stdout)
        w.writerow(["time", "interval", "device", *SYSSTAT_CSV_KEYS])

        def emit_csv(rates: Rates, wall: datetime) -> None:
            for name in sorted(rates.disks) if devices is None else [d for d in devices if d in rates.disks]:
                s = rates.disks[name].sysstat()
                w.writerow([wall.isoformat(timespec="milliseconds"), f"{rates.interval:.4f}", name,
                            *(s[k] for k in SYSSTAT_CSV_KEYS)])

        scan(path, on_sample=each_interval(emit_csv))
        return
    totals: dict[str, list[float]] = {}

    def add(rates: Rates, _wall: datetime) -> None:
        for name, d in rates.disks.items():
            t = totals.setdefault(name, [0.0, 0.0, 0.0, 0.0])
            t[0] += (d.r_s + d.w_s) * rates.interval
            t[1] += (d.rkB_s + d.wkB_s) * rates.interval
            t[2] = max(t[2], d.r_s + d.w_s)
            t[3] = max(t[3], d.util)

    rec = scan(path, on_sample=each_interval(add))
    print(f"recording from {header.host} (kernel {header.kernel}), "
          f"{rec.count} samples every {header.interval:g} s over {rec.span:.1f} s"
          f"{'; the last line was cut off (crash?) and is ignored' if rec.truncated else ''}")
    print(f"{'device':<10} {'IOs':>12} {'MB':>10} {'peak IOPS':>10} {'peak %util':>10}")
    for name, (ios, kb, peak, util) in sorted(totals.items()):
        if ios:
            print(f"{name:<10} {ios:>12.0f} {kb / 1024:>10.1f} {peak:>10.0f} {util:>10.0f}")
    for e in rec.iter_events():
        at = datetime.fromtimestamp(header.start_wall + e.time).astimezone()
        print(f"{at:%H:%M:%S} +{e.time:7.1f}s  {e.device} {e.name}: {e.old} -> {e.new}")
