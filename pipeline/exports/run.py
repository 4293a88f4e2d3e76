"""Dataset exports: Manual (human labels), Auto (a corpus run's predictions, filtered) and the
simple-sentence pool for back-translation, each with a generated dataset card.

``create_export`` checks the parameters and makes the ExportedDataset row and its job;
``run_export(dataset_id, progress=None)`` builds the files (Celery task, management command,
tests). It streams rows from the database, processes them one document pair (Auto) or one
article (Manual) at a time, writes each file atomically into a staging folder, renames the
folder into place, and only then stores the file list and card on the ExportedDataset row (one
UPDATE in one transaction, which also finishes the job). A failure at any point leaves no file
under the final name and no half-filled row.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings

from curation.curate.filters import build_filters
from curation.models import Corpus, DocumentPair, Sentence
from pipeline import jobs
from pipeline.exports.auto import export_auto
from pipeline.exports.card import card_markdown
from pipeline.exports.manual import export_manual
from pipeline.exports.parameters import ALIGNED_LABELS, ExportError, Params
from pipeline.exports.pool import export_pool
from pipeline.exports.writers import write_json_atomic, write_text_atomic
from pipeline.jobs import Echo, Outcome, ProgressRecorder
from pipeline.models import AlignmentRun, ExportedDataset, Job, PredictedAlignment

Builder = Callable[[ExportedDataset, Params, Path, ProgressRecorder], dict[str, Any]]

BUILDERS: dict[ExportedDataset.Kind, Builder] = {
    ExportedDataset.Kind.AUTO: export_auto,
    ExportedDataset.Kind.MANUAL: export_manual,
    ExportedDataset.Kind.POOL: export_pool,
}


def export_folder(dataset: ExportedDataset) -> Path:
    return Path(settings.EXPORTS_DIR) / f"{dataset.corpus_id}-{dataset.kind}-{dataset.pk}"


STAGING_PREFIX = ".staging-"


def remove_orphan_staging() -> list[Path]:
    """Remove the staging folders of exports no longer running (a killed worker leaves one of
    empty files behind). A folder is ``.staging-<corpus>-<kind>-<dataset>-<random>``; it is
    kept while its dataset's job is queued or running. Runs at the start of every export and
    from ``manage.py clean_exports``; returns what it removed."""
    root = Path(settings.EXPORTS_DIR)
    if not root.is_dir():
        return []
    folders = list(root.glob(f"{STAGING_PREFIX}*"))
    if not folders:
        return []
    active = set(ExportedDataset.objects.filter(job__status__in=jobs.ACTIVE).values_list("pk", flat=True))
    removed = []
    for folder in folders:
        parts = folder.name[len(STAGING_PREFIX):].split("-")
        dataset_id = int(parts[2]) if len(parts) >= 4 and parts[2].isascii() and parts[2].isdigit() else None
        if dataset_id not in active and folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def export_file(dataset: ExportedDataset, name: str) -> Path:
    """The path of one of the export's listed files; ``FileNotFoundError`` for any other name
    (nothing outside the export's folder is ever served)."""
    if name not in {f["name"] for f in dataset.files} or not dataset.path:
        raise FileNotFoundError("no such file in this export")
    root = Path(settings.EXPORTS_DIR).resolve()
    path = (root / dataset.path / name).resolve()
    if root not in path.parents or not path.is_file():
        raise FileNotFoundError("file missing")
    return path


def download_name(dataset: ExportedDataset, name: str) -> str:
    return f"{dataset.corpus_id}-{dataset.kind}-{dataset.pk}-{name}"


def total_rows(dataset: ExportedDataset, params: Params) -> int:
    if dataset.kind == ExportedDataset.Kind.AUTO and dataset.run_id:
        return PredictedAlignment.objects.filter(run_id=dataset.run_id, label__in=params.labels or ALIGNED_LABELS).count()
    if dataset.kind == ExportedDataset.Kind.POOL:
        simple_docs = DocumentPair.objects.filter(corpus_id=dataset.corpus_id).values("simple_id")
        return Sentence.objects.filter(document_id__in=simple_docs).count()
    return 0


def run_export(dataset_id: int, progress: Echo | None = None, retry_on: tuple[type[BaseException], ...] = ()) -> Outcome:
    """Build the files of one ExportedDataset through its job's lifecycle (:func:`pipeline.jobs.run`).

    Idempotent: a finished export is left alone (``SKIPPED``). ``CANCELLED`` when its job was
    asked to stop (nothing is left behind); otherwise raises after marking the job failed.
    """
    dataset = ExportedDataset.objects.select_related("corpus", "run", "run__model_version").filter(pk=dataset_id).first()
    if dataset is None or dataset.files:
        return Outcome.SKIPPED
    job_id = dataset.job_id
    if job_id is None:
        raise ExportError(f"export {dataset_id} has no job (make exports with create_export)")
    try:
        params = Params.from_dict(dict(dataset.params))
    except (ExportError, ValueError, TypeError) as exc:
        jobs.fail(job_id, str(exc), message=str(exc))
        raise ExportError(str(exc)) from exc

    def body(job: Job, recorder: ProgressRecorder) -> jobs.Finished:
        started = time.monotonic()
        remove_orphan_staging()
        recorder(0, total_rows(dataset, params), message=f"exporting {dataset.get_kind_display()}")
        final = export_folder(dataset)
        staging = final.parent / f"{STAGING_PREFIX}{final.name}-{uuid.uuid4().hex[:8]}"
        staging.mkdir(parents=True)
        try:
            card = BUILDERS[ExportedDataset.Kind(dataset.kind)](dataset, params, staging, recorder)
            title = f"{dataset.corpus.name}: {dataset.get_kind_display()} export"
            card_files = [write_json_atomic(staging / "card.json", card),
                          write_text_atomic(staging / "README.md", card_markdown(card, title))]
            if final.exists():  # left over by an earlier attempt that died before saving the row
                shutil.rmtree(final)
            staging.rename(final)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

        def save() -> Outcome | None:
            """The files and card land on the row in the transaction that finishes the job."""
            updated = ExportedDataset.objects.filter(pk=dataset.pk, files=[]).update(
                path=str(final.relative_to(Path(settings.EXPORTS_DIR))), files=card["files"] + card_files, card=card
            )
            return None if updated else Outcome.SKIPPED

        rows = card["counts"]["rows"]
        return jobs.Finished({"dataset": dataset.pk, "rows": rows, "seconds": round(time.monotonic() - started, 2)},
                             f"{rows} rows", save=save, undo=lambda: shutil.rmtree(final, ignore_errors=True))

    return jobs.run(job_id, body, echo=progress, echo_every=1000, retry_on=retry_on)


def create_export(
    corpus_id: int, kind: str, params: dict[str, Any], run_id: int | None = None, user: Any = None
) -> ExportedDataset:
    """An ExportedDataset and its Job (kind export); send it with ``pipeline.tasks.enqueue_export``."""
    checked = Params.from_dict(dict(params))  # validate early: no job row for parameters that cannot run
    try:
        build_filters(checked.filters)
    except (ValueError, OSError) as exc:
        raise ExportError(str(exc)) from exc
    if kind not in ExportedDataset.Kind.values:
        raise ExportError(f"unknown export kind {kind!r}")
    corpus = Corpus.objects.get(pk=corpus_id)
    if kind == ExportedDataset.Kind.AUTO:
        if run_id is None:
            raise ExportError("an Auto export needs an alignment run")
        if not AlignmentRun.objects.filter(pk=run_id, corpus=corpus).exists():
            raise ExportError(f"run {run_id} is not a run of corpus {corpus.name!r}")
    job = jobs.create_job(Job.Kind.EXPORT, {"kind": kind, **params, "run": run_id}, corpus=corpus, user=user)
    return ExportedDataset.objects.create(
        corpus=corpus, kind=kind, format=params.get("format", "tsv"), run_id=run_id, job=job, params=params,
        created_by=user if user is not None and getattr(user, "is_authenticated", False) else None,
    )
