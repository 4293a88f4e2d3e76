"""Retraining on verified labels: deterministic article split, counts, metrics, determinism per seed."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from alignment_engine.ids import SentenceId
from annotation.models import CandidatePair, VerifiedLabel
from curation.curate.splits import assign_splits
from curation.models import Corpus
from pipeline.models import Job, ModelVersion
from pipeline.services import labelled_data, retrain
from pipeline.services.prepopulate import prepopulate
from pipeline.tests.pipeline_corpus import build_corpus, expected_alignment

TINY = {"emission": "lexical", "crf_epochs": 3, "members": 1}


def labelled_corpus(n_articles: int = 8) -> Corpus:
    corpus = build_corpus(n_articles=n_articles)
    prepopulate(list(corpus.pairs.values_list("pk", flat=True)))
    gold = expected_alignment(corpus)
    VerifiedLabel.objects.bulk_create(
        VerifiedLabel(candidate=c, label="aligned" if (c.simple_id, c.complex_id) in gold else "notAligned")
        for c in CandidatePair.objects.filter(pair__corpus=corpus)
    )
    return corpus


def test_split_is_deterministic_disjoint_and_complete() -> None:
    keys = [f"a{i}" for i in range(50)]
    ratios = labelled_data.split_ratios((0.7, 0.1, 0.2))
    a = assign_splits(keys, ratios, seed=3)
    assert a == assign_splits(list(reversed(keys)), ratios, seed=3)
    assert a != assign_splits(keys, ratios, seed=4)
    counts = {s: sum(v == s for v in a.values()) for s in labelled_data.SPLITS}
    assert counts == {"train": 35, "dev": 5, "test": 10} and set(a) == set(keys)
    small = assign_splits(["x", "y", "z"], labelled_data.split_ratios(labelled_data.DEFAULT_RATIOS), seed=0)
    assert sorted(small.values()) == ["dev", "test", "train"]
    with pytest.raises(labelled_data.RetrainError):
        labelled_data.split_ratios((1, 2))


@pytest.mark.django_db
def test_collect_labels_by_article_group() -> None:
    corpus = labelled_corpus()
    data = labelled_data.collect_labelled_data([corpus.pk], seed=0)
    counts = data.counts()
    assert sum(c["labels"] for c in counts.values()) == VerifiedLabel.objects.count()
    assert sum(c["aligned"] for c in counts.values()) == len(expected_alignment(corpus))
    seen = [a for s in labelled_data.SPLITS for a in data.articles[s]]
    assert len(seen) == len(set(seen)) == 8 and counts["dev"]["articles"] >= 1 and counts["test"]["articles"] >= 1
    ids = {p.pair_id for s in labelled_data.SPLITS for p in data.pairs[s]}
    assert all(SentenceId.parse(a.simple_id).pair_id in ids for s in labelled_data.SPLITS for a in data.gold[s])


@pytest.mark.django_db
@pytest.mark.slow
def test_retrain_registers_version_and_is_deterministic(tmp_path) -> None:  # type: ignore[no-untyped-def]
    corpus = labelled_corpus()
    v1 = retrain.retrain("en", corpus=corpus, seed=5, config=TINY, out_dir=tmp_path / "a", device="cpu")
    v2 = retrain.retrain("en", corpus=corpus, seed=5, config=TINY, out_dir=tmp_path / "b", device="cpu")
    assert v1.pk != v2.pk and v1.method == "crf" and (tmp_path / "a" / "model.json").is_file()
    assert v1.metrics == v2.metrics
    for split in ("dev", "test"):
        for task in ("task1", "task2"):
            assert 0.0 <= v1.metrics[split][task]["f1"] <= 1.0
    assert v1.metrics["test"]["task1"]["f1"] > 0.5  # the synthetic corpus is easy
    assert v1.data_counts["train"]["labels"] > 0 and v1.data_counts["train"]["aligned"] > 0
    assert v1.config["splits"]["test"]


@pytest.mark.django_db
@pytest.mark.slow
def test_a_refitted_version_shows_the_held_out_dev_figures_not_its_own_output_on_dev(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """By the engine's default the registered model was retrained on train + dev: its dev figures must be those
    of the same training on train alone (dev unseen), and its test figures its own; the version says so."""
    import json

    from alignment_engine import api

    corpus = labelled_corpus()
    version = retrain.retrain("en", corpus=corpus, seed=1, config=TINY, out_dir=tmp_path / "m", device="cpu")
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    data = labelled_data.collect_labelled_data([corpus.pk], seed=1)
    assert meta["refit"]["final_model"] == "train + dev"
    assert meta["data"]["train_pairs"] == len(data.pairs["train"]) + len(data.pairs["dev"])
    assert version.config["trained_on"].startswith("train + dev")
    assert version.metrics["dev"] == retrain.held_out_dev(meta)
    assert version.metrics["dev"]["task1"] == meta["dev_metrics"]["task1"]
    aligner = api.load_aligner("crf", tmp_path / "m", device="cpu")
    assert version.metrics["test"] == labelled_data.score(aligner, data.pairs["test"], data.gold["test"])
    held = retrain.retrain("en", corpus=corpus, seed=1, config={**TINY, "refit_with_dev": False},
                           out_dir=tmp_path / "h", device="cpu")
    assert held.config["trained_on"] == "train"
    assert held.metrics["dev"]["task1"] == version.metrics["dev"]["task1"]  # the same training, scored on dev


@pytest.mark.django_db
def test_retrain_without_labels_fails_the_job(capsys) -> None:  # type: ignore[no-untyped-def]
    corpus = build_corpus(n_articles=2)
    with pytest.raises(CommandError, match="failed: RetrainError: no aligned labels"):
        call_command("retrain", "--corpus", corpus.name, "--sync")
    job = Job.objects.get(kind=Job.Kind.RETRAIN)
    assert job.status == Job.Status.FAILED and "no aligned labels" in job.error and "Traceback" in job.error
    assert job.message.startswith("RetrainError: no aligned labels")
    assert not ModelVersion.objects.exists()


@pytest.mark.django_db
@pytest.mark.slow
def test_retrain_command_sync_with_baseline(capsys, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings.MODELS_DIR = tmp_path
    corpus = labelled_corpus()
    call_command("retrain", "--corpus", corpus.name, "--config", '{"emission": "lexical", "crf_epochs": 2}',
                 "--baselines", "jaccard", "--device", "cpu", "--sync")
    assert "succeeded" in capsys.readouterr().out
    job = Job.objects.get(kind=Job.Kind.RETRAIN)
    assert job.progress_done == job.progress_total == retrain.PROGRESS_TOTAL
    trained = ModelVersion.objects.get(pk=job.result["model_version"])
    baseline = ModelVersion.objects.get(pk=job.result["baselines"][0])
    assert trained.path.startswith(str(tmp_path)) and trained.job == job
    assert baseline.method == "jaccard" and baseline.path == ""
    assert baseline.data_counts["test"] == trained.data_counts["test"]  # same split
    assert "task1" in baseline.metrics["test"]


def test_training_progress_becomes_job_progress() -> None:
    assert retrain.progress_units(0, 40) == retrain.TRAIN_FIRST == 5
    assert retrain.progress_units(20, 40) == 46
    assert retrain.progress_units(40, 40) == retrain.TRAIN_LAST == 88
    assert retrain.progress_units(50, 40) == 88 and retrain.progress_units(3, 0) == 88  # clipped, no division by 0


@pytest.mark.django_db
@pytest.mark.slow
def test_retrain_job_progress_moves_during_cross_fitting(settings, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The real trainer's (done, total) reach the job while the cross-fitting CRFs train, not only at the end."""
    settings.MODELS_DIR = tmp_path
    corpus = labelled_corpus()
    seen: list[tuple[int, int, int]] = []
    messages: list[str] = []
    original = retrain.progress_units

    def spy(done: int, total: int) -> int:
        seen.append((done, total, original(done, total)))
        return original(done, total)

    monkeypatch.setattr(retrain, "progress_units", spy)
    job = retrain.create_job({"language": corpus.language, "config": {"emission": "lexical", "crf_epochs": 2},
                              "device": "cpu"}, corpus=corpus)
    retrain.run_job(job.pk, echo=lambda message, done: messages.append(message))
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED
    totals = {t for _, t, _ in seen}
    assert len(totals) == 1  # one plan for the whole run
    dones = [d for d, _, _ in seen]
    assert dones == sorted(dones) and dones[-1] == totals.pop() and len(dones) >= 8
    units = [u for _, _, u in seen]
    assert units[0] < 30 and units[-1] == retrain.TRAIN_LAST
    # the default's seed ensemble: every member's runs report into the one plan, their lines named by member
    assert any(m.startswith("member 1/") and "cross-fitting fold 1/" in m for m in messages)


def partially_labelled_corpus() -> tuple[Corpus, int, set[tuple[int, int]]]:
    """``labelled_corpus`` with the labels of half the candidates of one pair removed (a selective job
    labels only some candidates): (corpus, that pair's pk, its unlabelled (simple pk, complex pk))."""
    corpus = labelled_corpus()
    pair = corpus.pairs.order_by("pk").first()
    assert pair is not None
    cands = list(CandidatePair.objects.filter(pair=pair).order_by("pk"))
    gold = expected_alignment(corpus)
    # drop one aligned and some not-aligned labels: an unlabelled positive must not be read as a negative
    dropped = [c for c in cands if (c.simple_id, c.complex_id) in gold][:1] + \
        [c for c in cands if (c.simple_id, c.complex_id) not in gold][:2]
    VerifiedLabel.objects.filter(candidate__in=dropped).delete()
    return corpus, pair.pk, {(c.simple_id, c.complex_id) for c in dropped}


@pytest.mark.django_db
def test_partial_pairs_list_their_unlabelled_candidates_and_complete_pairs_none() -> None:
    from curation.plain import load_plain_pairs

    corpus, pair_pk, dropped = partially_labelled_corpus()
    data = labelled_data.collect_labelled_data([corpus.pk], seed=0)
    plain = load_plain_pairs([pair_pk])[0]
    id_of = {pk: sid for sid, pk in plain.sentence_pk.items()}
    assert data.unlabelled == {plain.doc.pair_id: {(id_of[s], id_of[c]) for s, c in dropped}}  # the others: complete
    split = next(s for s in labelled_data.SPLITS if any(p.pair_id == plain.doc.pair_id for p in data.pairs[s]))
    counts = data.counts()
    assert counts[split]["partial_pairs"] == 1 and counts[split]["unlabelled"] == len(dropped) == 3
    assert sum(c["partial_pairs"] for c in counts.values()) == 1
    # the engine's target for that pair: the unlabelled candidates are open (0), not "not aligned" (-1)
    import numpy as np

    from alignment_engine.crf_aligner import build_sequences, fit_normalisation, prepare_docs
    from alignment_engine.crf_config import CRFConfig
    from alignment_engine.gold import gold_by_pair, known_matrix

    pos, _ = gold_by_pair(data.gold[split])
    known = known_matrix(plain.doc, pos.get(plain.doc.pair_id, set()), data.unlabelled[plain.doc.pair_id])
    s_index = {sid: i for i, sid in enumerate(plain.doc.simple_ids())}
    c_index = {cid: j for j, cid in enumerate(plain.doc.complex_ids())}
    open_cells = {(s_index[id_of[s]], c_index[id_of[c]]) for s, c in dropped}
    assert {tuple(int(x) for x in ij) for ij in np.argwhere(known == 0)} == open_cells
    cfg = CRFConfig(emission="lexical", decoder="rule")
    docs = prepare_docs([plain.doc], cfg, None)
    norm = fit_normalisation(docs, cfg)
    seqs = build_sequences(docs, "s2c", cfg, np.asarray(norm["mean"], np.float32), np.asarray(norm["scale"], np.float32),
                           known=[known])
    sets = np.zeros(known.shape, dtype=bool)
    for q in seqs:
        assert q.partial and q.gold_sets is not None
        sets[np.ix_(q.rows, q.cols)] = q.gold_sets[:, 1:]
    for i, j in open_cells:  # a row without a labelled positive may take the unlabelled cell
        assert sets[i, j] == (not (known[i] == 1).any())
    assert not sets[known == -1].any()  # never a labelled negative or a non-candidate


@pytest.mark.django_db
def test_retrain_hands_the_partial_pairs_to_training_and_scoring(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from alignment_engine import api

    corpus, _pair_pk, _dropped = partially_labelled_corpus()
    seen: dict = {}
    real_train = api.train

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.update(kwargs)
        return real_train(*args, **kwargs)

    monkeypatch.setattr(api, "train", spy)
    version = retrain.retrain("en", corpus=corpus, seed=0, config={**TINY, "decoder": "rule", "crf_epochs": 1},
                              out_dir=tmp_path / "m", device="cpu")
    data = labelled_data.collect_labelled_data([corpus.pk], seed=0)
    assert seen["unlabelled"] == data.unlabelled and len(data.unlabelled) == 1
    total_partial = sum(version.data_counts[s]["partial_pairs"] for s in labelled_data.SPLITS)
    assert total_partial == 1 and sum(version.data_counts[s]["unlabelled"] for s in labelled_data.SPLITS) == 3


def test_scoring_leaves_predictions_on_unlabelled_candidates_out() -> None:
    from alignment_engine.types import Alignment, DocPair

    pair = DocPair("x", [["A b c.", "D e f."]], [["A b.", "D e."]])
    s, c = pair.simple_ids(), pair.complex_ids()

    class Fixed:
        def align(self, pairs):  # type: ignore[no-untyped-def]
            return [[Alignment("aligned", s[0], c[0]), Alignment("aligned", s[1], c[0])]]

    gold = [Alignment("aligned", s[0], c[0]), Alignment("notAligned", s[0], c[1])]
    plain = labelled_data.score(Fixed(), [pair], gold)
    partial = labelled_data.score(Fixed(), [pair], gold, {"x": {(s[1], c[0])}})
    assert plain["task1"]["precision"] == 0.5 and partial["task1"]["precision"] == 1.0
