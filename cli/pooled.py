"""`iosched report A.json B.json …`: the same comparison saved on several hosts, judged per host and pooled.

Each file is a saved compare (`compare --save`), one per host, with the same variants (the baseline first) and
primary metric. Per host: its own verdict. Pooled: each variant against the baseline as a random-effects mean of
the hosts' log ratios (core/statistics/pooled.py), Holm-corrected over the variants, with the heterogeneity, and a
sentence on whether the hosts agree.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from iosched.core.base.cells import printable
from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput
from iosched.core.documents.document import ExperimentDoc, RunDoc
from iosched.core.documents.metrics import metric_label
from iosched.core.documents.saved import load_saved, read_experiment
from iosched.core.statistics.pooled import METHOD, HostEffect, Pooled, agreement, pool
from iosched.core.statistics.stats import CannotJudge, RatioEstimate, holm, t_ppf
from iosched.core.statistics.verdict import (
    at_last_look,
    default_primary,
    effect_words,
    estimates,
    fmt_p,
    judge,
    signed_percent,
)


def _host_name(doc: dict[str, Any], path: str, seen: set[str]) -> str:
    name = str(doc.get("host") or Path(path).stem)
    if name in seen:
        name = f"{name} ({Path(path).name})"
    seen.add(name)
    return name


def read_hosts(paths: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """Each file's saved compare, checked whole, with its host's name; BadInput when they do not match."""
    out: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    for path in paths:
        doc = load_saved(path, "experiment")
        if not isinstance(doc, dict) or doc.get("kind") not in ("compare", "alternate"):
            raise BadInput(f"{path}: pooling takes saved compares (compare --save), one per host")
        read_experiment(doc, path)
        out.append((_host_name(doc, path, seen), doc))
    labels = [[v["label"] for v in d["variants"]] for _, d in out]
    if any(lb != labels[0] for lb in labels):
        raise BadInput("the files compare different variants (or another baseline): "
                       + "; ".join(f"{h}: {','.join(lb)}" for (h, _), lb in zip(out, labels, strict=True)))
    return out


def _se(e: RatioEstimate, level: float = 0.95) -> float:
    return (math.log(e.ci_high) - math.log(e.ci_low)) / (2.0 * t_ppf(0.5 + level / 2.0, e.df))


def host_effects(doc: dict[str, Any], metric: str) -> dict[str, RatioEstimate | CannotJudge]:
    """Each variant's estimate on one host, as the pool takes it: a host that ran until a verdict is taken at its
    last planned look, as its own verdict is.

    Its plain interval, not its repeated one: a host that stopped early leans away from 1, but the pool's
    Hartung-Knapp interval (t with hosts - 1 df, never narrower than the hosts' own noise) keeps its coverage
    all the same (97.7-99.8% in bench/pooled_verdict.py), and the repeated intervals would cost it power (a 20%
    effect on 3 hosts found in 48% of fleets, not 74%). tests/unit/statistics/test_pooled.py holds the pool's
    coverage and false-positive rate to seeded simulation of hosts that stop at their own boundaries."""
    typed = _typed(doc)
    return estimates(at_last_look(typed, metric), metric)


def _typed(doc: dict[str, Any]) -> ExperimentDoc:
    """A host's compare (read whole before it came here: its figures were held to their range then) as the judges
    take it."""
    shell = read_experiment({**doc, "runs": []}, "a host's compare")
    return replace(shell, runs=[RunDoc(**{**r, "trace": None, "replay": None}) for r in doc["runs"]])


def pooled_verdict(hosts: list[tuple[str, dict[str, Any]]], alpha: float, metric: str | None,
                   adjust: Callable[[list[float]], list[float]] = holm,
                   correction: str = "Holm-corrected over the variants") -> dict[str, Any]:
    """Per host and pooled; ``adjust`` turns the pooled p-values into the ones judged (a fleet matrix's Holm over
    all its cells), ``correction`` says which it was."""
    docs = [d for _, d in hosts]
    metric = metric or default_primary(_typed(docs[0]))
    labels = [v["label"] for v in docs[0]["variants"]]
    base, others = labels[0], labels[1:]
    per_host = [{"host": h, "judgement": encode(judge(_typed(d), alpha, metric, planning=False))} for h, d in hosts]
    rows: list[dict[str, Any]] = []
    pooled: list[Pooled | None] = []
    for v in others:
        effects, skipped = [], []
        for h, d in hosts:
            e = host_effects(d, metric).get(v)
            if isinstance(e, RatioEstimate):
                effects.append(HostEffect(h, math.log(e.ratio), _se(e)))
            else:
                skipped.append(f"{h} ({e.reason if isinstance(e, CannotJudge) else 'no estimate'})")
        p, why = None, "fewer than two hosts could be judged"
        if len(effects) >= 2:
            try:
                p = pool(effects)
            except ValueError as e:  # only a hostile or broken file gets here: its words, not a traceback
                why = str(e)
        pooled.append(p)
        rows.append({"variant": v, "skipped": skipped, "why": why})
    adj = adjust([p.p_value for p in pooled if p is not None])
    it = iter(adj)
    for row, p in zip(rows, pooled, strict=True):
        why = row.pop("why")
        if p is None:
            row["sentence"] = f"{row['variant']} vs {base}: {why}"
            continue
        row.update(pooled_row(p, base, row["variant"], metric, next(it), alpha))
    method = METHOD
    if any(d.get("sequential") for d in docs):
        method += "; a host that ran until a verdict enters at its last planned look"
    return {"metric": metric, "baseline": base, "alpha": alpha, "method": method, "correction": correction,
            "hosts": per_host, "pooled": rows}


def pooled_row(p: Pooled, base: str, variant: str, metric: str, p_adj: float, alpha: float) -> dict[str, Any]:
    e = RatioEstimate(p.ratio, p.ci_low, p.ci_high, 0.95, p.p_value, 0.0, float(p.df), 0.0, (0, 0))
    significant = p_adj < alpha
    if significant:
        words = f"{effect_words(metric, base, variant, e)}, {fmt_p(p_adj, True)}"
    else:
        words = (f"{variant} vs {base}: no significant difference over the hosts: {signed_percent(p.ratio)} "
                 f"(95% CI {signed_percent(p.ci_low)} to {signed_percent(p.ci_high)}), {fmt_p(p_adj, True)}")
        if p.p_value < alpha:  # its own interval leaves out 1; the correction for the other comparisons does not
            words += f" (alone {fmt_p(p.p_value, False)}: not significant once corrected for the other comparisons)"
    agree, differ = agreement(p)
    hetero = f"I² {p.i2:.0%}, between-host spread ×/÷{p.spread:.2f}"
    tail = f"pooled over {len(p.hosts)} hosts; {agree} of {len(p.hosts)} go the same way ({hetero})"
    if differ:
        tail += "; " + "; ".join(f"host {h.host} differs: {signed_percent(h.ratio)}" for h in differ)
    return {"ratio": p.ratio, "ci_low": p.ci_low, "ci_high": p.ci_high, "p_value": p.p_value, "p_adjusted": p_adj,
            "significant": significant, "i2": p.i2, "tau2": p.tau2, "q": p.q, "df": p.df,
            "hosts_agree": agree, "hosts_differ": [h.host for h in differ],
            "per_host": [{"host": h.host, "ratio": h.ratio, "se_log": h.se} for h in p.hosts],
            "sentence": f"{words}; {tail}"}


def pooled_report(paths: list[str], args: argparse.Namespace) -> None:
    hosts = read_hosts(paths)
    out = pooled_verdict(hosts, args.alpha, args.metric)
    if args.json:
        print(json.dumps(out, indent=1))
        return
    lines = [f"{len(hosts)} hosts, {metric_label(out['metric'])}, each variant against {out['baseline']}:",
             "per host:"]
    for h in out["hosts"]:
        primary = [c for c in h["judgement"]["comparisons"] if c.get("primary")]
        lines += [f"  {h['host']}: {c['verdict']}" for c in primary]
    lines.append("pooled:")
    for row in out["pooled"]:
        lines.append(f"  {row['sentence']}")
        if row["skipped"]:
            lines.append(f"  (left out: {', '.join(row['skipped'])})")
    lines.append(f"  method: {out['method']}, {out['correction']}, alpha {out['alpha']:g}")
    sys.stdout.write("\n".join(printable(line) for line in lines) + "\n")  # host names come from the files
