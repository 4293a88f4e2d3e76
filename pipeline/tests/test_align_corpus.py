"""Corpus alignment in chunks: exact results, idempotent chunk retries, cancellation, model choice."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from pipeline import jobs
from pipeline.models import Job, ModelVersion, PredictedAlignment, RunChunk
from pipeline.services import align_corpus
from pipeline.tests.pipeline_corpus import build_corpus, expected_alignment, job_id

pytestmark = pytest.mark.django_db


def predictions(run) -> list[tuple[int, int]]:  # type: ignore[no-untyped-def]
    return list(PredictedAlignment.objects.filter(run=run).values_list("simple_id", "complex_id"))


def test_sync_run_finds_the_expected_alignment_in_chunks() -> None:
    corpus = build_corpus()
    run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "jaccard"), chunk_size=4)
    assert run.chunks.count() == 2 and Job.objects.get(pk=job_id(run)).progress_total == 2
    assert align_corpus.run_inline(run) == "done"
    got = predictions(run)
    assert len(got) == len(set(got)) and set(got) == expected_alignment(corpus)
    job = Job.objects.get(pk=job_id(run))
    assert job.status == Job.Status.SUCCEEDED and job.progress_done == 2
    assert job.result["predictions"] == len(got) and job.result["method"] == "jaccard"
    by_label = {lab: PredictedAlignment.objects.filter(run=run, label=lab).count() for lab in ("aligned", "partialAligned")}
    assert {k: job.result[k] for k in ("aligned", "partialAligned", "chunks")} == {**by_label, "chunks": 2}
    assert job.result["aligned"] + job.result["partialAligned"] == len(got)
    assert set(run.chunks.values_list("status", flat=True)) == {RunChunk.Status.DONE}
    assert all(w for w in run.chunks.values_list("worker", flat=True))


def test_retried_chunk_replaces_its_rows_without_duplicates() -> None:
    corpus = build_corpus(n_articles=3)
    run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "tfidf"), chunk_size=2)
    first = run.chunks.get(index=0)
    assert align_corpus.process_chunk(first.pk) == "done"
    before = sorted(predictions(run))
    # a redelivered message for a finished chunk does nothing
    assert align_corpus.process_chunk(first.pk) == "skipped"
    assert sorted(predictions(run)) == before
    # a chunk that must run again (e.g. status lost) replaces its rows; stale rows of its pairs go
    RunChunk.objects.filter(pk=first.pk).update(status=RunChunk.Status.PENDING)
    stale = PredictedAlignment.objects.filter(run=run).first()
    assert stale is not None
    PredictedAlignment.objects.create(run=run, pair_id=stale.pair_id, simple_id=stale.simple_id,
                                      complex_id=stale.simple_id, label="aligned")
    assert align_corpus.process_chunk(first.pk) == "done"
    assert sorted(predictions(run)) == before
    assert run.chunks.get(index=0).attempts == 2
    assert align_corpus.process_chunk(10**9) == "gone"


def test_cancel_is_checked_between_chunks() -> None:
    corpus = build_corpus(n_articles=4)
    run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "jaccard"), chunk_size=1)
    chunks = list(run.chunks.order_by("index"))
    assert align_corpus.process_chunk(chunks[0].pk) == "done"
    jobs.request_cancel(job_id(run))
    assert align_corpus.run_inline(run) == "cancelled"
    job = Job.objects.get(pk=job_id(run))
    assert job.status == Job.Status.CANCELLED and job.progress_done == 1
    assert run.chunks.filter(status=RunChunk.Status.PENDING).count() == 3


def test_model_choice_promoted_explicit_and_errors() -> None:
    from alignment_engine import api

    corpus = build_corpus(n_articles=1)
    assert align_corpus.resolve_model(corpus).method == api.DEFAULT_METHOD
    mv = ModelVersion.objects.create(name="m", method="crf", language="en", path="/nowhere", is_promoted=True)
    choice = align_corpus.resolve_model(corpus)
    assert choice.model_version == mv and choice.method == "crf"
    assert align_corpus.resolve_model(corpus, "tfidf").model_version is None
    with pytest.raises(align_corpus.AlignSetupError):
        align_corpus.resolve_model(corpus, "no-such-method")
    with pytest.raises(align_corpus.AlignSetupError):
        align_corpus.resolve_model(corpus, "crf")
    with pytest.raises(align_corpus.AlignSetupError):
        align_corpus.resolve_model(corpus, model_version_id=10**9)


def test_a_failing_chunk_fails_the_job() -> None:
    corpus = build_corpus(n_articles=2)
    mv = ModelVersion.objects.create(name="broken", method="crf", language="en", path="/nonexistent/model")
    run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, model_version_id=mv.pk), chunk_size=1)
    with pytest.raises(Exception):  # noqa: B017 - whatever the engine raises for a missing model
        align_corpus.run_inline(run)
    job = Job.objects.get(pk=job_id(run))
    assert job.status == Job.Status.FAILED and job.error
    assert run.chunks.get(index=0).status == RunChunk.Status.FAILED
    assert not PredictedAlignment.objects.filter(run=run).exists()


def test_command_sync_and_errors(capsys) -> None:  # type: ignore[no-untyped-def]
    corpus = build_corpus(n_articles=3)
    call_command("align_corpus", corpus.name, "--method", "tfidf", "--chunk-size", "2", "--sync")
    out = capsys.readouterr().out
    assert "succeeded" in out and "2 chunks" in out
    run = corpus.alignment_runs.get()
    assert set(predictions(run)) == expected_alignment(corpus)
    with pytest.raises(CommandError, match="no corpus"):
        call_command("align_corpus", "missing corpus", "--sync")
    with pytest.raises(CommandError, match="unknown method"):
        call_command("align_corpus", corpus.name, "--method", "nope", "--sync")
    with pytest.raises(CommandError, match="unknown pair ids"):
        call_command("align_corpus", corpus.name, "--method", "tfidf", "--pairs", "zzz", "--sync")


def test_a_cancelled_run_can_be_resumed_without_redoing_done_chunks(capsys) -> None:  # type: ignore[no-untyped-def]
    corpus = build_corpus(n_articles=3)
    run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "jaccard"), chunk_size=1)
    first = run.chunks.get(index=0)
    align_corpus.process_chunk(first.pk)
    jobs.request_cancel(job_id(run))
    assert align_corpus.run_inline(run) == "cancelled"
    call_command("align_corpus", "--resume", str(run.pk), "--sync")
    assert "2 chunks left" in capsys.readouterr().out
    job = Job.objects.get(pk=job_id(run))
    assert job.status == Job.Status.SUCCEEDED and job.progress_done == 3
    assert run.chunks.get(index=0).attempts == 1  # not redone
    assert set(predictions(run)) == expected_alignment(corpus)
    call_command("align_corpus", "--resume", str(run.pk))
    assert "0 chunks left" in capsys.readouterr().out


def test_corpus_page_lists_latest_runs(client_for, researcher) -> None:  # type: ignore[no-untyped-def]
    from django.urls import reverse

    corpus = build_corpus(n_articles=2)
    run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "jaccard"), chunk_size=5)
    align_corpus.run_inline(run)
    html = client_for(researcher).get(reverse("curation:corpus_detail", args=[corpus.pk])).content.decode()
    assert f"run #{run.pk}" in html and "(jaccard, succeeded, 8 predictions)" in html


def test_run_maintains_its_prediction_count_and_stores_its_statistics_at_the_end() -> None:
    from pipeline.services import corpus_stats

    corpus = build_corpus(n_articles=3)
    run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "jaccard"), chunk_size=2)
    first = run.chunks.order_by("index").first()
    assert first is not None and align_corpus.process_chunk(first.pk) == "done"
    run.refresh_from_db()
    assert run.prediction_count == PredictedAlignment.objects.filter(run=run).count() > 0
    assert run.stats == {}  # not finished yet
    # a chunk written again replaces its rows: the count does not grow
    RunChunk.objects.filter(pk=first.pk).update(status=RunChunk.Status.PENDING)
    assert align_corpus.process_chunk(first.pk) == "done"
    run.refresh_from_db()
    assert run.prediction_count == PredictedAlignment.objects.filter(run=run).count()
    assert align_corpus.run_inline(run) == "done"
    run.refresh_from_db()
    assert run.prediction_count == PredictedAlignment.objects.filter(run=run).count() == len(expected_alignment(corpus))
    fresh = corpus_stats.label_part(corpus, f"run:{run.pk}")
    assert fresh["labelled_pairs"] == 3
    assert {k: run.stats[k] for k in fresh} == fresh
    assert run.stats["fingerprint"][1] == run.prediction_count
