"""A busy machine named: an experiment started while another iosched loads another device says so, on stderr
and in the result, without touching that other lock."""

from __future__ import annotations

import json
import os

import pytest

from iosched.core.settings.device_lock import load_lock

from conftest import need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def test_another_iosched_load_is_named_before_the_first_run(make_loop):
    need_real()
    a, b = make_loop("64M"), make_loop("64M")
    with load_lock(b.name, "job 4k-randread (a test)"):
        r = run_cli("compare", a.name, "--schedulers", "none,mq-deadline", "--cmd", "true", "--repeat", "1",
                    "--settle", "0", "--json", timeout=60)
        assert r.returncode == 0, r.stderr
        said = f"another iosched loads {b.name} (pid {os.getpid()}, job 4k-randread (a test)) before the first run"
        assert f"iosched: busy machine: {said}" in r.stderr
        assert any(said in n for n in json.loads(r.stdout)["notes"])
    # Alone again: nothing said. (The look never took b's lock: this process took it back and let it go.)
    r = run_cli("compare", a.name, "--schedulers", "none,mq-deadline", "--cmd", "true", "--repeat", "1",
                "--settle", "0", "--json", timeout=60)
    assert r.returncode == 0 and "another iosched" not in r.stderr, r.stderr
    with load_lock(b.name, "again"):
        pass
