#!/usr/bin/env python3
"""Leave-one-article-out check of a constant of the ``sequence`` aligner chosen on OneStopEnglish dev.

For each of the six OneStopEnglish dev articles, the value of ``FIELD`` with the best Task 2 F1 on the
other five articles is chosen and the held-out article is scored with it; the pooled held-out Task 2 F1
says whether choosing that constant on English gold carries over to unseen articles
(docs/engine.md, "Task 2 on OneStopEnglish").

    python scripts/engine_sequence_loao.py partial_run_words 0,5,6,7,8,9,10,12,15 [--base '{"orphan_min_score": 0.25}']
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data" / "onestopenglish-gold-dev"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("field")
    ap.add_argument("values", help="comma-separated values (JSON scalars)")
    ap.add_argument("--base", default="{}", help="JSON object of SequenceConfig fields for every run")
    args = ap.parse_args()

    from alignment_engine.evaluation import evaluate, prf
    from alignment_engine.ids import pair_id_of
    from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl
    from alignment_engine.sequence import SequenceAligner, SequenceConfig

    pairs = read_pairs_jsonl(DATA / "dev_pairs.jsonl")
    gold = read_alignment_tsv(DATA / "dev_gold.tsv")
    base = replace(SequenceConfig(), **json.loads(args.base))
    values = [json.loads(v) for v in args.values.split(",")]

    def article(pair_id: str) -> str:
        return pair_id.rsplit("_", 1)[0]

    articles = sorted({article(p.pair_id) for p in pairs})
    rows = {v: {p.pair_id: SequenceAligner(replace(base, **{args.field: v})).align([p])[0] for p in pairs}
            for v in values}

    def task2(v: object, chosen: list[str]) -> dict:
        ps = [p for p in pairs if article(p.pair_id) in chosen]
        gs = [g for g in gold if article(pair_id_of(g.simple_id)) in chosen]
        return evaluate(gs, [a for p in ps for a in rows[v][p.pair_id]], ps)["task2"]  # type: ignore[index]

    tp = fp = fn = 0
    for held in articles:
        rest = [a for a in articles if a != held]
        best = max(values, key=lambda v: task2(v, rest)["f1"])
        r = task2(best, [held])
        tp, fp, fn = tp + r["tp"], fp + r["fp"], fn + r["fn"]
        print(f"{held}: {args.field}={best} chosen on the other articles, held-out Task 2 F1 {r['f1']:.4f}")
    pooled = prf(tp, tp + fp, tp + fn)
    print(f"pooled held-out Task 2 F1 {pooled['f1']:.4f}; on all 12 pairs per value: "
          + ", ".join(f"{v}: {task2(v, articles)['f1']:.4f}" for v in values))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
