"""Make the start-up capture iosched ships (core/load/startup/python-imports.iolog and its metadata) again: Debian's
python3 importing a large set of the standard library and of Debian's Python packages, from a cold page cache.

    sudo python3 docs/make_startup_capture.py     (iosched installed; from the repository)

The modules are MODULES, each kept only when this machine's python3 imports it (looked at first, warm), so the
command the metadata names ran whole. `iosched capture --cmd … --cold` syncs and drops the page cache, then records
the IO the interpreter's processes submit, on whichever disks (under sudo it runs as the user who ran sudo). What
a running process maps stays in the cache (drop_caches leaves it), so a library every process uses may come warm:
the capture is of this machine as it is. It is written beside, checked whole, then put in place of the old one.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEST = ROOT / "core/load/startup"
NAME = "python-imports.iolog"
PYTHON = "/usr/bin/python3"
MODULES = [
    # The standard library an application's start touches: event loop, mail, HTTP, XML, databases, numbers,
    # processes, logging, archives, TLS, introspection, foreign functions.
    "asyncio", "email.mime.multipart", "http.server", "json", "xml.etree.ElementTree", "sqlite3", "decimal",
    "unittest", "multiprocessing", "logging.handlers", "argparse", "csv", "ssl", "urllib.request", "zipfile",
    "tarfile", "concurrent.futures", "dataclasses", "statistics", "html.parser", "xmlrpc.client", "pydoc", "ctypes",
    "lzma", "bz2", "uuid", "smtplib", "tomllib",
    # Debian's Python packages, where installed (python3-cryptography, -yaml, -jwt, -httplib2, -oauthlib,
    # -pygments, -gi, -dbus, -apt).
    "cryptography.fernet", "yaml", "jwt", "httplib2", "oauthlib.oauth2", "pygments.lexers", "gi.repository.GLib",
    "dbus", "apt",
]


def importable(modules: list[str]) -> list[str]:
    probe = ("import importlib, sys\n"
             "for m in sys.argv[1:]:\n"
             "    try:\n        importlib.import_module(m)\n    except Exception:\n        continue\n"
             "    print(m)\n")
    out = subprocess.run([PYTHON, "-c", probe, *modules], capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.split()


def main() -> int:
    modules = importable(MODULES)
    cmd = f"{PYTHON} -c 'import {','.join(modules)}'"
    work = Path(tempfile.mkdtemp(prefix="iosched-startup-"))
    try:
        made = work / NAME
        r = subprocess.run([sys.executable, "-m", "iosched.cli", "capture", "--cmd", cmd, "--cold", "-o", str(made)],
                           text=True, timeout=600)
        if r.returncode != 0:
            return r.returncode
        from iosched.core.load.iolog import check_iolog, meta_path, read_capture

        capture = read_capture(made)
        check_iolog(capture)
        if capture.meta.command is None or capture.meta.command.exit_status != 0:
            print("the interpreter did not start cleanly: nothing was replaced", file=sys.stderr)
            return 1
        DEST.mkdir(exist_ok=True)
        for f in (made, meta_path(made)):
            shutil.copyfile(f, DEST / f.name)
        size = sum((DEST / f.name).stat().st_size for f in (made, meta_path(made)))
        m = capture.meta
        print(f"{DEST / NAME}: {len(modules)} modules, {m.requests} requests, {m.read_bytes / 2**20:.1f} MiB read in "
              f"{m.command.wall_s:.2f} s; {size / 1024:.0f} KiB with its metadata")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
