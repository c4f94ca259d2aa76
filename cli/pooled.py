"""`iosched report A.json B.json …`: the same comparison saved on several hosts, judged per host and pooled.

Each file is a saved compare (`compare --save`), one per host, with the same variants (the baseline first) and
primary metric. Per host: its own verdict. Pooled: each variant against the baseline as a random-effects mean of
the hosts' log ratios, Holm-corrected over the variants, with the heterogeneity, and a sentence on whether the hosts
agree (core/statistics/fleet_verdict.py; its lines, core/present/fleet_report.py).

A pool counts each experiment once: two files holding the same one (core/documents/identity.py: host, device and
start, what copies and renamed copies share) are refused. The files are bounded together, not only each: at most
1000 of them, 64 MiB in all (200 files each within its own bound reached 3.77 GB of memory).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput
from iosched.core.base.infile import bound_words, read_bounded
from iosched.core.documents.document import ExperimentDoc
from iosched.core.documents.identity import experiment_identity, identity_words
from iosched.core.documents.saved import MAX_SAVED_BYTES, decode_json, kind_of, read_experiment
from iosched.core.present.fleet_report import pooled_lines
from iosched.core.present.worded import worded_pooled
from iosched.core.statistics.fleet_verdict import hosts_pooled

MAX_FILES = 1000  # hosts, as a hosts file may name (core/fleet/fleet.py)
MAX_TOTAL_BYTES = MAX_SAVED_BYTES  # the files together: no more to hold than one saved file at its bound


def _host_name(doc: ExperimentDoc, path: str, seen: set[str]) -> str:
    name = doc.host or Path(path).stem
    if name in seen:
        name = f"{name} ({Path(path).name})"
    seen.add(name)
    return name


def _sizes(paths: list[str]) -> None:
    """The bound on the files together, looked at before any is read (each read is held to what is left)."""
    if len(paths) > MAX_FILES:
        raise BadInput(f"{len(paths)} files: report pools at most {MAX_FILES} (one saved compare per host)")
    total = 0
    for path in paths:
        with contextlib.suppress(OSError):  # a missing or odd file is named when it is read
            total += os.stat(path).st_size
    if total > MAX_TOTAL_BYTES:
        raise BadInput(f"the {len(paths)} files hold {bound_words(total)} together: report pools at most "
                       f"{bound_words(MAX_TOTAL_BYTES)} of saved compares (a compare of many runs is a few MiB)")


def read_hosts(paths: list[str]) -> list[tuple[str, ExperimentDoc]]:
    """Each file's saved compare, read whole, with its host's name; BadInput when they do not match, when two are
    the same experiment (``experiment_identity``: a pool counts each once), or past the bound on them together."""
    _sizes(paths)
    out: list[tuple[str, ExperimentDoc]] = []
    seen: set[str] = set()
    first: dict[tuple[str, str, float], str] = {}
    left = MAX_TOTAL_BYTES
    for path in paths:
        data = read_bounded(path, min(left, MAX_SAVED_BYTES), "experiment")
        left -= len(data)
        raw = decode_json(data, path, "experiment")
        if kind_of(raw) not in ("compare", "alternate"):
            raise BadInput(f"{path}: pooling takes saved compares (compare --save), one per host")
        doc = read_experiment(raw, path)
        key = experiment_identity(doc)
        if key in first:
            raise BadInput(f"{path} and {first[key]} hold the same experiment ({identity_words(key)}): a pool counts "
                           "each host's experiment once; name each file once")
        first[key] = path
        out.append((_host_name(doc, path, seen), doc))
    labels = [[v.label for v in d.variants] for _, d in out]
    if any(lb != labels[0] for lb in labels):
        raise BadInput("the files compare different variants (or another baseline): "
                       + "; ".join(f"{h}: {','.join(lb)}" for (h, _), lb in zip(out, labels, strict=True)))
    return out


def pooled_report(paths: list[str], args: argparse.Namespace) -> None:
    hosts = read_hosts(paths)
    pooled = worded_pooled(hosts_pooled(hosts, args.alpha, args.metric), dict(hosts))
    if args.json:
        print(json.dumps(encode(pooled), indent=1))
        return
    sys.stdout.write("\n".join(pooled_lines(pooled)) + "\n")
