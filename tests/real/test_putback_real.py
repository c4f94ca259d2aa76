"""Every ending of a run puts the device back exactly as it was, on real loop devices with real fio: mq-deadline with
nr_requests and two of its tunables set by hand (the switches a run makes reset all three), then a compare and an
advise, each ended normally and by SIGINT, SIGTERM and SIGHUP. After each: the scheduler, every tunable and every
queue knob as before, no journal entry and no starting point of the run left, no fio work folder. A SIGKILLed run
has no ending of its own: `iosched restore` puts its device back from the starting point it wrote first.

Kept short for CI: half-second runs to the end; a signal as soon as fio runs under the run's first change."""

from __future__ import annotations

import signal
import time

import pytest
from fio_support import no_fio_left, start_cli, wait_for_fio
from putback_support import hand_set, journal_entries, settings_of, starts_left, work_folders

from conftest import need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


COMPARE = ("--schedulers", "mq-deadline,bfq", "--job", "randread-q16t2", "--repeat", "1", "--settle", "0")
ADVISE = ("--goal", "throughput", "--job", "randread-q16t2", "--candidates", "bfq", "--settle", "0", "--yes")
# SIGKILL: no ending of its own; `iosched restore` puts the device back from the run's starting point.
ENDINGS = [(None, 0), (signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGKILL, -9)]


@pytest.mark.parametrize("command", ["compare", "advise"])
def test_hand_set_values_are_back_after_every_ending(tmpfs_loop, private_journal, command):
    need_real("fio")
    loop = tmpfs_loop
    before = hand_set(loop)
    for sig, code in ENDINGS:
        # To the end: half-second runs, the fewest a plan takes (11 for advise); stopped: runs long enough to be
        # under way when the signal comes.
        runtime = ("--runtime", "0.5") if sig is None else ("--runtime", "30")
        budget = ("--budget", "20") if sig is None else ("--budget", "20m")
        args = (*COMPARE, *runtime) if command == "compare" else (*ADVISE, *runtime, *budget)
        p = start_cli(command, loop.name, *args)
        if sig is not None:
            wait_for_fio(loop.path, p, timeout=60)
            deadline = time.monotonic() + 10
            while settings_of(loop) == before and time.monotonic() < deadline:
                time.sleep(0.05)
            assert settings_of(loop) != before  # a switch made by the run: nr_requests, async_depth reset
            p.send_signal(sig)
        _, err = p.communicate(timeout=120)
        ending = sig.name if sig is not None else "the end"
        # An advice run to its end answers 0, or 1 when its runs cannot tell (on half-second runs, often): both end.
        ends = {0, 1} if sig is None and command == "advise" else {code}
        assert p.returncode in ends, (ending, err)
        assert "Traceback" not in err
        if sig == signal.SIGKILL:
            no_fio_left(loop.path)  # it dies with iosched (setpriv --pdeathsig)
            assert settings_of(loop) != before and starts_left(private_journal) != []
            r = run_cli("restore")
            assert r.returncode == 0 and f"{loop.name}: put back as pid {p.pid}'s run found it: " in r.stdout, r
        assert settings_of(loop) == before, ending
        assert journal_entries(private_journal) == [] and starts_left(private_journal) == [], ending
        assert work_folders(p.pid) == [], ending
        no_fio_left(loop.path)
