"""`iosched serve` without a browser: the host rule, the writer lock, and the read-only app refusing writes."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
from textual.widgets import Input, Static
from tui_support import SteppedSampler, populated_tree

from iosched.cli.serve import app_command, is_loopback
from iosched.core.load.jobs import GROUPS
from iosched.core.settings.writer_lock import WriterBusy, acquire_writer_lock
from iosched.tui.app import IoschedApp
from iosched.tui.compare_form import SERVED_NOTICE, CompareForm
from iosched.tui.compare_screen import CompareScreen
from iosched.tui.dialogs import SchedulerPicker
from iosched.tui.launch import served_in_browser
from iosched.tui.widgets.status_bar import StatusBar

from conftest import run_cli


@pytest.mark.parametrize("host", ["10.0.0.1", "0.0.0.0", "::", "example.org", "192.168.1.2"])
def test_a_non_loopback_host_needs_public(host: str):
    r = run_cli("serve", "--host", host, "--port", "1")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--public" in lines[0] and "ssh -L 8000:localhost:8000" in lines[0]
    assert r.stdout == ""


def test_loopback_addresses():
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.1.1.1", "host.example", ""))


@pytest.mark.parametrize("port", ["0", "65536", "http"])
def test_a_bad_port_is_bad_input(port: str):
    r = run_cli("serve", "--port", port)
    assert r.returncode == 2 and "port" in r.stderr


def test_views_are_read_only_unless_writes_are_allowed():
    from iosched.cli.main import build_parser

    args = build_parser().parse_args(["serve"])
    assert app_command(args).endswith(" --read-only")
    args = build_parser().parse_args(["--theme", "mono", "serve", "--allow-writes"])
    command = app_command(args)
    assert "--read-only" not in command and "--theme mono" in command and " -m iosched.cli " in command
    # The served app knows it is served, writes allowed or not: no commands and no job files.
    tui_args = build_parser().parse_args(shlex.split(command)[3:])
    assert tui_args.command is None and tui_args.served and not tui_args.read_only


def test_a_second_writer_is_refused_with_the_first_writers_pid(tmp_path: Path):
    first = acquire_writer_lock(tmp_path / "run")
    assert first is not None
    try:
        with pytest.raises(WriterBusy) as e:
            acquire_writer_lock(tmp_path / "run")
        assert e.value.pid == str(os.getpid()) and f"pid {os.getpid()}" in str(e.value)
    finally:
        os.close(first)
    again = acquire_writer_lock(tmp_path / "run")  # released with its descriptor
    assert again is not None
    os.close(again)


def test_the_web_driver_is_what_counts_as_served(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("TEXTUAL_DRIVER", raising=False)
    assert not served_in_browser()
    monkeypatch.setenv("TEXTUAL_DRIVER", "textual.drivers.web_driver:WebDriver")
    assert served_in_browser()


async def test_read_only_app_refuses_every_write_with_a_notice(tmp_path: Path):
    tree = populated_tree(tmp_path / "root")
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False,
                     read_only=True)
    before = (tree.root / "sys/block/sda/queue/scheduler").read_text()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down")  # sda
        for key in ("s", "j", "c", "u", "P", "l"):
            app.clear_notifications()
            await pilot.press(key)
            await pilot.pause()
            assert not isinstance(app.screen, SchedulerPicker) and app.screen is app.screen_stack[0], key
            notes = list(app._notifications)
            assert notes and notes[-1].title == "Read-only" and "--allow-writes" in notes[-1].message, key
        assert app.live.tracing.probe is None and not app.live.has_class("-latency")  # no root bpftrace
        app.live.settings.start_switch("sda", "none")  # the command palette's way in
        await pilot.pause()
        assert app.live.jobs.job is None and not app.live.settings.changed
        # The compare screen refuses to start on its own too, should it ever be reached.
        compare = CompareScreen(app.monitor, app.live.selected_device(), app.live)
        await app.push_screen(compare)
        app.clear_notifications()
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert not compare.running and compare.ctl is None
        assert list(app._notifications)[-1].title == "Read-only"
        await pilot.press("escape")
        await pilot.pause()
        assert app.query_one(StatusBar).plain_text().startswith("iosched  read-only  sda [bfq]")
    assert (tree.root / "sys/block/sda/queue/scheduler").read_text() == before


async def test_a_writer_app_still_opens_the_picker(tmp_path: Path):
    tree = populated_tree(tmp_path / "root")
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down", "s")
        await pilot.pause()
        assert isinstance(app.screen, SchedulerPicker)


async def served_compare(app: IoschedApp, pilot) -> CompareScreen:
    await pilot.press("down", "c")  # sda
    await pilot.pause()
    assert isinstance(app.screen, CompareScreen) and app.screen.served
    return app.screen


@pytest.mark.parametrize("spec", ["cmd: touch {marker}", "{job}", "4k-read,{job}", " cmd:touch {marker}"])
async def test_a_served_app_with_writes_runs_no_command_and_reads_no_job_file(tmp_path: Path, spec: str):
    tree = populated_tree(tmp_path / "root")
    marker, job = tmp_path / "ran", tmp_path / "mine.fio"
    job.write_text(f"[x]\nrw=read\nfilename={tmp_path / 'data'}\nsize=1M\n")
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False,
                     served=True)
    before = (tree.root / "sys/block/sda/queue/scheduler").read_text()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await served_compare(app, pilot)
        screen.query_one("#spec", Input).value = spec.format(marker=marker, job=job)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert not screen.running and screen.ctl is None
        notes = list(app._notifications)
        assert notes and notes[-1].message == SERVED_NOTICE
    assert not marker.exists()
    assert (tree.root / "sys/block/sda/queue/scheduler").read_text() == before


async def test_a_served_app_still_takes_catalog_jobs_and_groups(tmp_path: Path):
    tree = populated_tree(tmp_path / "root")
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False,
                     served=True)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await served_compare(app, pilot)
        for spec, names in (("4k-read, 1m-seq-1", ["4k-read", "1m-seq-1"]),
                            ("seq-read", list(GROUPS["seq-read"].jobs))):
            screen.query_one("#spec", Input).value = spec
            jobs, _, cmd = screen.query_one(CompareForm).workloads(1.0)
            assert cmd is None and [j.name for j in jobs] == names


async def test_the_served_compare_worker_refuses_a_command_that_got_past_the_form(tmp_path: Path):
    from iosched.core.documents.params import parse_variants
    from iosched.core.experiment.compare import ComparePlan
    from iosched.core.experiment.control import Control

    tree = populated_tree(tmp_path / "root")
    marker = tmp_path / "ran"
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False,
                     served=True)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await served_compare(app, pilot)
        screen.ctl, screen.running = Control(), True
        screen._run(ComparePlan("sda", parse_variants("bfq,none"), cmd=f"touch {marker}", repeat=2, root=tree.root))
        for _ in range(100):
            await pilot.pause(0.05)
            if not screen.running:
                break
        assert not screen.running and "refused" in str(screen.query_one("#live", Static).content)
    assert not marker.exists()


def test_the_page_ships_every_glyph_the_tui_draws_that_its_font_lacks():
    import base64
    import io
    import re

    from glyph_coverage import drawn_characters, font_covers, glyphs_to_ship

    import iosched.cli.serve

    css = (Path(iosched.cli.serve.PAGE_DIR) / "glyphs.css").read_text()
    font = base64.b64decode(re.search(r"base64,([^)]*)\)", css).group(1))
    need = glyphs_to_ship()
    assert {0x2800, 0x28FF, ord("●"), ord("▶")} <= need <= drawn_characters()
    missing = sorted(chr(c) for c in need - font_covers(io.BytesIO(font)))
    assert missing == [], "run docs/web_glyphs.py"
    assert '{% include "glyphs.css" %}' in (Path(iosched.cli.serve.PAGE_DIR) / "app_index.html").read_text()
