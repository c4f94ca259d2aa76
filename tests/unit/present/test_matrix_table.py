"""A matrix's printed ratio agrees with the figures printed beside it (#48 item 1): "38.3k ± 66.6k  39.2k ± 52.4k
×2.07" set arithmetic means beside a ratio of geometric means. `ratio_disagreements` reads a printed table as a
reader would and checks each ratio against the variant's figure over the baseline's, to the digits printed; it holds
for every matrix page the saved corpus records, for generated matrices whose runs spread wide, and it catches the
old table."""

from __future__ import annotations

import random
import re
from pathlib import Path

from doc_support import matrix_doc
from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.core.present.matrix import matrix_text
from iosched.core.statistics.matrix_judge import judge_matrix

EXPECTED = Path(__file__).parents[2] / "expected" / "report"
SUFFIX = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
FIGURE = re.compile(r"^(-?\d+(?:\.(\d+))?)([kMGT]?)$")


def _figure(text: str) -> tuple[float, float] | None:
    """A cell's printed figure ("214.5k", the first of "214.5k ± 173.8k") and half its last digit (what rounding may
    have moved it by); None for "-"."""
    m = FIGURE.match(text.split(" ")[0])
    if m is None:
        return None
    scale = SUFFIX[m.group(3)]
    places = len(m.group(2) or "")
    return float(m.group(1)) * scale, 0.5 * 10 ** -places * scale


def table_rows(text: str) -> list[tuple[str, list[str]]]:
    """The rows of a matrix table: the workload and its cells as printed (columns two spaces apart)."""
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("workload  "))
    rows = []
    for line in lines[head + 1:]:
        if not line.strip():
            break
        name, *cells, _n = re.split(r" {2,}", line.strip())
        rows.append((name, cells))
    return rows


def ratio_disagreements(text: str) -> list[str]:
    """Each printed ratio that is not the figure beside it over the baseline's figure, to the digits printed; a cell
    decided before the last look of a sequential matrix (its ratio of the baseline's runs to its look, as the
    header says) is left out."""
    early = set(re.findall(r"(\S+) · (\S+) at (\d+)", text))
    last = {int(n) for *_, n in early}
    skip = {(w, v) for w, v, n in early if last and int(n) < max(last)}
    heads = re.split(r" {2,}", next(line for line in text.splitlines() if line.startswith("workload  ")).strip())
    variants = heads[1:-1]
    bad = []
    for name, cells in table_rows(text):
        base = _figure(cells[0])
        at = 1
        for v in variants[1:]:
            figure = _figure(cells[at]) if at < len(cells) else None
            ratio = cells[at + 1] if at + 1 < len(cells) and cells[at + 1].startswith("×") else None
            at += 2 if ratio is not None or (at + 1 < len(cells) and cells[at + 1] == "(cannot judge)") else 1
            if ratio is None or base is None or figure is None or (name.split(" [")[0], v) in skip:
                continue
            r = float(ratio[1:].split(" ")[0])
            (b, eb), (x, ex) = base, figure
            low, high = (x - ex) / (b + eb), (x + ex) / (b - eb)
            if not low - 0.005 <= r <= high + 0.005:
                bad.append(f"{name}, {v}: ×{r:.2f} beside {cells[0]} and {cells[at - 2]}")
    return bad


def _corpus_tables() -> list[Path]:
    return [p for p in sorted(EXPECTED.glob("*.txt")) if ": matrix of " in p.read_text().splitlines()[0]]


def test_every_saved_matrix_page_prints_the_figures_its_ratios_are_of():
    pages = _corpus_tables()
    assert len(pages) >= 4  # matrix, study and sweep, today's and 0.1.0's
    for page in pages:
        assert table_rows(page.read_text()), page
        assert ratio_disagreements(page.read_text()) == [], page


def test_the_check_catches_arithmetic_means_beside_a_ratio_of_geometric_ones():
    old = ("loop0: matrix of 1 workload(s) x 2 variants, 2 run(s) each\n"
           "IOPS: mean ± half the 95% CI; against none: the ratio and …\n\n"
           "workload  none           bfq                               n\n"
           "4k-read   38.3k ± 66.6k  39.2k ± 52.4k  ×2.07 (0.00–999+)   2\n"
           "4k-write  40.0k ± 1.0k   30.0k ± 2.0k   ×0.75 (0.70–0.80)*  2\n")
    assert table_rows(old)[0] == ("4k-read", ["38.3k ± 66.6k", "39.2k ± 52.4k", "×2.07 (0.00–999+)"])
    assert ratio_disagreements(old) == ["4k-read, bfq: ×2.07 beside 38.3k ± 66.6k and 39.2k ± 52.4k"]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.05, 1.5), st.integers(2, 6))
def test_a_matrix_whose_runs_spread_wide_prints_figures_its_ratios_agree_with(seed, spread, runs):
    rnd = random.Random(seed)
    labels = ["none", "mq-deadline", "bfq"]
    jobs = [{"name": n, "options": {}} for n in ("4k-read", "4k-randread")]
    out = []
    for _ in range(runs):
        for job in jobs:
            for i, lb in enumerate(labels):
                x = 50e3 * (1 + 0.3 * i) * rnd.lognormvariate(0.0, spread)
                out.append({"slot": len(out), "workload": job["name"], "variant": lb, "metrics": {"iops": x}})
    doc = matrix_doc({"variants": [{"label": lb} for lb in labels], "runs": out, "repeat": runs, "workloads": jobs})
    text = matrix_text(doc, judge_matrix(doc))
    assert "geometric mean" in text.splitlines()[1]
    assert len(table_rows(text)) == 2 and ratio_disagreements(text) == []
