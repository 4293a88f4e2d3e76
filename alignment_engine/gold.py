"""Gold alignments in the shapes the engine needs: per-document pair sets, matrices, paragraph links.

The one owner of reading gold rows (``Alignment`` objects from a gold TSV or from verified labels)
into positions. Every id is read with :class:`alignment_engine.ids.SentenceId`.

- :func:`gold_by_pair`: the positive gold pairs of each document, and the strict subset (Task 2);
- :func:`gold_cells`: the matrix positions of gold rows of one document;
- :func:`gold_matrix`: the (m, n) 0/1 matrix of one document (rows simple, columns complex);
- :func:`known_matrix`: the (m, n) matrix of a document whose labels are partial (1 labelled
  positive, 0 unlabelled, -1 not aligned), what CRF training marginalises over;
- :func:`paragraph_links`: the paragraph pairs that hold a gold sentence pair, for one document
  (``(complex_paragraph, simple_paragraph, 1.0)``, the link format of :mod:`alignment_engine.paragraphs`);
- :func:`gold_paragraph_links`: the same for many documents, as ``(pair_id, complex_paragraph,
  simple_paragraph)`` triples (what paragraph precision / recall are scored on).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from alignment_engine.ids import SentenceId
from alignment_engine.types import Alignment, DocPair

#: Labels that count for Task 2 (a pair fully aligned).
STRICT_LABELS = frozenset({"aligned", "identical"})

PairSet = set[tuple[str, str]]  # (simple_id, complex_id)


def gold_by_pair(gold: Iterable[Alignment]) -> tuple[dict[str, PairSet], dict[str, PairSet]]:
    """Positive gold pairs per document, and the subset labelled aligned/identical (Task 2)."""
    pos: dict[str, PairSet] = defaultdict(set)
    strict: dict[str, PairSet] = defaultdict(set)
    for a in gold:
        if a.is_positive:
            pos[a.pair_id].add((a.simple_id, a.complex_id))
            if a.label in STRICT_LABELS:
                strict[a.pair_id].add((a.simple_id, a.complex_id))
    return pos, strict


def gold_cells(pair: DocPair, gold: Iterable[Alignment]) -> list[tuple[int, int, Alignment]]:
    """``(row, column, gold row)`` of every row of ``gold`` whose ids are sentences of ``pair``, in input order."""
    s_index = {sid: i for i, sid in enumerate(pair.simple_ids())}
    c_index = {cid: j for j, cid in enumerate(pair.complex_ids())}
    out = []
    for r in gold:
        i, j = s_index.get(r.simple_id), c_index.get(r.complex_id)
        if i is not None and j is not None:
            out.append((i, j, r))
    return out


def gold_matrix(pair: DocPair, gold: Iterable[Alignment] | Iterable[tuple[str, str]], strict: bool = False
                ) -> np.ndarray:
    """(m, n) int8 0/1 matrix (simple x complex, document order) of the gold positives of one pair.

    ``gold`` is gold rows (``strict=True`` keeps aligned/identical only) or ``(simple_id, complex_id)``
    pairs; rows of other documents and unknown ids are ignored.
    """
    rows = [item if isinstance(item, Alignment) else Alignment("aligned", item[0], item[1]) for item in gold]
    keep = [r for r in rows if (r.label in STRICT_LABELS if strict else r.is_positive)]
    out = np.zeros((len(pair.simple_sentences()), len(pair.complex_sentences())), dtype=np.int8)
    for i, j, _ in gold_cells(pair, keep):
        out[i, j] = 1
    return out


def known_matrix(pair: DocPair, gold: Iterable[Alignment] | Iterable[tuple[str, str]],
                 unlabelled: Iterable[tuple[str, str]]) -> np.ndarray:
    """(m, n) int8 matrix of one document with partial labels: 1 a gold positive, 0 an unlabelled cell
    (``(simple_id, complex_id)`` pairs, e.g. candidates nobody has labelled), -1 every other cell (a
    labelled negative, or a cell outside the candidates: not aligned). A positive stays 1 even when it
    is also listed as unlabelled; unknown ids are ignored."""
    out = gold_matrix(pair, gold).astype(np.int8)
    out[out == 0] = -1
    open_cells = np.zeros(out.shape, dtype=bool)
    for i, j, _ in gold_cells(pair, [Alignment("aligned", s, c) for s, c in unlabelled]):
        open_cells[i, j] = True
    out[open_cells & (out == -1)] = 0
    return out


def known_paragraphs(pair: DocPair, known: np.ndarray) -> np.ndarray:
    """(simple paragraphs, complex paragraphs) bool: whether a paragraph pair's label is known under the
    partial labels of ``known`` (:func:`known_matrix`): it holds a labelled positive (linked), or none of
    its sentence cells is unlabelled (not linked). A paragraph pair with an unlabelled cell and no
    positive is unknown, and is neither a positive nor a negative example of a paragraph link."""
    sp = np.asarray(pair.simple_paragraph_of(), dtype=np.int64)
    cp = np.asarray(pair.complex_paragraph_of(), dtype=np.int64)
    shape = (len(pair.simple), len(pair.complex))
    linked, unlabelled = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
    i, j = np.nonzero(known == 1)
    linked[sp[i], cp[j]] = True
    i, j = np.nonzero(known == 0)
    unlabelled[sp[i], cp[j]] = True
    return linked | ~unlabelled


def paragraph_links(gold_pairs: Iterable[tuple[str, str]]) -> list[tuple[int, int, float]]:
    """Paragraph links implied by one document's gold sentence pairs: sorted (complex paragraph, simple paragraph, 1.0)."""
    out = set()
    for s_id, c_id in gold_pairs:
        out.add((SentenceId.parse(c_id).paragraph, SentenceId.parse(s_id).paragraph))
    return [(c, s, 1.0) for c, s in sorted(out)]


def gold_paragraph_links(pairs: Sequence[DocPair], gold: Iterable[Alignment]) -> set[tuple[str, int, int]]:
    """``(pair_id, complex_paragraph, simple_paragraph)`` for every paragraph pair of ``pairs`` holding a gold positive."""
    wanted = {p.pair_id for p in pairs}
    out: set[tuple[str, int, int]] = set()
    for r in gold:
        if not r.is_positive:
            continue
        s, c = SentenceId.parse(r.simple_id), SentenceId.parse(r.complex_id)
        if s.pair_id in wanted:
            out.add((s.pair_id, c.paragraph, s.paragraph))
    return out
