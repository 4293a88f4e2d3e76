import json
import subprocess
import sys
from pathlib import Path

import pytest

from alignment_engine.evaluation import evaluate
from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl, write_alignment_tsv
from alignment_engine.types import Alignment, DocPair

SCORER = Path(__file__).resolve().parents[3] / "shared" / "tools" / "score_alignments.py"


def _pair() -> DocPair:
    return DocPair("d", complex=[["Same.", "Long complex one."], ["Other complex."]], simple=[["Same.", "Short."]])


def test_identical_strings_left_out():
    pair = _pair()
    gold = [Alignment("aligned", "d-0-0-0", "d-1-0-0"), Alignment("partialAligned", "d-0-0-1", "d-1-0-1")]
    pred = [Alignment("aligned", "d-0-0-0", "d-1-0-0"), Alignment("aligned", "d-0-0-1", "d-1-0-1"),
            Alignment("aligned", "d-0-0-1", "d-1-1-0")]
    res = evaluate(gold, pred, [pair])
    assert res["task1"]["n_gold"] == 1 and res["task1"]["tp"] == 1 and res["task1"]["fp"] == 1
    assert res["task1"]["precision"] == 0.5 and res["task1"]["recall"] == 1.0
    assert res["task2"]["n_gold"] == 0  # the only non-identical gold pair is partial
    assert res["with_identical"]["tp"] == 2


def test_duplicates_and_notaligned_rows():
    pair = _pair()
    gold = [Alignment("aligned", "d-0-0-1", "d-1-0-1")]
    pred = [Alignment("notAligned", "d-0-0-1", "d-1-0-1"), Alignment("partialAligned", "d-0-0-1", "d-1-0-1"),
            Alignment("aligned", "d-0-0-1", "d-1-0-1"), Alignment("aligned", "zz-0-0-0", "zz-1-0-0")]
    res = evaluate(gold, pred, [pair])
    assert res["task1"]["f1"] == 1.0 and res["task2"]["f1"] == 1.0
    assert res["counts"]["pred_rows_out_of_scope"] == 1
    assert res["counts"]["pred_duplicate_rows"] == 2


def _run_scorer(gold: Path, pred: Path, pairs: Path | None) -> dict:
    cmd = [sys.executable, str(SCORER), str(gold), str(pred)] + (["--pairs", str(pairs)] if pairs else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out[: out.rindex("}") + 1])


@pytest.mark.parametrize("with_pairs", [True, False])
def test_agrees_with_shared_scorer_on_deplain_dev(shared_data, tmp_path, with_pairs):
    if not SCORER.is_file():
        pytest.skip(f"scorer not found at {SCORER}")
    pairs_path = shared_data / "deplain-web" / "dev_pairs.jsonl"
    gold_path = shared_data / "deplain-web" / "dev_gold.tsv"
    pairs, gold = read_pairs_jsonl(pairs_path), read_alignment_tsv(gold_path)
    from alignment_engine.api import load_aligner

    pred = [a for doc in load_aligner("cats-closest", threshold=0.15).align(pairs) for a in doc]
    # make it harder: relabel some rows, duplicate some, add a notAligned row
    pred = [Alignment("partialAligned" if k % 3 == 0 else a.label, a.simple_id, a.complex_id, a.simple_text,
                      a.complex_text, a.score) for k, a in enumerate(pred)]
    pred += pred[:5] + [Alignment("notAligned", pred[7].simple_id, pred[7].complex_id, "x", "y")]
    pred_path = tmp_path / "pred.tsv"
    write_alignment_tsv(pred_path, pred)
    ours = evaluate(gold, read_alignment_tsv(pred_path), pairs if with_pairs else None)
    theirs = _run_scorer(gold_path, pred_path, pairs_path if with_pairs else None)
    for task in ("task1", "task2", "with_identical"):
        assert ours[task] == theirs[task], task
    assert ours["task1"]["tp"] > 0


def _shape_pair() -> DocPair:
    # complex c0..c5 and simple s0..s5, all different strings
    return DocPair("g", complex=[[f"complex sentence {j}." for j in range(6)]],
                   simple=[[f"simple sentence {i}." for i in range(6)]])


def _a(i: int, j: int, label: str = "aligned") -> Alignment:
    return Alignment(label, f"g-0-0-{i}", f"g-1-0-{j}")


def test_group_shapes_are_components_of_the_pairs():
    from alignment_engine.evaluation import group_shapes

    pairs = [("s0", "c0"), ("s1", "c1"), ("s2", "c1"), ("s3", "c2"), ("s3", "c3"),
             ("s4", "c4"), ("s5", "c4"), ("s5", "c5")]  # the last three chain into one m:n component
    shapes = group_shapes(pairs)
    assert shapes[("s0", "c0")] == "1:1"
    assert shapes[("s1", "c1")] == shapes[("s2", "c1")] == "1:n"  # one complex split into two simple
    assert shapes[("s3", "c2")] == shapes[("s3", "c3")] == "n:1"  # two complex merged into one simple
    assert {shapes[p] for p in pairs[5:]} == {"m:n"}


def test_recall_by_gold_shape_and_precision_by_predicted_shape():
    pair = _shape_pair()
    gold = [_a(0, 0), _a(1, 1), _a(2, 1), _a(3, 2), _a(3, 3), _a(4, 4), _a(4, 5), _a(5, 4), _a(5, 5)]
    # found: the 1:1, one part of the split, both of the merge, two of the four m:n pairs (as two 1:1
    # groups), and one wrong pair s0-c1 that joins the 1:1 with the split's found part
    pred = [_a(0, 0), _a(0, 1), _a(1, 1), _a(3, 2), _a(3, 3), _a(4, 4), _a(5, 5)]
    res = evaluate(gold, pred, [pair])
    g = res["groups"]["gold"]
    assert (g["1:1"]["gold"], g["1:1"]["recall"]) == (1, 1.0)
    assert (g["1:n"]["gold"], g["1:n"]["tp"], g["1:n"]["recall"]) == (2, 1, 0.5)
    assert (g["n:1"]["gold"], g["n:1"]["recall"]) == (2, 1.0)
    assert (g["m:n"]["gold"], g["m:n"]["tp"], g["m:n"]["recall"]) == (4, 2, 0.5)
    assert g["m:n"]["share"] == pytest.approx(4 / 9, abs=1e-6)
    p = res["groups"]["pred"]
    # predicted components: {s0, s1} x {c0, c1} via s0-c0, s0-c1, s1-c1 is m:n (2 of 3 right);
    # s3 with c2, c3 is n:1 (both right); s4-c4 and s5-c5 are 1:1 (both right)
    assert (p["m:n"]["pred"], p["m:n"]["tp"]) == (3, 2)
    assert p["m:n"]["precision"] == pytest.approx(2 / 3, abs=1e-6)
    assert (p["n:1"]["pred"], p["n:1"]["precision"]) == (2, 1.0)
    assert (p["1:1"]["pred"], p["1:1"]["precision"]) == (2, 1.0)
    assert p["1:n"]["pred"] == 0


def test_group_scores_leave_identical_strings_out_but_keep_them_in_the_groups():
    pair = DocPair("h", complex=[["Copied part. And more.", "Another one."]], simple=[["Copied part. And more.", "And more."]])
    gold = [Alignment("identical", "h-0-0-0", "h-1-0-0"), Alignment("aligned", "h-0-0-1", "h-1-0-0")]
    res = evaluate(gold, gold, [pair])
    g = res["groups"]["gold"]
    assert g["1:n"]["gold"] == 1 and g["1:n"]["recall"] == 1.0  # a split, though one part is copied
    assert g["1:1"]["gold"] == 0


def test_by_document_scores_every_scored_document_and_sums_to_the_totals():
    first = _shape_pair()
    second = DocPair("h", complex=[["Copied part.", "Another one."]], simple=[["Copied part.", "A new one."]])
    quiet = DocPair("k", complex=[["Nothing here."]], simple=[["Nor here."]])
    gold = [_a(0, 0), _a(1, 1), _a(2, 1, "partialAligned"),
            Alignment("identical", "h-0-0-0", "h-1-0-0"), Alignment("aligned", "h-0-0-1", "h-1-0-1")]
    pred = [_a(0, 0), _a(2, 1), _a(3, 3),  # g: one right, one partial gold predicted aligned, one wrong
            Alignment("aligned", "h-0-0-0", "h-1-0-0")]  # h: the identical pair only (left out of Task 1)
    res = evaluate(gold, pred, [first, second, quiet], by_document=True)
    docs = res["documents"]
    assert list(docs) == ["g", "h", "k"]  # every scored document, one with nothing gold or predicted too
    assert (docs["g"]["task1"]["tp"], docs["g"]["task1"]["fp"], docs["g"]["task1"]["fn"]) == (2, 1, 1)
    assert (docs["g"]["task2"]["tp"], docs["g"]["task2"]["n_gold"], docs["g"]["task2"]["n_pred"]) == (1, 2, 3)
    assert (docs["h"]["task1"]["tp"], docs["h"]["task1"]["n_pred"], docs["h"]["task1"]["fn"]) == (0, 0, 1)
    assert docs["k"]["task1"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "tp": 0, "fp": 0, "fn": 0,
                                  "n_pred": 0, "n_gold": 0}
    for task in ("task1", "task2"):
        for field in ("tp", "fp", "fn", "n_pred", "n_gold"):
            assert sum(d[task][field] for d in docs.values()) == res[task][field], (task, field)
    assert "documents" not in evaluate(gold, pred, [first, second, quiet])


def test_by_document_orders_numeric_pair_ids_by_number():
    ids = ("10", "9", "x", "\u00b2")  # a superscript two is a digit to str.isdigit but not to int()
    pairs = [DocPair(pid, complex=[["A complex sentence."]], simple=[["A simple one."]]) for pid in ids]
    gold = [Alignment("aligned", f"{pid}-0-0-0", f"{pid}-1-0-0") for pid in ids]
    assert list(evaluate(gold, gold, pairs, by_document=True)["documents"]) == ["9", "10", "x", "\u00b2"]
