"""Retrain the neural CRF aligner on verified labels, evaluate it, register the version.

1. Labels: every :class:`VerifiedLabel` (optionally also imported ``ReferenceAlignment`` rows of
   the chosen roles; a verified label wins over an imported one for the same sentence pair) of
   the corpus (or of every corpus in the language).
2. Split by article group, deterministically for the seed (no article in two splits).
3. ``alignment_engine.api.train`` on the train split (dev split for tuning), written under
   ``settings.MODELS_DIR``.
4. The trained model is scored on dev and test (Task 1 and Task 2) and registered as a
   :class:`ModelVersion` with its metrics and the counts of the data it saw.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from alignment_engine.types import Alignment, DocPair
from annotation.models import VerifiedLabel
from curation.models import Corpus, DocumentPair, ModelVersion, ReferenceAlignment
from curation.services.plain import PlainPair, load_plain_pairs

SPLITS = ("train", "dev", "test")
PROGRESS_TOTAL = 100
STEP_RE = re.compile(r"(encoder step|crf epoch) (\d+)/(\d+)")
DEFAULT_RATIOS = (0.7, 0.1, 0.2)  # Newsela-Manual: 35/5/10 article groups


class RetrainError(ValueError):
    """Not enough labelled data, or bad parameters."""


@dataclass
class LabelledData:
    """Plain pairs and gold rows per split, plus the counts a model version records."""

    pairs: dict[str, list[DocPair]] = field(default_factory=lambda: {s: [] for s in SPLITS})
    gold: dict[str, list[Alignment]] = field(default_factory=lambda: {s: [] for s in SPLITS})
    articles: dict[str, list[str]] = field(default_factory=lambda: {s: [] for s in SPLITS})

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for s in SPLITS:
            labels = self.gold[s]
            out[s] = {
                "articles": len(self.articles[s]),
                "pairs": len(self.pairs[s]),
                "labels": len(labels),
                "aligned": sum(a.label == "aligned" for a in labels),
                "partialAligned": sum(a.label == "partialAligned" for a in labels),
                "notAligned": sum(a.label == "notAligned" for a in labels),
            }
        return out


def split_articles(keys: Sequence[str], ratios: Sequence[float] = DEFAULT_RATIOS, seed: int = 0) -> dict[str, str]:
    """Article key -> split. Sorted, shuffled with ``seed``, cut by ``ratios`` (train, dev, test).

    With at least three articles dev and test get one each, so a small pool still evaluates.
    """
    if len(ratios) != 3 or any(r < 0 for r in ratios) or sum(ratios) <= 0:
        raise RetrainError("ratios must be three non-negative numbers (train, dev, test)")
    ordered = sorted(set(keys))
    random.Random(seed).shuffle(ordered)
    n = len(ordered)
    total = float(sum(ratios))
    n_dev = round(n * ratios[1] / total)
    n_test = round(n * ratios[2] / total)
    if n >= 3:
        n_dev = max(n_dev, 1 if ratios[1] > 0 else 0)
        n_test = max(n_test, 1 if ratios[2] > 0 else 0)
    n_train = max(n - n_dev - n_test, 0)
    out: dict[str, str] = {}
    for i, key in enumerate(ordered):
        out[key] = "train" if i < n_train else ("dev" if i < n_train + n_dev else "test")
    return out


def _label_rows(corpus_ids: Sequence[int], reference_roles: Sequence[str]) -> dict[tuple[int, int], tuple[int, str]]:
    """(simple pk, complex pk) -> (pair pk, label); verified labels override imported ones."""
    rows: dict[tuple[int, int], tuple[int, str]] = {}
    if reference_roles:
        ref = ReferenceAlignment.objects.filter(pair__corpus_id__in=corpus_ids, role__in=list(reference_roles))
        for pair_id, s, c, label in ref.values_list("pair_id", "simple_id", "complex_id", "label").order_by("pk"):
            rows[(s, c)] = (pair_id, label)
    verified = VerifiedLabel.objects.filter(candidate__pair__corpus_id__in=corpus_ids)
    for v_pair, v_simple, v_complex, v_label in verified.values_list(
        "candidate__pair_id", "candidate__simple_id", "candidate__complex_id", "label"
    ).order_by("pk"):
        rows[(int(v_simple), int(v_complex))] = (int(v_pair), str(v_label))
    return rows


def collect_labelled_data(
    corpus_ids: Sequence[int],
    seed: int = 0,
    ratios: Sequence[float] = DEFAULT_RATIOS,
    reference_roles: Sequence[str] = (),
) -> LabelledData:
    rows = _label_rows(corpus_ids, reference_roles)
    by_pair: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    for (s, c), (pair_pk, label) in rows.items():
        by_pair[pair_pk].append((s, c, label))
    article_key = {
        pk: f"{corpus_id}:{slug}"
        for pk, corpus_id, slug in DocumentPair.objects.filter(pk__in=list(by_pair)).values_list(
            "pk", "article__corpus_id", "article__slug"
        )
    }
    split_of = split_articles(list(article_key.values()), ratios, seed)
    data = LabelledData()
    plains: list[PlainPair] = load_plain_pairs(sorted(by_pair, key=lambda pk: (article_key[pk], pk)))
    for plain in plains:
        split = split_of[article_key[plain.pk]]
        texts = plain.doc.texts()
        id_of = {pk: sid for sid, pk in plain.sentence_pk.items()}
        gold = [
            Alignment(label=label, simple_id=id_of[s], complex_id=id_of[c], simple_text=texts[id_of[s]],
                      complex_text=texts[id_of[c]])
            for s, c, label in sorted(by_pair[plain.pk])
            if s in id_of and c in id_of
        ]
        data.pairs[split].append(plain.doc)
        data.gold[split].extend(gold)
        if article_key[plain.pk] not in data.articles[split]:
            data.articles[split].append(article_key[plain.pk])
    return data


def score(aligner: Any, pairs: list[DocPair], gold: list[Alignment]) -> dict[str, Any]:
    """Task 1 / Task 2 precision, recall and F1 of an aligner on labelled pairs."""
    from alignment_engine import api

    if not pairs:
        return {}
    predicted = [a for rows in aligner.align(pairs) for a in rows]
    result = api.evaluate(gold, predicted, pairs)
    return {k: result[k] for k in ("task1", "task2") if k in result} | {"counts": result.get("counts", {})}


def corpus_ids_for(corpus: Corpus | None, language: str) -> list[int]:
    if corpus is not None:
        return [corpus.pk]
    return list(Corpus.objects.filter(language=language).values_list("pk", flat=True))


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
        out_dir=target, seed=seed, device=device, progress=progress, **(config or {}),
    )
    aligner = api.load_aligner("crf", model_dir, device=device)
    metrics = {split: score(aligner, data.pairs[split], data.gold[split]) for split in ("dev", "test")}
    return ModelVersion.objects.create(
        name=name[:200], method="crf", language=language, path=str(model_dir), job=job,
        config={"train": config or {}, "ratios": list(ratios), "reference_roles": list(reference_roles),
                "corpus": corpus.pk if corpus else None, "splits": data.articles},
        metrics=metrics, data_counts=data.counts(), seed=seed, created_by=user if user and user.is_authenticated else None,
    )


def start_job(params: dict[str, Any], corpus: Corpus | None = None, user: Any = None, enqueue: bool = True) -> Any:
    """Create a retraining job and (``enqueue``) send its task (queue ``train``) when the transaction commits."""
    from django.db import transaction

    from curation import jobs
    from curation.models import Job
    from curation.tasks import retrain_job

    with transaction.atomic():
        job = jobs.create_job(Job.Kind.RETRAIN, params, corpus=corpus, user=user, total=PROGRESS_TOTAL)
        if enqueue:
            transaction.on_commit(lambda: jobs.record_task(job.pk, retrain_job.delay(job.pk).id))
    return job


def progress_units(message: str) -> int | None:
    """Job progress (of 100) from the engine's training log: encoder steps 5-50, CRF epochs 50-85."""
    match = STEP_RE.search(message)
    if match is None:
        return 88 if message.startswith("tuning on dev") else None
    stage, done, total = match.group(1), int(match.group(2)), max(int(match.group(3)), 1)
    return 5 + 45 * done // total if stage == "encoder step" else 50 + 35 * done // total


def run_job(job_id: int, echo: Callable[[str, int], None] | None = None) -> str:
    """The body of the ``retrain_job`` task. Parameters: language, seed, ratios, reference_roles,
    config (passed to ``api.train``), name, baselines (methods scored on the same split), device."""
    from curation import jobs
    from curation.models import Job
    from curation.services import registry

    job = Job.objects.filter(pk=job_id).select_related("corpus", "created_by").first()
    if job is None or job.status in jobs.FINISHED:
        return "gone"
    existing = ModelVersion.objects.filter(job=job, method="crf").first()
    if existing is not None:  # redelivered after the version was registered
        jobs.finish(job_id, result={"model_version": existing.pk})
        return "skipped"
    if job.cancel_requested:
        jobs.mark_cancelled(job_id)
        return "cancelled"
    p = job.params
    language = p.get("language") or (job.corpus.language if job.corpus else "en")
    jobs.start(job_id, total=PROGRESS_TOTAL, message="collecting labels")
    jobs.set_progress(job_id, 2)

    current = [2]  # last known progress units

    def progress(*args: Any) -> None:
        if len(args) == 1 and isinstance(args[0], str):
            done = progress_units(args[0])
            jobs.set_progress(job_id, done if done is not None else current[0], message=args[0])
            current[0] = done if done is not None else current[0]
            if echo is not None:
                echo(args[0], current[0])
        jobs.check_cancel(job_id)

    try:
        version = retrain(
            language, corpus=job.corpus, seed=int(p.get("seed", 0)), ratios=p.get("ratios", DEFAULT_RATIOS),
            reference_roles=p.get("reference_roles", ()), config=p.get("config") or {}, name=p.get("name", ""),
            device=p.get("device", "auto"), progress=progress, job=job, user=job.created_by,
        )
    except jobs.JobCancelled:
        jobs.mark_cancelled(job_id, "cancelled during training")
        return "cancelled"
    jobs.set_progress(job_id, 92, message="scoring baselines")
    baselines = []
    for method in p.get("baselines", []):
        baselines.append(
            registry.evaluate_baseline(method, language, corpus=job.corpus, seed=version.seed,
                                       ratios=p.get("ratios", DEFAULT_RATIOS),
                                       reference_roles=p.get("reference_roles", ())).pk
        )
    jobs.set_progress(job_id, PROGRESS_TOTAL)
    jobs.finish(job_id, result={"model_version": version.pk, "metrics": version.metrics,
                                "data_counts": version.data_counts, "baselines": baselines},
                message=f"registered {version.name}")
    return "done"
