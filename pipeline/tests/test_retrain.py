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

TINY = {"emission": "lexical", "crf_epochs": 3}


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
    assert any(m.startswith("cross-fitting fold 1/") for m in messages)
