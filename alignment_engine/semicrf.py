"""A semi-Markov CRF over span labels, trained by exact maximum likelihood (torch).

In the simple->complex direction each simple sentence takes null or a contiguous *run* of at most
``width`` complex sentences (a merge, or the simple side of an m:n block); in the complex->simple
direction each complex sentence takes null or a run of simple sentences (a split). On DEplain-web m:n
groups are complete blocks (every pair of the group is gold), which one label per sentence cannot
express: the first-order CRF of :mod:`alignment_engine.crf_aligner` gives their cells a median marginal
of .07. Here the gold label of a step is the run of its gold partners.

Scores (``S`` the step's sentence, ``R = [a, a + w)`` a run of the other side):

- cell emission ``e[t, j]``: a 2-layer network over the cell's standardised features (as the CRF's);
- span score: linear in the mean / max / min of ``e`` over the run, the block-level lexical values of
  ``S`` against the concatenation of the run (:func:`run_values`: C3G cosine, share of ``S``'s words in
  the run, share of the run's words in ``S``) and a one-hot of ``w``; minus the step's null score
  (a linear function of the row's feature maxima), so that null scores 0;
- transition from the previous non-null span (ending at ``e``) to the next one starting at ``a``: the
  CRF's transition network over the jump ``a - (e - 1)`` (nulls between are skipped, so the last aligned
  position is remembered across them); the first span: the start network of its start.

This is the dynamic program of :mod:`alignment_engine.semimarkov` (state: end of the last non-null span):
:func:`log_partition` is its batched, masked, differentiable version (compiled loops on the CPU,
:mod:`alignment_engine.crf_kernels`; tensor operations elsewhere; tested against the numpy one, which is
tested against brute force), the gold score is the same program with every step restricted to its gold
options, and cell marginals ``P(j in span of step t)`` come from the gradient of log Z with respect to
the span scores; :func:`viterbi` is the batched max-semiring version (it gives the labellings of
:func:`alignment_engine.semimarkov.viterbi`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from alignment_engine.crf import DTYPE, exp_transitions, logsumexp_step, masked_rows, padded, step_maxima
from alignment_engine.crf_config import CRFConfig
from alignment_engine.encoders import training_threads
from alignment_engine.features import TRANSITION_FEATURES, emission_features, start_features, transition_table
from alignment_engine.optim import adam_epochs
from alignment_engine.similarity import _bags_from_codes, _char_codes, _dense_bags, _pair_bags, _word_tuple, dense_idf
from alignment_engine.span_emission import _l2
from alignment_engine.stacking import Decoded, extra_channels

NEG = -1e9
RUN_VALUES = ("c3g_run", "cover_step", "cover_run")


def run_values(rows: list[str], cols: list[str], width: int) -> np.ndarray:
    """(len(rows), len(cols), width, 3) float32: for row sentence ``t`` and the run ``[a, a + w)`` of column
    sentences, the C3G cosine of ``t`` and the run's concatenation (the sum of the run's character 3-gram
    count vectors, TF-IDF weighted over the document), the share of ``t``'s word set found in the run's
    words and the share of the run's words found in ``t``; 0 for runs past the end.

    No vector per run is built: the cosine's numerator is a prefix sum over the columns of the row x
    column dot products, the squared norm of a run's sum a 2-D prefix sum of the columns' Gram matrix, and
    the word counts come from prefix sums of the columns' 0/1 word matrix. The bags are dense
    (:func:`alignment_engine.similarity._dense_bags`, as the per-cell lexical measures use), sparse for a
    document above ``similarity.DENSE_LIMIT``."""
    m, n = len(rows), len(cols)
    out = np.zeros((m, n, width, len(RUN_VALUES)), dtype=np.float32)
    if m == 0 or n == 0:
        return out
    word_counts, chars = _dense_bags(list(rows) + list(cols))  # a document's bags are small: dense is fastest
    if chars is not None and word_counts is not None:
        weighted = chars * dense_idf(chars)
        norms = np.sqrt((weighted[:m] ** 2).sum(axis=1))
        r_vec = weighted[:m] / np.where(norms > 0, norms, 1.0)[:, None]
        c_w = weighted[m:]
        row_col, col_col = r_vec @ c_w.T, c_w @ c_w.T
        binary = word_counts > 0
        row_words, col_words = binary[:m].astype(np.float64), binary[m:].astype(np.int32)
    else:  # a very long document: the same values from sparse bags
        cr, cc = _bags_from_codes([_char_codes(t) for t in rows], [_char_codes(t) for t in cols])
        df = np.asarray((sp.vstack([cr, cc]) > 0).sum(axis=0)).ravel().astype(np.float64)
        idf_m = sp.diags(np.log((1.0 + m + n) / (1.0 + df)) + 1.0)
        r_sp = _l2(sp.csr_matrix(cr @ idf_m))
        c_sp = sp.csr_matrix(cc @ idf_m)
        row_col, col_col = np.asarray((r_sp @ c_sp.T).todense()), np.asarray((c_sp @ c_sp.T).todense())
        br, bc = _pair_bags([_word_tuple(t) for t in rows], [_word_tuple(t) for t in cols], binary=True)
        row_words, col_words = br.toarray().astype(np.float64), bc.toarray().astype(np.int32)
    dots = np.zeros((m, n + 1))
    dots[:, 1:] = np.cumsum(row_col, axis=1)  # prefix sums over the columns
    gram = np.zeros((n + 1, n + 1))
    gram[1:, 1:] = np.cumsum(np.cumsum(col_col, axis=0), axis=1)
    words = np.zeros((n + 1, col_words.shape[1]), dtype=np.int32)
    words[1:] = np.cumsum(col_words, axis=0)
    r_size = np.maximum(row_words.sum(axis=1), 1.0)
    for w in range(1, min(width, n) + 1):
        a, e = np.arange(n - w + 1), np.arange(w, n + 1)  # runs [a, e)
        norm2 = gram[e, e] - gram[a, e] - gram[e, a] + gram[a, a]
        norm = np.sqrt(np.maximum(norm2, 0.0))
        num = dots[:, e] - dots[:, a]
        out[:, : n - w + 1, w - 1, 0] = np.where(norm > 0, num / np.where(norm > 0, norm, 1.0), 0.0)
        union = (words[e] - words[a]) > 0  # (runs, vocabulary): the run's word set
        inter = row_words @ union.T.astype(np.float64)  # (m, runs)
        out[:, : n - w + 1, w - 1, 1] = inter / r_size[:, None]
        out[:, : n - w + 1, w - 1, 2] = inter / np.maximum(union.sum(axis=1), 1.0)[None, :]
    return out


# ---- the dynamic program in torch -----------------------------------------------------------

def log_partition(span: torch.Tensor, trans: torch.Tensor, step_mask: torch.Tensor,
                  null: torch.Tensor | None = None) -> torch.Tensor:
    """(B,) log of the sum over labellings of exp(score), batched, differentiable in ``span``, ``trans`` and ``null``.

    ``span`` (B, T, n, W): span ``[a, a + w)`` of step t at ``[:, t, a, w - 1]`` (use :data:`NEG` for
    spans past the end or forbidden); ``trans`` (B, n + 1, n): from the end of the previous non-null span
    (0: none yet) to the next start; ``step_mask`` (B, T) bool, a prefix of real steps; ``null`` (B, T)
    the null option's score (default 0; NEG forbids it). Equals :func:`alignment_engine.semimarkov.log_partition`;
    the forward algorithm and its gradient run as compiled loops (:mod:`alignment_engine.crf_kernels`)."""
    b, t, n, width = span.shape
    if n == 0 or b == 0:
        return span.new_zeros(b)
    from alignment_engine.crf_kernels import LogPartition, compiled_for  # on first use, as in crf.log_partition

    if not compiled_for(span):
        return _tensor_log_partition(span, trans, step_mask, null)
    return LogPartition.apply(span, trans, step_mask, span.new_zeros((b, t)) if null is None else null, NEG)


def viterbi(span: torch.Tensor, trans: torch.Tensor, step_mask: torch.Tensor) -> np.ndarray:
    """(B, T, n) bool: every sequence's best labelling as the cells of its spans, batched.

    The max-semiring version of :func:`log_partition` (same arguments; float64, no gradient), compiled with its
    backtrace (:func:`alignment_engine.crf_kernels.semi_viterbi`). Ties break as in
    :func:`alignment_engine.semimarkov.viterbi` (narrower spans first, a span before null, the first previous
    state), so both give the same labelling (tested)."""
    b, t, n, width = span.shape
    if n == 0 or b == 0:
        return np.zeros((b, t, n), dtype=bool)
    from alignment_engine.crf_kernels import compiled_for, semi_viterbi

    if not compiled_for(span):
        return _tensor_viterbi(span, trans, step_mask)
    return semi_viterbi(span.detach(), trans.detach(), step_mask, NEG)


def _tensor_log_partition(span: torch.Tensor, trans: torch.Tensor, step_mask: torch.Tensor,
                          null: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`log_partition` as tensor operations per step, differentiated by autograd: the path off the CPU (a GPU)
    or without numba (the lent GPU machines' image), and the reference the compiled loops are tested against."""
    b, t, n, width = span.shape
    if n == 0:
        return span.new_zeros(b)
    last = span.new_full((b, n + 1), NEG)
    last[:, 0] = 0.0
    fast = exp_transitions(trans)  # one matrix product per step instead of n^2 exp
    # ends[:, i, o]: (B, n + 1) the scores of step i's spans of width w = width - o by their end state e = a + w
    # (0 where e < w), made once: a step then adds them to the shifted `into` in one operation, not one per width
    ends = torch.stack([torch.cat([span.new_zeros((b, t, w)), span[:, :, : n - w + 1, w - 1]], dim=2) if w <= n
                        else span.new_zeros((b, t, n + 1)) for w in range(width, 0, -1)], dim=2)
    ends_steps = ends.unbind(1)  # per-step views made once (indexing in the loop: a full-size gradient per step)
    head = span.new_full((b, width), NEG)
    nulls = None if null is None else null.unbind(1)
    for i in range(t):
        into = logsumexp_step(last, *fast)  # (B, n): logsumexp over the previous end of last + trans
        # window o of the padded `into` is into[e - w] at e (NEG for e < w), w = width - o
        spans = torch.cat([head, into], dim=1).unfold(1, n + 1, 1) + ends_steps[i]  # (B, width, n + 1)
        stay = last if nulls is None else last + nulls[i][:, None]
        new = torch.logsumexp(torch.cat([stay[:, None], spans], dim=1), dim=1)
        last = torch.where(step_mask[:, i: i + 1], new, last)
    return torch.logsumexp(last, dim=1)


def _tensor_viterbi(span: torch.Tensor, trans: torch.Tensor, step_mask: torch.Tensor) -> np.ndarray:
    """:func:`viterbi` as tensor operations per step and a numpy backtrace (off the CPU or without numba, as
    :func:`_tensor_log_partition`)."""
    b, t, n, width = span.shape
    out = np.zeros((b, t, n), dtype=bool)
    if n == 0 or b == 0:
        return out
    with torch.no_grad():
        span = span.double()
        trans = trans.double()
        last = span.new_full((b, n + 1), NEG)
        last[:, 0] = 0.0
        pad = span.new_full((b, 1), NEG)
        zero = torch.zeros((b, 1), dtype=torch.long)
        states = torch.arange(n + 1).expand(b, n + 1)
        prevs, widths = [], []
        for i in range(t):
            into, prev = (last[:, :, None] + trans).max(dim=1)  # (B, n): best previous end for each start
            opts, froms = [], []
            for w in range(1, width + 1):  # spans [a, a + w) end in state e = a + w
                if w <= n:
                    opts.append(torch.cat([pad.expand(b, w), into[:, : n - w + 1] + span[:, i, : n - w + 1, w - 1]], 1))
                    froms.append(torch.cat([zero.expand(b, w), prev[:, : n - w + 1]], 1))
                else:
                    opts.append(last.new_full((b, n + 1), NEG))
                    froms.append(states)
            opts.append(last)  # null: the state is unchanged
            froms.append(states)
            new, which = torch.stack(opts, 0).max(dim=0)  # (B, n + 1); which == width: null
            real = step_mask[:, i: i + 1]
            which = torch.where(real, which, torch.full_like(which, width))
            prevs.append(torch.gather(torch.stack(froms, 0), 0, which[None]).squeeze(0))
            widths.append(which + 1)  # width + 1 = null
            last = torch.where(real, new, last)
        prev_np = torch.stack(prevs, 1).numpy()  # (B, T, n + 1)
        width_np = torch.stack(widths, 1).numpy()
        state = last.argmax(dim=1).numpy()
    for k in range(b):
        e = int(state[k])
        for i in range(t - 1, -1, -1):
            w = int(width_np[k, i, e])
            if w <= width:
                out[k, i, e - w: e] = True
                e = int(prev_np[k, i, e])
    return out


# ---- sequences ------------------------------------------------------------------------------

@dataclass
class SpanSeq:
    """One direction of one document: steps are rows of ``feats``, labels runs of its columns."""

    doc: int
    feats: np.ndarray  # (T, n, F) standardised cell features
    runs: np.ndarray  # (T, n, W, 3) run_values
    gold_span: np.ndarray | None = None  # (T, n, W) bool: the step's gold options
    gold_null: np.ndarray | None = None  # (T,) bool: null is the step's gold option


def gold_options(gold: np.ndarray, width: int, unknown: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The gold options of each step from its (T, n) 0/1 gold row: every maximal contiguous run of gold
    columns of at most ``width`` (a longer run: each of its windows of ``width``); null for a step
    without gold. ``unknown`` (T, n) bool marks unlabelled cells of partial labels: a step without a
    gold positive may then also take any span of unlabelled cells (they are marginalised out)."""
    t, n = gold.shape
    span = np.zeros((t, n, width), dtype=bool)
    for i in range(t):
        cols = np.flatnonzero(gold[i])
        if cols.size == 0:
            if unknown is not None and unknown[i].any():
                csum = np.concatenate([[0], np.cumsum(unknown[i].astype(np.int64))])
                for w in range(1, min(width, n) + 1):
                    span[i, : n - w + 1, w - 1] = (csum[w:] - csum[: n - w + 1]) == w
            continue
        breaks = np.flatnonzero(np.diff(cols) > 1)
        for part in np.split(cols, breaks + 1):
            a, length = int(part[0]), len(part)
            if length <= width:
                span[i, a, length - 1] = True
            else:
                span[i, a: a + length - width + 1, width - 1] = True
    return span, np.asarray(~gold.any(axis=1), dtype=bool)


def direction_width(config: CRFConfig, direction: str) -> int:
    """Longest run of a label: complex runs for simple steps ("s2c"), simple runs for complex steps."""
    simple_w, complex_w = config.span_emission_widths
    return int(complex_w if direction == "s2c" else simple_w)


def build_span_sequences(docs: Sequence, direction: str, config: CRFConfig, mean: np.ndarray, scale: np.ndarray,
                         gold: Sequence[np.ndarray] | None = None,
                         cache: dict[tuple[int, str], np.ndarray] | None = None,
                         known: Sequence[np.ndarray | None] | None = None) -> list[SpanSeq]:
    """One :class:`SpanSeq` per document (``docs``: :class:`~alignment_engine.crf_aligner.DocData`);
    ``known[d]`` the partial labels of document ``d`` (:func:`alignment_engine.gold.known_matrix`) or None."""
    width = direction_width(config, direction)
    out = []
    for d, doc in enumerate(docs):
        m, n = doc.shape
        if m == 0 or n == 0:
            continue
        feats = ((emission_features(doc, config.emission) - mean) / scale).astype(np.float32)
        key = (id(doc), direction)
        if cache is not None and key in cache:
            rv = cache[key]
        else:
            rv = run_values(doc.simple, doc.complex, width) if direction == "s2c" else \
                run_values(doc.complex, doc.simple, width)
            if cache is not None:
                cache[key] = rv
        g = None if gold is None else np.asarray(gold[d])
        kn = None if known is None else known[d]
        unk = None if kn is None else kn == 0
        if kn is not None:
            g = (kn == 1).astype(np.int64)
        if direction == "c2s":
            feats = feats.transpose(1, 0, 2)
            g = None if g is None else g.T
            unk = None if unk is None else unk.T
        gs, gn = (None, None) if g is None else gold_options(g, width, unk)
        out.append(SpanSeq(d, np.ascontiguousarray(feats), rv, gs, gn))
    return out


@dataclass
class SpanBatch:
    feats: torch.Tensor  # (B, T, n, F)
    runs: torch.Tensor  # (B, T, n, W, 3)
    valid: torch.Tensor  # (B, T, n, W) bool: a real span of a real step
    step_mask: torch.Tensor  # (B, T)
    cell_mask: torch.Tensor  # (B, T, n)
    n_labels: list[int]
    gold_span: torch.Tensor  # (B, T, n, W) bool
    gold_null: torch.Tensor  # (B, T) bool
    # what the scorer reads that no weight changes, made once per batch (a training batch is scored every epoch):
    cells: torch.Tensor  # (N, F) the real cells' features, in the order of cell_mask's True entries
    row_max: torch.Tensor  # (B, T, F) each step's feature maxima over its real cells (0 for padded steps)


def collate_spans(seqs: Sequence[SpanSeq]) -> SpanBatch:
    b = len(seqs)
    t = max(s.feats.shape[0] for s in seqs)
    n = max(s.feats.shape[1] for s in seqs)
    f = seqs[0].feats.shape[2]
    width = seqs[0].runs.shape[2]
    valid = np.zeros((b, t, n, width), dtype=bool)
    step = np.zeros((b, t), dtype=bool)
    cell = np.zeros((b, t, n), dtype=bool)
    gs = np.zeros((b, t, n, width), dtype=bool)
    gn = np.ones((b, t), dtype=bool)
    starts = np.arange(n).reshape(-1, 1)
    ws = np.arange(1, width + 1).reshape(1, -1)
    for k, s in enumerate(seqs):
        tt, nn_ = s.feats.shape[:2]
        valid[k, :tt] = ((starts + ws) <= nn_)[None]
        step[k, :tt] = True
        cell[k, :tt, :nn_] = True
        if s.gold_span is not None and s.gold_null is not None:
            gs[k, :tt, :nn_] = s.gold_span
            gn[k, :tt] = s.gold_null
    feats_t = padded([s.feats for s in seqs], (b, t, n, f))
    rv_t = padded([s.runs for s in seqs], (b, t, n, width, len(RUN_VALUES)))
    cell_t = torch.from_numpy(cell)
    return SpanBatch(feats_t, rv_t, torch.from_numpy(valid), torch.from_numpy(step),
                     cell_t, [s.feats.shape[1] for s in seqs], torch.from_numpy(gs), torch.from_numpy(gn),
                     masked_rows(feats_t, cell_t), step_maxima(feats_t, cell_t))


# ---- the network ----------------------------------------------------------------------------

def _window(x: torch.Tensor, width: int, how: str) -> torch.Tensor:
    """(B, T, n) -> (B, T, n, W): mean / max / min of ``x`` over ``[a, a + w)`` (positions past the end
    repeat the last value; those spans are masked anyway)."""
    n = x.shape[-1]
    outs = []
    acc = x
    total = x
    for w in range(1, width + 1):
        if w > 1:
            shifted = torch.cat([x[..., w - 1:], x[..., -1:].expand(*x.shape[:-1], w - 1)], dim=-1) if w <= n else \
                x[..., -1:].expand(*x.shape)
            acc = torch.maximum(acc, shifted) if how == "max" else torch.minimum(acc, shifted) if how == "min" else acc
            total = total + shifted
        outs.append(total / w if how == "mean" else acc)
    return torch.stack(outs, dim=-1)


class SpanScorer(nn.Module):
    """Span, null, transition and start scores of one direction."""

    def __init__(self, n_features: int, width: int, hidden: int = 32, transition_hidden: int = 16) -> None:
        super().__init__()
        self.width = width
        self.emit = nn.Sequential(nn.Linear(n_features, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.null = nn.Linear(n_features, 1)
        self.span = nn.Linear(3 + len(RUN_VALUES) + width, 1)
        with torch.no_grad():  # start as "the mean cell emission"
            self.span.weight.zero_()
            self.span.weight[0, 0] = 1.0
            self.span.bias.zero_()
        self.trans = nn.Sequential(nn.Linear(len(TRANSITION_FEATURES), transition_hidden), nn.Tanh(),
                                   nn.Linear(transition_hidden, 1))
        self.start = nn.Linear(3, 1)
        self.to(DTYPE)

    def forward(self, batch: SpanBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """(span scores (B, T, n, W) with the null score subtracted and NEG where invalid, trans (B, n + 1, n)).

        The emission network runs on real cells only, the span layer is applied term by term (its input, the
        window statistics, runs and width one-hot, is never concatenated), and the transition network on one row
        per jump: the same values as the dense forms, up to float rounding."""
        b, t, n, _ = batch.feats.shape
        e = batch.feats.new_zeros((b, t, n))
        if batch.cells.shape[0]:
            e = e.masked_scatter(batch.cell_mask, self.emit(batch.cells).squeeze(-1))
        null = self.null(batch.row_max)  # (B, T, 1)
        w = self.span.weight[0]  # mean, max, min, the RUN_VALUES, the width one-hot
        k = 3 + len(RUN_VALUES)
        span = (_window(e, self.width, "mean") * w[0] + _window(e, self.width, "max") * w[1]
                + _window(e, self.width, "min") * w[2] + batch.runs @ w[3:k] + (w[k:] + self.span.bias))
        span = span - null[..., None]
        span = torch.where(batch.valid, span, torch.full_like(span, NEG))
        trans = span.new_zeros((b, n + 1, n))
        for j, nl in enumerate(batch.n_labels):
            rows, index = transition_table(nl + 1)
            trans[j, 1: nl + 1, :nl] = self.trans(rows).squeeze(-1)[index[1:, 1:]]  # from last column e - 1 to start a
            trans[j, 0, :nl] = self.start(start_features(nl + 1)[1:]).squeeze(-1)
        return span, trans


class BiSemiCRF(nn.Module):
    def __init__(self, n_features: int, config: CRFConfig) -> None:
        super().__init__()
        self.s2c = SpanScorer(n_features, direction_width(config, "s2c"), config.hidden, config.transition_hidden)
        self.c2s = SpanScorer(n_features, direction_width(config, "c2s"), config.hidden, config.transition_hidden)

    def direction(self, name: str) -> SpanScorer:
        return self.s2c if name == "s2c" else self.c2s


def batch_log_likelihood(scorer: SpanScorer, batch: SpanBatch) -> torch.Tensor:
    """(B,) log P(gold options) = log Z restricted to the gold options - log Z."""
    span, trans = scorer(batch)
    b = span.shape[0]
    gold_span = torch.where(batch.gold_span, span, torch.full_like(span, NEG))
    gold_null = torch.where(batch.gold_null, torch.zeros_like(span[..., 0, 0]), torch.full_like(span[..., 0, 0], NEG))
    # both forward algorithms in one batch: the tensor formulation (a GPU) runs each step's operations once for both
    both = log_partition(torch.cat([span, gold_span]), torch.cat([trans, trans]), torch.cat([batch.step_mask] * 2),
                         torch.cat([torch.zeros_like(gold_null), gold_null]))
    return both[b:] - both[:b]


def _batches(seqs: list[SpanSeq], size: int) -> list[list[SpanSeq]]:
    order = sorted(range(len(seqs)), key=lambda i: (seqs[i].feats.shape[1], seqs[i].feats.shape[0]))
    return [[seqs[i] for i in order[k: k + size]] for k in range(0, len(order), size)]


@training_threads()
def train_semicrf(model: BiSemiCRF, train: dict[str, list[SpanSeq]], config: CRFConfig, seed: int,
                  progress: Callable[[str], None] | None = None) -> dict:
    """Adam on the exact negative log-likelihood per step (both directions), lr decayed linearly to 10%."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    batches = {d: [collate_spans(b) for b in _batches(seqs, config.crf_batch)] for d, seqs in train.items()}
    steps = {d: sum(int(b.step_mask.sum()) for b in bs) for d, bs in batches.items()}
    losses = adam_epochs(model, batches, steps, lambda d, batch: batch_log_likelihood(model.direction(d), batch),
                         max(int(config.semicrf_epochs), 1), config.crf_lr, config.crf_weight_decay, rng, progress,
                         "semi-crf")
    return {"loss": losses}


def cell_marginals(span_marg: np.ndarray) -> np.ndarray:
    """(T, n) P(column j in the step's span) from (T, n, W) span marginals."""
    t, n, width = span_marg.shape
    out = np.zeros((t, n))
    for w in range(1, width + 1):
        for off in range(min(w, n)):  # span [a, a + w) covers a + off (a run wider than the row: none)
            out[:, off:] += span_marg[:, : n - off, w - 1]
    return np.clip(out, 0.0, 1.0)


#: Sequences per padded batch of the semi-Markov decoding (sorted by size, so padding stays small) ...
DECODE_BATCH = 32
#: ... and at most this many padded cells (steps x labels x sequences) per batch.
DECODE_CELLS = 20_000


def _decode_chunks(seqs: list[SpanSeq], size: int, cells: int) -> list[list[SpanSeq]]:
    order = sorted(seqs, key=lambda s: (s.feats.shape[1], s.feats.shape[0]))
    out: list[list[SpanSeq]] = []
    cur: list[SpanSeq] = []
    for s in order:
        t = max([x.feats.shape[0] for x in cur] + [s.feats.shape[0]])
        n = max([x.feats.shape[1] for x in cur] + [s.feats.shape[1]])
        if cur and (len(cur) >= size or t * n * (len(cur) + 1) > cells):
            out.append(cur)
            cur = []
        cur.append(s)
    if cur:
        out.append(cur)
    return out


def decode_semicrf(model: BiSemiCRF, seqs: dict[str, list[SpanSeq]], docs: Sequence,
                   batch_size: int = DECODE_BATCH) -> list:
    """Per document: both directions' Viterbi spans and cell marginals, as
    :class:`~alignment_engine.crf_aligner.Decoded` (what the learned decoder reads). Sequences are
    decoded in padded batches of at most ``batch_size`` sequences and :data:`DECODE_CELLS` padded cells
    (one forward and one backward pass per batch)."""
    out = [Decoded.empty(doc.shape) for doc in docs]
    for d, items in seqs.items():
        scorer = model.direction(d)
        for chunk in _decode_chunks(list(items), max(int(batch_size), 1), DECODE_CELLS):
            batch = collate_spans(chunk)
            with torch.no_grad():  # no graph over the weights: only the span marginals are needed
                span, trans = scorer(batch)
            with torch.enable_grad():
                span.requires_grad_(True)
                z = log_partition(span, trans, batch.step_mask)
                (grad,) = torch.autograd.grad(z.sum(), span)
            grad_np = grad.numpy().astype(np.float64)
            paths = viterbi(span, trans, batch.step_mask)
            for k, s in enumerate(chunk):
                t, n = s.feats.shape[:2]
                marg = cell_marginals(grad_np[k, :t, :n])
                vit = paths[k, :t, :n]
                dec = out[s.doc]
                if d == "s2c":
                    dec.forward[:] = vit
                    dec.forward_marginals[:] = marg
                else:
                    dec.reverse[:] = vit.T
                    dec.reverse_marginals[:] = marg.T
    return out


def fit_semicrf(docs: Sequence, gold_mats: Sequence[np.ndarray], config: CRFConfig, mean: np.ndarray,
                scale: np.ndarray, seed: int, progress: Callable[[str], None] | None = None,
                cache: dict | None = None, known: Sequence[np.ndarray | None] | None = None) -> BiSemiCRF:
    """Both directions' semi-Markov CRFs trained on ``docs``."""
    model = BiSemiCRF(len(mean), config)
    seqs = {d: build_span_sequences(docs, d, config, mean, scale, gold_mats, cache, known) for d in ("s2c", "c2s")}
    train_semicrf(model, seqs, config, seed, progress)
    return model.eval()


def attach_extra(model: BiSemiCRF, decs: Sequence, docs: Sequence, config: CRFConfig, mean: np.ndarray,
                 scale: np.ndarray, seqs: dict[str, list[SpanSeq]] | None = None) -> None:
    """Decode ``docs`` with the semi-Markov CRFs and store their channels in each first-order decoding's
    ``extra`` (:func:`alignment_engine.stacking.extra_channels`), what the learned decoder reads. ``seqs``: the
    documents' span sequences when already built (:func:`span_sequences`)."""
    if seqs is None:
        seqs = span_sequences(docs, config, mean, scale)
    set_extra(decs, decode_semicrf(model, seqs, docs))


def span_sequences(docs: Sequence, config: CRFConfig, mean: np.ndarray, scale: np.ndarray) -> dict[str, list[SpanSeq]]:
    """Both directions' :func:`build_span_sequences` of ``docs`` (to decode, no gold)."""
    return {d: build_span_sequences(docs, d, config, mean, scale) for d in ("s2c", "c2s")}


def set_extra(decs: Sequence, semi: Sequence) -> None:
    """``decs[i].extra`` = the :func:`~alignment_engine.stacking.extra_channels` of ``semi[i]``."""
    for dec, sd in zip(decs, semi, strict=True):
        dec.extra = extra_channels(sd.forward_marginals, sd.reverse_marginals, sd.forward, sd.reverse)
