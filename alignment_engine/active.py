"""Active learning: which candidate sentence pairs people should label next (plain numpy, no Django).

A model's uncertainty about a cell (simple sentence i, complex sentence j) comes from the CRF's
exact posterior marginals (:func:`alignment_engine.crf.marginals`, kept per direction in
:class:`alignment_engine.crf_aligner.Decoded`) or from the learned decoder's cell probability.
This module turns those numbers into one score per candidate and picks a batch:

- ``margin``: ``1 - |2p - 1|``, 1 when P(aligned) is 0.5, 0 when it is 0 or 1;
- ``entropy``: binary entropy of P(aligned) in bits (same order as ``margin``, flatter near 0.5);
- ``directions``: ``|P_forward - P_reverse|``, disagreement of the simple->complex and the
  complex->simple CRF about the cell;
- ``versions``: ``|P_a - P_b|``, disagreement of two model versions;
- ``expected_f1``: documents whose expected Task 1 F1 under the model's own marginals is lowest
  come first (score ``1 - E[F1]`` of the document; within it, cells by ``margin``).

:func:`select` takes the best-scored candidates with diversity (at most ``per_document`` from one
document pair), :func:`random_select` a seeded uniform sample under the same cap, and
:func:`mixed_select` a batch that draws a share at random and takes the rest by score (a hedge
against a weak model choosing the whole batch; measured in docs/active-learning.md). Every chosen
item keeps its score and a one-line reason that the labeling-job page shows.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

STRATEGIES: tuple[str, ...] = ("margin", "entropy", "directions", "versions", "expected_f1")
STRATEGY_HELP: dict[str, str] = {
    "margin": "P(aligned) closest to 0.5 (exact CRF marginals)",
    "entropy": "highest entropy of P(aligned)",
    "directions": "the two CRF directions disagree most",
    "versions": "two model versions disagree most",
    "expected_f1": "document pairs with the lowest expected F1 first",
}


def margin(p: np.ndarray | float) -> np.ndarray:
    """``1 - |2p - 1|``: 1 at p = 0.5, 0 at p in {0, 1}."""
    q = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    return 1.0 - np.abs(2.0 * q - 1.0)  # type: ignore[no-any-return]


def entropy(p: np.ndarray | float) -> np.ndarray:
    """Binary entropy of ``p`` in bits (0 at 0 and 1, 1 at 0.5)."""
    q = np.clip(np.asarray(p, dtype=np.float64), 1e-12, 1.0 - 1e-12)
    out = -(q * np.log2(q) + (1.0 - q) * np.log2(1.0 - q))
    return np.where(out < 1e-9, 0.0, out)  # type: ignore[no-any-return]


def disagreement(p: np.ndarray | float, q: np.ndarray | float) -> np.ndarray:
    """``|p - q|`` of two probabilities of the same cells."""
    return np.abs(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64))  # type: ignore[no-any-return]


def expected_f1(prob: np.ndarray, threshold: float = 0.5) -> float:
    """Expected Task 1 F1 of one document if the model's marginals were the truth.

    Predicted set ``S = {p >= threshold}``; E[TP] = sum of p over S, E[#gold] = sum of p over all
    cells; F1 ~ 2 E[TP] / (|S| + E[#gold]) (the ratio of expectations). A document with nothing
    predicted and nothing expected is certain: 1.0.
    """
    p = np.clip(np.asarray(prob, dtype=np.float64), 0.0, 1.0)
    chosen = p >= threshold
    denominator = float(chosen.sum()) + float(p.sum())
    if denominator <= 1e-12:
        return 1.0
    return 2.0 * float(p[chosen].sum()) / denominator


@dataclass(frozen=True)
class Candidate:
    """One candidate cell of one document: ``key`` identifies it for the caller (e.g. a database pk)."""

    key: Hashable
    document: Hashable
    row: int
    col: int


@dataclass(frozen=True)
class Scored:
    key: Hashable
    document: Hashable
    score: float
    reason: str


@dataclass
class CellProbabilities:
    """A model's view of one document: (m, n) arrays, rows simple sentences, columns complex ones."""

    prob: np.ndarray  # P(aligned) the model decides with (learned decoder, else max of the directions)
    forward: np.ndarray  # simple->complex CRF marginals
    reverse: np.ndarray  # complex->simple CRF marginals


def score_candidates(
    strategy: str,
    candidates: Sequence[Candidate],
    model: Mapping[Any, CellProbabilities],
    other: Mapping[Any, CellProbabilities] | None = None,
) -> list[Scored]:
    """Score every candidate under ``strategy`` (see the module docstring); ``model`` maps a
    document to its probabilities, ``other`` (strategy ``versions`` only) the second version's.

    A candidate of a document the model has no probabilities for gets score 0 and says so.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if strategy == "versions" and other is None:
        raise ValueError("strategy 'versions' needs a second model version")
    doc_f1: dict[Hashable, float] = {}
    out: list[Scored] = []
    for c in candidates:
        cp = model.get(c.document)
        if cp is None or c.row >= cp.prob.shape[0] or c.col >= cp.prob.shape[1]:
            out.append(Scored(c.key, c.document, 0.0, "no model score for this document pair"))
            continue
        p = float(cp.prob[c.row, c.col])
        if strategy == "margin":
            score, reason = float(margin(p)), f"P(aligned) {p:.3f}"
        elif strategy == "entropy":
            score = float(entropy(p))
            reason = f"P(aligned) {p:.3f}, entropy {score:.3f} bits"
        elif strategy == "directions":
            pf, pr = float(cp.forward[c.row, c.col]), float(cp.reverse[c.row, c.col])
            score, reason = abs(pf - pr), f"forward CRF {pf:.3f} vs reverse CRF {pr:.3f}"
        elif strategy == "versions":
            op = (other or {}).get(c.document)
            if op is None or c.row >= op.prob.shape[0] or c.col >= op.prob.shape[1]:
                out.append(Scored(c.key, c.document, 0.0, "no score of the second version"))
                continue
            q = float(op.prob[c.row, c.col])
            score, reason = abs(p - q), f"version A {p:.3f} vs version B {q:.3f}"
        else:  # expected_f1: the document's shortfall, ties inside it broken by the cell's margin
            if c.document not in doc_f1:
                doc_f1[c.document] = expected_f1(cp.prob)
            f1 = doc_f1[c.document]
            score = (1.0 - f1) + 1e-3 * float(margin(p))
            reason = f"document expected F1 {f1:.3f}; P(aligned) {p:.3f}"
        out.append(Scored(c.key, c.document, round(float(score), 6), reason))
    return out


def select(scored: Iterable[Scored], budget: int, per_document: int | None = None,
           taken: Counter[Hashable] | None = None) -> list[Scored]:
    """The ``budget`` highest scores, at most ``per_document`` from one document (None: no cap;
    ``taken`` counts items already chosen per document, and is updated).

    Ties keep input order (stable). Fewer than ``budget`` come back when the cap or the supply runs out.
    """
    if budget <= 0:
        return []
    items = list(scored)
    order = sorted(range(len(items)), key=lambda i: -items[i].score)
    taken = Counter() if taken is None else taken
    out: list[Scored] = []
    for i in order:
        item = items[i]
        if per_document is not None and taken[item.document] >= per_document:
            continue
        taken[item.document] += 1
        out.append(item)
        if len(out) >= budget:
            break
    return out


def random_select(candidates: Sequence[Any], budget: int, seed: int, document_of: Any = None,
                  per_document: int | None = None) -> list[Any]:
    """A seeded uniform sample of ``budget`` candidates (``document_of(c)`` and ``per_document`` cap it)."""
    order = list(range(len(candidates)))
    random.Random(seed).shuffle(order)
    taken: Counter[Hashable] = Counter()
    out: list[Any] = []
    for i in order:
        if len(out) >= budget:
            break
        c = candidates[i]
        if per_document is not None and document_of is not None:
            doc = document_of(c)
            if taken[doc] >= per_document:
                continue
            taken[doc] += 1
        out.append(c)
    return out


def mixed_select(scored: Sequence[Scored], budget: int, random_share: float, seed: int,
                 per_document: int | None = None) -> list[Scored]:
    """A batch of ``budget``: ``round(random_share * budget)`` drawn uniformly (seeded), the rest the
    highest scores, under one cap of ``per_document`` per document for both. The random ones say so
    in their reason. ``random_share`` 0 is :func:`select`; 1 is a random sample of the scored items."""
    if not 0.0 <= random_share <= 1.0:
        raise ValueError(f"random_share must be between 0 and 1, got {random_share}")
    n_random = int(round(random_share * max(budget, 0)))
    taken: Counter[Hashable] = Counter()
    drawn = random_select(scored, n_random, seed, document_of=lambda s: s.document, per_document=per_document)
    for item in drawn:
        taken[item.document] += 1
    keys = {item.key for item in drawn}
    ranked = select([s for s in scored if s.key not in keys], budget - len(drawn), per_document, taken)
    randoms = [Scored(s.key, s.document, s.score, f"random share (seed {seed}); {s.reason}") for s in drawn]
    return ranked + randoms


def default_cap(budget: int, documents: int, spread: float = 3.0) -> int:
    """A per-document cap that lets ``budget`` items spread over ``documents`` documents:
    ``ceil(spread * budget / documents)`` (at least 1)."""
    return max(1, math.ceil(spread * budget / max(documents, 1)))


def model_probabilities(aligner: Any, pairs: Sequence[Any]) -> list[CellProbabilities]:
    """Per document pair the cell probabilities of a trained CRF aligner (``api.load_aligner("crf", dir)``):
    the learned decoder's P(aligned) when the model has one, else the larger of the two directions'
    exact marginals. Raises ValueError for an aligner without marginals (training-free or baseline)."""
    if not hasattr(aligner, "member_decodings"):
        raise ValueError(f"the {getattr(aligner, 'name', 'given')} aligner has no posterior marginals; "
                         "uncertainty needs a trained CRF model")
    out: list[CellProbabilities] = []
    for part in aligner.chunks(pairs):  # the aligner's own grouping (bounded documents and cells)
        docs = aligner.prepare(part)
        decodings = aligner.member_decodings(docs)  # a seed ensemble's probabilities are its members' average
        decs = decodings[0]
        probs = [d.score if p is None else p for d, p in
                 zip(decs, aligner.cell_probabilities(docs, decodings), strict=True)]
        for dec, prob in zip(decs, probs, strict=True):
            out.append(CellProbabilities(np.asarray(prob, dtype=np.float64), dec.forward_marginals.astype(np.float64),
                                         dec.reverse_marginals.astype(np.float64)))
    return out
