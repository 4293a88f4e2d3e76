"""Does the written model gain from the dev documents? (docs/engine-results.md, Round 11)

DEplain-web's 70 train documents are cut into four folds S_k (seeded shuffle of the pair ids, every fourth).
For each fold k it trains the default configuration twice, with no dev set (so nothing is refitted):

- A_k on train without S_k (about 53 documents),
- B_k on train without S_k plus the 17 dev documents (about 70),

and scores both on S_k, which neither saw. B - A is what adding 17 documents (dev's) to training gives on
documents that no model saw, which is what ``refit_with_dev`` does for the written model. Prints one line per
model and the pooled Task 1 over the folds run (every fold's predictions scored together).

    python scripts/engine_refit.py --out /tmp/refit [--folds 0 1 2 3] [--seed 7]

Each training takes about 6 minutes on one core (two can run at once: ``--folds 0 1`` and ``--folds 2 3``
in two processes); ``--score-only`` pools what ``--out`` already holds.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine_data import DATA  # noqa: E402  (this folder is on sys.path when run as a script)

from alignment_engine import api  # noqa: E402
from alignment_engine.evaluation import evaluate  # noqa: E402
from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl, write_alignment_tsv  # noqa: E402
from alignment_engine.types import Alignment, DocPair  # noqa: E402


def folds(pairs: list[DocPair], seed: int, k: int = 4) -> list[set[str]]:
    ids = sorted(p.pair_id for p in pairs)
    random.Random(seed).shuffle(ids)
    return [set(ids[i::k]) for i in range(k)]


def line(name: str, gold: list[Alignment], pred: list[Alignment], pairs: list[DocPair]) -> str:
    r = evaluate(gold, pred, pairs)
    t, shapes = r["task1"], r["groups"]["gold"]
    by_shape = " ".join(f"{s} {v['recall']:.3f}" for s, v in shapes.items())
    return f"{name}: P {t['precision']:.4f} R {t['recall']:.4f} F1 {t['f1']:.4f} (gold {t['n_gold']}) recall {by_shape}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--folds", type=int, nargs="+", default=[0, 1, 2, 3])
    ap.add_argument("--seed", type=int, default=7, help="the shuffle of the train pair ids into folds")
    ap.add_argument("--score-only", action="store_true")
    args = ap.parse_args()
    tp, tg = read_pairs_jsonl(DATA / "train_pairs.jsonl"), read_alignment_tsv(DATA / "train_gold.tsv")
    dp, dg = read_pairs_jsonl(DATA / "dev_pairs.jsonl"), read_alignment_tsv(DATA / "dev_gold.tsv")
    args.out.mkdir(parents=True, exist_ok=True)
    cut = folds(tp, args.seed)
    pooled: dict[str, tuple[list[Alignment], list[Alignment], list[DocPair]]] = {"A": ([], [], []), "B": ([], [], [])}
    for k in args.folds:
        held = [p for p in tp if p.pair_id in cut[k]]
        held_gold = [a for a in tg if a.pair_id in cut[k]]
        rest = [p for p in tp if p.pair_id not in cut[k]]
        rest_gold = [a for a in tg if a.pair_id not in cut[k]]
        for name, pairs, gold in (("A", rest, rest_gold), ("B", rest + dp, rest_gold + dg)):
            model, pred_file = args.out / f"m_{name}{k}", args.out / f"pred_{name}{k}.tsv"
            if not args.score_only:
                api.train(pairs, gold, out_dir=model, seed=0, device="cpu")
                rows = [a for doc in api.load_aligner("crf", model, device="cpu").align(held) for a in doc]
                write_alignment_tsv(pred_file, rows)
            pred = read_alignment_tsv(pred_file)
            print(line(f"{name}{k} ({len(pairs)} training documents, scored on {len(held)})", held_gold, pred, held),
                  flush=True)
            pooled_gold, pooled_pred, pooled_pairs = pooled[name]
            pooled_gold.extend(held_gold)
            pooled_pred.extend(pred)
            pooled_pairs.extend(held)
    for name, (gold, pred, pairs) in pooled.items():
        print(line(f"pooled {name} (folds {' '.join(map(str, args.folds))})", gold, pred, pairs))
    (args.out / "folds.json").write_text(json.dumps([sorted(f) for f in cut]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
