"""Writes parsed articles and alignments in bulk. Called inside one transaction."""

from __future__ import annotations

import re
from itertools import combinations
from pathlib import Path
from typing import Any

from django.db.models import ProtectedError, RestrictedError

from alignment_engine.ids import COMPLEX, SIMPLE, SentenceId, pair_id_problem
from alignment_engine.text import count_tokens
from curation.importers.types import ImportFailed, ImportOptions, ImportSummary, ParsedAlignment, ParsedArticle
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


def write_articles(
    corpus: Corpus, articles: list[ParsedArticle], options: ImportOptions, summary: ImportSummary
) -> None:
    seen: set[str] = set()
    for article in articles:
        if article.slug in seen:
            raise ImportFailed(article.source, None, f"article {article.slug!r} appears twice in this import")
        seen.add(article.slug)
    existing = {a.slug: a for a in Article.objects.filter(corpus=corpus, slug__in=list(seen))}
    fresh: list[ParsedArticle] = []
    for article in articles:
        old = existing.get(article.slug)
        if old is None:
            fresh.append(article)
        elif old.content_hash == article.content_hash():
            summary.articles_unchanged += 1
        elif options.replace:
            try:
                old.delete()
            except (ProtectedError, RestrictedError) as exc:  # human work (test questions, labels) refers to it
                raise ImportFailed(
                    article.source, None,
                    f"article {article.slug!r} cannot be replaced: {len(exc.args[1])} row(s) of human work "
                    "(labeling-job items, test questions or verified labels) refer to its sentence pairs",
                ) from exc
            summary.articles_replaced += 1
            fresh.append(article)
        else:
            raise ImportFailed(
                article.source,
                None,
                f"article {article.slug!r} already exists in corpus {corpus.name!r} with different text; "
                "import with --replace to overwrite it (its labels and alignments are deleted)",
            )
    if not fresh:
        return
    for article in fresh:
        for _, _, pair_id in derive_pairs(article, options.all_levels):
            problem = pair_id_problem(pair_id)
            if problem:
                raise ImportFailed(article.source, None, f"article {article.slug!r}: pair id {pair_id!r}: {problem}")
    taken_pair_ids = set(
        DocumentPair.objects.filter(corpus=corpus, pair_id__in=[p[2] for a in fresh for p in derive_pairs(a, options.all_levels)]).values_list("pair_id", flat=True)
    )
    if taken_pair_ids:
        raise ImportFailed(fresh[0].source, None, f"pair ids already used in this corpus: {sorted(taken_pair_ids)[:5]}")

    article_rows = Article.objects.bulk_create(
        [
            Article(
                corpus=corpus,
                slug=a.slug,
                title=a.title,
                source=a.source,
                content_hash=a.content_hash(),
                meta=a.meta,
            )
            for a in fresh
        ]
    )
    summary.articles_created += len(article_rows) - summary.articles_replaced
    doc_rows: list[Document] = []
    for row, article in zip(article_rows, fresh, strict=True):
        levels = [d.level for d in article.documents]
        if len(set(levels)) != len(levels):
            raise ImportFailed(article.source, None, f"article {article.slug!r} has two documents at one level")
        for doc in article.documents:
            doc_rows.append(Document(article=row, level=doc.level, level_label=doc.level_label, title=doc.title))
    doc_rows = Document.objects.bulk_create(doc_rows)
    summary.documents += len(doc_rows)

    parsed_docs = [d for a in fresh for d in a.documents]
    para_rows = [
        Paragraph(document=doc_row, position=p)
        for doc_row, doc in zip(doc_rows, parsed_docs, strict=True)
        for p in range(len(doc.paragraphs))
    ]
    para_rows = Paragraph.objects.bulk_create(para_rows, batch_size=BATCH)
    summary.paragraphs += len(para_rows)

    sentence_rows: list[Sentence] = []
    para_iter = iter(para_rows)
    for doc_row, doc in zip(doc_rows, parsed_docs, strict=True):
        n = 0
        for p, paragraph in enumerate(doc.paragraphs):
            para_row = next(para_iter)
            for s, text in enumerate(paragraph):
                source_id = doc.source_ids[p][s] if doc.source_ids else ""
                sentence_rows.append(
                    Sentence(
                        document=doc_row,
                        paragraph=para_row,
                        paragraph_position=p,
                        position=s,
                        doc_position=n,
                        text=text,
                        token_count=count_tokens(text),
                        source_id=source_id,
                    )
                )
                n += 1
    Sentence.objects.bulk_create(sentence_rows, batch_size=BATCH)
    summary.sentences += len(sentence_rows)

    docs_by_article: dict[int, dict[int, Document]] = {}
    for doc_row in doc_rows:
        docs_by_article.setdefault(doc_row.article_id, {})[doc_row.level] = doc_row
    pair_rows = []
    for row, article in zip(article_rows, fresh, strict=True):
        by_level = docs_by_article[row.pk]
        for complex_level, simple_level, pair_id in derive_pairs(article, options.all_levels):
            pair_rows.append(
                DocumentPair(
                    corpus=corpus,
                    article=row,
                    complex=by_level[complex_level],
                    simple=by_level[simple_level],
                    pair_id=pair_id,
                )
            )
    DocumentPair.objects.bulk_create(pair_rows)
    summary.pairs += len(pair_rows)


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
            source=Path(row.source).name,
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


def write_import(
    path: Path,
    options: ImportOptions,
    articles: list[ParsedArticle],
    alignments: list[ParsedAlignment],
    user: Any = None,
) -> ImportSummary:
    if alignments and options.role not in ReferenceAlignment.Role.values:
        raise ImportFailed(path, None, f"unknown role {options.role!r} (gold or labels)")
    for row in alignments:
        if row.label not in AlignmentLabel.values:
            raise ImportFailed(row.source, row.line, f"unknown label {row.label!r}")
    corpus = get_or_create_corpus(path, options, adds_documents=bool(articles))
    summary = ImportSummary(corpus=corpus.name, format=options.format, source=str(path))
    write_articles(corpus, articles, options, summary)
    if alignments:
        write_alignments(corpus, alignments, options, summary)
    ImportRecord.objects.create(
        corpus=corpus, format=options.format, source=str(path), created_by=user if user and user.is_authenticated else None,
        summary=summary.as_dict(),
    )
    return summary
