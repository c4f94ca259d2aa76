"""`iosched report A.json B.json …`: the same comparison saved on several hosts, judged per host and pooled.

Each file is a saved compare (`compare --save`), one per host, with the same variants (the baseline first) and
primary metric. Per host: its own verdict. Pooled: each variant against the baseline as a random-effects mean of
the hosts' log ratios, Holm-corrected over the variants, with the heterogeneity, and a sentence on whether the hosts
agree (core/statistics/fleet_verdict.py; its lines, core/present/fleet_report.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput
from iosched.core.documents.document import ExperimentDoc
from iosched.core.documents.saved import kind_of, load_saved, read_experiment
from iosched.core.present.fleet_report import pooled_lines
from iosched.core.present.worded import worded_pooled
from iosched.core.statistics.fleet_verdict import hosts_pooled


def _host_name(doc: ExperimentDoc, path: str, seen: set[str]) -> str:
    name = doc.host or Path(path).stem
    if name in seen:
        name = f"{name} ({Path(path).name})"
    seen.add(name)
    return name


def read_hosts(paths: list[str]) -> list[tuple[str, ExperimentDoc]]:
    """Each file's saved compare, read whole, with its host's name; BadInput when they do not match."""
    out: list[tuple[str, ExperimentDoc]] = []
    seen: set[str] = set()
    for path in paths:
        raw = load_saved(path, "experiment")
        if kind_of(raw) not in ("compare", "alternate"):
            raise BadInput(f"{path}: pooling takes saved compares (compare --save), one per host")
        doc = read_experiment(raw, path)
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
