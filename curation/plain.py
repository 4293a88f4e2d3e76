"""Document pairs from the database as the engine's plain ``DocPair``, with the id maps back."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from alignment_engine.ids import COMPLEX, SIMPLE, sentence_id
from alignment_engine.types import DocPair
from curation.models import DocumentPair, Paragraph, Sentence


@dataclass
class PlainPair:
    """A ``DocPair`` and the database keys behind its sentence ids and paragraph positions."""

    pk: int
    doc: DocPair
    article_id: int
    sentence_pk: dict[str, int] = field(default_factory=dict)  # sentence id (alignment_engine.ids) -> Sentence pk
    complex_paragraph_pk: list[int] = field(default_factory=list)  # paragraph position -> Paragraph pk
    simple_paragraph_pk: list[int] = field(default_factory=list)


def _document_sentences(document_ids: Iterable[int]) -> dict[int, list[tuple[int, int, int, str]]]:
    out: dict[int, list[tuple[int, int, int, str]]] = defaultdict(list)
    rows = (
        Sentence.objects.filter(document_id__in=list(document_ids))
        .order_by("document_id", "doc_position")
        .values_list("document_id", "pk", "paragraph_position", "position", "text")
    )
    for doc_id, pk, p, s, text in rows:
        out[doc_id].append((pk, p, s, text))
    return out


def _document_paragraphs(document_ids: Iterable[int]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    rows = Paragraph.objects.filter(document_id__in=list(document_ids)).order_by("document_id", "position")
    for doc_id, pk in rows.values_list("document_id", "pk"):
        out[doc_id].append(pk)
    return out


def load_plain_pairs(pair_pks: Iterable[int]) -> list[PlainPair]:
    """The pairs (in the order of ``pair_pks``; missing ones are skipped) with three queries in all."""
    wanted = list(pair_pks)
    pairs = {
        p.pk: p for p in DocumentPair.objects.filter(pk__in=wanted).select_related("corpus")
    }
    doc_ids = {d for p in pairs.values() for d in (p.complex_id, p.simple_id)}
    sentences = _document_sentences(doc_ids)
    paragraphs = _document_paragraphs(doc_ids)
    out: list[PlainPair] = []
    for pk in wanted:
        pair = pairs.get(pk)
        if pair is None:
            continue
        ids: dict[str, int] = {}
        sides: dict[int, list[list[str]]] = {}
        for side, doc_id in ((COMPLEX, pair.complex_id), (SIMPLE, pair.simple_id)):
            paras: list[list[str]] = [[] for _ in paragraphs.get(doc_id, [])]
            for s_pk, p, s, text in sentences.get(doc_id, []):
                while len(paras) <= p:
                    paras.append([])
                paras[p].append(text)
                ids[sentence_id(pair.pair_id, side, p, s)] = s_pk
            sides[side] = paras
        doc = DocPair(pair_id=pair.pair_id, complex=sides[COMPLEX], simple=sides[SIMPLE], language=pair.corpus.language)
        out.append(
            PlainPair(
                pk=pair.pk, doc=doc, article_id=pair.article_id, sentence_pk=ids,
                complex_paragraph_pk=paragraphs.get(pair.complex_id, []),
                simple_paragraph_pk=paragraphs.get(pair.simple_id, []),
            )
        )
    return out
