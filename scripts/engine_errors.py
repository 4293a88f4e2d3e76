#!/usr/bin/env python3
"""Where an aligner's errors are on DEplain-web: by the plan files' domain, and by kind (docs/engine-results.md, Round 29).

Scores a prediction TSV against the gold with ``evaluate(..., by_document=True)`` and sums its documents' counts by the
``domain`` column of DEplain-web's plan files (``<data>/{train,dev}/plan_doc_<pair_id>.csv``; the pairs JSONL has no
domain). Then, over the Task 1 pairs (identical strings left out): how many false positives link a simple sentence
that the gold aligns to nothing, how many misses are on simple sentences the prediction leaves unaligned, and which
documents hold the m:n gold pairs.

    python scripts/engine_ensemble.py --models DIR0,DIR1,DIR2 --pairs $D/dev_pairs.jsonl --gold $D/dev_gold.tsv \\
        --write-pred dev.tsv        # held-out members (train --set members=1 --set refit_with_dev=false --seed S)
    python scripts/engine_errors.py --pred dev.tsv [--split dev] [--data ../shared/data/deplain-web]
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COUNTS = ("tp", "fp", "fn", "n_pred", "n_gold")


def domains(data: Path, split: str) -> dict[str, str]:
    """pair id -> the ``domain`` of its plan file."""
    out: dict[str, str] = {}
    for path in sorted((data / split).glob("plan_doc_*.csv")):
        with path.open(encoding="utf-8", newline="") as f:
            row = next(csv.DictReader(f), None)
        if row is not None:
            out[row["pair_id"]] = row["domain"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pred", required=True, help="predicted alignment TSV")
    ap.add_argument("--split", default="dev", choices=("train", "dev"))
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "deplain-web"))
    args = ap.parse_args()

    from alignment_engine.evaluation import evaluate, group_shapes, match_rows, prf
    from alignment_engine.ids import pair_id_of
    from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl

    data = Path(args.data)
    pairs = read_pairs_jsonl(data / f"{args.split}_pairs.jsonl")
    gold = read_alignment_tsv(data / f"{args.split}_gold.tsv")
    pred = read_alignment_tsv(args.pred)
    domain_of = domains(data, args.split)
    missing = sorted({p.pair_id for p in pairs} - set(domain_of))
    if missing:
        raise SystemExit(f"{data / args.split}: no plan file for pairs {', '.join(missing[:10])}")

    scores = evaluate(gold, pred, pairs, by_document=True)
    m = match_rows(gold, pred, pairs)
    gold_pos, pred_pos, identical = m.positives()
    g1, p1 = gold_pos - identical, pred_pos - identical
    shapes = group_shapes(gold_pos)
    aligned_simple = {s for s, _ in g1}
    predicted_simple = {s for s, _ in p1}

    print("| domain | docs | gold pairs | P | R | F1 | m:n gold pairs (found) | fp on simple sentences gold leaves "
          "unaligned | fn on simple sentences left unaligned |")
    print("|---|---|---|---|---|---|---|---|---|")
    names = sorted(set(domain_of.values())) + ["all"]
    for name in names:
        docs = [d for d in scores["documents"] if name == "all" or domain_of[d] == name]
        if not docs:
            continue
        total = {k: sum(scores["documents"][d]["task1"][k] for d in docs) for k in COUNTS}
        block = prf(total["tp"], total["n_pred"], total["n_gold"])
        in_docs = set(docs)
        mn = [k for k in g1 if shapes[k] == "m:n" and pair_id_of(k[0]) in in_docs]
        fp = [k for k in p1 - g1 if pair_id_of(k[0]) in in_docs]
        fn = [k for k in g1 - p1 if pair_id_of(k[0]) in in_docs]
        print(f"| {name} | {len(docs)} | {total['n_gold']} | {block['precision']:.3f} | {block['recall']:.3f} | "
              f"**{block['f1']:.3f}** | {len(mn)} ({sum(k in p1 for k in mn)}) | "
              f"{sum(s not in aligned_simple for s, _ in fp)} of {len(fp)} | "
              f"{sum(s not in predicted_simple for s, _ in fn)} of {len(fn)} |")
    by_doc = Counter(pair_id_of(k[0]) for k in g1 if shapes[k] == "m:n")
    print("\nm:n gold pairs by document: " + ", ".join(f"{d} ({domain_of[d]}): {n}" for d, n in by_doc.most_common()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
