"""Fleets' documents for tests, as their declared types: a host's compare made of given runs, a host's entry and a
fleet around it (tests/unit/statistics/test_fleet_verdict.py, tests/unit/present/test_fleet_report.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from saved_support import saved

from iosched.core.base.decode import decode
from iosched.core.documents.document import (
    CompareDoc,
    FleetDoc,
    FleetHostDoc,
    PooledDoc,
    RunDoc,
    SequentialDoc,
    VariantDoc,
)
from iosched.core.documents.saved import read_experiment


def compare_doc(labels: list[str], runs: list[dict[str, Any]], sequential: dict[str, Any] | None = None) -> CompareDoc:
    """A host's compare of ``labels`` (the baseline first) holding ``runs`` (index, variant and metrics each; valid
    unless they say otherwise), the rest of it a real saved compare's."""
    base = read_experiment(saved("experiment"), "experiment.json")
    assert isinstance(base, CompareDoc)
    return replace(
        base, variants=[VariantDoc(label=lb, scheduler=lb.split("#")[0]) for lb in labels],
        order=[r["variant"] for r in runs], primary_metric=None,
        runs=[RunDoc(index=r["index"], variant=r["variant"], start=float(r["index"]), end=r["index"] + 1.0,
                     valid=r.get("valid", True), invalid_reason=r.get("invalid_reason"), config={},
                     metrics=r["metrics"]) for r in runs],
        sequential=decode(SequentialDoc, sequential) if sequential is not None else None)


def host_entry(host: str, status: str = "done", reason: str | None = None, put_back: str = "sdb back on none",
               result: CompareDoc | None = None, device: str = "sdb") -> FleetHostDoc:
    return FleetHostDoc(host=host, device=device, status=status, reason=reason, scheduler_before="none",
                        scheduler_after="none", put_back=put_back, result=result)


def fleet_doc(hosts: list[FleetHostDoc], pooled: PooledDoc | None = None, job: str = "4k-randread") -> FleetDoc:
    return FleetDoc(kind="fleet", mode="lockstep", started=1.0, finished=2.0, job=job, schedulers="none,bfq",
                    repeat=2, runtime_s=None, size=None, settle_s=0.0, hosts=hosts, pooled=pooled)
