"""One load per device across iosched processes: a second experiment, matrix or job on a device already
under load is refused, naming the holder's pid."""

from __future__ import annotations

import subprocess
import sys

from iosched.core.settings.device_lock import DeviceBusy, load_lock

from conftest import run_cli
from fixtree import FixTree


def test_a_second_load_on_a_device_is_refused_with_the_holders_pid(tmp_path):
    tree = FixTree(tmp_path / "root")
    tree.add_disk("sdb", "8:16")
    tree.add_disk("sdc", "8:32")
    root = ["--root", str(tree.root)]
    with load_lock("sdb", "compare", tree.root):
        # Whole, valid commands (the experiment service checks its plan before it takes the lock).
        for args in (["compare", "sdb", "--schedulers", "none,bfq", "--job", "4k-read"],
                     ["run", "sdb", "--job", "4k-read"],
                     ["compare", "sdb", "--schedulers", "none,bfq", "--jobs", "4k-matrix"]):
            r = run_cli(*root, *args)
            assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
            assert "sdb is already under load from iosched (pid " in r.stderr and ", compare)" in r.stderr
        try:
            with load_lock("sdb", "job", tree.root):
                raise AssertionError("a second holder in this process too")
        except DeviceBusy:
            pass
        with load_lock("sdc", "job", tree.root):  # another device: its own lock
            pass
    # Released with its holder, even one that is killed.
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from iosched.core.settings.device_lock import "
                               "load_lock\nwith load_lock('sdb', 'test', sys.argv[1]):\n    print('held', flush=True)\n"
                               "    time.sleep(60)", str(tree.root)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        r = run_cli(*root, "run", "sdb", "--job", "4k-read")
        assert r.returncode == 1 and f"pid {holder.pid}, test" in r.stderr
    finally:
        holder.kill()
        holder.wait()
    with load_lock("sdb", "compare", tree.root):
        pass
