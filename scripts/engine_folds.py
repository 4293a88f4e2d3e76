#!/usr/bin/env python3
"""Split DEplain-web train into K folds by document, for held-out measurements on more documents than dev.

Writes ``f{k}_train_pairs.jsonl`` / ``f{k}_train_gold.tsv`` (every document but fold k's) and
``f{k}_test_pairs.jsonl`` / ``f{k}_test_gold.tsv`` (fold k's) into ``--out``. A document's fold is its position
in a seeded shuffle of train's pair ids, modulo K; a gold row belongs to the document its simple sentence id
names (``<pair_id>-...``), so no document crosses a fold. Round 16 of docs/engine-results.md trains a model on
each ``f{k}_train`` (``train ... --dev-pairs f{k}_test_pairs.jsonl --dev-gold f{k}_test_gold.tsv --set
refit_with_dev=false``) and scores it on ``f{k}_test`` with ``scripts/bench_engine_speed.py --gold-set``.

    python scripts/engine_folds.py --out var/folds [--folds 4] [--seed 20261206]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from engine_data import DATA  # ../shared/data/deplain-web


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the fold files (created)")
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--seed", type=int, default=20261206)
    ap.add_argument("--data", default=str(DATA), help="folder with train_pairs.jsonl, train_gold.tsv")
    args = ap.parse_args(argv)
    data, out = Path(args.data), Path(args.out)
    pairs = [line for line in (data / "train_pairs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
             if line.strip()]
    gold = [line for line in (data / "train_gold.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
            if line.strip()]
    ids = [str(json.loads(line)["pair_id"]) for line in pairs]
    order = list(ids)
    random.Random(args.seed).shuffle(order)
    fold = {pair_id: k % args.folds for k, pair_id in enumerate(order)}
    out.mkdir(parents=True, exist_ok=True)
    for k in range(args.folds):
        for part, inside in (("train", False), ("test", True)):
            (out / f"f{k}_{part}_pairs.jsonl").write_text(
                "".join(line for line, pair_id in zip(pairs, ids, strict=True) if (fold[pair_id] == k) == inside),
                encoding="utf-8")
            (out / f"f{k}_{part}_gold.tsv").write_text(
                "".join(line for line in gold if (fold[line.split("\t")[1].split("-")[0]] == k) == inside),
                encoding="utf-8")
        print(f"fold {k}: {sum(1 for f in fold.values() if f == k)} documents")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
