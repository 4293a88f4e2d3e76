"""The pipeline models moved from curation to pipeline without touching their tables: a database
holding rows written under the old migrations (curation.0003) still has them, under the new
models, after migrating forward."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

OLD: list[tuple[str, str | None]] = [("curation", "0003_runs_chunk_worker"), ("pipeline", None)]


@pytest.mark.django_db(transaction=True)
def test_rows_written_before_the_move_are_found_by_the_pipeline_models() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(OLD)  # type: ignore[arg-type]  # None: the app unmigrated
    old = MigrationExecutor(connection).loader.project_state([("curation", "0003_runs_chunk_worker"), ("contenttypes", "0002_remove_content_type_name")]).apps
    corpus = old.get_model("curation", "Corpus").objects.create(name="before the move", language="en")
    job = old.get_model("curation", "Job").objects.create(kind="align_corpus", status="succeeded", corpus=corpus,
                                                          params={"method": "tfidf"}, progress_done=2, progress_total=2)
    version = old.get_model("curation", "ModelVersion").objects.create(name="mv", method="crf", path="/m", job=job,
                                                                       is_promoted=True, metrics={"dev": {}})
    run = old.get_model("curation", "AlignmentRun").objects.create(corpus=corpus, model_version=version, method="crf",
                                                                   job=job)
    old.get_model("curation", "RunChunk").objects.create(run=run, index=0, pair_ids=[1, 2], status="done", worker="w:1")
    export = old.get_model("curation", "ExportedDataset").objects.create(corpus=corpus, kind="auto", run=run, job=job,
                                                                        files=[{"name": "train.tsv"}])
    content_type = old.get_model("contenttypes", "ContentType")
    content_type.objects.get_or_create(app_label="curation", model="job")

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    from curation.models import Corpus
    from pipeline.models import AlignmentRun, ExportedDataset, Job, ModelVersion, RunChunk

    moved_job = Job.objects.get(pk=job.pk)
    assert moved_job.status == Job.Status.SUCCEEDED and moved_job.params == {"method": "tfidf"}
    assert moved_job.corpus == Corpus.objects.get(name="before the move")
    assert ModelVersion.objects.get(pk=version.pk).is_promoted and ModelVersion.objects.get(pk=version.pk).job == moved_job
    moved_run = AlignmentRun.objects.get(pk=run.pk)
    assert moved_run.model_version_id == version.pk and moved_run.job == moved_job
    assert list(RunChunk.objects.filter(run=moved_run).values_list("index", "pair_ids", "worker")) == [(0, [1, 2], "w:1")]
    assert ExportedDataset.objects.get(pk=export.pk).files == [{"name": "train.tsv"}]
    assert Job._meta.db_table == "curation_job"  # the same table
    from django.contrib.contenttypes.models import ContentType

    assert ContentType.objects.filter(app_label="pipeline", model="job").exists()
    assert not ContentType.objects.filter(app_label="curation", model="job").exists()
    # new rows go on in the same sequence
    assert Job.objects.create(kind="export").pk > moved_job.pk
