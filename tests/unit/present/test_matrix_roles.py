"""A matrix of jobs with roles prints each role's means itself (the table docs/contention.md shows), under its
verdict lines; a matrix of plain jobs prints no such table."""

from __future__ import annotations

import random

from doc_support import matrix_doc

from iosched.core.present.matrix import matrix_text
from iosched.core.statistics.matrix_judge import judge_matrix

ROLES = {"fg": {"rw": "randread"}, "bg": {"rw": "write"}}


def _matrix(roles: bool):
    rnd = random.Random(7)
    labels = ["none", "bfq"]
    job = {"name": "interactive-under-writes", "options": {}}
    if roles:
        job |= {"roles": ROLES, "primary": "fg:clat_p50_us", "tradeoff": "bg:mb_s"}
    runs = []
    for _ in range(3):
        for lb in labels:
            fast = lb == "bfq"
            m = {"iops": 1000.0 * rnd.uniform(0.9, 1.1),
                 "fg:clat_p50_us": (50.0 if fast else 10800.0) * rnd.uniform(0.9, 1.1),
                 "fg:clat_p99_us": (11560.0 if fast else 36480.0) * rnd.uniform(0.9, 1.1),
                 "bg:mb_s": (1333.0 if fast else 1015.0) * rnd.uniform(0.95, 1.05),
                 "fairness_jain": 0.52}
            runs.append({"slot": len(runs), "workload": job["name"], "variant": lb, "metrics": m})
    doc = matrix_doc({"variants": [{"label": lb} for lb in labels], "runs": runs, "repeat": 3, "workloads": [job],
                      "primary_metric": "fg:clat_p50_us" if roles else "iops"})
    return doc, judge_matrix(doc, metric="fg:clat_p50_us" if roles else None)


def test_a_matrix_of_role_jobs_prints_each_roles_means():
    doc, judgement = _matrix(roles=True)
    lines = matrix_text(doc, judgement).splitlines()
    at = lines.index("Each role's means:")
    head, none, bfq = lines[at + 1: at + 4]
    assert head.split() == ["job", "scheduler", "fg", "p50", "ms", "fg", "p99", "ms", "bg", "MB/s", "Jain", "index"]
    assert none.split()[:2] == ["interactive-under-writes", "none"] and bfq.split()[0] == "bfq"
    # Latency in ms, throughput whole, the index to two places, each under its head.
    p50, p99, mb_s, jain = (float(x) for x in bfq.split()[1:])
    assert 0.04 < p50 < 0.06 and 10 < p99 < 13 and 1250 < mb_s < 1420 and jain == 0.52
    assert all(len(line) <= 120 for line in lines[at:]), lines[at:]


def test_a_matrix_of_plain_jobs_prints_no_role_table():
    doc, judgement = _matrix(roles=False)
    assert "Each role's means" not in matrix_text(doc, judgement)
