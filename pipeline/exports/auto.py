"""Auto export: a corpus run's predictions, filtered, one document pair at a time, split by
article, with synthetic pairs mixed into the training split on request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.db import connections
from django.db.models import Count, Sum

from alignment_engine.ids import COMPLEX, SIMPLE, sentence_id
from alignment_engine.text import words
from curation.curate.filters import FilterStream, build_filters
from curation.curate.phenomena import classify_rows
from curation.curate.rows import Row
from curation.models import AlignmentLabel, Article, DocumentPair, SyntheticPair
from curation.queries import article_splits
from pipeline.exports.card import Stats, build_card
from pipeline.exports.parameters import ALIGNED_LABELS, ExportError, Params
from pipeline.exports.writers import ROW_COLUMNS, SplitWriters
from pipeline.jobs import ProgressRecorder
from pipeline.models import ExportedDataset, PredictedAlignment

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


def export_auto(dataset: ExportedDataset, params: Params, folder: Path, tracker: ProgressRecorder) -> dict[str, Any]:
    if dataset.run_id is None:
        raise ExportError("an Auto export needs an alignment run")
    run = dataset.run
    assert run is not None  # noqa: S101 - checked just above (narrowing for mypy)
    labels = params.labels or ALIGNED_LABELS
    language = dataset.corpus.language
    filters = build_filters(params.filters, language=language)
    stream: FilterStream[dict[int, tuple[int, int]]] = FilterStream(filters, language)
    if params.splits:
        split_of = article_splits(dataset.corpus_id, params.splits, params.seed)
    else:
        split_of = dict.fromkeys(Article.objects.filter(corpus=dataset.corpus).values_list("slug", flat=True), "all")
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

        def write(released: list[tuple[dict[int, tuple[int, int]], list[Row]]]) -> None:
            for pair_tokens, kept in released:  # in the order the pairs were read
                for row in kept:
                    ct, st = pair_tokens[id(row)]
                    stats.add(row, ct, st)
                    writers.write(row.split, row)

        def flush() -> int:
            if not batch:
                return 0
            stats.pairs_seen += 1
            if all_aligned:
                linked = classify_rows(batch, keys, stats.groups_by_phenomenon)
            else:  # notAligned rows requested too: groups are built from aligned rows only
                chosen = [i for i, row in enumerate(batch) if row.label in ALIGNED_LABELS]
                linked = classify_rows([batch[i] for i in chosen], [keys[i] for i in chosen], stats.groups_by_phenomenon)
            write(stream.push(batch, tokens))
            return len(linked)

        for values in _auto_rows(run.pk, run.corpus_id, labels, params.chunk_size):
            (pair_id, slug, clevel, slevel, label, score, s_pk, sp, ss, stext, stok, c_pk, cp, cs, ctext, ctok) = values
            if pair_id != current:
                linked_complex += flush()
                batch, keys, tokens = [], [], {}
                current = pair_id
            row = Row(
                label=label, simple_id=sentence_id(pair_id, SIMPLE, sp, ss), complex_id=sentence_id(pair_id, COMPLEX, cp, cs),
                simple=stext, complex=ctext, score=score, pair_id=pair_id, article=slug,
                complex_level=clevel, simple_level=slevel, split=split_of.get(slug, "all"),
            )
            batch.append(row)
            keys.append((c_pk, s_pk))
            tokens[id(row)] = (ctok, stok)
            stats.input_rows += 1
            tracker.step()
        linked_complex += flush()
        write(stream.close())
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
    return build_card(dataset, params, stats, files, filters, source, split_of)


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
            label=AlignmentLabel.ALIGNED.value, simple_id=sentence_id(f"synthetic_{pk}", SIMPLE, 0, 0), complex_id=sentence_id(f"synthetic_{pk}", COMPLEX, 0, 0),
            simple=stext, complex=ctext, score=None, pair_id=f"synthetic_{pk}", article=f"synthetic:{batch}",
            split=target_split, synthetic=True,
        )
        stats.add(row, len(words(ctext)), len(words(stext)))
        writers.write(target_split, row)
        written += 1
    return written
