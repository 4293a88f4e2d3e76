"""Alignment rows from a decision matrix: the one builder every aligner uses.

An aligner decides on an (m, n) boolean matrix of one document pair (rows = simple sentences,
columns = complex sentences, document order) and has a score per cell; :func:`rows_from_matrix`
turns that into :class:`~alignment_engine.types.Alignment` rows in row-major order, with the
sentence ids and texts of the pair, label ``partialAligned`` where ``partial`` is set and
``aligned`` elsewhere, and the score rounded to :data:`SCORE_DIGITS` decimals. A blank sentence (empty or
whitespace only: a JSONL input may hold one, and its id keeps the positions of the others) has nothing to align,
so a cell with one is never a row, whatever the aligner decided (the CRF and the ``lr`` baseline, which score a
cell from its neighbours and learned weights as well as its texts, did align one).
"""

from __future__ import annotations

import numpy as np

from alignment_engine.types import Alignment, DocPair, Label

#: Decimals of the score column of every aligner's rows.
SCORE_DIGITS = 6


def rows_from_matrix(pair: DocPair, chosen: np.ndarray, scores: np.ndarray,
                     partial: np.ndarray | None = None) -> list[Alignment]:
    """One ``Alignment`` per True cell of ``chosen`` (row-major); ``partial`` marks partialAligned cells."""
    if chosen.size == 0:
        return []
    simple, complex_ = pair.simple_sentences(), pair.complex_sentences()
    if chosen.shape != (len(simple), len(complex_)) or scores.shape != chosen.shape:
        raise ValueError(f"pair {pair.pair_id}: matrix shape {chosen.shape} / scores {scores.shape} do not match "
                         f"{len(simple)} simple x {len(complex_)} complex sentences")
    sids, cids = pair.simple_ids(), pair.complex_ids()
    rows = []
    for i, j in zip(*np.nonzero(chosen), strict=True):
        if not simple[i].strip() or not complex_[j].strip():
            continue
        label = Label.PARTIAL if partial is not None and partial[i, j] else Label.ALIGNED
        rows.append(Alignment(label.value, sids[i], cids[j], simple[i], complex_[j],
                              round(float(scores[i, j]), SCORE_DIGITS)))
    return rows
