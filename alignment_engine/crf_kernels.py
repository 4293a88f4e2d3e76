"""Both CRFs' forward algorithms and their gradients, and the semi-Markov CRF's Viterbi, as compiled loops (numba),
one sequence at a time.

The forward algorithms ran as small tensor operations per step of a batch (about 15 per step for the semi-Markov
CRF, 8 for the first-order one) and autograd as many again backwards: with (B, L) vectors the operations' fixed
cost, not arithmetic, was the CRFs' training time (docs/engine-results.md, Round 22). Here each recurrence and its
exact gradient (the forward-backward algorithm) run as plain loops compiled by numba: no per-operation cost, no
autograd graph over the steps. Both reach a previous state through ``logsumexp_p(alpha[p] + trans[p, a])``, computed
as :func:`alignment_engine.crf.logsumexp_step` does, as a product in exp space with the row's and the column's
maxima taken out (``E = exp(trans - top)`` once per sequence; :func:`_into`).

**Semi-Markov CRF** (:class:`LogPartition`, for :func:`alignment_engine.semicrf.log_partition`; state ``e``: the
end of the last non-null span, 0 before the first one), for each real step ``i``:

- ``into[a] = logsumexp_p(alpha[p] + trans[p, a])``: reaching start ``a`` from any previous end;
- ``alpha'[e] = logsumexp(alpha[e] + null[i], into[e - w] + span[i, e - w, w - 1] for w = 1..min(W, e))``;

and ``log Z = logsumexp_e alpha_T[e]``; a padded step (``step_mask`` False) leaves ``alpha`` as it is.

**First-order CRF** (:class:`ChainLogPartition`, for :func:`alignment_engine.crf.log_partition` with transitions
that do not change along the sequence): ``alpha_0 = start + emis[0]``, ``alpha'[a] = logsumexp_p(alpha[p] +
trans[p, a]) + emis[i, a]`` at each real step, ``log Z = logsumexp alpha_T`` (0 for a sequence without steps).

Each sequence is computed alone, so its result never depends on what else shares the batch. Values and gradients
equal the per-step tensor formulations' up to float rounding (``alignment_engine/tests/test_semicrf.py`` and
``test_crf.py`` keep those as references; ``torch.autograd.gradcheck``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

try:
    from numba import njit

    AVAILABLE = True
except ImportError:  # the lent GPU machines' image (scripts/device_kit.py): the tensor formulations run instead
    AVAILABLE = False

    def njit(**_: Any) -> Any:  # type: ignore[no-redef]
        return lambda f: f


@njit(cache=True)
def _exp_trans(trans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
    """``(exp(trans - top), top)`` of one sequence's (P, A) transitions, ``top`` the maximum of each column."""
    n_prev, n_next = trans.shape
    e_trans = np.empty((n_prev, n_next))
    top = np.empty(n_next)
    for a in range(n_next):
        best = trans[0, a]
        for p in range(1, n_prev):
            best = max(best, trans[p, a])
        top[a] = best
        for p in range(n_prev):
            e_trans[p, a] = math.exp(trans[p, a] - best)
    return e_trans, top


@njit(cache=True)
def _into(prev: np.ndarray, e_trans: np.ndarray, top: np.ndarray, sums: np.ndarray, into: np.ndarray
          ) -> float:  # pragma: no cover
    """``into[a] = logsumexp_p(prev[p] + trans[p, a])`` as ``log(sums[a]) + m + top[a]`` with ``sums[a] =
    sum_p exp(prev[p] - m) E[p, a]`` (both filled here); returns ``m``, the largest ``prev``."""
    m = prev.max()
    sums[:] = 0.0
    for p in range(prev.shape[0]):
        pp = math.exp(prev[p] - m)
        if pp != 0.0:
            for a in range(into.shape[0]):
                sums[a] += pp * e_trans[p, a]
    for a in range(into.shape[0]):
        into[a] = math.log(sums[a]) + m + top[a] if sums[a] > 0.0 else -math.inf
    return m


@njit(cache=True)
def _into_backward(prev: np.ndarray, m: float, g_into: np.ndarray, sums: np.ndarray, e_trans: np.ndarray,
                   outer: np.ndarray, g_prev: np.ndarray) -> None:  # pragma: no cover
    """Through :func:`_into`: adds ``d/d prev`` to ``g_prev`` and, to ``outer``, the terms whose product with ``E``
    is ``d/d trans`` (``exp(prev[p] - m) * g_into[a] / sums[a]``, summed over the steps by the caller)."""
    n_next = g_into.shape[0]
    v = np.empty(n_next)
    for a in range(n_next):
        v[a] = g_into[a] / sums[a] if sums[a] > 0.0 else 0.0
    for p in range(prev.shape[0]):
        pp = math.exp(prev[p] - m)
        if pp == 0.0:
            continue
        acc = 0.0
        for a in range(n_next):
            acc += e_trans[p, a] * v[a]
            outer[p, a] += pp * v[a]
        g_prev[p] += pp * acc


@njit(cache=True)
def _logsumexp(x: np.ndarray) -> float:  # pragma: no cover
    m = x.max()
    return m + math.log(np.exp(x - m).sum())


@njit(cache=True)
def _forward(span: np.ndarray, trans: np.ndarray, mask: np.ndarray, null: np.ndarray, neg: float
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """The semi-Markov CRF's forward algorithm: log Z (B,) and what :func:`_backward` reads."""
    b_n, t_n, n, width = span.shape
    logz = np.empty(b_n)
    alpha = np.empty((b_n, t_n + 1, n + 1))
    sums = np.ones((b_n, t_n, n))
    maxima = np.zeros((b_n, t_n))
    e_trans = np.empty((b_n, n + 1, n))
    top = np.empty((b_n, n))
    into = np.empty(n)
    for b in range(b_n):
        e_trans[b], top[b] = _exp_trans(trans[b])
        alpha[b, 0, :] = neg
        alpha[b, 0, 0] = 0.0
        for i in range(t_n):
            prev = alpha[b, i]
            if not mask[b, i]:
                alpha[b, i + 1, :] = prev
                continue
            maxima[b, i] = _into(prev, e_trans[b], top[b], sums[b, i], into)
            for e in range(n + 1):
                stay = prev[e] + null[b, i]
                best = stay
                for w in range(1, min(width, e) + 1):
                    best = max(best, into[e - w] + span[b, i, e - w, w - 1])
                total = math.exp(stay - best)
                for w in range(1, min(width, e) + 1):
                    total += math.exp(into[e - w] + span[b, i, e - w, w - 1] - best)
                alpha[b, i + 1, e] = best + math.log(total)
        logz[b] = _logsumexp(alpha[b, t_n])
    return logz, alpha, sums, maxima, e_trans, top


@njit(cache=True)
def _backward(grad: np.ndarray, span: np.ndarray, mask: np.ndarray, null: np.ndarray, logz: np.ndarray,
              alpha: np.ndarray, sums: np.ndarray, maxima: np.ndarray, e_trans: np.ndarray, top: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """The gradients of :func:`_forward`'s log Z, times ``grad``, in span, trans and null."""
    b_n, t_n, n, width = span.shape
    g_span = np.zeros_like(span)
    g_trans = np.zeros((b_n, n + 1, n))
    g_null = np.zeros((b_n, t_n))
    into = np.empty(n)
    g_into = np.empty(n)
    g_prev = np.empty(n + 1)
    for b in range(b_n):
        g_alpha = grad[b] * np.exp(alpha[b, t_n] - logz[b])
        outer = np.zeros((n + 1, n))
        for i in range(t_n - 1, -1, -1):
            if not mask[b, i]:
                continue  # the step left alpha as it was: its gradient passes through
            prev, new, m = alpha[b, i], alpha[b, i + 1], maxima[b, i]
            for a in range(n):
                s = sums[b, i, a]
                into[a] = math.log(s) + m + top[b, a] if s > 0.0 else -math.inf
                g_into[a] = 0.0
            for e in range(n + 1):
                ge = g_alpha[e]
                g_prev[e] = 0.0
                if ge == 0.0:
                    continue
                w_stay = ge * math.exp(prev[e] + null[b, i] - new[e])
                g_prev[e] = w_stay
                g_null[b, i] += w_stay
                for w in range(1, min(width, e) + 1):
                    a = e - w
                    w_span = ge * math.exp(into[a] + span[b, i, a, w - 1] - new[e])
                    g_span[b, i, a, w - 1] = w_span
                    g_into[a] += w_span
            _into_backward(prev, m, g_into, sums[b, i], e_trans[b], outer, g_prev)
            g_alpha = g_prev.copy()
        g_trans[b] = outer * e_trans[b]
    return g_span, g_trans, g_null


@njit(cache=True)
def _chain_forward(emis: np.ndarray, trans: np.ndarray, start: np.ndarray, mask: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """The first-order CRF's forward algorithm: log Z (B,) and what :func:`_chain_backward` reads."""
    b_n, t_n, n = emis.shape
    logz = np.zeros(b_n)
    alpha = np.zeros((b_n, t_n, n))
    sums = np.ones((b_n, t_n, n))
    maxima = np.zeros((b_n, t_n))
    e_trans = np.empty((b_n, n, n))
    into = np.empty(n)
    for b in range(b_n):
        e_trans[b], top = _exp_trans(trans[b])
        if t_n == 0 or not mask[b, 0]:
            continue  # no steps: log Z = 0
        alpha[b, 0] = start[b] + emis[b, 0]
        for i in range(1, t_n):
            prev = alpha[b, i - 1]
            if not mask[b, i]:
                alpha[b, i] = prev
                continue
            maxima[b, i] = _into(prev, e_trans[b], top, sums[b, i], into)
            alpha[b, i] = into + emis[b, i]
        logz[b] = _logsumexp(alpha[b, t_n - 1])
    return logz, alpha, sums, maxima, e_trans


@njit(cache=True)
def _chain_backward(grad: np.ndarray, mask: np.ndarray, logz: np.ndarray, alpha: np.ndarray, sums: np.ndarray,
                    maxima: np.ndarray, e_trans: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """The gradients of :func:`_chain_forward`'s log Z, times ``grad``, in emissions, transitions and start."""
    b_n, t_n, n = alpha.shape
    g_emis = np.zeros((b_n, t_n, n))
    g_trans = np.zeros((b_n, n, n))
    g_start = np.zeros((b_n, n))
    g_prev = np.empty(n)
    for b in range(b_n):
        if t_n == 0 or not mask[b, 0]:
            continue
        g_alpha = grad[b] * np.exp(alpha[b, t_n - 1] - logz[b])
        outer = np.zeros((n, n))
        for i in range(t_n - 1, 0, -1):
            if not mask[b, i]:
                continue
            g_emis[b, i] = g_alpha
            g_prev[:] = 0.0
            _into_backward(alpha[b, i - 1], maxima[b, i], g_alpha, sums[b, i], e_trans[b], outer, g_prev)
            g_alpha = g_prev.copy()
        g_emis[b, 0] = g_alpha
        g_start[b] = g_alpha
        g_trans[b] = outer * e_trans[b]
    return g_emis, g_trans, g_start


@njit(cache=True)
def _semi_viterbi(span: np.ndarray, trans: np.ndarray, mask: np.ndarray, neg: float) -> np.ndarray:  # pragma: no cover
    """The semi-Markov CRF's best labelling per sequence as the (B, T, n) cells of its spans: the max-semiring
    recurrence of :func:`_forward` and the backtrace. Ties break as the tensor version broke them (the first
    previous end, then narrower spans first and a span before null, the first final state)."""
    b_n, t_n, n, width = span.shape
    out = np.zeros((b_n, t_n, n), dtype=np.bool_)
    last = np.empty(n + 1)
    new = np.empty(n + 1)
    into = np.empty(n)
    prev_of = np.empty(n, dtype=np.int64)
    froms = np.zeros((t_n, n + 1), dtype=np.int64)
    widths = np.zeros((t_n, n + 1), dtype=np.int64)  # width + 1: null
    for b in range(b_n):
        last[:] = neg
        last[0] = 0.0
        for i in range(t_n):
            if not mask[b, i]:
                for e in range(n + 1):
                    froms[i, e] = e
                    widths[i, e] = width + 1
                continue
            for a in range(n):
                best = last[0] + trans[b, 0, a]
                arg = 0
                for p in range(1, n + 1):
                    v = last[p] + trans[b, p, a]
                    if v > best:
                        best = v
                        arg = p
                into[a] = best
                prev_of[a] = arg
            for e in range(n + 1):
                best = -math.inf
                which = width + 1
                src = e
                for w in range(1, min(width, e) + 1):
                    v = into[e - w] + span[b, i, e - w, w - 1]
                    if v > best:
                        best, which, src = v, w, prev_of[e - w]
                if last[e] > best:
                    best, which, src = last[e], width + 1, e
                new[e] = best
                froms[i, e] = src
                widths[i, e] = which
            last[:] = new
        e = int(np.argmax(last))
        for i in range(t_n - 1, -1, -1):
            w = widths[i, e]
            if w <= width:
                out[b, i, e - w: e] = True
                e = froms[i, e]
    return out


def compiled_for(x: torch.Tensor) -> bool:
    """Whether the dynamic programs on ``x`` run as these compiled loops: on the CPU where numba imports (it is in
    requirements.txt; the lent GPU machines' image lacks it). Elsewhere the tensor formulations run."""
    return x.device.type == "cpu" and AVAILABLE


def _arrays(*tensors: torch.Tensor) -> list[np.ndarray]:
    return [np.ascontiguousarray(x.detach().cpu().numpy(), dtype=np.float64) for x in tensors]


def _mask(step_mask: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(step_mask.cpu().numpy(), dtype=np.bool_)


def _tensor(x: np.ndarray, like: tuple[torch.dtype, torch.device], needed: bool) -> torch.Tensor | None:
    """``x`` as a tensor of the input's dtype and device (the loops run on the CPU), or None when not needed."""
    return torch.from_numpy(x).to(dtype=like[0], device=like[1]) if needed else None


class ChainLogPartition(torch.autograd.Function):
    """``log Z`` per sequence (B,) of a first-order CRF: (emissions (B, T, L) with forbidden labels already at
    :data:`alignment_engine.crf.NEG_INF`, transitions (B, L, L), start (B, L), step_mask (B, T), a prefix of real
    steps), with the gradient of the forward-backward algorithm (module docstring)."""

    @staticmethod
    def forward(ctx: Any, emis: torch.Tensor, trans: torch.Tensor, start: torch.Tensor,
                step_mask: torch.Tensor) -> torch.Tensor:
        mask = _mask(step_mask)
        emis_np, trans_np, start_np = _arrays(emis, trans, start)
        logz, alpha, sums, maxima, e_trans = _chain_forward(emis_np, trans_np, start_np, mask)
        ctx.arrays = (mask, logz, alpha, sums, maxima, e_trans)
        ctx.likes = [(x.dtype, x.device) for x in (emis, trans, start)]
        return torch.from_numpy(logz).to(dtype=emis.dtype, device=emis.device)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        grads = _chain_backward(_arrays(grad)[0], *ctx.arrays)
        return (*(_tensor(g, like, need) for g, like, need in zip(grads, ctx.likes, ctx.needs_input_grad, strict=False)),
                None)


class LogPartition(torch.autograd.Function):
    """``log Z`` per sequence (B,) of the semi-Markov CRF: (span (B, T, n, W), trans (B, n + 1, n), step_mask (B, T),
    null (B, T), ``neg`` the score of a state not reached yet), with the gradient of the forward-backward algorithm
    (module docstring)."""

    @staticmethod
    def forward(ctx: Any, span: torch.Tensor, trans: torch.Tensor, step_mask: torch.Tensor,
                null: torch.Tensor, neg: float) -> torch.Tensor:
        span_np, trans_np, null_np = _arrays(span, trans, null)
        mask = _mask(step_mask)
        logz, *saved = _forward(span_np, trans_np, mask, null_np, neg)
        ctx.arrays = (span_np, mask, null_np, logz, *saved)
        ctx.likes = [(x.dtype, x.device) for x in (span, trans, null)]
        return torch.from_numpy(logz).to(dtype=span.dtype, device=span.device)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        g_span, g_trans, g_null = _backward(_arrays(grad)[0], *ctx.arrays)
        need = ctx.needs_input_grad
        return (_tensor(g_span, ctx.likes[0], need[0]), _tensor(g_trans, ctx.likes[1], need[1]), None,
                _tensor(g_null, ctx.likes[2], need[3]), None)


def semi_viterbi(span: torch.Tensor, trans: torch.Tensor, step_mask: torch.Tensor, neg: float) -> np.ndarray:
    """(B, T, n) bool: :func:`_semi_viterbi` of the semi-Markov CRF's scores (float64, no gradient; ``neg`` as for
    :class:`LogPartition`)."""
    span_np, trans_np = _arrays(span, trans)
    return np.asarray(_semi_viterbi(span_np, trans_np, _mask(step_mask), neg))


def warm() -> None:
    """Compile every loop of this module now (10-16 s on a slow CPU; numba keeps them in ``__pycache__``, so later
    processes load them in a fraction of a second): ``make install`` calls it so that no first ``train`` or ``align``
    waits."""
    span = torch.zeros((1, 2, 2, 2), dtype=torch.float64, requires_grad=True)
    trans = torch.zeros((1, 3, 2), dtype=torch.float64, requires_grad=True)
    mask = torch.ones((1, 2), dtype=torch.bool)
    LogPartition.apply(span, trans, mask, torch.zeros((1, 2), dtype=torch.float64), -1e9).sum().backward()
    semi_viterbi(span, trans, mask, -1e9)
    emis, chain = torch.zeros((1, 2, 2), dtype=torch.float64, requires_grad=True), torch.zeros((1, 2, 2), dtype=torch.float64)
    ChainLogPartition.apply(emis, chain, torch.zeros((1, 2), dtype=torch.float64), mask).sum().backward()


if __name__ == "__main__":
    warm()
