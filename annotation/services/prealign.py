"""Paragraph pre-alignment and candidate sentence pairs for a document pair, from the engine
(``alignment_engine.api``): Algorithms 1-4, every sentence pair inside aligned paragraphs
(the paper's Newsela strategy), or the top complex sentences per simple sentence under several
similarity measures (its Wikipedia strategy)."""

from __future__ import annotations

from collections.abc import Sequence

from alignment_engine import api
from alignment_engine import paragraphs as engine_paragraphs
from alignment_engine.types import DocPair


def paragraph_similarity(pair: DocPair) -> list[list[float]]:
    """complex x simple matrix of Algorithm 1 paragraph similarities (average of per-sentence maxima)."""
    return engine_paragraphs.paragraph_similarity(pair)[0].T.tolist()  # type: ignore[no-any-return]


def align_paragraphs(pair: DocPair, algorithm: str = "news") -> list[tuple[int, int, float]]:
    """(complex_paragraph, simple_paragraph, score) links of the automatic paragraph alignment."""
    return [(int(c), int(s), float(score)) for c, s, score in api.align_paragraphs(pair, algorithm=algorithm)]


def candidate_pairs(pair: DocPair, links: Sequence[tuple[int, int, float]]) -> list[tuple[str, str]]:
    """(simple_id, complex_id) of every sentence pair inside aligned paragraphs (Newsela strategy)."""
    return list(api.candidate_pairs(pair, list(links)))


def top_k_candidates(pair: DocPair, k: int = 3, measures: Sequence[str] = ("jaccard", "tfidf", "c3g")) -> list[tuple[str, str]]:
    """For each simple sentence the top-k complex sentences under each measure (Wikipedia strategy)."""
    return list(api.top_k_candidates(pair, k=k, measures=tuple(measures)))
