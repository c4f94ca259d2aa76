"""fio's client fenced in: it sees the system's programs and one folder, nothing else on this machine.

fio's client does what its server asks of this machine: it sends back any file the server names (the protocol's
SENDFILE, meant for job files) and writes the logs the server sends. A lockstep fleet's servers run on other hosts,
so root there could read this machine's keys through them. The client therefore runs in a mount namespace of its
own (`unshare`, util-linux), chrooted into an empty tmpfs holding only the system's program and library folders,
read-only, and the run's folder (its job files and sockets) at ``/w``. The namespace ends with the process: nothing
is left mounted.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from iosched.core.base.errors import IoschedError

INSIDE = Path("/w")  # where the run's folder appears to the client

# $1: the empty folder that becomes the root, $2: the run's folder; the rest: the command. Each system folder is
# bound read-only, or linked where the system links it (/bin -> usr/bin on a merged /usr).
_SCRIPT = r"""
set -e
root=$1; work=$2; shift 2
mount -t tmpfs -o mode=0755,size=1m iosched-fio "$root"
mkdir "$root/w"
for d in usr bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$root/$d"
  elif [ -d "/$d" ]; then mkdir "$root/$d"; mount --rbind "/$d" "$root/$d"; mount -o remount,bind,ro "$root/$d"
  fi
done
mount --bind "$work" "$root/w"
exec chroot "$root" "$@"
"""


def fenced(argv: list[str], work: Path) -> list[str]:
    """``argv`` (paths inside: the program under /usr, the run's files under ``INSIDE``) run fenced in, with
    ``work`` as the run's folder; its ``root`` subfolder, made here, is where the tmpfs goes."""
    (work / "root").mkdir(mode=0o700, exist_ok=True)
    ns = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:  # a user's own namespace, where it may mount
        ns[1:1] = ["--user", "--map-root-user"]
    return [*ns, "sh", "-c", _SCRIPT, "fio-sandbox", str(work / "root"), str(work), *argv]


def check_fence(fio: str, work: Path) -> None:
    """That fio starts fenced in here; IoschedError in one sentence when it cannot (no mount namespaces, fio
    outside the system's folders)."""
    try:
        out = subprocess.run(fenced([fio, "--version"], work), capture_output=True, text=True, errors="replace",
                             timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise IoschedError(f"fio's client cannot be fenced in here ({e}): `--independent` runs fio on each host "
                           "instead") from None
    if out.returncode != 0 or not out.stdout.startswith("fio-"):
        said = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[-1][:200]
        raise IoschedError(f"fio's client cannot be fenced in here ({said}): `--independent` runs fio on each "
                           "host instead")
