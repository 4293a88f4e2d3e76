"""Partial labels (a selective labeling job): unlabelled candidates are marginalised out in CRF training.

A document pair whose labels are partial has a *known* matrix (1 labelled positive, 0 unlabelled,
-1 not aligned). Its sequences carry label sets: a step with a labelled positive must take one of
its labelled positives, any other step null or an unlabelled cell, never a labelled negative. A
complete pair trains exactly as before.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from alignment_engine import crf
from alignment_engine.crf_aligner import (
    BiCRF,
    build_sequences,
    collate,
    config_feature_names,
    decode,
    fit_normalisation,
    partial_gold_sets,
    prepare_docs,
    sequence_log_likelihood,
    train_crf,
)
from alignment_engine.crf_config import CRFConfig
from alignment_engine.gold import gold_matrix, known_matrix
from alignment_engine.training import train_model
from alignment_engine.types import Alignment, DocPair

CFG = CRFConfig(emission="lexical", decoder="rule", crf_epochs=2, hidden=8, transition_hidden=4)


def _pair() -> DocPair:
    return DocPair("p", [["The cat sat on the mat today.", "It was very happy there.", "Dogs bark loudly."]],
                   [["The cat sat on the mat.", "It was happy.", "Dogs bark."]])


def _setup() -> tuple[DocPair, list[str], list[str], np.ndarray]:
    pair = _pair()
    s, c = pair.simple_ids(), pair.complex_ids()
    # simple 0 -> complex 0 labelled aligned; simple 1: (1, 1) and (1, 2) unlabelled candidates,
    # (1, 0) labelled not aligned; simple 2: nothing labelled, (2, 2) an unlabelled candidate
    known = known_matrix(pair, [Alignment("aligned", s[0], c[0])], [(s[1], c[1]), (s[1], c[2]), (s[2], c[2]),
                                                                     (s[0], c[0])])
    return pair, s, c, known


def test_known_matrix_marks_positives_unlabelled_cells_and_negatives() -> None:
    pair, s, c, known = _setup()
    assert known.tolist() == [[1, -1, -1], [-1, 0, 0], [-1, -1, 0]]  # a positive listed as unlabelled stays 1
    # no unlabelled cells: the complete gold matrix with -1 for not aligned
    full = known_matrix(pair, [Alignment("aligned", s[0], c[0])], [])
    assert ((full == 1) == (gold_matrix(pair, [(s[0], c[0])]) == 1)).all() and (full[full != 1] == -1).all()


def test_partial_sequences_open_the_unlabelled_cells_only() -> None:
    pair, s, c, known = _setup()
    docs = prepare_docs([pair], CFG, None)
    norm = fit_normalisation(docs, CFG)
    mean, scale = np.asarray(norm["mean"], np.float32), np.asarray(norm["scale"], np.float32)
    s2c = build_sequences(docs, "s2c", CFG, mean, scale, known=[known])
    assert len(s2c) == 1 and s2c[0].partial
    # columns: label 0 = null, then complex 0, 1, 2
    assert s2c[0].gold_sets is not None
    assert s2c[0].gold_sets.tolist() == [
        [False, True, False, False],  # a labelled positive: only it
        [True, False, True, True],  # null or an unlabelled cell, never the labelled negative (1, 0)
        [True, False, False, True],  # nothing labelled: null or its one unlabelled candidate
    ]
    assert s2c[0].gold is not None and s2c[0].gold.tolist() == [1, 0, 0]
    c2s = build_sequences(docs, "c2s", CFG, mean, scale, known=[known])
    assert c2s[0].partial and c2s[0].gold_sets is not None
    assert c2s[0].gold_sets.tolist() == [
        [False, True, False, False],  # complex 0 -> simple 0, labelled
        [True, False, True, False],  # complex 1: null or simple 1 (unlabelled)
        [True, False, True, True],  # complex 2: null, simple 1 or simple 2 (both unlabelled)
    ]
    # the same document with complete labels: the gold matrix's sets, not partial
    complete = build_sequences(docs, "s2c", CFG, mean, scale, gold=[(known == 1).astype(np.int64)])
    assert not complete[0].partial and complete[0].gold_sets is not None
    assert complete[0].gold_sets.tolist() == [[False, True, False, False], [True, False, False, False],
                                              [True, False, False, False]]


def test_an_impossible_step_falls_back_to_null() -> None:
    sets = partial_gold_sets(np.array([[1, 0]], dtype=np.int8), np.array([[False, True]]))
    assert sets.tolist() == [[True, False, False]]  # the positive is not an allowed label: null, not an empty set


def test_partial_sequences_are_marginalised_and_complete_ones_unchanged() -> None:
    pair, _s, _c, known = _setup()
    docs = prepare_docs([pair, pair], CFG, None)
    norm = fit_normalisation(docs, CFG)
    mean, scale = np.asarray(norm["mean"], np.float32), np.asarray(norm["scale"], np.float32)
    gold = [(known == 1).astype(np.int64)] * 2
    seqs = build_sequences(docs, "s2c", CFG, mean, scale, gold=gold, known=[known, None])
    assert [q.partial for q in seqs] == [True, False]
    torch.manual_seed(0)
    model = BiCRF(len(config_feature_names(CFG)), 8, 4)
    batch = collate(seqs, torch.device("cpu"))
    assert batch.partial.tolist() == [True, False]
    emis, trans, start = model.s2c(batch)
    ll = sequence_log_likelihood(emis, trans, start, batch, "best")
    best = crf.log_likelihood(emis, trans, batch.gold, start=start, step_mask=batch.step_mask,
                              label_mask=batch.label_mask)
    constrained = crf.log_partition(emis, trans, start=start, step_mask=batch.step_mask,
                                    label_mask=batch.gold_sets & batch.label_mask, require_null=False) - \
        crf.log_partition(emis, trans, start=start, step_mask=batch.step_mask, label_mask=batch.label_mask)
    assert torch.allclose(ll[0], constrained[0]) and torch.equal(ll[1], best[1])  # complete: as before
    # marginalising: the labelled path (unlabelled cells read as null) is one of the paths summed over
    assert float(ll[0].detach()) > float(best[0].detach()) + 1e-4
    # a batch of complete sequences only takes the old path exactly
    only_complete = collate([seqs[1]], torch.device("cpu"))
    e2, t2, s2 = model.s2c(only_complete)
    assert torch.equal(sequence_log_likelihood(e2, t2, s2, only_complete, "best"),
                       crf.log_likelihood(e2, t2, only_complete.gold, start=s2, step_mask=only_complete.step_mask,
                                          label_mask=only_complete.label_mask))


def test_train_model_marks_the_unlabelled_pairs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pair = _pair()
    other = DocPair("q", [["Rain fell over the city for days.", "People stayed inside their houses."]],
                    [["It rained for days.", "People stayed inside."]])
    s, c = pair.simple_ids(), pair.complex_ids()
    gold = [Alignment("aligned", s[0], c[0]), Alignment("notAligned", s[1], c[0]),
            Alignment("aligned", other.simple_ids()[0], other.complex_ids()[0]),
            Alignment("aligned", other.simple_ids()[1], other.complex_ids()[1])]
    full = train_model([pair, other], gold, out_dir=tmp_path / "full", seed=1, device="cpu", config=CFG)
    part = train_model([pair, other], gold, out_dir=tmp_path / "part", seed=1, device="cpu", config=CFG,
                       unlabelled={"p": {(s[1], c[1]), (s[2], c[2])}})
    meta_full = json.loads((full / "model.json").read_text())
    meta_part = json.loads((part / "model.json").read_text())
    assert meta_full["data"]["train_partial_pairs"] == 0 and meta_part["data"]["train_partial_pairs"] == 1
    assert meta_full["crf"]["loss"] != meta_part["crf"]["loss"]  # the unlabelled cells changed the target


def test_a_paragraph_pair_with_an_unlabelled_cell_and_no_positive_is_unknown() -> None:
    from alignment_engine.gold import known_paragraphs

    pair = DocPair("q", [["c0", "c1"], ["c2"]], [["s0"], ["s1", "s2"]])
    s, c = pair.simple_ids(), pair.complex_ids()
    # simple paragraph 0 (s0) -> complex paragraph 0 labelled; s1/c2 an unlabelled candidate; s2/c0 unlabelled
    # but simple paragraph 1 / complex paragraph 0 holds no positive
    known = known_matrix(pair, [Alignment("aligned", s[0], c[0])], [(s[1], c[2]), (s[2], c[0]), (s[0], c[1])])
    assert known_paragraphs(pair, known).tolist() == [
        [True, True],  # linked (a positive, even beside an unlabelled cell); fully labelled, not linked
        [False, False],  # both hold an unlabelled cell and no positive: unknown
    ]
    assert known_paragraphs(pair, known_matrix(pair, [Alignment("aligned", s[0], c[0])], [])).all()


def test_encoder_fine_tuning_never_draws_an_unlabelled_cell_as_a_negative() -> None:
    from alignment_engine.training import encoder_examples

    pair = _pair()
    s, c = pair.simple_ids(), pair.complex_ids()
    gold = [Alignment("aligned", s[0], c[0])]
    cfg = CRFConfig(encoder_negatives=4, encoder_labels=2)
    texts = pair.texts()
    open_cells = [(s[i], c[j]) for i in range(3) for j in range(3) if (i, j) != (0, 0) and (i == 0 or j == 0)]
    for seed in range(5):
        every = encoder_examples([pair], gold, cfg, seed)
        assert {(a, b) for a, b, y in every if y == 0} & {(texts[x], texts[y]) for x, y in open_cells}
        partial = encoder_examples([pair], gold, cfg, seed, {"p": open_cells})
        negatives = {(a, b) for a, b, y in partial if y == 0}
        assert not negatives & {(texts[x], texts[y]) for x, y in open_cells}
        assert sum(y == 1 for *_, y in partial) == 1


def test_the_learned_decoder_trains_on_partial_labels(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The default decoder's path with partial labels: its paragraph classifier learns only from
    paragraph pairs whose label is known (here one per partial document is unknown: an unlabelled
    cell and no positive), and the run records its cross-validation."""
    from alignment_engine import training

    docs = [DocPair(f"d{k}", [[f"Story {k} begins with a long sentence.", "A second complex sentence follows."],
                              [f"Paragraph two of {k} says more things.", "It ends with detail."]],
                    [[f"Story {k} begins.", "A second sentence."], [f"Paragraph two of {k} says more.", "It ends."]])
            for k in range(4)]
    gold = [Alignment("aligned", d.simple_ids()[i], d.complex_ids()[i]) for d in docs for i in range(4) if i != 3]
    cfg = CRFConfig(emission="lexical", decoder="learned", cv_folds=2, crf_epochs=2, hidden=8, transition_hidden=4,
                    members=1)
    # (s3, c3) lies in the linked paragraph pair (1, 1); (s0, c3) in (0, 1), which holds no positive: unknown
    unlabelled = {d.pair_id: {(d.simple_ids()[3], d.complex_ids()[3]), (d.simple_ids()[0], d.complex_ids()[3])}
                  for d in docs[:2]}
    rows: list[int] = []
    real_fit = training.fit_classifier

    def counting_fit(xs, ys, seed):  # type: ignore[no-untyped-def]
        rows.append(sum(len(y) for y in ys))
        return real_fit(xs, ys, seed)

    monkeypatch.setattr(training, "fit_classifier", counting_fit)
    train_model(docs, gold, out_dir=tmp_path / "full", seed=0, device="cpu", config=cfg)
    full_paragraph_rows = rows[2]  # 2 folds, then the paragraph classifier on every train document
    rows.clear()
    out = train_model(docs, gold, out_dir=tmp_path / "m", seed=0, device="cpu", config=cfg, unlabelled=unlabelled)
    assert full_paragraph_rows == 4 * 4 and rows[2] == full_paragraph_rows - 2
    meta = json.loads((out / "model.json").read_text())
    assert meta["data"]["train_partial_pairs"] == 2
    assert meta["cross_validation"]["folds"] == 2 and meta["cross_validation"]["paragraph"]


def _objective(model: BiCRF, seqs: dict, cfg: CRFConfig) -> float:
    """The training objective of ``train_crf`` (negative log-likelihood per step, both directions)."""
    total = 0.0
    with torch.no_grad():
        for d, items in seqs.items():
            batch = collate(items, torch.device("cpu"))
            emis, trans, start = model.direction(d)(batch)
            ll = sequence_log_likelihood(emis, trans, start, batch, cfg.gold_target)
            total += float(-ll.sum()) / int(batch.step_mask.sum())
    return total


def test_lbfgs_training_converges_to_the_same_model_from_different_initial_weights() -> None:
    """The simulation's training noise: Adam's few minibatch epochs leave a model that depends on its initial
    weights; full-batch L-BFGS (``crf_optimizer="lbfgs"``) drives the objective to the same minimum from
    different initial weights, and lower than Adam gets."""
    pair, _s, _c, known = _setup()
    other = DocPair("q", [["Rain fell over the city for days.", "People stayed inside their houses.", "Then sun."]],
                    [["It rained for days.", "People stayed inside.", "The sun came out again."]])
    g_other = np.eye(3, dtype=np.int64)
    docs = prepare_docs([pair, other], CFG, None)
    norm = fit_normalisation(docs, CFG)
    mean, scale = np.asarray(norm["mean"], np.float32), np.asarray(norm["scale"], np.float32)
    n_feat = len(config_feature_names(CFG))
    results: dict[str, list[tuple[float, np.ndarray]]] = {}
    for name, cfg in (("adam", CFG.with_options(crf_epochs=3, gold_target="any")),
                      ("lbfgs", CFG.with_options(crf_epochs=5, gold_target="any", crf_optimizer="lbfgs"))):
        seqs = {d: build_sequences(docs, d, cfg, mean, scale, gold=[(known == 1).astype(np.int64), g_other],
                                   known=[known, None]) for d in ("s2c",)}
        for init in (1, 2):
            torch.manual_seed(init)
            model = BiCRF(n_feat, 8, 4)
            messages: list[str] = []
            stats = train_crf(model, seqs, cfg, seed=0, progress=messages.append)
            assert len(messages) == cfg.crf_epochs and len(stats["loss"]) == cfg.crf_epochs  # one per epoch
            model.eval()
            dec = decode(model, {"s2c": build_sequences(docs, "s2c", cfg, mean, scale)}, docs)
            results.setdefault(name, []).append((_objective(model, seqs, cfg), dec[1].forward_marginals))
        if name == "lbfgs":
            assert stats["evaluations"] > cfg.crf_epochs  # line-search evaluations counted
    (adam1, _), (adam2, _) = results["adam"]
    (lb1, marg1), (lb2, marg2) = results["lbfgs"]
    assert abs(lb1 - lb2) < 1e-3 < abs(adam1 - adam2)  # the same minimum from both inits; Adam's differ
    assert max(lb1, lb2) < min(adam1, adam2)  # and lower than Adam's 3 epochs
    assert np.abs(marg1 - marg2).max() < 0.05  # the same decisions' probabilities


def test_unknown_crf_optimizer_is_rejected() -> None:
    with pytest.raises(ValueError, match="crf_optimizer"):
        CRFConfig(crf_optimizer="sgd")


def test_a_partially_labelled_dev_pair_stays_partial_when_the_model_is_refitted_on_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The refit (train + dev) trains on a partially labelled dev pair as a partial train pair: its unlabelled
    cells are marginalised out there too, not read as not aligned."""
    docs = [DocPair(f"d{k}", [[f"Story {k} begins with a long sentence.", "A second complex sentence follows."]],
                    [[f"Story {k} begins.", "A second sentence."]]) for k in range(5)]
    gold = [Alignment("aligned", d.simple_ids()[i], d.complex_ids()[i]) for d in docs for i in range(2)]
    dev = docs[4]
    dev_gold = [a for a in gold if a.pair_id == "d4"][:1]  # the second simple sentence of d4 is unlabelled
    train_gold = [a for a in gold if a.pair_id != "d4"]
    unlabelled = {"d4": {(dev.simple_ids()[1], dev.complex_ids()[1])}}
    cfg = CRFConfig(emission="lexical", decoder="learned", cv_folds=2, crf_epochs=2, hidden=8, transition_hidden=4,
                    members=1)
    part = train_model(docs[:4], train_gold, [dev], dev_gold, out_dir=tmp_path / "part", seed=0, device="cpu",
                       config=cfg, unlabelled=unlabelled)
    full = train_model(docs[:4], train_gold, [dev], dev_gold, out_dir=tmp_path / "full", seed=0, device="cpu",
                       config=cfg)
    meta_part, meta_full = (json.loads((d / "model.json").read_text()) for d in (part, full))
    assert meta_part["refit"]["final_model"] == "train + dev" and meta_part["data"]["train_pairs"] == 5
    assert meta_part["data"]["train_partial_pairs"] == 1 and meta_full["data"]["train_partial_pairs"] == 0
    assert meta_part["crf"]["loss"] != meta_full["crf"]["loss"]  # the unlabelled cell changed the refit's target
