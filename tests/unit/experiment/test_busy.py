"""A busy machine named (core/experiment/busy.py): /proc/locks read without taking a lock, the load average
against the CPUs, CPU steal in a run's window, each said once (a real experiment beside another load:
tests/real/test_busy_real.py)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.core.documents.document import RunDoc
from iosched.core.experiment import busy
from iosched.core.experiment.busy import BusyWatch, parse_proc_locks

LOCKS = """1: FLOCK  ADVISORY  WRITE 19757 fe:00:10003349 0 EOF
1: -> FLOCK  ADVISORY  WRITE 19800 fe:00:10003349 0 EOF
2: POSIX  ADVISORY  WRITE 812 00:1a:1234 0 EOF
3: FLOCK  ADVISORY  WRITE 4242 00:1a:77 0 EOF
garbage
4: FLOCK  ADVISORY  WRITE x 00:1a:77 0 EOF
"""


def test_proc_locks_gives_each_flocks_holder_and_file():
    assert parse_proc_locks(LOCKS) == [(19757, 0xfe, 0, 10003349), (4242, 0, 0x1a, 77)]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_parses_to_a_list(text):
    assert isinstance(parse_proc_locks(text), list)


def _tree(tree, load: str, cpus: int) -> None:
    tree.write("proc/loadavg", f"{load} 1.00 1.00 2/300 4242\n")
    tree.write("proc/stat", "cpu  1 2 3 4 5 6 7 8 0 0\n" + "".join(f"cpu{i} 1 2 3 4 5 6 7 8 0 0\n"
                                                                  for i in range(cpus)))
    tree.write("proc/locks", "")


def test_a_load_above_the_cpus_on_busy_cpus_is_said_when_the_first_run_starts(tree, monkeypatch):
    _tree(tree, "3.40", 2)
    monkeypatch.setattr(busy, "cpu_busy", lambda root: 85.0)
    said: list[str] = []
    w = BusyWatch("sda", tree.root, said.append)
    w.before()
    assert said == []  # an experiment refused before its first run says only why
    w.started()
    assert said == ["busy machine: the load average (3.4) exceeds the 2 CPUs, 85% busy before the first run; runs "
                    "will vary with that load"] == w.lines
    w.started()
    assert len(said) == 1
    # A load of tasks waiting for IO, or one left over from a previous experiment, on idle CPUs: nothing said.
    monkeypatch.setattr(busy, "cpu_busy", lambda root: 20.0)
    for load in ("3.40", "1.90"):
        _tree(tree, load, 2)
        quiet = BusyWatch("sda", tree.root)
        quiet.before()
        quiet.started()
        assert quiet.lines == []


def test_cpu_busy_reads_proc_stat_twice(tree):
    _tree(tree, "0.10", 2)
    assert busy.cpu_busy(tree.root, 0.0) is None  # no time passed in the counters: no figure


def _run(index: int, metrics: dict) -> RunDoc:
    return RunDoc(index=index, variant="none", start=0.0, end=1.0, valid=True, invalid_reason=None, config={},
                  metrics=metrics)


def test_cpu_steal_is_said_once_with_its_run(tree):
    _tree(tree, "0.10", 2)
    w = BusyWatch("sda", tree.root)
    w.after_run(_run(0, {"cpu_steal": 2.0}))
    assert w.lines == []
    w.after_run(_run(1, {"cpu_steal": 12.4}))
    w.after_run(_run(2, {"cpu_steal": 30.0}))
    assert w.lines == ["busy machine: CPU steal was 12% in run 2 (the hypervisor gave the CPUs to other guests); "
                       "runs will vary with it"]
    w.after_run(_run(3, {}))  # a run without CPU figures (a failed one): nothing to say
    assert len(w.lines) == 1


def test_cpu_busy_on_this_machine_is_a_percentage():
    got = busy.cpu_busy("/", 0.05)
    assert got is not None and 0.0 <= got <= 100.0
