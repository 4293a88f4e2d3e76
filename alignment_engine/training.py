"""Training of the neural CRF aligner: cross-encoder fine-tuning, CRF training, dev tuning.

``train_model(train_pairs, train_gold, dev_pairs, dev_gold, out_dir, seed, device, progress,
config=None, **options)`` (also ``api.train``) trains :class:`~alignment_engine.crf_config.CRFConfig`
(its defaults when nothing is given; ``options`` change single fields) and runs, in order:

1. lexical features of every train (and dev) pair;
2. fine-tuning of the cross-encoder (:mod:`alignment_engine.encoders`) on gold pairs plus
   sampled negatives, unless ``emission="lexical"``;
3. encoder scores of the candidate cells (top-``candidate_k`` per row and column), cached by
   sentence-text pair;
4. training of the two CRFs (simple->complex and complex->simple) by exact maximum likelihood;
5. the learned decoder and its thresholds, fitted and chosen by cross-validation on train (dev is only
   scored); with ``decoder="rule"``, the combination rule of the two directions, its marginal threshold
   and the aligned/partialAligned rule, tuned on dev for the best Task 1 / Task 2 F1;
6. writing the model directory (:mod:`alignment_engine.model_store`);
7. with the learned decoder and dev gold (``refit_with_dev``, the default): steps 1-6 once more on train + dev,
   and that model is the one written, with the dev figures of the first, held-out run.

Deterministic for a seed: seeds for python, numpy and torch are set, negative sampling and batch order
use seeded generators, the CRFs compute in float64 (:data:`~alignment_engine.crf.DTYPE`: in float32 the
order in which the CPU summed floats, one thread or two, trained another model), and training runs on one
torch thread whatever the load (:func:`~alignment_engine.encoders.training_threads` around the whole run
and every CRF training loop), which keeps the float32 encoder fine-tuning reproducible too.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from alignment_engine import model_store, semicrf
from alignment_engine.crf_aligner import (
    COMBINES,
    LEARNED,
    UNKNOWN,
    BiCRF,
    CRFAligner,
    Decoded,
    DocData,
    alignments_from,
    build_sequences,
    decode,
    doc_cell_features,
    doc_paragraph_features,
    fit_normalisation,
    paragraph_probabilities,
    prepare_docs,
    train_crf,
)
from alignment_engine.crf_config import CRFConfig
from alignment_engine.encoders import training_threads
from alignment_engine.evaluation import evaluate, group_by_pair, paragraph_prf
from alignment_engine.gold import gold_by_pair, gold_cells, gold_matrix, known_matrix, known_paragraphs, paragraph_links
from alignment_engine.semantic import alignment_precision, shared_encoder, spend_load_draws, store_path, stored_in
from alignment_engine.stacking import LearnedDecoder, fit_classifier, group_features, predict_proba
from alignment_engine.types import Alignment, DocPair, ProgressCallback, distinct_sentences


def score_docs(pairs: Sequence[DocPair], gold: Sequence[Alignment], pred: Sequence[Sequence[Alignment]],
               unlabelled: Mapping[str, Iterable[tuple[str, str]]] | None = None) -> dict:
    """:func:`alignment_engine.evaluation.evaluate` of per-document predictions (gold of other documents
    ignored). A prediction on a cell of ``unlabelled`` (pair id -> cells of a partially labelled pair
    that nobody labelled) is left out: nobody knows whether it is right."""
    docs = {p.pair_id for p in pairs}
    open_cells = {pair_id: set(cells) for pair_id, cells in (unlabelled or {}).items() if pair_id in docs}
    predicted = [a for rows in pred for a in rows if (a.simple_id, a.complex_id) not in open_cells.get(a.pair_id, ())]
    return evaluate([g for g in gold if g.pair_id in docs], predicted, pairs)


def tune_decoding(docs: Sequence[DocData], decs: Sequence[Decoded], pairs: Sequence[DocPair],
                  gold: Sequence[Alignment], unlabelled: Mapping[str, Iterable[tuple[str, str]]] | None = None,
                  ) -> tuple[dict, dict]:
    """Pick the combination rule / marginal threshold (Task 1 F1) and the partial rule (Task 2 F1) on dev
    (predictions on ``unlabelled`` cells of partially labelled pairs left out, as :func:`score_docs` does).

    Returns (thresholds, table of every rule's dev Task 1 figures).
    """
    table: dict[str, dict] = {}
    best: tuple[float, dict] = (-1.0, {})
    default_partial = {"group": False, "min_len_ratio": 0.0}
    for rule in COMBINES:
        grid = [0.5] if rule in ("forward", "reverse", "union", "intersection") else [
            0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7]
        for thr in grid:
            th = {"combine": rule, "marginal": thr, "partial": default_partial}
            pred = [alignments_from(doc, dec, th) for doc, dec in zip(docs, decs, strict=True)]
            res = score_docs(pairs, gold, pred, unlabelled)
            key = rule if len(grid) == 1 else f"{rule}@{thr}"
            table[key] = res["task1"]
            if res["task1"]["f1"] > best[0]:
                best = (res["task1"]["f1"], th)
    th = dict(best[1])
    best2 = (-1.0, default_partial)
    for group in (False, True):
        for ratio in (0.0, 0.3, 0.4, 0.5, 0.6):
            cand = {"group": group, "min_len_ratio": ratio}
            pred = [alignments_from(doc, dec, {**th, "partial": cand}) for doc, dec in zip(docs, decs, strict=True)]
            f2 = score_docs(pairs, gold, pred, unlabelled)["task2"]["f1"]
            if f2 > best2[0] + 1e-9:
                best2 = (f2, cand)
    th["partial"] = best2[1]
    return th, table


PARTIAL_RULES = [{"group": g, "min_len_ratio": r} for g in (False, True) for r in (0.0, 0.3, 0.4, 0.5, 0.6)]
CELL_THRESHOLDS = [0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7]


def folds_by_document(pairs: Sequence[DocPair], k: int, seed: int) -> list[int]:
    """Fold number of every pair: documents (their ``meta["article"]`` when given, else the pair id) are
    shuffled with ``seed`` and dealt round-robin, so no article is in two folds."""
    keys = [str(p.meta.get("article", p.pair_id)) for p in pairs]
    order = sorted(set(keys))
    random.Random(seed).shuffle(order)
    fold_of = {key: i % k for i, key in enumerate(order)}
    return [fold_of[key] for key in keys]


def _paragraph_gold(doc: DocData, pos: set[tuple[str, str]]) -> np.ndarray:
    out = np.zeros((len(doc.pair.simple), len(doc.pair.complex)), dtype=np.int64)
    for c, s_, _ in paragraph_links(pos):
        if s_ < out.shape[0] and c < out.shape[1]:
            out[s_, c] = 1
    return out


def n_folds(cfg: CRFConfig, n_docs: int) -> int:
    """The number of cross-fitting folds for ``n_docs`` train documents."""
    return max(2, min(int(cfg.cv_folds), n_docs))


def gold_links_for(cfg: CRFConfig, pairs: Sequence[DocPair], pos: Mapping[str, set[tuple[str, str]]]) -> list | None:
    """The gold paragraph links each pair is aligned within when ``cfg.paragraphs`` is "gold" (``pos``: the gold
    pairs by pair id, :func:`alignment_engine.gold.gold_by_pair`); None otherwise."""
    if cfg.paragraphs != "gold":
        return None
    return [paragraph_links(pos.get(p.pair_id, set())) for p in pairs]


def report_count(progress: object, done: int, total: int) -> None:
    """``progress(done, total)`` when ``progress`` takes counts (the engine's ``ProgressCallback``); a callback
    that takes only messages hears nothing."""
    if callable(progress):
        with contextlib.suppress(TypeError):  # a message-only callback
            progress(done, total)


class RunProgress:
    """Progress of one training run as one count: ``progress(done, total)`` in steps of the whole run.

    The run is planned as stages of steps (encoder fine-tuning steps, the epochs of every cross-fitting
    CRF and of the final CRF, one step each for features, decoder fitting, dev scoring and saving);
    each stage reports the steps it has done and the callback hears the run's total (the engine's
    ``ProgressCallback``, as in ``align``). Log lines still go to ``progress(message)``. A callback that
    takes only a message (or only counts) gets what it can take.
    """

    def __init__(self, progress: object, stages: dict[str, int]) -> None:
        self.progress = progress
        self.log = _logger(progress)
        self.start: dict[str, int] = {}
        self.size = {name: max(int(n), 0) for name, n in stages.items()}
        offset = 0
        for name, n in self.size.items():
            self.start[name] = offset
            offset += n
        self.total = max(offset, 1)
        self.done = 0

    @classmethod
    def plan(cls, progress: object, cfg: CRFConfig, n_docs: int, has_dev: bool) -> RunProgress:
        fine_tune = cfg.uses_encoder and not cfg.encoder_init
        learned = cfg.decoder == "learned"
        return cls(progress, {
            "encoder": int(cfg.encoder_steps) if fine_tune else 0,
            "features": 1,
            "cross-fit": n_folds(cfg, n_docs) * int(cfg.crf_epochs) if learned else 0,
            "semicrf": (n_folds(cfg, n_docs) + 1) * int(cfg.semicrf_epochs) if learned and cfg.semicrf else 0,
            "decoder": 1 if learned else 0,
            "crf": int(cfg.crf_epochs),
            "dev": 1 if has_dev else 0,
            "save": 1,
        })

    def at(self, stage: str, done: int) -> None:
        """``done`` steps of ``stage`` are finished (never moves backwards)."""
        value = self.start[stage] + min(max(int(done), 0), self.size[stage])
        if value <= self.done:
            return
        self.done = value
        report_count(self.progress, self.done, self.total)

    def finish(self, stage: str) -> None:
        self.at(stage, self.size[stage])

    def epochs(self, stage: str, first: int = 0, prefix: str = "") -> Callable[[str], None]:
        """The ``progress`` of :func:`~alignment_engine.crf_aligner.train_crf` (one message per epoch) for the
        epochs ``first + 1, first + 2, ...`` of ``stage``."""
        count = [first]

        def on_epoch(msg: str) -> None:
            count[0] += 1
            self.log(prefix + msg)
            self.at(stage, count[0])

        return on_epoch

    def encoder_steps(self, msg: str) -> None:
        """The ``progress`` of ``CrossEncoder.fit`` (``"encoder step d/s ..."`` every 25 steps)."""
        self.log(msg)
        head = msg.split()
        if len(head) > 2 and head[:2] == ["encoder", "step"] and "/" in head[2]:
            done = head[2].split("/", 1)[0]
            if done.isdigit():
                self.at("encoder", int(done))


def cross_fit(docs: Sequence[DocData], gold_mats: Sequence[np.ndarray], cfg: CRFConfig, mean: np.ndarray,
              scale: np.ndarray, seed: int, log: Callable[[str], None],
              run: RunProgress | None = None, known: Sequence[np.ndarray | None] | None = None,
              member: int = 0) -> tuple[list[Decoded], list[int]]:
    """Out-of-fold decoding of the train documents: each fold decoded by a CRF trained on the others
    (``cfg.cv_folds`` folds by document). ``known[i]``: document i's partial labels (see
    :func:`~alignment_engine.crf_aligner.build_sequences`). ``member``: which member of a seed ensemble
    (same folds, CRF seeds and initial weights of :func:`member_init`). Returns (decodings, fold of every document)."""
    k = n_folds(cfg, len(docs))
    fold = folds_by_document([d.pair for d in docs], k, seed)
    oof: list[Decoded | None] = [None] * len(docs)
    for f in range(k):
        fit_idx = [i for i in range(len(docs)) if fold[i] != f]
        held = [i for i in range(len(docs)) if fold[i] == f]
        sub_docs = [docs[i] for i in fit_idx]
        sub_gold = [gold_mats[i] for i in fit_idx]
        sub_known = None if known is None else [known[i] for i in fit_idx]
        seqs = {d: build_sequences(sub_docs, d, cfg, mean, scale, sub_gold, sub_known) for d in ("s2c", "c2s")}
        crf_seed = member_init(seed + 1 + f, member)
        model = BiCRF.for_config(cfg)
        prefix = f"cross-fitting fold {f + 1}/{k}: "
        if run is not None:
            fold_log = run.epochs("cross-fit", first=f * int(cfg.crf_epochs), prefix=prefix)
        else:
            def fold_log(msg: str, prefix: str = prefix) -> None:
                log(prefix + msg)
        train_crf(model, seqs, cfg, crf_seed, progress=fold_log)
        model.eval()
        held_docs = [docs[i] for i in held]
        decs = decode(model, {d: build_sequences(held_docs, d, cfg, mean, scale) for d in ("s2c", "c2s")}, held_docs)
        for i, dec in zip(held, decs, strict=True):
            oof[i] = dec
    return [d for d in oof if d is not None], fold


def member_init(seed: int, member: int) -> int:
    """The CRF seed of seed-ensemble member ``member``, returned after seeding torch with it for the
    member's own initial weights; member 0 is the single model: ``seed`` itself, torch left as it is."""
    if not member:
        return seed
    own = seed + 7919 * member
    torch.manual_seed(own)
    return own


def semi_cross_fit(docs: Sequence, gold_mats: Sequence[np.ndarray], fold: Sequence[int], config: CRFConfig,
                   mean: np.ndarray, scale: np.ndarray, seed: int, log: Callable[[str], None],
                   known: Sequence[np.ndarray | None] | None = None, member: int = 0) -> list:
    """Out-of-fold decodings of the train documents by semi-Markov CRFs that did not see them, over the
    folds of :func:`cross_fit` (``fold``, its second value) and with its seeds (``member``: as there)."""
    k = max(fold) + 1 if fold else 1
    cache: dict = {}
    oof: list = [None] * len(docs)
    for f in range(k):
        fit_idx = [i for i in range(len(docs)) if fold[i] != f]
        held = [i for i in range(len(docs)) if fold[i] == f]

        def fold_log(msg: str, f: int = f) -> None:
            log(f"fold {f + 1}/{k}: {msg}")

        semi_seed = member_init(seed + 1 + f, member)
        model = semicrf.fit_semicrf([docs[i] for i in fit_idx], [gold_mats[i] for i in fit_idx], config, mean, scale,
                                    semi_seed, fold_log, cache, None if known is None else [known[i] for i in fit_idx])
        held_docs = [docs[i] for i in held]
        decs = semicrf.decode_semicrf(model, {d: semicrf.build_span_sequences(held_docs, d, config, mean, scale, None, cache)
                                              for d in ("s2c", "c2s")}, held_docs)
        for i, dec in zip(held, decs, strict=True):
            oof[i] = dec
    return oof


def fit_decoder(
    docs: Sequence[DocData], decs_all: Sequence[Decoded], fold: Sequence[int], gold_mats: Sequence[np.ndarray],
    pairs: Sequence[DocPair], gold: Sequence[Alignment], pos: dict[str, set[tuple[str, str]]], paragraph_step: bool,
    rounds: int, seed: int, log: Callable[[str], None], span: bool = False, span_widths: Sequence[int] = (),
    known: Sequence[np.ndarray | None] | None = None,
    unlabelled: Mapping[str, Iterable[tuple[str, str]]] | None = None,
) -> tuple[LearnedDecoder, dict, dict]:
    """Fit the paragraph and cell classifiers on out-of-fold CRF outputs (:func:`cross_fit`) and choose
    the cell threshold, group closure, the span decoding's width (``span_widths`` offered, 0 = off) and the
    Task 2 rule by cross-validation on train (the same folds).
    Partial labels (``known[i]``; ``unlabelled`` lists the same cells by id): the cell classifiers learn
    from labelled cells only, the paragraph classifier from paragraph pairs whose label is known
    (:func:`alignment_engine.gold.known_paragraphs`), and the threshold searches leave predictions on
    unknown cells and paragraph pairs out, so an unlabelled candidate is never read as not aligned.
    Returns (decoder, thresholds, cross-validation report)."""
    k = max(fold) + 1 if fold else 1
    # paragraph step: out-of-fold paragraph probabilities (the cell classifier must see them as at inference)
    para_x = [doc_paragraph_features(doc, dec) for doc, dec in zip(docs, decs_all, strict=True)]
    para_y = [_paragraph_gold(doc, pos.get(doc.pair.pair_id, set())) for doc in docs]
    known_of = [None if known is None else known[i] for i in range(len(docs))]
    para_known = [np.ones(y.shape, dtype=bool) if kn is None else known_paragraphs(doc.pair, kn)
                  for doc, y, kn in zip(docs, para_y, known_of, strict=True)]
    flat_x = [x.reshape(x.shape[0] * x.shape[1], x.shape[2]) for x in para_x]
    # the classifier's examples: paragraph pairs whose label is known
    fit_px = [x[m.reshape(-1)] for x, m in zip(flat_x, para_known, strict=True)]
    fit_py = [y.reshape(-1)[m.reshape(-1)] for y, m in zip(para_y, para_known, strict=True)]
    para_oof = [np.zeros(y.shape) for y in para_y]
    for f in range(k):
        model_f = fit_classifier([fit_px[i] for i in range(len(docs)) if fold[i] != f],
                                 [fit_py[i] for i in range(len(docs)) if fold[i] != f], seed)
        for i in (i for i in range(len(docs)) if fold[i] == f):
            para_oof[i] = predict_proba(model_f, flat_x[i]).reshape(para_y[i].shape)
    paragraph_model = fit_classifier(fit_px, fit_py, seed)
    gold_links = {(doc.pair.pair_id, c, s_) for doc, y in zip(docs, para_y, strict=True) for s_, c in zip(*np.nonzero(y), strict=True)}
    best_para = (-1.0, 0.5)
    para_report = {}
    for t in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7):
        links = {(doc.pair.pair_id, int(c), int(s_)) for doc, pr, m in zip(docs, para_oof, para_known, strict=True)
                 for s_, c in zip(*np.nonzero((pr >= t) & m), strict=True)}
        res = paragraph_prf(links, gold_links)
        para_report[str(t)] = {"precision": res["precision"], "recall": res["recall"], "f1": res["f1"]}
        if res["f1"] > best_para[0] + 1e-9:
            best_para = (res["f1"], t)
    log(f"paragraph step (cross-validated on train): F1 {best_para[0]:.3f} at {best_para[1]}")
    # the sentence decision
    cell_x, cell_y, masks, labelled = [], [], [], []
    for i, (doc, dec, pr, g) in enumerate(zip(docs, decs_all, para_oof, gold_mats, strict=True)):
        x, mask = doc_cell_features(doc, dec, pr if paragraph_step else None, span)
        cell_x.append(x)
        cell_y.append(g[mask].astype(np.int64))
        masks.append(mask)
        kn = None if known is None else known[i]
        labelled.append(np.ones(int(mask.sum()), dtype=bool) if kn is None else kn[mask] != UNKNOWN)

    def fit_x(xs: Sequence[np.ndarray], idx: Iterable[int]) -> list[np.ndarray]:
        return [xs[i][labelled[i]] for i in idx]

    def fit_y(idx: Iterable[int]) -> list[np.ndarray]:
        return [cell_y[i][labelled[i]] for i in idx]

    everyone = range(len(docs))
    probs = [np.zeros(doc.shape) for doc in docs]
    for f in range(k):
        others = [i for i in everyone if fold[i] != f]
        model_f = fit_classifier(fit_x(cell_x, others), fit_y(others), seed)
        for i in (i for i in range(len(docs)) if fold[i] == f):
            probs[i][masks[i]] = predict_proba(model_f, cell_x[i])
    cell_model = fit_classifier(fit_x(cell_x, everyone), fit_y(everyone), seed)
    group_models = []
    for _ in range(rounds - 1):  # later rounds: the previous round's out-of-fold probabilities as context
        group_x = [np.concatenate([x, group_features(p)[mask]], axis=1) for x, p, mask in zip(cell_x, probs, masks, strict=True)]
        probs = [np.zeros(doc.shape) for doc in docs]
        for f in range(k):
            others = [i for i in everyone if fold[i] != f]
            model_f = fit_classifier(fit_x(group_x, others), fit_y(others), seed)
            for i in (i for i in range(len(docs)) if fold[i] == f):
                probs[i][masks[i]] = predict_proba(model_f, group_x[i])
        group_models.append(fit_classifier(fit_x(group_x, everyone), fit_y(everyone), seed))
    group_model: Any = group_models  # rounds 2, 3, ...; with two rounds or one, the model or None older pickles hold
    if len(group_models) < 2:
        group_model = group_models[0] if group_models else None
    no_partial = {"group": False, "min_len_ratio": 0.0}
    best: tuple[float, dict] = (-1.0, {})
    table: dict[str, dict] = {}
    for use_closure, spans in [(False, 0), (True, 0)] + [(False, w) for w in span_widths]:
        for t in CELL_THRESHOLDS:
            th = {"combine": LEARNED, "marginal": t, "closure": use_closure, "spans": spans, "partial": no_partial}
            pred = [alignments_from(doc, dec, th, prob=p) for doc, dec, p in zip(docs, decs_all, probs, strict=True)]
            res = score_docs(pairs, gold, pred, unlabelled)
            table[f"learned{'+closure' if use_closure else ''}{f'+spans{spans}' if spans else ''}@{t}"] = res["task1"]
            if res["task1"]["f1"] > best[0] + 1e-9:
                best = (res["task1"]["f1"], th)
    thresholds = dict(best[1])
    best2 = (-1.0, no_partial)
    for cand in PARTIAL_RULES:
        pred = [alignments_from(doc, dec, {**thresholds, "partial": cand}, prob=p)
                for doc, dec, p in zip(docs, decs_all, probs, strict=True)]
        f2 = score_docs(pairs, gold, pred, unlabelled)["task2"]["f1"]
        if f2 > best2[0] + 1e-9:
            best2 = (f2, cand)
    thresholds["partial"] = best2[1]
    thresholds["paragraph"] = best_para[1]
    log(f"learned decoder (cross-validated on train): Task 1 F1 {best[0]:.3f} with {thresholds}")
    decoder = LearnedDecoder(paragraph_model, cell_model, paragraph_step, group_model,
                             float(thresholds["marginal"]), float(best_para[1]), bool(thresholds["closure"]), span)
    report = {"folds": k, "task1_f1": best[0], "rules": table, "paragraph": para_report,
              "paragraph_threshold": best_para[1]}
    return decoder, thresholds, report


def predicted_paragraph_links(docs: Sequence[DocData], decs: Sequence[Decoded], decoder: LearnedDecoder,
                              members: Sequence[tuple[Sequence[Decoded], LearnedDecoder]] = ()
                              ) -> set[tuple[str, int, int]]:
    """(pair_id, complex paragraph, simple paragraph) the learned paragraph step links; with a seed ensemble's other
    ``members`` (their decodings and decoders), the members' probabilities averaged, at ``decoder``'s threshold."""
    out: set[tuple[str, int, int]] = set()
    for i, doc in enumerate(docs):
        probs = [paragraph_probabilities(doc, d[i], dec_) for d, dec_ in [(decs, decoder), *members]]
        pr = probs[0] if len(probs) == 1 else np.mean(probs, axis=0)
        out |= {(doc.pair.pair_id, int(c), int(s_)) for s_, c in zip(*np.nonzero(pr >= decoder.paragraph_threshold), strict=True)}
    return out


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@training_threads()
def train_model(
    train_pairs: Sequence[DocPair],
    train_gold: Sequence[Alignment],
    dev_pairs: Sequence[DocPair] | None = None,
    dev_gold: Sequence[Alignment] | None = None,
    out_dir: str | Path = "var/models/crf",
    seed: int = 0,
    device: str = "auto",
    progress: ProgressCallback | Callable[[str], None] | None = None,
    config: CRFConfig | None = None,
    encoder_cache: dict[tuple[str, str], float] | None = None,
    unlabelled: Mapping[str, Iterable[tuple[str, str]]] | None = None,
    workers: int | None = None,
    **options: Any,
) -> Path:
    """Train the neural CRF aligner and write its model directory; return the directory.

    ``config`` (default ``CRFConfig()``, the best configuration measured) with ``options`` changing
    single fields; ``encoder_cache`` maps (simple, complex) texts to encoder scores to reuse.
    ``unlabelled`` marks the train documents whose labels are partial: pair id -> the
    ``(simple_id, complex_id)`` cells nobody labelled (e.g. candidates a selective labeling job left
    out). Their CRF training marginalises those cells out (:func:`~alignment_engine.gold.known_matrix`,
    ``Seq.partial``) and the learned decoder leaves them out of its examples; every other cell of such
    a document that is not a gold positive is not aligned. Documents not in it are complete, as before.
    Dev documents in it are scored without the predictions on those cells (``score_docs``), as the
    product's registry scores them.

    **Refit on train + dev** (``refit_with_dev``, the default, with the learned decoder and dev gold that
    has a positive pair): the model is first trained on train alone and scored on dev, which it has not
    seen; those held-out figures become the written model's ``dev_metrics``. Then the same configuration
    is trained again, from scratch and with nothing chosen on dev, on train and dev together, and that
    model is written: on DEplain-web it sees a quarter more documents (docs/engine-results.md, Round 11). Its
    ``model.json`` says so under ``refit`` (the held-out model's data, cross-validation and thresholds);
    ``data`` counts what the written model was trained on. Aligning dev with it is no longer a held-out
    figure. The rule decoder tunes its thresholds on dev, so it is never refitted.

    **A seed ensemble** (``members`` > 1, learned decoder): member k is the model this function writes with
    ``members=1`` and seed ``seed + k`` (its held-out run and its refit); the members train in parallel processes,
    ``workers`` at a time (default: the CPUs this process may use; 1 trains them one after the other, with the
    same result); ``dev_metrics`` are the held-out figures of the members' averaged probabilities, as ``align``
    decides them (:func:`_train_in_workers`). A single model with a refit runs its two runs the same way (side by
    side in two worker processes unless ``workers`` is 1; the same model either way).
    """
    cfg = (config or CRFConfig()).with_options(**options)
    if not train_pairs:
        raise ValueError("no training pairs")
    positives = group_by_pair(a for a in train_gold if a.is_positive)
    if not any(gold_cells(p, positives.get(p.pair_id, [])) for p in train_pairs):
        # nothing to learn from: every cell would be a negative (an empty gold file, or another corpus's ids)
        rows = f"{len(train_gold)} gold row{'' if len(train_gold) == 1 else 's'}"
        raise ValueError(f"no gold row aligns two sentences of the {len(train_pairs)} training pairs ({rows}, "
                         f"{sum(a.is_positive for a in train_gold)} of them aligned or partially aligned): the gold "
                         "must name the pairs' sentence ids "
                         "(<pair_id>-<level>-<paragraph>-<sentence>, level 0 simple, 1 complex)")
    if cfg.semicrf and cfg.decoder != "learned":
        if options.get("semicrf"):
            raise ValueError("semicrf=true needs decoder='learned' (the semi-Markov CRF feeds the learned decoder)")
        cfg = replace(cfg, semicrf=False)  # the default semicrf=true: the rule decoder has no use for it
    if cfg.members > 1 and cfg.decoder != "learned":
        if options.get("members", 1) > 1:
            raise ValueError("members > 1 needs decoder='learned' (a seed ensemble averages learned-decoder probabilities)")
        cfg = replace(cfg, members=1)  # the default ensemble: the rule decoder has no probabilities to average
    cache: dict[tuple[str, str], float] = encoder_cache if encoder_cache is not None else {}
    added = refit_additions(cfg, train_pairs, dev_pairs, dev_gold)
    if cfg.members > 1 or (added is not None and (workers is None or int(workers) > 1)):
        # a single model's held-out run and its refit are two runs too: in worker processes, side by side
        return _train_in_workers(train_pairs, train_gold, dev_pairs, dev_gold, out_dir, seed, device, progress, cfg,
                                 cache, unlabelled, workers, added)
    if added is None:
        return _fit(train_pairs, train_gold, dev_pairs, dev_gold, out_dir, seed, device, progress, cfg, cache, unlabelled)
    both_pairs, both_gold = [*train_pairs, *added[0]], [*train_gold, *added[1]]
    first = RunProgress.plan(None, cfg, len(train_pairs), True).total
    total = first + RunProgress.plan(None, cfg, len(both_pairs), False).total
    # an encoder fine-tuned here is fine-tuned again on train + dev: its scores from the held-out run must not
    # reach the refit (a fixed encoder_init scores alike in both runs, so its cache is shared)
    held_cache = cache if not cfg.uses_encoder or cfg.encoder_init else {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="held-out-model-") as tmp:
        held_dir = _fit(train_pairs, train_gold, dev_pairs, dev_gold, tmp, seed, device,
                        _shifted(progress, 0, total), cfg, held_cache, unlabelled)
        held = model_store.read_meta(held_dir)
    _logger(progress)(f"refitting on train + dev ({len(train_pairs)} + {len(added[0])} document pairs); "
                      "the dev figures are the held-out model's")
    refit = {
        "final_model": "train + dev",
        "held_out_model": {"data": held.get("data", {}), "cross_validation": held.get("cross_validation", {}),
                           "thresholds": held.get("thresholds", {}), "seconds": round(time.perf_counter() - t0, 2)},
    }
    return _fit(both_pairs, both_gold, None, None, out_dir, seed, device, _shifted(progress, first, total), cfg,
                cache, unlabelled, held_out=(held.get("dev_metrics", {}), refit))


@dataclass(frozen=True)
class MemberJob:
    """One training run of a seed ensemble's member (a job of :func:`alignment_engine.parallel.run_jobs`)."""

    member: int
    data: str  # "train" (scored on dev when given) or "train + dev" (the refit)
    seed: int
    train_pairs: Sequence[DocPair]
    train_gold: Sequence[Alignment]
    dev_pairs: Sequence[DocPair] | None
    dev_gold: Sequence[Alignment] | None
    out: str
    device: str
    config: CRFConfig  # members=1
    cache: dict[tuple[str, str], float]
    unlabelled: Mapping[str, Iterable[tuple[str, str]]] | None
    store: str | None  # the members' shared embedding store (semantic.stored_in)


@training_threads()
def member_job(job: MemberJob, report: Callable[..., None]) -> str:
    """Train one member (:func:`_fit`, as a single model of seed ``job.seed`` is trained); its directory."""
    with stored_in(job.store):
        return str(_fit(job.train_pairs, job.train_gold, job.dev_pairs, job.dev_gold, job.out, job.seed, job.device,
                        report, job.config, dict(job.cache), job.unlabelled))


#: Fewer sentences than this are left to the runs: starting the worker processes (a few seconds each, the sentence
#: encoder loaded) would cost more than embedding them once in shares saves.
SHARED_EMBEDDING_MIN = 1_000
#: Sentences per call of the encoder between two progress reports of :func:`embed_job`.
EMBED_CHUNK = 500


@dataclass(frozen=True)
class EmbedJob:
    """A share of the sentences an ensemble's runs embed, embedded into their shared store before they start (a job
    of :func:`alignment_engine.parallel.run_jobs`, :func:`_embed_in_workers`)."""

    texts: Mapping[str, Sequence[str]]  # by precision
    store: str


@training_threads()
def embed_job(job: EmbedJob, report: Callable[..., None]) -> int:
    """Embed ``job.texts`` into ``job.store``; the number of sentences the encoder ran (those not stored yet)."""
    total = sum(len(texts) for texts in job.texts.values())
    done = encoded = 0
    with stored_in(job.store):
        for precision, texts in job.texts.items():
            encoder = shared_encoder(precision)
            for k in range(0, len(texts), EMBED_CHUNK):
                before = encoder.encoded
                chunk = list(texts[k: k + EMBED_CHUNK])
                encoder.embed(chunk)
                encoded += encoder.encoded - before
                done += len(chunk)
                report(done, total)  # where the caller can stop it (a cancelled job)
        return encoded


def _embed_in_workers(texts: Mapping[str, Sequence[str]], store: str, workers: int, log: Callable[[str], None],
                      tick: Callable[[], None] = lambda: None) -> None:
    """Embed ``texts`` (by precision) into ``store`` in ``workers`` processes, each a share of about equal length.

    Without it every run that starts first embeds the same sentences itself (the train sentences in float32: about
    87 s per run on a Zen 3, docs/engine-results.md Round 22), the runs side by side each all of them. A text's
    vector does not depend on what else is embedded with it (:mod:`alignment_engine.e5_small`), so the runs read
    from the store what they would have computed. ``tick()`` after every chunk a worker embeds: a callback that
    raises (a cancelled job) stops the workers."""
    from alignment_engine.parallel import run_jobs

    items = sorted(((len(t), precision, t) for precision, ts in texts.items() for t in dict.fromkeys(ts)), reverse=True)
    if len(items) < SHARED_EMBEDDING_MIN:
        return
    shares: list[dict[str, list[str]]] = [defaultdict(list) for _ in range(workers)]
    for k, (_, precision, text) in enumerate(items):  # longest first, dealt in turn: shares of about equal length
        shares[k % workers][precision].append(text)
    t0 = time.perf_counter()
    encoded = run_jobs(embed_job, [EmbedJob(dict(s), store) for s in shares], workers, lambda *_: tick(),
                       lambda _, message: log(message))
    log(f"embedded {sum(encoded)} of {len(items)} sentences in {workers} process{'es' if workers > 1 else ''} before the runs "
        f"({time.perf_counter() - t0:.0f} s)")


def default_workers() -> int:
    """The CPUs this process may run on."""
    with contextlib.suppress(AttributeError):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _train_in_workers(train_pairs: Sequence[DocPair], train_gold: Sequence[Alignment],
                      dev_pairs: Sequence[DocPair] | None, dev_gold: Sequence[Alignment] | None, out_dir: str | Path,
                      seed: int, device: str, progress: object, cfg: CRFConfig, cache: dict[tuple[str, str], float],
                      unlabelled: Mapping[str, Iterable[tuple[str, str]]] | None, workers: int | None,
                      added: tuple[list[DocPair], list[Alignment]] | None) -> Path:
    """:func:`train_model` in worker processes: a seed ensemble (``cfg.members`` > 1), or a single model with a refit
    (``added``: :func:`refit_additions`). Every member's runs (on train, scored on dev; then, with the refit, on
    train + dev) are jobs of :func:`alignment_engine.parallel.run_jobs`; the members trained on train
    alone are then loaded as one ensemble and score dev (the written ``dev_metrics``); the final members are
    written as one directory (:mod:`alignment_engine.model_store`: member 0 in it, member k in ``members/k``),
    replacing an earlier ensemble's members there. Nothing is written to ``out_dir`` before every job succeeded.
    With ``cfg.members`` 1 (a single model with a refit) the two runs are the jobs, and the written model is what
    the two runs of :func:`train_model` in this process write: its ``dev_metrics`` are the held-out run's own."""
    n = int(cfg.members)
    single = replace(cfg, members=1)
    log = _logger(progress)
    has_dev = bool(dev_pairs) and dev_gold is not None
    shared = cache if not cfg.uses_encoder or cfg.encoder_init else {}  # as train_model's held_cache
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ensemble-") as tmp:
        # the members embed the same sentences: one store for all (the caller's, else one for this run)
        store = (store_path() or str(Path(tmp) / "embeddings.sqlite3")) if cfg.semantic else None

        def job(k: int, data: str, pairs: Sequence[DocPair], gold: Sequence[Alignment],
                d_pairs: Sequence[DocPair] | None, d_gold: Sequence[Alignment] | None) -> MemberJob:
            out = str(Path(tmp) / f"{'train' if data == 'train' else 'refit'}-{k}")
            return MemberJob(k, data, seed + k, list(pairs), list(gold), None if d_pairs is None else list(d_pairs),
                             None if d_gold is None else list(d_gold), out, device, single, dict(shared), unlabelled,
                             store)

        jobs = [job(k, "train", train_pairs, train_gold, dev_pairs, dev_gold) for k in range(n)]
        run_pairs = list(train_pairs)  # every pair some run trains on
        if added is not None:
            run_pairs += added[0]
            jobs += [job(k, "train + dev", run_pairs, [*train_gold, *added[1]], None, None) for k in range(n)]
        totals = [RunProgress.plan(None, single, len(j.train_pairs), j.dev_pairs is not None and has_dev).total
                  for j in jobs]
        done = [0] * len(jobs)
        grand = sum(totals) + int(has_dev and n > 1) + 1
        used = max(1, min(default_workers() if workers is None else int(workers), len(jobs)))
        if n > 1:
            log(f"seed ensemble of {n} models (seeds {seed}-{seed + n - 1}): {len(jobs)} training runs, {used} at a time")
        else:
            log(f"refitting on train + dev ({len(train_pairs)} + {len(added[0]) if added else 0} document pairs) beside "
                f"the run on train alone, whose dev figures are written: {len(jobs)} runs, {used} at a time")

        def on_progress(i: int, value: int, total: int) -> None:
            done[i] = round(value * totals[i] / max(total, 1))
            report_count(progress, sum(done), grand)

        def on_log(i: int, msg: str) -> None:
            log(f"member {jobs[i].member + 1}/{n} ({jobs[i].data}): {msg}" if n > 1 else f"({jobs[i].data}) {msg}")

        from alignment_engine.parallel import run_jobs

        if store is not None and used > 1:  # the sentences every run embeds first, embedded once, in shares
            texts = {single.semantic_precision: distinct_sentences(run_pairs)}
            if has_dev:  # scored as `align` embeds, by the runs on train and by the ensemble below
                texts.setdefault(alignment_precision(single.semantic_precision, "cpu"), []).extend(
                    distinct_sentences(dev_pairs or []))
            _embed_in_workers(texts, store, used, log, lambda: report_count(progress, 0, grand))
        outs = run_jobs(member_job, jobs, used, on_progress, on_log)
        held = [model_store.read_meta(d) for d in outs[:n]]
        dev_metrics: dict = held[0].get("dev_metrics", {}) if n == 1 else {}
        if has_dev and n > 1:
            log("scoring dev with the ensemble of the members trained on train (held out)")
            aligner = CRFAligner.load(outs[0], "cpu")
            aligner.add_members([CRFAligner.load(d, "cpu") for d in outs[1:n]])
            with stored_in(store):  # the dev sentences the runs embedded
                dev_metrics = ensemble_dev_metrics(aligner, dev_pairs or [], dev_gold or [], unlabelled)
            report_count(progress, grand - 1, grand)
        finals = outs[n:] if added is not None else outs[:n]
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(out / model_store.MEMBERS_DIR, ignore_errors=True)
        shutil.copytree(finals[0], out, dirs_exist_ok=True)
        for k in range(1, n):
            shutil.copytree(finals[k], model_store.member_dir(out, k))
    seconds = round(time.perf_counter() - t0, 2)
    for k, member in enumerate([out, *model_store.member_dirs(out, n)]):
        if k > 0 and added is None:  # a member trained on train alone is already as train_model writes it
            continue
        meta = model_store.read_meta(member)
        if added is not None:  # as train_model writes a refitted single model: the held-out run's figures
            meta["dev_metrics"] = held[k].get("dev_metrics", {})
            meta["refit"] = {"final_model": "train + dev",
                             "held_out_model": {**{key: held[k].get(key, {}) for key in ("data", "cross_validation",
                                                                                         "thresholds")},
                                                "seconds": held[k].get("timings", {}).get("total_s")}}
        if k == 0:
            meta["config"] = cfg.to_dict()
            meta["dev_metrics"] = dev_metrics
            if n > 1:
                meta["ensemble"] = {"members": n, "seeds": [seed + j for j in range(n)], "workers": used,
                                    "seconds": seconds, "member_dev_metrics": [m.get("dev_metrics", {}) for m in held]}
        model_store.write_meta(member, meta)
    report_count(progress, grand, grand)
    log(f"model written to {out} ({n} members, {seconds:.0f} s)" if n > 1 else f"model written to {out} ({seconds:.0f} s)")
    return out


def ensemble_dev_metrics(aligner: CRFAligner, dev_pairs: Sequence[DocPair], dev_gold: Sequence[Alignment],
                         unlabelled: Mapping[str, Iterable[tuple[str, str]]] | None) -> dict:
    """Dev figures of an aligner as ``align`` decides (a seed ensemble's averaged probabilities), in the shape of
    :func:`_fit`'s ``dev_metrics``; the paragraph links are the members' averaged paragraph-step probabilities at
    member 0's threshold."""
    from alignment_engine.gold import gold_paragraph_links

    docs = aligner.prepare(dev_pairs, gold_links_for(aligner.config, dev_pairs, gold_by_pair(dev_gold)[0]))
    decodings = aligner.member_decodings(docs)
    probs = aligner.cell_probabilities(docs, decodings)
    pred = [alignments_from(doc, dec, aligner.thresholds, aligner.decoder, p)
            for doc, dec, p in zip(docs, decodings[0], probs, strict=True)]
    metrics = score_docs(dev_pairs, dev_gold, pred, unlabelled or {})
    if aligner.decoder is not None:
        others = [(decs, m.decoder) for decs, m in zip(decodings[1:], aligner.members, strict=True)
                  if m.decoder is not None]
        links = predicted_paragraph_links(docs, decodings[0], aligner.decoder, others)
        metrics["paragraphs"] = paragraph_prf(links, gold_paragraph_links(dev_pairs, dev_gold))
    if aligner.config.semantic:
        metrics["semantic_precision"] = aligner.semantic_precision
    return metrics


def refit_additions(cfg: CRFConfig, train_pairs: Sequence[DocPair], dev_pairs: Sequence[DocPair] | None,
                    dev_gold: Sequence[Alignment] | None) -> tuple[list[DocPair], list[Alignment]] | None:
    """The dev pairs and gold that :func:`train_model` adds to train for the written model, or None when it
    does not refit: ``refit_with_dev`` off, the rule decoder (tuned on dev), or no dev pair outside train
    (by pair id) with a positive gold pair. A dev pair that is also a train pair is not added twice."""
    if not (cfg.refit_with_dev and cfg.decoder == "learned" and dev_pairs and dev_gold is not None):
        return None
    seen = {p.pair_id for p in train_pairs}
    pairs = [p for p in dev_pairs if p.pair_id not in seen]
    ids = {p.pair_id for p in pairs}
    gold = [a for a in dev_gold if a.pair_id in ids]
    return (pairs, gold) if any(a.is_positive for a in gold) else None


def _shifted(progress: object, offset: int, total: int) -> object:
    """``progress`` for one pass of a refitted training: a pass's ``(done, its total)`` becomes
    ``(offset + done, total)`` of the whole run; messages pass through."""
    if not callable(progress):
        return progress

    def forward(*args: Any) -> Any:
        if len(args) == 2 and all(isinstance(a, int) for a in args):
            return progress(offset + args[0], total)
        return progress(*args)

    return forward


def _fit(
    train_pairs: Sequence[DocPair],
    train_gold: Sequence[Alignment],
    dev_pairs: Sequence[DocPair] | None,
    dev_gold: Sequence[Alignment] | None,
    out_dir: str | Path,
    seed: int,
    device: str,
    progress: object,
    cfg: CRFConfig,
    cache: dict[tuple[str, str], float],
    unlabelled: Mapping[str, Iterable[tuple[str, str]]] | None,
    held_out: tuple[dict, dict] | None = None,
) -> Path:
    """One training run of :func:`train_model` on ``train_pairs`` (scored on dev when given). ``held_out``:
    the dev figures of the model trained without dev, and the ``refit`` record, for the refitted model."""
    from alignment_engine.encoders import CrossEncoder, resolve_device

    set_seed(seed)
    dev = resolve_device(device)
    run = RunProgress.plan(progress, cfg, len(train_pairs), bool(dev_pairs) and dev_gold is not None)
    log = run.log
    timings: dict[str, float] = {}
    t_start = time.perf_counter()
    pos_train, _ = gold_by_pair(train_gold)
    extra: dict[str, Any] = {}

    if cfg.paragraphs == "predicted" and not cfg.paragraph_thresholds:
        from alignment_engine.paragraphs import tune_thresholds

        t0 = time.perf_counter()
        tune_on = (dev_pairs, dev_gold) if dev_pairs and dev_gold is not None else (train_pairs, train_gold)
        tuned = tune_thresholds(tune_on[0], tune_on[1], similarity=cfg.paragraph_similarity,
                                algorithm=cfg.paragraph_algorithm, beta=float(cfg.paragraph_beta))
        cfg = replace(cfg, paragraph_thresholds=dict(tuned.thresholds))
        timings["paragraph_tuning_s"] = time.perf_counter() - t0
        log(f"paragraph thresholds {tuned.thresholds} (paragraph P={tuned.precision:.3f} R={tuned.recall:.3f})")
        extra["paragraph_tuning"] = {"precision": tuned.precision, "recall": tuned.recall, "f1": tuned.f1}

    encoder = None
    enc_stats: dict = {}
    if cfg.uses_encoder and cfg.encoder_init:
        encoder = CrossEncoder.load(str(cfg.encoder_init), device=str(dev))
        enc_stats = {"init": str(cfg.encoder_init), "examples": 0}
    elif cfg.uses_encoder:
        log("fine-tuning the cross-encoder")
        t0 = time.perf_counter()
        encoder = CrossEncoder.pretrained(num_labels=cfg.encoder_labels, device=str(dev),
                                          max_length=cfg.encoder_max_length)
        examples = encoder_examples(train_pairs, train_gold, cfg, seed, unlabelled)
        enc_stats = encoder.fit(examples, steps=cfg.encoder_steps, batch_size=cfg.encoder_batch,
                                lr=cfg.encoder_lr, seed=seed, progress=run.encoder_steps,
                                freeze_layers=cfg.encoder_freeze_layers)
        timings["encoder_finetune_s"] = time.perf_counter() - t0
    run.finish("encoder")
    log("features and encoder scores of train")
    t0 = time.perf_counter()
    counters: dict[str, int] = {}
    if cfg.semantic:  # where a fresh process loads the sentence encoder: the same draws in every run
        spend_load_draws()
    train_docs = prepare_docs(train_pairs, cfg, encoder, links=gold_links_for(cfg, train_pairs, pos_train), counters=counters,
                              enc_cache=cache)
    timings["train_features_s"] = time.perf_counter() - t0
    norm = fit_normalisation(train_docs, cfg)
    mean, scale = np.asarray(norm["mean"], dtype=np.float32), np.asarray(norm["scale"], dtype=np.float32)
    gold_mats = [gold_matrix(d.pair, pos_train.get(d.pair.pair_id, set())).astype(np.int64) for d in train_docs]
    open_cells = unlabelled or {}
    known: list[np.ndarray | None] = [
        known_matrix(d.pair, pos_train.get(d.pair.pair_id, set()), open_cells[d.pair.pair_id])
        if d.pair.pair_id in open_cells else None for d in train_docs]
    n_partial = sum(k is not None for k in known)
    if n_partial:
        log(f"{n_partial} of {len(train_docs)} train document pairs have partial labels: "
            f"{sum(int((k == UNKNOWN).sum()) for k in known if k is not None)} unlabelled cells marginalised out")
    seqs = {d: build_sequences(train_docs, d, cfg, mean, scale, gold_mats, known) for d in ("s2c", "c2s")}
    run.finish("features")
    decoder: LearnedDecoder | None = None
    semi_model = None
    thresholds: dict = {"combine": "union", "marginal": 0.5, "partial": {"group": True, "min_len_ratio": 0.0}}
    if cfg.decoder == "learned":
        t0 = time.perf_counter()
        oof, fold = cross_fit(train_docs, gold_mats, cfg, mean, scale, seed, log, run, known)
        run.finish("cross-fit")
        if cfg.semicrf:
            t1 = time.perf_counter()
            semi_epochs = run.epochs("semicrf", prefix="semi-Markov CRF ")
            semicrf.set_extra(oof, semi_cross_fit(train_docs, gold_mats, fold, cfg, mean, scale, seed, semi_epochs, known))
            semi_model = semicrf.fit_semicrf(train_docs, gold_mats, cfg, mean, scale, seed,
                                             lambda msg: semi_epochs("(final) " + msg), None, known)
            timings["semicrf_s"] = time.perf_counter() - t1
            run.finish("semicrf")
        decoder, thresholds, extra["cross_validation"] = fit_decoder(
            train_docs, oof, fold, gold_mats, train_pairs, train_gold, pos_train, cfg.paragraph_step,
            cfg.decoder_rounds, seed, log, cfg.span_features, cfg.span_widths, known, open_cells)
        timings["cross_fit_s"] = time.perf_counter() - t0
        run.finish("decoder")
    model = BiCRF.for_config(cfg)
    t0 = time.perf_counter()
    crf_stats = train_crf(model, seqs, cfg, seed, progress=run.epochs("crf", prefix="final CRF: "))
    timings["crf_train_s"] = time.perf_counter() - t0
    model.eval()
    dev_metrics: dict = {}
    rule_table: dict = {}
    if dev_pairs and dev_gold is not None:
        log("tuning on dev" if decoder is None else "scoring dev (held out: nothing is tuned on it)")
        pos_dev, _ = gold_by_pair(dev_gold)
        t0 = time.perf_counter()
        # embedded as `align` embeds by default on the CPU (semantic.alignment_precision): the figures a user gets
        dev_precision = alignment_precision(cfg.semantic_precision, "cpu")
        dev_docs = prepare_docs(dev_pairs, cfg, encoder, links=gold_links_for(cfg, dev_pairs, pos_dev), enc_cache=cache,
                                semantic_precision=dev_precision)
        dev_seqs = {d: build_sequences(dev_docs, d, cfg, mean, scale) for d in ("s2c", "c2s")}
        decs = decode(model, dev_seqs, dev_docs)
        if semi_model is not None:
            semicrf.attach_extra(semi_model, decs, dev_docs, cfg, mean, scale)
        if decoder is None:
            thresholds, rule_table = tune_decoding(dev_docs, decs, dev_pairs, dev_gold, open_cells)
        pred = [alignments_from(doc, dec, thresholds, decoder) for doc, dec in zip(dev_docs, decs, strict=True)]
        dev_metrics = score_docs(dev_pairs, dev_gold, pred, open_cells)
        if decoder is not None:
            from alignment_engine.gold import gold_paragraph_links

            links = predicted_paragraph_links(dev_docs, decs, decoder)
            dev_metrics["paragraphs"] = paragraph_prf(links, gold_paragraph_links(dev_pairs, dev_gold))
        if cfg.semantic:
            dev_metrics["semantic_precision"] = dev_precision
        timings["dev_s"] = time.perf_counter() - t0
        run.finish("dev")
    if held_out is not None:
        dev_metrics, extra["refit"] = held_out
    timings["total_s"] = time.perf_counter() - t_start
    out = model_store.save(
        out_dir, model=model, encoder=encoder, config=cfg, normalisation=norm, thresholds=thresholds,
        dev_metrics=dev_metrics, decoder=decoder, semi_model=semi_model,
        extra={
            "seed": seed, "device": str(dev), "timings": {k: round(v, 2) for k, v in timings.items()},
            "data": {"train_pairs": len(train_pairs), "train_gold_pairs": len(train_gold),
                     "dev_pairs": len(dev_pairs or []), "dev_gold_pairs": len(dev_gold or []),
                     "train_cells": counters.get("cells", 0), "train_partial_pairs": n_partial, "train_encoder_pairs": counters.get("encoder_pairs", 0),
                     "encoder_examples": enc_stats.get("examples", 0)},
            "encoder": enc_stats, "crf": crf_stats, "dev_rules": rule_table,
            "environment": model_store.environment(), **semantic_encoder(cfg), **extra,
        },
    )
    if cache:
        import json

        (Path(out) / "encoder_scores.json").write_text(
            json.dumps([[a, b, round(v, 6)] for (a, b), v in cache.items()], ensure_ascii=False), encoding="utf-8")
    run.finish("save")
    log(f"model written to {out}")
    return out


def semantic_encoder(cfg: CRFConfig) -> dict[str, str]:
    """``model.json``'s record of the sentence encoder behind the semantic channels (none without them)."""
    if not cfg.semantic:
        return {}
    from alignment_engine.semantic import ENCODER_NAME

    if cfg.semantic_precision == "int8":
        return {"semantic_encoder": f"{ENCODER_NAME}; its layers in int8 through ONNX Runtime (e5_int8)"}
    return {"semantic_encoder": ENCODER_NAME}


def encoder_examples(pairs: Sequence[DocPair], gold: Sequence[Alignment], cfg: CRFConfig, seed: int,
                     unlabelled: Mapping[str, Iterable[tuple[str, str]]] | None = None,
                     ) -> list[tuple[str, str, int]]:
    """Labeled sentence pairs for fine-tuning: every gold pair plus sampled negatives.

    Negative sampling (keeps CPU training practical): for each gold positive, ``encoder_negatives``
    negatives from the same document, two thirds hard (the non-gold cells of the positive's row
    and column with the highest C3G similarity) and one third uniformly random cells.  Labels:
    1 = aligned (2 = partialAligned with ``encoder_labels=3``), 0 = not aligned. A cell of
    ``unlabelled`` (pair id -> (simple id, complex id) of a partially labelled pair) is never drawn as a
    negative: nobody knows it is not aligned.
    """
    from alignment_engine.similarity import c3g

    rng = np.random.default_rng(seed)
    by_pair: dict[str, list[Alignment]] = defaultdict(list)
    for a in gold:
        if a.is_positive:
            by_pair[a.pair_id].append(a)
    out: list[tuple[str, str, int]] = []
    n_neg = cfg.encoder_negatives
    three = cfg.encoder_labels == 3
    for pair in pairs:
        rows = by_pair.get(pair.pair_id, [])
        if not rows:
            continue
        simple, complex_ = pair.simple_sentences(), pair.complex_sentences()
        sim = c3g(simple, complex_)
        goldm = np.zeros(sim.shape, dtype=bool)
        for i, j, a in gold_cells(pair, rows):
            goldm[i, j] = True
            out.append((simple[i], complex_[j], 2 if three and a.label == "partialAligned" else 1))
        # never a negative: the positives and the cells nobody labelled (1 and 0 of the known matrix)
        skip = known_matrix(pair, rows, (unlabelled or {}).get(pair.pair_id, ())) >= 0
        for i, j in zip(*np.nonzero(goldm), strict=True):
            row = np.where(skip[i], -np.inf, sim[i])
            col = np.where(skip[:, j], -np.inf, sim[:, j])
            hard = [(int(i), int(k)) for k in np.argsort(-row)[: n_neg] if np.isfinite(row[k])]
            hard += [(int(k), int(j)) for k in np.argsort(-col)[: n_neg] if np.isfinite(col[k])]
            rng.shuffle(hard)  # type: ignore[arg-type]
            n_hard = (2 * n_neg + 2) // 3
            chosen = hard[:n_hard]
            for _ in range(n_neg - len(chosen)):
                ri, ci = int(rng.integers(sim.shape[0])), int(rng.integers(sim.shape[1]))
                if not skip[ri, ci]:
                    chosen.append((ri, ci))
            out.extend((simple[ri], complex_[ci], 0) for ri, ci in chosen)
    order = rng.permutation(len(out))
    return [out[int(k)] for k in order]


def _logger(progress: object) -> Callable[[str], None]:
    import sys

    def log(msg: str) -> None:
        if callable(progress):
            try:
                progress(msg)  # type: ignore[call-arg]
                return
            except TypeError:
                pass
        print(f"[train] {msg}", file=sys.stderr, flush=True)

    return log
