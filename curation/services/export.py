"""Dataset exports: Manual (human labels), Auto (a corpus run's predictions, filtered) and the
simple-sentence pool for back-translation, each with a generated dataset card.

``run_export(dataset_id, progress=None)`` is the one entry point (Celery task, management
command, tests). It streams rows from the database (``values_list(...).iterator(chunk_size)``),
processes them one document pair (Auto) or one article (Manual) at a time, writes each file
atomically into a staging folder, renames the folder into place, and only then stores the
file list and card on the ExportedDataset row (one UPDATE in one transaction). A failure at
any point leaves no file under the final name and no half-filled row.
"""

from __future__ import annotations

import hashlib
import hmac
import shutil
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import InterfaceError, connections, transaction
from django.db import OperationalError as DatabaseOperationalError
from django.db.models import Count, Sum

from alignment_engine.text import words
from curation import jobs
from curation.curate import phenomena as ph
from curation.curate.derive import LevelLink, derive_links
from curation.curate.filters import Filter, apply_filters, build_filters
from curation.curate.rows import COLUMNS, Row
from curation.curate.splits import assign_splits, parse_ratios
from curation.exports import (
    EXTENSIONS,
    Column,
    RowWriter,
    columns,
    open_alignment_writer,
    open_writer,
    write_json_atomic,
    write_text_atomic,
)
from curation.models import (
    AlignmentLabel,
    Article,
    Document,
    DocumentPair,
    ExportedDataset,
    Job,
    PredictedAlignment,
    ReferenceAlignment,
    Sentence,
    SyntheticPair,
)

Progress = Callable[[int, int], None]
CHUNK = 5000
ALIGNED_LABELS = [AlignmentLabel.ALIGNED.value, AlignmentLabel.PARTIAL.value]
ROW_COLUMNS: list[Column] = columns(
    "label", "simple_id", "complex_id", "simple", "complex", ("score", "float"), "pair_id", "article",
    ("complex_level", "int"), ("simple_level", "int"), "split", "phenomenon", "group_shape", "split_category",
    ("synthetic", "bool"),
)
MANUAL_COLUMNS: list[Column] = [*ROW_COLUMNS, Column("source")]
assert [c.name for c in ROW_COLUMNS] == COLUMNS  # noqa: S101 - module invariant, not input validation


class ExportError(Exception):
    """The export cannot run with these parameters (shown to the user)."""


@dataclass
class Params:
    format: str = "tsv"
    splits: dict[str, float] | None = None
    seed: int = 0
    filters: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    labels: list[str] | None = None
    synthetic_ratio: float = 0.0
    include_reference: bool = True
    derive: bool = True
    min_words: int = 10
    max_words: int = 40
    chunk_size: int = CHUNK
    batch_size: int = 50_000

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Params:
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise ExportError(f"unknown export parameter(s): {', '.join(sorted(unknown))}")
        params = cls(**data)
        if params.format not in EXTENSIONS:
            raise ExportError(f"unknown format {params.format!r}")
        if "splits" in data and data["splits"] is None:
            params.splits = None
        else:
            params.splits = parse_ratios(data.get("splits"))
        if params.synthetic_ratio < 0:
            raise ExportError("synthetic_ratio must be >= 0")
        return params


# --- progress and cancellation ---------------------------------------------------------------


class Tracker:
    """Counts processed rows; reports to the caller and the Job row at most every half second."""

    def __init__(self, job_id: int | None, total: int, progress: Progress | None) -> None:
        self.job_id, self.total, self.progress = job_id, total, progress
        self.done = 0
        self._last = 0.0

    def step(self, n: int = 1) -> None:
        self.done += n
        if n == 1 and self.done % 1000:
            return
        if self.progress is not None:
            self.progress(self.done, self.total)
        now = time.monotonic()
        if self.job_id is not None and now - self._last > 0.5:
            self._last = now
            jobs.set_progress(self.job_id, self.done, self.total)
            jobs.check_cancel(self.job_id)

    def finish(self) -> None:
        if self.progress is not None:
            self.progress(self.done, self.total)
        if self.job_id is not None:
            jobs.set_progress(self.job_id, self.done, self.total)


# --- shared helpers ---------------------------------------------------------------------------


def pseudonym(user_id: int | None) -> str:
    """A stable pseudonym for an annotator: HMAC-SHA256 of the id under SECRET_KEY, 10 hex digits."""
    if user_id is None:
        return ""
    digest = hmac.new(settings.SECRET_KEY.encode(), f"annotator:{user_id}".encode(), hashlib.sha256).hexdigest()
    return f"ann_{digest[:10]}"


def sid(pair_id: str, side: int, paragraph: int, position: int) -> str:
    return f"{pair_id}-{side}-{paragraph}-{position}"


@dataclass
class Stats:
    """What the card reports, accumulated while rows stream by."""

    rows_by_split: Counter[str] = field(default_factory=Counter)
    rows_by_label: Counter[str] = field(default_factory=Counter)
    rows_by_source: Counter[str] = field(default_factory=Counter)
    rows_by_phenomenon: Counter[str] = field(default_factory=Counter)
    groups_by_phenomenon: Counter[str] = field(default_factory=Counter)
    complex_tokens: Counter[str] = field(default_factory=Counter)
    simple_tokens: Counter[str] = field(default_factory=Counter)
    level_pairs: Counter[str] = field(default_factory=Counter)
    synthetic: int = 0
    pairs_seen: int = 0
    input_rows: int = 0

    def add(self, row: Row, complex_tokens: int, simple_tokens: int, source: str = "") -> None:
        self.rows_by_split[row.split] += 1
        self.rows_by_label[row.label] += 1
        if source:
            self.rows_by_source[source] += 1
        if row.phenomenon:
            self.rows_by_phenomenon[row.phenomenon] += 1
        self.complex_tokens[row.split] += complex_tokens
        self.simple_tokens[row.split] += simple_tokens
        if row.complex_level is not None and row.simple_level is not None:
            self.level_pairs[f"{row.complex_level}-{row.simple_level}"] += 1
        if row.synthetic:
            self.synthetic += 1

    def lengths(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for split, n in sorted(self.rows_by_split.items()):
            c = self.complex_tokens[split] / n if n else 0.0
            s = self.simple_tokens[split] / n if n else 0.0
            out[split] = {"complex_tokens": round(c, 2), "simple_tokens": round(s, 2),
                          "compression": round(s / c, 3) if c else None}
        total = sum(self.rows_by_split.values())
        if total:
            c = sum(self.complex_tokens.values()) / total
            s = sum(self.simple_tokens.values()) / total
            out["all"] = {"complex_tokens": round(c, 2), "simple_tokens": round(s, 2), "compression": round(s / c, 3) if c else None}
        return out


def percentages(counts: Counter[str] | dict[str, int], order: Iterable[str]) -> dict[str, dict[str, float | int]]:
    total = sum(counts.values())
    return {k: {"count": int(counts.get(k, 0)), "percent": round(100 * counts.get(k, 0) / total, 2) if total else 0.0} for k in order}


class SplitWriters:
    """One alignment-row writer per split, opened lazily, all aborted together on error."""

    def __init__(self, folder: Path, fmt: str, cols: list[Column], batch_size: int) -> None:
        self.folder, self.fmt, self.cols, self.batch_size = folder, fmt, cols, batch_size
        self.writers: dict[str, RowWriter] = {}

    def write(self, split: str, row: Row) -> None:
        writer = self.writers.get(split)
        if writer is None:
            writer = open_alignment_writer(self.fmt, self.folder / f"{split}.{EXTENSIONS[self.fmt]}", self.cols, self.batch_size)
            self.writers[split] = writer
        writer.write_record(row)

    def ensure(self, names: Iterable[str]) -> None:
        for name in names:
            if name not in self.writers:
                self.writers[name] = open_alignment_writer(
                    self.fmt, self.folder / f"{name}.{EXTENSIONS[self.fmt]}", self.cols, self.batch_size
                )

    def close(self) -> list[dict[str, Any]]:
        return [self.writers[name].close() for name in sorted(self.writers)]

    def abort(self) -> None:
        for writer in self.writers.values():
            writer.abort()


def classify_rows(rows: list[Row], keys: list[tuple[int, int]], stats: Stats | None) -> set[int]:
    """Tag rows of one document pair with their group, phenomenon and shape; return linked complex keys.

    ``keys`` are (complex sentence pk, simple sentence pk) per row. A union-find over integer
    nodes (complex pk, and -simple pk) keeps this cheap on million-row exports; the result is
    the same as :func:`curation.curate.phenomena.classify` (tested)."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        return ph.find_root(parent, x)

    for c, s in keys:
        a, b = c, -s
        if a not in parent:
            parent[a] = a
        if b not in parent:
            parent[b] = b
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra
    sizes: dict[int, list[int]] = {}
    for node in parent:
        size = sizes.setdefault(find(node), [0, 0, -1])
        size[0 if node > 0 else 1] += 1
    for number, size in enumerate(sizes.values()):
        size[2] = number
    shapes: dict[int, tuple[str, str]] = {}
    for root, (m, n, _) in sizes.items():
        if m == 1 and n == 1:
            shapes[root] = ("", "1-1")  # copying or rephrasing: decided per row below
        else:
            kind = ph.Phenomenon.SPLITTING if m == 1 else ph.Phenomenon.MERGING if n == 1 else ph.Phenomenon.FUSION
            shapes[root] = (kind.value, f"{m}-{n}")
            if stats is not None:
                stats.groups_by_phenomenon[kind.value] += 1
    for row, (c, _) in zip(rows, keys, strict=True):
        root = find(c)
        phenomenon, shape = shapes[root]
        if not phenomenon:
            copied = ph.normalise_space(row.simple) == ph.normalise_space(row.complex)
            phenomenon = ph.Phenomenon.COPYING.value if copied else ph.Phenomenon.REPHRASING.value
            if stats is not None:
                stats.groups_by_phenomenon[phenomenon] += 1
        row.group, row.phenomenon, row.group_shape = sizes[root][2], phenomenon, shape
    return {c for c, _ in keys}


# labelling item -> candidate pair, article and sentence positions (judgments and aggregated labels)
ITEM_FIELDS = (
    "item__candidate__pair__pair_id", "item__candidate__pair__article__slug",
    "item__candidate__simple__paragraph_position", "item__candidate__simple__position",
    "item__candidate__complex__paragraph_position", "item__candidate__complex__position",
)


def _item_columns(job_id: int, item_id: int, pair_id: str, slug: str, sp: int, ss: int, cp: int, cs: int,
                  split_of: Mapping[str, str]) -> dict[str, Any]:
    return {"labeling_job": job_id, "item": item_id, "pair_id": pair_id, "simple_id": sid(pair_id, 0, sp, ss),
            "complex_id": sid(pair_id, 1, cp, cs), "split": split_of.get(slug, "all")}


# --- Auto ----------------------------------------------------------------------------------------

PREDICTION_FIELDS = (
    "pair_id", "label", "score",
    "simple_id", "simple__paragraph_position", "simple__position", "simple__text", "simple__token_count",
    "complex_id", "complex__paragraph_position", "complex__position", "complex__text", "complex__token_count",
)
ROWS_PER_QUERY = 20_000


def _auto_rows(
    run_id: int, corpus_id: int, labels: list[str], chunk_size: int, rows_per_query: int = ROWS_PER_QUERY
) -> Iterator[tuple[Any, ...]]:
    """The run's predictions ordered by pair id, then simple and complex sentence position.

    One query per batch of document pairs (about ``rows_per_query`` rows, through the
    ``(run, pair)`` index) instead of one query over the whole run: PostgreSQL then sorts a few
    thousand rows in memory per batch instead of the whole run on disk, and the pair, article
    and level columns come from one small pair table read once. Each batch is the SQL of a
    ``values_list(...)`` queryset, run on a plain cursor and read with ``fetchmany(chunk_size)``
    (a server-side cursor per batch made PostgreSQL plan for the first rows and was ~8x slower);
    memory stays bounded by the batch. JIT compilation is switched off for these queries on
    PostgreSQL (it cost seconds per query and saved nothing).
    """
    pairs = list(
        DocumentPair.objects.filter(corpus_id=corpus_id).order_by("pair_id").values_list(
            "pk", "pair_id", "article__slug", "complex__level", "simple__level")
    )
    if not pairs:
        return
    total = PredictedAlignment.objects.filter(run_id=run_id).count()
    per_pair = max(1, total // len(pairs))
    step = max(1, rows_per_query // per_pair)
    for start in range(0, len(pairs), step):
        batch = pairs[start : start + step]
        meta = {pk: rest for pk, *rest in batch}
        qs = (
            PredictedAlignment.objects.filter(run_id=run_id, pair_id__in=list(meta), label__in=labels)
            .order_by("pair__pair_id", "simple__doc_position", "complex__doc_position")
            .values_list(*PREDICTION_FIELDS)
        )
        sql, sql_params = qs.query.sql_with_params()
        with connections[qs.db].cursor() as cursor:
            if connections[qs.db].vendor == "postgresql" and start == 0:
                cursor.execute("SET jit = off")
            cursor.execute(sql, sql_params)
            while rows := cursor.fetchmany(chunk_size):
                for pair_pk, *rest in rows:
                    yield (*meta[pair_pk], *rest)
    if connections[PredictedAlignment.objects.db].vendor == "postgresql":
        with connections[PredictedAlignment.objects.db].cursor() as cursor:
            cursor.execute("RESET jit")


def export_auto(dataset: ExportedDataset, params: Params, folder: Path, tracker: Tracker) -> dict[str, Any]:
    if dataset.run_id is None:
        raise ExportError("an Auto export needs an alignment run")
    run = dataset.run
    assert run is not None  # noqa: S101 - checked just above (narrowing for mypy)
    labels = params.labels or ALIGNED_LABELS
    language = dataset.corpus.language
    filters = build_filters(params.filters, language=language)
    slugs = list(Article.objects.filter(corpus=dataset.corpus).values_list("slug", flat=True))
    split_of = assign_splits(slugs, params.splits, params.seed) if params.splits else dict.fromkeys(slugs, "all")
    stats = Stats()
    writers = SplitWriters(folder, params.format, ROW_COLUMNS, params.batch_size)
    linked_complex = 0
    try:
        if params.splits:
            writers.ensure(params.splits)
        batch: list[Row] = []
        keys: list[tuple[Any, Any]] = []
        tokens: dict[int, tuple[int, int]] = {}
        current: str | None = None

        all_aligned = set(labels) <= set(ALIGNED_LABELS)

        def flush() -> int:
            if not batch:
                return 0
            stats.pairs_seen += 1
            if all_aligned:
                linked = classify_rows(batch, keys, stats)
            else:  # notAligned rows requested too: groups are built from aligned rows only
                chosen = [i for i, row in enumerate(batch) if row.label in ALIGNED_LABELS]
                linked = classify_rows([batch[i] for i in chosen], [keys[i] for i in chosen], stats)
            kept = apply_filters(filters, batch, language)
            for row in kept:
                ct, st = tokens[id(row)]
                stats.add(row, ct, st)
                writers.write(row.split, row)
            return len(linked)

        for values in _auto_rows(run.pk, run.corpus_id, labels, params.chunk_size):
            (pair_id, slug, clevel, slevel, label, score, s_pk, sp, ss, stext, stok, c_pk, cp, cs, ctext, ctok) = values
            if pair_id != current:
                linked_complex += flush()
                batch, keys, tokens = [], [], {}
                current = pair_id
            row = Row(
                label=label, simple_id=f"{pair_id}-0-{sp}-{ss}", complex_id=f"{pair_id}-1-{cp}-{cs}",
                simple=stext, complex=ctext, score=score, pair_id=pair_id, article=slug,
                complex_level=clevel, simple_level=slevel, split=split_of.get(slug, "all"),
            )
            batch.append(row)
            keys.append((c_pk, s_pk))
            tokens[id(row)] = (ctok, stok)
            stats.input_rows += 1
            tracker.step()
        linked_complex += flush()
        tracker.finish()
        synthetic_rows = _mix_synthetic(dataset, params, stats, writers)
        files = writers.close()
    except BaseException:
        writers.abort()
        raise
    deletions = _deletions(run.pk) - linked_complex
    stats.groups_by_phenomenon["deletion"] += max(deletions, 0)
    model = run.model_version
    source = {
        "run": {"id": run.pk, "method": run.method, "params": run.params},
        "model": None if model is None else {
            "id": model.pk, "name": model.name, "method": model.method, "seed": model.seed,
            "metrics": model.metrics, "data_counts": model.data_counts,
        },
        "labels": labels,
        "synthetic_rows": synthetic_rows,
    }
    return _card(dataset, params, stats, files, filters, source, split_of)


def _deletions(run_id: int) -> int:
    """Complex sentences of the run's document pairs (each pair counted once)."""
    pair_ids = PredictedAlignment.objects.filter(run_id=run_id).values("pair_id").distinct()
    total = (
        DocumentPair.objects.filter(pk__in=pair_ids)
        .annotate(n=Count("complex__sentences"))
        .aggregate(total=Sum("n"))["total"]
    )
    return int(total or 0)


def _mix_synthetic(dataset: ExportedDataset, params: Params, stats: Stats, writers: SplitWriters) -> int:
    """Add synthetic pairs to the training split: ``synthetic_ratio`` x the real training rows."""
    if params.synthetic_ratio <= 0:
        return 0
    target_split = "train" if params.splits and "train" in params.splits else (next(iter(params.splits)) if params.splits else "all")
    real = stats.rows_by_split.get(target_split, 0)
    wanted = round(params.synthetic_ratio * real)
    if wanted <= 0:
        return 0
    qs = SyntheticPair.objects.filter(corpus=dataset.corpus).order_by("pk").values_list(
        "pk", "complex_text", "simple_text", "batch"
    )[:wanted]
    written = 0
    for pk, ctext, stext, batch in qs.iterator(chunk_size=params.chunk_size):
        row = Row(
            label=AlignmentLabel.ALIGNED.value, simple_id=f"synthetic_{pk}-0-0-0", complex_id=f"synthetic_{pk}-1-0-0",
            simple=stext, complex=ctext, score=None, pair_id=f"synthetic_{pk}", article=f"synthetic:{batch}",
            split=target_split, synthetic=True,
        )
        stats.add(row, len(words(ctext)), len(words(stext)))
        writers.write(target_split, row)
        written += 1
    return written


# --- Manual --------------------------------------------------------------------------------------


def export_manual(dataset: ExportedDataset, params: Params, folder: Path, tracker: Tracker) -> dict[str, Any]:
    from annotation.models import AggregatedLabel, Judgment, VerifiedLabel

    corpus = dataset.corpus
    labels = params.labels or [c.value for c in AlignmentLabel]
    articles = list(Article.objects.filter(corpus=corpus).order_by("slug").values_list("pk", "slug"))
    split_of = assign_splits([s for _, s in articles], params.splits, params.seed) if params.splits else {s: "all" for _, s in articles}
    stats = Stats()
    writers = SplitWriters(folder, params.format, MANUAL_COLUMNS, params.batch_size)
    extra: list[RowWriter] = []
    files: list[dict[str, Any]] = []
    try:
        if params.splits:
            writers.ensure(params.splits)
        for article_pk, slug in articles:
            n = _manual_article(article_pk, slug, split_of.get(slug, "all"), labels, params, writers, stats)
            tracker.step(n)
        tracker.finish()
        files.extend(writers.close())
        # raw judgments and aggregated labels, kept apart from the verified labels
        ext = EXTENSIONS[params.format]
        judgments = open_writer(params.format, folder / f"judgments.{ext}", columns(
            ("labeling_job", "int"), ("item", "int"), "pair_id", "simple_id", "complex_id", "annotator", "label",
            ("seconds", "float"), ("is_valid", "bool"), "split"), batch_size=params.batch_size)
        extra.append(judgments)
        jq = (
            Judgment.objects.filter(job__corpus=corpus)
            .order_by("job_id", "item_id", "annotator_id")
            .values_list("job_id", "item_id", *ITEM_FIELDS, "annotator_id", "label", "seconds", "is_valid")
        )
        for job_id, item_id, pair_id, slug, sp, ss, cp, cs, annotator_id, label, seconds, valid in jq.iterator(params.chunk_size):
            judgments.write({
                **_item_columns(job_id, item_id, pair_id, slug, sp, ss, cp, cs, split_of),
                "annotator": pseudonym(annotator_id), "label": label, "seconds": float(seconds), "is_valid": bool(valid),
            })
        aggregated = open_writer(params.format, folder / f"aggregated.{ext}", columns(
            ("labeling_job", "int"), ("item", "int"), "pair_id", "simple_id", "complex_id", "label",
            ("confidence", "float"), "method", ("votes", "json"), "split"), batch_size=params.batch_size)
        extra.append(aggregated)
        aq = (
            AggregatedLabel.objects.filter(item__job__corpus=corpus)
            .order_by("item__job_id", "item_id")
            .values_list("item__job_id", "item_id", *ITEM_FIELDS, "label", "confidence", "method", "votes")
        )
        for job_id, item_id, pair_id, slug, sp, ss, cp, cs, label, confidence, method, votes in aq.iterator(params.chunk_size):
            aggregated.write({
                **_item_columns(job_id, item_id, pair_id, slug, sp, ss, cp, cs, split_of),
                "label": label, "confidence": float(confidence), "method": method,
                "votes": {k: votes[k] for k in sorted(votes)},
            })
        files.extend(w.close() for w in extra)
    except BaseException:
        writers.abort()
        for w in extra:
            w.abort()
        raise
    verified = VerifiedLabel.objects.filter(candidate__pair__corpus=corpus)
    source = {
        "labels": {
            "verified": verified.count(),
            "verified_changed_from_aggregate": sum(
                1 for a, v in verified.exclude(aggregated_label="").values_list("aggregated_label", "label") if a != v
            ),
            "reference": ReferenceAlignment.objects.filter(pair__corpus=corpus).count() if params.include_reference else 0,
            "judgments": Judgment.objects.filter(job__corpus=corpus).count(),
            "aggregated": AggregatedLabel.objects.filter(item__job__corpus=corpus).count(),
        },
        "agreement": agreement(corpus.pk),
        "annotators_pseudonymised": "HMAC-SHA256(SECRET_KEY, user id), first 10 hex digits",
    }
    return _card(dataset, params, stats, files, [], source, split_of)


def _manual_article(
    article_pk: int, slug: str, split: str, labels: list[str], params: Params, writers: SplitWriters, stats: Stats
) -> int:
    """Verified labels (+ reference alignments, + derived non-adjacent links) of one article."""
    from annotation.models import VerifiedLabel

    sentences: dict[int, tuple[int, int, int, str, int]] = {
        pk: (level, p, s, text, tok)
        for pk, level, p, s, text, tok in Sentence.objects.filter(document__article_id=article_pk).values_list(
            "pk", "document__level", "paragraph_position", "position", "text", "token_count"
        )
    }
    documents = dict(Document.objects.filter(article_id=article_pk).values_list("level", "level_label"))
    pairs = {
        (c, s): pid
        for pid, c, s in DocumentPair.objects.filter(article_id=article_pk).values_list("pair_id", "complex__level", "simple__level")
    }
    # (complex_pk, simple_pk) -> (label, source, score)
    links: dict[tuple[int, int], tuple[str, str, float | None]] = {}
    if params.include_reference:
        for c_pk, s_pk, label, score in ReferenceAlignment.objects.filter(pair__article_id=article_pk).order_by(
            "role", "pk").values_list("complex_id", "simple_id", "label", "score"):
            links.setdefault((c_pk, s_pk), (label, "reference", score))
    for c_pk, s_pk, label in VerifiedLabel.objects.filter(candidate__pair__article_id=article_pk).values_list(
        "candidate__complex_id", "candidate__simple_id", "label"
    ):
        links[(c_pk, s_pk)] = (label, "verified", None)
    if params.derive:
        level_links = [
            LevelLink(sentences[c][0], sentences[s][0], c, s, label)
            for (c, s), (label, _, _) in links.items() if c in sentences and s in sentences
        ]
        for link in derive_links(level_links):
            links.setdefault((int(link.complex), int(link.simple)), (link.label, "derived", None))  # type: ignore[call-overload]
    by_pair: dict[tuple[int, int], list[tuple[int, int, str, str, float | None]]] = defaultdict(list)
    for (c, s), (label, source, score) in links.items():
        if label not in labels or c not in sentences or s not in sentences:
            continue
        by_pair[(sentences[c][0], sentences[s][0])].append((c, s, label, source, score))
    written = 0
    for (clevel, slevel) in sorted(by_pair):
        pair_id = pairs.get((clevel, slevel)) or f"{slug}.{_label(documents.get(clevel, str(clevel)))}_{_label(documents.get(slevel, str(slevel)))}"
        entries = sorted(by_pair[(clevel, slevel)], key=lambda e: (sentences[e[1]][1:3], sentences[e[0]][1:3]))
        rows: list[Row] = []
        keys: list[tuple[Any, Any]] = []
        sources: list[str] = []
        for c, s, label, source, score in entries:
            _, cp, cs, ctext, _ = sentences[c]
            _, sp, ss, stext, _ = sentences[s]
            rows.append(Row(label=label, simple_id=sid(pair_id, 0, sp, ss), complex_id=sid(pair_id, 1, cp, cs),
                            simple=stext, complex=ctext, score=score, pair_id=pair_id, article=slug,
                            complex_level=clevel, simple_level=slevel, split=split))
            keys.append((c, s))
            sources.append(source)
        aligned = [(r, k) for r, k in zip(rows, keys, strict=True) if r.label in ALIGNED_LABELS]
        if aligned:
            classify_rows([r for r, _ in aligned], [k for _, k in aligned], stats)
        for row, (c, s), source in zip(rows, keys, sources, strict=True):
            row.source = source
            stats.add(row, sentences[c][4], sentences[s][4], source)
            writers.write(split, row)
            written += 1
    return written


def _label(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in text)


def agreement(corpus_id: int) -> dict[str, Any]:
    """Krippendorff's alpha (nominal) and observed pairwise agreement of valid judgments, per labeling job."""
    from annotation.models import Judgment

    out: dict[str, Any] = {}
    order = [c.value for c in AlignmentLabel]
    per_job: dict[int, dict[int, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for job_id, item_id, label in Judgment.objects.filter(job__corpus_id=corpus_id, is_valid=True).values_list(
        "job_id", "item_id", "label"
    ).iterator(chunk_size=CHUNK):
        per_job[job_id][item_id][label] += 1
    for job_id in sorted(per_job):
        items = per_job[job_id]
        matrix = [[counts.get(label, 0) for label in order] for _, counts in sorted(items.items())]
        pairable = [row for row in matrix if sum(row) >= 2]
        agree = total = 0
        for row in pairable:
            n = sum(row)
            agree += sum(k * (k - 1) for k in row)
            total += n * (n - 1)
        alpha: float | None = None
        if pairable:
            try:
                import krippendorff
                import numpy as np

                value = float(krippendorff.alpha(value_counts=np.array(pairable), level_of_measurement="nominal"))
                alpha = None if value != value else round(value, 4)
            except (ValueError, ZeroDivisionError):
                alpha = None
        out[str(job_id)] = {
            "items": len(items), "items_with_2plus": len(pairable),
            "judgments": int(sum(sum(r) for r in matrix)),
            "krippendorff_alpha": alpha,
            "observed_agreement": round(agree / total, 4) if total else None,
        }
    return out


# --- Pool ----------------------------------------------------------------------------------------


def export_pool(dataset: ExportedDataset, params: Params, folder: Path, tracker: Tracker) -> dict[str, Any]:
    """Simple sentences of 10-40 words (configurable), deduplicated, from the simple side of the corpus.

    Sorted by text in the database, so duplicates are adjacent and dropped in constant memory."""
    simple_docs = DocumentPair.objects.filter(corpus=dataset.corpus).values("simple_id")
    qs = (
        Sentence.objects.filter(document_id__in=simple_docs)
        .order_by("text", "document__article__slug", "document__level", "doc_position")
        .values_list("text", "document__article__slug", "document__level", "paragraph_position", "position")
    )
    ext = EXTENSIONS[params.format]
    writer = open_writer(params.format, folder / f"pool.{ext}", columns("text", "article", ("level", "int"), "sentence", ("words", "int")),
                         batch_size=params.batch_size)
    stats = Stats()
    counts = Counter[str]()
    previous: str | None = None
    try:
        for text, slug, level, p, s in qs.iterator(chunk_size=params.chunk_size):
            tracker.step()
            counts["seen"] += 1
            n = len(words(text))
            if n < params.min_words or n > params.max_words:
                counts["length"] += 1
                continue
            key = " ".join(text.split())
            if key == previous:
                counts["duplicate"] += 1
                continue
            previous = key
            writer.write({"text": key, "article": slug, "level": level, "sentence": f"{p}-{s}", "words": n})
            stats.rows_by_split["pool"] += 1
            stats.simple_tokens["pool"] += n
        tracker.finish()
        files = [writer.close()]
    except BaseException:
        writer.abort()
        raise
    source = {"pool": {"min_words": params.min_words, "max_words": params.max_words, "seen": counts["seen"],
                       "removed_length": counts["length"], "removed_duplicate": counts["duplicate"]}}
    return _card(dataset, params, stats, files, [], source, {})


# --- the card ------------------------------------------------------------------------------------


def _card(
    dataset: ExportedDataset, params: Params, stats: Stats, files: list[dict[str, Any]], filters: list[Filter],
    source: dict[str, Any], split_of: dict[str, str],
) -> dict[str, Any]:
    articles_per_split = Counter(split_of.values())
    return {
        "card_version": 1,
        "kind": dataset.kind,
        "format": params.format,
        "corpus": {"name": dataset.corpus.name, "language": dataset.corpus.language, "kind": dataset.corpus.kind},
        "params": {
            "splits": params.splits, "seed": params.seed, "filters": params.filters, "labels": params.labels,
            "synthetic_ratio": params.synthetic_ratio, "include_reference": params.include_reference,
            "derive": params.derive,
        },
        "counts": {
            "rows": int(sum(stats.rows_by_split.values())),
            "input_rows": stats.input_rows,
            "document_pairs": stats.pairs_seen,
            "by_split": dict(sorted(stats.rows_by_split.items())),
            "by_label": dict(sorted(stats.rows_by_label.items())),
            "by_source": dict(sorted(stats.rows_by_source.items())),
            "by_level_pair": dict(sorted(stats.level_pairs.items())),
            "synthetic": stats.synthetic,
        },
        "splits": {"ratios": params.splits, "seed": params.seed, "articles": dict(sorted(articles_per_split.items()))},
        "filters": [f.report() for f in filters],
        "phenomena": {
            "groups": percentages(stats.groups_by_phenomenon, ph.PHENOMENA_ORDER),
            "rows": percentages(stats.rows_by_phenomenon, [p for p in ph.PHENOMENA_ORDER if p != "deletion"]),
        },
        "lengths": stats.lengths(),
        "source": source,
        "files": files,
    }


def card_markdown(card: dict[str, Any], title: str) -> str:
    lines = [f"# {title}", "", f"Kind: **{card['kind']}**, format: **{card['format']}**, corpus: "
             f"**{card['corpus']['name']}** ({card['corpus']['language']}).", ""]
    counts = card["counts"]
    lines += ["## Counts", "", "| split | rows | articles | avg complex tokens | avg simple tokens |", "|---|---:|---:|---:|---:|"]
    for split, n in counts["by_split"].items():
        length = card["lengths"].get(split, {})
        lines.append(f"| {split} | {n} | {card['splits']['articles'].get(split, '')} | "
                     f"{length.get('complex_tokens', '')} | {length.get('simple_tokens', '')} |")
    lines += ["", f"Total rows: {counts['rows']} (synthetic: {counts['synthetic']}); labels: "
              + ", ".join(f"{k} {v}" for k, v in counts["by_label"].items()), ""]
    if card["splits"]["ratios"]:
        lines += [f"Splits by article group, ratios {card['splits']['ratios']}, seed {card['splits']['seed']}.", ""]
    if card["filters"]:
        lines += ["## Filters", "", "| filter | parameters | published default | removed |", "|---|---|---|---:|"]
        for f in card["filters"]:
            params = {k: v for k, v in f["params"].items() if k != "path"}
            lines.append(f"| {f['name']} | {params} | {f['defaults']} | {f['removed']} |")
        lines.append("")
    lines += ["## Phenomena (aligned groups)", "", "| phenomenon | groups | % |", "|---|---:|---:|"]
    for name, value in card["phenomena"]["groups"].items():
        lines.append(f"| {name} | {value['count']} | {value['percent']} |")
    lines += ["", "## Source", "", "```json", _json(card["source"]), "```", "", "## Files", "",
              "| file | rows | bytes | sha256 |", "|---|---:|---:|---|"]
    for f in card["files"]:
        lines.append(f"| {f['name']} | {f['rows'] if f['rows'] is not None else ''} | {f['bytes']} | `{f['sha256']}` |")
    return "\n".join(lines) + "\n"


def _json(data: Any) -> str:
    import json

    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)


# --- entry point ---------------------------------------------------------------------------------

BUILDERS = {
    ExportedDataset.Kind.AUTO: export_auto,
    ExportedDataset.Kind.MANUAL: export_manual,
    ExportedDataset.Kind.POOL: export_pool,
}


def export_folder(dataset: ExportedDataset) -> Path:
    return Path(settings.EXPORTS_DIR) / f"{dataset.corpus_id}-{dataset.kind}-{dataset.pk}"


def total_rows(dataset: ExportedDataset, params: Params) -> int:
    if dataset.kind == ExportedDataset.Kind.AUTO and dataset.run_id:
        return PredictedAlignment.objects.filter(run_id=dataset.run_id, label__in=params.labels or ALIGNED_LABELS).count()
    if dataset.kind == ExportedDataset.Kind.POOL:
        simple_docs = DocumentPair.objects.filter(corpus_id=dataset.corpus_id).values("simple_id")
        return Sentence.objects.filter(document_id__in=simple_docs).count()
    return 0


def run_export(dataset_id: int, progress: Progress | None = None) -> str:
    """Build the files of one ExportedDataset. Idempotent: a finished export is left alone.

    Returns "done", "skipped" (gone, finished or cancelled) or raises after marking the job failed.
    """
    dataset = ExportedDataset.objects.select_related("corpus", "run", "run__model_version").filter(pk=dataset_id).first()
    if dataset is None or dataset.files:
        return "skipped"
    job_id = dataset.job_id
    if job_id is not None and jobs.cancel_requested(job_id):
        return "skipped"
    try:
        params = Params.from_dict(dict(dataset.params))
    except (ExportError, ValueError, TypeError) as exc:
        if job_id is not None:
            jobs.fail(job_id, str(exc), message=str(exc))
        raise ExportError(str(exc)) from exc
    total = total_rows(dataset, params)
    if job_id is not None:
        jobs.start(job_id, total=total, message=f"exporting {dataset.get_kind_display()}")
    final = export_folder(dataset)
    staging = final.parent / f".staging-{final.name}-{uuid.uuid4().hex[:8]}"
    staging.mkdir(parents=True)
    started = time.monotonic()
    try:
        tracker = Tracker(job_id, total, progress)
        card = BUILDERS[ExportedDataset.Kind(dataset.kind)](dataset, params, staging, tracker)
        title = f"{dataset.corpus.name}: {dataset.get_kind_display()} export"
        card_files = [write_json_atomic(staging / "card.json", card), write_text_atomic(staging / "README.md", card_markdown(card, title))]
        if final.exists():  # left over by an earlier attempt that died before saving the row
            shutil.rmtree(final)
        staging.rename(final)
        try:
            with transaction.atomic():
                files = card["files"] + card_files
                updated = ExportedDataset.objects.filter(pk=dataset.pk, files=[]).update(
                    path=str(final.relative_to(Path(settings.EXPORTS_DIR))), files=files, card=card
                )
                if job_id is not None:
                    jobs.finish(job_id, result={"dataset": dataset.pk, "rows": card["counts"]["rows"],
                                                "seconds": round(time.monotonic() - started, 2)},
                                message=f"{card['counts']['rows']} rows")
        except BaseException:
            shutil.rmtree(final, ignore_errors=True)
            raise
        if not updated:
            return "skipped"
        return "done"
    except (DatabaseOperationalError, InterfaceError):
        shutil.rmtree(staging, ignore_errors=True)  # transient: the task retries; the job stays running
        raise
    except jobs.JobCancelled:
        shutil.rmtree(staging, ignore_errors=True)
        if job_id is not None:
            jobs.mark_cancelled(job_id)
        return "skipped"
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if job_id is not None:
            jobs.fail_with(job_id, exc)
        raise


def create_export(
    corpus_id: int, kind: str, params: dict[str, Any], run_id: int | None = None, user: Any = None
) -> ExportedDataset:
    """An ExportedDataset and its Job (kind export); the caller enqueues ``run_export`` on commit."""
    from curation.models import AlignmentRun, Corpus

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
