"""Pair features of the neural CRF aligner: lexical channels, encoder channels, transition features.

Lexical channels come from :func:`alignment_engine.similarity.feature_stack` (word Jaccard,
word TF-IDF, char 3-gram TF-IDF, containment, length ratios, position difference, row/column
ranks and gaps) plus the C3G similarity of the two diagonal neighbour cells, which lets the
emission see whether the neighbours also match (runs of aligned sentences).

The encoder adds two channels: the cross-encoder's logit of P(aligned or partial) and a flag
saying whether the cell was scored at all (only candidate cells are sent to the encoder; see
:func:`candidate_mask`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from alignment_engine.crf import DTYPE
from alignment_engine.semantic import SEMANTIC_FEATURES, SentenceEncoder, document_semantic_features
from alignment_engine.similarity import feature_names, feature_stack
from alignment_engine.span_emission import SPAN_EMISSION_FEATURES, SPAN_EMISSION_WIDTHS, span_emission_features

LEX_MEASURES: tuple[str, ...] = ("c3g", "jaccard", "tfidf")
NEIGHBOUR_FEATURES = ("c3g_prev_diag", "c3g_next_diag")
#: C3G of the cell's neighbours in its column (other simple sentences: splits) and row (merges).
CONTEXT_FEATURES = ("c3g_prev_simple", "c3g_next_simple", "c3g_prev_complex", "c3g_next_complex")
ENCODER_FEATURES = ("enc_logit", "enc_scored")
ENC_LOGIT_CLIP = 8.0
TRANSITION_FEATURES = (
    "abs_jump", "log_abs_jump", "stay", "next", "backward", "skip", "rel_jump",
    "prev_null", "cur_null", "both_null",
)


def lexical_feature_names(context: bool = False, span: bool = False, semantic: bool = False) -> list[str]:
    return (feature_names(LEX_MEASURES) + list(NEIGHBOUR_FEATURES) + (list(CONTEXT_FEATURES) if context else [])
            + (list(SPAN_EMISSION_FEATURES) if span else []) + (list(SEMANTIC_FEATURES) if semantic else []))


def lexical_features(simple: list[str], complex: list[str], context: bool = False, span: bool = False,
                     span_widths: tuple[int, int] = SPAN_EMISSION_WIDTHS, semantic: bool = False,
                     semantic_encoder: SentenceEncoder | None = None) -> np.ndarray:
    """(m, n, F_lex) float32 lexical features of every simple x complex sentence pair.

    ``context`` adds :data:`CONTEXT_FEATURES`: a simple sentence that is one part of a split has a
    neighbour in its column that matches the same complex sentence. ``span`` adds the block-level
    channels of :func:`alignment_engine.span_emission.span_emission_features` (runs of at most
    ``span_widths`` simple / complex sentences). ``semantic`` adds the sentence encoder's channels of
    :func:`alignment_engine.semantic.semantic_features` (runs of the same widths; embedded by ``semantic_encoder``,
    by default the process's float32 one), last.
    """
    base = feature_stack(simple, complex, LEX_MEASURES)
    m, n = len(simple), len(complex)
    width = base.shape[-1] + len(NEIGHBOUR_FEATURES) + (len(CONTEXT_FEATURES) if context else 0)
    out = np.zeros((m, n, width), dtype=np.float32)
    out[:, :, : base.shape[-1]] = base
    if m and n:
        c3g = base[:, :, 0]
        prev = np.zeros_like(c3g)
        prev[1:, 1:] = c3g[:-1, :-1]
        nxt = np.zeros_like(c3g)
        nxt[:-1, :-1] = c3g[1:, 1:]
        out[:, :, base.shape[-1]] = prev
        out[:, :, base.shape[-1] + 1] = nxt
        if context:
            k = base.shape[-1] + len(NEIGHBOUR_FEATURES)
            out[1:, :, k] = c3g[:-1, :]
            out[:-1, :, k + 1] = c3g[1:, :]
            out[:, 1:, k + 2] = c3g[:, :-1]
            out[:, :-1, k + 3] = c3g[:, 1:]
    if span:
        out = np.concatenate([out, span_emission_features(simple, complex, span_widths)], axis=-1)
    if semantic:
        out = np.concatenate([out, document_semantic_features(simple, complex, span_widths, semantic_encoder)], axis=-1)
    return out


def candidate_mask(sim: np.ndarray, k: int, allowed: np.ndarray | None = None) -> np.ndarray:
    """Cells worth sending to the encoder: the top-``k`` complex sentences of every simple
    sentence and the top-``k`` simple sentences of every complex sentence under ``sim``
    (restricted to ``allowed`` cells, e.g. those inside aligned paragraphs)."""
    m, n = sim.shape
    out = np.zeros((m, n), dtype=bool)
    if m == 0 or n == 0 or k <= 0:
        return out
    s = sim if allowed is None else np.where(allowed, sim, -np.inf)
    kk = min(k, n)
    rows = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
    np.put_along_axis(out, rows, True, axis=1)
    kk = min(k, m)
    cols = np.argpartition(-s, kk - 1, axis=0)[:kk, :]
    np.put_along_axis(out, cols, True, axis=0)
    if allowed is not None:
        out &= allowed
    return out


def emission_features(doc: Any, emission: str) -> np.ndarray:
    """(m, n, F) raw (unstandardised) features of the configured emission of a document
    (:class:`~alignment_engine.crf_aligner.DocData`: its ``lex``, ``enc_prob``, ``enc_scored``)."""
    enc = encoder_channels(doc.enc_prob, doc.enc_scored)
    if emission == "encoder":
        return enc
    if emission == "lexical":
        return np.asarray(doc.lex)
    return np.concatenate([doc.lex, enc], axis=-1)


def encoder_channels(prob: np.ndarray, scored: np.ndarray) -> np.ndarray:
    """(m, n, 2): clipped logit of the encoder probability (0 where unscored) and the scored flag."""
    p = np.clip(prob.astype(np.float64), 1e-6, 1 - 1e-6)
    logit = np.clip(np.log(p) - np.log1p(-p), -ENC_LOGIT_CLIP, ENC_LOGIT_CLIP)
    return np.stack([np.where(scored, logit, 0.0), scored.astype(np.float64)], axis=-1).astype(np.float32)


def _transition_rows(j: torch.Tensor, k: torch.Tensor, n_labels: int) -> torch.Tensor:
    """(..., len(TRANSITION_FEATURES)) features of moving from label ``j`` to label ``k`` (long tensors of one
    shape, labels 0..n_labels - 1): :func:`transition_features` for any set of pairs."""
    d = k.to(DTYPE) - j.to(DTYPE)  # k - j
    real_j, real_k = j > 0, k > 0
    both_real = (real_j & real_k).to(DTYPE)
    ad = d.abs()
    n = max(n_labels - 1, 1)
    return torch.stack(
        [
            ad * both_real,
            torch.log1p(ad) * both_real,
            (d == 0).to(DTYPE) * both_real,
            (d == 1).to(DTYPE) * both_real,
            (d < 0).to(DTYPE) * both_real,
            (d > 1).to(DTYPE) * both_real,
            ad / n * both_real,
            (~real_j & real_k).to(DTYPE),
            (real_j & ~real_k).to(DTYPE),
            (~real_j & ~real_k).to(DTYPE),
        ],
        dim=-1,
    )


def transition_features(n_labels: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """(L, L, len(TRANSITION_FEATURES)) features of moving from label ``j`` to label ``k``.

    Labels 0..n (0 = not aligned).  Between two real labels: |d|, log(1+|d|), d == 0, d == 1,
    d < 0, d > 1 and |d| / n with d = k - j (the paper's g1, in several shapes so the network
    can learn a non-linear jump cost); then the paper's three null indicators g2..g4:
    previous null, current null, both null. In the CRFs' float type (:data:`alignment_engine.crf.DTYPE`).
    """
    idx = torch.arange(n_labels, device=device)
    return _transition_rows(idx[:, None].expand(n_labels, n_labels), idx[None, :].expand(n_labels, n_labels), n_labels)


def transition_table(n_labels: int, device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """The distinct rows of :func:`transition_features` and the (L, L) long index of every (j, k)'s row: a
    transition network run on the 2 L rows and indexed gives its (L, L) scores (the features depend only on the
    jump k - j between two real labels, or on which of the two is null), where the full features have L^2 rows.
    Rows: the jumps -(L - 2) .. L - 2, then null -> real, real -> null, null -> null."""
    real = n_labels - 1
    if real <= 0:
        return _transition_rows(torch.zeros(1, dtype=torch.long, device=device),
                                torch.zeros(1, dtype=torch.long, device=device), n_labels), \
            torch.zeros((n_labels, n_labels), dtype=torch.long, device=device)
    jumps = torch.arange(-(real - 1), real, device=device)
    one = torch.ones_like(jumps)
    j = torch.cat([torch.where(jumps < 0, 1 - jumps, one), torch.tensor([0, 1, 0], device=device)])
    k = torch.cat([torch.where(jumps < 0, one, 1 + jumps), torch.tensor([1, 0, 0], device=device)])
    idx = torch.arange(n_labels, device=device)
    index = idx[None, :] - idx[:, None] + (real - 1)  # real -> real: the jump's row
    index[0, 1:] = 2 * real - 1
    index[1:, 0] = 2 * real
    index[0, 0] = 2 * real + 1
    return _transition_rows(j, k, n_labels), index


def start_features(n_labels: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """(L, 3) features of the first label: is-null, relative position, log position (in the CRFs' ``DTYPE``)."""
    idx = torch.arange(n_labels, device=device, dtype=DTYPE)
    n = max(n_labels - 1, 1)
    return torch.stack([(idx == 0).to(DTYPE), idx / n, torch.log1p(idx)], dim=-1)

