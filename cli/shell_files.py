"""The man page and the shell completions, generated from the argument parser: `iosched --print-man` (through
argparse-manpage) and `iosched --print-completion bash|zsh` (through shtab). Both are imported here alone, and
this module only when one of the options is given (cli/main.py), so no other command pays for them."""

from __future__ import annotations

import argparse
from typing import Any

import shtab
from argparse_manpage.manpage import Manpage

from iosched import __version__
from iosched.core.load.jobs import CATALOG, GROUPS

SUMMARY = "see, switch and compare Linux block IO schedulers"

# Values a completion can offer, by what an argument holds (its dest): the machine's block devices and their
# schedulers (read from sysfs as the user types), the catalog's jobs and groups, files, folders.
_DEVICES = "devices"
_SCHEDULERS = "schedulers"
_SCHEDULER_LIST = "scheduler-list"
_JOB = "job"
_JOB_LIST = "job-list"
_FILE = "file"
_DIRECTORY = "directory"
_BY_DEST = {
    "device": _DEVICES, "devices": _DEVICES, "destroy_data": _DEVICES, "on": _DEVICES,
    "scheduler": _SCHEDULERS, "schedulers": _SCHEDULER_LIST, "candidates": _SCHEDULER_LIST,
    "job": _JOB, "background": _JOB, "jobs": _JOB_LIST,
    "file": _FILE, "study": _FILE, "resume": _FILE, "replay": _FILE, "save": _FILE, "plot_file": _FILE,
    "output": _FILE, "token_file": _FILE, "rules_file": _FILE, "hosts": _FILE, "markdown": _FILE,
    "remote_iosched": _FILE,
    "dir": _DIRECTORY, "rules_dir": _DIRECTORY, "textfile": _DIRECTORY,
}

_SYS_DEVICES = "ls /sys/block 2>/dev/null"
_SYS_SCHEDULERS = "cat /sys/block/*/queue/scheduler 2>/dev/null | tr -d '[]' | tr ' ' '\\n' | sort -u"


def _bash_preamble(jobs: str, groups: str) -> str:
    # Each function gets the word being completed; a comma list completes its last item, keeping the rest.
    return f"""
_iosched_devices() {{ compgen -W "$({_SYS_DEVICES})" -- "$1"; }}
_iosched_schedulers() {{ compgen -W "$({_SYS_SCHEDULERS})" -- "$1"; }}
_iosched_scheduler_list() {{
  local done=; [[ $1 == *,* ]] && done=${{1%,*}},
  compgen -P "$done" -W "$({_SYS_SCHEDULERS})" -- "${{1##*,}}"
}}
_iosched_job() {{ compgen -W "{jobs}" -- "$1"; compgen -f -- "$1"; }}
_iosched_job_list() {{
  local done=; [[ $1 == *,* ]] && done=${{1%,*}},
  compgen -P "$done" -W "{groups} {jobs}" -- "${{1##*,}}"; compgen -f -- "$1"
}}
"""


def _completions(jobs: str, groups: str) -> dict[str, Any]:
    # zsh: shtab writes each action in double quotes, so the script's `\$(…)` leaves the command for _arguments to run
    # as the user types (a plain `$(…)` would run once, when the script is loaded).
    return {
        _DEVICES: {"bash": "_iosched_devices", "zsh": f"(\\$({_SYS_DEVICES}))"},
        _SCHEDULERS: {"bash": "_iosched_schedulers", "zsh": f"(\\$({_SYS_SCHEDULERS}))"},
        _SCHEDULER_LIST: {"bash": "_iosched_scheduler_list",
                          "zsh": f"{{_values -s , scheduler \\$({_SYS_SCHEDULERS})}}"},
        _JOB: {"bash": "_iosched_job", "zsh": f"{{_alternative 'jobs:catalog job:({jobs})' 'files:job file:_files'}}"},
        _JOB_LIST: {"bash": "_iosched_job_list", "zsh": f"{{_values -s , 'group or job' {groups} {jobs}}}"},
        _FILE: shtab.FILE,
        _DIRECTORY: shtab.DIRECTORY,
    }


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # an alias maps to the same parser
                found += _subparsers(sub)
    return found


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script for ``shell``, from ``parser`` with each value-taking argument told what it holds."""
    jobs, groups = " ".join(CATALOG), " ".join(GROUPS)
    kinds = _completions(jobs, groups)
    for p in _subparsers(parser):
        for action in p._actions:
            kind = _BY_DEST.get(action.dest)
            if kind is not None and action.nargs != 0 and not action.choices:
                action.complete = kinds[kind]  # type: ignore[attr-defined]  # shtab reads it
    return shtab.complete(parser, shell, preamble=_bash_preamble(jobs, groups) if shell == "bash" else "")


_EXIT_STATUS = """.TP
.B 0
success
.TP
.B 1
failure: not root, the device is gone, the kernel refused, a run or a save failed
.TP
.B 2
bad input: an unknown device or scheduler, a malformed name, number or file; nothing was changed
.TP
.B 130
interrupted (Ctrl\\-C): what the command changed is put back, and a compare keeps the runs that finished"""

_ENVIRONMENT = """.TP
.B NO_COLOR
set: the TUI starts with the mono theme, and tables and charts use no colour
.TP
.B COLUMNS
the width the tables of
.B iosched list
fit on a terminal"""

_FILES = """.TP
.I /run/iosched/journal.json
every value iosched changed, with the one it replaced, for
.BR "iosched restore" ;
on tmpfs, so a reboot clears it with the schedulers it recorded
.TP
.I /run/iosched/
the journal's lock, each device's load lock, the scratch files and cgroups a run registered
.TP
.I /var/lib/iosched/results/
the experiments the TUI ran, each saved as JSON
.TP
.I /etc/udev/rules.d/61\\-iosched.rules
the rules
.B iosched persist
writes"""

_SEE_ALSO = """.BR fio (1),
.BR iostat (1),
.BR mpstat (1),
.BR udevadm (8),
.BR bpftrace (8).
The topic pages in the project's
.I docs/
folder (its README.md is the contents): recipes, statistics, contention, capture and replay, fleets, tracing,
the browser and Prometheus, safety, performance."""


def man_page(parser: argparse.ArgumentParser) -> str:
    """The man page, section 1, from ``parser``: every command and option as `--help` gives them, then the exit
    status, environment, files and where to read more."""
    page: Any = Manpage(parser, format="single-commands-section")
    page.description = SUMMARY
    page.source = f"iosched {__version__}"
    page.manual = "User Commands"
    for heading, content in (("exit status", _EXIT_STATUS), ("environment", _ENVIRONMENT), ("files", _FILES),
                             ("see also", _SEE_ALSO)):
        page.add_section(heading, ">", content)
    return str(page)

