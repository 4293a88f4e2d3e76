"""Train a single held-out model (no refit) whose semantic channels read given embeddings. (Round 20.)

    python scripts/engine_e5_train_with.py --embeddings var/ft.npz --out var/models/ft [--seed 0]
    python scripts/engine_e5_train_with.py --embeddings base --out var/models/base

``--embeddings`` is a ``.npz`` of ``scripts/engine_e5_finetune.py --dump`` (texts -> vectors; every train and dev
sentence of DEplain-web), or ``base``: the packaged encoder's float32 embeddings, so that both runs are scored the same
way. Trains ``train_model(..., members=1, refit_with_dev=False, workers=1)`` on DEplain-web train, scores dev (held
out) and prints its Task 1 and recall by group shape.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data" / "deplain-web"


class TableEncoder:
    """The part of ``semantic.SentenceEncoder`` that feature code calls: ``embed(texts)`` from a table."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table
        self.encoded = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts]) if texts else np.zeros((0, 384), dtype=np.float32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embeddings", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    import torch

    from alignment_engine import semantic
    from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl
    from alignment_engine.training import train_model
    from alignment_engine.types import distinct_sentences

    torch.set_num_threads(1)
    tp, tg = read_pairs_jsonl(DATA / "train_pairs.jsonl"), read_alignment_tsv(DATA / "train_gold.tsv")
    dp, dg = read_pairs_jsonl(DATA / "dev_pairs.jsonl"), read_alignment_tsv(DATA / "dev_gold.tsv")
    if args.embeddings == "base":
        texts = sorted(distinct_sentences([*tp, *dp]))
        table = dict(zip(texts, semantic.network().embed(texts), strict=True))
    else:
        data = np.load(args.embeddings, allow_pickle=True)
        table = dict(zip(data["texts"].tolist(), data["emb"], strict=True))
    enc = TableEncoder(table)
    semantic.shared_encoder = lambda precision="float32", device="cpu": enc  # type: ignore[assignment,return-value]
    out = train_model(tp, tg, dp, dg, args.out, seed=args.seed, members=1, refit_with_dev=False, workers=1,
                      progress=lambda msg: print(msg, flush=True))
    meta = json.loads((Path(out) / "model.json").read_text())
    dm = meta["dev_metrics"]
    print(json.dumps({k: v for k, v in dm.items() if k != "rows"}, indent=1)[:3000])


if __name__ == "__main__":
    main()
