"""Retrain the neural CRF aligner on verified labels, evaluate it, register the version.

1. Labels and their split by article group: :mod:`pipeline.services.labelled_data`, which says per
   document pair whether its labels are complete or partial (a job chosen by a selection strategy);
   the unlabelled candidates of a partial pair are marginalised out in training, not read as negatives.
2. ``alignment_engine.api.train`` on the train split (the dev split scored, held out; the default learned
   decoder tunes nothing on it), written under ``settings.MODELS_DIR``.
3. The trained model is scored on test (Task 1 and Task 2) and registered as a :class:`ModelVersion`
   with its metrics and the counts of the data it saw. By the engine's default (``refit_with_dev``) the
   registered model was retrained on train + dev after the same training on train alone was scored on
   dev: its dev figures are that held-out score (``model.json`` ``dev_metrics``), never the refitted
   model's own output on dev, and ``config["trained_on"]`` says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings

from curation.models import Corpus
from pipeline import jobs
from pipeline.jobs import Outcome
from pipeline.models import Job, ModelVersion
from pipeline.services import registry
from pipeline.services.labelled_data import DEFAULT_RATIOS, RetrainError, collect_labelled_data, corpus_ids_for, score

PROGRESS_TOTAL = 100
TRAIN_FIRST, TRAIN_LAST = 5, 88  # the job's progress range of the engine's training run


def retrain(
    language: str,
    corpus: Corpus | None = None,
    seed: int = 0,
    ratios: Sequence[float] = DEFAULT_RATIOS,
    reference_roles: Sequence[str] = (),
    config: dict[str, Any] | None = None,
    name: str = "",
    out_dir: Path | None = None,
    device: str = "auto",
    progress: Callable[..., None] | None = None,
    job: Any = None,
    user: Any = None,
) -> ModelVersion:
    """Train, evaluate on dev and test, register. ``config`` goes to ``alignment_engine.api.train``."""
    from alignment_engine import api

    data = collect_labelled_data(corpus_ids_for(corpus, language), seed, ratios, reference_roles)
    if not data.pairs["train"] or not any(a.label != "notAligned" for a in data.gold["train"]):
        raise RetrainError("no aligned labels in the train split: verify some candidate pairs first")
    scope = corpus.name if corpus is not None else f"all {language} corpora"
    name = name or f"crf {scope} seed {seed}" + (f" (job {job.pk})" if job is not None else "")
    target = out_dir or Path(settings.MODELS_DIR) / f"{language}-{'job' + str(job.pk) if job else 'seed' + str(seed)}"
    model_dir = api.train(
        data.pairs["train"], data.gold["train"],
        data.pairs["dev"] or None, data.gold["dev"] or None,
        out_dir=target, seed=seed, device=device, progress=progress, unlabelled=data.unlabelled, **(config or {}),
    )
    aligner = api.load_aligner("crf", model_dir, device=device)
    meta = api.read_model_meta(model_dir)
    refitted = api.trained_on(meta) != "train"  # the engine's default: dev scored by the run on train alone
    dev = held_out_dev(meta) if refitted else score(aligner, data.pairs["dev"], data.gold["dev"], data.unlabelled)
    metrics = {"dev": dev, "test": score(aligner, data.pairs["test"], data.gold["test"], data.unlabelled)}
    return ModelVersion.objects.create(
        name=name[:200], method="crf", language=language, path=str(model_dir), job=job,
        config={"train": config or {}, "ratios": list(ratios), "reference_roles": list(reference_roles),
                "corpus": corpus.pk if corpus else None, "splits": data.articles,
                "trained_on": "train + dev (dev figures: the same training on train alone)" if refitted else "train"},
        metrics=metrics, data_counts=data.counts(), seed=seed, created_by=user if user and user.is_authenticated else None,
    )


def held_out_dev(meta: dict[str, Any]) -> dict[str, Any]:
    """The dev figures of a refitted model (``model.json`` ``dev_metrics``, scored by the engine on dev with
    the model trained on train alone, unlabelled candidates left out as :func:`score` leaves them), in the
    shape :func:`score` gives."""
    dev = meta.get("dev_metrics") or {}
    return {k: dev[k] for k in ("task1", "task2", "counts") if k in dev}


def progress_units(done: int, total: int) -> int:
    """Job progress (of 100) from the engine's training progress ``(done, total)`` (steps of the whole run:
    ``alignment_engine.training.RunProgress``), mapped onto 5-88."""
    fraction = min(max(done, 0), max(total, 1)) / max(total, 1)
    return TRAIN_FIRST + int((TRAIN_LAST - TRAIN_FIRST) * fraction)


def create_job(params: dict[str, Any], corpus: Corpus | None = None, user: Any = None) -> Job:
    """The job row of a retraining (send it with ``pipeline.tasks.enqueue_retrain`` to the ``train``
    queue, or run it here with :func:`run_job`)."""
    return jobs.create_job(Job.Kind.RETRAIN, params, corpus=corpus, user=user, total=PROGRESS_TOTAL)


def run_job(job_id: int, echo: Callable[[str, int], None] | None = None,
            retry_on: tuple[type[BaseException], ...] = ()) -> Outcome:
    """Run a retraining job. Parameters: language, seed, ratios, reference_roles, config (passed
    to ``api.train``), name, baselines (methods scored on the same split), device."""

    def body(job: Job, recorder: jobs.ProgressRecorder) -> jobs.Finished:
        existing = ModelVersion.objects.filter(job=job, method="crf").first()
        if existing is not None:  # redelivered after the version was registered
            return jobs.Finished({"model_version": existing.pk}, outcome=Outcome.SKIPPED)
        p = job.params
        language = p.get("language") or (job.corpus.language if job.corpus else "en")
        recorder(2, PROGRESS_TOTAL, message="collecting labels")

        def progress(*args: Any) -> None:
            """The engine's training callback: ``(done, total)`` steps of the run, or a log line."""
            if len(args) == 2 and all(isinstance(a, int) for a in args):
                recorder(progress_units(args[0], args[1]))
            elif len(args) == 1 and isinstance(args[0], str):
                recorder(recorder.done, message=args[0])
                if echo is not None:
                    echo(args[0], recorder.done)
            jobs.check_cancel(job_id)

        try:
            version = retrain(
                language, corpus=job.corpus, seed=int(p.get("seed", 0)), ratios=p.get("ratios", DEFAULT_RATIOS),
                reference_roles=p.get("reference_roles", ()), config=p.get("config") or {}, name=p.get("name", ""),
                device=p.get("device", "auto"), progress=progress, job=job, user=job.created_by,
            )
        except jobs.JobCancelled:
            raise jobs.JobCancelled("cancelled during training") from None
        recorder(92, message="scoring baselines")
        baselines = [
            registry.evaluate_baseline(method, language, corpus=job.corpus, seed=version.seed,
                                       ratios=p.get("ratios", DEFAULT_RATIOS),
                                       reference_roles=p.get("reference_roles", ())).pk
            for method in p.get("baselines", [])
        ]
        recorder(PROGRESS_TOTAL)
        return jobs.Finished({"model_version": version.pk, "metrics": version.metrics,
                              "data_counts": version.data_counts, "baselines": baselines},
                             f"registered {version.name}")

    return jobs.run(job_id, body, message="collecting labels", retry_on=retry_on)
