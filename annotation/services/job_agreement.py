"""Agreement and aggregation for a labeling job: load judgments into numpy, compute, store.

The numbers themselves come from ``annotation.agreement`` and ``annotation.aggregation``
(pure numpy); this module only moves data between the ORM and arrays:

- ``load_judgments``: the job's valid judgments (removed annotators left out) via ``values_list``;
- ``write_aggregated_labels``: one ``AggregatedLabel`` per judged item, upserted in bulk;
- ``job_statistics``: everything the statistics page and ``manage.py job_agreement`` show.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, cast

import numpy as np
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Count, Exists, Field, Max, OuterRef, Q, QuerySet, Sum
from django.utils import timezone

from annotation import aggregation, agreement
from annotation.agreement import LABEL_CODE, LABELS, Judgments
from annotation.models import AggregatedLabel, JobItem, Judgment, LabelingJob, Membership, VerifiedLabel
from annotation.services import verification

LOW_CONFIDENCE = 0.6  # below this an aggregated label counts as "low confidence"
WRITE_BATCH = 5000


@dataclass
class LoadedJudgments:
    judgments: Judgments
    item_ids: np.ndarray  # shape (n_items,): JobItem pk of each item code
    annotator_ids: np.ndarray  # shape (n_annotators,): user pk of each annotator code


def _counted(job: LabelingJob) -> QuerySet[Judgment]:
    """Judgments that count: valid, from annotators not removed from the job."""
    removed = Membership.objects.filter(job=job, removed=True).values("annotator_id")
    return Judgment.objects.filter(job=job, is_valid=True).exclude(annotator_id__in=removed)


def load_judgments(job: LabelingJob) -> LoadedJudgments:
    """The judgments that count: valid ones from annotators still in the job."""
    rows = _counted(job).values_list("item_id", "annotator_id", "label")
    items, annotators, labels = [], [], []
    for item_id, annotator_id, label in rows.iterator(chunk_size=20000):
        items.append(item_id)
        annotators.append(annotator_id)
        labels.append(LABEL_CODE[label])
    j = Judgments.encode(np.asarray(items, dtype=np.int64), np.asarray(annotators, dtype=np.int64), np.asarray(labels, dtype=np.int64))
    return LoadedJudgments(
        judgments=j,
        item_ids=j.item_keys if j.item_keys is not None else np.zeros(0, dtype=np.int64),
        annotator_ids=j.annotator_keys if j.annotator_keys is not None else np.zeros(0, dtype=np.int64),
    )


@dataclass
class WriteResult:
    method: str
    written: int
    deleted: int
    label_counts: dict[str, int]


def _votes(row: list[int]) -> dict[str, int]:
    """Only labels that received votes (the verification queue relies on this to spot disagreements)."""
    return {LABELS[c]: n for c, n in enumerate(row) if n > 0}


def _upsert_aggregated(rows: list[tuple[int, str, float, str, str]], computed_at: datetime) -> None:
    """Multi-row INSERT ... ON CONFLICT (item) DO UPDATE (SQLite >= 3.24 and PostgreSQL).

    The ORM's bulk_create spends ~0.2 ms per row building SQL, and psycopg spends as long
    parsing huge parameter lists; PostgreSQL gets COPY into a temporary table and one upsert.
    """
    meta = AggregatedLabel._meta
    table = connection.ops.quote_name(meta.db_table)
    names = ["item", "label", "confidence", "method", "votes", "computed_at"]
    cols = [connection.ops.quote_name(str(cast(Field, meta.get_field(n)).column)) for n in names]
    updates = ", ".join(f"{c} = excluded.{c}" for c in cols[1:])
    stamp = meta.get_field("computed_at").get_db_prep_value(computed_at, connection)
    max_params = connection.features.max_query_params or 60000
    batch = max(1, min(WRITE_BATCH, max_params // len(cols)))
    row_sql = "(" + ", ".join(["%s"] * len(cols)) + ")"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":  # COPY into a temporary table, then one upsert
            cursor.execute("DROP TABLE IF EXISTS quality_aggregated_tmp")
            cursor.execute(
                f"CREATE TEMPORARY TABLE quality_aggregated_tmp ON COMMIT DROP AS SELECT {', '.join(cols)} FROM {table} WITH NO DATA"
            )
            with cursor.cursor.copy(f"COPY quality_aggregated_tmp ({', '.join(cols)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row((*row, computed_at))
            cursor.execute(
                f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join(cols)} FROM quality_aggregated_tmp "
                f"ON CONFLICT ({cols[0]}) DO UPDATE SET {updates}"
            )
            return
        for start in range(0, len(rows), batch):
            chunk = rows[start : start + batch]
            sql = (
                f"INSERT INTO {table} ({', '.join(cols)}) VALUES {', '.join([row_sql] * len(chunk))} "
                f"ON CONFLICT ({cols[0]}) DO UPDATE SET {updates}"
            )
            cursor.execute(sql, [value for row in chunk for value in (*row, stamp)])


@transaction.atomic
def write_aggregated_labels(job: LabelingJob, method: str = AggregatedLabel.Method.MAJORITY) -> WriteResult:
    """Aggregate the job's valid judgments and upsert one AggregatedLabel per judged item.

    Items that no longer have any valid judgment (e.g. all their annotators were removed) lose
    their AggregatedLabel. Verified labels are never touched.
    """
    loaded = load_judgments(job)
    result = aggregation.aggregate(loaded.judgments, method)
    now = timezone.now()
    rows = [
        (item_id, LABELS[lab], conf, str(method), json.dumps(_votes(counts)))
        for item_id, lab, conf, counts in zip(
            loaded.item_ids.tolist(), result.labels.tolist(), result.confidence.round(6).tolist(), result.counts.tolist(), strict=True
        )
    ]
    _upsert_aggregated(rows, now)
    # NOT EXISTS (correlated, uses the judgment (item, annotator) index), not NOT IN: PostgreSQL
    # cannot hash a million-row NOT IN list within work_mem and falls back to a quadratic plan.
    still_judged = Exists(_counted(job).filter(item_id=OuterRef("item_id")))
    deleted, _ = AggregatedLabel.objects.filter(item__job=job).exclude(still_judged).delete()
    transaction.on_commit(lambda: verification.bump_queue_version(job.pk))
    verification.bump_queue_version(job.pk)
    per_label = np.bincount(result.labels, minlength=len(LABELS)) if len(result.labels) else np.zeros(len(LABELS), dtype=int)
    return WriteResult(method=method, written=len(rows), deleted=deleted, label_counts=dict(zip(LABELS, per_label.tolist(), strict=True)))


@dataclass
class AnnotatorRow:
    user_id: int
    username: str
    judgments: int = 0
    agreement: float | None = None  # with the majority of the other raters
    mean_kappa: float | None = None
    partners: int = 0
    tests_answered: int = 0
    test_accuracy: float | None = None
    verified_accuracy: float | None = None  # against verified labels, where there are any
    estimated_accuracy: float | None = None  # the model-based aggregation's estimate (Dawid-Skene, MACE, GLAD)
    model_parameter: float | None = None  # MACE's competence θ or GLAD's ability α (JobStatistics.parameter_name)
    removed: bool = False


@dataclass
class LabelRow:
    label: str
    judgments: int
    share: float
    kappa: float | None
    specific_agreement: float | None
    aggregated: int
    verified: int


@dataclass
class JobStatistics:
    job: LabelingJob
    report: agreement.AgreementReport
    method: str  # of the aggregation shown
    stored: bool  # True when the aggregation shown is the stored AggregatedLabels
    annotators: list[AnnotatorRow]
    labels: list[LabelRow]
    confusion_aggregated: np.ndarray  # rows aggregated label, columns raw judgment
    confusion_verified: np.ndarray | None  # rows verified label, columns aggregated label
    counts: dict[str, Any] = field(default_factory=dict)
    parameter_name: str = ""  # of AnnotatorRow.model_parameter; empty when there is none

    @property
    def removed_annotators(self) -> list[AnnotatorRow]:
        return [row for row in self.annotators if row.removed]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready figures (NaN as None), for an API or an export."""
        r = self.report
        return {
            "job": self.job.pk,
            "method": self.method,
            "stored": self.stored,
            "parameter_name": self.parameter_name,
            "min_shared": r.pairwise.min_shared,
            "cohen_kappa_mean": _nan_to_none(r.cohen_mean),
            "cohen_kappa_weighted": _nan_to_none(r.cohen_weighted),
            "cohen_pairs": r.cohen_pairs,
            "fleiss_kappa": _nan_to_none(r.fleiss),
            "krippendorff_alpha": _nan_to_none(r.alpha),
            "counts": self.counts,
            "annotators": [asdict(row) for row in self.annotators],
            "labels": [asdict(row) for row in self.labels],
            "label_order": list(LABELS),
            "confusion_aggregated": self.confusion_aggregated.tolist(),
            "confusion_verified": None if self.confusion_verified is None else self.confusion_verified.tolist(),
        }


def _nan_to_none(value: float) -> float | None:
    return None if value is None or np.isnan(value) else float(value)


def job_statistics(job: LabelingJob, method: str | None = None, min_shared: int = agreement.DEFAULT_MIN_SHARED) -> JobStatistics:
    """Every figure of the statistics page. ``method`` None shows the stored aggregation when
    there is one (majority vote otherwise); a method name computes that aggregation afresh."""
    loaded = load_judgments(job)
    j = loaded.judgments
    report = agreement.job_agreement(j, min_shared=min_shared)
    item_index = {int(pk): code for code, pk in enumerate(loaded.item_ids.tolist())}

    stored_rows = list(AggregatedLabel.objects.filter(item__job=job).values_list("item_id", "label", "confidence", "method"))
    stored = method is None and bool(stored_rows)
    model: aggregation.ModelAggregate | None = None
    if stored:
        agg_labels = np.full(j.n_items, -1, dtype=np.int64)
        agg_conf = np.zeros(j.n_items)
        for item_id, label, conf, _m in stored_rows:
            code = item_index.get(item_id)
            if code is not None:
                agg_labels[code], agg_conf[code] = LABEL_CODE[label], conf
        method = stored_rows[0][3]
    else:
        method = method or AggregatedLabel.Method.MAJORITY
        agg = aggregation.aggregate(j, method, counts=report.counts)
        agg_labels, agg_conf = agg.labels, agg.confidence
        if isinstance(agg, aggregation.ModelAggregate):
            model = agg
    has_agg = agg_labels >= 0
    per_judgment_agg = agg_labels[j.items]
    mask = per_judgment_agg >= 0
    confusion_aggregated = agreement.confusion_matrix(per_judgment_agg[mask], j.labels[mask])

    verified_rows = list(
        VerifiedLabel.objects.filter(candidate__job_items__job=job).values_list("candidate__job_items__id", "label", "aggregated_label")
    )
    verified = np.full(j.n_items, -1, dtype=np.int64)
    changed = 0
    for item_id, label, agg_label in verified_rows:
        code = item_index.get(item_id)
        if code is not None:
            verified[code] = LABEL_CODE[label]
        changed += bool(agg_label) and agg_label != label
    both = (verified >= 0) & has_agg
    confusion_verified = agreement.confusion_matrix(verified[both], agg_labels[both]) if both.any() else None

    annotators = _annotator_rows(job, loaded, report, verified, model)
    parameter = model.annotator_parameter() if model is not None else None
    k = len(LABELS)
    agg_per_label = np.bincount(agg_labels[has_agg], minlength=k)
    ver_per_label = np.bincount(verified[verified >= 0], minlength=k)
    labels = [
        LabelRow(
            label=LABELS[c],
            judgments=int(report.labels.judgments[c]),
            share=float(report.labels.share[c]),
            kappa=_nan_to_none(report.labels.kappa[c]),
            specific_agreement=_nan_to_none(report.labels.specific_agreement[c]),
            aggregated=int(agg_per_label[c]),
            verified=int(ver_per_label[c]),
        )
        for c in range(k)
    ]
    disagreements = int(aggregation.disagreement(report.counts).sum())
    item_counts = JobItem.objects.filter(job=job).aggregate(
        items=Count("pk"), complete=Count("pk", filter=Q(judgments_count__gte=job.judgments_per_pair))
    )
    counts = {
        "items": item_counts["items"],
        "judged_items": j.n_items,
        "complete_items": item_counts["complete"],
        "judgments": j.size,
        "invalid_judgments": Judgment.objects.filter(job=job, is_valid=False).count(),
        "annotators": j.n_annotators,
        "aggregated": int(has_agg.sum()),
        "disagreements": disagreements,
        "unanimous": j.n_items - disagreements,
        "low_confidence": int((has_agg & (agg_conf < LOW_CONFIDENCE)).sum()),
        "verified": len(verified_rows),
        "verified_changed": changed,
        "iterations": model.iterations if model is not None else None,  # EM rounds of a model-based aggregation
    }
    return JobStatistics(
        job=job,
        report=report,
        method=str(method),
        stored=stored,
        annotators=annotators,
        labels=labels,
        confusion_aggregated=confusion_aggregated,
        confusion_verified=confusion_verified,
        counts=counts,
        parameter_name=parameter[0] if parameter is not None else "",
    )


def _annotator_rows(
    job: LabelingJob,
    loaded: LoadedJudgments,
    report: agreement.AgreementReport,
    verified: np.ndarray,
    model: aggregation.ModelAggregate | None,
) -> list[AnnotatorRow]:
    j = loaded.judgments
    stats = report.annotators
    rows: dict[int, AnnotatorRow] = {}
    ver = verified[j.items]
    has_ver = ver >= 0
    ver_n = np.bincount(j.annotators[has_ver], minlength=j.n_annotators)
    ver_ok = np.bincount(j.annotators[has_ver & (ver == j.labels)], minlength=j.n_annotators)
    est_acc = model.annotator_accuracy if model is not None else None
    parameter = model.annotator_parameter() if model is not None else None
    for code, user_id in enumerate(loaded.annotator_ids.tolist()):
        rows[user_id] = AnnotatorRow(
            user_id=user_id,
            username="",
            judgments=int(stats.judgments[code]),
            agreement=_nan_to_none(stats.agreement[code]),
            mean_kappa=_nan_to_none(stats.mean_kappa[code]),
            partners=int(stats.partners[code]),
            verified_accuracy=float(ver_ok[code] / ver_n[code]) if ver_n[code] else None,
            estimated_accuracy=_nan_to_none(est_acc[code]) if est_acc is not None else None,
            model_parameter=_nan_to_none(parameter[1][code]) if parameter is not None else None,
        )
    for user_id, answered, correct, removed in Membership.objects.filter(job=job).values_list(
        "annotator_id", "tests_answered", "tests_correct", "removed"
    ):
        row = rows.setdefault(user_id, AnnotatorRow(user_id=user_id, username=""))
        row.tests_answered = answered
        row.test_accuracy = correct / answered if answered else None
        row.removed = removed
    removed_ids = [r.user_id for r in rows.values() if r.removed]
    if removed_ids:  # their judgments no longer count; show how many they had
        for user_id, n in (
            Judgment.objects.filter(job=job, annotator_id__in=removed_ids).values_list("annotator_id").annotate(n=Count("id"))
        ):
            rows[user_id].judgments = n
    names = dict(get_user_model().objects.filter(pk__in=list(rows)).values_list("pk", "username"))
    for row in rows.values():
        row.username = names.get(row.user_id, f"#{row.user_id}")
    return sorted(rows.values(), key=lambda r: (r.removed, -r.judgments, r.username))


STATS_TTL = 3600


def _fingerprint(job: LabelingJob) -> str:
    """Changes whenever a figure could: judgments added or invalidated, annotators removed,
    aggregated labels rewritten, pairs verified. Three aggregate queries, no row loading."""
    j = Judgment.objects.filter(job=job).aggregate(n=Count("id"), valid=Count("id", filter=Q(is_valid=True)), last=Max("id"))
    m = Membership.objects.filter(job=job).aggregate(n=Count("id"), removed=Count("id", filter=Q(removed=True)), tests=Sum("tests_answered"))
    v = VerifiedLabel.objects.filter(candidate__job_items__job=job).aggregate(n=Count("id"), last=Max("verified_at"))
    version = cache.get(verification.version_key(job.pk)) or "0"
    return f"{j['n']}.{j['valid']}.{j['last']}.{m['n']}.{m['removed']}.{m['tests']}.{v['n']}.{v['last']}.{version}"


def cached_job_statistics(job: LabelingJob, method: str | None = None, min_shared: int = agreement.DEFAULT_MIN_SHARED) -> JobStatistics:
    """``job_statistics`` behind a cache keyed by a cheap fingerprint of the job's data, so the
    page of a million-judgment job is computed once and served from the cache until something changes."""
    raw = f"{job.pk}:{job.created_at.timestamp()}:{method}:{min_shared}:{_fingerprint(job)}"
    key = f"quality:stats:{job.pk}:{hashlib.sha1(raw.encode()).hexdigest()}"
    stats = cache.get(key)
    if stats is None:
        stats = job_statistics(job, method=method, min_shared=min_shared)
        stats.report.counts = np.zeros((0, len(LABELS)), dtype=np.int64)  # large and not shown: not cached
        cache.set(key, stats, STATS_TTL)
    return stats
