"""Time the CRFs' training epochs on DEplain-web train (one torch thread unless ``--threads``): the
first-order CRF (``crf_aligner.train_crf``) and the semi-Markov CRF (``semicrf.train_semicrf``), both
directions.

    python scripts/bench_crf_training.py [--epochs 2] [--which crf,semicrf] [--threads 1] [--data ../shared/data/deplain-web]
        [--save weights.pt | --compare weights.pt]

Prints wall and CPU seconds and the losses per model (the same seed gives the same losses, so two
versions of the code can be compared run against run: docs/engine-results.md, Round 6). ``--save`` writes
the trained weights; ``--compare`` prints how far this run's weights are from a saved run's (the largest
absolute difference per model): the check that another thread count or CPU kernel trains the same CRFs
(Round 10: ``--epochs 20 --which crf`` with ``--threads 1`` against ``--threads 2``, or under
``MKL_CBWR=COMPATIBLE`` or ``ATEN_CPU_CAPABILITY=default``).
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
    ap.add_argument("--save", help="write the trained weights here (torch.save)")
    ap.add_argument("--compare", help="print the largest weight difference from a --save file")
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before torch loads; training_threads keeps it

    import torch
    from engine_data import deplain_web

    from alignment_engine import semicrf
    from alignment_engine.crf_aligner import BiCRF, build_sequences, train_crf
    from alignment_engine.crf_config import CRFConfig

    torch.set_num_threads(args.threads)
    cfg = CRFConfig().with_options(crf_epochs=args.epochs, semicrf_epochs=args.epochs)
    prep = deplain_web(cfg, Path(args.data))
    docs, mean, scale, gold_mats = prep.docs, prep.mean, prep.scale, prep.gold_mats
    out: dict[str, object] = {"documents": len(docs), "epochs": args.epochs, "threads": torch.get_num_threads(), "load_before": os.getloadavg()}
    weights: dict[str, dict[str, torch.Tensor]] = {}
    saved = torch.load(args.compare, weights_only=True) if args.compare else {}
    for which in args.which.split(","):
        torch.manual_seed(0)
        model: torch.nn.Module
        if which == "crf":
            seqs = {d: build_sequences(docs, d, cfg, mean, scale, gold_mats, None) for d in ("s2c", "c2s")}
            model = BiCRF.for_config(cfg)
            t0, c0 = time.perf_counter(), time.process_time()
            stats = train_crf(model, seqs, cfg, 0)
        elif which == "semicrf":
            span_seqs = {d: semicrf.build_span_sequences(docs, d, cfg, mean, scale, gold_mats, {}) for d in ("s2c", "c2s")}
            model = semicrf.BiSemiCRF(len(mean), cfg)
            t0, c0 = time.perf_counter(), time.process_time()
            stats = semicrf.train_semicrf(model, span_seqs, cfg, 0)
        else:
            raise SystemExit(f"--which: unknown model {which!r} (crf or semicrf)")
        row: dict[str, object] = {"wall_s": round(time.perf_counter() - t0, 2), "cpu_s": round(time.process_time() - c0, 2),
                                  "loss": stats.get("loss"), "dtype": str(next(model.parameters()).dtype)}
        weights[which] = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if which in saved:
            row["max_weight_difference"] = max(
                (weights[which][k].double() - saved[which][k].double()).abs().max().item() for k in weights[which])
        out[which] = row
    if args.save:
        torch.save(weights, args.save)
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
