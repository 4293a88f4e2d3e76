"""Active-learning simulation on DEplain-web: does labeling by uncertainty need fewer labels than random?

The gold of DEplain-web train answers every label request. Candidate pairs are the product's
``topk`` candidates of train (top-3 complex sentences per simple sentence under Jaccard, TF-IDF
and C3G: ``alignment_engine.api.top_k_candidates``). For each seed:

- ``random``: nested uniform samples of 5 %, 10 %, 20 %, 40 % of the candidates;
- ``uncertainty``: the same random 5 % to start, then each step adds the candidates whose
  P(aligned) under the model trained on the labels so far is closest to 0.5
  (``alignment_engine.active``, strategy ``margin``), at most ``ceil(3 * batch / documents)``
  per document pair (diversity).

After each step a CRF is trained on the labels so far and scored on DEplain-web dev (Task 1 F1,
``alignment_engine.evaluation.evaluate``). Labels are partial: a simple sentence with a labelled
positive must take one of its labelled positives; otherwise it may take null or any unlabelled
candidate (never a labelled negative); cells outside the candidates count as not aligned (as
in the product, where people only label candidates). Training maximises the likelihood of the
label sequences consistent with the labels (the CRF's constrained forward algorithm,
``gold_target="any"``), so unlabelled candidates are marginalised out, not taken as negatives.

FAST CONFIGURATION, not the shipped default: lexical emission with context features, a single
CRF (simple -> complex only; no reverse CRF, no cross-fitted learned decoder), ``--epochs`` CRF
epochs (default 5), decoded as its Viterbi path; uncertainty from its exact marginals. The shipped default (learned decoder, 20 epochs,
4 cross-fitted CRFs) trained 24 times does not fit the shared 2-core machine.

    nice .venv/bin/python scripts/active_learning_simulation.py --out docs/active-learning
    # writes results.json and learning-curve.svg under --out
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from alignment_engine import active, api, crf_aligner  # noqa: E402
from alignment_engine.crf_config import CRFConfig  # noqa: E402
from alignment_engine.gold import gold_by_pair, gold_matrix  # noqa: E402
from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl  # noqa: E402
from alignment_engine.training import score_docs  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "deplain-web"
FRACTIONS = (0.05, 0.10, 0.20, 0.40)
DIRECTIONS = ("s2c",)  # a single CRF (simple -> complex): half the cost of both directions


def candidate_cells(pairs: list, k: int) -> list[active.Candidate]:
    out: list[active.Candidate] = []
    for d, pair in enumerate(pairs):
        s_index = {sid: i for i, sid in enumerate(pair.simple_ids())}
        c_index = {cid: j for j, cid in enumerate(pair.complex_ids())}
        for s_id, c_id in api.top_k_candidates(pair, k=k):
            out.append(active.Candidate((d, s_index[s_id], c_index[c_id]), d, s_index[s_id], c_index[c_id]))
    return out


def known_matrices(docs: list, candidates: list[active.Candidate], labelled: set, gold: list[np.ndarray]
                   ) -> dict[int, np.ndarray]:
    """Per document with labels: (m, n) int8, 1 labelled positive, 0 unknown (unlabelled candidate),
    -1 known negative (labelled negative, or not a candidate)."""
    out: dict[int, np.ndarray] = {}
    cand_by_doc: dict[int, list[active.Candidate]] = {}
    for c in candidates:
        cand_by_doc.setdefault(int(c.document), []).append(c)  # type: ignore[call-overload]
    for d in sorted({key[0] for key in labelled}):
        k = np.full(docs[d].shape, -1, dtype=np.int8)
        for c in cand_by_doc.get(d, []):
            if c.key in labelled:
                k[c.row, c.col] = 1 if gold[d][c.row, c.col] else -1
            else:
                k[c.row, c.col] = 0
        out[d] = k
    return out


def partial_sequences(docs: list, known: dict[int, np.ndarray], cfg: CRFConfig, mean: np.ndarray,
                      scale: np.ndarray) -> dict[str, list]:
    """Both directions' training sequences of the labelled documents with gold label *sets*."""
    ids = sorted(known)
    sub = [docs[d] for d in ids]
    pos = [(known[d] == 1).astype(np.int64) for d in ids]
    out: dict[str, list] = {}
    for direction in DIRECTIONS:
        seqs = crf_aligner.build_sequences(sub, direction, cfg, mean, scale, pos)
        for s in seqs:
            k = known[ids[s.doc]] if direction == "s2c" else known[ids[s.doc]].T
            ks = k[np.ix_(s.rows, s.cols)]
            has_pos = (ks == 1).any(axis=1)
            sets = np.zeros((len(s.rows), len(s.cols) + 1), dtype=bool)
            sets[:, 0] = ~has_pos
            sets[:, 1:] = np.where(has_pos[:, None], ks == 1, ks == 0) & s.allowed
            s.gold_sets = sets
        out[direction] = seqs
    return out


def train_and_score(train_docs: list, known: dict[int, np.ndarray], dev_docs: list, dev_pairs: list,
                    dev_gold: list, cfg: CRFConfig, mean: np.ndarray, scale: np.ndarray, seed: int
                    ) -> tuple[float, crf_aligner.BiCRF]:
    model = crf_aligner.BiCRF(len(crf_aligner.feature_names(cfg.emission, cfg.context_features)), cfg.hidden,
                              cfg.transition_hidden, cfg.transitions)
    crf_aligner.train_crf(model, partial_sequences(train_docs, known, cfg, mean, scale), cfg, seed)
    model.eval()
    decs = decode(model, dev_docs, cfg, mean, scale)
    th = {"combine": "forward", "marginal": 0.5, "partial": {"group": False, "min_len_ratio": 0.0}}
    pred = [crf_aligner.alignments_from(doc, dec, th) for doc, dec in zip(dev_docs, decs, strict=True)]
    return float(score_docs(dev_pairs, dev_gold, pred)["task1"]["f1"]), model


def decode(model: crf_aligner.BiCRF, docs: list, cfg: CRFConfig, mean: np.ndarray, scale: np.ndarray) -> list:
    seqs = {d: crf_aligner.build_sequences(docs, d, cfg, mean, scale) for d in DIRECTIONS}
    return crf_aligner.decode(model, seqs, docs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--out", default="docs/active-learning")
    ap.add_argument("--static", default="static/pipeline/active-learning-curve.svg",
                    help="copy of the plot for the models page ('' to skip)")
    ap.add_argument("--replot", default="", help="only redraw the plot (and summary) from this results.json")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--top-k", type=int, default=3)
    ap.add_argument("--strategy", default="margin", choices=[s for s in active.STRATEGIES if s != "versions"])
    ap.add_argument("--fractions", type=float, nargs="+", default=list(FRACTIONS))
    args = ap.parse_args()
    if args.replot:
        stored = json.loads(Path(args.replot).read_text(encoding="utf-8"))
        summarise(stored)
        write_outputs(stored, args)
        return
    torch.set_num_threads(1)
    data = Path(args.data)
    train_pairs = read_pairs_jsonl(data / "train_pairs.jsonl")
    dev_pairs = read_pairs_jsonl(data / "dev_pairs.jsonl")
    train_gold = read_alignment_tsv(data / "train_gold.tsv")
    dev_gold = read_alignment_tsv(data / "dev_gold.tsv")
    cfg = CRFConfig(emission="lexical", decoder="rule", crf_epochs=args.epochs, gold_target="any")
    t0 = time.perf_counter()
    train_docs = crf_aligner.prepare_docs(train_pairs, cfg, None)
    dev_docs = crf_aligner.prepare_docs(dev_pairs, cfg, None)
    norm = crf_aligner.fit_normalisation(train_docs, cfg.emission, cfg.context_features)
    mean, scale = np.asarray(norm["mean"], dtype=np.float32), np.asarray(norm["scale"], dtype=np.float32)
    pos, _ = gold_by_pair(train_gold)
    gold = [gold_matrix(p, pos.get(p.pair_id, set())) for p in train_pairs]
    cands = candidate_cells(train_pairs, args.top_k)
    n_gold = sum(int(g.sum()) for g in gold)
    covered = sum(int(gold[int(str(c.document))][c.row, c.col]) for c in cands)
    print(f"{len(train_pairs)} train pairs, {len(cands)} candidates, gold positives {n_gold} "
          f"({covered} inside the candidates); features {time.perf_counter() - t0:.1f}s", flush=True)
    results: dict = {"config": {"emission": cfg.emission, "context_features": cfg.context_features,
                                "crf_epochs": cfg.crf_epochs, "decode": "Viterbi path of the single simple->complex CRF",
                                "top_k": args.top_k, "strategy": args.strategy, "diversity": "ceil(3*batch/documents)"},
                     "candidates": len(cands), "gold_positives": n_gold, "gold_in_candidates": covered,
                     "fractions": args.fractions, "runs": [], "load": os.getloadavg()[0]}
    all_keys = {c.key for c in cands}
    full = known_matrices(train_docs, cands, all_keys, gold)
    f1_full, _ = train_and_score(train_docs, full, dev_docs, dev_pairs, dev_gold, cfg, mean, scale, 0)
    results["all_candidates_f1"] = f1_full
    print(f"all candidates labelled: dev Task 1 F1 {f1_full:.4f}", flush=True)
    first_model: crf_aligner.BiCRF | None = None
    for seed in args.seeds:
        order = active.random_select(cands, len(cands), seed)
        for strategy in ("random", "uncertainty"):
            labelled: set = set()
            model = None
            for frac in args.fractions:
                target = int(round(frac * len(cands)))
                t1 = time.perf_counter()
                if strategy == "uncertainty" and frac == args.fractions[0]:
                    # the same seed set as random: the same labels, model and score (not retrained)
                    first = next(r for r in results["runs"] if r["seed"] == seed and r["strategy"] == "random"
                                 and r["fraction"] == frac)
                    labelled = {c.key for c in order[:target]}
                    model = first_model
                    results["runs"].append({**first, "strategy": strategy})
                    print(json.dumps(results["runs"][-1]), flush=True)
                    continue
                if strategy == "random" or not labelled:
                    labelled = {c.key for c in order[:target]}
                else:
                    batch = target - len(labelled)
                    rest = [c for c in cands if c.key not in labelled]
                    assert model is not None
                    probs = {d: active.CellProbabilities(dec.score, dec.forward_marginals, dec.reverse_marginals)
                             for d, dec in enumerate(decode(model, train_docs, cfg, mean, scale))}
                    scored = active.score_candidates(args.strategy, rest, probs)
                    cap = active.default_cap(batch, len(train_pairs))
                    chosen = active.select(scored, batch, cap)
                    if len(chosen) < batch:  # the cap ran out: fill up without it
                        have = {s.key for s in chosen}
                        chosen += active.select([s for s in scored if s.key not in have], batch - len(chosen))
                    labelled |= {s.key for s in chosen}
                known = known_matrices(train_docs, cands, labelled, gold)
                f1, model = train_and_score(train_docs, known, dev_docs, dev_pairs, dev_gold, cfg, mean, scale, seed)
                pos_labelled = sum(int(gold[k[0]][k[1], k[2]]) for k in labelled)
                run = {"seed": seed, "strategy": strategy, "fraction": frac, "labels": len(labelled),
                       "positives_labelled": pos_labelled, "f1": f1, "seconds": round(time.perf_counter() - t1, 1)}
                results["runs"].append(run)
                if strategy == "random" and frac == args.fractions[0]:
                    first_model = model
                print(json.dumps(run), flush=True)
    summarise(results)
    write_outputs(results, args)
    print(json.dumps(results["summary"], indent=1))


def write_outputs(results: dict, args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    svg = learning_curve_svg(results)
    (out / "learning-curve.svg").write_text(svg, encoding="utf-8")
    if args.static:  # the copy the models page shows
        Path(args.static).parent.mkdir(parents=True, exist_ok=True)
        Path(args.static).write_text(svg, encoding="utf-8")


def summarise(results: dict) -> None:
    table: dict[str, dict[str, dict[str, float]]] = {}
    for strategy in ("random", "uncertainty"):
        table[strategy] = {}
        for frac in results["fractions"]:
            f1s = [r["f1"] for r in results["runs"] if r["strategy"] == strategy and r["fraction"] == frac]
            if f1s:
                table[strategy][str(frac)] = {"mean": round(float(np.mean(f1s)), 4),
                                              "sd": round(float(np.std(f1s)), 4), "n": len(f1s)}
    goal = table["random"].get(str(max(results["fractions"])), {}).get("mean")
    reached = [float(f) for f, v in table["uncertainty"].items() if goal is not None and v["mean"] >= goal]
    results["summary"] = {"table": table, "random_at_max": goal,
                          "uncertainty_first_fraction_reaching_it": min(reached) if reached else None}


def learning_curve_svg(results: dict) -> str:
    """Mean dev Task 1 F1 (with +-1 sd bars) against the share of candidates labelled, both strategies."""
    w, h, left, right, top, bottom = 560, 340, 60, 20, 30, 50
    table = results["summary"]["table"]
    fracs = results["fractions"]
    values = [v["mean"] + s * v["sd"] for t in table.values() for v in t.values() for s in (-1, 1)]
    values.append(results.get("all_candidates_f1", 0.0))
    lo = math.floor(min(values) * 20) / 20
    hi = math.ceil(max(values) * 20) / 20
    hi = hi if hi > lo else lo + 0.05
    fmax = max(fracs) * 1.05

    def x(f: float) -> float:
        return left + (w - left - right) * f / fmax

    def y(v: float) -> float:
        return top + (h - top - bottom) * (1 - (v - lo) / (hi - lo))

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
             'font-family="sans-serif" font-size="12" role="img" aria-label="active-learning learning curve">',
             f'<text x="{left}" y="18" font-size="13">DEplain-web dev Task 1 F1 by share of train candidates labelled</text>',
             f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="#333"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="#333"/>']
    steps = 5
    for k in range(steps + 1):
        v = lo + (hi - lo) * k / steps
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
        parts.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{w - right}" y2="{y(v):.1f}" stroke="#eee"/>')
    for f in fracs:
        parts.append(f'<text x="{x(f):.1f}" y="{h - bottom + 16}" text-anchor="middle">{round(f * 100)}%</text>')
    parts.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">candidate pairs labelled</text>')
    full = results.get("all_candidates_f1")
    if full is not None:
        parts.append(f'<line x1="{left}" y1="{y(full):.1f}" x2="{w - right}" y2="{y(full):.1f}" stroke="#888" '
                     f'stroke-dasharray="4 3"/><text x="{w - right}" y="{y(full) - 4:.1f}" text-anchor="end" '
                     f'fill="#555">all candidates {full:.3f}</text>')
    colours = {"random": "#1f77b4", "uncertainty": "#d62728"}
    for i, (strategy, rows) in enumerate(table.items()):
        pts = [(x(float(f)), y(v["mean"]), v) for f, v in rows.items()]
        c = colours[strategy]
        parts.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="'
                     + " ".join(f"{px:.1f},{py:.1f}" for px, py, _ in pts) + '"/>')
        for px, _py, v in pts:
            parts.append(f'<line x1="{px:.1f}" y1="{y(v["mean"] - v["sd"]):.1f}" x2="{px:.1f}" '
                         f'y2="{y(v["mean"] + v["sd"]):.1f}" stroke="{c}"/>')
            parts.append(f'<circle cx="{px:.1f}" cy="{y(v["mean"]):.1f}" r="3" fill="{c}"><title>{strategy}: '
                         f'{v["mean"]:.3f} +- {v["sd"]:.3f} ({v["n"]} seeds)</title></circle>')
        parts.append(f'<rect x="{left + 10}" y="{top + 8 + 16 * i}" width="12" height="3" fill="{c}"/>'
                     f'<text x="{left + 28}" y="{top + 13 + 16 * i}">{strategy}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    main()
