"""One load per device across iosched processes, and results that cannot be saved: a second experiment, matrix
or job on a device already under load is refused (command line and TUI); a save that fails at the end still
shows the result, with one warning and exit 1."""

from __future__ import annotations

import json
import subprocess
import sys

from test_experiment_real import fio_procs
from test_tui_compare import open_compare
from test_tui_jobs import select, wait_until

from iosched.core.settings.device_lock import DeviceBusy, load_lock
from iosched.tui.app import IoschedApp
from iosched.tui.dialogs import JobPicker

from conftest import need_real, run_cli
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


async def test_the_tui_refuses_a_job_and_an_experiment_on_a_device_under_load_elsewhere(loopdev):
    need_real("fio")
    with load_lock(loopdev.name, "matrix"):  # as another iosched running a matrix on it would
        app = IoschedApp(interval=0.25, watch_udev=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await select(app, pilot, loopdev.name)
            await pilot.press("j")
            assert isinstance(app.screen, JobPicker)
            await pilot.press("enter")
            assert await wait_until(pilot, lambda: app.live.job is None, 10)
            assert any("already under load" in n.message for n in app._notifications)
            screen = await open_compare(app, pilot, loopdev)
            await pilot.press("ctrl+r")
            assert await wait_until(pilot, lambda: not screen.running, 10)
            assert "already under load" in str(screen.query_one("#live").content)
            assert fio_procs(loopdev.path) == [] and loopdev.current() == loopdev.initial_scheduler
            await pilot.press("escape")
            await pilot.press("q")


def test_a_save_that_fails_at_the_end_still_shows_the_result_with_one_warning(loopdev, tmp_path):
    need_real("fio")
    # /proc/self is a directory, so the name passes the check before the runs; writing there fails after them.
    r = run_cli("compare", loopdev.name, "--schedulers", "none,none", "--job", "randread-q16t2", "--runtime", "0.5",
                "--repeat", "2", "--settle", "0", "--json", "--save", "/proc/self/result.json", timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert json.loads(r.stdout)["comparisons"]  # the result is shown all the same
    warnings = [line for line in r.stderr.splitlines() if "could not be saved" in line]
    assert len(warnings) == 1 and "/proc/self/result.json" in warnings[0]
    assert loopdev.current() == loopdev.initial_scheduler
    # An empty name is refused before anything runs, not silently left unsaved.
    r = run_cli("compare", loopdev.name, "--schedulers", "none,bfq", "--job", "randread-q16t2", "--save", "")
    assert r.returncode == 2 and "no file name given to save to" in r.stderr and r.stdout == ""
