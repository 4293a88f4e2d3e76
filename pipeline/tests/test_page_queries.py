"""Pages and API lists of the pipeline whose SQL must not grow with the corpus, its runs or its
predictions (issue 12 item 4): the job start form, the exports page, an alignment job's page and
the runs API. Each test measures a small setup, grows it, and asserts the same statement count;
none may read the predictions table (a corpus run holds ~500k rows)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from pipeline.exports.run import create_export
from pipeline.models import AlignmentRun, ExportedDataset, Job, ModelVersion, RunChunk
from pipeline.tests.export_factory import make_corpus, make_run

pytestmark = pytest.mark.django_db


def _queries(client: Any, url: str) -> tuple[list[dict[str, Any]], str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return captured.captured_queries, response.content.decode()


def _touches_predictions(queries: list[dict[str, Any]]) -> bool:
    return any("curation_predictedalignment" in q["sql"] for q in queries)


def _align_run(corpus: Any, chunks: int = 3) -> AlignmentRun:
    run = make_run(corpus)
    job = Job.objects.create(kind=Job.Kind.ALIGN_CORPUS, status=Job.Status.SUCCEEDED, corpus=corpus)
    AlignmentRun.objects.filter(pk=run.pk).update(job=job, prediction_count=run.predictions.count())
    RunChunk.objects.bulk_create(RunChunk(run=run, index=i, pair_ids=[], status="done" if i else "failed") for i in range(chunks))
    run.refresh_from_db()
    return run


def _no_server_side_cursors(monkeypatch: Any) -> None:
    """Choice lists by one plain SELECT (accounts.params.ModelChoiceField): ``QuerySet.iterator()``
    would be a server-side cursor on PostgreSQL, three round trips for a handful of rows."""
    from django.db.models.query import QuerySet

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("QuerySet.iterator() on a page")

    monkeypatch.setattr(QuerySet, "iterator", refuse)


def test_job_start_form_costs_the_same_with_more_corpora_pairs_and_models(client_for: Any, researcher: Any,
                                                                          monkeypatch: Any) -> None:
    _no_server_side_cursors(monkeypatch)
    corpus = make_corpus(n_articles=1)
    client = client_for(researcher)
    url = reverse("pipeline:job_start") + f"?corpus={corpus.pk}"
    client.get(url)  # warm the session
    small, _ = _queries(client, url)
    for i in range(4):
        make_corpus(name=f"more {i}", n_articles=3)
        ModelVersion.objects.create(name=f"crf-{i}", language="en", path=f"/models/{i}")
    _align_run(corpus)
    large, page = _queries(client, url)
    assert len(large) == len(small)
    assert page.count("<option") >= 5 + 4  # the new corpora and models are listed
    assert not _touches_predictions(large) and not any("curation_documentpair" in q["sql"] for q in large)


def test_exports_page_costs_the_same_with_more_runs_and_exports(client_for: Any, admin_user: Any, settings: Any,
                                                                 tmp_path: Path, monkeypatch: Any) -> None:
    _no_server_side_cursors(monkeypatch)
    settings.EXPORTS_DIR = tmp_path
    corpus = make_corpus(n_articles=1)
    _align_run(corpus)
    create_export(corpus.pk, ExportedDataset.Kind.POOL, {})
    client = client_for(admin_user)
    url = reverse("pipeline:export_list") + f"?corpus={corpus.pk}"
    client.get(url)
    small, _ = _queries(client, url)
    runs = [_align_run(corpus) for _ in range(4)]
    for run in runs:
        create_export(corpus.pk, ExportedDataset.Kind.AUTO, {"format": "tsv"}, run_id=run.pk)
    large, page = _queries(client, url)
    assert len(large) == len(small)
    assert all(f"#{run.pk} test" in page for run in runs)  # the runs column of the recent exports
    assert not _touches_predictions(large)


def test_an_alignment_jobs_page_reads_the_runs_prediction_count(client_for: Any, researcher: Any) -> None:
    corpus = make_corpus(n_articles=2)
    run = _align_run(corpus)
    AlignmentRun.objects.filter(pk=run.pk).update(prediction_count=487466)  # what the page shows: the maintained count
    client = client_for(researcher)
    url = reverse("pipeline:job_detail", args=[run.job_id])
    client.get(url)
    queries, page = _queries(client, url)
    assert "487466 predictions" in page
    assert not _touches_predictions(queries)


def test_runs_api_costs_the_same_for_one_run_or_many(client_for: Any, researcher: Any) -> None:
    corpus = make_corpus(n_articles=2)
    first = _align_run(corpus, chunks=3)
    client = client_for(researcher)
    url = f"/api/pipeline/runs/?corpus={corpus.pk}"
    client.get(url)
    small, body = _queries(client, url)
    more = [_align_run(corpus, chunks=2) for _ in range(4)]
    large, _ = _queries(client, url)
    assert len(large) == len(small)
    assert not _touches_predictions(small) and not _touches_predictions(large)
    rows = {row["id"]: row for row in client.get(url).json()["results"]}
    assert rows[first.pk]["chunks"] == {"pending": 0, "done": 2, "failed": 1}
    assert rows[more[0].pk]["chunks"] == {"pending": 0, "done": 1, "failed": 1}
    assert rows[first.pk]["predictions"] == first.prediction_count > 0
    detail = client.get(f"/api/pipeline/runs/{first.pk}/").json()
    assert detail["chunks"] == rows[first.pk]["chunks"] and detail["predictions"] == first.prediction_count
