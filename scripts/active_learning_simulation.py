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
    # writes results.json and learning-curve.svg under --out (after every training: partial results)

``--strategy`` (margin, entropy, directions, expected_f1), ``--mix`` (share of each batch drawn at
random), ``--seed-fraction`` (the random seed set uncertainty starts from) and ``--reuse-random``
(the random curve of an earlier results.json, not retrained) vary the uncertainty curve.
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


def train_and_score(train_docs: list, known: dict[int, np.ndarray], dev_docs: list, dev_pairs: list,
                    dev_gold: list, cfg: CRFConfig, mean: np.ndarray, scale: np.ndarray, seed: int,
                    init: int | None = None) -> tuple[float, crf_aligner.BiCRF]:
    """Train on the labels of ``known`` and score dev. ``init``: seed of the model's initial weights
    (None: whatever state torch's global generator is in, i.e. it depends on the trainings before)."""
    if init is not None:
        torch.manual_seed(init)
    model = crf_aligner.BiCRF(len(crf_aligner.config_feature_names(cfg)), cfg.hidden,
                              cfg.transition_hidden, cfg.transitions)
    ids = sorted(known)  # documents without a label are left out of training
    seqs = {d: crf_aligner.build_sequences([train_docs[i] for i in ids], d, cfg, mean, scale,
                                           known=[known[i] for i in ids]) for d in DIRECTIONS}
    crf_aligner.train_crf(model, seqs, cfg, seed)
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
    ap.add_argument("--optimizer", default="lbfgs", choices=["lbfgs", "adam"],
                    help="CRF training: full-batch L-BFGS (default; converges, so the initial weights no longer "
                         "move a figure) or Adam minibatches (the first two rounds' configuration)")
    ap.add_argument("--epochs", type=int, default=None,
                    help="CRF epochs (Adam, default 5) or L-BFGS rounds of 10 iterations (default 3)")
    ap.add_argument("--top-k", type=int, default=3)
    ap.add_argument("--strategy", default="margin", choices=[s for s in active.STRATEGIES if s != "versions"])
    ap.add_argument("--fractions", type=float, nargs="+", default=list(FRACTIONS))
    ap.add_argument("--seed-fraction", type=float, default=None,
                    help="size of the random seed set uncertainty starts from (default: the first fraction); "
                         "fractions up to it are random for both curves")
    ap.add_argument("--mix", type=float, default=0.0,
                    help="share of every uncertainty batch drawn at random (0: all by uncertainty)")
    ap.add_argument("--reuse-random", default="",
                    help="take the random curve (and the all-candidates figure) from this results.json "
                         "instead of retraining it (the same seeds, fractions and configuration)")
    ap.add_argument("--random-at", type=float, nargs="+", default=None,
                    help="train the random curve only at these fractions (and the seed set); default: all")
    ap.add_argument("--skip-all-candidates", action="store_true",
                    help="do not train the all-candidates-labelled reference model")
    ap.add_argument("--stop-at", type=float, default=None,
                    help="last fraction of the uncertainty curve (default: the last of --fractions)")
    ap.add_argument("--seeded-init", action="store_true",
                    help="seed every model's initial weights with its run's seed (default, as the runs recorded "
                         "before this option: torch's global generator, so a run depends on the trainings before it)")
    ap.add_argument("--noise-fraction", type=float, default=None,
                    help="only measure the spread that the initial weights alone cause: the random labels of each "
                         "--seeds at this fraction, trained with --noise-inits different initial weights")
    ap.add_argument("--noise-inits", type=int, default=3)
    ap.add_argument("--overlay", nargs="*", default=[], metavar="LABEL=RESULTS",
                    help="with --replot: also draw the uncertainty curve of these results.json files")
    args = ap.parse_args()
    if args.replot:
        stored = json.loads(Path(args.replot).read_text(encoding="utf-8"))
        summarise(stored)
        for item in args.overlay:
            label, path = item.split("=", 1)
            other = json.loads(Path(path).read_text(encoding="utf-8"))
            summarise(other)
            stored.setdefault("variants", {})[label] = other["summary"]["table"]["uncertainty"]
        write_outputs(stored, args)
        return
    seed_fraction = args.seed_fraction if args.seed_fraction is not None else args.fractions[0]
    if seed_fraction not in args.fractions or not 0.0 <= args.mix <= 1.0:
        ap.error("--seed-fraction must be one of --fractions and --mix between 0 and 1")
    torch.set_num_threads(1)
    data = Path(args.data)
    train_pairs = read_pairs_jsonl(data / "train_pairs.jsonl")
    dev_pairs = read_pairs_jsonl(data / "dev_pairs.jsonl")
    train_gold = read_alignment_tsv(data / "train_gold.tsv")
    dev_gold = read_alignment_tsv(data / "dev_gold.tsv")
    epochs = args.epochs if args.epochs is not None else (3 if args.optimizer == "lbfgs" else 5)
    cfg = CRFConfig(emission="lexical", decoder="rule", crf_epochs=epochs, gold_target="any",
                    crf_optimizer=args.optimizer)
    t0 = time.perf_counter()
    train_docs = crf_aligner.prepare_docs(train_pairs, cfg, None)
    dev_docs = crf_aligner.prepare_docs(dev_pairs, cfg, None)
    norm = crf_aligner.fit_normalisation(train_docs, cfg)
    mean, scale = np.asarray(norm["mean"], dtype=np.float32), np.asarray(norm["scale"], dtype=np.float32)
    pos, _ = gold_by_pair(train_gold)
    gold = [gold_matrix(p, pos.get(p.pair_id, set())) for p in train_pairs]
    cands = candidate_cells(train_pairs, args.top_k)
    n_gold = sum(int(g.sum()) for g in gold)
    covered = sum(int(gold[int(str(c.document))][c.row, c.col]) for c in cands)
    print(f"{len(train_pairs)} train pairs, {len(cands)} candidates, gold positives {n_gold} "
          f"({covered} inside the candidates); features {time.perf_counter() - t0:.1f}s", flush=True)
    results: dict = {"config": {"emission": cfg.emission, "context_features": cfg.context_features,
                                "crf_epochs": cfg.crf_epochs, "crf_optimizer": cfg.crf_optimizer,
                                "seeded_init": args.seeded_init, "decode": "Viterbi path of the single simple->complex CRF",
                                "top_k": args.top_k, "strategy": args.strategy, "diversity": "ceil(3*batch/documents)",
                                "seed_fraction": seed_fraction, "mix_random": args.mix,
                                "command": " ".join(sys.argv)},
                     "candidates": len(cands), "gold_positives": n_gold, "gold_in_candidates": covered,
                     "fractions": args.fractions, "runs": [], "load": os.getloadavg()[0]}
    stored_random: dict[tuple[int, float], dict] = {}
    if args.reuse_random:
        stored = json.loads(Path(args.reuse_random).read_text(encoding="utf-8"))
        stored_random = {(r["seed"], r["fraction"]): r for r in stored["runs"] if r["strategy"] == "random"}
        results["all_candidates_f1"] = stored.get("all_candidates_f1")
        results["random_from"] = args.reuse_random
    elif not args.skip_all_candidates:
        full = known_matrices(train_docs, cands, {c.key for c in cands}, gold)
        results["all_candidates_f1"], _ = train_and_score(train_docs, full, dev_docs, dev_pairs, dev_gold, cfg,
                                                          mean, scale, 0)
        print(f"all candidates labelled: dev Task 1 F1 {results['all_candidates_f1']:.4f}", flush=True)

    def train(labelled: set, seed: int, init: int | None = None) -> tuple[float, crf_aligner.BiCRF]:
        known = known_matrices(train_docs, cands, labelled, gold)
        init = init if init is not None else (seed if args.seeded_init else None)
        return train_and_score(train_docs, known, dev_docs, dev_pairs, dev_gold, cfg, mean, scale, seed, init)

    if args.noise_fraction is not None:  # the same labels, different initial weights
        results["noise"] = []
        for seed in args.seeds:
            labelled = {c.key for c in active.random_select(cands, len(cands), seed)[
                :int(round(args.noise_fraction * len(cands)))]}
            for k in range(args.noise_inits):
                f1, _ = train(labelled, seed, init=1000 + k)
                results["noise"].append({"seed": seed, "fraction": args.noise_fraction, "init": 1000 + k, "f1": f1})
                print(json.dumps(results["noise"][-1]), flush=True)
                Path(args.out).mkdir(parents=True, exist_ok=True)
                (Path(args.out) / "noise.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        return

    def record(seed: int, strategy: str, frac: float, labelled: set, f1: float, t1: float) -> None:
        pos_labelled = sum(int(gold[k[0]][k[1], k[2]]) for k in labelled)
        results["runs"].append({"seed": seed, "strategy": strategy, "fraction": frac, "labels": len(labelled),
                                "positives_labelled": pos_labelled, "f1": f1,
                                "seconds": round(time.perf_counter() - t1, 1)})
        print(json.dumps(results["runs"][-1]), flush=True)
        summarise(results)
        write_outputs(results, args)  # partial results as it goes

    for seed in args.seeds:
        order = active.random_select(cands, len(cands), seed)
        seed_model: crf_aligner.BiCRF | None = None
        for frac in args.fractions:  # random: nested samples
            target = int(round(frac * len(cands)))
            labelled = {c.key for c in order[:target]}
            t1 = time.perf_counter()
            if (seed, frac) in stored_random:
                results["runs"].append(dict(stored_random[(seed, frac)]))
                if frac == seed_fraction:
                    f1, seed_model = train(labelled, seed)
                    print(f"seed {seed}: seed set {frac} retrained, F1 {f1:.6f} "
                          f"(stored {stored_random[(seed, frac)]['f1']:.6f})", flush=True)
                continue
            if args.random_at is not None and frac not in args.random_at and frac != seed_fraction:
                continue
            f1, random_model = train(labelled, seed)
            if frac == seed_fraction:
                seed_model = random_model
            record(seed, "random", frac, labelled, f1, t1)
        model = seed_model
        labelled = set()
        for frac in args.fractions:  # uncertainty, from the random seed set
            target = int(round(frac * len(cands)))
            t1 = time.perf_counter()
            if args.stop_at is not None and frac > args.stop_at:
                break
            if frac <= seed_fraction:  # the same labels as random: the same model and score
                same = next(r for r in results["runs"] if r["seed"] == seed and r["strategy"] == "random"
                            and r["fraction"] == frac)
                results["runs"].append({**same, "strategy": "uncertainty"})
                labelled = {c.key for c in order[:target]}
                continue
            batch = target - len(labelled)
            n_random = int(round(args.mix * batch))
            picked = [c.key for c in order if c.key not in labelled][:n_random]
            taken = labelled | set(picked)
            rest = [c for c in cands if c.key not in taken]
            assert model is not None
            probs = {d: active.CellProbabilities(dec.score, dec.forward_marginals, dec.reverse_marginals)
                     for d, dec in enumerate(decode(model, train_docs, cfg, mean, scale))}
            scored = active.score_candidates(args.strategy, rest, probs)
            want = batch - n_random
            chosen = active.select(scored, want, active.default_cap(want, len(train_pairs)))
            if len(chosen) < want:  # the cap ran out: fill up without it
                have = {s.key for s in chosen}
                chosen += active.select([s for s in scored if s.key not in have], want - len(chosen))
            labelled = taken | {s.key for s in chosen}
            f1, model = train(labelled, seed)
            record(seed, "uncertainty", frac, labelled, f1, t1)
    results["load_end"] = os.getloadavg()[0]
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
    table = {**table, **results.get("variants", {})}  # other uncertainty runs (--overlay)
    values = [v["mean"] + s * v["sd"] for t in table.values() for v in t.values() for s in (-1, 1)]
    if results.get("all_candidates_f1") is not None:
        values.append(results["all_candidates_f1"])
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
    def shown(name: str) -> str:
        return f"uncertainty ({results['config'].get('strategy', 'margin')})" if name == "uncertainty" else name

    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    colours = {name: palette[k % len(palette)] for k, name in enumerate(table)}
    for i, (strategy, rows) in enumerate(table.items()):
        pts = [(x(float(f)), y(v["mean"]), v) for f, v in rows.items()]
        c = colours[strategy]
        parts.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="'
                     + " ".join(f"{px:.1f},{py:.1f}" for px, py, _ in pts) + '"/>')
        for px, _py, v in pts:
            parts.append(f'<line x1="{px:.1f}" y1="{y(v["mean"] - v["sd"]):.1f}" x2="{px:.1f}" '
                         f'y2="{y(v["mean"] + v["sd"]):.1f}" stroke="{c}"/>')
            parts.append(f'<circle cx="{px:.1f}" cy="{y(v["mean"]):.1f}" r="3" fill="{c}"><title>{shown(strategy)}: '
                         f'{v["mean"]:.3f} +- {v["sd"]:.3f} ({v["n"]} seeds)</title></circle>')
        # the legend bottom right, where no curve goes (only the 5 % points are low, at the left)
        lx, ly = w - right - 230, h - bottom - 12 - 16 * (len(table) - 1 - i)
        parts.append(f'<rect x="{lx}" y="{ly - 5}" width="12" height="3" fill="{c}"/>'
                     f'<text x="{lx + 18}" y="{ly}">{shown(strategy)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    main()
