"""The IO schedulers this kernel could load as modules: read from its modules' index (reads only; the load itself is
core/settings/writes.py's).

A scheduler the kernel has not loaded is not in any device's queue/scheduler list. Its module is named in
/lib/modules/RELEASE/modules.alias by the alias each in-tree scheduler declares, NAME-iosched (bfq-iosched,
mq-deadline-iosched), which is what the kernel itself asks modprobe for when a name is written to queue/scheduler;
an out-of-tree one may declare mq-NAME-iosched instead (adios's module, adios, declares mq-adios-iosched), and
kyber's module is named kyber-iosched. ``modprobe MODULE`` loads it; the scheduler is then listed on every device.
"""

from __future__ import annotations

import re
from pathlib import Path

from iosched.core.kernel.sysfs import read_attr

MODULE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
SCHEDULER_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")  # an elevator's name (the kernel's are ≤ 15 characters)
_SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")
MAX_INDEX_BYTES = 16 << 20  # a distribution kernel's modules.alias is about 1.5 MiB


def modules_dir(root: str | Path = "/") -> Path | None:
    """/lib/modules/RELEASE of the running kernel (RELEASE from /proc/sys/kernel/osrelease), or None."""
    release = read_attr(Path(root, "proc/sys/kernel/osrelease"))
    if not release or "/" in release or release.startswith("."):
        return None
    for base in ("lib/modules", "usr/lib/modules"):
        d = Path(root, base, release)
        if d.is_dir():
            return d
    return None


def _read(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(MAX_INDEX_BYTES).decode(errors="replace")
    except OSError:
        return ""


def _module_of(file: str) -> str | None:
    name = file.rsplit("/", 1)[-1]
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)].replace("_", "-")
    return None


def installed_schedulers(root: str | Path = "/") -> dict[str, str]:
    """Scheduler name -> the module that provides it, for every scheduler module installed for the running kernel
    (loaded or not): from the NAME-iosched aliases of modules.alias and the modules named NAME-iosched."""
    d = modules_dir(root)
    if d is None:
        return {}
    out: dict[str, str] = {}
    for line in _read(d / "modules.alias").splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[0] != "alias" or not parts[1].endswith("-iosched"):
            continue
        name, module = parts[1].removesuffix("-iosched"), parts[2].replace("_", "-")
        if name.startswith("mq-") and name[3:] == module:  # mq-adios-iosched -> adios
            name = module
        if SCHEDULER_NAME.match(name) and MODULE_NAME.match(module):
            out.setdefault(name, module)
    for line in _read(d / "modules.dep").splitlines():
        file_module = _module_of(line.partition(":")[0])
        if file_module and file_module.endswith("-iosched") and MODULE_NAME.match(file_module):
            name = file_module.removesuffix("-iosched")
            if SCHEDULER_NAME.match(name):
                out.setdefault(name, file_module)
    return out


def scheduler_module(name: str, root: str | Path = "/") -> str | None:
    """The installed module that provides scheduler ``name`` for the running kernel, or None."""
    return installed_schedulers(root).get(name) if SCHEDULER_NAME.match(name) else None
