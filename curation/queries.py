"""Read-side helpers for pages and API: documents as paragraphs of sentences."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import connections
from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from alignment_engine.ids import sentence_id
from curation.curate.splits import SharedText, assign_splits, count_shared_across_splits, shared_across_splits
from curation.models import Article, Corpus, Document, DocumentPair, Sentence


@dataclass
class SentenceView:
    pk: int
    sid: str
    text: str


def _count_per_corpus(qs: QuerySet[Any]) -> Coalesce:
    """``SELECT COUNT(*) ... WHERE corpus_id = corpus.id`` as a correlated subquery (an index scan)."""
    counted = qs.filter(corpus=OuterRef("pk")).order_by().values("corpus").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def corpora_with_counts() -> QuerySet[Corpus]:
    """Corpora with their article and document-pair counts: one query, a separate count per
    table (joining articles with pairs would multiply their rows: 35 M at Newsela's size)."""
    return Corpus.objects.annotate(
        n_articles=_count_per_corpus(Article.objects.all()), n_pairs=_count_per_corpus(DocumentPair.objects.all())
    ).order_by("name")


def articles_of(corpus: Corpus, search: str = "") -> QuerySet[Article]:
    qs = corpus.articles.annotate(n_levels=Count("documents")).order_by("slug")
    if search:
        qs = qs.filter(Q(title__icontains=search) | Q(slug__icontains=search))
    return qs


def document_paragraphs(document: Document, pair_id: str | None = None, side: int | None = None) -> list[list[SentenceView]]:
    """The document as paragraphs of sentences, each with its formats.md id when a pair is given."""
    paragraphs: list[list[SentenceView]] = []
    rows = Sentence.objects.filter(document=document).order_by("doc_position").values_list(
        "pk", "paragraph_position", "position", "text"
    )
    for pk, p, s, text in rows:
        while len(paragraphs) <= p:
            paragraphs.append([])
        sid = sentence_id(pair_id, side, p, s) if pair_id is not None and side is not None else f"{p}-{s}"
        paragraphs[p].append(SentenceView(pk, sid, text))
    return paragraphs


def pair_as_plain(pair: DocumentPair) -> dict[str, object]:
    """The pair in the document-pair JSONL shape (plain data for the engine and exports)."""
    return {
        "pair_id": pair.pair_id,
        "language": pair.corpus.language,
        "complex": [[s.text for s in para] for para in document_paragraphs(pair.complex)],
        "simple": [[s.text for s in para] for para in document_paragraphs(pair.simple)],
    }


def article_splits(corpus_id: int, ratios: Mapping[str, float], seed: int) -> dict[str, str]:
    """Slug -> split for every article of the corpus: the one split of a corpus that its exports,
    ``check_splits`` and retraining share (``assign_splits`` over all its article slugs)."""
    return assign_splits(Article.objects.filter(corpus_id=corpus_id).values_list("slug", flat=True), ratios, seed)


def article_sentence_texts(corpus: Corpus) -> Iterator[tuple[str, str]]:
    """(article slug, sentence text) of every sentence of the corpus, streamed (split-leak checks)."""
    rows = Sentence.objects.filter(document__article__corpus=corpus).values_list("document__article__slug", "text")
    yield from rows.iterator(chunk_size=20_000)


def split_leaks(corpus: Corpus, split_of: Mapping[str, str], min_tokens: int = 1) -> list[SharedText]:
    """Sentence texts of ``corpus`` found in more than one split of ``split_of`` (slug -> split)."""
    return shared_across_splits(article_sentence_texts(corpus), split_of, min_tokens)


def article_sentence_texts_batched(corpus: Corpus, sentences_per_query: int = 20_000) -> Iterator[tuple[str, str]]:
    """:func:`article_sentence_texts` (the same pairs, in no particular order) read by one plain query
    per batch of articles, each fetched whole (about ``sentences_per_query`` rows): the export
    card reads every sentence of the corpus, and Django's chunked iterator cost several
    microseconds a row (a million rows at Newsela's size)."""
    articles = list(Article.objects.filter(corpus=corpus).order_by("pk").values_list("pk", flat=True))
    if not articles:
        return
    total = Sentence.objects.filter(document__article__corpus=corpus).count()
    step = max(1, sentences_per_query * len(articles) // max(total, 1))
    for start in range(0, len(articles), step):
        qs = Sentence.objects.filter(document__article_id__in=articles[start : start + step]).values_list(
            "document__article__slug", "text"
        )
        sql, params = qs.query.sql_with_params()
        with connections[qs.db].cursor() as cursor:
            cursor.execute(sql, params)
            yield from cursor.fetchall()


def count_split_leaks(corpus: Corpus, split_of: Mapping[str, str], limit: int) -> tuple[int, list[SharedText]]:
    """How many sentence texts of ``corpus`` are in more than one split, and the first ``limit``
    of them (as :func:`split_leaks`), in memory bounded by the distinct texts (export cards)."""
    def equal_to(wanted: frozenset[str]) -> Iterator[tuple[str, str]]:
        rows = Sentence.objects.filter(document__article__corpus=corpus, text__in=sorted(wanted))
        yield from rows.values_list("document__article__slug", "text")

    return count_shared_across_splits(lambda: article_sentence_texts_batched(corpus), split_of, limit, texts_equal_to=equal_to)
