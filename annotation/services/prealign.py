"""Paragraph pre-alignment and candidate sentence pairs for a document pair.

Uses ``alignment_engine.api`` (``align_paragraphs``, ``candidate_pairs``, ``top_k_candidates``)
when it is importable, and a small lexical fallback (TF-IDF cosine of paragraphs, word Jaccard
and character 3-gram overlap of sentences) otherwise, so annotation works before the engine lands.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from alignment_engine.types import DocPair

_WORD = re.compile(r"\w+", re.UNICODE)

_engine_api: Any
try:  # the engine's public API (issue 3); optional until it lands
    from alignment_engine import api as _engine_api
except ImportError:  # pragma: no cover - depends on the engine's progress
    _engine_api = None


def engine_available() -> bool:
    return _engine_api is not None


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _c3g(text: str) -> list[str]:
    t = f" {text.lower()} "
    return [t[i : i + 3] for i in range(max(len(t) - 2, 0))]


def _tfidf_cosine(left: Sequence[list[str]], right: Sequence[list[str]]) -> list[list[float]]:
    """Cosine of TF-IDF vectors, IDF fitted on both sides; rows = left."""
    docs = [Counter(d) for d in (*left, *right)]
    df: Counter[str] = Counter()
    for d in docs:
        df.update(d.keys())
    n = len(docs) or 1
    vecs = []
    for d in docs:
        v = {t: c * (math.log((1 + n) / (1 + df[t])) + 1) for t, c in d.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        vecs.append({t: x / norm for t, x in v.items()})
    lv, rv = vecs[: len(left)], vecs[len(left) :]
    return [[sum(x * b.get(t, 0.0) for t, x in a.items()) for b in rv] for a in lv]


def _jaccard(left: Sequence[list[str]], right: Sequence[list[str]]) -> list[list[float]]:
    ls, rs = [set(x) for x in left], [set(x) for x in right]
    return [[len(a & b) / len(a | b) if a | b else 0.0 for b in rs] for a in ls]


def paragraph_similarity(pair: DocPair) -> list[list[float]]:
    """complex x simple matrix of paragraph similarities (TF-IDF cosine of words)."""
    return _tfidf_cosine([_words(" ".join(p)) for p in pair.complex], [_words(" ".join(p)) for p in pair.simple])


def align_paragraphs(pair: DocPair, algorithm: str = "news") -> list[tuple[int, int, float]]:
    """(complex_paragraph, simple_paragraph, score) links of the automatic paragraph alignment."""
    if _engine_api is not None:
        return [(int(c), int(s), float(score)) for c, s, score in _engine_api.align_paragraphs(pair, algorithm=algorithm)]
    sim = paragraph_similarity(pair)
    links: set[tuple[int, int]] = set()
    for j in range(len(pair.simple)):
        col = [(sim[i][j], i) for i in range(len(pair.complex))]
        if not col:
            continue
        best, i_best = max(col)
        if best >= 0.1:
            links.add((i_best, j))
        links.update((i, j) for score, i in col if score >= 0.5)
    return sorted((i, j, round(sim[i][j], 4)) for i, j in links)


def candidate_pairs(pair: DocPair, links: Sequence[tuple[int, int, float]]) -> list[tuple[str, str]]:
    """(simple_id, complex_id) of every sentence pair inside aligned paragraphs (Newsela strategy)."""
    if _engine_api is not None:
        return list(_engine_api.candidate_pairs(pair, list(links)))
    out: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for c, s, _score in links:
        for si in range(len(pair.simple[s])):
            for ci in range(len(pair.complex[c])):
                key = (f"{pair.pair_id}-0-{s}-{si}", f"{pair.pair_id}-1-{c}-{ci}")
                if key not in seen:
                    seen.add(key)
                    out.append(key)
    return out


def top_k_candidates(pair: DocPair, k: int = 3, measures: Sequence[str] = ("jaccard", "tfidf", "c3g")) -> list[tuple[str, str]]:
    """For each simple sentence the top-k complex sentences under each measure (Wikipedia strategy)."""
    if _engine_api is not None:
        return list(_engine_api.top_k_candidates(pair, k=k, measures=tuple(measures)))
    simple = [(f"{pair.pair_id}-0-{p}-{s}", t) for p, para in enumerate(pair.simple) for s, t in enumerate(para)]
    complex_ = [(f"{pair.pair_id}-1-{p}-{s}", t) for p, para in enumerate(pair.complex) for s, t in enumerate(para)]
    if not simple or not complex_:
        return []
    sw, cw = [_words(t) for _, t in simple], [_words(t) for _, t in complex_]
    matrices = {
        "jaccard": lambda: _jaccard(sw, cw),
        "tfidf": lambda: _tfidf_cosine(sw, cw),
        "c3g": lambda: _tfidf_cosine([_c3g(t) for _, t in simple], [_c3g(t) for _, t in complex_]),
    }
    out: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for name in measures:
        if name not in matrices:
            continue
        mat = matrices[name]()
        for r, (sid, _) in enumerate(simple):
            row = mat[r]
            best = sorted(range(len(complex_)), key=row.__getitem__, reverse=True)[:k]
            for c in best:
                key = (sid, complex_[c][0])
                if key not in seen:
                    seen.add(key)
                    out.append(key)
    return out
