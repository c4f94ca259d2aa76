"""What competes with an experiment, by name: processes outside iosched's tree over a share of a CPU, other disks
under load, the tested device's own disks (a loop's backing disk) never; and the busy watch says each once."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from iosched.core.experiment import busy as busy_mod
from iosched.core.experiment.busy import BusyWatch
from iosched.core.experiment.competitors import (
    Look,
    ProcTimes,
    competitors,
    cpu_hogs,
    device_loads,
    own_disks,
    own_tree,
    parse_proc_times,
)
from iosched.core.kernel.procfs import DiskCounters

STAT = "4242 (stress ng) R 1 4242 4242 0 -1 4194304 100 0 0 0 {ut} {st} 0 0 20 0 1 0 {start} 1000 100 0 0 0 0 0"


def proc(pid, ppid, comm, cpu, start=100):
    return ProcTimes(pid, ppid, comm, start, cpu)


def disk(ios=0, sectors=0, ticks=0, major=7, minor=0):
    return DiskCounters(major, minor, ios, 0, sectors, 0, 0, 0, 0, 0, 0, ticks, 0)


def test_a_stat_line_gives_its_command_parent_start_and_cpu_ticks():
    p = parse_proc_times(4242, STAT.format(ut=150, st=50, start=777))
    assert p == ProcTimes(4242, 1, "stress ng", 777, 200)
    odd = parse_proc_times(7, "7 (a) b) S 3 7 7 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 9 0 0 0 0 0 0 0")
    assert odd is not None and odd.comm == "a) b" and odd.ppid == 3 and odd.cpu == 10
    assert parse_proc_times(1, "1 (x) S 0") is None
    assert parse_proc_times(1, "garbage") is None


@given(st.text(max_size=300))
def test_any_stat_text_is_times_or_none(text):
    p = parse_proc_times(1, text)
    assert p is None or (p.cpu >= 0 and p.start >= 0 and p.comm.isprintable())


def test_iosched_s_own_tree_is_it_and_its_descendants():
    procs = {p.pid: p for p in [proc(10, 1, "iosched", 0), proc(11, 10, "fio", 0), proc(12, 11, "fio", 0),
                                proc(20, 1, "other", 0), proc(21, 20, "child", 0)]}
    assert own_tree(procs, 10) == {10, 11, 12}


def test_a_process_over_its_share_of_a_cpu_is_named_busiest_first():
    before = {p.pid: p for p in [proc(5, 1, "hog", 1000), proc(6, 1, "idle", 50), proc(7, 1, "hog2", 0),
                                 proc(8, 10, "fio", 0), proc(9, 2, "kworker/1:0", 0)]}
    after = {p.pid: p for p in [proc(5, 1, "hog", 1180), proc(6, 1, "idle", 52), proc(7, 1, "hog2", 198),
                                proc(8, 10, "fio", 200), proc(9, 2, "kworker/1:0", 200),
                                proc(30, 1, "new", 60, start=500)]}
    hogs = cpu_hogs(before, after, 2.0, 100.0, own={8, 10})  # fio is iosched's, the kworker the kernel's
    assert [(h.comm, h.pid, round(h.percent)) for h in hogs] == [("hog2", 7, 99), ("hog", 5, 90), ("new", 30, 30)]
    assert hogs[0].words() == "hog2 (pid 7) 99% of a CPU"
    reused = {5: proc(5, 1, "hog", 30, start=999)}  # pid 5 again, another process: counted from nothing
    assert [round(h.percent) for h in cpu_hogs(before, reused, 1.0, 100.0, own=set())] == [30]
    assert cpu_hogs(before, after, 0.0, 100.0, own=set()) == []


def test_a_disk_busy_or_moving_data_is_named_and_the_tested_ones_never():
    before = {"loop1": disk(), "vda": disk(major=253), "loop2": disk(), "sda": disk(major=8)}
    after = {"loop1": disk(ios=9000, sectors=200_000, ticks=1900),  # 95% busy, 51 MB/s over 2 s
             "vda": disk(ios=5000, sectors=400_000, ticks=2000, major=253),  # the loop's backing disk
             "loop2": disk(ios=10, sectors=80, ticks=20),  # 1% busy: not worth a word
             "sda": disk(ios=100, sectors=100_000, ticks=100, major=8)}  # 5% busy but 25.6 MB/s
    loads = device_loads(before, after, 2.0, set(after), mine={"loop0", "vda"})
    assert [d.name for d in loads] == ["loop1", "sda"]
    assert loads[0].words() == "loop1 4.5k IO/s, 51 MB/s, 95% busy"
    back = {"loop1": disk(ios=1)}  # detached and attached again meanwhile: counters went back
    assert device_loads(after, back, 2.0, {"loop1"}, mine=set()) == []
    other = {"loop1": disk(ios=9999, sectors=1, ticks=1999, minor=5)}  # another device under the same name
    assert device_loads(before, other, 2.0, {"loop1"}, mine=set()) == []


def test_the_tested_device_s_own_disks_are_it_and_the_disks_below_it(tree):
    tree.add_disk("vda", "254:0")
    tree.add_disk("dm-0", "253:0", scheduler=None, mq=False)
    tree.add_disk("loop0", "7:0", extra={"loop/backing_file": "/gone/disk.img"})
    (tree.root / "sys/block/dm-0/slaves").mkdir(parents=True)
    (tree.root / "sys/block/dm-0/slaves/vda").symlink_to(tree.root / "sys/block/vda")
    (tree.root / "sys/dev/block").mkdir(parents=True)
    (tree.root / "sys/dev/block/253:0").symlink_to(tree.root / "sys/block/dm-0")
    assert own_disks("dm-0", tree.root) == {"dm-0", "vda"}
    assert own_disks("loop0", tree.root) == {"loop0"}  # its backing file gone: no disk below it
    assert own_disks("vda", tree.root) == {"vda"}


def test_competitors_between_two_looks_leave_iosched_and_its_disks_out():
    me = proc(10, 1, "iosched", 0)
    a = Look(100.0, {10: me, 11: proc(11, 10, "fio", 0), 12: proc(12, 1, "python3", 0)},
             {"loop0": disk(), "loop1": disk()}, frozenset({"loop0", "loop1"}))
    b = Look(104.0, {10: me, 11: proc(11, 10, "fio", 400), 12: proc(12, 1, "python3", 396)},
             {"loop0": disk(ios=9, sectors=9, ticks=4000), "loop1": disk(ios=8000, sectors=8, ticks=3600)},
             frozenset({"loop0", "loop1"}))
    hogs, loads = competitors(a, b, {"loop0"}, me=10, hz=100.0)
    assert [h.words() for h in hogs] == ["python3 (pid 12) 99% of a CPU"]
    assert [d.words() for d in loads] == ["loop1 2.0k IO/s, 0 MB/s, 90% busy"]


def test_the_watch_names_each_competitor_once_and_keeps_them_for_the_advice(monkeypatch):
    looks = iter([
        Look(0.0, {12: proc(12, 1, "python3", 0)}, {"loop1": disk()}, frozenset({"loop1"})),
        Look(1.0, {12: proc(12, 1, "python3", 90)}, {"loop1": disk(ios=100, ticks=900)}, frozenset({"loop1"})),
        Look(2.0, {12: proc(12, 1, "python3", 190)}, {"loop1": disk(ios=200, ticks=1800)}, frozenset({"loop1"})),
    ])
    monkeypatch.setattr(busy_mod, "look", lambda root: next(looks))
    monkeypatch.setattr(busy_mod, "cpu_busy", lambda root: None)
    monkeypatch.setattr(busy_mod, "own_disks", lambda device, root: {device})
    said: list[str] = []
    watch = BusyWatch("loop0", "/nonexistent", said.append)
    watch.before()
    assert said == []  # said when the first run starts
    watch.started()
    assert said == ["busy machine: other processes used the CPUs before the first run: python3 (pid 12) 90% of a "
                    "CPU; runs will vary with them",
                    "busy machine: other devices were under load before the first run: loop1 100 IO/s, 0 MB/s, "
                    "90% busy; runs will vary with them"]
    assert watch.named == ["python3 (pid 12) 90% of a CPU", "loop1 100 IO/s, 0 MB/s, 90% busy"]


def test_another_iosched_is_named_once_as_such_not_again_as_a_process(monkeypatch):
    looks = iter([
        Look(0.0, {12: proc(12, 1, "python3", 0)}, {}, frozenset()),
        Look(1.0, {12: proc(12, 1, "python3", 90)}, {}, frozenset()),
    ])
    monkeypatch.setattr(busy_mod, "look", lambda root: next(looks))
    monkeypatch.setattr(busy_mod, "cpu_busy", lambda root: None)
    monkeypatch.setattr(busy_mod, "own_disks", lambda device, root: {device})
    monkeypatch.setattr(busy_mod, "other_loads", lambda root: {"loop4": "pid 12, advise"})
    watch = BusyWatch("loop0", "/nonexistent")
    watch.before()
    assert watch.named == ["loop4 (pid 12, advise)"]
