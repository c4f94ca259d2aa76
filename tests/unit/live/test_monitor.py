"""The core Monitor over fixture trees: no Textual, no root, no real device."""

import json
import subprocess
import sys
import threading

from tui_support import SteppedSampler, populated_tree, set_counters

from iosched.core.experiment.alternation import _sleep_until
from iosched.core.experiment.control import Control
from iosched.core.live.monitor import (
    InventoryDiff,
    Monitor,
    ReplayMonitor,
    SettingsWatch,
    diff_inventory,
)
from iosched.core.live.recording import Recorder, load

from fixtree import diskstats_line


def test_steps_give_rates_into_a_bounded_history(tmp_path):
    tree = populated_tree(tmp_path)
    mon = Monitor(SteppedSampler(tree.root), root=tree.root, capacity=5)
    assert mon.step() is None  # the first sample is the baseline
    for n in range(1, 9):
        set_counters(tree, n)
        rates = mon.step()
        assert rates is not None and rates.interval == 1.0
    assert mon.last_rates is rates
    assert rates.disks["sda"].r_s == 100.0 and rates.disks["nvme0n1"].w_s == 2000.0
    assert len(mon.history.recent_times()) == 5  # bounded by capacity, oldest dropped
    assert mon.history.disk_series("sda", "r_s") == [100.0] * 5


class Counter:
    name = "counter"

    def __init__(self) -> None:
        self.seen = 0

    def step(self, rates):
        self.seen += 1
        return {"disks": sorted(rates.disks)}


def test_a_probe_is_stepped_with_each_interval_and_its_value_kept(tmp_path):
    tree = populated_tree(tmp_path)
    probe = Counter()
    mon = Monitor(SteppedSampler(tree.root), root=tree.root, probes=[probe])
    mon.step()
    mon.step()
    mon.step()
    assert probe.seen == 2
    assert mon.extras["counter"] == {"disks": ["nvme0n1", "sda", "zram0"]}


def test_markers_are_deduplicated_per_device_and_label(tmp_path):
    mon = Monitor(SteppedSampler(populated_tree(tmp_path).root), root=tmp_path)
    assert mon.mark("sda", "kyber", 10.0)
    assert not mon.mark("sda", "kyber", 12.0, "outside")  # our switch, then the inventory poll seeing it
    assert mon.mark("sda", "kyber", 30.0)
    assert mon.mark("sda", "job", 12.0, "job") and mon.mark("sda", "job", 12.5, "job")  # jobs are not merged
    assert [m.label for m in mon.markers_of("sda")] == ["kyber", "kyber", "job", "job"]
    assert mon.markers_of("nvme0n1") == [] and mon.markers_of(None) == []


def test_inventory_diffs_devices_coming_and_going_and_outside_switches(tmp_path):
    tree = populated_tree(tmp_path)
    mon = Monitor(SteppedSampler(tree.root), root=tree.root)
    first = mon.apply_inventory(mon.read_inventory(), mon.inventory_token())
    assert first == InventoryDiff(added=("nvme0n1", "sda", "zram0"))
    assert mon.markers_of("sda") == []  # the first inventory is no change

    tree.add_disk("loop7", "7:7")
    tree.write("sys/block/sda/queue/scheduler", "mq-deadline [kyber] bfq none\n")
    diff = mon.apply_inventory(mon.read_inventory(), mon.inventory_token())
    assert diff.added == ("loop7",) and diff.removed == () and diff.schedulers == (("sda", "bfq", "kyber"),)
    assert [(m.label, m.kind) for m in mon.markers_of("sda")] == [("kyber", "outside")]

    before = mon.devices
    assert diff_inventory(before, [d for d in before if d.name != "loop7"]).removed == ("loop7",)
    assert not diff_inventory(before, before)


def test_a_late_inventory_read_never_replaces_a_newer_one(tmp_path):
    tree = populated_tree(tmp_path)
    mon = Monitor(SteppedSampler(tree.root), root=tree.root)
    old_token = mon.inventory_token()
    stale = mon.read_inventory()
    tree.add_disk("loop7", "7:7")
    new_token = mon.inventory_token()
    assert mon.apply_inventory(mon.read_inventory(), new_token) is not None
    assert mon.apply_inventory(stale, old_token) is None  # the cancelled worker's result arrives last
    assert "loop7" in [d.name for d in mon.devices]


def test_take_disks_changed_notices_a_new_line_in_diskstats(tmp_path):
    tree = populated_tree(tmp_path)
    mon = Monitor(SteppedSampler(tree.root), root=tree.root)
    mon.step()
    mon.step()
    assert not mon.take_disks_changed()
    tree.add_disk("loop7", "7:7")
    tree.set_diskstats([diskstats_line(8, 0, "sda", [0] * 17), diskstats_line(7, 7, "loop7", [0] * 17)])
    mon.step()
    assert mon.take_disks_changed()
    assert not mon.take_disks_changed()  # reported once


def test_settings_watch_reports_changes_by_anyone_and_only_the_switch_when_switched(tmp_path):
    tree = populated_tree(tmp_path)
    tree.write("sys/block/sda/queue/iosched/slice_idle", "8\n")
    watch = SettingsWatch(["sda"], tree.root)
    assert watch.poll() == []
    tree.write("sys/block/sda/queue/read_ahead_kb", "256\n")
    assert [(c.name, c.old, c.new) for c in watch.poll()] == [("read_ahead_kb", "128", "256")]
    tree.write("sys/block/sda/queue/scheduler", "mq-deadline kyber bfq [none]\n")
    tree.write("sys/block/sda/queue/nr_requests", "256\n")
    assert [(c.name, c.old, c.new) for c in watch.poll()] == [("scheduler", "bfq", "none")]


def test_replay_is_a_monitor_fed_from_a_recording(tmp_path):
    tree = populated_tree(tmp_path / "t")
    rec_path = tmp_path / "r.jsonl"
    recorder = Recorder(rec_path, None, 1.0, tree.root)
    recorder.monitor.source = SteppedSampler(tree.root)
    for n in range(6):
        set_counters(tree, n)
        if n == 3:
            tree.write("sys/block/sda/queue/scheduler", "mq-deadline [kyber] bfq none\n")
        recorder.step()
    recorder.close()
    rec = load(rec_path)
    mon = Monitor.replay(rec)
    assert isinstance(mon, ReplayMonitor) and mon.seekable and mon.length == 5
    mon.seek(2)
    assert mon.pos == 2 and len(mon.history.recent_times()) == 2 and mon.elapsed == 2.0
    assert mon.device("sda").scheduler == "bfq"  # as it was at that moment
    assert mon.last_rates.disks["sda"].r_s == 100.0
    mon.seek(99)
    assert mon.pos == 5 and mon.device("sda").scheduler == "kyber" and mon.span == 5.0
    assert [m.label for m in mon.markers_of("sda")] == ["kyber"]
    mon.seek(-3)
    assert mon.pos == 1
    header = json.loads(rec_path.read_text().splitlines()[0])
    assert [d["name"] for d in header["inventory"]] == [d.name for d in mon.devices]


def test_experiment_waits_end_at_once_on_cancel():
    ctl = Control()
    alive = threading.Event()
    worker = threading.Thread(target=alive.wait, daemon=True)
    worker.start()
    done = threading.Event()

    def wait() -> None:
        _sleep_until(float("inf"), ctl, worker)  # only a cancel (or fio ending) can end this wait
        done.set()

    t = threading.Thread(target=wait, daemon=True)
    t.start()
    ctl.cancel()
    t.join(30)
    assert done.is_set()
    alive.set()


def test_monitor_loads_no_ui_library():
    code = ("import sys, iosched.core.live.monitor\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"
