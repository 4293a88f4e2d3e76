"""The pipeline API: jobs with progress and the stale flag, model versions with metrics, runs,
and exports whose download links serve the files; researchers and admins only."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from pipeline import jobs
from pipeline.exports.run import create_export, run_export
from pipeline.models import ExportedDataset, Job, ModelVersion
from pipeline.services import align_corpus
from pipeline.tests.pipeline_corpus import build_corpus

pytestmark = pytest.mark.django_db


def test_annotators_and_verifiers_are_refused(client, annotator, verifier) -> None:  # type: ignore[no-untyped-def]
    for user in (annotator, verifier):
        client.force_login(user)
        for url in ["/api/pipeline/jobs/", "/api/pipeline/models/", "/api/pipeline/runs/", "/api/pipeline/exports/"]:
            response = client.get(url)
            assert response.status_code == 403 and response.json()["code"] == "permission_denied"


def test_jobs_with_progress_and_stale_flag(client, researcher, settings) -> None:  # type: ignore[no-untyped-def]
    settings.JOB_STALE_MINUTES = 10
    corpus = build_corpus(n_articles=3)
    run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "jaccard"), 1)
    align_corpus.process_chunk(run.chunks.order_by("index").first().pk)
    fresh = jobs.create_job(Job.Kind.EXPORT, {})
    Job.objects.filter(pk=run.job_id).update(heartbeat_at=timezone.now() - timedelta(minutes=30))  # type: ignore[misc]
    client.force_login(researcher)
    rows = {row["id"]: row for row in client.get("/api/pipeline/jobs/").json()["results"]}
    stale = rows[run.job_id]
    assert (stale["status"], stale["progress_done"], stale["progress_total"], stale["percent"]) == ("running", 1, 3, 33)
    assert stale["stale"] is True and stale["resume_command"] == f"python manage.py resume_job {run.job_id}"
    assert rows[fresh.pk]["stale"] is False and rows[fresh.pk]["resume_command"] is None
    only = client.get("/api/pipeline/jobs/", {"kind": "export"}).json()["results"]
    assert [r["id"] for r in only] == [fresh.pk]
    assert client.get("/api/pipeline/jobs/", {"kind": "nope"}).json()["code"] == "invalid"
    runs = client.get("/api/pipeline/runs/", {"corpus": corpus.pk}).json()["results"]
    assert runs[0]["chunks"] == {"pending": 2, "done": 1, "failed": 0} and runs[0]["predictions"] > 0
    assert client.get("/api/pipeline/runs/", {"corpus": corpus.pk + 1}).json()["results"] == []  # another corpus


def test_model_versions_with_metrics(client, researcher) -> None:  # type: ignore[no-untyped-def]
    metrics = {"dev": {"task1": {"p": 0.9, "r": 0.8, "f1": 0.85}}}
    version = ModelVersion.objects.create(name="crf-1", language="de", metrics=metrics, path="/models/1")
    ModelVersion.objects.create(name="baseline", language="en")
    client.force_login(researcher)
    rows = client.get("/api/pipeline/models/", {"language": "de"}).json()["results"]
    assert [(r["id"], r["metrics"], r["trained"]) for r in rows] == [(version.pk, metrics, True)]


def test_exports_with_working_download_links(client, researcher, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.EXPORTS_DIR = tmp_path
    corpus = build_corpus(n_articles=2)
    dataset = create_export(corpus.pk, ExportedDataset.Kind.POOL, {})
    assert run_export(dataset.pk) == "done"
    client.force_login(researcher)
    listed = client.get("/api/pipeline/exports/", {"corpus": corpus.pk}).json()["results"]
    assert [r["id"] for r in listed] == [dataset.pk]
    assert client.get("/api/pipeline/exports/", {"corpus": corpus.pk + 1}).json()["results"] == []
    row = client.get(f"/api/pipeline/exports/{dataset.pk}/").json()
    assert row["status"] == "succeeded" and row["files"]
    for f in row["files"]:
        response = client.get(f["download"])
        assert response.status_code == 200, f
        assert b"".join(response.streaming_content) == (tmp_path / ExportedDataset.objects.get().path / f["name"]).read_bytes()
    missing = client.get(f"/api/pipeline/exports/{dataset.pk}/files/nope.tsv/")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
