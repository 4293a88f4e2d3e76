#!/usr/bin/env python3
"""Speed benchmark of the trained neural CRF aligner on OneStopEnglish.

Aligns every adjacent-level document pair (advanced->intermediate, intermediate->elementary) of
``../shared/data/onestopenglish/texts`` (files read directly: utf-8-sig with cp1252 fallback, one
paragraph per non-blank line, the level heading dropped, intermediate from ``int-utf8``;
sentences split with ``alignment_engine.text.split_sentences``) and prints one JSON object:

- document pairs per second (end to end, features + encoder + CRF);
- sentence pairs scored by the cross-encoder per second (encoder time only, and end to end);
- the share of sentence pairs pruned by paragraph alignment;
- the share of wall time spent outside the encoder;
- peak memory (``resource.getrusage`` max RSS; ``torch.cuda.max_memory_allocated`` on CUDA).

    python scripts/bench_engine.py --model var/models/deplain-crf [--device cpu|cuda|auto]
        [--limit N] [--paragraphs model|none|predicted] [--batch-size 1024] [--quantize]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_TEXTS = ROOT.parent / "shared" / "data" / "onestopenglish" / "texts"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="trained CRF model directory")
    ap.add_argument("--texts", default=str(DEFAULT_TEXTS), help="OneStopEnglish texts/ folder")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--limit", type=int, default=None, help="only the first N articles (2 document pairs each)")
    ap.add_argument("--paragraphs", default="model", choices=["model", "none", "predicted"],
                    help="paragraph alignment before sentence alignment (default: as the model was trained)")
    ap.add_argument("--batch-size", type=int, default=None, help="encoder batch size (default 128 CPU / 1024 GPU)")
    ap.add_argument("--chunk", type=int, default=64, help="document pairs per encoder call")
    ap.add_argument("--quantize", action="store_true", help="int8 dynamic quantization of the encoder (CPU)")
    args = ap.parse_args(argv)

    import torch

    from alignment_engine.crf_aligner import CRFAligner, alignments_from
    from alignment_engine.io import onestop_pairs

    if not Path(args.texts).is_dir():
        print(f"no OneStopEnglish texts at {args.texts}", file=sys.stderr)
        return 2
    t_load = time.perf_counter()
    pairs = onestop_pairs(args.texts, limit=args.limit)
    load_s = time.perf_counter() - t_load
    aligner = CRFAligner.load(args.model, args.device, quantize=args.quantize)
    if args.paragraphs != "model":
        aligner.config = replace(aligner.config, paragraphs=args.paragraphs)
    if args.batch_size and aligner.encoder is not None:
        aligner.encoder.cpu_batch_size = aligner.encoder.gpu_batch_size = args.batch_size
    if aligner.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
        # warm-up (CUDA context, kernels) outside the timed region
        aligner.align(pairs[:2])
    aligner.timings.clear()
    aligner.counters.clear()
    t0 = time.perf_counter()
    n_rows = 0
    for k in range(0, len(pairs), args.chunk):
        part = pairs[k : k + args.chunk]
        docs = aligner.prepare(part)
        decs = aligner.predict_docs(docs)
        n_rows += sum(len(alignments_from(d, dec, aligner.thresholds, aligner.decoder))
                      for d, dec in zip(docs, decs, strict=True))
    if aligner.device.type == "cuda":
        torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    tm, ct = aligner.timings, aligner.counters
    enc_s = tm.get("encoder", 0.0)
    enc_pairs = ct.get("encoder_pairs", 0)
    cells = ct.get("cells", 0)
    in_par = ct.get("cells_in_paragraphs", cells)
    report = {
        "command": " ".join(["python", "scripts/bench_engine.py", *(argv if argv is not None else sys.argv[1:])]),
        "device": str(aligner.device),
        "torch_threads": torch.get_num_threads(),
        "document_pairs": len(pairs),
        "sentence_pairs_total": cells,
        "alignment_rows": n_rows,
        "wall_s": round(wall, 2),
        "read_and_split_s": round(load_s, 2),
        "document_pairs_per_s": round(len(pairs) / wall, 2) if wall else None,
        "encoder_pairs": enc_pairs,
        "encoder_pairs_per_s_encoder_time": round(enc_pairs / enc_s, 1) if enc_s else None,
        "encoder_pairs_per_s_end_to_end": round(enc_pairs / wall, 1) if wall else None,
        "paragraph_mode": aligner.config.paragraphs,
        "share_pruned_by_paragraph_alignment": round(1 - in_par / cells, 4) if cells else 0.0,
        "share_not_sent_to_encoder": round(1 - enc_pairs / cells, 4) if cells else 0.0,
        "share_time_outside_encoder": round(1 - enc_s / wall, 4) if wall else None,
        "time_breakdown_s": {k: round(v, 2) for k, v in tm.items()},
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    if aligner.device.type == "cuda":
        report["peak_cuda_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
