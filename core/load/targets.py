"""Where a workload may do its IO without losing anybody's data.

- A scratch file in a directory (named by the user, or a temp dir on the device's mounted filesystem):
  registered under the run dir before it exists, removed afterwards; `iosched restore` removes what a
  crashed run left.
- The raw device: reads always; writes only when nothing is mounted from it, it has no partitions, no
  dm/md holders and no filesystem or partition-table signature, unless the user confirms by name.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iosched.core.base.errors import BadInput, IoschedError, NotPermitted, UnknownDevice
from iosched.core.base.outfile import changeable_by_others, write_file
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.kernel.devices import read_device
from iosched.core.kernel.sysfs import check_device_name
from iosched.core.load.fiopath import check_target_path
from iosched.core.settings.journal import default_run_dir, kept_registrations, stale_registrations
from iosched.core.settings.owners import Left, Owner


class Refused(BadInput):
    """A write workload aimed at a device that holds (or may hold) data."""

    def __init__(self, message: str, why: str = "", confirmable: bool = False) -> None:
        super().__init__(message)
        self.why = why
        self.confirmable = confirmable  # True: the user may confirm by typing the device name


RELEASE_TRIES = 20  # passes over a scratch folder at release, 50 ms apart


@dataclass
class Target:
    device: str
    path: str  # what fio opens: /dev/NAME or the scratch file
    kind: str  # "device" or "file"
    scratch_dir: str | None = None  # removed with everything in it by release()
    note: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def release(self, root: str | Path = "/") -> None:
        """Remove the scratch files: idempotent, and safe from two threads at once (a job's worker and quit)."""
        with self._lock:
            scratch, self.scratch_dir = self.scratch_dir, None
        if scratch:
            # A killed fio's last job process may still be leaving the folder (ending a direct write it was in):
            # what it held when the first pass went is removed by the next, for up to about a second.
            for _ in range(RELEASE_TRIES):
                shutil.rmtree(scratch, ignore_errors=True)
                if not os.path.lexists(scratch):
                    break
                time.sleep(0.05)
            _registry(root).joinpath(_reg_name(scratch)).unlink(missing_ok=True)

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "path": self.path, "kind": self.kind, "note": self.note}


def _registry(root: str | Path) -> Path:
    return default_run_dir(root) / "scratch"


def _reg_name(scratch_dir: str) -> str:
    return scratch_dir.strip("/").replace("/", "_") + ".json"


def signature(dev_path: str | Path) -> str | None:
    """The filesystem / partition-table / RAID signature blkid finds on the device, or None when blank.

    Raises when the probe cannot tell (no blkid, unreadable device): unknown is not blank.
    """
    blkid = shutil.which("blkid")
    if blkid is None:
        raise IoschedError("cannot check the device for a filesystem signature: blkid is missing "
                           "(apt-get install -y util-linux)")
    if not Path(dev_path).exists():
        raise IoschedError(f"cannot probe {dev_path} for signatures: no such device node")
    r = subprocess.run([blkid, "-p", "-o", "export", str(dev_path)], capture_output=True, text=True, timeout=30)
    if r.returncode == 2:  # nothing found
        return None
    if r.returncode != 0:
        raise IoschedError(f"cannot probe {dev_path} for signatures: {r.stderr.strip() or 'blkid failed'}")
    props = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    return props.get("TYPE") or props.get("PTTYPE") or props.get("USAGE") or "unknown signature"


def why_not_writable(dev: DeviceDoc, root: str | Path = "/") -> str | None:
    """Why a raw write workload would destroy data on ``dev``, or None when it looks blank and unused."""
    if dev.mountpoints:
        return f"it is mounted or in use ({', '.join(dev.mountpoints[:3])})"
    if dev.partitions:
        return f"it holds partitions ({', '.join(dev.partitions[:4])})"
    if dev.holders:
        return f"it is in use by {', '.join(dev.holders)}"
    sig = dev.fs_type or dev.part_table or signature(Path(root, "dev", dev.name))
    if sig:
        return f"it carries a {sig} signature"
    return None


def _device(name: str, root: str | Path) -> DeviceDoc:
    check_device_name(name, root)
    dev = read_device(name, root)
    if dev is None:
        raise UnknownDevice(f"{name} is not a whole-disk block device")
    return dev


def _on_device(directory: Path, dev: DeviceDoc, root: str | Path) -> bool:
    st = os.stat(directory)
    mm = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    if mm == dev.maj_min:
        return True
    sysdir = Path(root, "sys/block", dev.name)
    return any((sysdir / p / "dev").is_file() and (sysdir / p / "dev").read_text().strip() == mm
               for p in dev.partitions)


def _scratch_needs_root(reg: Path) -> NotPermitted:
    return NotPermitted(f"a scratch-file run needs root (it registers the file in {reg} so that a crash leaves "
                        "none behind): run as root")


def check_scratch_dir(directory: str | Path, size: int) -> Path:
    """Every look a scratch file's folder gets before anything is made in it, as a plan that only prints
    (`advise --dry-run`) and the run itself take it: a path fio can be given, a folder, one only root (or we) can
    change all the way up, on a filesystem that holds files, with room for ``size`` bytes. The folder, resolved;
    BadInput otherwise."""
    check_target_path(str(directory))  # before anything is created: fio could not be given the path
    d = Path(directory)
    if not d.is_dir():
        raise BadInput(f"scratch directory {d} does not exist or is not a directory")
    if (open_to := changeable_by_others(d)) is not None:  # fio opens the file by name, through every folder on it
        raise BadInput(f"scratch directory {d}: {open_to} may be changed by another user (its owner, or writable "
                       "by others without the sticky bit), who could swap a folder on the way for a link: choose a "
                       "folder only root can change")
    d = Path(os.path.realpath(d))  # the folders just checked, not a link that may change after
    st = os.statvfs(d)
    if st.f_blocks == 0:
        raise BadInput(f"scratch directory {d} is on a filesystem that holds no files (a pseudo-filesystem such as "
                       "/proc or /sys): choose a folder on a disk")
    free = st.f_bavail * st.f_frsize
    if free < size + 16 * 1024 * 1024:
        raise BadInput(f"not enough space in {d} for a {size // 2**20} MiB scratch file "
                       f"({free // 2**20} MiB free): pass a smaller --size or another --dir")
    return d


def scratch_target(device: str, directory: str | Path, size: int, root: str | Path = "/") -> Target:
    """A scratch file of ``size`` bytes in a fresh temp dir under ``directory``; checks free space first."""
    dev = _device(device, root)
    d = check_scratch_dir(directory, size)
    note = "" if _on_device(d, dev, root) else f"note: {d} is not on {device}; its IO will not show on {device}"
    reg = _registry(root)
    try:
        reg.mkdir(mode=0o700, parents=True, exist_ok=True)
    except PermissionError as e:
        raise _scratch_needs_root(reg) from e
    try:
        sdir = tempfile.mkdtemp(prefix="iosched-scratch-", dir=d)
    except OSError as e:
        raise IoschedError(f"cannot create a scratch directory in {d}: {e.strerror}") from e
    # Registered before fio lays out the file, so a crash at any point leaves something restore can find.
    try:
        write_file(reg / _reg_name(sdir), json.dumps({"dir": sdir, **Owner.me().fields(), "device": device}))
    except PermissionError as e:
        shutil.rmtree(sdir, ignore_errors=True)
        raise _scratch_needs_root(reg) from e
    except BaseException:  # refused (a link where the registry was) or failed: the scratch folder goes too
        shutil.rmtree(sdir, ignore_errors=True)
        raise
    return Target(device, str(Path(sdir, "iosched.dat")), "file", sdir, note)


def target_hint(dev: DeviceDoc) -> str:
    """Where a job on ``dev`` will run, said before anything is probed (for pickers)."""
    fs_mounts = [m for m in dev.mountpoints if m.startswith("/")]
    if fs_mounts:
        return f"target: a scratch file under {fs_mounts[0]} (removed afterwards)"
    return f"target: raw /dev/{dev.name}; W jobs write: refused if it holds data, unless you type its name"


def check_openable(path: str, writes: bool) -> None:
    """NotPermitted (run as root) when this user may not open the raw device: said before anything starts,
    instead of fio's "error 13" after it did."""
    mode = os.R_OK | (os.W_OK if writes else 0)
    if os.path.exists(path) and not os.access(path, mode, effective_ids=os.access in os.supports_effective_ids):
        raise NotPermitted(f"opening raw {path} for the workload needs root: run as root")


def choose_target(device: str, writes: bool, directory: str | Path | None = None, size: int = 1 << 30,
                  raw: bool = False, destroy_data: str | None = None, root: str | Path = "/",
                  scratch_ok: bool = True) -> Target:
    """The target for a workload on ``device``: scratch file when asked or when mounted, else the raw device.
    ``scratch_ok`` False: a workload that runs on the raw device only (a replay), whose refusals offer no --dir."""
    dev = _device(device, root)
    if destroy_data is not None and destroy_data != device:
        raise BadInput(f"--destroy-data names {destroy_data!r} but the target is {device}: they must match")
    if directory is not None:
        return scratch_target(device, directory, size, root)
    fs_mounts = [m for m in dev.mountpoints if m.startswith("/")]
    if fs_mounts and not raw:
        return scratch_target(device, fs_mounts[0], size, root)
    target = Target(device, f"/dev/{device}", "device")
    check_openable(target.path, writes)
    if not writes:
        return target
    why = why_not_writable(dev, root)
    if why is None:
        return target
    scratch = ", or use a scratch file (--dir)" if scratch_ok else ""
    if dev.mountpoints:
        # Even a confirmed raw write to a mounted filesystem corrupts it while it is in use: never.
        raise Refused(f"refused: a write workload on raw {device} would destroy data: {why}; "
                      f"unmount it{scratch or ', or replay onto a spare device'}", why)
    if destroy_data == device:
        target.note = f"writing to raw {device} although {why}: confirmed with --destroy-data"
        return target
    raise Refused(f"refused: a write workload on raw {device} would destroy data: {why}; "
                  f"pass --destroy-data {device} to confirm{scratch}", why, confirmable=True)


def kept_scratch(root: str | Path = "/") -> list[Left]:
    """The scratch dirs `restore` leaves because their run may still be going, each with why."""
    return [Left(f"scratch files {str(info.get('dir'))[:200]}", why)
            for info, why in kept_registrations(_registry(root))]


def clean_stale_scratch(root: str | Path = "/", dry_run: bool = False) -> list[str]:
    """Remove scratch dirs whose owning process is gone (a crashed run); returns what was (or would be) removed."""
    removed: list[str] = []
    for f, info in stale_registrations(_registry(root)):
        try:
            sdir = str(info["dir"])
        except KeyError:
            f.unlink(missing_ok=True)
            continue
        if dry_run:
            removed.append(sdir)
            continue
        # Only ever remove what we created: a directory named by our prefix.
        if Path(sdir).name.startswith("iosched-scratch-"):
            shutil.rmtree(sdir, ignore_errors=True)
            removed.append(sdir)
        f.unlink(missing_ok=True)
    return removed
