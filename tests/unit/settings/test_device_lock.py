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


def test_lock_files_go_with_their_lock_and_a_dead_holders_with_restore_never_a_live_ones(tmp_path, private_journal):
    """The run folder does not fill with lock files: a lock released takes its file along; one a killed holder left
    is removed by `restore`; a live holder's is left to it and still refuses a second load."""
    import fcntl
    import os

    from iosched.core.settings.pidlock import _named, sweep, take

    tree = FixTree(tmp_path / "root")
    tree.add_disk("sdb", "8:16")
    tree.add_disk("sdc", "8:32")
    folder = private_journal / "devices"
    with load_lock("sdb", "compare", tree.root):
        assert [p.name for p in folder.iterdir()] == ["sdb.lock"]
    assert list(folder.iterdir()) == []

    def holder(device: str) -> subprocess.Popen[str]:
        code = ("import sys, time; from iosched.core.settings.device_lock import load_lock\n"
                "with load_lock(sys.argv[2], 'test', sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(60)")
        p = subprocess.Popen([sys.executable, "-c", code, str(tree.root), device], stdout=subprocess.PIPE, text=True)
        assert p.stdout is not None and p.stdout.readline().strip() == "held"
        return p

    dead, live = holder("sdb"), holder("sdc")
    try:
        dead.kill()  # SIGKILL: no release, its file stays
        dead.wait()
        assert sorted(p.name for p in folder.iterdir()) == ["sdb.lock", "sdc.lock"]
        assert run_cli("--root", str(tree.root), "restore").returncode == 0
        assert [p.name for p in folder.iterdir()] == ["sdc.lock"]  # the live one's kept, and still holds
        r = run_cli("--root", str(tree.root), "run", "sdc", "--job", "4k-read")
        assert r.returncode == 1 and f"pid {live.pid}, test" in r.stderr
    finally:
        for p in (dead, live):
            p.kill()
            p.wait()
    # A taker that opened a file a sweep then removed holds nothing by it: the name leads elsewhere, it takes again.
    path = folder / "sdc.lock"
    opened = os.open(path, os.O_RDWR)
    assert sweep(folder) == [path] and not path.exists()
    fcntl.flock(opened, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the removed file's lock: free, and worth nothing
    assert not _named(path, opened)
    fd = take(path, "pid 1, test")
    assert fd is not None and _named(path, fd)
    os.close(fd)
    os.close(opened)
