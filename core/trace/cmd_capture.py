"""`iosched capture --cmd CMD`: the IO one command's process tree submits, on whichever disks, into a capture (fio's
iolog v3 naming each device, and the metadata with the command: core/load/iolog.py).

How IO is told to be the command's: the command runs in a cgroup (v2) of its own (core/settings/cmd_cgroup.py), and
the CO-RE loader's ``--capture-cgroup`` mode writes every bio submitted by a task of that cgroup
(``block_bio_queue``, in the submitter's context: the command's reads, the readahead they start, its page faults,
its direct IO, and what it flushes itself with fsync) to a request-based disk. At issue or completion the task is
often a kernel thread, so nothing later than submission could tell. What this cannot see, and says: writes the
command leaves in the page cache reach the disk later from the kernel's writeback threads (the metadata sets what
it saw beside what the kernel's own IO accounting charged to the command: ``accounted_write_bytes``); IO other
processes do for it (a daemon it asks, a filesystem journal's commits) is theirs; a stacked device that passes its
bios on from its own threads (dm-crypt, md's raid5) hides the IO below it.

A line is a bio as the command submitted it, before the block layer merges or splits it (which a replay's target
does again by its own limits), timed from the moment the command was let start; the depth is the command's bios in
flight. The command starts only after the tracer is ready and, with ``cold``, after the page cache was synced and
dropped (core/settings/writes.py, the one door), with nothing of iosched's own start between (core/load/cmd_tree.py:
the gate).

How it ends: by itself (the capture is written), or at a bound: ``duration`` seconds from its start, or its lines
reaching ``max_bytes``. A command's capture is the whole of its run or nothing: at a bound, on Ctrl-C or a signal,
its process tree is ended, nothing is written and the sentence says why (BadInput, exit 2; an interrupt is raised
again). So is a command that did no IO. Every way out ends its tree and removes its cgroup.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import resource
import select
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

from iosched.core.base.errors import BadInput, shown
from iosched.core.base.units import human_size
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.kernel.devices import disks_holding, read_device
from iosched.core.kernel.sysfs import DEVICE_NAME, check_device_name, read_attr
from iosched.core.load.children import Child
from iosched.core.load.cmd_tree import RunAs, check_cmd, command_argv, end_tree, exit_status, io_bytes, user_env
from iosched.core.load.fio import dies_with_us
from iosched.core.load.iolog import CaptureDoc, CaptureWriter, CommandDoc, Ended
from iosched.core.settings.cmd_cgroup import CmdCgroup, close_cmd_cgroup, open_cmd_cgroup
from iosched.core.settings.writes import drop_caches
from iosched.core.trace.capture import (
    CaptureFailed,
    CaptureProgress,
    CaptureResult,
    CaptureRun,
    check_output,
    ready_tracer,
)
from iosched.core.trace.parse import kernel_dev

READY_S = 10.0  # how long the command's wrapper may take to join its cgroup and reach the gate
WATCH_S = 0.1  # how often the watcher looks for a stop while the command runs


def program_of(cmd: str, env: Mapping[str, str], cwd: str | Path) -> str | None:
    """The file a shell command line starts: its first word (after any NAME=value) as a path, or found on the
    command's PATH; None for a shell word (a builtin, a keyword) or a line the shell would not read."""
    try:
        words = shlex.split(cmd)
    except ValueError:
        return None
    first = next(itertools.dropwhile(lambda w: re.fullmatch(r"[A-Za-z_]\w*=.*", w, re.S) is not None, words), "")
    if not first:
        return None
    if "/" in first:
        path = Path(cwd, first)  # an absolute path stays itself
        return str(path) if path.is_file() else None
    return shutil.which(first, path=env.get("PATH") or os.defpath)


def default_disk(cmd: str, env: Mapping[str, str], cwd: str | Path, root: str | Path = "/") -> tuple[str, str]:
    """The disk a command's capture keeps to when none is named: the one its files live on, its program's (where its
    libraries and data usually are too), else its working directory's; and which that is, in words ("the disk
    /usr/bin/python3 is on"). A replay is of one disk's requests. BadInput when that is no disk, or several."""
    what = program_of(cmd, env, cwd) or str(cwd)
    try:
        disks = disks_holding(what, root)
    except OSError:
        disks = []
    if len(disks) == 1:
        return disks[0], f"the disk {what} is on"
    where = f"is on {', '.join(disks)}" if disks else "is on no disk a capture can see (tmpfs, an overlay, btrfs…)"
    raise BadInput(f"{what} {where}: name the disk to capture (iosched capture DEV --cmd …), or --every-disk")


class CommandCaptureRefused(BadInput):
    """A command's capture that is not one (no IO, or cut at a bound): nothing was written; the sentence says why."""


class CmdCaptureRun(CaptureRun):
    """One command's capture. ``run()`` blocks in the calling thread, which starts both the tracer and the command
    (each dies with it); ``stop()`` from any thread ends the command and writes nothing."""

    status_ms = 100  # the loader's status interval: how soon the size bound is seen

    def __init__(self, cmd: str, out: Path, duration: float | None, max_bytes: int, *, device: str | None = None,
                 chosen: str = "", cold: bool = False, run_as: RunAs | None = None,
                 env: Mapping[str, str] | None = None, root: str | Path = "/",
                 on_progress: Callable[[CaptureProgress], object] | None = None) -> None:
        super().__init__(device or "", out, duration, max_bytes, root, on_progress)
        self.cmd = cmd
        self.only = device  # a disk the capture keeps to, else every request-based disk
        self.chosen = chosen  # why that disk, when iosched chose it (``default_disk``): "the disk X is on"
        self.cold = cold
        self.run_as = run_as
        self.env = dict(os.environ if env is None else env)
        self._group: CmdCgroup | None = None
        self._command: Child | None = None
        self._watcher: threading.Thread | None = None
        self._end_lock = threading.Lock()
        self._ended: Ended | None = None  # why the command ended: "command" (by itself), a bound, or a stop
        self._gate_ns = 0
        self._exit_ns: int | None = None
        self._docs: dict[str, DeviceDoc] = {}
        self._body: IO[str] | None = None
        self._before_gate = (0, 0)  # bytes its wrapper had read and written when the gate opened
        self.left_behind: str | None = None  # why a process the command started did not end, if one did not

    # --- before anything starts ------------------------------------------------------------------------------

    def check_command(self) -> tuple[Path, int]:
        """Everything refused before anything starts: the command, the disk it keeps to, root and the tracer, the
        output file. The loader, and the disk's dev_t (0: every disk)."""
        why = check_cmd(self.cmd)
        if why is not None:
            raise BadInput(why)
        devt = 0
        if self.only is not None:
            check_device_name(self.only, self.root)
            found = read_device(self.only, self.root)
            if found is None:
                raise BadInput(f"{self.only} is not a whole-disk block device")
            if not Path(self.root, "sys/block", self.only, "mq").is_dir():
                raise BadInput(f"{self.only} hands its IO to the disks below it (it has no request queue of its "
                               "own): name one of those, or --every-disk to capture them all")
            major, minor = (int(x) for x in found.maj_min.split(":"))
            devt = kernel_dev(major, minor)
        loader = ready_tracer(self.root)
        check_output(self.out)
        return loader, devt

    def run(self) -> CaptureResult:
        loader, devt = self.check_command()
        self._group = open_cmd_cgroup(self.root)
        if self._group is None:
            raise CaptureFailed("capture --cmd runs the command in a cgroup v2 group of its own, to tell its IO from "
                                "everyone else's, and none can be made here (iosched runs in a cgroup that hands "
                                "controllers down, or cgroup2 is not mounted)")
        try:
            cgroup_id = os.stat(self._group.path).st_ino  # a cgroup2 directory's inode number is its id
            argv = [str(loader), "--capture-cgroup", str(cgroup_id)] + (["--dev", str(devt)] if devt else [])
            return self._run(argv)
        finally:
            self._end_command("stopped")
            self._reap()
            self.left_behind = close_cmd_cgroup(self._group, self.root)  # a second try, or a command never started
            if self._body is not None:
                self._body.close()

    # --- the command -----------------------------------------------------------------------------------------

    def _ready(self, out: IO[str], t: int) -> CaptureWriter:
        """The tracer is ready: the command started, held at its gate, the cache dropped for a cold start, the gate
        opened. Its lines go to a temporary file until every device they name is known."""
        # Closed by run(), whichever way the capture ends.
        self._body = tempfile.TemporaryFile("w+", encoding="ascii", prefix="iosched-capture-")  # noqa: SIM115
        if self._ended is None:  # stopped before the tracer was ready (a Ctrl-C at once): nothing to start or end
            self._start_command()
        return CaptureWriter(self._body, None, self._gate_ns, name_of=self._name_of, limit=self.max_bytes)

    def _start_command(self) -> None:
        assert self._group is not None
        gate_r, gate_w = os.pipe()
        ready_r, ready_w = os.pipe()
        try:
            argv = command_argv(self.cmd, self._group.procs, self.run_as)
            try:
                # Spawned by the thread that runs the capture: --pdeathsig follows it.
                proc = subprocess.Popen(dies_with_us(argv, "TERM"), start_new_session=True, stdin=gate_r,
                                        stdout=ready_w, env=user_env(self.env, self.run_as) or self.env)
            except OSError as e:
                raise CaptureFailed(f"the command could not be started: {e.strerror or e}") from None
            finally:
                os.close(gate_r)
                os.close(ready_w)
            self._command = Child(proc)
            if not _readable(ready_r, READY_S) or os.read(ready_r, 1) != b"x":
                code = self._command.wait(1.0)
                raise CaptureFailed("the command could not be started in its own cgroup"
                                    + (f" (its wrapper exited with status {code})" if code is not None else ""))
            # What its wrapper read and wrote before the gate is the kernel's to charge it, not the command's.
            self._before_gate = io_bytes(read_attr(Path(self.root, f"proc/{proc.pid}/io")) or "")
            if self.cold:
                drop_caches(self.root)
            self._cpu0 = resource.getrusage(resource.RUSAGE_SELF)  # the sync and drop are no cost of the capture
            self._gate_ns = time.monotonic_ns()
            with contextlib.suppress(BrokenPipeError):  # it died at the gate: the watcher sees it end
                os.write(gate_w, b"\n")
        finally:
            os.close(ready_r)
            os.close(gate_w)
        self._watcher = threading.Thread(target=self._watch, args=(self._command,), name="iosched-cmd-watch",
                                         daemon=True)
        self._watcher.start()

    def _watch(self, child: Child) -> None:
        """Waits for the command's end (its time taken as it happens) or its duration, whichever comes first."""
        deadline = None if self.duration is None else time.monotonic() + self.duration
        fd = os.pidfd_open(child.proc.pid)
        try:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            while not self._stop.is_set():
                wait = WATCH_S if deadline is None else max(0.0, min(WATCH_S, deadline - time.monotonic()))
                if poller.poll(wait * 1000):
                    self._exit_ns = time.monotonic_ns()
                    self._end_command("command")
                    return
                if deadline is not None and time.monotonic() >= deadline:
                    self._end_command("duration")
                    return
        finally:
            os.close(fd)

    def _end_command(self, why: Ended) -> None:
        """Once: the command's tree ended (its outer shell left unreaped), then the tracer told to drain and end."""
        with self._end_lock:
            if self._ended is not None:
                return
            self._ended = why
        if self._command is not None:
            self.left_behind = end_tree(self._command, self._group, self.root)
        CaptureRun.stop(self, why)

    def stop(self, why: Ended = "stopped") -> None:
        self._end_command(why)

    def _reap(self) -> int | None:
        if self._watcher is not None:
            self._watcher.join()
        return self._command.wait() if self._command is not None else None

    def _look(self, writer: CaptureWriter, elapsed: float, lost: int) -> None:
        if self.on_progress is not None:
            self.on_progress(CaptureProgress(elapsed, writer.requests + len(writer.pending),
                                             writer.op_bytes[0] + writer.op_bytes[1], lost))
        if writer.full:
            self._end_command("max-size")

    def _name_of(self, dev: int) -> str | None:
        """A disk's /dev path by its dev_t (its DeviceDoc kept for the metadata); None when it is gone."""
        try:
            name = os.path.basename(os.readlink(Path(self.root, "sys/dev/block", f"{dev >> 20}:{dev & 0xFFFFF}")))
        except OSError:
            return None
        found = read_device(name, self.root) if DEVICE_NAME.fullmatch(name) else None
        if found is None:
            return None
        self._docs[f"/dev/{name}"] = found  # read_device gives the declared type itself
        return f"/dev/{name}"

    # --- the end -----------------------------------------------------------------------------------------------

    def _finish(self, writer: CaptureWriter, out: IO[str], started: str, t_end: int, lost: int, full: int,
                io_start: bool) -> CaptureDoc:
        self._end_command("stopped")  # the tracer ended by itself: the command goes too
        code = self._reap()
        if self.interrupted is not None:
            raise self.interrupted
        cmd = shown(self.cmd, 60)
        why = self._ended
        if why == "duration":
            raise CommandCaptureRefused(f"{cmd} was still running after --duration {self.duration:g} s: it was ended "
                                        "with every process it started, and nothing was written (give it longer "
                                        "with --duration)")
        if why == "max-size":
            raise CommandCaptureRefused(f"{cmd} did more IO than --max-size {human_size(self.max_bytes)} of capture "
                                        "holds: it was ended with every process it started, and nothing was "
                                        "written")
        if why != "command" or code is None:
            raise CaptureFailed("the CO-RE tracer ended before the command did: nothing was written")
        writer.flush(final=True)
        end_ns = self._exit_ns if self._exit_ns is not None else t_end
        if writer.full or writer.size(writer.end_us(end_ns)) > self.max_bytes:
            # Its last IO came between two looks, or at its end: the bound holds exactly, not now and then.
            raise CommandCaptureRefused(f"{cmd} did more IO than --max-size {human_size(self.max_bytes)} of capture "
                                        "holds: nothing was written")
        if writer.requests == 0:
            where = f"on {self.only}" if self.only else "on any block device"
            hints = [] if self.cold else ["what it read came from the page cache: --cold drops that first"]
            if self.chosen:  # iosched chose the disk: its files may be on another
                where += f", {self.chosen}"
                hints.append("it read another disk: name that one (iosched capture DEV --cmd …)")
            said = f" ({'; or '.join(hints)})" if hints else ""
            status = f"; it exited with status {exit_status(code)}" if code else ""
            raise CommandCaptureRefused(f"{cmd} did no IO {where}{said}{status}: nothing was written")
        end_us = writer.finish(end_ns, dest=out)
        ru = self._command.rusage if self._command is not None else None
        run_as = self.run_as
        command = CommandDoc(
            cmd=self.cmd, uid=run_as.uid if run_as else os.geteuid(), gid=run_as.gid if run_as else os.getegid(),
            cold=self.cold, wall_s=round(max(0, end_ns - self._gate_ns) / 1e9, 6), exit_status=exit_status(code),
            ios=writer.requests + writer.counts[4] + writer.unnamed + lost,
            accounted_read_bytes=max(0, ru.ru_inblock * 512 - self._before_gate[0]) if ru else 0,
            accounted_write_bytes=max(0, ru.ru_oublock * 512 - self._before_gate[1]) if ru else 0)
        return writer.meta(iolog=self.out.name, kernel=os.uname().release, started=started, duration_s=end_us / 1e6,
                           ended="command", timestamps="submit", lost=lost, untracked=full, devices=self._docs,
                           command=command)


def _readable(fd: int, timeout: float) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    return bool(poller.poll(timeout * 1000))

