"""An ssh stand-in for fleet tests: it takes ssh's command line as the controller builds it and plays the host,
speaking the fleet's real protocol on its stdin and stdout: `iosched list --json`, `iosched fleet-host` (the
lockstep's line protocol, its fio socket forward held open and silent) and the tied `iosched compare --json` of an
independent host.

What each host does is read from the JSON file named by $FAKE_HOSTS, a map of host name to its part:
  "calls": FILE          append each command line here (so a test sees whether a host was reached)
  "list_raw": TEXT       its `iosched list --json`, as written
  "list_flood": N        N bytes of '[' instead
  "stderr": TEXT         written on stderr first;  "stderr_flood": N  N bytes without a newline
  "stderr_lines": N      N lines of 1,000 bytes on stderr
  VERB: {PATH: RAW}      (VERB: ready, apply, begin, end, restart, bye) the answer with each dotted PATH's value
                         replaced by the RAW JSON text (10**400, NaN, -1: anything JSON or not)
  VERB_at: K             apply that change to the K-th such answer only (from 0)
  VERB_raw: TEXT         the whole answer line, as written;  VERB_flood: N  N bytes without a newline instead
  "unasked": N           N answers more after the first, never asked for
  "result": {PATH: RAW}  an independent host's compare (tests/data/saved/experiment.json) changed the same way
  "result_raw": TEXT, "result_flood": N, "exit": CODE
  "result_lists": N      N bytes of JSON that is a list of empty lists (what parses into the most objects)
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import sys
import threading
from pathlib import Path

SAVED = Path(__file__).resolve().parents[2] / "data/saved/experiment.json"
DEVICES = ("sdb", "sdc", "sdd", "nvme0n1", "loop0", "loop1")
SAMPLER = {"dev_iops": 1000.0, "dev_r_await": 0.2, "dev_w_await": 0.0, "dev_aqu_sz": 1.5, "dev_util": 99.0,
           "dev_ios": 1000.0, "dev_mb": 4.1, "cpu_usr": 3.0, "cpu_sys": 9.0, "cpu_iowait": 1.0, "cpu_irq": 0.0,
           "cpu_soft": 0.5, "cpu_steal": 0.0, "cpu_us_per_io": 12.0}


def patched(doc: object, changes: dict[str, str]) -> str:
    """``doc`` as one JSON line, each dotted path's value replaced by its raw text."""
    marks = {}
    for n, (path, raw) in enumerate(changes.items()):
        *above, last = path.split(".")
        d = doc
        for k in above:
            d = d[int(k)] if isinstance(d, list) else d[k]  # type: ignore[index]
        mark = f"@@{n}@@"
        if isinstance(d, list):
            d[int(last)] = mark
        else:
            d[last] = mark  # type: ignore[index]
        marks[json.dumps(mark)] = raw
    text = json.dumps(doc, separators=(",", ":"))
    for mark, raw in marks.items():
        text = text.replace(mark, raw)
    return text


def flood(stream, n: int, byte: bytes = b"x") -> None:
    chunk = byte * (65536 // len(byte))
    try:
        while n > 0:
            stream.write(chunk[:n])
            n -= len(chunk)
        stream.flush()
    except (BrokenPipeError, OSError):
        os._exit(141)


def hold_socket(path: str) -> None:
    """The forwarded fio socket: every connection taken and held silent (the probe's "a server is there")."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(16)
    held = []

    def serve() -> None:
        while True:
            held.append(server.accept()[0])

    threading.Thread(target=serve, daemon=True).start()


class Answers:
    def __init__(self, part: dict) -> None:
        self.part = part
        self.count: dict[str, int] = {}
        self.out = sys.stdout.buffer

    def say(self, verb: str, default: dict) -> None:
        k = self.count.get(verb, 0)
        self.count[verb] = k + 1
        at = self.part.get(f"{verb}_at")
        hostile = at is None or at == k
        if hostile and f"{verb}_flood" in self.part:
            flood(self.out, self.part[f"{verb}_flood"])
            return
        if hostile and f"{verb}_raw" in self.part:
            text = self.part[f"{verb}_raw"]
        else:
            text = patched(default, self.part.get(verb, {}) if hostile else {})
        self.out.write(text.encode() + b"\n")
        self.out.flush()


def fleet_host(words: list[str], part: dict, local: str | None) -> int:
    device = words[2]
    variants = words[words.index("--schedulers") + 1].split(",")
    if local is not None:
        hold_socket(local)
    answers = Answers(part)
    target = {"device": device, "path": f"/dev/{device}", "kind": "device", "note": ""}
    answers.say("ready", {"ok": True, "kernel": "6.1.0", "machine": "x86_64", "host": "fake",
                          "device": {"name": device}, "original": {"scheduler": "none"}, "target": target,
                          "started": 1795515593.5})
    for _ in range(part.get("unasked", 0)):
        answers.say("extra", {"ok": True})
    t = 0.0
    for line in sys.stdin:
        w = line.split()
        if w[:1] == ["apply"]:
            scheduler = variants[int(w[1])].split(":")[0].split("#")[0]
            answers.say("apply", {"ok": True, "config": {"scheduler": scheduler}})
        elif w == ["begin"]:
            answers.say("begin", {"ok": True})
        elif w[:1] == ["end"]:
            t += 2.0
            answers.say("end", {"ok": True, "start": t, "end": t + 1.0, "metrics": dict(SAMPLER), "drift": None})
        elif w == ["restart"]:
            answers.say("restart", {"ok": True})
        elif w == ["bye"]:
            answers.say("bye", {"ok": True, "bye": True, "switches": [[0.5, "none"], [t + 2.0, "none"]]})
            return 0
    return 0


def compare(words: list[str], part: dict) -> int:
    device = words[2]
    if "result_flood" in part:
        flood(sys.stdout.buffer, part["result_flood"], b"[")
        return 0
    if "result_lists" in part:
        sys.stdout.buffer.write(b"[" + b"[]," * (part["result_lists"] // 3 - 1) + b"[]]\n")
        sys.stdout.flush()
        return 0
    doc = json.loads(SAVED.read_text())
    doc["device"]["name"] = device
    text = part.get("result_raw") or patched(doc, part.get("result", {}))
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return int(part.get("exit", 0))


def main(argv: list[str]) -> int:
    sep = argv.index("--")
    host, command = argv[sep + 1], argv[sep + 2]
    local = argv[argv.index("-L") + 1].split(":")[0] if "-L" in argv[:sep] else None
    part = json.loads(Path(os.environ["FAKE_HOSTS"]).read_text()).get(host, {})
    if "calls" in part:
        with open(part["calls"], "a") as f:
            f.write(command + "\n")
    tied = re.fullmatch(r"exec 3<&0; (.*) & p=\$!; .*", command)
    words = shlex.split(tied.group(1) if tied else command)
    if words[1:3] == ["list", "--json"]:
        if "list_flood" in part:
            flood(sys.stdout.buffer, part["list_flood"], b"[")
        else:
            sys.stdout.write(part.get("list_raw") or json.dumps([{"name": d, "scheduler": "none"} for d in DEVICES]))
        return 0
    if "stderr" in part:
        sys.stderr.write(part["stderr"])
        sys.stderr.flush()
    if "stderr_flood" in part:
        flood(sys.stderr.buffer, part["stderr_flood"])
    if "stderr_lines" in part:
        flood(sys.stderr.buffer, part["stderr_lines"] * 1000, (b"y" * 999 + b"\n")[:1000])
    if words[1] == "fleet-host":
        return fleet_host(words, part, local)
    if words[1] == "compare":
        return compare(words, part)
    sys.stderr.write(f"fake host: no such command: {command[:80]}\n")
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
