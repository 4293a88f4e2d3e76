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
