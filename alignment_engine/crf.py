"""Linear-chain dynamic program over two semirings, in torch.

One routine, :func:`chain_dp`, runs the forward recursion of a linear-chain CRF either in the
max semiring (Viterbi, with backpointers) or in the log-sum-exp semiring (forward algorithm,
exact log partition function).  It is vectorised over labels (one ``(B, L, L)`` tensor
operation per step, no Python loop over labels) and batched over sequences with masks, so
sequences of different lengths and with different numbers of labels share one call.  There
are no fixed-size tables: the sizes come from the tensors (1, 2 or 1,000 steps all work), and
it runs on whatever device the tensors live on.

Shapes (``B`` sequences, ``T`` steps = simple sentences, ``L`` labels, label 0 = "not aligned"):

- ``emissions``: ``(B, T, L)`` float, score of label ``l`` at step ``t``;
- ``transitions``: ``(B, L, L)`` float, ``transitions[b, j, k]`` = score of moving from label
  ``j`` at step ``t-1`` to label ``k`` at step ``t`` (time-invariant within a sequence), or
  ``(B, T, L, L)`` when it varies with the step (entry ``t`` is used to enter step ``t``;
  entry 0 is ignored);
- ``start``: optional ``(B, L)``, score of label ``l`` at step 0 (zeros when omitted);
- ``step_mask``: optional ``(B, T)`` bool, ``True`` for real steps; real steps must come
  first (a prefix);
- ``label_mask``: optional ``(B, L)`` or ``(B, T, L)`` bool, ``True`` for labels allowed
  (per sequence, or per step).  Label 0 must always be allowed so every step has a label.

The score of a label sequence ``a`` of a sequence with ``T_b`` real steps is
``start[a_0] + sum_t emissions[t, a_t] + sum_{t>=1} transitions[a_{t-1}, a_t]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

NEG_INF = -1e9
"""Score given to forbidden labels: finite, so gradients stay clean, and exp() underflows to 0."""

DTYPE = torch.float64
"""The floating-point type of the CRFs' weights and inputs (first-order and semi-Markov). In float32 the
trained weights depended on the order in which the CPU summed floats (1 against 2 threads, or MKL's
compatible code path: weights 2e-3 apart after 20 epochs; another CPU: another model, dev F1 .728 against
.736). In float64 they agree to 7e-12 (1e-6 with ATen's kernels without SIMD), and the whole ``train`` gave
the same dev alignments in each case (docs/engine-results.md, Round 10)."""


@dataclass
class ChainInputs:
    emissions: torch.Tensor
    transitions: torch.Tensor
    start: torch.Tensor
    step_mask: torch.Tensor
    label_mask: torch.Tensor  # (B, T, L)


def _check(
    emissions: torch.Tensor,
    transitions: torch.Tensor,
    start: torch.Tensor | None,
    step_mask: torch.Tensor | None,
    label_mask: torch.Tensor | None,
    require_null: bool = True,
) -> ChainInputs:
    if emissions.dim() != 3:
        raise ValueError(f"emissions must be (B, T, L), got shape {tuple(emissions.shape)}")
    b, t, n_labels = emissions.shape
    if n_labels < 1:
        raise ValueError(f"emissions must have at least one label (label 0), got shape {tuple(emissions.shape)}")
    if transitions.shape not in ((b, n_labels, n_labels), (b, t, n_labels, n_labels)):
        raise ValueError(
            f"transitions must be (B, L, L) = {(b, n_labels, n_labels)} or (B, T, L, L) = "
            f"{(b, t, n_labels, n_labels)}, got shape {tuple(transitions.shape)}"
        )
    if start is None:
        start = emissions.new_zeros((b, n_labels))
    elif start.shape != (b, n_labels):
        raise ValueError(f"start must be (B, L) = {(b, n_labels)}, got shape {tuple(start.shape)}")
    if step_mask is None:
        step_mask = torch.ones((b, t), dtype=torch.bool, device=emissions.device)
    elif step_mask.shape != (b, t):
        raise ValueError(f"step_mask must be (B, T) = {(b, t)}, got shape {tuple(step_mask.shape)}")
    step_mask = step_mask.to(torch.bool)
    if label_mask is None:
        label_mask = torch.ones((b, t, n_labels), dtype=torch.bool, device=emissions.device)
    elif label_mask.shape == (b, n_labels):
        label_mask = label_mask.to(torch.bool)[:, None, :].expand(b, t, n_labels)
    elif label_mask.shape == (b, t, n_labels):
        label_mask = label_mask.to(torch.bool)
    else:
        raise ValueError(
            f"label_mask must be (B, L) = {(b, n_labels)} or (B, T, L) = {(b, t, n_labels)}, "
            f"got shape {tuple(label_mask.shape)}"
        )
    if require_null and t and not bool(label_mask[..., 0].all()):
        raise ValueError("label 0 ('not aligned') must be allowed at every step (label_mask[..., 0] all True)")
    return ChainInputs(emissions, transitions, start, step_mask, label_mask)


def step_maxima(feats: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """(B, T, F) each step's feature maxima over its cells ``cells`` (B, T, n) of ``feats`` (B, T, n, F); 0 for a
    step with none. What both CRFs' null score reads (made once per batch by their collates)."""
    b, t, n, f = feats.shape
    if n == 0:
        return feats.new_zeros((b, t, f))
    if bool(cells.all()):  # every cell real (one unpadded sequence): no masked copy of all the features
        return feats.max(dim=2).values
    row_max = feats.masked_fill(~cells[..., None], -1e4).max(dim=2).values
    return torch.where(cells.any(dim=2, keepdim=True), row_max, torch.zeros_like(row_max))


def padded(arrays: Sequence[np.ndarray], shape: tuple[int, ...], device: torch.device | None = None) -> torch.Tensor:
    """The per-sequence float32 ``arrays`` as one zero-padded tensor of ``shape`` (the batch first) in :data:`DTYPE`:
    array ``k`` at the start of row ``k``. One array that fills the shape is converted without a padded float32 copy
    (a long document is alone in its batch: its cells' copy is hundreds of MB, docs/engine-results.md Round 26)."""
    if len(arrays) == 1 and arrays[0].shape == shape[1:]:
        src = arrays[0][None].astype(np.float32, copy=False)
    else:
        src = np.zeros(shape, dtype=np.float32)
        for k, a in enumerate(arrays):
            src[k][tuple(slice(0, d) for d in a.shape)] = a
    return torch.from_numpy(src).to(device=device, dtype=DTYPE)


def masked_rows(feats: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """(N, F) the features of the cells ``cells`` (B, T, n) of ``feats`` (B, T, n, F), in the order of ``cells``' True
    entries: ``feats[cells]``, which copies them; a view of ``feats`` when every cell is real (one unpadded
    sequence, whose cells would otherwise be held twice: hundreds of MB for a long document)."""
    if bool(cells.all()) and feats.is_contiguous():
        return feats.reshape(-1, feats.shape[-1])
    return feats[cells]


def exp_transitions(transitions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(exp(transitions - M), M)`` for :func:`logsumexp_step`, ``M`` the maximum of each destination
    column (over dim -2; kept out of the graph: the log-sum-exp does not depend on the shift). In float64,
    so that no entry within ~700 nats of its column's maximum underflows."""
    top = transitions.detach().amax(dim=-2)
    return torch.exp((transitions - top.unsqueeze(-2)).double()), top


def logsumexp_step(alpha: torch.Tensor, exp_trans: torch.Tensor, top: torch.Tensor) -> torch.Tensor:
    """``logsumexp(alpha[:, :, None] + transitions, dim=1)`` as a matrix product, ``(B, L)``.

    ``exp_trans``, ``top`` from :func:`exp_transitions` of ``(B, L_prev, L)`` transitions, computed once
    per sequence batch instead of one exponential per (previous label, label) at every step: ``log(exp(alpha - m) @ exp(transitions - M)) + m + M`` with ``m`` the row's maximum.
    Exact up to float rounding (gradients included: both shifts cancel); a column sum cannot vanish
    because the row's best previous label contributes ``exp(transitions[best, l] - M_l) > 0``."""
    m = alpha.detach().amax(dim=1, keepdim=True)
    p = torch.exp((alpha - m).double())
    total = torch.bmm(p.unsqueeze(1), exp_trans).squeeze(1)
    return torch.log(total).to(alpha.dtype) + m + top


def _reduce(scores: torch.Tensor, semiring: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Reduce over dim 1 of ``(B, L_prev, L)``: max (with argmax) or logsumexp."""
    if semiring == "max":
        best, arg = scores.max(dim=1)
        return best, arg
    return torch.logsumexp(scores, dim=1), None


def chain_dp(
    emissions: torch.Tensor,
    transitions: torch.Tensor,
    *,
    semiring: str = "logsumexp",
    start: torch.Tensor | None = None,
    step_mask: torch.Tensor | None = None,
    label_mask: torch.Tensor | None = None,
    require_null: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Run the forward recursion; return ``(total, backpointers)``.

    ``total`` is ``(B,)``: log Z (``semiring="logsumexp"``) or the best path score
    (``semiring="max"``).  ``backpointers`` is ``(B, T, L)`` long for ``"max"`` (entry ``t``
    gives the best previous label for each label at step ``t``) and ``None`` otherwise.
    A sequence with no real steps has total 0 (the empty path).
    """
    alpha, back, has_steps = _run(emissions, transitions, semiring, start, step_mask, label_mask, require_null)
    total = alpha.max(dim=1).values if semiring == "max" else torch.logsumexp(alpha, dim=1)
    return torch.where(has_steps, total, torch.zeros_like(total)), back


def _run(
    emissions: torch.Tensor,
    transitions: torch.Tensor,
    semiring: str,
    start: torch.Tensor | None,
    step_mask: torch.Tensor | None,
    label_mask: torch.Tensor | None,
    require_null: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """Forward recursion: final ``alpha`` ``(B, L)``, backpointers (max only), has-steps ``(B,)``."""
    if semiring not in ("max", "logsumexp"):
        raise ValueError(f"semiring must be 'max' or 'logsumexp', got {semiring!r}")
    x = _check(emissions, transitions, start, step_mask, label_mask, require_null)
    b, t, n_labels = x.emissions.shape
    emis = x.emissions.masked_fill(~x.label_mask, NEG_INF)
    if t == 0:
        empty = torch.zeros((b, 0, n_labels), dtype=torch.long, device=emis.device) if semiring == "max" else None
        return emis.new_zeros((b, n_labels)), empty, torch.zeros((b,), dtype=torch.bool, device=emis.device)
    per_step = x.transitions.dim() == 4
    alpha = x.start + emis[:, 0]  # (B, L)
    alpha = torch.where(x.step_mask[:, :1], alpha, torch.zeros_like(alpha))
    back: list[torch.Tensor] = [torch.zeros((b, n_labels), dtype=torch.long, device=emis.device)]
    # the forward algorithm with time-invariant transitions: one matrix product per step
    fast = exp_transitions(x.transitions) if semiring == "logsumexp" and not per_step and t > 1 else None
    # per-step views made once (indexing emis[:, step] in the loop makes the backward allocate and add a
    # full (B, T, L) gradient at every step: quadratic in T)
    emis_steps = emis.unbind(1)
    trans_steps = x.transitions.unbind(1) if per_step else None
    # without a gradient, every step's (B, L_prev, L) sums go to one buffer: a fresh tensor per step (8 MB at 1,000
    # labels) let glibc's heap grow by one per step on some runs (6.4-6.8 instead of 2.5 GB for a 1,020 x 710-sentence
    # pair, docs/engine-results.md Round 19); the same sums, so the same result
    scratch = None
    if fast is None and t > 1 and not torch.is_grad_enabled():
        scratch = emis.new_empty((b, n_labels, n_labels), dtype=torch.result_type(emis, x.transitions))
    for step in range(1, t):
        if fast is not None:
            reduced, arg = logsumexp_step(alpha, *fast), None
        else:
            trans = x.transitions if trans_steps is None else trans_steps[step]
            summed = alpha[:, :, None] + trans if scratch is None else torch.add(alpha[:, :, None], trans, out=scratch)
            reduced, arg = _reduce(summed, semiring)  # over (B, L_prev, L)
        new_alpha = reduced + emis_steps[step]
        live = x.step_mask[:, step : step + 1]
        alpha = torch.where(live, new_alpha, alpha)
        if arg is not None:
            # On padded steps point every label at itself so backtracking passes through.
            ident = torch.arange(n_labels, device=emis.device).expand(b, n_labels)
            back.append(torch.where(live, arg, ident))
    has_steps = x.step_mask[:, 0]
    return alpha, (torch.stack(back, dim=1) if semiring == "max" else None), has_steps


def log_partition(
    emissions: torch.Tensor,
    transitions: torch.Tensor,
    *,
    start: torch.Tensor | None = None,
    step_mask: torch.Tensor | None = None,
    label_mask: torch.Tensor | None = None,
    require_null: bool = True,
) -> torch.Tensor:
    """Exact log Z per sequence, ``(B,)`` (forward algorithm).

    With ``require_null=False`` the label mask may forbid label 0, e.g. to sum over the paths
    that stay inside given gold label sets (a constrained partition function); every real step
    must still allow at least one label. With transitions that do not change along the sequence (B, L, L) the
    forward algorithm and its gradient run as compiled loops (:class:`alignment_engine.crf_kernels.ChainLogPartition`,
    the values of :func:`chain_dp` up to float rounding); per-step transitions, a GPU or a Python without numba
    go through :func:`chain_dp`.
    """
    # imported on first use: numba and its cached loops take about 0.25 s to load, for processes that run a CRF only
    from alignment_engine.crf_kernels import ChainLogPartition, compiled_for

    if transitions.dim() == 3 and compiled_for(emissions):
        x = _check(emissions, transitions, start, step_mask, label_mask, require_null)
        emis = x.emissions.masked_fill(~x.label_mask, NEG_INF)
        return ChainLogPartition.apply(emis, x.transitions, x.start, x.step_mask)
    total, _ = chain_dp(emissions, transitions, semiring="logsumexp", start=start, step_mask=step_mask,
                        label_mask=label_mask, require_null=require_null)
    return total


def viterbi(
    emissions: torch.Tensor,
    transitions: torch.Tensor,
    *,
    start: torch.Tensor | None = None,
    step_mask: torch.Tensor | None = None,
    label_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Best label sequence per sequence: ``(scores (B,), labels (B, T) long)``.

    Labels at padded steps are 0.
    """
    alpha, back, has_steps = _run(emissions, transitions, "max", start, step_mask, label_mask)
    if back is None:  # pragma: no cover - _run("max") always returns backpointers
        raise RuntimeError("max semiring returned no backpointers")
    b, t, _ = emissions.shape
    best, cur = alpha.max(dim=1)
    score = torch.where(has_steps, best, torch.zeros_like(best))
    labels = torch.zeros((b, t), dtype=torch.long, device=emissions.device)
    for step in range(t - 1, -1, -1):
        labels[:, step] = cur
        cur = back[:, step].gather(1, cur[:, None]).squeeze(1)
    if step_mask is not None:
        labels = labels.masked_fill(~step_mask.to(torch.bool), 0)
    return score, labels


def path_score(
    emissions: torch.Tensor,
    transitions: torch.Tensor,
    labels: torch.Tensor,
    *,
    start: torch.Tensor | None = None,
    step_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Score of the given label sequences ``labels`` ``(B, T)`` long; ``(B,)``."""
    x = _check(emissions, transitions, start, step_mask, None)
    b, t, n_labels = x.emissions.shape
    if labels.shape != (b, t):
        raise ValueError(f"labels must be (B, T) = {(b, t)}, got shape {tuple(labels.shape)}")
    if t == 0:
        return x.emissions.new_zeros((b,))
    labels = labels.masked_fill(~x.step_mask, 0)
    m = x.step_mask.to(x.emissions.dtype)
    emit = x.emissions.gather(2, labels[:, :, None]).squeeze(2)  # (B, T)
    total = (emit * m).sum(1) + x.start.gather(1, labels[:, :1]).squeeze(1) * m[:, 0]
    if t > 1:
        prev, cur = labels[:, :-1], labels[:, 1:]
        if x.transitions.dim() == 4:
            tr = x.transitions[:, 1:]  # (B, T-1, L, L)
            rows = tr.gather(2, prev[:, :, None, None].expand(b, t - 1, 1, n_labels)).squeeze(2)
            trans = rows.gather(2, cur[:, :, None]).squeeze(2)
        else:
            flat = x.transitions.reshape(b, n_labels * n_labels)
            trans = flat.gather(1, prev * n_labels + cur)
        total = total + (trans * m[:, 1:]).sum(1)
    return total


def log_likelihood(
    emissions: torch.Tensor,
    transitions: torch.Tensor,
    labels: torch.Tensor,
    *,
    start: torch.Tensor | None = None,
    step_mask: torch.Tensor | None = None,
    label_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """``log P(labels)`` per sequence, ``(B,)``: path score minus exact log Z."""
    return path_score(emissions, transitions, labels, start=start, step_mask=step_mask) - log_partition(
        emissions, transitions, start=start, step_mask=step_mask, label_mask=label_mask
    )


def marginals(
    emissions: torch.Tensor,
    transitions: torch.Tensor,
    *,
    start: torch.Tensor | None = None,
    step_mask: torch.Tensor | None = None,
    label_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Exact posterior marginals ``P(a_t = l)``, ``(B, T, L)``, as the gradient of log Z.

    (d log Z / d emission[t, l] is the marginal probability; one backward pass replaces the
    explicit backward recursion.)  Padded steps get zeros.
    """
    with torch.enable_grad():
        emis = emissions.detach().clone().requires_grad_(True)
        logz = log_partition(emis, transitions.detach(), start=None if start is None else start.detach(),
                             step_mask=step_mask, label_mask=label_mask)
        (grad,) = torch.autograd.grad(logz.sum(), emis)
    if step_mask is not None:
        grad = grad * step_mask.to(grad.dtype)[:, :, None]
    return grad
