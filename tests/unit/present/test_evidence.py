"""Evidence to share (core/present/evidence.py): `report --markdown` and `advise --markdown` as a tracker comment
holds them: the answer, the conditions, the per-variant and per-run tables collapsed, outside text escaped, the
whole bounded; a hostile file gets one sentence, never a page that breaks."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from saved_support import call, mutate, saved

from iosched.core.base.encode import encode
from iosched.core.load.conditions import ConditionsDoc
from iosched.core.load.fill import FillDoc
from iosched.core.load.steady import SteadyRun, SteadyWait
from iosched.core.present.evidence import LIMIT, Table, code, fenced, md, page

WAIT = SteadyWait(criterion="iops_slope:1%", window_s=10, ramp_s=0, timeout_s=60)
FILL = FillDoc(asked=50, level=50.2, how="written", of="loop0 (1.0G)", trimmed=True, bytes_written=539 << 20,
               seconds=2.1)
HOSTILE = "Evil | `model` ```</details><b>*x*</b>\x1b[2J"
COND = ConditionsDoc(cpu_model="AMD EPYC 7B13", device="loop0", device_model=HOSTILE, firmware="2B2Q|EXM7",
                     fill=FILL, steady=WAIT)
UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def experiment(runs: int = 4, label: str = "mq-deadline", conditions: ConditionsDoc | None = COND) -> dict:
    """The saved compare with ``runs`` runs alternating its two variants (the second labelled ``label``), each run
    with its wait for steady state (every third not reached), and ``conditions``."""
    doc = saved("experiment")
    base = [copy.deepcopy(r) for r in doc["runs"]]
    for r in base:
        r.pop("fio", None)
    doc["variants"][1]["label"], doc["variants"][1]["scheduler"] = label, label.split("#")[0]
    doc["runs"] = []
    for i in range(runs):
        r = copy.deepcopy(base[i % len(base)])
        r["index"], r["variant"] = i, "none" if i % 2 == 0 else label
        r["start"], r["end"] = float(i), i + 0.9
        r["steady"] = encode(SteadyRun(reached=i % 3 != 2, criterion="iops_slope:1%", waited_s=12.0 + i % 3,
                                       value=-4.2, mean=1e5))
        doc["runs"].append(r)
    doc["order"] = [r["variant"] for r in doc["runs"]]
    if conditions is not None:
        doc["conditions"] = encode(conditions)
    return doc


def markdown_of(tmp_path: Path, doc: dict, *more: str) -> tuple[int, str, str]:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    return call("report", str(path), "--markdown", "-", *more)


def assert_well_formed(text: str) -> None:
    """At most LIMIT characters; fences closed; every <details> closed, none nested, none inside a fence; every
    table row with its header's number of cells; no raw HTML or fence from outside text."""
    assert len(text) <= LIMIT
    fence = ""
    open_details = 0
    columns = None
    for line in text.splitlines():
        ticks = line[: len(line) - len(line.lstrip("`"))]
        if fence:
            if line == fence:
                fence = ""
            continue
        if len(ticks) >= 3:
            fence = ticks
            continue
        if line.startswith("<details>"):
            assert open_details == 0 and line.endswith("</summary>") and len(re.findall(r"(?<!\\)<", line)) == 3, line
            open_details += 1
        elif line == "</details>":
            assert open_details == 1
            open_details -= 1
        else:
            assert not re.search(r"(?<!\\)<", line), line  # outside text never opens a tag
        if line.startswith("| "):
            cells = len(UNESCAPED_PIPE.findall(line)) - 1
            columns = cells if columns is None else columns
            assert cells == columns, line
        else:
            columns = None
    assert not fence and open_details == 0


def test_the_answer_the_conditions_and_the_evidence_in_order(tmp_path: Path) -> None:
    code_, out, err = markdown_of(tmp_path, experiment(6))
    assert code_ == 0, err
    assert_well_formed(out)
    lines = out.splitlines()
    assert lines[0] == "### iosched compare on loop0" and lines[2].startswith("**4k-randread on loop0, kernel 6.18")
    verdict = next(i for i, x in enumerate(lines) if x.startswith("mq-deadline vs none"))
    measured = next(i for i, x in enumerate(lines) if x.startswith("- measured on: loop0"))
    figures = lines.index("<details><summary>The figures: per variant, the mean and its 95% interval</summary>")
    runs = lines.index("<details><summary>The runs: every run in run order (6)</summary>")
    assert verdict < measured < figures < runs
    assert "on AMD EPYC 7B13, kernel 6.18.44-fc-v782; loop0 (1.0G) filled to 50.2% (trimmed first" in lines[measured]
    assert "firmware 2B2Q\\|EXM7" in lines[measured]
    assert any(x.startswith("- steady state: each run waited for IOPS slope within 1%/s") and "reached before 4 of 6"
               in x for x in lines)
    assert "  - run 3 (none): steady state not reached in 14 s: IOPS slope -4.2%/s (bound 1%)" in lines
    assert "| run | variant | valid | steady | IOPS | p99 latency (µs) | CPU µs per IO | MB/s |" in lines
    assert lines[runs + 4].startswith("| 1 | none | yes | reached | 197017 | 643.072 | 12.099 |")
    assert lines[runs + 6].startswith("| 3 | none | yes | not reached in 14 s |")
    per_variant = [x for x in lines[figures:runs] if x.startswith("| mq-deadline | IOPS |")]
    assert len(per_variant) == 1 and "| 3 of 3 |" in per_variant[0] and "…" in per_variant[0]


def test_outside_text_opens_no_cell_no_tag_no_fence(tmp_path: Path) -> None:
    doc = experiment(4, "mq_deadline")
    doc["runs"][1]["valid"], doc["runs"][1]["invalid_reason"] = False, "fio said | `x` </details> ```"
    doc["workload"]["job"]["name"] = "job|`</details>`"
    code_, out, err = markdown_of(tmp_path, doc)
    assert code_ == 0, err
    assert_well_formed(out)
    assert out.splitlines().count("</details>") == 2  # the page's own (a fenced line holds it inert)
    assert "| 2 | mq\\_deadline | no: fio said \\| \\`x\\` \\</details\\> \\`\\`\\` |" in out
    assert "\\x1b" in out and "\x1b" not in out  # the escape is shown, never acted on
    assert "Evil \\| \\`model\\` \\`\\`\\`\\</details\\>\\<b\\>\\*x\\*\\</b\\>" in out


def test_the_escapes_and_fences_themselves() -> None:
    assert md("a|b") == "a\\|b" and md("<x>") == "\\<x\\>" and md("x" * 500).endswith("…")
    assert len(md("x" * 500)) == 120
    assert md("line\nbreak") == "line\\\\nbreak"  # one line: the break shown escaped
    assert fenced(["a ```` b"]) == ["`````", "a ```` b", "`````"]
    assert fenced(["plain"], "text") == ["```text", "plain", "```"]
    assert code("echo `x`") == "`` echo `x` ``" and code("none") == "`none`"


def test_a_huge_result_is_cut_to_a_comment_saying_what_was_left(tmp_path: Path) -> None:
    code_, out, err = markdown_of(tmp_path, experiment(3000, "b" * 12))
    assert code_ == 0, err
    assert_well_formed(out)
    left = re.search(r"\*(\d+) more runs left out here \(a tracker comment holds 60k characters\); `--json` has "
                     r"every run\*", out)
    assert left is not None
    shown = len(re.findall(r"^\| \d+ \| ", out, re.M))
    assert shown + int(left.group(1)) == 3000 and shown > 100


def test_a_page_of_many_tables_keeps_its_bound_and_says_what_it_left() -> None:
    rows = [[str(i), "x" * 100] for i in range(400)]
    tables = [Table(f"table {n}", ["n", "what"], rows) for n in range(6)]
    text = page(["### head", *(f"- line {i} " + "y" * 200 for i in range(400))], tables, limit=20_000)
    assert_well_formed(text.replace("line", "l"))  # (the bound checked below: a smaller one than LIMIT)
    assert len(text) <= 20_000
    assert "more lines left out here; `--json` has them all" in text
    assert text.rstrip().endswith("more tables left out here; `--json` has them all*")
    cut = page(["```text", *("z" * 100 for _ in range(400)), "```"], [], limit=4_000)
    assert cut.splitlines()[-2] == "```"  # a fenced block cut short is closed


def test_an_older_file_says_what_it_lacks(tmp_path: Path) -> None:
    code_, out, _ = markdown_of(tmp_path, experiment(4, conditions=None))
    assert code_ == 0
    assert "- measured on: kernel 6.18.44-fc-v782 (the machine, device and fill were not kept: an older file)" in out
    bare = ConditionsDoc(cpu_model=None, device="loop0", device_model=None, firmware=None, fill=None, steady=None)
    code_, out, _ = markdown_of(tmp_path, experiment(4, conditions=bare))
    assert "- fill: not prepared (the target as found; `--fill PCT` states it)" in out
    assert "- steady state: not waited for" in out


def test_json_carries_the_same_facts(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(experiment(4)))
    code_, out, _ = call("report", str(path), "--json")
    assert code_ == 0
    doc = json.loads(out)
    assert doc["conditions"]["device_model"] == HOSTILE and doc["conditions"]["fill"]["level"] == 50.2
    assert doc["conditions"]["steady"]["criterion"] == "iops_slope:1%" and doc["kernel"].startswith("6.18")
    assert [r["steady"]["reached"] for r in doc["runs"]] == [True, True, False, True]
    assert [r["variant"] for r in doc["runs"]] == ["none", "mq-deadline"] * 2
    iops = doc["judgement"]["summaries"]["mq-deadline"]["iops"]
    assert iops["n"] == 2 and len(iops["ci95"]) == 2


def test_report_writes_a_file_and_refuses_what_has_no_page(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(experiment(4)))
    out_file = tmp_path / "r.md"
    code_, out, err = call("report", str(path), "--markdown", str(out_file))
    assert code_ == 0 and out == "" and f"the markdown report is in {out_file}" in err
    assert_well_formed(out_file.read_text())
    fleet = tmp_path / "f.json"
    fleet.write_text(json.dumps(saved("fleet")))
    for argv, words in ((["report", str(path), "--markdown", "-", "--json"], "all write to stdout"),
                        (["report", str(path), "--markdown", "-", "--details"], "--details applies to the text"),
                        (["report", str(path), str(path), "--markdown", "-"], "give one file"),
                        (["report", str(fleet), "--markdown", "-"], "report a host's compare")):
        code_, out, err = call(*argv)
        assert code_ == 2 and out == "" and words in err and len(err.strip().splitlines()) == 1, err


def test_a_matrix_page(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(saved("matrix")))
    code_, out, err = call("report", str(path), "--markdown", "-")
    assert code_ == 0, err
    assert_well_formed(out)
    assert "- **mq-deadline: cannot tell in IOPS on 2 of 2 workloads**" in out
    assert "| run | workload | variant | valid | IOPS |" in out


def test_an_advice_page_carries_each_tests_evidence(tree) -> None:
    from advice_support import SimulatedRunner, nvme_disk

    from iosched.core.advice.request import AdviceRequest, prepare_advice
    from iosched.core.documents.params import parse_candidates
    from iosched.core.experiment import service
    from iosched.core.present.advice_report import advice_markdown

    nvme_disk(tree)
    req = AdviceRequest("nvme0n1", goals=("throughput",), candidates=tuple(parse_candidates("bfq")), runtime=1.0,
                        settle=0.0, root=tree.root, steady=WAIT)
    doc = service.run(prepare_advice(req).plan_to_run(SimulatedRunner(noise=0.05))).doc
    text = advice_markdown(doc, "9.9")
    assert_well_formed(text)
    lines = text.splitlines()
    assert lines[0] == "### iosched advise nvme0n1"
    assert any(x.startswith("- measured on: nvme0n1") for x in lines) and "- iosched 9.9" in lines
    head = "<details><summary>The full speed test: per variant, the mean and its 95% interval</summary>"
    assert head in lines or any(x.startswith("<details><summary>The ") and "per variant" in x for x in lines)
    assert any(x.startswith("<details><summary>The ") and "every run in run order" in x for x in lines)
    assert lines.index(next(x for x in lines if "per variant" in x)) > lines.index(
        next(x for x in lines if x.startswith("- measured on:")))
    from iosched.core.present.worded import worded_json

    data = json.loads(json.dumps(worded_json(doc)))  # --json: the same facts
    assert data["conditions"]["device"] == "nvme0n1" and data["conditions"]["steady"]["window_s"] == 10
    result = data["tests"][0]["result"]
    assert [r["index"] for r in result["runs"]] == list(range(len(result["runs"])))  # (a simulated run waits for none)
    assert f"every run in run order ({len(result['runs'])})" in text
    assert all(len(m["ci95"]) == 2 for v in result["judgement"]["summaries"].values() for m in v.values())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data(), runs=st.integers(1, 400),
       label=st.sampled_from(["bfq", "kyber", "x_y", "a" * 15]))
def test_any_file_gives_a_well_formed_bounded_page_or_one_sentence(tmp_path: Path, data, runs: int,
                                                                   label: str) -> None:
    doc = experiment(runs, label if label != "none" else "x")
    doc = data.draw(mutate(doc)) if data.draw(st.booleans()) else doc
    code_, out, err = markdown_of(tmp_path, doc)
    if code_ == 0:
        assert_well_formed(out)
        assert "<details><summary>The runs: every run in run order" in out
    else:
        assert code_ == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert "Traceback" not in err


@pytest.mark.parametrize("kind", ["experiment", "sequential", "command", "alternation", "matrix", "study", "sweep"])
def test_every_saved_kind_makes_a_page(tmp_path: Path, kind: str) -> None:
    code_, out, err = markdown_of(tmp_path, saved(kind))
    assert code_ == 0, err
    assert_well_formed(out)
