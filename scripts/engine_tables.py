#!/usr/bin/env python3
"""Reproduce the quality tables of docs/engine.md (training-free methods and baselines, paragraph tuner).

    .venv/bin/python scripts/engine_tables.py [--data ../shared/data] [--skip-minilm]

Prints Markdown. Nothing here looks at a dev gold except to score it, apart from the rows marked
"threshold tuned on dev" (the paper's protocol for similarity-only baselines).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from alignment_engine import paragraphs  # noqa: E402
from alignment_engine.api import load_aligner  # noqa: E402
from alignment_engine.baselines import make_baseline, tune_threshold  # noqa: E402
from alignment_engine.evaluation import evaluate, paragraph_prf  # noqa: E402
from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl  # noqa: E402
from alignment_engine.sequence import SequenceAligner, SequenceConfig  # noqa: E402

BASELINES = ["jaccard", "jaccard-best", "tfidf", "cats-closest", "cats-sequence", "massalign", "lr", "minilm"]


def fmt(block: dict) -> str:
    return f"{block['precision']:.3f} | {block['recall']:.3f} | {block['f1']:.3f}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--skip-minilm", action="store_true")
    args = ap.parse_args()
    data = Path(args.data)
    sets = {
        "OneStopEnglish dev": (data / "onestopenglish-gold-dev" / "dev_pairs.jsonl",
                               data / "onestopenglish-gold-dev" / "dev_gold.tsv"),
        "DEplain-web dev": (data / "deplain-web" / "dev_pairs.jsonl", data / "deplain-web" / "dev_gold.tsv"),
    }
    loaded = {k: (read_pairs_jsonl(p), read_alignment_tsv(g)) for k, (p, g) in sets.items()}
    train_pairs = read_pairs_jsonl(data / "deplain-web" / "train_pairs.jsonl")
    train_gold = read_alignment_tsv(data / "deplain-web" / "train_gold.tsv")

    print("## Sentence alignment, Task 1 and Task 2 (P | R | F1)\n")
    print("| method | setting | dev set | T1 P | T1 R | T1 F1 | T2 P | T2 R | T2 F1 | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    methods = [("sequence", None)] + [(m, None) for m in BASELINES if not (args.skip_minilm and m == "minilm")]
    for name, (pairs, gold) in loaded.items():
        for method, _ in methods:
            aligner = load_aligner(method, device="cpu")
            t0 = time.perf_counter()
            pred = [a for doc in aligner.align(pairs) for a in doc]
            dt = time.perf_counter() - t0
            res = evaluate(gold, pred, pairs)
            setting = "defaults (no dev labels)"
            if method == "minilm":
                setting = f"threshold {aligner.threshold:g} (hand-set default)"  # type: ignore[attr-defined]
            elif method != "sequence":
                setting = f"threshold {aligner.threshold:g} (tuned on DEplain train)"  # type: ignore[attr-defined]
            print(f"| {method} | {setting} | {name} | {fmt(res['task1'])} | {fmt(res['task2'])} | {dt:.2f} |")
            if method != "sequence":
                b = make_baseline(method, device="cpu")
                tuned = tune_threshold(b, pairs, gold, grid=np.round(np.arange(0.0, 1.0, 0.005), 3).tolist())
                print(f"| {method} | threshold {tuned.threshold:g} tuned on this dev set | {name} | "
                      f"{fmt(tuned.task1)} | {fmt(tuned.task2)} | |")
    print()
    print("## Ablation of the default method (`sequence`), Task 1 F1\n")
    variants = {
        "default": SequenceConfig(),
        "no Viterbi (best match on the same score, null threshold as threshold)": None,
        "combine = union (both directions)": replace(SequenceConfig(), combine="union"),
        "combine = union-adjacent": replace(SequenceConfig(), combine="union-adjacent"),
        "combine = intersection": replace(SequenceConfig(), combine="intersection"),
        "no extra pairs (extra_threshold 2, neighbour_containment 2)":
            replace(SequenceConfig(), extra_threshold=2.0, neighbour_containment=2.0),
        "fixed null threshold (null_relative 0)": replace(SequenceConfig(), null_relative=0.0),
        "C3G only emission": replace(SequenceConfig(), weights={"c3g": 1.0}),
    }
    print("| variant | " + " | ".join(f"{k} T1 F1" for k in loaded) + " | DEplain train T1 F1 |")
    print("|---|" + "---|" * (len(loaded) + 1))
    every = {**loaded, "train": (train_pairs, train_gold)}
    for label, cfg in variants.items():
        cells = []
        for _, (pairs, gold) in every.items():
            if cfg is None:
                from alignment_engine.sequence import emission_matrix

                pred = []
                base = SequenceConfig()
                for pair in pairs:
                    s = emission_matrix(pair.simple_sentences(), pair.complex_sentences(), base)
                    if s.size == 0:
                        continue
                    sids, cids = pair.simple_ids(), pair.complex_ids()
                    for i, j in enumerate(s.argmax(axis=1)):
                        if s[i, j] > base.null_threshold:
                            from alignment_engine.types import Alignment

                            pred.append(Alignment("aligned", sids[i], cids[j]))
            else:
                pred = [a for doc in SequenceAligner(cfg).align(pairs) for a in doc]
            cells.append(f"{evaluate(gold, pred, pairs)['task1']['f1']:.3f}")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print()
    print("## Paragraph alignment (paragraph-level P | R | F1; gold links from gold sentence pairs)\n")
    print("| algorithm | similarity | thresholds | DEplain train P | R | F1 | DEplain dev P | R | F1 "
          "| OneStopEnglish dev P | R | F1 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for algorithm in ("news", "wikipedia"):
        for sim in ("c3g", "tfidf"):
            ptuned = paragraphs.tune_thresholds(train_pairs, train_gold, sim, algorithm)
            for label, th in (("paper defaults", paragraphs.defaults(algorithm)),
                              ("tuned on DEplain train: " + ", ".join(f"{k}={v:g}" for k, v in
                                                                        ptuned.thresholds.items()), ptuned.thresholds)):
                cells = []
                for pairs, gold in (every["train"], loaded["DEplain-web dev"], loaded["OneStopEnglish dev"]):
                    pred_links = {(p.pair_id, c, s) for p in pairs for c, s, _ in
                                  paragraphs.align_paragraphs(p, sim, algorithm, th)}
                    r = paragraph_prf(pred_links, paragraphs.gold_paragraph_links(pairs, gold))
                    cells.append(fmt(r))
                print(f"| {algorithm} | {sim} | {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
