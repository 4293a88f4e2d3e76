#!/usr/bin/env python3
"""Do block-level (span) lexical scores separate split / m:n gold members from the cells around them?

For every DEplain-web train document: the per-cell lexical features of the CRF emission
(``features.lexical_features`` with context channels, 18 channels) and the block-level channels of
``span_emission.span_emission_features`` (a sentence against the concatenation of a run of up to 6 simple
/ 3 complex sentences, and run against run). Populations, per gold group shape (1:1, 1:n, n:1,
m:n): the gold cells of that shape (positives) against the non-gold cells "around them" (negatives:
cells in a row or column of a member, at most 3 sentences away from a member on the other axis).

Printed: (1) the AUC of every single channel per population; (2) the AUC of a gradient-boosted cell
classifier over the per-cell features alone and over per-cell + block features, cross-validated over 4
folds by document (``training.folds_by_document``, the folds of ``train``), trained on all cells.

    python scripts/engine_span_emission_analysis.py [--widths 6,3] [--out var/span_emission_analysis.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data" / "deplain-web"
SHAPE_CODE = {"1:1": 1, "1:n": 2, "n:1": 3, "m:n": 4}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--widths", default="6,3", help="longest runs of simple, complex sentences")
    ap.add_argument("--out", default="var/span_emission_analysis.json")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--oof", nargs="*", default=[],
                    help="caches of engine_decoders.py (var/oof.pkl, ...): the same AUCs for their out-of-fold "
                         "CRF marginals (max of both directions)")
    args = ap.parse_args()

    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score

    from alignment_engine.evaluation import group_shapes
    from alignment_engine.features import lexical_feature_names, lexical_features
    from alignment_engine.gold import gold_by_pair
    from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl
    from alignment_engine.span_emission import SPAN_EMISSION_FEATURES, span_emission_features
    from alignment_engine.training import folds_by_document

    simple_w, complex_w = (int(w) for w in args.widths.split(","))
    widths = (simple_w, complex_w)
    pairs = read_pairs_jsonl(DATA / "train_pairs.jsonl")
    gold = read_alignment_tsv(DATA / "train_gold.tsv")
    pos, _ = gold_by_pair(gold)
    fold = folds_by_document(pairs, 4, args.seed)
    lex_names = lexical_feature_names(True)
    names = lex_names + list(SPAN_EMISSION_FEATURES)
    import pickle

    oofs = [pickle.loads(Path(p).read_bytes())[0] for p in args.oof]
    xs, ys, shapes, around, folds = [], [], [], [], []
    marg: list[list[np.ndarray]] = [[] for _ in oofs]
    for d, pair in enumerate(pairs):
        simple, complex_ = pair.simple_sentences(), pair.complex_sentences()
        m, n = len(simple), len(complex_)
        if m == 0 or n == 0:
            continue
        s_idx = {sid: i for i, sid in enumerate(pair.simple_ids())}
        c_idx = {cid: j for j, cid in enumerate(pair.complex_ids())}
        shape_of = group_shapes(pos.get(pair.pair_id, set()))
        y = np.zeros((m, n), dtype=np.int8)
        shp = np.zeros((m, n), dtype=np.int8)
        for (s, c), sh in shape_of.items():
            if s in s_idx and c in c_idx:
                y[s_idx[s], c_idx[c]] = 1
                shp[s_idx[s], c_idx[c]] = SHAPE_CODE[sh]
        # negatives around the members of each shape: same row within 3 columns, same column within 3 rows
        near = np.zeros((5, m, n), dtype=bool)
        for i, j in zip(*np.nonzero(y), strict=True):
            code = shp[i, j]
            near[code, i, max(j - 3, 0): j + 4] = True
            near[code, max(i - 3, 0): i + 4, j] = True
        lex = lexical_features(simple, complex_, True)
        blk = span_emission_features(simple, complex_, widths)
        xs.append(np.concatenate([lex, blk], axis=-1).reshape(m * n, -1))
        ys.append(y.ravel())
        shapes.append(shp.ravel())
        around.append(near.reshape(5, m * n))
        folds.append(np.full(m * n, fold[d]))
        for k, oof in enumerate(oofs):
            marg[k].append(np.maximum(oof[d].forward_marginals, oof[d].reverse_marginals).ravel())
    x = np.concatenate(xs)
    y = np.concatenate(ys)
    shp = np.concatenate(shapes)
    near = np.concatenate(around, axis=1)
    fo = np.concatenate(folds)
    print(f"{len(pairs)} train documents, {len(y)} cells, {int(y.sum())} gold cells", flush=True)
    pops = {}
    for sh, code in SHAPE_CODE.items():
        keep = (shp == code) | ((y == 0) & near[code])
        pops[sh] = keep
        print(f"  {sh}: {int((shp == code).sum())} gold cells vs {int(((y == 0) & near[code]).sum())} around them")
    pops["all"] = np.ones(len(y), dtype=bool)
    out: dict = {"channels": {}, "classifier": {}}
    print("\nsingle-channel AUC (gold members of the shape vs the non-gold cells around them)")
    print(f"{'channel':22s} " + " ".join(f"{p:>6s}" for p in pops))
    for k, name in enumerate(names):
        aucs = {p: float(roc_auc_score(y[keep], x[keep, k])) for p, keep in pops.items()}
        out["channels"][name] = aucs
        if name in SPAN_EMISSION_FEATURES or name in ("c3g", "jaccard", "tfidf", "contain_simple", "contain_complex",
                                                      "c3g_prev_simple", "c3g_next_simple", "c3g_prev_complex",
                                                      "c3g_next_complex"):
            print(f"{name:22s} " + " ".join(f"{aucs[p]:6.3f}" for p in pops), flush=True)
    print("\ncell classifier (gradient boosting, 4 folds by document), AUC / average precision per population")
    from sklearn.metrics import average_precision_score
    for label, cols in ((f"per-cell lexical ({len(lex_names)})", list(range(len(lex_names)))),
                        (f"per-cell + block ({len(names)})", list(range(len(names))))):
        score = np.zeros(len(y))
        for f in range(4):
            tr, te = fo != f, fo == f
            clf = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.1, random_state=args.seed)
            clf.fit(x[tr][:, cols], y[tr])
            score[te] = clf.predict_proba(x[te][:, cols])[:, 1]
        res = {p: {"auc": float(roc_auc_score(y[keep], score[keep])),
                   "ap": float(average_precision_score(y[keep], score[keep]))} for p, keep in pops.items()}
        out["classifier"][label] = res
        print(f"{label:22s} " + " ".join(f"{p} {r['auc']:.3f}/{r['ap']:.3f}" for p, r in res.items()), flush=True)
    out["oof"] = {}
    for path, ms in zip(args.oof, marg, strict=True):
        score = np.concatenate(ms)
        res = {p: {"auc": float(roc_auc_score(y[keep], score[keep])),
                   "ap": float(average_precision_score(y[keep], score[keep]))} for p, keep in pops.items()}
        res["median_gold"] = {sh: float(np.median(score[shp == code])) for sh, code in SHAPE_CODE.items()}
        out["oof"][path] = res
        print(f"{path:22s} " + " ".join(f"{p} {res[p]['auc']:.3f}/{res[p]['ap']:.3f}" for p in pops)
              + " | median marginal of gold " + " ".join(f"{sh} {v:.3f}" for sh, v in res["median_gold"].items()))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
