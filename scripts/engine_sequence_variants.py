#!/usr/bin/env python3
"""Variants of the training-free ``sequence`` aligner on OneStopEnglish dev and DEplain-web train.

Each variant is a JSON object of ``SequenceConfig`` fields; prints Task 1 / Task 2 per data set
(docs/engine-results.md, "OneStopEnglish Task 2 of the training-free default").

    python scripts/engine_sequence_variants.py '{"default": {}, "union": {"combine": "union"}}'
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"


def main() -> int:
    from alignment_engine.evaluation import evaluate
    from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl
    from alignment_engine.sequence import SequenceAligner, SequenceConfig

    sets = {"OneStopEnglish dev": DATA / "onestopenglish-gold-dev" / "dev",
            "DEplain-web train": DATA / "deplain-web" / "train"}
    data = {k: (read_pairs_jsonl(f"{p}_pairs.jsonl"), read_alignment_tsv(f"{p}_gold.tsv")) for k, p in sets.items()}
    variants = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {"default": {}}
    for name, opts in variants.items():
        cfg = replace(SequenceConfig(), **opts)
        line = [name]
        for k, (pairs, gold) in data.items():
            rows = [a for doc in SequenceAligner(cfg).align(pairs) for a in doc]
            r = evaluate(gold, rows, pairs)
            line.append(f"{k}: Task 1 F1 {r['task1']['f1']:.4f}, Task 2 F1 {r['task2']['f1']:.4f} "
                        f"(P {r['task2']['precision']:.3f} R {r['task2']['recall']:.3f})")
        print(" | ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
