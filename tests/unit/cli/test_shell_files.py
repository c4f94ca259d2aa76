"""The completion scripts and the man page, generated from the parser: the bash script completes in a real bash,
the zsh script is one zsh reads, the man page renders without a warning, and `iosched list` loads neither
generator."""

import contextlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iosched.cli.main import build_parser
from iosched.core.load.jobs import CATALOG, GROUPS

from conftest import run_cli

# Every command a person runs (`fleet-host` is the controller's, and has no help line).
COMMANDS = ["list", "set", "restore", "watch", "demo", "export", "jobs", "run", "compare", "capture", "report",
            "record", "replay", "tune", "persist", "serve", "latency", "top"]


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = run_cli("--print-completion", "bash")
    assert out.returncode == 0, out.stderr
    path = tmp_path_factory.mktemp("completion") / "iosched.bash"
    path.write_text(out.stdout)
    return path


def complete(script: Path, *words: str, cwd: Path | None = None) -> list[str]:
    """What bash offers for the last of ``words`` (the word being typed) after sourcing ``script``: the function
    `complete -p iosched` names, called as bash calls it, with COMP_WORDS and COMP_CWORD set."""
    code = ('source "$1"; shift\n'
            'spec=$(complete -p iosched) || exit 3\n'
            'fn=${spec#*-F }; fn=${fn%% *}\n'
            'COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=()\n'
            '"$fn" iosched "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"\n'
            'printf "%s\\n" "${COMPREPLY[@]}"\n')
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", code, "bash", str(script), *words],
                       capture_output=True, text=True, timeout=30, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return [w for w in r.stdout.splitlines() if w]


def test_bash_completes_the_commands(bash_script):
    assert sorted(complete(bash_script, "iosched", "")) == sorted(COMMANDS)
    assert complete(bash_script, "iosched", "li") == ["list"]
    assert sorted(complete(bash_script, "iosched", "re")) == ["record", "replay", "report", "restore"]
    assert complete(bash_script, "iosched", "fleet") == []  # not a person's command


class Terminal:
    """An interactive bash on a pseudo-terminal, as a person has one: keys go in, the screen's text comes out."""

    def __init__(self, home: Path) -> None:
        import pty

        env = {"PATH": os.environ["PATH"], "HOME": str(home), "TERM": "dumb", "PS1": "$ ", "INPUTRC": "/dev/null"}
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: bash, reading this terminal
            os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], env)
        self.seen = ""

    def type(self, keys: str, until: str, timeout: float = 20.0) -> str:
        """``keys`` typed; the screen's text from then on, once it shows ``until`` (AssertionError if it never
        does)."""
        import select
        import time

        os.write(self.fd, keys.encode())
        start, deadline = len(self.seen), time.monotonic() + timeout
        while until not in self.seen[start:]:
            left = deadline - time.monotonic()
            assert left > 0, f"never shown {until!r}: {self.seen[start:]!r}"
            if select.select([self.fd], [], [], left)[0]:
                try:
                    self.seen += os.read(self.fd, 4096).decode(errors="replace")
                except OSError:  # bash has gone
                    break
        return self.seen[start:]

    def close(self) -> None:
        import signal

        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def test_tab_completes_a_command_in_an_interactive_bash(bash_script, tmp_path):
    """What a person sees: the script sourced in an interactive bash on a terminal, `iosched li` and TAB gives
    `iosched list `; `iosched re` and TAB twice lists the four commands that begin so."""
    term = Terminal(tmp_path)
    try:
        # Its output, not the echo of the line typed (the quotes part it), then the prompt: readline is reading.
        term.type(f"bind 'set bell-style none'; source {bash_script}; echo sour''ced\n", "sourced\r\n$ ")
        assert term.type("iosched li\t", "list ").endswith("iosched list ")
        shown = term.type("\x15iosched re\t\t", "restore")  # Ctrl-U: the line cleared first
        assert {"record", "replay", "report", "restore"} <= set(shown.split())
    finally:
        term.close()


def test_bash_completes_options_and_their_values(bash_script):
    assert complete(bash_script, "iosched", "compare", "sdb", "--sched") == ["--schedulers"]
    assert complete(bash_script, "iosched", "--the") == ["--theme"]
    assert sorted(complete(bash_script, "iosched", "--theme", "")) == ["dark", "light", "mono"]
    assert sorted(complete(bash_script, "iosched", "--print-completion", "")) == ["bash", "zsh"]
    assert complete(bash_script, "iosched", "compare", "sdb", "--jobs", "4k-ma") == ["4k-matrix"]
    assert complete(bash_script, "iosched", "compare", "sdb", "--jobs", "4k-matrix,conten") == [
        "4k-matrix,contention"]
    assert "interactive-under-writes" in complete(bash_script, "iosched", "compare", "sdb", "--job", "inter")
    assert set(GROUPS) <= set(complete(bash_script, "iosched", "compare", "sdb", "--jobs", ""))


def test_bash_completes_this_machines_devices_and_schedulers(bash_script):
    devices = sorted(os.listdir("/sys/block"))
    assert devices, "no block device to complete"
    assert sorted(complete(bash_script, "iosched", "set", "")) == devices
    assert sorted(complete(bash_script, "iosched", "watch", "-i", "1", devices[0])) == [
        d for d in devices if d.startswith(devices[0])]
    schedulers = sorted({s.strip("[]") for d in devices if Path("/sys/block", d, "queue/scheduler").exists()
                         for s in Path("/sys/block", d, "queue/scheduler").read_text().split()})
    assert schedulers, "no device here has a scheduler to complete"
    assert sorted(complete(bash_script, "iosched", "set", devices[0], "")) == schedulers
    assert sorted(complete(bash_script, "iosched", "compare", "sdb", "--schedulers", "x,")) == [
        f"x,{s}" for s in schedulers]


def test_bash_completes_file_arguments_with_files(bash_script, tmp_path):
    (tmp_path / "m.json").write_text("{}")
    (tmp_path / "other.txt").write_text("")
    assert complete(bash_script, "iosched", "report", "m", cwd=tmp_path) == ["m.json"]
    assert complete(bash_script, "iosched", "compare", "sdb", "--save", "o", cwd=tmp_path) == ["other.txt"]


def test_zsh_script_is_a_compdef_function_naming_every_command():
    out = run_cli("--print-completion", "zsh")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("#compdef iosched\n")
    offered = re.findall(r"^ +([a-z-]+):'", out.stdout, re.MULTILINE)  # the commands, each with its help line
    assert sorted(set(offered)) == sorted(COMMANDS)
    # The devices are listed as the user types, not once when zsh loads the script.
    assert "(\\$(ls /sys/block" in out.stdout
    if shutil.which("zsh"):
        r = subprocess.run(["zsh", "-n"], input=out.stdout, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr


def test_man_page_renders_every_command_without_a_warning(tmp_path):
    out = run_cli("--print-man")
    assert out.returncode == 0, out.stderr
    page = tmp_path / "iosched.1"
    page.write_text(out.stdout)
    assert out.stdout.startswith(".TH IOSCHED \"1\"")
    r = subprocess.run(["man", "--warnings", "-l", str(page)], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "MANWIDTH": "100", "MANPAGER": "cat", "PAGER": "cat"})
    assert r.returncode == 0 and r.stderr == "", r.stderr
    text = r.stdout
    assert "iosched - see, switch and compare Linux block IO schedulers" in text
    for command in COMMANDS:
        assert f"iosched {command}\n" in text, command
    for heading in ("SYNOPSIS", "OPTIONS", "COMMANDS", "EXIT STATUS", "FILES", "SEE ALSO"):
        assert f"\n{heading}\n" in text, heading
    assert "--print-completion {bash,zsh}" in text and "/run/iosched/journal.json" in text


def test_the_generators_see_the_parser_iosched_runs():
    """A command or option added to the parser reaches both scripts and the page with no list to keep here."""
    from iosched.cli import shell_files

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert sorted(name for name, p in sub.choices.items() if name != "fleet-host") == sorted(COMMANDS)
    bash = shell_files.completion_script(build_parser(), "bash")
    assert " ".join(CATALOG) in bash and "--until-verdict" in bash
    assert r"\-\-until\-verdict" in shell_files.man_page(build_parser())  # roff writes - as \-


def test_iosched_list_loads_neither_generator(tree):
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline]")
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "iosched", "--root", str(tree.root), "list"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "sda" in r.stdout
    loaded = [line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")]
    assert "iosched.cli.main" in loaded  # the trace is real
    assert [m for m in loaded if m.split(".")[0] in ("shtab", "argparse_manpage") or
            m == "iosched.cli.shell_files"] == []
