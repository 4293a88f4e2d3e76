"""Time the CRFs' training epochs on DEplain-web train (one torch thread unless ``--threads``): the
first-order CRF (``crf_aligner.train_crf``) and the semi-Markov CRF (``semicrf.train_semicrf``), both
directions.

    python scripts/bench_crf_training.py [--epochs 2] [--which crf,semicrf] [--threads 1] [--data ../shared/data/deplain-web]

Prints wall and CPU seconds and the losses per model (the same seed gives the same losses, so two
versions of the code can be compared run against run: docs/engine-results.md, Round 6).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "deplain-web"))
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--which", default="crf,semicrf")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before torch loads; training_threads keeps it

    import numpy as np
    import torch

    from alignment_engine import semicrf
    from alignment_engine.crf_aligner import BiCRF, build_sequences, prepare_docs, train_crf
    from alignment_engine.crf_config import CRFConfig
    from alignment_engine.gold import gold_by_pair, gold_matrix
    from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl
    from alignment_engine.training import fit_normalisation

    torch.set_num_threads(args.threads)
    data = Path(args.data)
    pairs, gold = read_pairs_jsonl(data / "train_pairs.jsonl"), read_alignment_tsv(data / "train_gold.tsv")
    cfg = CRFConfig().with_options(crf_epochs=args.epochs, semicrf_epochs=args.epochs)
    pos, _ = gold_by_pair(gold)
    docs = prepare_docs(pairs, cfg, None)
    norm = fit_normalisation(docs, cfg.emission, cfg.context_features, cfg.span_emission)
    mean, scale = np.asarray(norm["mean"], dtype=np.float32), np.asarray(norm["scale"], dtype=np.float32)
    gold_mats = [gold_matrix(d.pair, pos.get(d.pair.pair_id, set())).astype(np.int64) for d in docs]
    out: dict[str, object] = {"documents": len(docs), "epochs": args.epochs, "threads": torch.get_num_threads(), "load_before": os.getloadavg()}
    for which in args.which.split(","):
        torch.manual_seed(0)
        if which == "crf":
            seqs = {d: build_sequences(docs, d, cfg, mean, scale, gold_mats, None) for d in ("s2c", "c2s")}
            model = BiCRF.for_config(cfg)
            t0, c0 = time.perf_counter(), time.process_time()
            stats = train_crf(model, seqs, cfg, 0)
        elif which == "semicrf":
            span_seqs = {d: semicrf.build_span_sequences(docs, d, cfg, mean, scale, gold_mats, {}) for d in ("s2c", "c2s")}
            semi = semicrf.BiSemiCRF(len(mean), cfg)
            t0, c0 = time.perf_counter(), time.process_time()
            stats = semicrf.train_semicrf(semi, span_seqs, cfg, 0)
        else:
            raise SystemExit(f"--which: unknown model {which!r} (crf or semicrf)")
        out[which] = {"wall_s": round(time.perf_counter() - t0, 2), "cpu_s": round(time.process_time() - c0, 2),
                      "loss": stats.get("loss")}
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
