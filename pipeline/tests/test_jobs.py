"""Job state changes, the throttled progress recorder, and the job pages (list, partial, cancel)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from pipeline import jobs
from pipeline.models import Job

pytestmark = pytest.mark.django_db


def new_job(**kw) -> Job:  # type: ignore[no-untyped-def]
    return jobs.create_job(Job.Kind.ALIGN_CORPUS, {"x": 1}, **kw)


def test_lifecycle_start_progress_finish() -> None:
    job = new_job()
    assert job.status == Job.Status.QUEUED
    assert jobs.start(job.pk, total=4, message="go")
    jobs.set_progress(job.pk, 2)
    jobs.add_progress(job.pk)
    job.refresh_from_db()
    assert (job.status, job.progress_done, job.progress_total, job.percent) == (Job.Status.RUNNING, 3, 4, 75)
    assert job.started_at is not None
    assert jobs.finish(job.pk, result={"n": 1})
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.result == {"n": 1} and job.finished_at is not None
    # a finished job never changes state again
    assert not jobs.fail(job.pk, "late error")
    assert not jobs.start(job.pk)
    jobs.set_progress(job.pk, 0)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.progress_done == 3 and job.error == ""


def test_fail_records_error() -> None:
    job = new_job()
    jobs.start(job.pk)
    assert jobs.fail(job.pk, "Traceback ... boom", message="ValueError: boom")
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "boom" in job.error and job.message == "ValueError: boom"


def test_cancel_queued_job_is_immediate_running_job_is_asked() -> None:
    queued = new_job()
    assert jobs.request_cancel(queued.pk)
    queued.refresh_from_db()
    assert queued.status == Job.Status.CANCELLED

    running = new_job()
    jobs.start(running.pk, total=3)
    jobs.set_progress(running.pk, 1)
    assert jobs.request_cancel(running.pk)
    running.refresh_from_db()
    assert running.status == Job.Status.RUNNING and running.cancel_requested
    with pytest.raises(jobs.JobCancelled):
        jobs.check_cancel(running.pk)
    assert jobs.mark_cancelled(running.pk)
    assert jobs.cancel_requested(running.pk)
    assert jobs.cancel_requested(10**9)  # a job that is gone counts as cancelled


def test_progress_recorder_throttles_but_always_writes_the_end() -> None:
    job = new_job()
    jobs.start(job.pk)
    rec = jobs.ProgressRecorder(job.pk, interval=3600)
    rec(1, 10)
    rec(5, 10)  # within the interval: not written
    job.refresh_from_db()
    assert (job.progress_done, job.progress_total) == (1, 10)
    rec(10, 10)
    job.refresh_from_db()
    assert job.progress_done == 10


def test_progress_recorder_stops_a_cancelled_job() -> None:
    job = new_job()
    jobs.start(job.pk)
    jobs.request_cancel(job.pk)
    with pytest.raises(jobs.JobCancelled):
        jobs.ProgressRecorder(job.pk)(1, 2)


def test_job_list_polls_only_active_jobs(client_for, researcher) -> None:  # type: ignore[no-untyped-def]
    active = new_job()
    jobs.start(active.pk, total=10)
    jobs.set_progress(active.pk, 4)
    done = new_job()
    jobs.start(done.pk, total=1)
    jobs.finish(done.pk)
    client = client_for(researcher)
    html = client.get(reverse("pipeline:job_list")).content.decode()
    assert f'id="job-progress-{active.pk}"' in html and f'id="job-progress-{done.pk}"' in html
    assert reverse("pipeline:job_progress", args=[active.pk]) in html
    assert reverse("pipeline:job_progress", args=[done.pk]) not in html
    assert 'data-width="40"' in html

    partial = client.get(reverse("pipeline:job_progress", args=[active.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="every 1s"' in partial and "4/10" in partial and "Cancel" in partial
    jobs.finish(active.pk)
    partial = client.get(reverse("pipeline:job_progress", args=[active.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in partial and "succeeded" in partial


def test_cancel_button_needs_researcher(client_for, researcher, verifier, annotator) -> None:  # type: ignore[no-untyped-def]
    job = new_job()
    jobs.start(job.pk, total=2)
    url = reverse("pipeline:job_cancel", args=[job.pk])
    assert client_for(annotator).get(reverse("pipeline:job_list")).status_code == 403
    assert client_for(verifier).post(url).status_code == 403
    job.refresh_from_db()
    assert not job.cancel_requested
    resp = client_for(researcher).post(url, HTTP_HX_REQUEST="true")
    assert resp.status_code == 200 and "stopping" in resp.content.decode()
    job.refresh_from_db()
    assert job.cancel_requested


def test_job_detail_shows_params_and_error(client_for, researcher) -> None:  # type: ignore[no-untyped-def]
    job = new_job()
    jobs.start(job.pk)
    jobs.fail(job.pk, "Traceback: something specific")
    html = client_for(researcher).get(reverse("pipeline:job_detail", args=[job.pk])).content.decode()
    assert "something specific" in html and "<dt>x</dt><dd class=\"mono\">1</dd>" in html
    assert "{&#x27;" not in html  # parameters as a definition list, never a Python dict


def test_progress_is_told_in_the_jobs_own_unit() -> None:
    export = jobs.create_job(Job.Kind.EXPORT, {})  # a Manual export: rows counted, total unknown
    jobs.start(export.pk)
    jobs.set_progress(export.pk, 11)
    export.refresh_from_db()
    assert export.progress_text == "11 rows" and not export.progress_known
    align = new_job(total=10)
    jobs.set_progress(align.pk, 7)
    align.refresh_from_db()
    assert align.progress_text == "7/10 chunks (70%)"
    retrain = jobs.create_job(Job.Kind.RETRAIN, {}, total=100)
    jobs.set_progress(retrain.pk, 62)
    retrain.refresh_from_db()
    assert retrain.progress_text == "62%"


def test_retrain_job_page_shows_metrics_and_counts_as_tables(client_for, researcher) -> None:  # type: ignore[no-untyped-def]
    job = jobs.create_job(Job.Kind.RETRAIN, {"seed": 0, "config": {}}, total=100)
    jobs.start(job.pk)
    counts = {"train": {"articles": 3, "pairs": 6, "labels": 40, "aligned": 10, "partialAligned": 2, "notAligned": 28},
              "dev": {"articles": 0, "pairs": 0, "labels": 0, "aligned": 0, "partialAligned": 0, "notAligned": 0},
              "test": {"articles": 1, "pairs": 2, "labels": 9, "aligned": 3, "partialAligned": 0, "notAligned": 6}}
    metrics = {"dev": {}, "test": {"task1": {"precision": 0.9, "recall": 0.75, "f1": 0.818},
                                   "task2": {"precision": 0.8, "recall": 0.5, "f1": 0.615}}}
    jobs.finish(job.pk, result={"model_version": 999, "metrics": metrics, "data_counts": counts})
    html = client_for(researcher).get(reverse("pipeline:job_detail", args=[job.pk])).content.decode()
    assert '<table class="table metrics">' in html and '<td class="num f1">81.8</td>' in html
    assert "The dev split is empty" in html and "{&#x27;" not in html
    assert '<svg' in html and "Labels per split" in html  # the label distribution chart
    assert "partially labelled pairs" in html and "are partially labelled" not in html  # a column, no note


def test_retrain_job_page_says_which_pairs_were_partially_labelled(client_for, researcher) -> None:  # type: ignore[no-untyped-def]
    job = jobs.create_job(Job.Kind.RETRAIN, {"seed": 0, "config": {}}, total=100)
    jobs.start(job.pk)
    row = {"articles": 2, "pairs": 4, "labels": 30, "aligned": 8, "partialAligned": 1, "notAligned": 21}
    counts = {"train": {**row, "partial_pairs": 3, "unlabelled": 57}, "dev": {**row, "partial_pairs": 1, "unlabelled": 5},
              "test": dict(row)}
    jobs.finish(job.pk, result={"model_version": 999, "metrics": {}, "data_counts": counts})
    html = client_for(researcher).get(reverse("pipeline:job_detail", args=[job.pk])).content.decode()
    assert "3 document pair(s) of the train split are partially labelled" in html
    assert "their 57 unlabelled candidates were marginalised out in training" in html
    assert "their 5 unlabelled candidates were left out of its scores" in html
    assert "of the test split are partially labelled" not in html
    body = html.split('<table class="table counts">', 1)[1].split("</table>", 1)[0]
    assert '<td class="num">57</td>' in body and '<td class="num">62</td>' in body  # train, and the total


def test_job_detail_lists_the_chunks_of_its_run(client_for, researcher) -> None:  # type: ignore[no-untyped-def]
    from pipeline.services import align_corpus
    from pipeline.tests.pipeline_corpus import build_corpus, job_id

    corpus = build_corpus(n_articles=3)
    run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "jaccard"), chunk_size=1)
    align_corpus.process_chunk(run.chunks.get(index=1).pk, worker="host-b:42")
    html = client_for(researcher).get(reverse("pipeline:job_detail", args=[job_id(run)])).content.decode()
    rows = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    assert rows.count("<tr>") == 3 and "host-b:42" in rows
    assert rows.index("<td>0</td>") < rows.index("<td>1</td>") < rows.index("<td>2</td>")
