"""A demo sandbox: a loop device with direct IO over a sparse file, so anyone can show scheduler effects on
any Linux box without touching real data. Registered under the run dir before the device exists, so
`iosched restore` can remove what a crashed demo left."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iosched.core.base.errors import BadInput, IoschedError, NotPermitted
from iosched.core.base.outfile import create_new, write_file
from iosched.core.kernel.sysfs import read_attr
from iosched.core.settings.journal import default_run_dir, kept_registrations, registry_files, stale_registrations
from iosched.core.settings.owners import Left, Owner
from iosched.core.settings.scheduler import available_schedulers, switch_scheduler
from iosched.core.settings.writes import restore

SANDBOX_PREFIX = "iosched-demo-"
SANDBOX_FILE = "disk.img"


def loop_default(release: str | None = None) -> str:
    """The scheduler the kernel gives a new loop device: none since 5.15, when the loop driver began to ask for none
    (BLK_MQ_F_NO_SCHED_BY_DEFAULT; core/advice/device_class.py has the whole rule), mq-deadline before."""
    m = re.match(r"(\d+)\.(\d+)", release if release is not None else os.uname().release)
    return "none" if m is None or (int(m.group(1)), int(m.group(2))) >= (5, 15) else "mq-deadline"


@dataclass
class Sandbox:
    directory: str
    file: str
    device: str = ""  # e.g. "loop7", empty until attached

    def to_json(self) -> dict[str, Any]:
        return {"directory": self.directory, "file": self.file, "device": self.device, **Owner.me().fields()}


def _registry(root: str | Path) -> Path:
    return default_run_dir(root) / "demo"


def _reg_file(root: str | Path, sb: Sandbox) -> Path:
    return _registry(root) / (Path(sb.directory).name + ".json")


def check_root() -> None:
    if os.geteuid() != 0:
        raise NotPermitted("iosched demo creates a loop device: run it as root (sudo iosched demo)")


def create(size: int, directory: str | Path | None = None, root: str | Path = "/") -> Sandbox:
    check_root()
    if shutil.which("losetup") is None:
        raise IoschedError("losetup is missing (apt-get install -y mount)")
    parent = Path(directory or "/var/tmp")
    if not parent.is_dir():
        raise BadInput(f"{parent} does not exist or is not a directory")
    try:
        d = tempfile.mkdtemp(prefix=SANDBOX_PREFIX, dir=parent)
    except OSError as e:
        raise IoschedError(f"cannot create the sandbox in {parent}: {e.strerror}") from e
    sb = Sandbox(d, str(Path(d, SANDBOX_FILE)))
    reg = _registry(root)
    reg.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        write_file(_reg_file(root, sb), json.dumps(sb.to_json()))
        fd = create_new(sb.file)
        try:
            os.ftruncate(fd, size)  # sparse: costs no space until written
        finally:
            os.close(fd)
        out = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", sb.file], capture_output=True,
                             text=True, timeout=30)
        if out.returncode != 0:
            raise IoschedError(f"losetup failed: {out.stderr.strip()}")
        sb.device = Path(out.stdout.strip()).name
        write_file(_reg_file(root, sb), json.dumps(sb.to_json()))
        # A loop node keeps the scheduler its last user set after it is detached, and losetup hands such a node
        # out again: a sandbox started from another's choice, which became the demo's baseline. It starts from the
        # kernel's default, switched through the journal (so put back when the sandbox goes) like any change.
        current, available = available_schedulers(sb.device, root)
        if current is not None and current != loop_default() and loop_default() in available:
            switch_scheduler(sb.device, loop_default(), root)
    except BaseException:
        destroy(sb, root)
        raise
    return sb


def destroy(sb: Sandbox, root: str | Path = "/") -> None:
    """Put back what iosched changed on the device, detach it if it is still ours, delete the file."""
    if sb.device:
        restore(root, devices={sb.device})
        backing = read_attr(Path(root, "sys/block", sb.device, "loop/backing_file"))
        if backing is not None and Path(backing) == Path(sb.file):
            subprocess.run(["losetup", "-d", f"/dev/{sb.device}"], capture_output=True, timeout=30)
    shutil.rmtree(sb.directory, ignore_errors=True)
    _reg_file(root, sb).unlink(missing_ok=True)


def clean_stale(root: str | Path = "/", dry_run: bool = False) -> list[Sandbox]:
    """Destroy sandboxes whose demo process is gone (a crash or SIGKILL); returns them."""
    out: list[Sandbox] = []
    for f, info in stale_registrations(_registry(root)):
        try:
            sb = Sandbox(str(info["directory"]), str(info["file"]), str(info.get("device") or ""))
        except KeyError:
            f.unlink(missing_ok=True)
            continue
        if not Path(sb.directory).name.startswith(SANDBOX_PREFIX):
            continue
        if not dry_run:
            destroy(sb, root)
        out.append(sb)
    return out


def kept_sandboxes(root: str | Path = "/") -> list[Left]:
    """The sandboxes `restore` leaves because their demo may still be running, each with why."""
    return [Left(f"a demo sandbox over {str(info.get('file'))[:200]}", why)
            for info, why in kept_registrations(_registry(root))]


def is_sandbox(device: str, root: str | Path = "/") -> bool:
    """Whether ``device`` is a demo sandbox: a loop device over ``iosched-demo-*/disk.img`` (this iosched's or
    another's, whatever its run dir) or one a demo registered. It is detached and deleted when the demo ends."""
    backing = read_attr(Path(root, "sys/block", device, "loop/backing_file"))
    if not backing:
        return False
    path = Path(backing.removesuffix(" (deleted)"))  # the kernel marks a backing file removed since attaching
    if path.name == SANDBOX_FILE and path.parent.name.startswith(SANDBOX_PREFIX):
        return True
    reg = _registry(root)
    for f in registry_files(reg, "its demo sandboxes"):
        try:
            info = json.loads(f.read_text())
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(info, dict) and info.get("device") == device and info.get("file") == str(path):
            return True
    return False
