#!/usr/bin/env python3
"""Variants of the learned paragraph step on DEplain-web (docs/engine-results.md, "Paragraph step variants").

Reads the cross-fitted train decodings and the final CRF cached by ``scripts/engine_decoders.py --cache
var/oof.pkl``; every variant chooses its link threshold by cross-validation on train (the same folds) and
is scored once on dev:

- ``base``: the default paragraph step (grid .2-.7), and the same with a finer grid (.1-.7, step .05);
- ``round 2``: a second classifier that also sees the first round's out-of-fold probabilities of the
  paragraph pair and its six neighbours, the row / column maxima, second maxima, gaps and link counts;
- ``cell-prob aggregates``: the paragraph step also sees, per paragraph pair, the maximum, the sums per
  paragraph size and the count >= .5 of a cell classifier fitted without the paragraph step (out of fold);
- both together.

    python scripts/engine_paragraph_variants.py
"""

import pickle
import sys
import time

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
from pathlib import Path

import numpy as np

from alignment_engine.crf_aligner import (
    BiCRF,
    build_sequences,
    config_feature_names,
    decode,
    doc_cell_features,
    doc_paragraph_features,
    fit_normalisation,
    prepare_docs,
)
from alignment_engine.crf_config import CRFConfig
from alignment_engine.evaluation import paragraph_prf
from alignment_engine.gold import gold_by_pair, gold_matrix, gold_paragraph_links
from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl
from alignment_engine.paragraph_model import _block_sum
from alignment_engine.stacking import fit_classifier, predict_proba
from alignment_engine.training import _paragraph_gold, set_seed

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "deplain-web"
tp, tg = read_pairs_jsonl(DATA / "train_pairs.jsonl"), read_alignment_tsv(DATA / "train_gold.tsv")
dp, dg = read_pairs_jsonl(DATA / "dev_pairs.jsonl"), read_alignment_tsv(DATA / "dev_gold.tsv")
cfg = CRFConfig()
set_seed(0)
pos, _ = gold_by_pair(tg)
dpos, _ = gold_by_pair(dg)
docs = prepare_docs(tp, cfg, None)
dev_docs = prepare_docs(dp, cfg, None)
norm = fit_normalisation(docs, cfg)
mean, scale = np.asarray(norm["mean"], dtype=np.float32), np.asarray(norm["scale"], dtype=np.float32)
oof, fold, state = pickle.loads((ROOT / "var" / "oof.pkl").read_bytes())
model = BiCRF(len(config_feature_names(cfg)), cfg.hidden, cfg.transition_hidden)
model.load_state_dict(state)
model.eval()
dev_decs = decode(model, {d: build_sequences(dev_docs, d, cfg, mean, scale) for d in ("s2c", "c2s")}, dev_docs)
k = max(fold) + 1
X = [doc_paragraph_features(d, dec) for d, dec in zip(docs, oof, strict=False)]
Y = [_paragraph_gold(d, pos.get(d.pair.pair_id, set())) for d in docs]
DX = [doc_paragraph_features(d, dec) for d, dec in zip(dev_docs, dev_decs, strict=False)]
DY = [_paragraph_gold(d, dpos.get(d.pair.pair_id, set())) for d in dev_docs]
gl_dev = gold_paragraph_links(dp, dg)
print("dev gold links", len(gl_dev), "from matrices", sum(int(y.sum()) for y in DY), flush=True)


def flat(x):
    return x.reshape(-1, x.shape[-1])


def cv_probs(XS, YS, seed=0):
    out: list[np.ndarray] = [np.zeros(0)] * len(XS)
    for f in range(k):
        m = fit_classifier(
            [flat(XS[i]) for i in range(len(XS)) if fold[i] != f],
            [YS[i].reshape(-1) for i in range(len(XS)) if fold[i] != f],
            seed,
        )
        for i in range(len(XS)):
            if fold[i] == f:
                out[i] = predict_proba(m, flat(XS[i])).reshape(YS[i].shape)
    return out


def links(docs_, probs, t):
    return {(d.pair.pair_id, int(c), int(s)) for d, p in zip(docs_, probs, strict=False) for s, c in zip(*np.nonzero(p >= t), strict=False)}


def gold_set(docs_, YS):
    return {(d.pair.pair_id, int(c), int(s)) for d, y in zip(docs_, YS, strict=False) for s, c in zip(*np.nonzero(y), strict=False)}


GT, GD = gold_set(docs, Y), gold_set(dev_docs, DY)


def choose(probs, grid):
    best = (-1, None)
    for t in grid:
        f = paragraph_prf(links(docs, probs, t), GT)["f1"]
        if f > best[0] + 1e-9:
            best = (f, t)
    return best


GRID = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
GRID2 = tuple(np.round(np.arange(0.1, 0.75, 0.05), 2))


def report(name, oofp, devp, grid):
    f, t = choose(oofp, grid)
    r = paragraph_prf(links(dev_docs, devp, t), GD)
    print(
        f"{name:40s} trainCV F1 {f:.3f} thr {t} | dev P {r['precision']:.3f} R {r['recall']:.3f} F1 {r['f1']:.3f}",
        flush=True,
    )
    return t


def neighbour_feats(P):
    pad = np.pad(P, 1)
    rowmax = P.max(axis=1, keepdims=True)
    colmax = P.max(axis=0, keepdims=True)

    # second best in row / col
    def second(a, axis):
        s = np.sort(a, axis=axis)
        return np.take(s, -2, axis=axis) if a.shape[axis] > 1 else np.zeros(np.delete(a.shape, axis))

    r2 = second(P, 1)[:, None] if P.shape[1] > 1 else np.zeros((P.shape[0], 1))
    c2 = second(P, 0)[None, :] if P.shape[0] > 1 else np.zeros((1, P.shape[1]))
    cols = [
        P,
        pad[:-2, :-2],
        pad[2:, 2:],
        pad[:-2, 1:-1],
        pad[2:, 1:-1],
        pad[1:-1, :-2],
        pad[1:-1, 2:],
        np.broadcast_to(rowmax, P.shape),
        np.broadcast_to(colmax, P.shape),
        P - rowmax,
        P - colmax,
        np.broadcast_to(r2, P.shape),
        np.broadcast_to(c2, P.shape),
        np.broadcast_to((P >= 0.5).sum(axis=1, keepdims=True), P.shape),
        np.broadcast_to((P >= 0.5).sum(axis=0, keepdims=True), P.shape),
    ]
    return np.stack([np.asarray(c, dtype=np.float32) for c in cols], axis=-1)


t0 = time.time()
P1 = cv_probs(X, Y)
full = fit_classifier([flat(x) for x in X], [y.reshape(-1) for y in Y], 0)
D1 = [predict_proba(full, flat(x)).reshape(y.shape) for x, y in zip(DX, DY, strict=False)]
report("base (grid .2-.7)", P1, D1, GRID)
report("base (grid .1-.7 step .05)", P1, D1, GRID2)
# round 2: stacked neighbour probabilities
X2 = [np.concatenate([x, neighbour_feats(p)], axis=-1) for x, p in zip(X, P1, strict=False)]
DX2 = [np.concatenate([x, neighbour_feats(p)], axis=-1) for x, p in zip(DX, D1, strict=False)]
P2 = cv_probs(X2, Y)
full2 = fit_classifier([flat(x) for x in X2], [y.reshape(-1) for y in Y], 0)
D2 = [predict_proba(full2, flat(x)).reshape(y.shape) for x, y in zip(DX2, DY, strict=False)]
report("round 2 (neighbour probs)", P2, D2, GRID)
report("round 2 (grid .1-.7)", P2, D2, GRID2)
print("time", round(time.time() - t0, 1))

# stage 0: cell classifier without the paragraph step; its probabilities aggregated per paragraph pair
t0 = time.time()
gm = [gold_matrix(d.pair, pos.get(d.pair.pair_id, set())).astype(np.int64) for d in docs]
cx, cy, cm = [], [], []
for d, dec, g in zip(docs, oof, gm, strict=False):
    x, mask = doc_cell_features(d, dec, None)
    cx.append(x)
    cy.append(g[mask])
    cm.append(mask)
C0 = [np.zeros(d.shape) for d in docs]
for f in range(k):
    m = fit_classifier(
        [cx[i] for i in range(len(docs)) if fold[i] != f], [cy[i] for i in range(len(docs)) if fold[i] != f], 0
    )
    for i in range(len(docs)):
        if fold[i] == f:
            C0[i][cm[i]] = predict_proba(m, cx[i])
cfull = fit_classifier(cx, cy, 0)
DC0 = []
for d, dec in zip(dev_docs, dev_decs, strict=False):
    x, mask = doc_cell_features(d, dec, None)
    o = np.zeros(d.shape)
    o[mask] = predict_proba(cfull, x)
    DC0.append(o)


def agg(d, c):
    kk, ll = len(d.pair.simple), len(d.pair.complex)
    ss = np.array([len(p) for p in d.pair.simple], float)
    cs = np.array([len(p) for p in d.pair.complex], float)
    sp = np.repeat(np.arange(kk), ss.astype(int))
    cp = np.repeat(np.arange(ll), cs.astype(int))
    mx = _block_sum(c, sp, cp, kk, ll, "max")
    sm = _block_sum(c, sp, cp, kk, ll)
    n5 = _block_sum((c >= 0.5).astype(float), sp, cp, kk, ll)
    return np.stack([mx, sm / np.maximum(ss[:, None], 1), sm / np.maximum(cs[None, :], 1), n5], axis=-1).astype(
        np.float32
    )


print("stage0 time", round(time.time() - t0, 1), flush=True)
X3 = [np.concatenate([x, agg(d, c)], axis=-1) for x, d, c in zip(X, docs, C0, strict=False)]
DX3 = [np.concatenate([x, agg(d, c)], axis=-1) for x, d, c in zip(DX, dev_docs, DC0, strict=False)]
P3 = cv_probs(X3, Y)
full3 = fit_classifier([flat(x) for x in X3], [y.reshape(-1) for y in Y], 0)
D3 = [predict_proba(full3, flat(x)).reshape(y.shape) for x, y in zip(DX3, DY, strict=False)]
report("with cell-prob aggregates", P3, D3, GRID)
report("with cell-prob aggregates (grid .1-.7)", P3, D3, GRID2)
X4 = [np.concatenate([x, neighbour_feats(p)], axis=-1) for x, p in zip(X3, P3, strict=False)]
DX4 = [np.concatenate([x, neighbour_feats(p)], axis=-1) for x, p in zip(DX3, D3, strict=False)]
P4 = cv_probs(X4, Y)
full4 = fit_classifier([flat(x) for x in X4], [y.reshape(-1) for y in Y], 0)
D4 = [predict_proba(full4, flat(x)).reshape(y.shape) for x, y in zip(DX4, DY, strict=False)]
report("aggregates + round 2", P4, D4, GRID)
report("aggregates + round 2 (grid .1-.7)", P4, D4, GRID2)
