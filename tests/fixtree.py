"""Build fake /proc + /sys trees for states this machine cannot produce (HDDs, old kernels, no scheduler)."""

from __future__ import annotations

from pathlib import Path

CPU_HEADER = "cpu  {}\n"


def diskstats_line(major: int, minor: int, name: str, values: list[int]) -> str:
    return f"{major:4d} {minor:7d} {name} " + " ".join(str(v) for v in values)


class FixTree:
    """A temp root with proc/ and sys/block/ that core readers accept as ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "proc").mkdir(parents=True, exist_ok=True)
        (root / "sys/block").mkdir(parents=True, exist_ok=True)
        (root / "sys/class/block").mkdir(parents=True, exist_ok=True)
        self.write("proc/self/mountinfo", "")
        self.write("proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n")
        self.set_stat({"all": [0, 0, 0, 0]})
        self.set_diskstats([])

    def write(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def set_diskstats(self, lines: list[str]) -> None:
        self.write("proc/diskstats", "\n".join(lines) + ("\n" if lines else ""))

    def set_stat(self, cpus: dict[str, list[int]]) -> None:
        out = []
        for key, values in cpus.items():
            label = "cpu " if key == "all" else f"cpu{key}"
            out.append(f"{label} " + " ".join(str(v) for v in values))
        out.append("intr 0")
        out.append("ctxt 0")
        self.write("proc/stat", "\n".join(out) + "\n")

    def add_disk(self, name: str, maj_min: str, size_sectors: int = 2048, rotational: bool = False,
                 scheduler: str | None = "[none] mq-deadline kyber bfq", mq: bool = True,
                 extra: dict[str, str] | None = None) -> Path:
        d = self.root / "sys/block" / name
        files = {
            "dev": maj_min, "size": str(size_sectors), "removable": "0", "ro": "0",
            "queue/rotational": "1" if rotational else "0", "queue/nr_requests": "64",
            "queue/read_ahead_kb": "128", "queue/iostats": "1",
        }
        if scheduler is not None:
            files["queue/scheduler"] = scheduler
        files.update(extra or {})
        for rel, text in files.items():
            self.write(f"sys/block/{name}/{rel}", text + "\n")
        if mq:
            (d / "mq").mkdir(exist_ok=True)
        link = self.root / "sys/class/block" / name
        if not link.exists():
            link.symlink_to(d)
        return d

    def add_partition(self, disk: str, name: str, maj_min: str) -> None:
        part = self.root / "sys/block" / disk / name
        self.write(f"sys/block/{disk}/{name}/partition", "1\n")
        self.write(f"sys/block/{disk}/{name}/dev", maj_min + "\n")
        link = self.root / "sys/class/block" / name
        if not link.exists():
            link.symlink_to(part)
