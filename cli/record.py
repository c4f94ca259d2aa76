"""`iosched record`, `iosched replay`, and `iosched report` of a recording."""

from __future__ import annotations

import argparse
import csv
import io
import sys
from datetime import datetime, timedelta

from iosched.cli.numbers import number
from iosched.cli.watch import rates_to_json
from iosched.core.base.errors import BadInput
from iosched.core.kernel.sysfs import check_device_name
from iosched.core.live.rates import SYSSTAT_DISK_KEYS
from iosched.core.live.recording import Recording, load, record

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
    from pathlib import Path

    from iosched.tui.launch import TuiOptions, run_replay  # opens the TUI: loaded only here

    rec = load(args.file)
    if len(rec.samples) < 2:
        raise BadInput(f"{args.file} holds fewer than two samples: nothing to replay")
    return run_replay(TuiOptions(args.root, theme=args.theme), rec, Path(args.file).name)


def _walls(rec: Recording) -> list[datetime]:
    start = datetime.fromtimestamp(rec.header["start_wall"]).astimezone()
    t0 = rec.samples[0].time if rec.samples else 0.0
    return [start + timedelta(seconds=s.time - t0) for s in rec.samples[1:]]


def recording_report(rec: Recording, args: argparse.Namespace) -> None:
    devices = rec.header.get("devices")
    walls = _walls(rec)
    if args.json:
        import json

        for rates, wall in zip(rec.rates(), walls):
            print(json.dumps(rates_to_json(rates, wall, devices)))
        return
    if args.csv:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["time", "interval", "device", *SYSSTAT_CSV_KEYS])
        for rates, wall in zip(rec.rates(), walls):
            for name in sorted(rates.disks) if devices is None else [d for d in devices if d in rates.disks]:
                s = rates.disks[name].sysstat()
                w.writerow([wall.isoformat(timespec="milliseconds"), f"{rates.interval:.4f}", name,
                            *(s[k] for k in SYSSTAT_CSV_KEYS)])
        sys.stdout.write(buf.getvalue())
        return
    span = rec.samples[-1].time - rec.samples[0].time if len(rec.samples) > 1 else 0.0
    print(f"recording from {rec.header.get('host')} (kernel {rec.header.get('kernel')}), "
          f"{len(rec.samples)} samples every {rec.header['interval']:g} s over {span:.1f} s"
          f"{'; the last line was cut off (crash?) and is ignored' if rec.truncated else ''}")
    totals: dict[str, list[float]] = {}
    for rates in rec.rates():
        for name, d in rates.disks.items():
            t = totals.setdefault(name, [0.0, 0.0, 0.0, 0.0])
            t[0] += (d.r_s + d.w_s) * rates.interval
            t[1] += (d.rkB_s + d.wkB_s) * rates.interval
            t[2] = max(t[2], d.r_s + d.w_s)
            t[3] = max(t[3], d.util)
    print(f"{'device':<10} {'IOs':>12} {'MB':>10} {'peak IOPS':>10} {'peak %util':>10}")
    for name, (ios, kb, peak, util) in sorted(totals.items()):
        if ios:
            print(f"{name:<10} {ios:>12.0f} {kb / 1024:>10.1f} {peak:>10.0f} {util:>10.0f}")
    for e in rec.events:
        at = datetime.fromtimestamp(rec.header["start_wall"] + e.time).astimezone()
        print(f"{at:%H:%M:%S} +{e.time:7.1f}s  {e.device} {e.name}: {e.old} -> {e.new}")
