"""`iosched capture DEV`: record what a device does into a capture (fio's iolog v3 + metadata), and `report` on
one: what kind of workload it holds."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

from iosched.cli.terminal import rewrite_line
from iosched.core.base.errors import BadInput
from iosched.core.base.textcharts import braille_grid, nice_ceiling
from iosched.core.base.units import count, human_size, si
from iosched.core.load.capture_summary import CaptureSummary, summarize
from iosched.core.load.iolog import CaptureDoc, read_capture

CHART_HEIGHT = 4


def cmd_capture(args: argparse.Namespace) -> int:
    if args.cmd is not None:
        return _cmd_capture(args)
    if args.device is None:
        raise BadInput("name a device to capture, or a command with --cmd CMD")
    if args.cold:
        raise BadInput("--cold goes with --cmd: it drops the page cache before the command starts")
    if args.every_disk:
        raise BadInput("--every-disk goes with --cmd: a device's capture is of that device")
    from iosched.core.trace.capture import CaptureProgress, CaptureRun

    out = Path(args.output)
    live = sys.stderr.isatty()
    last = [0.0]

    def progress(p: CaptureProgress) -> None:
        # Figures that change go only to a terminal, rewritten in place; a pipe or a file gets one line when the
        # capture starts (nothing there goes stale) and the counts in the result.
        now = time.monotonic()
        if not live:
            if not last[0]:
                last[0] = now
                print(f"iosched: capturing {args.device} for up to {_clock(args.duration)} (Ctrl-C ends it sooner "
                      "and keeps what was captured)", file=sys.stderr, flush=True)
            return
        if now - last[0] < 0.5:
            return
        last[0] = now
        lost = f", {p.lost} lost" if p.lost else ""
        rewrite_line(sys.stderr, f"capturing {args.device} {_clock(p.elapsed_s)}, {count(p.requests)} requests{lost}")

    run = CaptureRun(args.device, out, args.duration, args.max_size, args.root, progress)
    result = run.run()
    if live:
        print(file=sys.stderr)
    m = result.meta
    if args.json:
        print(json.dumps({"iolog": str(result.iolog), "meta": str(result.meta_file),
                          "cpu_us_per_io": result.cpu_us_per_io, **asdict(m)}, indent=1))
    else:
        cost = f"; capture cost {result.cpu_us_per_io:.1f} µs CPU per request" if result.cpu_us_per_io else ""
        print(f"captured {m.requests} requests ({human_size(m.read_bytes + m.write_bytes)}) on {m.device.name} "
              f"in {m.duration_s:.1f} s, {_ended(m.ended)}{cost}")
        print(f"  {result.iolog}  (fio iolog v3)\n  {result.meta_file}  (metadata)")
        if m.lost:
            print(f"iosched: warning: {m.lost} requests were lost (the reader fell behind the tracer's buffer): "
                  "the capture is missing them", file=sys.stderr)
        print(f"next: iosched report {result.iolog}   or   iosched compare DEV --replay {result.iolog} "
              "--schedulers none,bfq")
    if run.interrupted is not None and not isinstance(run.interrupted, KeyboardInterrupt):
        raise run.interrupted  # SIGTERM/SIGHUP: the files are whole; iosched still ends with the signal's status
    return 0


def _cmd_capture(args: argparse.Namespace) -> int:
    """`capture --cmd CMD`: the command's own IO. Its output goes to stderr: stdout carries iosched's answer."""
    from iosched.core.load.cmd_tree import check_cmd, invoking_user
    from iosched.core.trace.cmd_capture import CmdCaptureRun, default_disk

    device, chosen = args.device, ""
    if args.every_disk and device is not None:
        raise BadInput(f"--every-disk captures every disk, {device} one: give one of them")
    if device is None and not args.every_disk:  # a replay is of one disk: the one its files live on
        if (why := check_cmd(args.cmd)) is not None:
            raise BadInput(why)
        device, chosen = default_disk(args.cmd, os.environ, os.getcwd(), args.root)
    run = CmdCaptureRun(args.cmd, Path(args.output), args.duration, args.max_size, device=device, chosen=chosen,
                        cold=args.cold, run_as=invoking_user(os.environ, os.geteuid()), root=args.root)
    run.check_command()  # what is refused is said alone
    if chosen:
        print(f"iosched: capturing its IO on {device}, {chosen} (another: iosched capture DEV --cmd …; every disk: "
              "--every-disk)", file=sys.stderr)
    sys.stdout.flush()
    try:
        result = run.run()
    except KeyboardInterrupt:
        print("iosched: interrupted: the command was ended with every process it started, and nothing was written",
              file=sys.stderr)
        return 130
    finally:
        if run.left_behind:
            print(f"iosched: warning: a process the command started did not end ({run.left_behind}): `iosched "
                  "restore` ends it", file=sys.stderr)
    m = result.meta
    if args.json:
        print(json.dumps({"iolog": str(result.iolog), "meta": str(result.meta_file),
                          "cpu_us_per_io": result.cpu_us_per_io, **asdict(m)}, indent=1))
        return 0
    print("\n".join(command_lines(m)))
    print(f"  {result.iolog}  (fio iolog v3)\n  {result.meta_file}  (metadata)")
    print(f"next: iosched report {result.iolog}")
    return 0


def command_lines(m: CaptureDoc) -> list[str]:
    """What a command's capture holds, answer first: its IO, then how it compares with what the kernel charged it."""
    c = m.command
    if c is None:
        return []
    where = ", ".join(f"{f.device.name} {human_size(f.read_bytes + f.write_bytes)}" for f in m.files)
    status = "" if c.exit_status == 0 else f", exit status {c.exit_status}"
    out = [f"captured {c.cmd!r}{' cold' if c.cold else ''}: {count(m.requests)} requests, "
           f"{human_size(m.read_bytes)} read, {human_size(m.write_bytes)} written ({where}) in {c.wall_s:.2f} s"
           f"{status}"]
    out.append(f"  reads: {human_size(m.read_bytes)} seen of the {human_size(c.accounted_read_bytes)} the kernel "
               "charged to it")
    if c.accounted_write_bytes or m.write_bytes:
        out.append(f"  writes: {human_size(m.write_bytes)} seen of the {human_size(c.accounted_write_bytes)} it wrote "
                   "or dirtied; the rest reaches the disk later from the kernel's writeback threads, not its lines")
    if m.lost:
        out.append(f"  warning: {m.lost} requests were lost (the reader fell behind the tracer's buffer)")
    if c.exit_status:
        out.append(f"  note: the command exited with status {c.exit_status}: the capture holds the IO it did")
    return out


def _clock(s: float) -> str:
    s = int(s)
    return f"{s // 3600:d}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"


def _ended(why: str) -> str:
    return {"duration": "its duration reached", "interrupted": "ended early (what was captured is kept)",
            "max-size": "stopped at --max-size", "command": "the command's whole run",
            "stopped": "stopped by a signal (what was captured is kept)"}.get(why, why)


def capture_report(path: str, args: argparse.Namespace) -> None:
    capture = read_capture(path)
    summary = summarize(capture)
    m = capture.meta
    if args.json:
        print(json.dumps({"meta": asdict(m), "summary": summary.to_json()}, indent=1))
        return
    if args.csv:
        s = m.series
        print("t_s,iops,mb_s,depth")
        for i, (iops, mbs, depth) in enumerate(zip(s.iops, s.mb_s, s.depth, strict=True)):
            print(f"{i * s.interval_s:g},{iops:g},{mbs:g},{depth:g}")
        return
    sys.stdout.write("\n".join(report_lines(m, summary, capture.iolog.name)) + "\n")


def report_lines(m: CaptureDoc, s: CaptureSummary, name: str, width: int = 60) -> list[str]:
    dev = m.device
    rate = m.requests / m.duration_s if m.duration_s else 0.0
    out = [f"capture {name}: {dev.name} ({human_size(dev.size_bytes)}, "
           f"{'rotational' if dev.rotational else 'non-rotational'}), scheduler {m.scheduler or 'none'}, "
           f"kernel {m.kernel}",
           f"  started {m.started}, {m.duration_s:.1f} s, {_ended(m.ended)}",
           f"  {m.requests} requests ({si(rate)}/s), {human_size(m.read_bytes + m.write_bytes)} moved"
           + (f"; {m.lost} lost" if m.lost else "")]
    c = m.command
    if c is not None:
        out.insert(1, f"  command {c.cmd!r}{', cold' if c.cold else ''}, as uid {c.uid}: {c.wall_s:.2f} s, "
                      f"exit status {c.exit_status}")
        out += command_lines(m)[1:]
        if m.devices is not None and len(m.devices) > 1:
            out.append("  devices, laid end to end on a replay's one target: " + ", ".join(
                f"{f.device.name} at {human_size(f.base)}" for f in m.devices))
    out += ["", "IO mix:"]
    for a, label in (("read", "reads"), ("write", "writes"), ("trim", "discards"), ("sync", "flushes")):
        n = s.counts[a]
        if n:
            size = f", {human_size(s.nbytes[a])}, mean {human_size(s.nbytes[a] / n)}" if a != "sync" else ""
            out.append(f"  {label:<9}{n:>10}  {s.share(a):>6.1%}{size}")
    rw = s.counts["read"] + s.counts["write"]
    if rw:
        out.append(f"  read/write: {s.counts['read'] / rw:.0%} / {s.counts['write'] / rw:.0%} of requests; "
                   f"sequential: {s.sequential_share('read'):.0%} of reads, {s.sequential_share('write'):.0%} "
                   "of writes")
    out += ["", "request sizes:"]
    for a in ("read", "write", "trim"):
        h = s.sizes[a]
        if not h:
            continue
        top = max(h.values())
        for k in sorted(h):
            bar = "█" * max(1, round(h[k] / top * 30))
            out.append(f"  {a:<5} {human_size(1 << k):>7}  {h[k]:>9}  {bar}")
    depth = ("the command's requests submitted and not completed, at each submission" if m.command is not None
             else "requests begun and not completed, at each issue")
    out += ["", f"queue depth: median {m.depth_p50}, 95th percentile {m.depth_p95}, max {m.depth_max} ({depth})"]
    series = m.series
    for label, values in (("requests/s", series.iops), ("depth", series.depth)):
        per = _per_dot(len(values), width)
        out += ["", f"{label} over {m.duration_s:.0f} s (each dot the mean of {series.interval_s * per:.3g} s, "
                "left to right):"]
        out += _chart(values, width)
    what = _kind_words(m, s)
    if what:
        out += ["", what]
    return out


def _per_dot(n: int, width: int) -> int:
    """Points averaged into one dot: two dots a cell, at most ``width`` cells."""
    cells = max(1, min(width, (n + 1) // 2))
    return max(1, -(-n // (2 * cells)))


def _chart(values: list[float], width: int) -> list[str]:
    if not values:
        return ["  (no data)"]
    per = _per_dot(len(values), width)
    pts = [sum(values[i:i + per]) / len(values[i:i + per]) for i in range(0, len(values), per)]
    top = nice_ceiling(max(pts) or 1.0)
    rows = braille_grid([pts], (len(pts) + 1) // 2, CHART_HEIGHT, top)
    lines = ["".join(chr(0x2800 + bits) for bits, _ in row) for row in rows]
    return [f"  {si(top) if i == 0 else '':>6} ┤{line}" for i, line in enumerate(lines)] + \
        [f"  {'0':>6} └{'─' * len(lines[0])}"]


def _kind_words(m: CaptureDoc, s: CaptureSummary) -> str:
    """One sentence on what kind of workload it was: what decides which scheduler can help."""
    rw = s.counts["read"] + s.counts["write"]
    if not rw:
        return ""
    reads = s.counts["read"] / rw
    mix = "read-mostly" if reads >= 0.8 else "write-mostly" if reads <= 0.2 else "mixed read/write"
    seq = s.sequential_share()
    pattern = "sequential" if seq >= 0.6 else "random" if seq <= 0.2 else "partly sequential"
    depth = "deep" if m.depth_p95 >= 16 else "shallow" if m.depth_p95 <= 2 else "moderate"
    return (f"kind: {mix}, {pattern}, {depth} queue (p95 depth {m.depth_p95}). "
            "Replay it under each scheduler: iosched compare DEV --replay FILE --schedulers none,mq-deadline,bfq")
