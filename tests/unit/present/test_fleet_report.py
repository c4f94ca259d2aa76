"""What a fleet's result shows (core/present/fleet_report.py): the answer first (a fleet that cannot be judged says
so on its first line), hosts' words never as escape codes, a fleet matrix's jobs and what was not run."""

from __future__ import annotations

from dataclasses import replace

from fleet_support import fleet_doc, host_entry
from saved_support import saved

from iosched.core.documents.document import PooledDoc, PooledRowDoc
from iosched.core.documents.saved import read_experiment, read_fleet_matrix
from iosched.core.present.fleet_report import fleet_lines, lost_job, matrix_lines, unjudged
from iosched.core.statistics.fleet_verdict import matrix_pooled


def test_what_hosts_said_reaches_the_terminal_without_escape_codes():
    doc = fleet_doc([host_entry("db1", "failed", "lost: \x1b[2J\x1b]0;owned\x07", "sdb left on \x1b[31mbfq")])
    lines = fleet_lines(doc)
    assert not any("\x1b" in line or "\x07" in line for line in lines)
    assert lines[0].startswith("cannot judge: 0 of 1 hosts finished runs to pool")  # the answer first
    assert "\\x1b[2J" in lines[2] and "\\x1b[31mbfq" in lines[2]  # shown escaped, not acted on


def test_a_fleet_none_of_whose_variants_two_hosts_could_be_judged_on_cannot_judge():
    row = PooledRowDoc(variant="bfq", skipped=["db1 (no valid run)"],
                       sentence="bfq vs none: fewer than two hosts could be judged")
    pooled = PooledDoc(metric="iops", baseline="none", hosts=[], pooled=[row], method="m", alpha=0.05)
    result = read_experiment(saved("experiment"), "experiment.json")
    doc = fleet_doc([host_entry("db1", result=result)], pooled)
    assert unjudged(doc) == "cannot judge: fewer than two hosts could be judged on IOPS"
    assert fleet_lines(doc)[0] == "cannot judge: fewer than two hosts could be judged on IOPS"
    doc = replace(doc, pooled=replace(pooled, pooled=[replace(row, ratio=0.9)]))
    assert unjudged(doc) is None


def test_the_lines_name_each_job_and_what_was_not_run():
    doc = saved("fleet_matrix")
    doc["jobs"].append("4k-write")
    matrix = read_fleet_matrix(doc, "m.json")
    fleets, pooled = matrix_pooled(matrix.fleets, 0.05, None)
    lines = matrix_lines(replace(matrix, fleets=fleets, pooled=pooled))
    assert lines[0] == "4k-randread:" and "4k-read:" in lines and "not run: 4k-write" in lines
    assert sum(line.startswith("  4k-read: mq-deadline vs none over the hosts: cannot tell in IOPS")
               for line in lines) == 1


def test_a_job_no_host_finished_is_named_as_the_one_the_matrix_stopped_after():
    doc = saved("fleet_matrix")
    doc["jobs"].append("4k-write")
    matrix = read_fleet_matrix(doc, "m.json")
    assert lost_job(matrix) is None  # its last job had hosts that finished: the next one was just not reached
    lost = replace(matrix.fleets[-1], hosts=[replace(h, status="failed") for h in matrix.fleets[-1].hosts])
    assert lost_job(replace(matrix, fleets=[matrix.fleets[0], lost])) == "4k-read"
    assert lost_job(replace(matrix, fleets=[matrix.fleets[0], lost], jobs=matrix.jobs[:2])) is None  # the last job
