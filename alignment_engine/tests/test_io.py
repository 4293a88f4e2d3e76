import json

import pytest

from alignment_engine.errors import InputError
from alignment_engine.io import (
    read_alignment_tsv,
    read_pairs_jsonl,
    text_paragraphs,
    write_alignment_tsv,
    write_pairs_jsonl,
)
from alignment_engine.types import Alignment, DocPair, distinct_sentences


def _assert_input_error(read, path, line_no, problem):
    """``read(path)`` fails with an InputError that starts with ``PATH:LINE: `` and names ``problem``."""
    with pytest.raises(InputError) as err:
        read(path)
    assert str(err.value).startswith(f"{path}:{line_no}: ")
    assert problem in str(err.value)


def test_pairs_roundtrip(tmp_path):
    pairs = [DocPair("a1", [["C one.", "C two."], ["C three."]], [["S one."]], "de"), DocPair("b_2", [], [])]
    path = tmp_path / "p.jsonl"
    write_pairs_jsonl(path, pairs)
    again = read_pairs_jsonl(path)
    assert again == pairs
    assert again[0].complex_ids() == ["a1-1-0-0", "a1-1-0-1", "a1-1-1-0"]
    assert again[0].simple_ids() == ["a1-0-0-0"]
    assert again[0].language == "de"


def test_pairs_ignore_unknown_keys_and_blank_lines(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("\n" + json.dumps({"pair_id": "x", "complex": [["a"]], "simple": [["b"]], "extra": 1}) + "\n\n")
    (pair,) = read_pairs_jsonl(path)
    assert pair.pair_id == "x" and pair.language == "en"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{not json", "not valid JSON"),
        ('{"pair_id": "a-b", "complex": [], "simple": []}', "pair_id"),
        ('{"pair_id": "a", "complex": ["flat"], "simple": []}', "'complex' must be a list of paragraphs"),
        ('{"pair_id": "a", "complex": [], "simple": [[1]]}', "'simple' must be a list of paragraphs"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_pairs_errors_name_file_and_line(tmp_path, line, problem):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"pair_id": "ok", "complex": [], "simple": []}\n' + line + "\n")
    _assert_input_error(read_pairs_jsonl, path, 2, problem)


def test_duplicate_pair_id(tmp_path):
    path = tmp_path / "dup.jsonl"
    path.write_text('{"pair_id": "a", "complex": [], "simple": []}\n' * 2)
    with pytest.raises(InputError, match=":2: pair_id 'a' already used on line 1"):
        read_pairs_jsonl(path)


def test_tsv_roundtrip_with_header_and_cleaning(tmp_path):
    rows = [Alignment("aligned", "p-0-0-0", "p-1-0-1", "s\ttext", "c\ntext", 0.5),
            Alignment("partialAligned", "p-0-1-0", "p-1-2-0")]
    path = tmp_path / "a.tsv"
    assert write_alignment_tsv(path, rows, header=True) == 2
    lines = path.read_text().splitlines()
    assert lines[0].startswith("label\t")
    assert lines[1].split("\t") == ["aligned", "p-0-0-0", "p-1-0-1", "s text", "c text", "0.5"]
    again = read_alignment_tsv(path)
    assert [(r.label, r.simple_id, r.complex_id, r.score) for r in again] == [
        ("aligned", "p-0-0-0", "p-1-0-1", 0.5), ("partialAligned", "p-0-1-0", "p-1-2-0", None)]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("aligned\tp-0-0-0\tp-1-0-0", "expected 5 or 6 tab-separated fields"),
        ("maybe\tp-0-0-0\tp-1-0-0\ts\tc", "unknown label"),
        ("aligned\tp-1-0-0\tp-0-0-0\ts\tc", "columns swapped"),
        ("aligned\tp-0-0\tp-1-0-0\ts\tc", "bad simple_id"),
        ("aligned\tp-0-0-0\tq-1-0-0\ts\tc", "different pairs"),
        ("aligned\tp-0-0-0\tp-1-0-0\ts\tc\tx", "not a number"),
    ],
)
def test_tsv_errors_name_file_and_line(tmp_path, line, problem):
    path = tmp_path / "bad.tsv"
    path.write_text("label\tsimple_id\tcomplex_id\ts\tc\n" + "aligned\tp-0-0-0\tp-1-0-0\ts\tc\n" + line + "\n")
    _assert_input_error(read_alignment_tsv, path, 3, problem)


def test_not_utf8_reports_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"pair_id": "a", "complex": [], "simple": []}\n{"pair_id": "\xff"}\n')
    with pytest.raises(InputError, match=r":2: not valid UTF-8"):
        read_pairs_jsonl(path)


def test_text_paragraphs_drop_level_heading():
    assert text_paragraphs("Intermediate\n\nFirst  para. \n\n Second.\n") == ["First para.", "Second."]


def test_distinct_sentences_are_each_text_once_in_first_seen_order() -> None:
    a = DocPair("a", complex=[["C1.", "Same."], ["C2."]], simple=[["S1.", "Same."]])
    b = DocPair("b", complex=[["C1."]], simple=[["S2."]])
    assert a.sentences() == ["S1.", "Same.", "C1.", "Same.", "C2."]
    assert distinct_sentences([a, b]) == ["S1.", "Same.", "C1.", "C2.", "S2."]
    assert distinct_sentences([]) == []
