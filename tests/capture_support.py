"""Captures written the way `iosched capture` writes them, from records, without a tracer."""

from pathlib import Path

from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.load.iolog import CaptureWriter, meta_path, write_meta

DEV_SIZE = 64 << 20
T0 = 10**12


def device(name: str = "loop7", size: int = DEV_SIZE) -> DeviceDoc:
    return DeviceDoc(name=name, maj_min="7:7", size_bytes=size, rotational=False, removable=False,
                     read_only=False, scheduler="none", schedulers=["none", "bfq"], nr_requests=128,
                     read_ahead_kb=128)


def make_capture(path: Path, records: list[tuple[int, int, int, int, int]], end_ns: int | None = None) -> Path:
    """A capture written the way `iosched capture` writes it, from (t_ns, op, sector, bytes, depth) records."""
    with open(path, "w") as out:
        w = CaptureWriter(out, "/dev/loop7", T0)
        for r in records:
            w.add(*r)
            w.flush()
        end_us = w.finish(end_ns or (max((r[0] for r in records), default=T0) + 10**6))
    if meta_path(path).is_file() and not meta_path(path).is_symlink():
        meta_path(path).unlink()  # hypothesis's examples share one folder; a capture writes its metadata new
    write_meta(w.meta(iolog=path.name, device=device(), kernel="6.1.0", started="2026-11-25T00:00:00+00:00",
                      duration_s=end_us / 1e6, ended="duration", timestamps="begin", lost=0, untracked=0), path)
    return path


def mixed(n: int = 200) -> list[tuple[int, int, int, int, int]]:
    return [(T0 + i * 1_000_000, i % 2, (i * 8) % 1000, 4096, 1 + i % 4) for i in range(n)]
