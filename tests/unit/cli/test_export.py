"""`iosched export` on fixture trees: the metric families from a snapshot (a switch made by anyone counted), the
guard in front of them, and the flags refused in one sentence."""

from __future__ import annotations

import io
import os

import pytest
from prometheus_client import CollectorRegistry, generate_latest, make_wsgi_app

from iosched.cli.export import (
    MAX_TOKEN_BYTES,
    SnapshotCollector,
    TextfileRefused,
    guarded,
    parse_listen,
    write_textfile,
)
from iosched.cli.web_guard import Guard
from iosched.core.base.errors import BadInput
from iosched.core.live.exported import ExportState
from iosched.core.live.monitor import Monitor

from conftest import one_sentence_exit_2
from fixtree import diskstats_line


def exposition(state: ExportState) -> str:
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(state.snapshot))
    return generate_latest(registry).decode()


def test_scheduler_rates_and_a_switch_by_anyone(tree):
    tree.add_disk("sda", "8:0", scheduler="[mq-deadline] none bfq", rotational=True)
    tree.add_disk("sdb", "8:16", scheduler="[none] mq-deadline")
    tree.set_diskstats([diskstats_line(8, 0, "sda", [0] * 17), diskstats_line(8, 16, "sdb", [0] * 17)])
    state = ExportState(Monitor(root=tree.root, capacity=1), ["sda"], tree.root)
    text = exposition(state)  # before the first interval: identity, no rates
    assert 'iosched_scheduler{device="sda",iosched_scheduler="mq-deadline"} 1.0' in text
    assert 'iosched_scheduler{device="sda",iosched_scheduler="bfq"} 0.0' in text
    assert 'iosched_rotational{device="sda"} 1.0' in text and "sdb" not in text
    assert "iosched_reads_per_second" not in text.split("# TYPE iosched_reads_per_second gauge")[-1]
    state.step()
    (tree.root / "sys/block/sda/queue/scheduler").write_text("mq-deadline none [bfq]")  # an echo, not iosched
    state.step()
    text = exposition(state)
    assert 'iosched_scheduler{device="sda",iosched_scheduler="bfq"} 1.0' in text
    assert 'iosched_scheduler_switches_total{device="sda",from="mq-deadline",to="bfq"} 1.0' in text
    assert 'iosched_reads_per_second{device="sda"} 0.0' in text


def test_the_guard_wants_this_host_and_the_token():
    app = guarded(make_wsgi_app(CollectorRegistry()), Guard.for_server("127.0.0.1", 9477, "s3cret-token-123456"))

    def call(headers: dict[str, str]) -> str:
        seen: list[str] = []
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/metrics", "QUERY_STRING": "", "wsgi.input": io.BytesIO(),
                   **{f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()}}
        app(environ, lambda status, _headers: seen.append(status))
        return seen[0]

    good = {"Host": "127.0.0.1:9477", "Authorization": "Bearer s3cret-token-123456"}
    assert call(good).startswith("200")
    assert call({**good, "Authorization": "Bearer wrong"}).startswith("403")
    assert call({"Host": "127.0.0.1:9477"}).startswith("403")
    assert call({**good, "Host": "attacker.example:9477"}).startswith("403")
    assert call({**good, "Origin": "http://attacker.example"}).startswith("403")
    assert call({**good, "Host": "localhost:9477"}).startswith("200")
    # WSGI joins a header's copies with commas: a second Host or Origin is refused, not overlooked.
    assert call({**good, "Host": "127.0.0.1:9477,127.0.0.1:9477"}).startswith("403")
    assert call({**good, "Origin": "http://127.0.0.1:9477,http://attacker.example"}).startswith("403")


@pytest.mark.parametrize("text", ["9477", "host:", ":9477", "h:0", "h:70000", "h:port", "h:²", "h:٩٤٧٧"])
def test_listen_must_be_host_and_port(text):
    with pytest.raises(BadInput, match="HOST:PORT"):
        parse_listen(text)


def test_a_public_address_needs_public_and_a_textfile_a_directory(tmp_path):
    err = one_sentence_exit_2("export", "--listen", "0.0.0.0:9477")
    assert "--public" in err
    err = one_sentence_exit_2("export", "--textfile", str(tmp_path / "nowhere"))
    assert "not a directory" in err
    short = tmp_path / "t"
    short.write_text("short")
    err = one_sentence_exit_2("export", "--token-file", str(short), "--listen", "127.0.0.1:1")
    assert "at least 16" in err


def test_traced_histograms_are_cumulative_log2_buckets_in_seconds():
    from iosched.cli.export import TraceTotals, log2_buckets
    from iosched.core.trace.histograms import Log2Hist
    from iosched.core.trace.parse import DeviceLatency, OpLatency, TraceSample

    assert log2_buckets([1, 0, 2]) == [("1e-06", 1.0), ("2e-06", 1.0), ("4e-06", 3.0), ("+Inf", 3.0)]
    totals = TraceTotals()

    def sample(device_counts: list[int]) -> TraceSample:
        op = OpLatency(ios=sum(device_counts), bytes=0, sched=Log2Hist.of([sum(device_counts)]),
                       device=Log2Hist.of(device_counts), total=Log2Hist.of(device_counts), total_ns=0)
        return TraceSample(mono=1.0, interval=1.0, devices={"sda": DeviceLatency("sda", {"read": op})})

    totals.add(sample([0, 0, 0, 5]))
    totals.add(sample([0, 0, 0, 1, 2]))
    totals.add("not a sample")
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(_empty, totals))
    text = generate_latest(registry).decode()
    assert 'iosched_device_time_seconds_bucket{device="sda",le="8e-06"} 6.0' in text
    assert 'iosched_device_time_seconds_bucket{device="sda",le="+Inf"} 8.0' in text
    assert 'iosched_scheduler_time_seconds_bucket{device="sda",le="1e-06"} 8.0' in text


def _empty():
    from iosched.core.live.exported import Snapshot

    return Snapshot()


def registry_of_nothing(tmp_path) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(ExportState(Monitor(root=tmp_path / "none", capacity=1)).snapshot))
    return registry


def test_the_textfile_is_replaced_whole_with_no_temporary_file_left(tmp_path):
    target = tmp_path / "iosched.prom"
    target.write_text("old\n")
    write_textfile(target, registry_of_nothing(tmp_path))
    assert "iosched_" in target.read_text() and oct(target.stat().st_mode)[-3:] == "644"
    assert [p.name for p in tmp_path.iterdir()] == ["iosched.prom"]


@pytest.mark.parametrize("kind", ["symbolic link", "directory", "FIFO"])
def test_a_textfile_name_holding_no_regular_file_is_refused_and_left_alone(tmp_path, kind):
    precious = tmp_path / "precious"
    precious.write_text("keep me\n")
    target = tmp_path / "iosched.prom"
    {"symbolic link": lambda: target.symlink_to(precious), "directory": target.mkdir,
     "FIFO": lambda: os.mkfifo(target)}[kind]()
    with pytest.raises(TextfileRefused, match=f"iosched.prom is a {kind}"):
        write_textfile(target, registry_of_nothing(tmp_path))
    assert precious.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["iosched.prom", "precious"]  # no temporary file left


def test_a_link_planted_while_the_textfile_is_written_is_refused(tmp_path, monkeypatch):
    precious = tmp_path / "precious"
    precious.write_text("keep me\n")
    target = tmp_path / "iosched.prom"
    import iosched.cli.export as export

    def planting(registry):  # someone plants a link between the first look and the rename
        target.symlink_to(precious)
        return generate_latest(registry)

    monkeypatch.setattr(export, "generate_latest", planting)
    with pytest.raises(TextfileRefused, match="symbolic link"):
        write_textfile(target, registry_of_nothing(tmp_path))
    assert precious.read_text() == "keep me\n" and target.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["iosched.prom", "precious"]


def test_a_token_file_must_be_a_small_regular_file_of_our_own(tmp_path):
    good = tmp_path / "token"
    good.write_text("t0k3n-" + "x" * 20 + "\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # nobody ever writes it: opening it must not wait (run_cli's timeout says it did not)
    large = tmp_path / "large"
    large.write_bytes(b"x" * (MAX_TOKEN_BYTES + 1))
    link = tmp_path / "link"
    link.symlink_to(good)
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff" * 20 + b"\n")
    cases = [("/dev/zero", "is a character device"), (str(fifo), "is a FIFO"), (str(tmp_path), "is a directory"),
             (str(large), f"over {MAX_TOKEN_BYTES} bytes"), (str(link), f"is a symbolic link: give the file itself "
                                                                     f"({good})"),
             (str(binary), "printable ASCII"), (str(tmp_path / "none"), "no such file")]
    for path, words in cases:
        err = one_sentence_exit_2("export", "--token-file", path, "--listen", "127.0.0.1:1")
        assert words in err, (path, err)
