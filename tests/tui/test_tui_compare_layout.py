"""The compare screen as a person reads it at 80x24 and 120x40: the baseline, check boxes without colour, the
interim lines giving way to the verdict, the progress percentage, the help key.

On fixture data: the screen is fed the events a run sends (core's own Event and a judged document), so the
words on screen are known in advance; the real runs are in test_tui_compare.py.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from doc_support import experiment_doc
from textual.widgets import Input, Select
from tui_support import SteppedSampler, populated_tree, screen_text, set_counters

from iosched.core.documents.document import ExperimentDoc
from iosched.core.experiment.events import Progress, RunEnded
from iosched.core.experiment.variants import plan_order
from iosched.core.load.fio import FioProgress
from iosched.core.load.startup_replay import StartupJob
from iosched.core.present.sentences import comparison_sentence
from iosched.core.present.summary import verdict_lines
from iosched.core.statistics.verdict import RunningVerdict, judge
from iosched.tui.app import IoschedApp
from iosched.tui.checklist import MarkedCheckbox, SchedulerChecklist
from iosched.tui.compare_form import CompareForm
from iosched.tui.compare_run import ExperimentEnded, ExperimentEvent
from iosched.tui.compare_screen import CompareScreen
from iosched.tui.dialogs import HelpScreen


async def open_compare(tmp_path, pilot, app: IoschedApp) -> CompareScreen:
    tree = app._tree
    await pilot.pause()
    for step in range(1, 4):
        set_counters(tree, step)
        app.live.tick()
    await pilot.press("down", "c")  # sda: mq-deadline kyber [bfq] none
    await pilot.pause()
    assert isinstance(app.screen, CompareScreen)
    return app.screen


def fixture_app(tmp_path) -> IoschedApp:
    tree = populated_tree(tmp_path / "root")
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False)
    app._tree = tree
    return app


def rows(app: IoschedApp) -> str:
    return "\n".join(screen_text(app))


def flat(text: str) -> str:
    """Words only: a line the screen wrapped reads the same as the line (the scrollbar's blocks left out)."""
    return " ".join("".join(c for c in text if not 0x2580 <= ord(c) <= 0x259F).split())


def judged_doc(labels: list[str]) -> ExperimentDoc:
    """Three variants, three runs each, in the batch order, with the metrics a fio run has."""
    rnd = random.Random(4)
    base = {"iops": 150e3, "mb_s": 600.0, "clat_mean_us": 210.0, "clat_p50_us": 190.0, "clat_p99_us": 900.0,
            "cpu_us_per_io": 18.0, "cpu_usr": 20.0, "cpu_sys": 50.0}
    effect = dict(zip(labels, (1.0, 0.62, 0.97)))
    runs = []
    for i, a in enumerate(plan_order(3, 3)):
        lb = labels[a]
        m = {k: v * (effect[lb] if k in ("iops", "mb_s") else 1 / effect[lb]) * rnd.uniform(0.95, 1.05)
             for k, v in base.items()}
        runs.append({"index": i, "variant": lb, "valid": True, "start": i, "end": i + 1, "invalid_reason": None,
                     "config": {"scheduler": lb}, "fio": None, "metrics": m})
    return experiment_doc({"variants": [{"label": lb} for lb in labels], "runs": runs,
                           "order": [r["variant"] for r in runs], "repeat": 3, "kind": "compare",
                           "device": {"name": "sda"}, "kernel": "6.18",
                           "workload": {"job": {"name": "randread-q16t2"}}})


async def test_the_baseline_is_named_marked_and_chosen_with_b(tmp_path):
    app = fixture_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_compare(tmp_path, pilot, app)
        checklist = screen.query_one(SchedulerChecklist)
        text = rows(app)
        # Picked at open: the device's bfq and mq-deadline; what the device runs now, bfq, is the baseline.
        assert "bfq (baseline)" in text and "baseline: bfq" in text
        assert "mq-deadline (baseline)" not in text
        await pilot.press("down", "b")  # kyber: ticked and made the baseline in one key
        await pilot.pause()
        text = rows(app)
        assert "kyber (baseline)" in text and "baseline: kyber" in text and "bfq (baseline)" not in text
        assert checklist.order == ["kyber", "mq-deadline", "bfq"]
        await pilot.press("space")  # unticked: the first selected is the baseline again
        await pilot.pause()
        assert checklist.order == ["mq-deadline", "bfq"] and "baseline: mq-deadline" in rows(app)
        await pilot.press("down", "down", "space", "b")  # none ticked; b on a ticked one leaves it ticked
        await pilot.pause()
        assert checklist.order == ["none", "mq-deadline", "bfq"] and "none (baseline)" in rows(app)


async def test_check_boxes_read_without_colour(tmp_path):
    app = fixture_app(tmp_path)
    app.theme_name = "mono"
    async with app.run_test(size=(80, 24)) as pilot:
        await open_compare(tmp_path, pilot, app)
        text = screen_text(app)
        box = {name: next(r for r in text if f" {name}" in r and "▐" in r) for name in ("kyber", "bfq", "none")}
        assert "▐X▌ bfq" in box["bfq"]
        assert "▐ ▌ kyber" in box["kyber"] and "▐ ▌ none" in box["none"]
        assert any("▐ ▌ live alternation" in r for r in text)
        app.screen.query_one("#alternate").value = True
        await pilot.pause()
        assert any("▐X▌ live alternation" in r for r in screen_text(app))


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_the_verdict_replaces_the_interim_lines_and_fits(tmp_path, size):
    app = fixture_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        screen = await open_compare(tmp_path, pilot, app)
        await pilot.press("down", "space")  # kyber too: three variants, two verdict lines
        await pilot.pause()
        labels = screen.query_one(SchedulerChecklist).order
        doc = judged_doc(labels)
        # What action_start sets up before the worker runs, then the worker's events.
        screen.query_one("ProgressBar").update(total=len(doc.runs), progress=0)
        verdict = RunningVerdict(labels)  # as the experiment service keeps it: each run-end carries where it stands
        screen.running = True
        for r in doc.runs:
            verdict.add(r)
            screen.post_message(ExperimentEvent(RunEnded(r.index, 0, r.variant, r, standing=verdict.standing())))
            await pilot.pause()
            if r.index == 6:
                assert "so far: interim, 2 runs per variant: " in flat(rows(app))
        doc = replace(doc, judgement=judge(doc))
        screen.post_message(ExperimentEnded(doc))
        await pilot.pause()
        await pilot.pause()
        text = flat(rows(app))
        assert "so far" not in text and "interim" not in text
        assert "100%" in text
        assert doc.judgement is not None
        # The summary: what ran, then a verdict line per variant, the runs as dots under it.
        verdict = verdict_lines(doc, doc.judgement)
        assert labels[0] == "bfq"  # the device's own
        assert verdict[1].startswith(f"{labels[1]}: 35% fewer IOPS than bfq"), verdict
        assert all(flat(v) in text for v in verdict[1:3]), verdict
        assert "each against bfq" in text and "•" in text
        # Every comparison is behind ctrl+d, further down: the screen says how to get there, and the keys get there.
        assert "PgDn/PgUp scroll the results" in text and "^d Details" in text
        await pilot.press("ctrl+d")
        await pilot.pause()
        comps = doc.judgement.comparisons
        said = {comparison_sentence(c, adjusted=True if c.primary else None) for c in comps}
        seen = set()
        for _ in range(12):
            seen.update(v for v in said if flat(v) in flat(rows(app)))
            await pilot.press("pagedown")
            await pilot.pause()
        assert seen == said


def help_text(app) -> str:
    return " ".join(str(w.render()) for w in app.screen.query("Static"))


async def test_help_is_the_same_key_on_the_main_and_compare_screens(tmp_path):
    app = fixture_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "f1 Help" in screen_text(app)[-1]
        assert any("select a device" in text for _, text in app.help_keys())
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert "as iostat -x" in help_text(app) and "The verdict" not in help_text(app)
        await pilot.press("escape")
        screen = await open_compare(tmp_path, pilot, app)
        # The compare screen's own keys: no device selection there, but the checklist's baseline key.
        keys = app.help_keys()
        assert not any("select a device" in text for _, text in keys)
        assert ("b", "make the highlighted scheduler the baseline") in keys
        assert any("tick or untick" in text for _, text in keys)
        assert "f1 Help" in screen_text(app)[-1]
        screen.query_one("#repeat").focus()  # a text field takes "?": the footer and the key stay the same
        await pilot.pause()
        assert "f1 Help" in screen_text(app)[-1]
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        # What the compare screen's figures mean, not the main screen's.
        assert "The verdict" in help_text(app) and "as iostat -x" not in help_text(app)


# ---- what a newcomer reads at 80 columns ----------------------------------------------------------------
async def test_the_job_field_hint_and_the_progress_line_keep_whole_words_at_80x24(tmp_path):
    """The job field's hint was cut ("… cmd: COMMAND or"), the progress line mid-figure ("r_await 0.…"): the
    hint fits, and the line leaves out whole parts, never cutting one."""
    app = fixture_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_compare(tmp_path, pilot, app)
        assert "or: jobs, job files, cmd: CMD, replay: FILE" in rows(app)
        progress = FioProgress(elapsed=2.0, iops=156e3, read_iops=156e3, write_iops=0.0, mb_s=610.0,
                               clat_mean_us=225.0)
        screen.view.show(Progress(0, 6, "mq-deadline", progress))
        await pilot.pause()
        (line,) = [r for r in screen_text(app) if "now: mq-deadline" in r]
        assert line.strip() == "now: mq-deadline · fio 156k IOPS, clat 225 µs · device 100 IOPS", line
        await pilot.resize_terminal(120, 24)
        await pilot.pause()
        (line,) = [r for r in screen_text(app) if "now: mq-deadline" in r]
        assert line.strip().endswith("device 100 IOPS · r_await 8.00 ms")  # room again: every part


async def test_the_demo_presets_an_application_started_under_a_flood_until_a_verdict(tmp_path):
    """`iosched demo`: `c` offers its first scene, an application started while the disk is flooded (the bundled
    start-up beside a write flood, judged on its start-up time, caches dropped), until a verdict; the interactive
    reader under a write flood comes next; elsewhere the form is as before."""
    tree = populated_tree(tmp_path / "root")
    for focus in ("sda", None):
        app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False,
                         focus=focus, sandbox=focus)
        app._tree = tree
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_compare(tmp_path, pilot, app) if focus is None else await open_demo(pilot, app)
            form = screen.query_one(CompareForm)
            values = (form.query_one("#job", Select).value, form.query_one("#until-verdict", MarkedCheckbox).value,
                      form.query_one("#repeat", Input).value, form.query_one("#runtime", Input).value)
            if focus:
                assert values == ("startup: bundled beside seq-writers-1", True, "6", "10")
                assert "a cold Python start" in " ".join(rows(app).split())
                plan, total = form.plan(tree.root, destroy=False)
                assert isinstance(plan.job, StartupJob) and plan.job.name == "python-imports beside seq-writers-1"
                assert plan.until_verdict == 6 and plan.primary == "startup_s" and total == 12
                assert plan.drop_caches and plan.runtime is None and plan.job.background is not None
                options = [value for _label, value in form.query_one("#job", Select)._options]
                assert options[1] == "interactive-under-writes"
                form.query_one("#job", Select).value = "interactive-under-writes"
                plan, _ = form.plan(tree.root, destroy=False)
                assert plan.job is not None and plan.job.name == "interactive-under-writes"
            else:
                assert values == ("randread-q16t2", False, "3", "5")


async def open_demo(pilot, app: IoschedApp) -> CompareScreen:
    """`c` on the demo's sandbox, selected at the start as `iosched demo` opens it."""
    await pilot.pause()
    for step in range(1, 4):
        set_counters(app._tree, step)
        app.live.tick()
    await pilot.press("c")
    await pilot.pause()
    assert isinstance(app.screen, CompareScreen)
    return app.screen
