"""The CO-RE block tracer (bpf/): where its loader is, whether it can run here, and how to start it.

The install step builds it (bpf/build.sh, called from setup.py) with clang and bpftool against this machine's
BTF, and links the loader with libbpf; CO-RE relocations let the same object load on other kernels with BTF.
When the build could not run, build.sh's reason is kept beside where the loader would be (BUILD-FAILED), so the
tracer can say why it runs bpftrace instead.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

from iosched.core.base.errors import IoschedError

PROGRAM_DIR = Path(__file__).with_name("bpf")
LOADER = "iosched-blktrace"
BUILD_FAILED = "BUILD-FAILED"
# tp_btf programs with one-argument block_rq_insert/issue (5.11); BTF in the kernel.
MIN_KERNEL = (5, 11)
INSTALL_HINT = "apt-get install -y clang bpftool libbpf-dev, then reinstall iosched"
# Devices the program filters on itself (BT_MAX_FILTER in bpf/blktrace.h); with more it traces all.
BT_MAX_FILTER = 64


class ProgramUnavailable(IoschedError):
    """The CO-RE tracer cannot run here (the sentence says why)."""


def loader_path(directory: Path | None = None) -> Path:
    return (directory or PROGRAM_DIR) / LOADER


def kernel_release(release: str | None = None) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.(\d+)", release if release is not None else os.uname().release)
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_program(root: str | Path = "/", loader: Path | None = None, release: str | None = None) -> Path:
    """The loader to run, or ProgramUnavailable saying why the CO-RE tracer cannot run on this machine."""
    path = loader or loader_path()
    if not os.access(path, os.X_OK):
        why = ""
        with contextlib.suppress(OSError, IndexError):
            why = path.with_name(BUILD_FAILED).read_text(errors="replace").strip().splitlines()[-1][:200]
        raise ProgramUnavailable("the CO-RE tracer was not built when iosched was installed"
                                 + (f" ({why})" if why else "") + f"; to build it: {INSTALL_HINT}")
    if not Path(root, "sys/kernel/btf/vmlinux").exists():
        raise ProgramUnavailable("this kernel has no BTF (/sys/kernel/btf/vmlinux), which the CO-RE tracer needs")
    have = kernel_release(release)
    if have is None or have < MIN_KERNEL:
        raise ProgramUnavailable(f"the CO-RE tracer needs Linux {MIN_KERNEL[0]}.{MIN_KERNEL[1]} or later")
    return path


def loader_argv(loader: Path, interval: float, devs: Sequence[int] | None) -> list[str]:
    """The loader's command line: its interval and, unless every device is traced, their kernel dev_t."""
    argv = [str(loader), "--interval-ms", str(max(round(interval * 1000), 10))]
    for d in sorted(set(devs or ())):
        argv += ["--dev", str(int(d))]
    if devs is not None and not devs:
        argv += ["--dev", "0"]  # a filter that matches no device
    return argv
