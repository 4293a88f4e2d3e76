#!/usr/bin/env python3
"""Decoders of the neural CRF aligner compared on DEplain-web dev (docs/engine-results.md, Table 4).

Every variant is chosen on train only (cross-fitted CRF outputs, thresholds by cross-validation) and
scored once on dev (held out). The CRF (lexical emission with context features, the default) is
cross-fitted once (``cv_folds`` folds, cached in ``--cache``) and trained once on all of train; the
variants differ only in how the two directions' outputs become pairs:

- ``rule``: the best combination rule and threshold of ``training.tune_decoding`` (forward, reverse,
  union, intersection, marginal thresholds), chosen on the out-of-fold train decodings;
- ``learned-1``: one round of the learned cell classifier, without the paragraph step;
- ``learned-1+para``: the same with the learned paragraph step's probabilities as features;
- ``learned-2``: two rounds (the second, group-level round sees the first one's decisions), no paragraph step;
- ``learned-2+para``: two rounds with the paragraph step;
- ``learned-1+para+span``, ``learned-2+para+span``: the same with the group-level word-cover channels
  (``stacking.span_features``: what a complex sentence adds to the simple sentence's best other partner,
  the cover of both, the cover of the contiguous run around it; and from the complex side);
- ``...+spandec``: the semi-Markov span decoding (``semimarkov.decode_spans``, widths 2 and 3 offered to
  cross-validation on train next to plain thresholding and group closure).

Group closure is chosen (or not) by cross-validation inside every learned variant.

    python scripts/engine_decoders.py [--out var/decoders.json] [--cache var/oof.pkl] [--variants rule,learned-1+para,...]
        [--set span_emission=true --cache var/oof_span.pkl]  # a CRFConfig option (its own cache)
        [--semi-only --cache var/oof_semi.pkl]  # the semi-Markov CRF alone
        [--cache var/oof.pkl --hybrid-cache var/oof_semi.pkl]  # both (CRFConfig.semicrf=true)
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="var/decoders.json")
    ap.add_argument("--cache", default="var/oof.pkl", help="cross-fitted train decodings and the final CRF")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", default="", help="comma-separated names (default: all)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a CRFConfig option of the CRF and decoders (JSON value), e.g. span_emission=true; "
                         "use another --cache than the default's")
    ap.add_argument("--semi-only", action="store_true",
                    help="the semi-Markov CRF (alignment_engine.semicrf) instead of the first-order CRF")
    ap.add_argument("--hybrid-cache", default="",
                    help="a semi-Markov CRF cache (written with --set sequence_model=semicrf): its decodings become "
                         "extra channels of the learned decoder next to the first-order CRF's (Decoded.extra)")
    args = ap.parse_args()

    from engine_data import deplain_web

    from alignment_engine.crf_aligner import (
        BiCRF,
        alignments_from,
        build_sequences,
        config_feature_names,
        decode,
        train_crf,
    )
    from alignment_engine.crf_config import CRFConfig
    from alignment_engine.evaluation import paragraph_prf
    from alignment_engine.gold import gold_paragraph_links
    from alignment_engine.training import (
        cross_fit,
        fit_decoder,
        predicted_paragraph_links,
        score_docs,
        set_seed,
        tune_decoding,
    )

    options = {}
    for item in args.set:
        key, _, value = item.partition("=")
        try:
            options[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[key.strip()] = value
    cfg = CRFConfig().with_options(**options)
    set_seed(args.seed)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    data = deplain_web(cfg)
    tp, tg, dp, dg, pos = data.train_pairs, data.train_gold, data.dev_pairs, data.dev_gold, data.pos
    docs, dev_docs, mean, scale, gold_mats = data.docs, data.dev_docs, data.mean, data.scale, data.gold_mats
    cache = Path(args.cache)
    n_feat = len(config_feature_names(cfg))
    t0 = time.perf_counter()
    if args.semi_only:
        from alignment_engine import semicrf, training

        if cache.is_file():
            oof, fold, state = pickle.loads(cache.read_bytes())
            semi_model = semicrf.BiSemiCRF(len(mean), cfg)
            semi_model.load_state_dict(state)
        else:
            fold = training.folds_by_document([d.pair for d in docs], training.n_folds(cfg, len(docs)), args.seed)
            oof = training.semi_cross_fit(docs, gold_mats, fold, cfg, mean, scale, args.seed, log)
            semi_model = semicrf.fit_semicrf(docs, gold_mats, cfg, mean, scale, args.seed, log)
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_bytes(pickle.dumps((oof, fold, semi_model.state_dict())))
        semi_model.eval()
        dev_decs = semicrf.decode_semicrf(
            semi_model, {d: semicrf.build_span_sequences(dev_docs, d, cfg, mean, scale) for d in ("s2c", "c2s")}, dev_docs)
    else:
        if cache.is_file():
            oof, fold, state = pickle.loads(cache.read_bytes())
            model = BiCRF(n_feat, cfg.hidden, cfg.transition_hidden)
            model.load_state_dict(state)
        else:
            oof, fold = cross_fit(docs, gold_mats, cfg, mean, scale, args.seed, lambda m: None)
            model = BiCRF(n_feat, cfg.hidden, cfg.transition_hidden)
            seqs = {d: build_sequences(docs, d, cfg, mean, scale, gold_mats) for d in ("s2c", "c2s")}
            train_crf(model, seqs, cfg, args.seed)
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_bytes(pickle.dumps((oof, fold, model.state_dict())))
        model.eval()
        dev_decs = decode(model, {d: build_sequences(dev_docs, d, cfg, mean, scale) for d in ("s2c", "c2s")},
                          dev_docs)
    if args.hybrid_cache:
        from alignment_engine import semicrf, training
        from alignment_engine.stacking import extra_channels

        semi_cfg = cfg
        s_oof, s_fold, s_state = pickle.loads(Path(args.hybrid_cache).read_bytes())
        if list(s_fold) != list(fold):
            raise SystemExit("the hybrid cache was cross-fitted over other folds")
        s_model = semicrf.BiSemiCRF(len(mean), semi_cfg)
        s_model.load_state_dict(s_state)
        s_model.eval()
        s_dev = semicrf.decode_semicrf(
            s_model, {d: semicrf.build_span_sequences(dev_docs, d, semi_cfg, mean, scale) for d in ("s2c", "c2s")},
            dev_docs)
        for dec, sd in list(zip(oof, s_oof, strict=True)) + list(zip(dev_decs, s_dev, strict=True)):
            dec.extra = extra_channels(sd.forward_marginals, sd.reverse_marginals, sd.forward, sd.reverse)
    log(f"CRFs ready in {time.perf_counter() - t0:.0f}s")
    out: dict = {}

    def report(name: str, rows: list, extra: dict) -> None:
        res = score_docs(dp, dg, rows)
        out[name] = {"task1": res["task1"], "task2": res["task2"], "groups": res["groups"], **extra}
        g = res["groups"]["gold"]
        log(f"{name}: dev T1 P {res['task1']['precision']:.3f} R {res['task1']['recall']:.3f} "
            f"F1 {res['task1']['f1']:.3f} | recall 1:1 {g['1:1']['recall']:.2f} 1:n {g['1:n']['recall']:.2f} "
            f"n:1 {g['n:1']['recall']:.2f} m:n {g['m:n']['recall']:.2f} | {extra.get('thresholds')}")

    wanted = set(filter(None, args.variants.split(",")))
    if not wanted or "rule" in wanted:
        th, _ = tune_decoding(docs, oof, tp, tg)
        report("rule", [alignments_from(d, dec, th) for d, dec in zip(dev_docs, dev_decs, strict=True)],
               {"thresholds": th})
    learned = [(r, p, False, ()) for r in (1, 2) for p in (False, True)] + [
        (1, True, True, ()), (2, True, True, ()), (1, True, False, (2, 3)), (1, True, True, (2, 3))]
    for rounds, step, span, widths in learned:
        name = f"learned-{rounds}{'+para' if step else ''}{'+span' if span else ''}{'+spandec' if widths else ''}"
        if wanted and name not in wanted:
            continue
        t1 = time.perf_counter()
        decoder, th, cv = fit_decoder(docs, oof, fold, gold_mats, tp, tg, pos, step, rounds, args.seed,
                                      lambda m: None, span, widths)
        rows = [alignments_from(d, dec, th, decoder) for d, dec in zip(dev_docs, dev_decs, strict=True)]
        para = paragraph_prf(predicted_paragraph_links(dev_docs, dev_decs, decoder), gold_paragraph_links(dp, dg))
        report(name, rows, {"thresholds": th, "train_cv_task1_f1": cv["task1_f1"], "dev_paragraphs": para,
                            "fit_s": round(time.perf_counter() - t1, 1)})
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
