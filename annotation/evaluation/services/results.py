"""Results of a study, recounted from its rows: per system and dimension mean, sd, bootstrap
interval and n; Holm-corrected pairwise tests; Krippendorff's alpha; position balance;
controls; automatic metrics and their correlation with the human scores across systems."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db.models import Count, Max, Q, Sum

from annotation.evaluation import metrics as m
from annotation.evaluation import stats
from annotation.evaluation.designs import AVERAGE, DESIGNS
from annotation.models import EvalItem, EvalOutput, EvalPage, Rating, Study, StudyRater

METRIC_NAMES = ("sari", "bleu", "fkgl", "length")


def rating_rows(study: Study, valid: bool = True) -> list[stats.RatingRow]:
    """System ratings (no controls) as plain rows; Likert studies get an ``average`` dimension
    per (page, output), the mean of its three scales (the paper's Avg. column)."""
    qs = (
        Rating.objects.filter(study=study, is_valid=valid, output__is_control=False)
        .values_list("item__key", "output__system", "rater_id", "dimension", "value", "page_id")
        .order_by("pk")
    )
    rows, per_output = [], defaultdict(list)
    for key, system, rater, dim, value, page in qs.iterator(chunk_size=5000):
        rows.append(stats.RatingRow(key, system, str(rater), dim, float(value)))
        per_output[(page, key, system, str(rater))].append(float(value))
    if DESIGNS[study.design].average:
        n_dims = len(DESIGNS[study.design].dimensions)
        rows += [stats.RatingRow(k, s, r, AVERAGE, float(np.mean(v))) for (_, k, s, r), v in per_output.items() if len(v) == n_dims]
    return rows


def dimensions(study: Study) -> list[str]:
    design = DESIGNS[study.design]
    return [*design.keys, AVERAGE] if design.average else design.keys


def dimension_label(key: str) -> str:
    if key == AVERAGE:
        return "Avg."
    for design in DESIGNS.values():
        for d in design.dimensions:
            if d.key == key:
                return d.label if key != "comparative" else "Comparative"
    return key


@dataclass
class StudyResults:
    study_id: int
    design: str
    systems: list[str]
    dimensions: list[str]
    summary: stats.Summary
    bootstrap: str
    test: str
    n_boot: int
    counts: dict[str, int]
    positions: dict[str, list[int]]  # system (or "control") -> pages with it at position 0, 1, ...
    controls: dict[str, Any]
    metrics: list[m.SystemMetrics] = field(default_factory=list)
    correlations: list[dict[str, Any]] = field(default_factory=list)

    def score(self, system: str, dimension: str) -> stats.SystemScore | None:
        for s in self.summary.scores:
            if s.system == system and s.dimension == dimension:
                return s
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "study": self.study_id, "design": self.design, "systems": self.systems, "dimensions": self.dimensions,
            "bootstrap": self.bootstrap, "test": self.test, "n_boot": self.n_boot, "counts": self.counts,
            "scores": [s.as_dict() for s in self.summary.scores],
            "pairwise": [p.as_dict() for p in self.summary.pairs],
            "agreement": [{"dimension": d, "alpha": a, "units": n, "level": level_of(self.design, d)}
                          for d, (a, n) in self.summary.agreement.items()],
            "positions": self.positions, "controls": self.controls,
            "metrics": [x.as_dict() for x in self.metrics], "correlations": self.correlations,
        }


def level_of(design: str, dim: str) -> str:
    d = DESIGNS[design]
    return d.dimensions[0].level if dim == AVERAGE else d.dimension(dim).level


def _positions(study: Study) -> dict[str, list[int]]:
    names = dict(EvalOutput.objects.filter(item__study=study).values_list("pk", "system"))
    control = set(EvalOutput.objects.filter(item__study=study, is_control=True).values_list("pk", flat=True))
    width = len(study.systems) + (1 if control else 0)
    counts: dict[str, list[int]] = {s: [0] * width for s in [*study.systems, *(["control"] if control else [])]}
    for order in EvalPage.objects.filter(study=study, answered_at__isnull=False).values_list("order", flat=True):
        for pos, pk in enumerate(order):
            counts["control" if pk in control else names[pk]][pos] += 1
    return counts


def _controls(study: Study) -> dict[str, Any]:
    if not DESIGNS[study.design].controls:
        return {}
    values = list(Rating.objects.filter(study=study, is_valid=True, output__is_control=True).values_list("value", flat=True))
    pages = EvalPage.objects.filter(study=study, answered_at__isnull=False, control_failed__isnull=False)
    return {
        "ratings": len(values), "mean": round(float(np.mean(values)), 2) if values else None,
        "under_threshold": round(sum(v <= study.control_threshold for v in values) / len(values), 3) if values else None,
        "threshold": study.control_threshold, "pages": pages.count(), "failed_pages": pages.filter(control_failed=True).count(),
    }


def _metrics(study: Study) -> list[m.SystemMetrics]:
    """The automatic metrics through the cache: outputs never change after creation, so the key is
    the study (pk, creation time, systems) and its outputs' count and last pk."""
    o = EvalOutput.objects.filter(item__study=study, is_control=False).aggregate(n=Count("id"), last=Max("id"))
    key = _key("metrics", study, f"{study.created_at.timestamp()}:{study.systems}:{o['n']}:{o['last']}")
    found = cache.get(key)
    if found is None:
        found = _compute_metrics(study)
        cache.set(key, found, RESULTS_TTL)
    return list(found)


def _compute_metrics(study: Study) -> list[m.SystemMetrics]:
    per_system: dict[str, tuple[list[str], list[str], list[list[str]]]] = {s: ([], [], []) for s in study.systems}
    rows = EvalOutput.objects.filter(item__study=study, is_control=False).values_list(
        "system", "text", "item__source", "item__references").order_by("item__position", "system")
    for system, text, source, refs in rows:
        srcs, outs, references = per_system[system]
        srcs.append(source)
        outs.append(text)
        references.append(list(refs))
    return [m.system_metrics(system, *per_system[system]) for system in study.systems]


def _correlations(res: StudyResults) -> list[dict[str, Any]]:
    out = []
    for metric in METRIC_NAMES:
        xs = [getattr(x, metric) for x in res.metrics]
        if any(v is None for v in xs):
            continue
        for dim in res.dimensions:
            ys = []
            for system in res.systems:
                score = res.score(system, dim)
                ys.append(score.mean if score else float("nan"))
            pearson, spearman = stats.correlation([float(x) for x in xs], ys)
            out.append({"metric": metric, "dimension": dim, "pearson": pearson, "spearman": spearman, "systems": len(xs)})
    return out


def study_results(study: Study, n_boot: int = 2000, bootstrap: str = stats.DEFAULT_BOOTSTRAP, test: str = stats.DEFAULT_TEST,
                  with_metrics: bool = True) -> StudyResults:
    rows = rating_rows(study)
    dims = dimensions(study)
    levels = {d: level_of(study.design, d) for d in dims if d != AVERAGE}
    summary = stats.summarize(rows, study.systems, dims, levels, n_boot=n_boot, seed=study.seed, bootstrap=bootstrap, test=test)
    raters = StudyRater.objects.filter(study=study)
    counts = {
        "items": study.items.count(),
        "pages_answered": EvalPage.objects.filter(study=study, answered_at__isnull=False, ratings__is_valid=True).distinct().count(),
        "ratings": Rating.objects.filter(study=study, is_valid=True).count(),
        "raters": len({r.rater for r in rows}),
        "raters_flagged": raters.filter(flagged=True).count(),
        "raters_excluded": raters.filter(excluded=True).count(),
        "ratings_excluded": Rating.objects.filter(study=study, is_valid=False).count(),
        "items_complete": study.items.filter(ratings_count__gte=study.raters_per_item).count(),
    }
    res = StudyResults(study.pk, study.design, list(study.systems), dims, summary, bootstrap, test, n_boot, counts,
                       _positions(study), _controls(study))
    if with_metrics:
        res.metrics = _metrics(study)
        res.correlations = _correlations(res)
    return res


RESULTS_TTL = 24 * 3600
RESULTS_VERSION = 1  # bump when the computation or StudyResults changes shape


def _key(kind: str, study: Study, raw: str) -> str:
    return f"evaluation:{kind}:{RESULTS_VERSION}:{study.pk}:{hashlib.sha1(raw.encode()).hexdigest()}"


def fingerprint(study: Study) -> str:
    """Changes whenever a figure of :func:`study_results` could: ratings added, removed, set apart
    or edited (count, valid count, last pk, sum of valid values), pages answered or their control
    results, raters flagged or excluded, items' counts, outputs, and the study's settings that
    enter the computation. Four aggregate queries, no row loading."""
    r = Rating.objects.filter(study=study).aggregate(
        n=Count("id"), valid=Count("id", filter=Q(is_valid=True)), last=Max("id"), total=Sum("value", filter=Q(is_valid=True)))
    p = EvalPage.objects.filter(study=study, answered_at__isnull=False).aggregate(
        n=Count("id"), last=Max("answered_at"), controls=Count("id", filter=Q(control_failed__isnull=False)),
        failed=Count("id", filter=Q(control_failed=True)))
    s = StudyRater.objects.filter(study=study).aggregate(
        n=Count("id"), flagged=Count("id", filter=Q(flagged=True)), excluded=Count("id", filter=Q(excluded=True)))
    i = EvalItem.objects.filter(study=study).aggregate(
        n=Count("id"), rated=Sum("ratings_count"), complete=Count("id", filter=Q(ratings_count__gte=study.raters_per_item)))
    last = p["last"].timestamp() if p["last"] else None
    return ":".join(str(x) for x in (
        study.created_at.timestamp(), study.design, study.systems, study.seed, study.control_threshold, study.raters_per_item,
        r["n"], r["valid"], r["last"], r["total"], p["n"], last, p["controls"], p["failed"],
        s["n"], s["flagged"], s["excluded"], i["n"], i["rated"], i["complete"]))


def cached_study_results(study: Study, n_boot: int = 2000, bootstrap: str = stats.DEFAULT_BOOTSTRAP,
                         test: str = stats.DEFAULT_TEST, with_metrics: bool = True) -> StudyResults:
    """:func:`study_results` behind the cache, keyed by the study, :func:`fingerprint` and the
    parameters: computed once (1.4 s for 100 items), then served until any rating, exclusion,
    flag or setting changes the fingerprint, so the figures are always a recount of the rows."""
    key = _key("results", study, f"{n_boot}:{bootstrap}:{test}:{with_metrics}:{fingerprint(study)}")
    res = cache.get(key)
    if res is None:
        res = study_results(study, n_boot=n_boot, bootstrap=bootstrap, test=test, with_metrics=with_metrics)
        cache.set(key, res, RESULTS_TTL)
    return res


def table_rows(res: StudyResults) -> list[dict[str, Any]]:
    """The paper's layout: one row per system, one column per dimension (mean and interval),
    then the automatic metrics."""
    by_metric = {x.system: x for x in res.metrics}
    best = best_by_dimension(res)
    rows = []
    for system in res.systems:
        cells = []
        for dim in res.dimensions:
            s = res.score(system, dim)
            cells.append(None if s is None else {**s.as_dict(), "best": system in best.get(dim, set())})
        rows.append({"system": system, "cells": cells, "metrics": by_metric.get(system)})
    return rows


def best_by_dimension(res: StudyResults) -> dict[str, set[str]]:
    """The systems with the highest mean per dimension (all of them when tied)."""
    best: dict[str, set[str]] = {}
    for dim in res.dimensions:
        scored = [(s.mean, s.system) for s in res.summary.scores if s.dimension == dim and s.n]
        if scored:
            top = max(m for m, _ in scored)
            best[dim] = {name for m, name in scored if m >= top - 1e-9}
    return best


def correlation_table(res: StudyResults) -> list[tuple[str, list[dict[str, Any] | None]]]:
    """Rows per metric, one cell per human dimension (``{pearson, spearman}`` or None)."""
    cells = {(c["metric"], c["dimension"]): c for c in res.correlations}
    metrics_seen = [m for m in METRIC_NAMES if any(k[0] == m for k in cells)]
    return [(m, [cells.get((m, d)) for d in res.dimensions]) for m in metrics_seen]
