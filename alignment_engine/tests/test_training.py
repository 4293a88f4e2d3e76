"""Training of the neural CRF aligner: determinism, model directories, the aligner on edge cases."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

import numpy as np
import pytest

from alignment_engine import model_store
from alignment_engine.crf_aligner import CRFAligner, Decoded, combine, paragraph_allowed, partial_labels
from alignment_engine.crf_config import CRFConfig
from alignment_engine.errors import ModelError
from alignment_engine.training import encoder_examples, score_docs, train_model
from alignment_engine.types import Alignment, DocPair


class TrainingOptions(TypedDict):
    """The extra ``**config`` options of ``train_model`` that the fast test models use."""

    emission: str
    crf_epochs: int
    hidden: int
    transition_hidden: int
    members: int


#: single models (the default's seed ensemble has its own tests, test_ensembles.py)
FAST: TrainingOptions = {"emission": "lexical", "crf_epochs": 3, "hidden": 8, "transition_hidden": 4, "members": 1}


def _tiny() -> tuple[list[DocPair], list[Alignment]]:
    pairs = [
        DocPair("a", [["The cat sat on the mat today.", "It was very happy there."], ["Dogs bark loudly at night."]],
                [["The cat sat on the mat.", "It was happy."], ["Dogs bark at night."]]),
        DocPair("b", [["Rain fell over the city for days.", "People stayed inside their houses."]],
                [["It rained for days.", "People stayed inside.", "New sentence without source."]]),
    ]
    gold = [
        Alignment("aligned", "a-0-0-0", "a-1-0-0"), Alignment("aligned", "a-0-0-1", "a-1-0-1"),
        Alignment("aligned", "a-0-1-0", "a-1-1-0"), Alignment("aligned", "b-0-0-0", "b-1-0-0"),
        Alignment("aligned", "b-0-0-1", "b-1-0-1"),
    ]
    return pairs, gold


def test_training_is_deterministic_for_a_seed_and_writes_a_model_dir(tmp_path):
    import platform
    from importlib import metadata

    import torch

    pairs, gold = _tiny()
    a = train_model(pairs, gold, pairs, gold, out_dir=tmp_path / "a", seed=3, device="cpu", **FAST)
    b = train_model(pairs, gold, pairs, gold, out_dir=tmp_path / "b", seed=3, device="cpu", **FAST)
    meta_a = json.loads((a / "model.json").read_text())
    meta_b = json.loads((b / "model.json").read_text())
    assert meta_a["format_version"] == model_store.FORMAT_VERSION
    assert meta_a["crf"]["loss"] == meta_b["crf"]["loss"]
    assert meta_a["thresholds"] == meta_b["thresholds"]
    assert meta_a["data"]["train_pairs"] == 2 and meta_a["data"]["train_gold_pairs"] == 5
    assert "task1" in meta_a["dev_metrics"]
    env = meta_a["environment"]  # what trained it: a researcher comparing models from two machines reads this
    assert env == meta_b["environment"]
    assert env["packages"]["torch"] == metadata.version("torch") and env["packages"]["scikit-learn"]
    assert env["python"] == platform.python_version() and env["crf_dtype"] == "float64"
    assert env["torch_threads"] == 1 and env["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    out_a = CRFAligner.load(a, "cpu").align(pairs)
    out_b = CRFAligner.load(b, "cpu").align(pairs)
    assert [[(r.simple_id, r.complex_id, r.label) for r in rows] for rows in out_a] == \
        [[(r.simple_id, r.complex_id, r.label) for r in rows] for rows in out_b]


def test_aligner_handles_empty_and_one_sentence_documents(tmp_path):
    pairs, gold = _tiny()
    model_dir = train_model(pairs, gold, out_dir=tmp_path / "m", seed=0, device="cpu", **FAST)
    aligner = CRFAligner.load(model_dir, "cpu")
    edge = [DocPair("e", [], []), DocPair("o", [["One sentence only."]], [["One sentence only."]]),
            DocPair("s", [["A complex sentence here."]], [])]
    calls = []
    out = aligner.align(edge, progress=lambda done, total: calls.append((done, total)))
    assert len(out) == 3 and out[0] == [] and out[2] == []
    assert all(r.label in ("aligned", "partialAligned") for r in out[1])
    assert calls and calls[-1] == (3, 3)


def test_model_store_rejects_unknown_format_version(tmp_path):
    pairs, gold = _tiny()
    model_dir = train_model(pairs, gold, out_dir=tmp_path / "m", seed=0, device="cpu", **FAST)
    meta = json.loads((model_dir / "model.json").read_text())
    meta["format_version"] = 999
    (model_dir / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelError, match="format_version 999"):
        CRFAligner.load(model_dir, "cpu")
    with pytest.raises(ModelError, match="no such model directory"):
        model_store.read_meta(tmp_path / "missing")


def test_unknown_option_is_rejected(tmp_path):
    pairs, gold = _tiny()
    with pytest.raises(ValueError, match="unknown training option"):
        train_model(pairs, gold, out_dir=tmp_path, bogus=1)


def test_combination_rules_recover_merges():
    dec = Decoded(forward=np.array([[True, False], [False, True]]), reverse=np.array([[True, True], [False, True]]),
                  forward_marginals=np.array([[0.9, 0.1], [0.0, 0.8]], dtype=np.float32),
                  reverse_marginals=np.array([[0.8, 0.7], [0.0, 0.9]], dtype=np.float32))
    # simple 0 is a merge of complex 0 and 1: only the reverse direction can express it
    assert combine(dec, "forward").sum() == 2
    assert combine(dec, "union")[0, 1]
    assert not combine(dec, "intersection")[0, 1]
    assert combine(dec, "marginal_max", 0.6)[0, 1]
    assert not combine(dec, "marginal_mean", 0.6)[0, 1]
    with pytest.raises(ValueError, match="combine must be"):
        combine(dec, "nope")


def test_partial_rule_marks_groups_and_length_mismatch():
    pred = np.array([[True, True], [False, False]])
    lex = np.zeros((2, 2, 14), dtype=np.float32)
    lex[:, :, 5] = 1.0  # len_ratio channel of lexical_feature_names()
    assert partial_labels(pred, lex, {"group": True}).sum() == 2
    assert partial_labels(pred, lex, {"group": False, "min_len_ratio": 0.0}).sum() == 0


def test_paragraph_allowed_follows_links():
    pair = DocPair("p", [["c0", "c1"], ["c2"]], [["s0"], ["s1", "s2"]])
    allowed = paragraph_allowed(pair, [(0, 0, 1.0), (1, 1, 1.0)])
    assert allowed.tolist() == [[True, True, False], [False, False, True], [False, False, True]]


def test_encoder_examples_sample_negatives_per_positive():
    pairs, gold = _tiny()
    ex = encoder_examples(pairs, gold, CRFConfig(encoder_negatives=3, encoder_labels=2), seed=0)
    assert sum(1 for *_, y in ex if y == 1) == 5
    assert 5 <= sum(1 for *_, y in ex if y == 0) <= 15


def test_training_scores_with_evaluate_and_leaves_identical_strings_out():
    pair = DocPair("x", [["Same.", "Other complex."]], [["Same.", "Other simple."]])
    other = Alignment("aligned", "y-0-0-0", "y-1-0-0")  # another document's gold is ignored
    gold = [Alignment("aligned", "x-0-0-0", "x-1-0-0"), Alignment("aligned", "x-0-0-1", "x-1-0-1"), other]
    pred = [[Alignment("aligned", "x-0-0-0", "x-1-0-0"), Alignment("partialAligned", "x-0-0-1", "x-1-0-1")]]
    res = score_docs([pair], gold, pred)
    assert res["task1"]["n_gold"] == 1 and res["task1"]["f1"] == 1.0
    assert res["task2"]["f1"] == 0.0


def test_predictions_on_unlabelled_cells_are_neither_right_nor_wrong():
    """A partially labelled pair: a prediction on a candidate nobody labelled is left out of the score
    (the registry's and model.json's dev figures both go through here)."""
    pair = DocPair("x", [["Cats sleep.", "Dogs bark loudly."]], [["Cats sleep a lot.", "Dogs bark."]])
    gold = [Alignment("aligned", "x-0-0-0", "x-1-0-0")]
    pred = [[Alignment("aligned", "x-0-0-0", "x-1-0-0"), Alignment("aligned", "x-0-0-1", "x-1-0-1")]]
    assert score_docs([pair], gold, pred)["task1"]["precision"] == 0.5  # the open cell read as a negative
    res = score_docs([pair], gold, pred, {"x": [("x-0-0-1", "x-1-0-1")], "other": [("o-0-0-0", "o-1-0-0")]})
    assert res["task1"]["precision"] == 1.0 and res["task1"]["recall"] == 1.0


def test_model_json_dev_metrics_come_from_evaluate(tmp_path, monkeypatch):
    """model.json's dev figures are what ``evaluate`` (the registry's and the CLI's scorer) gives for the
    model's own dev predictions, embedded as `align` embeds them by default."""
    from alignment_engine import e5_int8, semantic
    from alignment_engine.evaluation import evaluate

    default = semantic.alignment_precision("float32", "cpu")
    assert default == ("int8" if e5_int8.available() else "float32")
    encoder = semantic.shared_encoder(default)
    encoder.clear()
    monkeypatch.setattr(encoder, "store", None)  # the product's embedding store (pipeline.apps) may hold them
    pairs, gold = _tiny()
    model_dir = train_model(pairs, gold, pairs, gold, out_dir=tmp_path / "m", seed=1, device="cpu", **FAST)
    meta = json.loads((model_dir / "model.json").read_text())
    rows = [a for doc in CRFAligner.load(model_dir, "cpu").align(pairs) for a in doc]
    again = evaluate(gold, rows, pairs)
    assert meta["dev_metrics"]["task1"] == again["task1"]
    assert meta["dev_metrics"]["task2"] == again["task2"]
    # scored with the sentence encoder's precision `align` uses by default (int8 on a CPU with ONNX Runtime)
    assert meta["dev_metrics"]["semantic_precision"] == CRFAligner.load(model_dir, "cpu").semantic_precision == default
    assert pairs[0].simple_sentences()[0] in encoder._cache  # the dev pairs were embedded in that precision


def test_config_is_typed_and_rejects_bad_values():
    assert CRFConfig().with_options(crf_epochs=2).crf_epochs == 2
    with pytest.raises(ValueError, match="emission must be one of"):
        CRFConfig(emission="bogus")
    with pytest.raises(ValueError, match="unknown training option"):
        CRFConfig().with_options(bogus=1)
    with pytest.raises(ValueError, match="semantic_precision must be one of float32, int8"):
        CRFConfig(semantic_precision="bfloat16")  # bf16 is fast only on some CPUs: never what a model is trained in
    assert CRFConfig.from_dict(CRFConfig(hidden=4).to_dict()) == CRFConfig(hidden=4)


def test_a_stored_config_without_a_later_option_reads_it_as_off_whatever_the_default():
    """A model.json written before semicrf / span_emission / decoder_rounds existed was trained without
    them: its config reads them as off, not as today's defaults (which may be on)."""
    from alignment_engine.crf_config import ADDED_LATER

    old = {k: v for k, v in CRFConfig(semicrf=True, decoder_rounds=2, span_emission=True).to_dict().items()
           if k not in ADDED_LATER}
    cfg = CRFConfig.from_dict(old)
    assert (cfg.semicrf, cfg.span_emission, cfg.decoder_rounds, cfg.semantic) == (False, False, 1, False)
    assert CRFConfig.from_dict({**old, "semantic": True}).semantic_precision == "float32"
    assert CRFConfig().semantic  # today's default, not what a model written before it was trained with
    full = CRFConfig(semicrf=True, decoder_rounds=2).to_dict()
    assert CRFConfig.from_dict(full) == CRFConfig(semicrf=True, decoder_rounds=2)


def test_format_1_models_still_load_with_the_options_they_were_trained_with(tmp_path):
    """A model.json written before the learned decoder (format 1: no context features, a dev-tuned
    combination rule, config without the new options) loads and aligns as it did."""
    pairs, gold = _tiny()
    model_dir = train_model(pairs, gold, pairs, gold, out_dir=tmp_path / "m", seed=0, device="cpu",
                            context_features=False, decoder="rule", **FAST)
    before = CRFAligner.load(model_dir, "cpu").align(pairs)
    meta = json.loads((model_dir / "model.json").read_text())
    meta["format_version"] = 1
    for key in ("context_features", "decoder", "cv_folds", "paragraph_step", "decoder_rounds"):
        del meta["config"][key]
    meta["config"]["paragraph_tuning"] = None  # format 1 kept this result in the config
    (model_dir / "model.json").write_text(json.dumps(meta))
    aligner = CRFAligner.load(model_dir, "cpu")
    assert not aligner.config.context_features and aligner.config.decoder == "rule"
    assert aligner.align(pairs) == before


def test_learned_model_needs_its_decoder_file(tmp_path):
    pairs, gold = _tiny()
    model_dir = train_model(pairs, gold, out_dir=tmp_path / "m", seed=0, device="cpu", **FAST)
    assert json.loads((model_dir / "model.json").read_text())["thresholds"]["combine"] == "learned"
    (model_dir / model_store.DECODER_FILE).unlink()
    with pytest.raises(ModelError, match="missing decoder.pkl"):
        CRFAligner.load(model_dir, "cpu")


def _progress_recorder() -> tuple[list[tuple[int, int]], list[str], Callable[..., None]]:
    """A training ``progress`` callback and what it heard: the ``(done, total)`` counts and the log lines."""
    counts: list[tuple[int, int]] = []
    lines: list[str] = []

    def progress(*args: object) -> None:
        if len(args) == 2:
            counts.append((int(args[0]), int(args[1])))  # type: ignore[call-overload]
        else:
            lines.append(str(args[0]))

    return counts, lines, progress


def test_training_reports_progress_of_the_whole_run(tmp_path):
    """One (done, total) plan for the run: features, every cross-fitting epoch, decoder, final CRF, dev, save."""
    pairs, gold = _tiny()
    counts, lines, progress = _progress_recorder()

    train_model(pairs, gold, pairs, gold, out_dir=tmp_path / "m", seed=0, device="cpu", progress=progress,
                semicrf_epochs=2, **FAST)
    epochs = FAST["crf_epochs"]
    # features, 2 folds x epochs, the semi-Markov CRF's (2 folds + final) x 2 epochs, decoder, final CRF, dev, save
    total = 1 + 2 * epochs + 3 * 2 + 1 + epochs + 1 + 1
    assert {t for _, t in counts} == {total}
    assert [d for d, _ in counts] == list(range(1, total + 1))  # every step once, in order
    assert sum(line.startswith("cross-fitting fold 2/2: crf epoch") for line in lines) == epochs
    assert sum(line.startswith("final CRF: crf epoch") for line in lines) == epochs
    # a callback that only takes messages still works
    train_model(pairs, gold, out_dir=tmp_path / "n", seed=0, device="cpu", progress=lambda msg: lines.append(msg),
                **FAST)


def test_span_options_train_a_model_that_aligns_as_trained(tmp_path):
    """span_features and span_widths reach the decoder and model.json; the loaded aligner uses them."""
    pairs, gold = _tiny()
    out = train_model(pairs, gold, pairs, gold, out_dir=tmp_path / "s", seed=0, device="cpu",
                      span_features=True, span_widths=(2,), **FAST)
    meta = json.loads((out / "model.json").read_text())
    assert meta["config"]["span_features"] is True and meta["config"]["span_widths"] == [2]
    assert meta["thresholds"]["spans"] in (0, 2)
    assert any("+spans2@" in k for k in meta["cross_validation"]["rules"])
    aligner = CRFAligner.load(out, "cpu")
    assert aligner.decoder is not None and aligner.decoder.span_features is True
    rows = aligner.align(pairs)
    assert [(r.simple_id, r.complex_id) for r in rows[0] if r.label != "notAligned"]


def test_semicrf_and_span_emission_train_a_model_that_aligns_as_trained(tmp_path):
    """semicrf=true: the semi-Markov CRF is cross-fitted, saved and loaded, and its channels reach the
    decoder (the cell rows are wider); span_emission widens the CRF's features. Same rows after reload."""
    pairs, gold = _tiny()
    seen: list[tuple] = []
    out = train_model(pairs, gold, pairs, gold, out_dir=tmp_path / "h", seed=0, device="cpu", semicrf=True,
                      span_emission=True, span_emission_widths=(2, 2), cv_folds=2, semicrf_epochs=2,
                      progress=lambda *a: seen.append(a), **FAST)
    counts = [a for a in seen if len(a) == 2]
    assert counts[-1][0] == counts[-1][1] and [c for c, _ in counts] == sorted(c for c, _ in counts)
    assert sum("semi-Markov CRF" in str(a[0]) for a in seen if len(a) == 1) == 3 * 2  # 2 folds + final, 2 epochs
    meta = json.loads((out / "model.json").read_text())
    assert meta["config"]["semicrf"] is True and (out / "semicrf.pt").is_file()
    assert meta["timings"]["semicrf_s"] > 0
    aligner = CRFAligner.load(out, "cpu")
    assert aligner.semi_model is not None
    docs = aligner.prepare(pairs)
    decs = aligner.predict_docs(docs)
    assert all(d.extra is not None and d.extra.shape[:2] == doc.shape for d, doc in zip(decs, docs, strict=True))
    rows = aligner.align(pairs)
    again = CRFAligner.load(out, "cpu").align(pairs)
    assert [[(r.simple_id, r.complex_id, r.label) for r in doc] for doc in rows] == \
        [[(r.simple_id, r.complex_id, r.label) for r in doc] for doc in again]
    with pytest.raises(ValueError, match="semicrf=true needs decoder='learned'"):
        train_model(pairs, gold, out_dir=tmp_path / "r", device="cpu", semicrf=True, decoder="rule", **FAST)
    # the default semicrf=true is dropped by the rule decoder (it cannot read it), not refused
    rule = train_model(pairs, gold, pairs, gold, out_dir=tmp_path / "r2", device="cpu", decoder="rule", **FAST)
    rule_meta = json.loads((rule / "model.json").read_text())
    assert rule_meta["config"]["semicrf"] is False and not (rule / "semicrf.pt").exists()


def test_three_decoder_rounds_train_two_group_rounds_that_align_as_trained(tmp_path):
    """decoder_rounds=3: rounds 2 and 3 are fitted in turn (each over the previous round's out-of-fold
    probabilities), pickled as a list and applied in order; 1 and 2 rounds keep their old shapes. The
    loaded model scores what training measured with the model in memory."""
    pairs, gold = _tiny()
    shapes = {}
    for rounds in (1, 2, 3):
        out = train_model(pairs, gold, pairs, gold, out_dir=tmp_path / f"r{rounds}", seed=0, device="cpu",
                          decoder_rounds=rounds, cv_folds=2, **FAST)
        aligner = CRFAligner.load(out, "cpu")
        assert aligner.decoder is not None
        shapes[rounds] = aligner.decoder.group_model
        assert len(aligner.decoder.group_rounds()) == rounds - 1
        _assert_aligns_as_trained(out, aligner, pairs, gold)
    assert shapes[1] is None and not isinstance(shapes[2], list) and isinstance(shapes[3], list)


def _assert_aligns_as_trained(out, aligner, pairs, gold) -> None:  # type: ignore[no-untyped-def]
    """The loaded ``aligner`` gives the dev figures ``model.json`` recorded from the trained model."""
    from alignment_engine.evaluation import evaluate

    meta = json.loads((out / "model.json").read_text())
    again = evaluate(gold, [a for doc in aligner.align(pairs) for a in doc], pairs)
    assert meta["dev_metrics"]["task1"] == again["task1"]


def _synthetic(n_docs: int) -> tuple[list[DocPair], list[Alignment]]:
    """Seeded, deliberately ambiguous document pairs of one paragraph: a simple sentence keeps a few
    words of its complex one among new words, some complex sentences are dropped, and added simple
    sentences borrow words from a complex one they are not aligned to."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(120)]
    pairs, gold = [], []
    for d in range(n_docs):
        complex_ = [list(rng.choice(words, 9)) for _ in range(8)]
        simple, links = [], []
        for c, sent in enumerate(complex_):
            if rng.random() < 0.25:
                continue  # deleted
            kept = [str(w) for w in rng.choice(sent, int(rng.integers(2, 6)), replace=False)]
            simple.append(" ".join(kept + [str(w) for w in rng.choice(words, int(rng.integers(1, 5)))]) + ".")
            links.append((len(simple) - 1, c))
            if rng.random() < 0.3:  # added, with words of another sentence
                other = complex_[int(rng.integers(len(complex_)))]
                simple.append(" ".join([str(w) for w in rng.choice(other, 2)] + [str(w) for w in rng.choice(words, 4)]) + ".")
        pid = f"s{d}"
        pairs.append(DocPair(pid, [[" ".join(str(w) for w in sent) + "." for sent in complex_]], [simple]))
        gold += [Alignment("aligned", f"{pid}-0-0-{s_}", f"{pid}-1-0-{c}") for s_, c in links]
    return pairs, gold


class _Recorder:
    """A fitted classifier that keeps the rows it is asked about (to see what each round reads)."""

    def __init__(self, model: object) -> None:
        self.model = model
        self.inputs: list[np.ndarray] = []

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        self.inputs.append(x)
        return self.model.predict_proba(x)  # type: ignore[attr-defined, no-any-return]


def test_each_later_decoder_round_reads_the_previous_rounds_probabilities(tmp_path):
    """Round 3 sees the cell features round 2 saw plus group_features of round 2's probabilities, and
    its own probabilities are what the decoder returns."""
    import dataclasses

    from alignment_engine.crf_aligner import doc_cell_features, learned_scores_many
    from alignment_engine.stacking import GROUP_CHANNELS, group_features

    pairs, gold = _synthetic(14)  # enough cells for the trees to split (min_samples_leaf 20)
    out = train_model(pairs, gold, pairs, gold, out_dir=tmp_path / "r3", seed=0, device="cpu",
                      decoder_rounds=3, cv_folds=2, **FAST)
    aligner = CRFAligner.load(out, "cpu")
    _assert_aligns_as_trained(out, aligner, pairs, gold)  # here the rounds change the scores
    docs = aligner.prepare(pairs)
    decs = aligner.predict_docs(docs)
    decoder = aligner.decoder
    assert decoder is not None
    second, third = decoder.group_rounds()
    rec2, rec3 = _Recorder(second), _Recorder(third)
    full = learned_scores_many(docs, decs, dataclasses.replace(decoder, group_model=[rec2, rec3]))
    after_two = learned_scores_many(docs, decs, dataclasses.replace(decoder, group_model=second))
    masks = [doc_cell_features(doc, dec, None)[1] for doc, dec in zip(docs, decs, strict=True)]
    (x2,), (x3,) = rec2.inputs, rec3.inputs
    g = len(GROUP_CHANNELS)
    assert np.array_equal(x3[:, :-g], x2[:, :-g])
    expected = np.concatenate([group_features(p)[m] for p, m in zip(after_two, masks, strict=True)])
    assert np.allclose(x3[:, -g:], expected)
    got = np.concatenate([p[m] for p, m in zip(full, masks, strict=True)])
    assert np.allclose(got, third.predict_proba(x3)[:, 1])


def test_training_runs_on_one_torch_thread_whatever_the_load_and_restores_the_count(tmp_path, monkeypatch):
    """Two threads give another model than one (float reductions in another order), so training does
    not take its thread count from the load average as alignment does."""
    import torch

    from alignment_engine import encoders, training

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(encoders.os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # an idle machine: alignment takes 2
    seen: list[int] = []
    real = training.train_crf

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(training, "train_crf", recording)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        pairs, gold = _tiny()
        train_model(pairs, gold, out_dir=tmp_path / "m", seed=0, device="cpu", **FAST)
        assert seen and set(seen) == {encoders.TRAINING_THREADS} == {1}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def _prepared(pairs: list[DocPair], gold: list[Alignment], cfg: CRFConfig) -> tuple[list, np.ndarray, np.ndarray, list]:
    """What training prepares before its CRFs: the documents' features, the normalisation, gold matrices."""
    from alignment_engine.crf_aligner import prepare_docs
    from alignment_engine.gold import gold_by_pair, gold_matrix
    from alignment_engine.training import fit_normalisation

    pos, _ = gold_by_pair(gold)
    docs = prepare_docs(pairs, cfg, None)
    norm = fit_normalisation(docs, cfg)
    mats = [gold_matrix(d.pair, pos.get(d.pair.pair_id, set())).astype(np.int64) for d in docs]
    return docs, np.asarray(norm["mean"], dtype=np.float32), np.asarray(norm["scale"], dtype=np.float32), mats


def test_an_ensemble_member_cross_fits_over_the_same_folds_with_its_own_crfs():
    """Member 0 is the single model (the same seeds, torch's generator left as it is); member 1 keeps
    the folds but trains other CRFs, so averaging members averages different models."""
    import torch

    from alignment_engine.training import cross_fit, member_init

    cfg = CRFConfig().with_options(**FAST, cv_folds=2)
    docs, mean, scale, mats = _prepared(*_synthetic(8), cfg)

    def run(member: int) -> tuple[list, list[int]]:
        torch.manual_seed(5)  # the generator state the single model's CRFs start from
        return cross_fit(docs, mats, cfg, mean, scale, 0, lambda _: None, member=member)

    single, fold = run(0)
    again, fold_again = run(0)
    other, fold_other = run(1)
    assert fold == fold_again == fold_other and len(set(fold)) == 2
    assert all(np.array_equal(a.forward_marginals, b.forward_marginals) for a, b in zip(single, again, strict=True))
    assert not all(np.allclose(a.forward_marginals, b.forward_marginals) for a, b in zip(single, other, strict=True))
    state = torch.random.get_rng_state()
    assert member_init(11, 0) == 11 and torch.equal(torch.random.get_rng_state(), state)
    assert member_init(11, 2) == 11 + 2 * 7919


def test_the_crf_training_loops_run_on_one_thread_for_any_caller(monkeypatch):
    """Scripts and cross-fitting call ``train_crf`` / ``train_semicrf`` directly, outside ``train_model``:
    the loops themselves train on one thread, on an idle machine too."""
    import torch

    from alignment_engine import crf_aligner, encoders, semicrf
    from alignment_engine.crf_aligner import BiCRF, build_sequences, train_crf

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(encoders.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    seen: list[int] = []
    real = crf_aligner.adam_epochs

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(crf_aligner, "adam_epochs", recording)
    monkeypatch.setattr(semicrf, "adam_epochs", recording)
    cfg = CRFConfig().with_options(**FAST, semicrf_epochs=1)
    docs, mean, scale, mats = _prepared(*_tiny(), cfg)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        train_crf(BiCRF.for_config(cfg), {d: build_sequences(docs, d, cfg, mean, scale, mats) for d in ("s2c", "c2s")},
                  cfg, 0)
        semicrf.fit_semicrf(docs, mats, cfg, mean, scale, 0)
        assert seen == [1, 1]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_crfs_train_decode_and_load_in_float64(tmp_path):
    """In float32 the trained weights depended on the order the CPU summed floats in (threads, CPU model:
    another model from the same command); the CRFs hold, train and decode in float64 (Round 10), models
    saved before included, whose float32 weights load into float64 scorers."""
    import torch

    from alignment_engine import crf, model_store, semicrf
    from alignment_engine.crf_aligner import BiCRF, build_sequences, collate

    cfg = CRFConfig().with_options(**FAST, semicrf_epochs=1)
    docs, mean, scale, mats = _prepared(*_tiny(), cfg)
    model = BiCRF.for_config(cfg)
    batch = collate(build_sequences(docs, "s2c", cfg, mean, scale, mats), torch.device("cpu"))
    emis, trans, start = model.s2c(batch)
    assert torch.float64 == crf.DTYPE
    assert {p.dtype for p in model.parameters()} == {torch.float64}
    assert batch.feats.dtype == emis.dtype == trans.dtype == start.dtype == torch.float64
    semi = semicrf.BiSemiCRF(len(mean), cfg)
    spans = semicrf.collate_spans(semicrf.build_span_sequences(docs, "s2c", cfg, mean, scale, mats, {}))
    span, span_trans = semi.s2c(spans)
    assert {p.dtype for p in semi.parameters()} == {torch.float64}
    assert spans.feats.dtype == spans.runs.dtype == span.dtype == span_trans.dtype == torch.float64

    pairs, gold = _tiny()
    out = tmp_path / "m"
    train_model(pairs, gold, out_dir=out, seed=0, device="cpu", **FAST, semicrf=True, semicrf_epochs=1)
    aligned = CRFAligner.load(out, "cpu").align(pairs)
    for name in (model_store.CRF_WEIGHTS, model_store.SEMICRF_WEIGHTS):  # a model saved in float32, before Round 10
        weights = out / name
        torch.save({k: v.float() for k, v in torch.load(weights, weights_only=True).items()}, weights)
    old = CRFAligner.load(out, "cpu")
    assert {p.dtype for p in old.model.parameters()} == {torch.float64}
    assert old.semi_model is not None and {p.dtype for p in old.semi_model.parameters()} == {torch.float64}
    assert [[(a.simple_id, a.complex_id, a.label) for a in doc] for doc in old.align(pairs)] == \
        [[(a.simple_id, a.complex_id, a.label) for a in doc] for doc in aligned]


def _dense_chain_scores(scorer, batch):  # type: ignore[no-untyped-def]
    """A chain scorer's potentials as its forward computed them before the batch kept its cells: the emission
    network on the allowed cells, the step maxima and the transition network on every label pair's features."""
    import torch

    from alignment_engine import crf
    from alignment_engine.features import start_features, transition_features

    feats, allowed = batch.feats, batch.label_mask[:, :, 1:]
    b, t, l1, _ = feats.shape
    real = feats.new_full((b, t, l1), crf.NEG_INF)
    real[allowed] = scorer.emit(feats[allowed]).squeeze(-1)
    row_max = feats.masked_fill(~allowed[..., None], -1e4).max(dim=2).values
    row_max = torch.where(allowed.any(dim=2, keepdim=True), row_max, torch.zeros_like(row_max))
    trans, start = feats.new_zeros((b, l1 + 1, l1 + 1)), feats.new_zeros((b, l1 + 1))
    for i, n in enumerate(batch.n_labels.tolist()):
        trans[i, :n, :n] = scorer.trans(transition_features(n)).squeeze(-1)
        start[i, :n] = scorer.start(start_features(n)).squeeze(-1)
    return torch.cat([scorer.null(row_max), real], dim=2), trans, start


def test_chain_scorer_equals_its_dense_formulation_with_gradients():
    """The first-order CRF's scorer reads the allowed cells and step maxima its batch made once, and runs the
    transition network on one row per jump (features.transition_table): the same potentials and weight gradients
    as the emission network on the allowed cells and the transition network on every label pair's features, up to
    float rounding; a second forward reuses the batch's cells."""
    import torch

    from alignment_engine import crf
    from alignment_engine.crf_aligner import BiCRF, build_sequences, collate

    cfg = CRFConfig()
    docs, mean, scale, mats = _prepared(*_synthetic(5), cfg)
    torch.manual_seed(4)
    model = BiCRF.for_config(cfg)
    for d in ("s2c", "c2s"):
        scorer = model.direction(d)
        batch = collate(build_sequences(docs, d, cfg, mean, scale, mats), torch.device("cpu"))
        assert not bool(batch.step_mask.all()) or len(set(batch.n_labels.tolist())) > 1  # padded sequences

        grads = []
        for how in (lambda sc, bt: sc(bt), _dense_chain_scores, lambda sc, bt: sc(bt)):
            scorer.zero_grad()
            emis, trans, start = how(scorer, batch)
            crf.log_partition(emis, trans, start=start, step_mask=batch.step_mask,
                              label_mask=batch.label_mask).sum().backward()
            grads.append(([x.detach() for x in (emis, trans, start)], [p.grad.clone() for p in scorer.parameters()]))
        (fast, g_fast), (ref, g_ref), (again, g_again) = grads
        for x, y, z in zip(fast, ref, again, strict=True):
            assert torch.allclose(x, y, rtol=1e-12, atol=1e-12) and torch.equal(x, z)
        for x, y, z in zip(g_fast, g_ref, g_again, strict=True):
            assert torch.allclose(x, y, rtol=1e-9, atol=1e-12) and torch.equal(x, z)


def _crf_weights(model_dir) -> dict:  # type: ignore[no-untyped-def]
    import torch

    return torch.load(model_dir / model_store.CRF_WEIGHTS)  # type: ignore[no-any-return]


def test_the_written_model_is_refitted_on_train_and_dev_with_the_held_out_dev_figures(tmp_path):
    """By default, with dev gold, train_model scores dev with a model trained on train alone and writes the
    model retrained on train + dev: the written dev figures are exactly the held-out model's, and the written
    model is exactly what training on train + dev without a dev set gives."""
    import torch

    pairs, gold = _synthetic(8)
    train, dev = pairs[:6], pairs[6:]
    dev_ids = {p.pair_id for p in dev}
    train_gold = [a for a in gold if a.pair_id not in dev_ids]
    dev_gold = [a for a in gold if a.pair_id in dev_ids]
    counts, lines, progress = _progress_recorder()

    refit = train_model(train, train_gold, dev, dev_gold, out_dir=tmp_path / "refit", seed=2, device="cpu",
                        progress=progress, cv_folds=2, **FAST)
    held = train_model(train, train_gold, dev, dev_gold, out_dir=tmp_path / "held", seed=2, device="cpu",
                       cv_folds=2, refit_with_dev=False, **FAST)
    both = train_model(pairs, gold, out_dir=tmp_path / "both", seed=2, device="cpu", cv_folds=2, **FAST)
    meta, meta_held, meta_both = (json.loads((d / "model.json").read_text()) for d in (refit, held, both))
    assert meta["config"]["refit_with_dev"] is True and meta_held["config"]["refit_with_dev"] is False
    assert meta["dev_metrics"] == meta_held["dev_metrics"] and "task1" in meta["dev_metrics"]
    assert meta["data"]["train_pairs"] == 8 and meta["data"]["train_gold_pairs"] == len(gold)
    record = meta["refit"]
    assert record["final_model"] == "train + dev"
    assert record["held_out_model"]["data"] == meta_held["data"]
    assert record["held_out_model"]["cross_validation"] == meta_held["cross_validation"]
    assert record["held_out_model"]["thresholds"] == meta_held["thresholds"]
    assert "refit" not in meta_held and "refit" not in meta_both
    weights, weights_both, weights_held = _crf_weights(refit), _crf_weights(both), _crf_weights(held)
    assert all(torch.equal(weights[k], weights_both[k]) for k in weights)
    assert not all(torch.equal(weights[k], weights_held[k]) for k in weights)
    rows = CRFAligner.load(refit, "cpu").align(pairs)
    assert rows == CRFAligner.load(both, "cpu").align(pairs)
    # one progress plan over both passes: every step once, in order, one total
    total = counts[-1][1]
    assert {t for _, t in counts} == {total}
    assert [d for d, _ in counts] == list(range(1, total + 1))
    assert any(line.startswith("refitting on train + dev (6 + 2 document pairs)") for line in lines)


def test_training_without_a_gold_pair_of_the_train_pairs_is_refused_naming_the_ids(tmp_path):
    """An empty gold, or one naming another corpus's sentences, leaves nothing to learn: refused before any work,
    nothing written."""
    pairs, gold = _synthetic(4)
    elsewhere = [Alignment("aligned", "zz-0-0-0", "zz-1-0-0", "a", "b")]
    for rows, said in (([], "0 gold rows, 0 of them"), (elsewhere, "1 gold row, 1 of them")):
        with pytest.raises(ValueError, match=f"no gold row aligns two sentences of the 4 training pairs \\({said}"):
            train_model(pairs, rows, out_dir=tmp_path / "m", seed=0, device="cpu", **FAST)
    assert not (tmp_path / "m").exists()
    negatives = [Alignment("notAligned", a.simple_id, a.complex_id, a.simple_text, a.complex_text) for a in gold]
    with pytest.raises(ValueError, match="0 of them aligned"):
        train_model(pairs, negatives, out_dir=tmp_path / "m", seed=0, device="cpu", **FAST)


def test_a_single_models_held_out_run_and_refit_train_side_by_side_as_the_same_model(tmp_path):
    """With a refit, a single model's two runs are two jobs of worker processes (``workers`` 2), and the model is
    the one both runs write in this process, one after the other (``workers`` 1): the same files, the held-out
    run's dev figures, no ensemble record."""
    import torch

    pairs, gold = _synthetic(8)
    dev_ids = {p.pair_id for p in pairs[6:]}
    train_gold = [a for a in gold if a.pair_id not in dev_ids]
    dev_gold = [a for a in gold if a.pair_id in dev_ids]
    _, lines, progress = _progress_recorder()
    side = train_model(pairs[:6], train_gold, pairs[6:], dev_gold, out_dir=tmp_path / "side", seed=1, device="cpu",
                       progress=progress, workers=2, cv_folds=2, **FAST)
    here = train_model(pairs[:6], train_gold, pairs[6:], dev_gold, out_dir=tmp_path / "here", seed=1, device="cpu",
                       workers=1, cv_folds=2, **FAST)
    assert any(line.endswith("2 runs, 2 at a time") for line in lines)
    assert any(line.startswith("(train + dev) ") for line in lines)  # the runs' own lines, named
    meta_side, meta_here = (json.loads((d / "model.json").read_text()) for d in (side, here))
    assert meta_side["dev_metrics"] == meta_here["dev_metrics"] and "task1" in meta_side["dev_metrics"]
    for key in ("data", "cross_validation", "thresholds"):
        assert meta_side["refit"]["held_out_model"][key] == meta_here["refit"]["held_out_model"][key]
    assert meta_side["config"] == meta_here["config"] and meta_side["data"]["train_pairs"] == 8
    assert "ensemble" not in meta_side and not (side / model_store.MEMBERS_DIR).exists()
    a, b = _crf_weights(side), _crf_weights(here)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert CRFAligner.load(side, "cpu").align(pairs) == CRFAligner.load(here, "cpu").align(pairs)


def test_no_refit_with_the_rule_decoder_without_new_dev_pairs_or_when_switched_off(tmp_path):
    """The rule decoder is tuned on dev, a dev set that repeats train adds nothing, and refit_with_dev=False
    keeps the model trained on train: in all three the written model is the one scored on dev."""
    from alignment_engine.crf_config import CRFConfig
    from alignment_engine.training import refit_additions

    pairs, gold = _synthetic(8)
    train, dev = pairs[:6], pairs[6:]
    assert refit_additions(CRFConfig(), train, dev, gold) is not None
    assert refit_additions(CRFConfig(decoder="rule"), train, dev, gold) is None
    assert refit_additions(CRFConfig(refit_with_dev=False), train, dev, gold) is None
    assert refit_additions(CRFConfig(), train, train, gold) is None  # the same pair ids: nothing new
    assert refit_additions(CRFConfig(), train, dev, [a for a in gold if a.pair_id not in {"s6", "s7"}]) is None
    added = refit_additions(CRFConfig(), train, [dev[0], train[0]], gold)
    assert added is not None and [p.pair_id for p in added[0]] == ["s6"]
    assert {a.pair_id for a in added[1]} == {"s6"}
    out = train_model(pairs[:2], gold, pairs[:2], gold, out_dir=tmp_path / "same", seed=0, device="cpu", **FAST)
    assert "refit" not in json.loads((out / "model.json").read_text())


def test_the_learned_decoder_fits_its_trees_with_one_blas_and_openmp_thread(tmp_path, monkeypatch):
    """numpy's BLAS and scikit-learn's OpenMP pools (the decoder's trees) are held at one thread while a model
    trains, as torch is, so the model does not depend on the machine's core count; afterwards they are back."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from alignment_engine import training

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    seen: list[set[tuple[str, int]]] = []
    real = training.fit_classifier

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append({(i["user_api"], i["num_threads"]) for i in threadpool_info()})
        return real(*args, **kwargs)

    monkeypatch.setattr(training, "fit_classifier", recording)
    with threadpool_limits(limits=2):  # what a 2-core machine has by default
        pairs, gold = _tiny()
        train_model(pairs, gold, out_dir=tmp_path / "m", seed=0, device="cpu", **FAST)
        assert seen and all({n for _, n in pools} == {1} for pools in seen)
        assert {api for api, _ in seen[0]} >= {"blas", "openmp"}
        assert {i["num_threads"] for i in threadpool_info()} == {2}


def test_in_a_fresh_process_scikit_learns_own_openmp_is_held_at_one_thread_too():
    """scikit-learn loads its own OpenMP library on first import: a process that trains before anything imported
    it (`train`, an ensemble's worker) must still fit the trees on one thread."""
    import os
    import subprocess
    import sys

    code = ("from alignment_engine.encoders import training_threads\n"
            "from threadpoolctl import threadpool_info\n"
            "with training_threads():\n"
            "    from sklearn.ensemble import HistGradientBoostingClassifier\n"
            "    print(sorted({(i['internal_api'], i['num_threads']) for i in threadpool_info()}))\n")
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=True)
    pools = eval(out.stdout)  # noqa: S307 - our own print of a list of tuples
    assert ("openmp", 1) in pools and {n for _, n in pools} == {1}


def test_the_refit_fine_tunes_its_own_encoder_and_scores_with_it(tmp_path):
    """With a fine-tuned encoder the refit is exactly a training on train + dev: it fine-tunes the encoder on
    train + dev and scores every cell with that encoder, never with the held-out run's cached scores."""
    import torch

    pairs, gold = _tiny()
    extra = DocPair("c", [["Snow covered the hills all winter long.", "Children went sledging."]],
                    [["Snow covered the hills.", "Children went sledging."]])
    dev_gold = [Alignment("aligned", "c-0-0-0", "c-1-0-0"), Alignment("aligned", "c-0-0-1", "c-1-0-1")]
    options: TrainingOptions = {**FAST, "emission": "encoder+lexical"}
    refit = train_model(pairs, gold, [extra], dev_gold, out_dir=tmp_path / "refit", seed=0, device="cpu",
                        encoder_steps=2, **options)
    both = train_model([*pairs, extra], [*gold, *dev_gold], out_dir=tmp_path / "both", seed=0, device="cpu",
                       encoder_steps=2, **options)
    assert json.loads((refit / "model.json").read_text())["refit"]["final_model"] == "train + dev"
    weights, weights_both = _crf_weights(refit), _crf_weights(both)
    assert all(torch.equal(weights[k], weights_both[k]) for k in weights)
    assert json.loads((refit / "encoder_scores.json").read_text()) == json.loads((both / "encoder_scores.json").read_text())


def test_a_batch_of_one_sequence_has_the_values_of_a_padded_batch_without_its_copies():
    """A long document is the only sequence of its decoding batch: both CRFs' collates then skip the padded float32
    copy of its cells and hand the emission network a view of the features instead of a copy (Round 26). The values
    are those the same sequence gets in a padded batch, bit for bit."""
    import torch

    from alignment_engine import semicrf
    from alignment_engine.crf_aligner import build_sequences, collate

    cpu = torch.device("cpu")
    cfg = CRFConfig().with_options(**FAST)
    docs, mean, scale, mats = _prepared(*_tiny(), cfg)
    seqs = sorted(build_sequences(docs, "s2c", cfg, mean, scale, mats), key=lambda s: -len(s.rows) * len(s.cols))
    big, small = seqs[0], seqs[-1]
    assert (len(small.rows), len(small.cols)) < (len(big.rows), len(big.cols))  # the pair's batch pads the small one
    one, both = collate([big], cpu), collate([big, small], cpu)
    t, n = len(big.rows), len(big.cols)
    assert one.feats.shape == (1, t, n, big.feats.shape[-1])
    assert torch.equal(one.feats[0], both.feats[0, :t, :n])
    assert torch.equal(one.cells, both.feats[0, :t, :n][torch.from_numpy(big.allowed)])
    assert torch.equal(one.row_max[0], both.row_max[0, :t])
    assert big.allowed.all()  # whole documents: every cell is a label
    assert one.cells.data_ptr() == one.feats.data_ptr()  # a view, not a second copy

    spans = semicrf.build_span_sequences(docs, "s2c", cfg, mean, scale, mats, {})
    spans = sorted(spans, key=lambda s: -s.feats.shape[0] * s.feats.shape[1])
    big_s, small_s = spans[0], spans[-1]
    one_s, both_s = semicrf.collate_spans([big_s]), semicrf.collate_spans([big_s, small_s])
    t, n = big_s.feats.shape[:2]
    for name in ("feats", "runs", "valid"):
        assert torch.equal(getattr(one_s, name)[0], getattr(both_s, name)[0, :t, :n]), name
    assert torch.equal(one_s.row_max[0], both_s.row_max[0, :t])
    assert torch.equal(one_s.cells, both_s.feats[0, :t, :n].reshape(-1, both_s.feats.shape[-1]))
    assert one_s.cells.data_ptr() == one_s.feats.data_ptr()
    assert one_s.runs.dtype == torch.float64
