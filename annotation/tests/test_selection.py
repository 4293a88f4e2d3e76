"""Labeling jobs that label a sample of the candidates: random (seeded, capped per document pair),
and the errors of the uncertainty strategies when no model can score (the model-backed path is
tested in pipeline/tests/test_selection_models.py, where the model source lives)."""

from __future__ import annotations

from collections import Counter
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import LabelingJob
from annotation.services import job_setup, selection
from annotation.tests.factories import make_corpus


def _job(corpus, chosen: selection.Selection, name: str = "sampled") -> LabelingJob:  # type: ignore[no-untyped-def]
    return job_setup.create_job(name=name, corpus=corpus, created_by=None,
                                settings=job_setup.JobSettings(selection=chosen))


def test_all_is_the_default_and_keeps_every_candidate(db) -> None:  # type: ignore[no-untyped-def]
    corpus = make_corpus(n_articles=3)
    everything = _job(corpus, selection.Selection(), "all")
    assert everything.selection["strategy"] == "all"
    assert not everything.items.exclude(selection_reason="").exists()
    n = everything.items.count()
    sample = _job(corpus, selection.Selection("random", budget=n // 2, seed=1), "half")
    assert sample.items.count() == n // 2
    assert set(sample.items.values_list("selection_reason", flat=True)) == {"random sample (seed 1)"}
    again = _job(corpus, selection.Selection("random", budget=n // 2, seed=1), "again")
    assert set(again.items.values_list("candidate_id", flat=True)) == set(sample.items.values_list("candidate_id", flat=True))


def test_random_sample_is_capped_per_document_pair(db) -> None:  # type: ignore[no-untyped-def]
    corpus = make_corpus(n_articles=3)
    job = _job(corpus, selection.Selection("random", budget=100, per_document=2))
    per_pair = Counter(job.items.values_list("candidate__pair_id", flat=True))
    assert sorted(per_pair.values()) == [2, 2, 2]  # the cap binds before the budget
    assert job.selection["per_document"] == 2 and job.selection["budget"] == 100


def test_uncertainty_without_a_promoted_model_is_a_clear_error(db, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    corpus = make_corpus(n_articles=1)
    with pytest.raises(job_setup.JobError, match="no promoted en model"):
        _job(corpus, selection.Selection("margin", budget=5))
    assert not LabelingJob.objects.exists()  # nothing half-made
    monkeypatch.setattr(selection, "_registered", [])
    with pytest.raises(job_setup.JobError, match="no model source is installed"):
        _job(corpus, selection.Selection("entropy", budget=5))


def test_selection_options_are_checked() -> None:
    with pytest.raises(selection.SelectionError, match="needs a budget"):
        selection.Selection("random")
    with pytest.raises(selection.SelectionError, match="second model version"):
        selection.Selection("versions", budget=3)
    with pytest.raises(selection.SelectionError, match="unknown selection"):
        selection.Selection("loudest", budget=3)


def test_form_and_command_take_the_strategy(client, researcher) -> None:  # type: ignore[no-untyped-def]
    corpus = make_corpus(n_articles=2)
    client.force_login(researcher)
    form = {"name": "Sampled", "corpus": corpus.pk, "strategy": "paragraph", "top_k": 3, "pair_ids": "",
            "judgments_per_pair": 5, "test_question_every": 5, "min_seconds": 10, "accuracy_threshold": 0.85,
            "min_test_questions": 4, "reservation_minutes": 15, "gold_source": "none", "max_tests": 0,
            "selection": "random", "budget": 3}
    r = client.post(reverse("annotation:job_new"), form)
    job = LabelingJob.objects.get(name="Sampled")
    assert r.status_code == 302 and job.items.count() == 3 and job.selection["strategy"] == "random"
    page = client.get(reverse("annotation:job_detail", args=[job.pk])).content.decode()
    assert "Why these pairs" in page and "random sample (seed 0)" in page
    missing = client.post(reverse("annotation:job_new"), {**form, "name": "No budget", "budget": ""})
    assert missing.status_code == 200 and "needs a budget" in missing.content.decode()
    out = StringIO()
    call_command("create_labeling_job", "Cmd", "--corpus", corpus.name, "--select", "random", "--budget", "4",
                 stdout=out)
    assert LabelingJob.objects.get(name="Cmd").items.count() == 4
    with pytest.raises(CommandError, match="no promoted en model"):
        call_command("create_labeling_job", "Cmd2", "--corpus", corpus.name, "--select", "margin", "--budget", "4",
                     stdout=StringIO())


def test_form_and_command_check_the_random_share(client, researcher) -> None:  # type: ignore[no-untyped-def]
    corpus = make_corpus(n_articles=1)
    client.force_login(researcher)
    form = {"name": "Mixed", "corpus": corpus.pk, "strategy": "paragraph", "top_k": 3, "pair_ids": "",
            "judgments_per_pair": 5, "test_question_every": 5, "min_seconds": 10, "accuracy_threshold": 0.85,
            "min_test_questions": 4, "reservation_minutes": 15, "gold_source": "none", "max_tests": 0,
            "selection": "random", "budget": 3, "random_share": 0.5}
    page = client.get(reverse("annotation:job_new")).content.decode()
    assert 'name="random_share"' in page
    r = client.post(reverse("annotation:job_new"), form)
    assert r.status_code == 200 and "choose an uncertainty strategy" in r.content.decode()
    too_much = client.post(reverse("annotation:job_new"), {**form, "selection": "margin", "random_share": 1.5})
    assert too_much.status_code == 200 and "less than or equal to 1" in too_much.content.decode()
    assert not LabelingJob.objects.exists()
    with pytest.raises(CommandError, match="choose an uncertainty strategy"):
        call_command("create_labeling_job", "Cmd", "--corpus", corpus.name, "--select", "random", "--budget", "4",
                     "--random-share", "0.5", stdout=StringIO())


def test_pairs_already_verified_are_left_out_unless_asked(client, researcher) -> None:  # type: ignore[no-untyped-def]
    """A second job (e.g. uncertainty after a random sample) spends its budget on pairs nobody has verified."""
    from annotation.models import CandidatePair, VerifiedLabel

    corpus = make_corpus(n_articles=2)
    first = _job(corpus, selection.Selection(), "first")
    every = set(first.items.values_list("candidate_id", flat=True))
    verified = sorted(every)[:3]
    for pk in verified:
        VerifiedLabel.objects.create(candidate=CandidatePair.objects.get(pk=pk), label="aligned", job=first)
    second = _job(corpus, selection.Selection(), "second")
    assert set(second.items.values_list("candidate_id", flat=True)) == every - set(verified)
    assert second.selection["verified_left_out"] == 3
    again = job_setup.create_job(name="again", corpus=corpus, created_by=None,
                                 settings=job_setup.JobSettings(skip_verified=False))
    assert set(again.items.values_list("candidate_id", flat=True)) == every and "verified_left_out" not in again.selection
    sample = _job(corpus, selection.Selection("random", budget=len(every)), "sample")  # a budget over what is left
    assert sample.items.count() == len(every) - 3 and not sample.items.filter(candidate_id__in=verified).exists()
    client.force_login(researcher)
    page = client.get(reverse("annotation:job_detail", args=[second.pk])).content.decode()
    assert 'id="verified-left-out"' in page and "3 candidate pairs already verified were left out" in page
    assert 'name="skip_verified"' in client.get(reverse("annotation:job_new")).content.decode()
    out = StringIO()
    call_command("create_labeling_job", "Cmd", "--corpus", corpus.name, stdout=out)
    assert "3 already verified pairs left out" in out.getvalue()
    call_command("create_labeling_job", "Cmd all", "--corpus", corpus.name, "--include-verified", stdout=StringIO())
    assert LabelingJob.objects.get(name="Cmd all").items.count() == len(every)
    for pk in every - set(verified):
        VerifiedLabel.objects.create(candidate=CandidatePair.objects.get(pk=pk), label="notAligned", job=first)
    with pytest.raises(job_setup.JobError, match="already verified"):
        _job(corpus, selection.Selection(), "nothing left")
