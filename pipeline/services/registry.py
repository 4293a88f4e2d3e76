"""Model versions: register baselines, compare versions (the paper's Table 2), promote one.

The promoted version of a language is what pre-population and corpus alignment use by
default; at most one per language (a database constraint backs this).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from curation.models import Corpus
from pipeline.models import ModelVersion
from pipeline.services.labelled_data import DEFAULT_RATIOS, collect_labelled_data, corpus_ids_for, score

SPLITS = ("dev", "test")
TASKS = ("task1", "task2")
MEASURES = ("precision", "recall", "f1")


@dataclass
class ComparisonRow:
    version: ModelVersion
    cells: list[float | None]  # task x split x measure, in TABLE_COLUMNS order

    @property
    def display(self) -> list[str]:
        """Percentages with one decimal, like the paper's tables; a dash where unknown."""
        return ["—" if v is None else f"{100 * v:.1f}" for v in self.cells]

    @property
    def is_baseline(self) -> bool:
        return not self.version.path

    @property
    def promotable(self) -> bool:
        return promotion_problem(self.version) is None


TABLE_COLUMNS = [(t, s, m) for t in TASKS for s in SPLITS for m in MEASURES]


def evaluate_baseline(
    method: str,
    language: str,
    corpus: Corpus | None = None,
    seed: int = 0,
    ratios: Sequence[float] = DEFAULT_RATIOS,
    reference_roles: Sequence[str] = (),
    user: Any = None,
) -> ModelVersion:
    """Score an untrained method on the same deterministic dev/test split as retraining, and
    register (or refresh) it as a baseline version (no model directory)."""
    from alignment_engine import api

    if method not in api.METHODS or method == "crf":
        raise ValueError(f"{method!r} is not a baseline method")
    data = collect_labelled_data(corpus_ids_for(corpus, language), seed, ratios, reference_roles)
    aligner = api.load_aligner(method)
    metrics = {split: score(aligner, data.pairs[split], data.gold[split], data.unlabelled) for split in SPLITS}
    scope = corpus.name if corpus is not None else f"all {language} corpora"
    config = {"ratios": list(ratios), "reference_roles": list(reference_roles), "corpus": corpus.pk if corpus else None,
              "baseline": True}
    version, _ = ModelVersion.objects.update_or_create(
        method=method, language=language, path="", seed=seed, name=f"{method} (baseline, {scope})"[:200],
        defaults={"metrics": metrics, "data_counts": data.counts(), "config": config,
                  "created_by": user if user and user.is_authenticated else None},
    )
    return version


class PromotionRefused(ValueError):
    """A version that cannot become the default model (no model directory, or no test figures)."""


def promotion_problem(version: ModelVersion) -> str | None:
    """Why ``version`` should not be promoted, or None. A baseline cannot be promoted at all; a
    trained version without Task 1 / Task 2 figures on test (an empty test split) only with force."""
    if not version.path:
        return "a baseline has no model directory; promote a trained version"
    if any(metric(version, task, "test", "f1") is None for task in TASKS):
        return f"{version.name} has no test metrics (its test split was empty), so nobody knows how well it aligns"
    return None


def promote(version: ModelVersion, force: bool = False) -> ModelVersion:
    """Make ``version`` the promoted model of its language (and no other). Raises
    :class:`PromotionRefused` for a baseline, and for a version without test metrics unless ``force``."""
    problem = promotion_problem(version)
    if problem is not None and (not version.path or not force):
        raise PromotionRefused(problem)
    with transaction.atomic():
        ModelVersion.objects.select_for_update().filter(language=version.language, is_promoted=True).exclude(
            pk=version.pk
        ).update(is_promoted=False)
        ModelVersion.objects.filter(pk=version.pk).update(is_promoted=True)
    version.refresh_from_db()
    return version


def promoted_for(language: str) -> ModelVersion | None:
    return ModelVersion.objects.filter(language=language, is_promoted=True).first()


def metric(version: ModelVersion, task: str, split: str, measure: str) -> float | None:
    value = (version.metrics or {}).get(split, {}).get(task, {}).get(measure)
    return None if value is None else float(value)


def comparison(language: str | None = None) -> list[ComparisonRow]:
    """Rows of the comparison table: trained versions first (newest first), then baselines."""
    qs = ModelVersion.objects.all()
    if language:
        qs = qs.filter(language=language)
    versions = sorted(qs, key=lambda v: (not v.path, -v.created_at.timestamp()))
    return [ComparisonRow(v, [metric(v, t, s, m) for t, s, m in TABLE_COLUMNS]) for v in versions]
