"""Writes parsed articles and alignments in bulk, batch after batch, inside one transaction.

:class:`ImportWriter` takes what a parser yields in batches (so an import never holds the
whole corpus in memory); :func:`write_import` writes lists at once (tests, the corpus builder).
Every value is checked against its column before it is written (length, control characters),
so a bad file is refused with ``file:line: problem`` instead of a database error. Articles,
documents, pairs, paragraphs and sentences go in without model objects on PostgreSQL
(``COPY``, ids drawn from their sequences); on SQLite paragraphs and sentences through
``executemany``, the rest through ``bulk_create``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

from django.db import connection
from django.db.models import ProtectedError, QuerySet, RestrictedError
from django.utils import timezone

from alignment_engine.ids import COMPLEX, SIMPLE, SentenceId, pair_id_problem
from alignment_engine.text import count_tokens
from curation.importers.reading import control_problem, length_problem
from curation.importers.types import (
    ImportFailed,
    ImportOptions,
    ImportSummary,
    ParsedAlignment,
    ParsedArticle,
    ParsedDocument,
    UnchangedArticle,
)
from curation.models import (
    AlignmentLabel,
    Article,
    Corpus,
    Document,
    DocumentPair,
    ImportRecord,
    Paragraph,
    ReferenceAlignment,
    Sentence,
)

BATCH = 5000
# Paragraphs and sentences without model objects: COPY on PostgreSQL, executemany elsewhere;
# False: bulk_create (scripts/bench_import.py compares the two).
USE_COPY = True
SENTENCE_COLUMNS = ("document_id", "paragraph_id", "paragraph_position", "position", "doc_position", "text", "token_count", "source_id")


def column_max(model: Any, name: str) -> int:
    return int(model._meta.get_field(name).max_length)


def check_options(path: Path, options: ImportOptions) -> None:
    """The corpus name and language fit their columns and hold no control characters."""
    for value, limit, what in ((options.corpus, column_max(Corpus, "name"), "corpus name"), (options.language, column_max(Corpus, "language"), "language")):
        problem = ("is empty" if not value.strip() else None) or control_problem(value) or length_problem(value, limit, what)
        if problem:
            raise ImportFailed(path, None, f"{what}: {problem}")


def check_article(article: ParsedArticle) -> None:
    """Every value of a parsed article fits its column (the problem names the article's file:line)."""
    checks: list[tuple[str, int, str]] = [
        (article.slug, column_max(Article, "slug"), "article slug"),
        (article.title, column_max(Article, "title"), "title"),
    ]
    for doc in article.documents:
        checks += [(doc.title, column_max(Document, "title"), f"title of level {doc.level_label!r}"),
                   (doc.level_label, column_max(Document, "level_label"), "level label")]
        for ids in doc.source_ids or []:
            checks += [(sid, column_max(Sentence, "source_id"), "sentence id") for sid in ids]
    for value, limit, what in checks:
        problem = control_problem(value) or length_problem(value, limit, what)
        if problem:
            raise ImportFailed(article.source, None, f"article {article.slug[:60]!r}: {what}: {problem}")


def get_or_create_corpus(path: Path, options: ImportOptions, adds_documents: bool) -> Corpus:
    corpus, created = Corpus.objects.get_or_create(
        name=options.corpus, defaults={"language": options.language, "kind": options.kind}
    )
    if adds_documents and not created and corpus.language != options.language:
        raise ImportFailed(
            path, None, f"corpus {corpus.name!r} is in language {corpus.language!r}, this import says {options.language!r}"
        )
    return corpus


def pair_label(label: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]+", "_", label)


def derive_pairs(article: ParsedArticle, all_levels: bool) -> list[tuple[int, int, str]]:
    if article.pairs is not None:
        return article.pairs
    docs = sorted(article.documents, key=lambda d: d.level)
    combos = list(combinations(docs, 2)) if all_levels else list(zip(docs, docs[1:], strict=False))
    return [(c.level, s.level, f"{article.slug}.{pair_label(c.level_label)}_{pair_label(s.level_label)}") for c, s in combos]


class ImportState:
    """What one import has seen so far, across its batches (slugs and pair ids: duplicates)."""

    def __init__(self) -> None:
        self.slugs: dict[str, str] = {}  # slug -> source
        self.pair_ids: dict[str, str] = {}  # pair id -> source


def _fast() -> bool:
    """Rows go in by COPY (PostgreSQL with USE_COPY), ids drawn from the table's sequence."""
    return connection.vendor == "postgresql" and USE_COPY


def _next_ids(model: Any, n: int) -> list[int]:
    """``n`` fresh primary keys of ``model`` from its sequence (PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)", [model._meta.db_table, n]
        )
        return [row[0] for row in cursor.fetchall()]


def _copy(table: str, columns: Iterable[str], rows: Iterable[Sequence[Any]]) -> None:
    with connection.cursor() as cursor, cursor.cursor.copy(
        f"COPY {connection.ops.quote_name(table)} ({', '.join(columns)}) FROM STDIN"
    ) as copy:
        for row in rows:
            copy.write_row(row)


def _sentence_values(doc_pk: int, doc: ParsedDocument, para_pks: Sequence[int]) -> Iterator[tuple[Any, ...]]:
    """Column values (SENTENCE_COLUMNS) of one document's sentences."""
    n = 0
    for p, paragraph in enumerate(doc.paragraphs):
        for s, text in enumerate(paragraph):
            source_id = doc.source_ids[p][s] if doc.source_ids else ""
            yield (doc_pk, para_pks[p], p, s, n, text, count_tokens(text), source_id)
            n += 1


def write_text(doc_pks: list[int], parsed_docs: list[ParsedDocument]) -> tuple[int, int]:
    """Paragraphs and sentences of the documents (their primary keys): (paragraphs, sentences) written.

    PostgreSQL: paragraph ids are drawn from their sequence and both tables are filled with
    COPY, without building model objects (their construction was half the writer's time);
    other databases: ``executemany`` inserts, the paragraph ids read back by (document,
    position); with USE_COPY off, ``bulk_create`` in batches."""
    n_paragraphs = sum(len(doc.paragraphs) for doc in parsed_docs)
    if _fast():
        ids = iter(_next_ids(Paragraph, n_paragraphs))
        para_pks = [[next(ids) for _ in doc.paragraphs] for doc in parsed_docs]
        _copy(Paragraph._meta.db_table, ("id", "document_id", "position"),
              ((pk, doc_pk, p) for doc_pk, pks in zip(doc_pks, para_pks, strict=True) for p, pk in enumerate(pks)))
        counted = [0]

        def sentences() -> Iterator[tuple[Any, ...]]:
            for doc_pk, doc, pks in zip(doc_pks, parsed_docs, para_pks, strict=True):
                for values in _sentence_values(doc_pk, doc, pks):
                    counted[0] += 1
                    yield values

        _copy(Sentence._meta.db_table, SENTENCE_COLUMNS, sentences())
        return n_paragraphs, counted[0]
    if USE_COPY:  # other databases (SQLite): executemany, then the paragraph ids read back
        para_table = connection.ops.quote_name(Paragraph._meta.db_table)
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {para_table} (document_id, position) VALUES (%s, %s)",
                [(doc_pk, p) for doc_pk, doc in zip(doc_pks, parsed_docs, strict=True) for p in range(len(doc.paragraphs))],
            )
        para_ids = {
            (d, p): pk
            for start in range(0, len(doc_pks), 500)
            for pk, d, p in Paragraph.objects.filter(document_id__in=doc_pks[start : start + 500])
            .values_list("pk", "document_id", "position")
        }
        values = [
            v for doc_pk, doc in zip(doc_pks, parsed_docs, strict=True)
            for v in _sentence_values(doc_pk, doc, [para_ids[(doc_pk, p)] for p in range(len(doc.paragraphs))])
        ]
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {connection.ops.quote_name(Sentence._meta.db_table)} ({', '.join(SENTENCE_COLUMNS)}) "
                f"VALUES ({', '.join(['%s'] * len(SENTENCE_COLUMNS))})",
                values,
            )
        return n_paragraphs, len(values)
    para_rows = Paragraph.objects.bulk_create(
        [Paragraph(document_id=doc_pk, position=p) for doc_pk, doc in zip(doc_pks, parsed_docs, strict=True)
         for p in range(len(doc.paragraphs))],
        batch_size=BATCH,
    )
    para_iter = iter(para_rows)
    sentence_rows = [
        Sentence(**dict(zip(SENTENCE_COLUMNS, values, strict=True)))
        for doc_pk, doc in zip(doc_pks, parsed_docs, strict=True)
        for values in _sentence_values(doc_pk, doc, [next(para_iter).pk for _ in doc.paragraphs])
    ]
    Sentence.objects.bulk_create(sentence_rows, batch_size=BATCH)
    return n_paragraphs, len(sentence_rows)


def delete_replaced(old: Article | QuerySet[Article], article: ParsedArticle) -> None:
    """Delete what ``--replace`` overwrites; refused when human work refers to it."""
    try:
        old.delete()
    except (ProtectedError, RestrictedError) as exc:  # human work (test questions, labels) refers to it
        raise ImportFailed(
            article.source, None,
            f"article {article.slug!r} cannot be replaced: {len(exc.args[1])} row(s) of human work "
            "(labeling-job items, test questions or verified labels) refer to its sentence pairs",
        ) from exc


def write_articles(
    corpus: Corpus, articles: Iterable[ParsedArticle | UnchangedArticle], options: ImportOptions, summary: ImportSummary,
    state: ImportState | None = None,
) -> None:
    state = state or ImportState()
    batch = list(articles)
    for article in batch:
        if article.slug in state.slugs:
            raise ImportFailed(article.source, None, f"article {article.slug!r} appears twice in this import (also {state.slugs[article.slug]})")
        state.slugs[article.slug] = article.source
    parsed = [a for a in batch if isinstance(a, ParsedArticle)]
    summary.articles_unchanged += len(batch) - len(parsed)
    for article in parsed:
        check_article(article)
    existing = {a.slug: a for a in Article.objects.filter(corpus=corpus, slug__in=[a.slug for a in parsed])}
    fresh: list[ParsedArticle] = []
    replaced_here = 0
    for article in parsed:
        old = existing.get(article.slug)
        if old is None:
            fresh.append(article)
        elif old.content_hash == article.content_hash():
            summary.articles_unchanged += 1
            if article.raw_hash and old.raw_hash != article.raw_hash:
                Article.objects.filter(pk=old.pk).update(raw_hash=article.raw_hash)
        elif options.replace:
            delete_replaced(old, article)
            replaced_here += 1
            fresh.append(article)
        else:
            raise ImportFailed(
                article.source,
                None,
                f"article {article.slug!r} already exists in corpus {corpus.name!r} with different text; "
                "import with --replace to overwrite it (its labels and alignments are deleted)",
            )
    summary.articles_replaced += replaced_here
    if not fresh:
        return
    pairs_of = {id(a): derive_pairs(a, options.all_levels) for a in fresh}
    for article in fresh:
        for _, _, pair_id in pairs_of[id(article)]:
            problem = pair_id_problem(pair_id)
            if problem:
                raise ImportFailed(article.source, None, f"article {article.slug!r}: pair id {pair_id[:60]!r}: {problem}")
            if pair_id in state.pair_ids:
                raise ImportFailed(article.source, None, f"pair id {pair_id!r} appears twice in this import (also {state.pair_ids[pair_id]})")
            state.pair_ids[pair_id] = article.source
    wanted_ids = [p[2] for a in fresh for p in pairs_of[id(a)]]
    taken = DocumentPair.objects.filter(corpus=corpus, pair_id__in=wanted_ids)
    if taken.exists():
        if not options.replace:
            names = sorted(taken.values_list("pair_id", flat=True))[:5]
            raise ImportFailed(fresh[0].source, None, f"pair ids already used in this corpus: {names} (import with --replace to overwrite their articles)")
        # --replace: articles regrouped since the last import (a JSONL pair that was an article of its own)
        old_articles = Article.objects.filter(pk__in=taken.values("article_id"))
        summary.articles_replaced += old_articles.count()
        delete_replaced(old_articles, fresh[0])

    # articles, documents and pairs as plain values: COPY on PostgreSQL (model objects were
    # half of the writer's time for a JSONL of many small articles), bulk_create elsewhere
    source_max = column_max(Article, "source")
    article_values = [
        (corpus.pk, a.slug, a.title, a.source[:source_max], a.content_hash(), a.raw_hash, a.meta) for a in fresh
    ]
    if _fast():
        article_pks = _next_ids(Article, len(fresh))
        now = timezone.now()
        _copy(Article._meta.db_table,
              ("id", "corpus_id", "slug", "title", "source", "content_hash", "raw_hash", "meta", "created_at"),
              ((pk, *values[:-1], json.dumps(values[-1]), now) for pk, values in zip(article_pks, article_values, strict=True)))
    else:
        article_pks = [a.pk for a in Article.objects.bulk_create([
            Article(corpus_id=c, slug=slug, title=title, source=source, content_hash=content, raw_hash=raw, meta=meta)
            for c, slug, title, source, content, raw, meta in article_values
        ])]
    summary.articles_created += len(article_pks) - replaced_here
    doc_values: list[tuple[int, int, str, str]] = []  # article id, level, label, title
    for article_pk, article in zip(article_pks, fresh, strict=True):
        levels = [d.level for d in article.documents]
        if len(set(levels)) != len(levels):
            raise ImportFailed(article.source, None, f"article {article.slug!r} has two documents at one level")
        for doc in article.documents:
            doc_values.append((article_pk, doc.level, doc.level_label, doc.title))
    if _fast():
        doc_pks = _next_ids(Document, len(doc_values))
        _copy(Document._meta.db_table, ("id", "article_id", "level", "level_label", "title"),
              ((pk, *values) for pk, values in zip(doc_pks, doc_values, strict=True)))
    else:
        doc_pks = [d.pk for d in Document.objects.bulk_create(
            [Document(article_id=a, level=level, level_label=label, title=title) for a, level, label, title in doc_values],
            batch_size=BATCH,
        )]
    summary.documents += len(doc_pks)

    parsed_docs = [d for a in fresh for d in a.documents]
    n_paragraphs, n_sentences = write_text(doc_pks, parsed_docs)
    summary.paragraphs += n_paragraphs
    summary.sentences += n_sentences

    doc_pk = {(a, level): pk for (a, level, _, _), pk in zip(doc_values, doc_pks, strict=True)}
    pair_values = [
        (corpus.pk, article_pk, doc_pk[(article_pk, complex_level)], doc_pk[(article_pk, simple_level)], pair_id)
        for article_pk, article in zip(article_pks, fresh, strict=True)
        for complex_level, simple_level, pair_id in pairs_of[id(article)]
    ]
    if _fast():
        _copy(DocumentPair._meta.db_table, ("corpus_id", "article_id", "complex_id", "simple_id", "pair_id"), pair_values)
    else:
        DocumentPair.objects.bulk_create(
            [DocumentPair(corpus_id=c, article_id=a, complex_id=cx, simple_id=sx, pair_id=p) for c, a, cx, sx, p in pair_values],
            batch_size=BATCH,
        )
    summary.pairs += len(pair_values)


def write_alignments(
    corpus: Corpus, alignments: list[ParsedAlignment], options: ImportOptions, summary: ImportSummary
) -> None:
    parsed: list[tuple[ParsedAlignment, SentenceId, SentenceId]] = []
    for row in alignments:
        keys = []
        for value, side in ((row.simple_id, SIMPLE), (row.complex_id, COMPLEX)):
            try:
                key = SentenceId.parse(value)
            except ValueError:
                raise ImportFailed(row.source, row.line, f"bad sentence id {value!r} (expected <pair>-<level>-<par>-<sent>)") from None
            if key.side != side:
                which = "simple" if side == SIMPLE else "complex"
                raise ImportFailed(row.source, row.line, f"{which} id {value!r} should have level {side}")
            keys.append(key)
        if keys[0].pair_id != keys[1].pair_id:
            raise ImportFailed(row.source, row.line, f"ids {row.simple_id!r} and {row.complex_id!r} are from different pairs")
        if row.score is not None and not math.isfinite(row.score):
            raise ImportFailed(row.source, row.line, f"score {row.score!r} is not a finite number")
        problem = length_problem(row.source_label, column_max(ReferenceAlignment, "source_label"), "label")
        if problem:
            raise ImportFailed(row.source, row.line, problem)
        parsed.append((row, keys[0], keys[1]))

    pair_ids = {k.pair_id for _, k, _ in parsed}
    pairs = {p.pair_id: p for p in DocumentPair.objects.filter(corpus=corpus, pair_id__in=pair_ids)}
    for row, key, _ in parsed:
        if key.pair_id not in pairs:
            raise ImportFailed(row.source, row.line, f"unknown document pair {key.pair_id!r} in corpus {corpus.name!r}")
    doc_ids = {p.complex_id for p in pairs.values()} | {p.simple_id for p in pairs.values()}
    sentences: dict[tuple[int, int, int], int] = {
        (d, p, s): pk
        for pk, d, p, s in Sentence.objects.filter(document_id__in=doc_ids).values_list(
            "pk", "document_id", "paragraph_position", "position"
        )
    }

    wanted: dict[tuple[int, int], ReferenceAlignment] = {}
    for row, simple_key, complex_key in parsed:
        pair = pairs[simple_key.pair_id]
        ids = []
        for key, doc_id, value in ((simple_key, pair.simple_id, row.simple_id), (complex_key, pair.complex_id, row.complex_id)):
            pk = sentences.get((doc_id, *key.position))
            if pk is None:
                raise ImportFailed(row.source, row.line, f"unknown sentence id {value!r} (no such sentence in pair {pair.pair_id!r})")
            ids.append(pk)
        wanted[(ids[0], ids[1])] = ReferenceAlignment(
            pair=pair,
            simple_id=ids[0],
            complex_id=ids[1],
            label=row.label,
            score=row.score,
            role=options.role,
            source_label=row.source_label,
            source=Path(row.source).name[: column_max(ReferenceAlignment, "source")],
        )
    existing = {
        (ra.simple_id, ra.complex_id): ra
        for ra in ReferenceAlignment.objects.filter(role=options.role, pair__in=pairs.values())
    }
    to_create: list[ReferenceAlignment] = []
    to_update: list[ReferenceAlignment] = []
    for sentence_pks, new in wanted.items():
        old = existing.get(sentence_pks)
        if old is None:
            to_create.append(new)
        elif (old.label, old.score, old.source_label) != (new.label, new.score, new.source_label):
            old.label, old.score, old.source_label = new.label, new.score, new.source_label
            to_update.append(old)
        else:
            summary.alignments_unchanged += 1
    ReferenceAlignment.objects.bulk_create(to_create, batch_size=BATCH)
    ReferenceAlignment.objects.bulk_update(to_update, ["label", "score", "source_label"], batch_size=BATCH)
    summary.alignments_created += len(to_create)
    summary.alignments_updated += len(to_update)


class ImportWriter:
    """Writes one import batch by batch (call inside one transaction), then its ImportRecord."""

    def __init__(self, path: Path, options: ImportOptions, user: Any = None, source: str | None = None) -> None:
        check_options(path, options)
        if options.role not in ReferenceAlignment.Role.values:
            raise ImportFailed(path, None, f"unknown role {options.role!r} (gold or labels)")
        self.path = path
        self.options = options
        self.user = user
        self.corpus = get_or_create_corpus(path, options, adds_documents=options.format != "tsv")
        self.summary = ImportSummary(corpus=self.corpus.name, format=options.format, source=source or str(path))
        self.state = ImportState()
        self.records = 0

    def articles(self, batch: list[ParsedArticle | UnchangedArticle]) -> None:
        self.records += len(batch)
        write_articles(self.corpus, batch, self.options, self.summary, self.state)

    def alignments(self, batch: list[ParsedAlignment]) -> None:
        for row in batch:
            if row.label not in AlignmentLabel.values:
                raise ImportFailed(row.source, row.line, f"unknown label {row.label!r}")
        self.records += len(batch)
        write_alignments(self.corpus, batch, self.options, self.summary)

    def finish(self) -> ImportSummary:
        ImportRecord.objects.create(
            corpus=self.corpus, format=self.options.format, source=self.summary.source[: column_max(ImportRecord, "source")],
            created_by=self.user if self.user and self.user.is_authenticated else None, summary=self.summary.as_dict(),
        )
        return self.summary


def write_import(
    path: Path,
    options: ImportOptions,
    articles: list[ParsedArticle],
    alignments: list[ParsedAlignment],
    user: Any = None,
) -> ImportSummary:
    """Write whole lists at once (inside a transaction): the corpus builder and tests."""
    writer = ImportWriter(path, options, user)
    if articles:
        writer.articles(list(articles))
    if alignments:
        writer.alignments(alignments)
    return writer.finish()
