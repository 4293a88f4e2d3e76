#!/usr/bin/env python3
"""How lexically visible are the gold pairs an aligner misses? (docs/engine-results.md, Known weaknesses)

Reads a gold TSV, a predicted TSV and the pairs JSONL; over the Task 1 pairs (matched by
``evaluation.match_rows``, identical strings left out, as ``evaluation.evaluate`` scores them) it splits the gold pairs
into found and missed, and the predictions that are not gold into false positives, and prints per group
(and, for the gold pairs, per gold group shape) how many share no word of at least ``--min-letters``
letters (lower-cased word tokens of ``text.words``) and no ``--prefix``-letter word prefix (a
language-independent stand-in for a stem). Pairs that share nothing of the kind are invisible to every
lexical channel but character 3-grams below the word level.

    python scripts/engine_misses.py --gold $D/dev_gold.tsv --pred dev.tsv --pairs $D/dev_pairs.jsonl [--examples 5]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gold", required=True)
    ap.add_argument("--pred", required=True)
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--min-letters", type=int, default=4)
    ap.add_argument("--prefix", type=int, default=5)
    ap.add_argument("--examples", type=int, default=0, help="print this many missed pairs per gold shape")
    args = ap.parse_args()

    from alignment_engine.evaluation import group_shapes, match_rows
    from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl
    from alignment_engine.text import words

    # the rows matched and the pairs counted exactly as evaluate() scores Task 1; group shapes as its
    # "groups" (components of all positive gold pairs, identical strings included)
    matched = match_rows(read_alignment_tsv(args.gold), read_alignment_tsv(args.pred), read_pairs_jsonl(args.pairs))
    gold_all, pred_all, identical = matched.positives()
    texts = matched.texts
    shape = group_shapes(gold_all)
    gold, pred = gold_all - identical, pred_all - identical

    def shared(p: tuple[str, str], cut: int | None) -> bool:
        s, c = ({w[:cut] for w in words(texts[i]) if len(w) >= args.min_letters} for i in p)
        return bool(s & c)

    groups = {"missed": sorted(gold - pred), "found": sorted(gold & pred), "false positives": sorted(pred - gold)}
    out: dict = {}
    for name, items in groups.items():
        no_word = [p for p in items if not shared(p, None)]
        no_prefix = [p for p in items if not shared(p, args.prefix)]
        row: dict[str, object] = {"pairs": len(items), "no_shared_word": len(no_word), "no_shared_prefix": len(no_prefix),
               "share_no_word": round(len(no_word) / max(len(items), 1), 3),
               "share_no_prefix": round(len(no_prefix) / max(len(items), 1), 3)}
        if name != "false positives":
            by = Counter(shape[p] for p in items)
            none = Counter(shape[p] for p in no_word)
            row["by_gold_shape"] = {sh: {"pairs": by[sh], "no_shared_word": none[sh]} for sh in sorted(by)}
        out[name] = row
    print(json.dumps(out, indent=1))
    rng = random.Random(0)
    for sh in sorted({shape[p] for p in groups["missed"]}) if args.examples else ():
        items = [p for p in groups["missed"] if shape[p] == sh]
        for s, c in rng.sample(items, min(args.examples, len(items))):
            print(f"[{sh}] {s}: {texts[s][:120]}\n       {c}: {texts[c][:120]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
