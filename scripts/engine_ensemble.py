#!/usr/bin/env python3
"""Seed ensembles of the CRFs (docs/engine-results.md, Round 9), chosen on train, dev held out.

The default's CRFs (first-order and semi-Markov, both directions) are cross-fitted over the default's
folds and trained on all of train once per ensemble member (``training.member_init``: member 0 is the
default's own seeds); every member's out-of-fold train decodings and dev decodings are cached in
``--cache-dir``. Then, for every ensemble size K and for each kind of ensemble (first-order CRF only, or
both CRFs), the members' decodings are averaged (``stacking.average_decodings``) and the default learned
decoder (two rounds, paragraph step) is fitted and chosen on train by cross-validation and scored on dev.

    python scripts/engine_ensemble.py --fit 1 [--fit 2 ...]      # one process per member (parallel-safe)
    python scripts/engine_ensemble.py --members 3 [--out var/ensemble.json]
    python scripts/engine_ensemble.py --members 1 --classifiers '[{}, {"max_iter": 400}]'  # decoder settings

``--models DIR,DIR,...`` (Round 16) ensembles whole written models instead: each aligns ``--pairs`` (the
sentence encoder in ``--precision``, default as ``align``), their learned decoders' cell probabilities are
averaged, and the average is decided with each member's thresholds in turn and scored against ``--gold``:

    python scripts/engine_ensemble.py --models var/models/held0,var/models/held1 \
        --pairs $D/dev_pairs.jsonl --gold $D/dev_gold.tsv [--precision float32] [--write-pred dev.tsv]
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class Member(NamedTuple):
    """One member's cache (``member{M}.pkl``): its folds, out-of-fold train and dev decodings of both CRFs."""

    fold: list[int]
    oof: list[Any]
    semi_oof: list[Any]
    dev: list[Any]
    semi_dev: list[Any]


def score_models(model_dirs: list[str], pairs_file: str, gold_file: str, precision: str | None,
                 write_pred: str | None = None) -> dict:
    """Task 1 of each written model alone and of the average of the first k models' cell probabilities
    (k = 2 .. all), decided with each member's thresholds (``crf_aligner.alignments_from``, as ``align`` decides).
    ``write_pred``: the rows of all the models' average decided with the first's thresholds (what ``align`` writes for
    such an ensemble) go to this TSV."""
    import numpy as np

    from alignment_engine.crf_aligner import CRFAligner, alignments_from, learned_scores_many
    from alignment_engine.errors import ModelError
    from alignment_engine.evaluation import evaluate
    from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl, write_alignment_tsv

    pairs, gold = read_pairs_jsonl(pairs_file), read_alignment_tsv(gold_file)
    # each alone, with its own thresholds (a seed ensemble's directory is its member 0 here)
    members = [CRFAligner.load(model_dir, "cpu", precision=precision, members=1) for model_dir in model_dirs]
    ensemble = members[0]
    try:
        ensemble.add_members(members[1:])  # checks that they share member 0's configuration (and so its features)
    except ModelError as e:
        raise SystemExit(f"{','.join(model_dirs)}: {e}") from None
    docs = ensemble.prepare(pairs)
    decoded = ensemble.member_decodings(docs)
    probs = [learned_scores_many(docs, d, m.decoder) for d, m in zip(decoded, members, strict=True)]  # type: ignore[arg-type]
    decs = decoded[0]  # with probabilities given, the decision reads only them and the features

    def rows_of(prob: list[np.ndarray] | list[np.ndarray | None], member: CRFAligner) -> list:
        return [r for doc, dec, p in zip(docs, decs, prob, strict=True)
                for r in alignments_from(doc, dec, member.thresholds, member.decoder, p)]

    def score(prob: list[np.ndarray] | list[np.ndarray | None], member: CRFAligner) -> dict:
        e = evaluate(gold, rows_of(prob, member), pairs)
        return {"task1": round(float(e["task1"]["f1"]), 4),
                "recall_by_gold_shape": {k: round(float(v["recall"]), 3) for k, v in e["groups"]["gold"].items()}}

    out: dict = {"precision": members[0].semantic_precision,
                 "members": [{"model": d, **score(p, m)} for d, p, m in zip(model_dirs, probs, members, strict=True)],
                 "ensembles": []}
    mean: list[np.ndarray] | list[np.ndarray | None] = probs[0]
    for k in range(2, len(members) + 1):
        ensemble.members = members[1:k]
        mean = ensemble.cell_probabilities(docs, decoded[:k])  # the average `align` decides on
        out["ensembles"] += [{"models": k, "thresholds_of": model_dirs[m], **score(mean, members[m])} for m in range(k)]
    if write_pred:  # ``mean`` is now every model's average (the one model's own with one)
        write_alignment_tsv(write_pred, rows_of(mean, members[0]))
        out["written"] = write_pred
    return out


def main() -> int:
    from alignment_engine.crf_config import PRECISIONS

    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="", help="comma-separated written model directories: a whole-model ensemble")
    ap.add_argument("--pairs", help="with --models: the pairs JSONL to align")
    ap.add_argument("--gold", help="with --models: its gold TSV")
    ap.add_argument("--precision", default=None, choices=PRECISIONS,
                    help="with --models: the sentence encoder's (default: align's)")
    ap.add_argument("--cache-dir", default="var/ensemble")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fit", type=int, action="append", default=[], help="cross-fit and train member M")
    ap.add_argument("--members", type=int, default=0, help="score ensembles of the first 1..N cached members")
    ap.add_argument("--classifiers", default="",
                    help="JSON list of stacking.CLASSIFIER_PARAMS changes: each scored on member 0 alone")
    ap.add_argument("--write-pred", default=None, metavar="TSV",
                    help="with --models: write the rows of all the models' average, decided as align decides")
    ap.add_argument("--out", default="var/ensemble.json")
    args = ap.parse_args()
    if args.models:
        if not (args.pairs and args.gold):
            ap.error("--models needs --pairs and --gold")
        print(json.dumps(score_models(args.models.split(","), args.pairs, args.gold, args.precision, args.write_pred),
                         indent=1))
        return 0

    from engine_data import deplain_web

    from alignment_engine import semicrf, stacking, training
    from alignment_engine.crf_aligner import BiCRF, alignments_from, build_sequences, decode, train_crf
    from alignment_engine.crf_config import CRFConfig
    from alignment_engine.evaluation import paragraph_prf
    from alignment_engine.gold import gold_paragraph_links
    from alignment_engine.stacking import average_decodings, extra_channels

    cfg = CRFConfig()
    data = deplain_web(cfg)
    tp, tg, dp, dg, pos = data.train_pairs, data.train_gold, data.dev_pairs, data.dev_gold, data.pos
    docs, dev_docs, mean, scale, gold_mats = data.docs, data.dev_docs, data.mean, data.scale, data.gold_mats
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    dev_seqs = {d: build_sequences(dev_docs, d, cfg, mean, scale) for d in ("s2c", "c2s")}
    dev_span = {d: semicrf.build_span_sequences(dev_docs, d, cfg, mean, scale) for d in ("s2c", "c2s")}

    for m in args.fit:
        t0 = time.perf_counter()
        training.set_seed(args.seed)
        oof, fold = training.cross_fit(docs, gold_mats, cfg, mean, scale, args.seed, lambda _: None, member=m)
        semi_oof = training.semi_cross_fit(docs, gold_mats, fold, cfg, mean, scale, args.seed, lambda _: None,
                                           member=m)
        final_seed = training.member_init(args.seed, m)
        model = BiCRF.for_config(cfg)
        train_crf(model, {d: build_sequences(docs, d, cfg, mean, scale, gold_mats) for d in ("s2c", "c2s")}, cfg,
                  final_seed)
        model.eval()
        training.member_init(args.seed, m)  # the semi-Markov CRFs' initial weights from the same seed
        semi_model = semicrf.fit_semicrf(docs, gold_mats, cfg, mean, scale, final_seed)
        member = Member(fold, oof, semi_oof, decode(model, dev_seqs, dev_docs),
                        semicrf.decode_semicrf(semi_model, dev_span, dev_docs))
        (cache / f"member{m}.pkl").write_bytes(pickle.dumps(tuple(member)))
        log(f"member {m}: {time.perf_counter() - t0:.0f}s")

    out: dict = {}
    if args.members:
        members = [Member(*pickle.loads((cache / f"member{m}.pkl").read_bytes())) for m in range(args.members)]
        fold = members[0].fold
        if any(list(mem.fold) != list(fold) for mem in members):
            raise SystemExit("the members were cross-fitted over other folds")
        sizes = range(1, args.members + 1)
        no_change: dict[str, Any] = {}
        variants = [("crf", k, no_change) for k in sizes] + [("both", k, no_change) for k in sizes if k > 1]
        if args.classifiers:
            variants = [("crf", 1, change) for change in json.loads(args.classifiers)]
        default_params = dict(stacking.CLASSIFIER_PARAMS)

        def averaged(group: list[Member], field: str) -> list:
            """Per document, the ``field`` decodings of the ``group`` averaged."""
            return [average_decodings(decs) for decs in zip(*(getattr(mem, field) for mem in group), strict=True)]

        for kind, k, change in variants:
            stacking.CLASSIFIER_PARAMS.clear()
            stacking.CLASSIFIER_PARAMS.update(default_params, **change)
            used = members[:k]
            semi_used = used if kind == "both" else used[:1]
            oof, dev = averaged(used, "oof"), averaged(used, "dev")
            for dec, sd in zip(oof + dev, averaged(semi_used, "semi_oof") + averaged(semi_used, "semi_dev"), strict=True):
                dec.extra = extra_channels(sd.forward_marginals, sd.reverse_marginals, sd.forward, sd.reverse)
            t0 = time.perf_counter()
            decoder, th, cv = training.fit_decoder(docs, oof, fold, gold_mats, tp, tg, pos, cfg.paragraph_step,
                                                   cfg.decoder_rounds, args.seed, lambda _: None)
            rows = [alignments_from(d, dec, th, decoder) for d, dec in zip(dev_docs, dev, strict=True)]
            res = training.score_docs(dp, dg, rows)
            para = paragraph_prf(training.predicted_paragraph_links(dev_docs, dev, decoder),
                                 gold_paragraph_links(dp, dg))
            g = res["groups"]["gold"]
            name = f"{kind} x{k}" + (f" {json.dumps(change)}" if change else "")
            out[name] = {"train_cv_task1_f1": cv["task1_f1"], "task1": res["task1"], "groups": res["groups"],
                         "paragraphs": para, "thresholds": th, "fit_s": round(time.perf_counter() - t0, 1)}
            print(f"{name}: train CV {cv['task1_f1']:.4f} | dev P {res['task1']['precision']:.3f} "
                  f"R {res['task1']['recall']:.3f} F1 {res['task1']['f1']:.4f} | 1:1 {g['1:1']['recall']:.3f} "
                  f"1:n {g['1:n']['recall']:.3f} n:1 {g['n:1']['recall']:.3f} m:n {g['m:n']['recall']:.3f} "
                  f"| paragraph F1 {para['f1']:.4f} | thr {th.get('marginal')}", flush=True)
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
