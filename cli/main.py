"""The `iosched` command: argument parsing, one-sentence errors, exit codes (0 ok, 1 failure, 2 bad input)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from iosched import __version__
from iosched.cli import terminal
from iosched.cli.advise_args import add_arguments as add_advise_arguments
from iosched.cli.latency import add_arguments as add_latency_arguments
from iosched.cli.leftovers import sweep
from iosched.cli.numbers import OneSentenceParser, lazy_command, number
from iosched.cli.record import add_arguments as add_record_arguments
from iosched.cli.serve import add_arguments as add_serve_arguments
from iosched.cli.settings import add_arguments as add_settings_arguments
from iosched.cli.workload_args import add_arguments as add_workload_arguments
from iosched.cli.workload_args import parse_size
from iosched.core.base.errors import BadInput, IoschedError, UnknownDevice
from iosched.core.base.terminal_text import printable
from iosched.core.kernel.devices import list_devices
from iosched.core.kernel.sysfs import check_device_name
from iosched.core.live.monitor import MAX_INTERVAL, MIN_INTERVAL, REFRESH_STEPS
from iosched.core.settings.journal import Journal, default_run_dir
from iosched.core.settings.restore_report import restore_failed, restore_lines
from iosched.core.settings.scheduler import switch_scheduler
from iosched.core.settings.writes import restore
from iosched.themes import THEME_NAMES


def cmd_list(args: argparse.Namespace) -> int:
    devices = list_devices(args.root, include_empty=args.all)
    if args.json:
        print(json.dumps([asdict(d) for d in devices], indent=1))
        return 0
    from iosched.cli.devtable import table_lines

    # A terminal gets what fits its width (COLUMNS first, as shutil reads it); a pipe or a file whole lines.
    tty = sys.stdout.isatty()
    lines = table_lines(devices, shutil.get_terminal_size().columns if tty else None)
    if tty and not os.environ.get("NO_COLOR"):
        terminal.control(sys.stdout, "\x1b[1m")
        sys.stdout.write(lines.pop(0))
        terminal.control(sys.stdout, "\x1b[0m\n")
    if lines:
        print("\n".join(lines))
    return 0


def cmd_set(args: argparse.Namespace) -> int:
    r = switch_scheduler(args.device, args.scheduler, root=args.root, load=args.load_module)
    if r.old == r.new:
        print(f"{r.device}: already {r.new}")
    else:
        print(f"{r.device}: {r.old} -> {r.new} in {r.seconds * 1000:.1f} ms")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    devices = set(args.devices) or None
    for dev in args.devices:  # a device gone since it was changed is still named by the journal: that one may be
        try:
            check_device_name(dev, args.root)
        except UnknownDevice:
            if dev not in {e.device for e in Journal(default_run_dir(args.root)).entries().values()}:
                raise
    # What dead runs left first: a run's device put back as it found it takes its own journal entries along.
    swept = sweep(args.root, args.dry_run, devices=devices)
    outcomes = restore(args.root, dry_run=args.dry_run, devices=devices)
    lines = [] if not outcomes and (swept.lines or swept.kept) else restore_lines(outcomes)
    # What a run that may still be going holds is said last, after the settings: left to it, with why.
    for line in [*swept.lines, *lines, *(k.line() for k in swept.kept)]:
        print(line)
    return 1 if swept.stuck or restore_failed(outcomes) else 0


_positive_interval = number(MIN_INTERVAL, MAX_INTERVAL)


def cmd_watch(args: argparse.Namespace) -> int:
    from iosched.cli.watch import watch

    for dev in args.devices:
        check_device_name(dev, args.root)
    defaults = [d.name for d in list_devices(args.root)]
    try:
        watch(sys.stdout, args.interval, args.devices or None, args.json, args.count, args.root, defaults)
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:
        # `iosched watch | head`: the reader left; leave quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from iosched.core.settings import sandbox

    sandbox.check_root()
    from iosched.tui.launch import TuiOptions, run_app

    if not sys.stdout.isatty():
        raise IoschedError("iosched demo opens the TUI and needs a terminal")
    sb = sandbox.create(args.size, args.dir, args.root)
    try:
        return run_app(TuiOptions(args.root, args.tui_interval, args.theme, focus=sb.device, sandbox=sb.device,
                                  cleanups=(lambda: sandbox.destroy(sb, args.root),)))
    finally:
        sandbox.destroy(sb, args.root)
        print(f"sandbox {sb.device} detached and {sb.file} deleted")


def cmd_tui(args: argparse.Namespace) -> int:
    from iosched.tui.launch import TuiOptions, has_terminal, run_app  # the only place Textual is loaded: lazily

    if not has_terminal():
        # The README's install line ends with `iosched`: piped or in a script, a good install ends well and says
        # how to open the screen.
        print(f"iosched {__version__} is installed; its live screen needs a terminal: run `iosched` in one "
              "(`iosched list` and `iosched watch` print into a pipe)")
        return 0
    return run_app(TuiOptions(args.root, args.tui_interval, args.theme, read_only=args.read_only,
                              served=args.served))


class _PrintGenerated(argparse.Action):
    """`--print-man` and `--print-completion SHELL`: print what cli/shell_files.py generates from this parser and
    exit, as `--version` does. The generators (argparse-manpage, shtab) load here only."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from iosched.cli import shell_files

        terminal.unwrapped(sys.stdout)  # roff and shell code, never broken at a terminal's width
        text = (shell_files.man_page(parser) if option_string == "--print-man"
                else shell_files.completion_script(parser, values))
        sys.stdout.write(text if text.endswith("\n") else text + "\n")  # a failed write: terminal.finished
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = OneSentenceParser(prog="iosched", description="See, switch and compare Linux IO schedulers.")
    p.add_argument("--root", default="/", help=argparse.SUPPRESS)  # fixture trees in tests
    p.add_argument("--theme", choices=THEME_NAMES, help="TUI theme (default dark; mono when NO_COLOR is set)")
    p.add_argument("-i", "--interval", type=number(REFRESH_STEPS[0], REFRESH_STEPS[-1]), default=1.0,
                   dest="tui_interval", help="TUI refresh in seconds, the nearest of "
                   f"{', '.join(f'{x:g}' for x in REFRESH_STEPS[:-1])} and {REFRESH_STEPS[-1]:g} (default 1)")
    p.add_argument("--read-only", action="store_true",
                   help="TUI that only watches: no switching, jobs or tuning; runs beside another iosched")
    p.add_argument("--served", action="store_true", help=argparse.SUPPRESS)  # set by `iosched serve`
    p.add_argument("--version", action="version", version=f"iosched {__version__}")
    # Where a Debian user puts what they print (docs/install.md says it): the man page in
    # /usr/local/share/man/man1/iosched.1, bash's in /usr/local/share/bash-completion/completions/iosched.
    p.add_argument("--print-completion", choices=("bash", "zsh"), action=_PrintGenerated,
                   help="print the bash or zsh completion script and exit")
    p.add_argument("--print-man", nargs=0, action=_PrintGenerated, help="print the man page (roff) and exit")
    p.set_defaults(func=cmd_tui, json=False, all=False)
    sub = p.add_subparsers(title="commands", dest="command", metavar="COMMAND")

    s = sub.add_parser("list", help="list block devices with their schedulers")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--all", action="store_true", help="include devices of size 0 (unattached loop, zram)")
    s.set_defaults(func=cmd_list)

    s = sub.add_parser("set", help="switch a device's IO scheduler")
    s.add_argument("device", help="whole-disk name, e.g. sda or nvme0n1")
    s.add_argument("scheduler", help="one of the device's available schedulers (any the kernel lists)")
    s.add_argument("--load-module", action="store_true",
                   help="a scheduler the kernel has not loaded: load its installed module first (modprobe)")
    s.set_defaults(func=cmd_set)

    s = sub.add_parser("restore", help="put back every scheduler and setting iosched changed")
    s.add_argument("devices", nargs="*", metavar="DEV", help="only these devices (default: every device)")
    s.add_argument("--dry-run", "--list", dest="dry_run", action="store_true", help="show, change nothing")
    s.set_defaults(func=cmd_restore)

    s = sub.add_parser("watch", help="iostat-like live figures")
    s.add_argument("devices", nargs="*", metavar="DEV")
    s.add_argument("-i", "--interval", type=_positive_interval, default=1.0, help="seconds (default 1)")
    s.add_argument("-c", "--count", type=number(1, 10**9, integer=True), default=None,
                   help="stop after N intervals")
    s.add_argument("--json", action="store_true", help="one JSON object per interval and line")
    s.set_defaults(func=cmd_watch)

    s = sub.add_parser("demo", help="a safe sandbox: a loop device over a sparse file, opened in the TUI")
    s.add_argument("--size", type=parse_size, default="2G",
                   help="size of the sparse file (default 2G; takes no space until written)")
    s.add_argument("--dir", help="where to put the file (default /var/tmp)")
    s.set_defaults(func=cmd_demo)

    s = sub.add_parser("export", help="metrics for Prometheus: schedulers, iostat rates, switches (read-only)")
    s.add_argument("devices", nargs="*", metavar="DEV", help="the devices to export (default: every whole disk)")
    s.add_argument("--listen", default="127.0.0.1:9477", metavar="HOST:PORT",
                   help="where to serve /metrics (default 127.0.0.1:9477; another address needs --public)")
    s.add_argument("--public", action="store_true", help="allow a --listen address that is not loopback")
    s.add_argument("--token-file", metavar="FILE",
                   help="the scrape token (Authorization: Bearer) from FILE; default: a new one, written under "
                        "/run/iosched and named at start")
    s.add_argument("--textfile", metavar="DIR",
                   help="write DIR/iosched.prom for node_exporter's textfile collector instead of serving")
    s.add_argument("--trace", action="store_true",
                   help="add time in the scheduler and device time as histograms (block-layer tracing; root)")
    s.add_argument("-i", "--interval", type=_positive_interval, default=1.0, help="seconds per sample (default 1)")
    s.add_argument("-c", "--count", type=number(1, 10**9, integer=True), default=None, help=argparse.SUPPRESS)
    s.set_defaults(func=lazy_command("iosched.cli.export", "cmd_export"))

    add_workload_arguments(sub)
    add_advise_arguments(sub)
    add_record_arguments(sub, _positive_interval)
    add_settings_arguments(sub)
    add_serve_arguments(sub)
    add_latency_arguments(sub, _positive_interval)

    # No help: the controller of `compare --hosts` runs it over SSH, not a person (it stays out of --help).
    s = sub.add_parser("fleet-host", description="The host end of `compare --hosts`, run by its controller over SSH.")
    s.add_argument("device")
    s.add_argument("--schedulers", required=True)
    s.add_argument("--job", required=True)
    s.add_argument("--session", required=True)
    # A controller whose machine vanished sends no end of input (sshd may not notice for hours): after this long
    # without a line, the host puts its device back by itself. The controller sets it from the run's timeout.
    s.add_argument("--idle-s", type=number(10, 86400), default=3600.0)
    s.set_defaults(func=lazy_command("iosched.cli.fleet_host", "cmd_fleet_host"))
    return p


def main(argv: Sequence[str] | None = None) -> int:
    # A dropped SSH session must not leave us spinning: exit on SIGHUP like on SIGTERM.
    # SIGTERM unwinds the same way, so a running experiment kills fio, restores and removes its scratch files.
    # Under nohup SIGHUP is ignored on purpose (a recording that outlives the SSH session): keep it so.
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, lambda *_: sys.exit(129))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with terminal.installed():  # every write sanitised; a failed one a sentence (cli/terminal.py)
        return terminal.finished(lambda: run(build_parser().parse_args(argv)))


def run(args: argparse.Namespace) -> int:
    """Carry out parsed arguments; core errors become one sentence on stderr and an exit code."""
    if getattr(args, "json", False) or getattr(args, "csv", False) or getattr(args, "markdown", None) == "-":
        terminal.unwrapped(sys.stdout)  # data for a program, even when a person pipes nothing
    try:
        return args.func(args)
    except BadInput as e:
        print(f"iosched: {printable(str(e))}", file=sys.stderr)  # it may quote a file's or a host's words
        return 2
    except IoschedError as e:
        print(f"iosched: {printable(str(e))}", file=sys.stderr)
        return e.exit_code
    except PermissionError as e:
        # The last net: a file only root may touch that no check above named. Core turns the known ones into
        # NotPermitted; a traceback is never the answer.
        hint = ": run as root" if os.geteuid() != 0 else ""
        print(f"iosched: permission denied on {e.filename or 'a file'}{hint}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `iosched jobs | head`: the reader left; leave quietly (and keep Python's exit flush from failing).
        terminal.held_on_null(getattr(sys.stdout, "raw", sys.stdout))
        return 0


if __name__ == "__main__":
    sys.exit(main())
