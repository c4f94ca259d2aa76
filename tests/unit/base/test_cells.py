"""Terminal columns of plain text (core/base/cells.py), checked against Rich's own count, and `iosched list` with
wide characters: rows still fit the width and columns still line up."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len

from iosched.cli.devtable import shorten, table_lines
from iosched.core.base.cells import cell_width, cut_at_word, head_cells, pad_cells, tail_cells, wrap_cells
from iosched.core.kernel.devices import list_devices

from fixtree import FixTree

# ASCII, accented Latin, CJK, Hangul, full-width forms and combining accents: the characters a model name, a
# mount point or a backing file's path can hold on a real system.
ALPHABET = st.one_of(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),
    st.sampled_from("éüßøñ"),
    st.characters(min_codepoint=0x4E00, max_codepoint=0x4FFF),
    st.characters(min_codepoint=0xAC00, max_codepoint=0xACFF),
    st.characters(min_codepoint=0xFF01, max_codepoint=0xFF5E),
    st.characters(min_codepoint=0x0300, max_codepoint=0x036F),
)
TEXT = st.text(ALPHABET, max_size=40)


@given(TEXT)
def test_the_width_is_what_rich_counts(text):
    assert cell_width(text) == cell_len(text)


@given(TEXT, st.integers(0, 50))
def test_cuts_fit_and_take_as_much_as_fits(text, width):
    head, tail = head_cells(text, width), tail_cells(text, width)
    assert text.startswith(head) and text.endswith(tail)
    assert cell_width(head) <= width and cell_width(tail) <= width
    if head != text:  # the next character would not have fitted
        assert cell_width(text[:len(head) + 1]) > width
    assert cell_width(pad_cells(head, width)) == width


@given(TEXT, st.integers(1, 30), st.booleans())
def test_shorten_fits_the_columns_and_keeps_what_fits(text, width, keep_tail):
    short = shorten(text, width, keep_tail)
    assert cell_width(short) <= width
    assert short == text if cell_width(text) <= width else short.count("…") >= 1


def test_a_wide_model_name_keeps_rows_within_the_width_and_columns_aligned(tmp_path):
    tree = FixTree(tmp_path / "root")
    tree.add_disk("sda", "8:0", extra={"device/model": "東芝製ソリッドステートドライブ高耐久モデル"})
    tree.add_disk("sdb", "8:16", extra={"device/model": "Plain SSD"})
    tree.write("proc/self/mountinfo", "29 1 8:16 / /srv/データ/保存先/とても長い名前のディレクトリ rw - ext4 x rw\n")
    devices = list_devices(tree.root)
    for width in (60, 80, None):
        lines = table_lines(devices, width)
        assert width is None or all(cell_width(line) <= width for line in lines), lines
        # The scheduler column starts at the same column on every row.
        starts = {cell_width(line[:line.index(key)]) for line, key in zip(lines, ("SCHEDULERS", "[", "["))}
        assert len(starts) == 1, lines


@given(st.text(alphabet=st.sampled_from("ab (),:-é漢 "), max_size=60), st.integers(0, 70))
def test_a_cut_at_a_word_fits_and_keeps_a_start_of_the_text(text, width):
    cut = cut_at_word(text, width)
    assert cell_width(cut) <= width
    if cell_width(text) <= width:
        assert cut == text
    elif width >= 1:
        assert cut.endswith("…") and text.startswith(cut[:-1])


def test_a_cut_ends_after_a_whole_word_and_never_in_an_open_bracket():
    meaning = "requests the scheduler may hold (reset by a switch)"
    assert cut_at_word(meaning, 51) == meaning
    assert cut_at_word(meaning, 40) == "requests the scheduler may hold…"  # not "(reset…"
    assert cut_at_word("4 KiB random read, 2 jobs x iodepth 16: CPU-bound on", 51) == \
        "4 KiB random read, 2 jobs x iodepth 16: CPU-bound…"  # the cut falls on a space: the word stays
    assert cut_at_word("cmd: tar-xzf-/a/very/long/path", 20) == "cmd: tar-xzf-/a/ver…"  # one long word: cut in it


WORDS = st.lists(st.text("abcdefghij(),.:;%-", min_size=1, max_size=12), min_size=1, max_size=30)


@given(WORDS, st.sampled_from([" ", "  ", "   "]), st.integers(0, 6), st.integers(22, 90))
def test_a_wrapped_line_fits_and_keeps_every_word_whole(words, gap, indent, width):
    text = " " * indent + gap.join(words)
    lines = wrap_cells(text, width)
    assert all(cell_width(line) <= width for line in lines), lines
    assert " ".join(lines).split() == text.split()  # no word cut: none is wider than a line (12 < 22 - 8)
    assert lines[0].startswith(" " * indent)
    assert all(line.startswith(" " * min(indent + 2, width // 2)) for line in lines[1:])


def test_a_wrap_keeps_a_tables_spacing_and_cuts_only_a_word_longer_than_a_line():
    assert wrap_cells("a    b    c", 7) == ["a    b", "  c"]
    assert wrap_cells("x " + "p" * 30, 12, hang=0) == ["x", "pppppppppppp", "pppppppppppp", "pppppp"]
    assert wrap_cells("fits", 4) == ["fits"]
