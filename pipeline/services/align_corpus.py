"""Align a whole corpus with a model version or a baseline, in chunks spread over workers.

A run is an :class:`AlignmentRun` with one :class:`RunChunk` per slice of document pairs and
one Celery task per chunk. Processing a chunk is idempotent: the predictions are computed
first, then — in one transaction, with the chunk row locked — the chunk's previous
predictions for this run are deleted, the new ones inserted and the chunk marked done. A
worker killed anywhere in between leaves either nothing or the complete chunk behind; the
redelivered task (late acknowledgement, reject on worker lost) redoes or skips it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, F, Q, Subquery
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from curation.models import Corpus, DocumentPair
from curation.plain import load_plain_pairs
from pipeline import jobs
from pipeline.jobs import Outcome
from pipeline.models import AlignmentRun, Job, ModelVersion, PredictedAlignment, RunChunk
from pipeline.services import corpus_stats
from pipeline.services.registry import promoted_for

DEFAULT_CHUNK_SIZE = 20
INSERT_BATCH = 2000
LABELS = {"aligned": "aligned", "identical": "aligned", "partialAligned": "partialAligned"}

logger = logging.getLogger(__name__)
_ALIGNERS: dict[tuple[str, str], Any] = {}
_ALIGNERS_LOCK = threading.Lock()


class AlignSetupError(ValueError):
    """The run cannot be planned (unknown method, model without files, empty corpus)."""


@dataclass(frozen=True)
class ModelChoice:
    method: str
    model_version: ModelVersion | None

    @property
    def model_dir(self) -> str:
        return self.model_version.path if self.model_version is not None else ""


def resolve_model(corpus: Corpus, method: str | None = None, model_version_id: int | None = None) -> ModelChoice:
    """An explicit model version, else an explicit method, else the language's promoted model,
    else the engine's default method (the best one that needs no training)."""
    from alignment_engine import api

    if model_version_id is not None:
        mv = ModelVersion.objects.filter(pk=model_version_id).first()
        if mv is None:
            raise AlignSetupError(f"model version {model_version_id} does not exist")
        return ModelChoice(mv.method, mv)
    if method:
        if method not in api.METHODS:
            raise AlignSetupError(f"unknown method {method!r}; choose one of {', '.join(api.METHODS)}")
        if method == "crf":
            raise AlignSetupError("the crf method needs a model version (train one, or pass --model)")
        return ModelChoice(method, None)
    promoted = promoted_for(corpus.language)
    if promoted is not None:
        return ModelChoice(promoted.method, promoted)
    return ModelChoice(api.DEFAULT_METHOD, None)


def get_aligner(method: str, model_dir: str = "") -> Any:
    """One aligner per (method, model) and process: loading a model is the slow part."""
    from alignment_engine import api

    key = (method, model_dir)
    with _ALIGNERS_LOCK:
        aligner = _ALIGNERS.get(key)
        if aligner is None:
            aligner = api.load_aligner(method, model_dir or None)
            _ALIGNERS[key] = aligner
    return aligner


def plan_run(
    corpus: Corpus,
    choice: ModelChoice,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    pair_pks: Sequence[int] | None = None,
    user: Any = None,
    extra_params: dict[str, Any] | None = None,
) -> AlignmentRun:
    """Create the job, the run and its chunks (in the caller's transaction if there is one)."""
    if chunk_size < 1:
        raise AlignSetupError("chunk size must be at least 1")
    if choice.model_version is not None and choice.method == "crf" and not choice.model_version.path:
        raise AlignSetupError(f"model version {choice.model_version} has no model directory")
    pks = list(pair_pks) if pair_pks is not None else list(
        DocumentPair.objects.filter(corpus=corpus).order_by("pk").values_list("pk", flat=True)
    )
    if not pks:
        raise AlignSetupError(f"corpus {corpus} has no document pairs")
    chunks = [pks[i : i + chunk_size] for i in range(0, len(pks), chunk_size)]
    params = {
        "method": choice.method,
        "model_version": choice.model_version.pk if choice.model_version else None,
        "chunk_size": chunk_size,
        "pairs": len(pks),
        **(extra_params or {}),
    }
    with transaction.atomic():
        job = jobs.create_job(Job.Kind.ALIGN_CORPUS, params, corpus=corpus, user=user, total=len(chunks))
        run = AlignmentRun.objects.create(
            corpus=corpus, model_version=choice.model_version, method=choice.method, job=job, params=params
        )
        RunChunk.objects.bulk_create([RunChunk(run=run, index=i, pair_ids=c) for i, c in enumerate(chunks)])
    return run


def resume_run(run: AlignmentRun) -> int:
    """Make a failed or cancelled run runnable again: failed chunks back to pending, the job back to
    queued. Done chunks are kept. Returns the number of chunks left to do; send them with
    :func:`pipeline.tasks.enqueue_run` (or run :func:`run_inline`)."""
    with transaction.atomic():
        run.chunks.filter(status=RunChunk.Status.FAILED).update(status=RunChunk.Status.PENDING, error="")
        left = run.chunks.exclude(status=RunChunk.Status.DONE).count()
        if run.job_id is not None and left:
            Job.objects.filter(pk=run.job_id).update(
                status=Job.Status.QUEUED, cancel_requested=False, error="", finished_at=None,
                message=f"resumed: {left} chunks left",
            )
    return left


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def process_chunk(chunk_id: int, worker: str = "") -> Outcome:
    """Align one chunk and store its predictions. Returns what happened:
    ``GONE`` (no such chunk), ``SKIPPED`` (already done), ``CANCELLED`` or ``DONE``."""
    chunk = RunChunk.objects.select_related("run", "run__model_version").filter(pk=chunk_id).first()
    if chunk is None:
        return Outcome.GONE
    if chunk.status == RunChunk.Status.DONE:
        return Outcome.SKIPPED
    run = chunk.run
    job_id = run.job_id
    if job_id is not None:
        if jobs.cancel_requested(job_id):
            jobs.mark_cancelled(job_id, "cancelled between chunks")
            return Outcome.CANCELLED
        jobs.start(job_id)
    RunChunk.objects.filter(pk=chunk_id).update(
        attempts=F("attempts") + 1, worker=(worker or worker_name())[:200], started_at=timezone.now()
    )
    with jobs.heartbeat(job_id):
        outcome = _align_and_store(chunk, run)
    if outcome == Outcome.DONE and job_id is not None:
        update_run_progress(run)
    return outcome


def _align_and_store(chunk: RunChunk, run: AlignmentRun) -> Outcome:
    chunk_id = chunk.pk
    plain = load_plain_pairs(chunk.pair_ids)
    model_dir = run.model_version.path if run.model_version is not None else ""
    aligner = get_aligner(run.method, model_dir)
    results = aligner.align([p.doc for p in plain]) if plain else []
    rows: list[PredictedAlignment] = []
    for pp, alignments in zip(plain, results, strict=True):
        seen: set[tuple[int, int]] = set()
        for a in alignments:
            label = LABELS.get(a.label)
            if label is None:
                continue
            key = (pp.sentence_pk[a.simple_id], pp.sentence_pk[a.complex_id])
            if key in seen:
                continue
            seen.add(key)
            rows.append(
                PredictedAlignment(run=run, pair_id=pp.pk, simple_id=key[0], complex_id=key[1], label=label,
                                   score=None if a.score is None else float(a.score))
            )
    pause = float(run.params.get("pause_before_write_s", 0) or 0)
    if pause and chunk.attempts == 0:  # first attempt only: a window to kill a worker in (fault-tolerance test)
        time.sleep(pause)
    with transaction.atomic():
        locked = RunChunk.objects.select_for_update().get(pk=chunk_id)
        if locked.status == RunChunk.Status.DONE:
            return Outcome.SKIPPED
        _, deleted = PredictedAlignment.objects.filter(run=run, pair_id__in=chunk.pair_ids).delete()
        PredictedAlignment.objects.bulk_create(rows, batch_size=INSERT_BATCH)
        change = len(rows) - deleted.get(PredictedAlignment._meta.label, 0)
        AlignmentRun.objects.filter(pk=run.pk).update(prediction_count=F("prediction_count") + change)
        locked.status = RunChunk.Status.DONE
        locked.error = ""
        locked.finished_at = timezone.now()
        locked.save(update_fields=["status", "error", "finished_at"])
    return Outcome.DONE


def update_run_progress(run: AlignmentRun) -> None:
    """Job progress = chunks done, counted in the UPDATE itself (never an increment, never
    lower than an earlier count: two chunks finishing together cannot leave 18/76 when 19 are
    done); the job succeeds when every chunk is done."""
    if run.job_id is None:
        return
    counts = dict(run.chunks.order_by().values_list("status").annotate(n=Count("pk")))
    done = counts.get(RunChunk.Status.DONE, 0)
    total = sum(counts.values())
    done_now = (RunChunk.objects.filter(run_id=run.pk, status=RunChunk.Status.DONE).order_by()
                .values("run_id").annotate(n=Count("pk")).values("n"))
    jobs.set_progress(run.job_id, Greatest(F("progress_done"), Coalesce(Subquery(done_now), 0)), total,
                      message=f"{done}/{total} chunks")
    if done == total:
        summary = run_summary(run)
        # the count kept up by each chunk's write, made exact once the run is complete
        AlignmentRun.objects.filter(pk=run.pk).update(prediction_count=summary["predictions"])
        try:
            corpus_stats.store_run_stats(run)
        except Exception:  # the statistics are recomputed when first asked for; the run itself is done
            logger.exception("statistics of run %s not stored", run.pk)
        jobs.finish(run.job_id, result=summary, message=f"{total} chunks aligned")


def fail_chunk(chunk_id: int, error: str) -> None:
    chunk = RunChunk.objects.select_related("run").filter(pk=chunk_id).first()
    if chunk is None:
        return
    RunChunk.objects.filter(pk=chunk_id).exclude(status=RunChunk.Status.DONE).update(
        status=RunChunk.Status.FAILED, error=error[-5000:]
    )
    if chunk.run.job_id is not None:
        jobs.fail(chunk.run.job_id, error, message=f"chunk {chunk.index} failed")


def run_summary(run: AlignmentRun) -> dict[str, Any]:
    counts = PredictedAlignment.objects.filter(run=run).aggregate(
        predictions=Count("pk"), aligned=Count("pk", filter=Q(label="aligned")),
        partialAligned=Count("pk", filter=Q(label="partialAligned")),
    )
    return {"run": run.pk, "method": run.method, "model_version": run.model_version_id, **counts,
            "chunks": run.chunks.count()}


def run_inline(run: AlignmentRun, progress: Callable[[int, int], None] | None = None) -> Outcome:
    """Process every pending chunk in this process (``--sync``, tests); cancellation between chunks."""
    chunk_ids = list(run.chunks.exclude(status=RunChunk.Status.DONE).order_by("index").values_list("pk", flat=True))
    total = run.chunks.count()
    outcome = Outcome.DONE
    for chunk_id in chunk_ids:
        try:
            outcome = process_chunk(chunk_id)
        except Exception as exc:
            fail_chunk(chunk_id, f"{type(exc).__name__}: {exc}")
            raise
        if outcome == Outcome.CANCELLED:
            return outcome
        if progress is not None:
            progress(run.chunks.filter(status=RunChunk.Status.DONE).count(), total)
    return outcome
