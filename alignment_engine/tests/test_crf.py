"""The chain DP against brute-force enumeration of every label sequence."""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from alignment_engine import crf


@st.composite
def batches(draw):
    b = draw(st.integers(1, 3))
    t_max = draw(st.integers(1, 4))
    l_max = draw(st.integers(1, 4))
    lengths = [draw(st.integers(1, t_max)) for _ in range(b)]
    n_labels = [draw(st.integers(1, l_max)) for _ in range(b)]
    seed = draw(st.integers(0, 10_000))
    per_step = draw(st.booleans())
    return b, t_max, l_max, lengths, n_labels, seed, per_step


def random_problem(spec):  # type: ignore[no-untyped-def]
    """Seeded emissions, transitions (per step or shared), start scores and step mask for ``spec``;
    the generator is returned so a test can draw more from the same stream."""
    b, t_max, l_max, lengths, _n_labels, seed, per_step = spec
    g = torch.Generator().manual_seed(seed)
    emis = torch.randn((b, t_max, l_max), generator=g, dtype=torch.float64) * 2
    trans_shape = (b, t_max, l_max, l_max) if per_step else (b, l_max, l_max)
    trans = torch.randn(trans_shape, generator=g, dtype=torch.float64)
    start = torch.randn((b, l_max), generator=g, dtype=torch.float64)
    step_mask = torch.tensor([[t < n for t in range(t_max)] for n in lengths])
    return g, emis, trans, start, step_mask


@settings(max_examples=60, deadline=None)
@given(batches())
def test_viterbi_and_log_z_match_brute_force(spec):
    b, t_max, l_max, lengths, n_labels, seed, per_step = spec
    g, emis, trans, start, step_mask = random_problem(spec)
    label_mask = torch.tensor([[lab < k for lab in range(l_max)] for k in n_labels])
    logz = crf.log_partition(emis, trans, start=start, step_mask=step_mask, label_mask=label_mask)
    best, paths = crf.viterbi(emis, trans, start=start, step_mask=step_mask, label_mask=label_mask)
    for i in range(b):
        tr = trans[i]
        want_z, want_best, want_path = _brute_seq(emis[i], tr, start[i], lengths[i], n_labels[i], per_step)
        assert float(logz[i]) == pytest.approx(want_z, abs=1e-6)
        assert float(best[i]) == pytest.approx(want_best, abs=1e-6)
        got_path = tuple(int(x) for x in paths[i, : lengths[i]])
        assert all(int(x) == 0 for x in paths[i, lengths[i]:])
        # the decoded path must reach the best score (ties may pick another optimum)
        got_score = crf.path_score(emis[i : i + 1], trans[i : i + 1], paths[i : i + 1], start=start[i : i + 1],
                                   step_mask=step_mask[i : i + 1])
        assert float(got_score[0]) == pytest.approx(want_best, abs=1e-6)
        assert all(lab < n_labels[i] for lab in got_path)
        del want_path


@settings(max_examples=40, deadline=None)
@given(batches())
def test_viterbi_without_a_gradient_decodes_exactly_as_with_one(spec):
    """Under no_grad (how the aligner decodes) the max steps sum into one reused buffer (``crf._run``); the scores and paths are
    those of the grad-enabled path, bit for bit."""
    b, t_max, l_max, lengths, n_labels, seed, per_step = spec
    _, emis, trans, start, step_mask = random_problem(spec)
    label_mask = torch.tensor([[lab < k for lab in range(l_max)] for k in n_labels])
    kw = {"start": start, "step_mask": step_mask, "label_mask": label_mask}
    best, paths = crf.viterbi(emis, trans, **kw)
    with torch.no_grad():
        best_ng, paths_ng = crf.viterbi(emis, trans, **kw)
    assert torch.equal(best, best_ng) and torch.equal(paths, paths_ng)


def _brute_seq(emis, trans, start, n_steps, n_labels, per_step):
    scores = []
    for path in itertools.product(range(n_labels), repeat=n_steps):
        s = float(start[path[0]]) + sum(float(emis[t, a]) for t, a in enumerate(path))
        for t in range(1, n_steps):
            s += float(trans[t, path[t - 1], path[t]] if per_step else trans[path[t - 1], path[t]])
        scores.append((s, path))
    logz = float(torch.logsumexp(torch.tensor([s for s, _ in scores], dtype=torch.float64), 0))
    best = max(scores, key=lambda x: x[0])
    return logz, best[0], best[1]


def _masked_path_scores(emis, trans, allowed):
    """Scores of every label sequence of batch row 0 whose labels are all ``allowed`` at their step."""
    _, n_steps, n_labels = emis.shape
    scores = []
    for path in itertools.product(range(n_labels), repeat=n_steps):
        if all(bool(allowed[0, t, a]) for t, a in enumerate(path)):
            s = sum(float(emis[0, t, a]) for t, a in enumerate(path))
            scores.append(s + sum(float(trans[0, path[t - 1], path[t]]) for t in range(1, n_steps)))
    return scores


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 10_000))
def test_per_step_label_mask_matches_brute_force(n_steps, n_labels, seed):
    g = torch.Generator().manual_seed(seed)
    emis = torch.randn((1, n_steps, n_labels), generator=g, dtype=torch.float64)
    trans = torch.randn((1, n_labels, n_labels), generator=g, dtype=torch.float64)
    allowed = torch.rand((1, n_steps, n_labels), generator=g) > 0.4
    allowed[..., 0] = True
    scores = _masked_path_scores(emis, trans, allowed)
    logz = crf.log_partition(emis, trans, label_mask=allowed)
    best, best_path = crf.viterbi(emis, trans, label_mask=allowed)
    assert float(logz[0]) == pytest.approx(float(torch.logsumexp(torch.tensor(scores), 0)), abs=1e-6)
    assert float(best[0]) == pytest.approx(max(scores), abs=1e-6)
    assert all(bool(allowed[0, t, int(a)]) for t, a in enumerate(best_path[0]))


def test_marginals_sum_to_one_and_likelihood_is_a_log_probability():
    g = torch.Generator().manual_seed(0)
    emis = torch.randn((2, 5, 4), generator=g)
    trans = torch.randn((2, 4, 4), generator=g)
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    marg = crf.marginals(emis, trans, step_mask=mask)
    assert torch.allclose(marg.sum(-1), mask.float(), atol=1e-5)
    ll = crf.log_likelihood(emis, trans, torch.zeros((2, 5), dtype=torch.long), step_mask=mask)
    assert bool((ll < 0).all())


@pytest.mark.parametrize("n_steps", [1, 2, 1000])
def test_no_fixed_size_tables(n_steps):
    emis = torch.zeros((1, n_steps, 3))
    emis[0, :, 1] = 1.0
    trans = torch.zeros((1, 3, 3))
    score, path = crf.viterbi(emis, trans)
    assert path.shape == (1, n_steps)
    assert bool((path == 1).all())
    assert float(score[0]) == pytest.approx(n_steps)
    logz = crf.log_partition(emis, trans)
    assert float(logz[0]) == pytest.approx(n_steps * float(torch.log(torch.tensor(2.0) + torch.e)), rel=1e-4)


def test_bad_shapes_raise_value_error_naming_the_shape():
    with pytest.raises(ValueError, match=r"emissions must be \(B, T, L\)"):
        crf.log_partition(torch.zeros((2, 3)), torch.zeros((2, 3, 3)))
    with pytest.raises(ValueError, match=r"transitions must be"):
        crf.viterbi(torch.zeros((1, 2, 3)), torch.zeros((1, 2, 2)))
    with pytest.raises(ValueError, match="label 0"):
        crf.log_partition(torch.zeros((1, 2, 3)), torch.zeros((1, 3, 3)), label_mask=torch.tensor([[False, True, True]]))
    with pytest.raises(ValueError, match="semiring"):
        crf.chain_dp(torch.zeros((1, 2, 3)), torch.zeros((1, 3, 3)), semiring="sum")


def test_gradient_of_log_likelihood_is_finite_with_masked_labels():
    emis = torch.randn((1, 3, 4), requires_grad=True)
    trans = torch.randn((1, 4, 4), requires_grad=True)
    ll = crf.log_likelihood(emis, trans, torch.tensor([[1, 0, 1]]), label_mask=torch.tensor([[True, True, False, False]]))
    ll.sum().backward()
    assert emis.grad is not None and trans.grad is not None
    assert torch.isfinite(emis.grad).all() and torch.isfinite(trans.grad).all()


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(2, 4), st.integers(0, 10_000))
def test_constrained_log_z_sums_paths_inside_gold_sets(n_steps, n_labels, seed):
    """log Z with label 0 forbidden (gold label sets of n:1 merges) matches enumeration."""
    g = torch.Generator().manual_seed(seed)
    emis = torch.randn((1, n_steps, n_labels), generator=g, dtype=torch.float64)
    trans = torch.randn((1, n_labels, n_labels), generator=g, dtype=torch.float64)
    sets = torch.rand((1, n_steps, n_labels), generator=g) > 0.5
    sets[0, :, 1] = True  # every step keeps at least one label
    total = _masked_path_scores(emis, trans, sets)
    got = crf.log_partition(emis, trans, label_mask=sets, require_null=False)
    assert float(got[0]) == pytest.approx(float(torch.logsumexp(torch.tensor(total), 0)), abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(batches(), st.booleans())
def test_marginals_match_brute_force(spec, with_label_mask):
    """P(a_t = l) from the gradient of log Z equals the enumerated posterior: sum over every label
    sequence with a_t = l of exp(score) / Z, with start scores, padded steps, per-sequence label counts,
    per-step transitions and (optionally) per-step label masks."""
    b, t_max, l_max, lengths, n_labels, seed, per_step = spec
    g, emis, trans, start, step_mask = random_problem(spec)
    allowed = torch.tensor([[[lab < k for lab in range(l_max)] for _ in range(t_max)] for k in n_labels])
    if with_label_mask:
        allowed &= torch.rand((b, t_max, l_max), generator=g) > 0.3
        allowed[..., 0] = True
    marg = crf.marginals(emis, trans, start=start, step_mask=step_mask, label_mask=allowed)
    for i in range(b):
        want = torch.zeros((t_max, l_max), dtype=torch.float64)
        weights = []
        for path in itertools.product(range(n_labels[i]), repeat=lengths[i]):
            if not all(bool(allowed[i, t, a]) for t, a in enumerate(path)):
                continue
            s = float(start[i, path[0]]) + sum(float(emis[i, t, a]) for t, a in enumerate(path))
            for t in range(1, lengths[i]):
                s += float(trans[i, t, path[t - 1], path[t]] if per_step else trans[i, path[t - 1], path[t]])
            weights.append((s, path))
        logz = torch.logsumexp(torch.tensor([s for s, _ in weights], dtype=torch.float64), 0)
        for s, path in weights:
            p = float(torch.exp(torch.tensor(s, dtype=torch.float64) - logz))
            for t, a in enumerate(path):
                want[t, a] += p
        torch.testing.assert_close(marg[i], want, atol=1e-6, rtol=1e-6)


def test_logsumexp_step_equals_the_broadcast_logsumexp_with_its_gradients():
    """The matrix-product step of the forward algorithm gives logsumexp(alpha[:, :, None] + trans, dim=1)
    and the same gradients, with forbidden labels (NEG_INF) and a column spread over 80 nats."""
    g = torch.Generator().manual_seed(3)
    b, p, n = 4, 7, 6
    alpha = (torch.randn(b, p, generator=g) * 20).requires_grad_(True)
    with torch.no_grad():
        alpha[0, 2:] = crf.NEG_INF
    trans = torch.randn(b, p, n, generator=g) * 10
    with torch.no_grad():
        trans[:, 0, 1] = 40.0
        trans[:, 1, 1] = -40.0
    trans.requires_grad_(True)
    want = torch.logsumexp(alpha[:, :, None] + trans, dim=1)
    got = crf.logsumexp_step(alpha, *crf.exp_transitions(trans))
    assert got.dtype == alpha.dtype and got.shape == (b, n)
    assert torch.allclose(got, want, atol=1e-4, rtol=1e-5)
    weights = torch.randn(b, n, generator=g)
    ga_want, gt_want = torch.autograd.grad((want * weights).sum(), (alpha, trans))
    ga_got, gt_got = torch.autograd.grad((got * weights).sum(), (alpha, trans))
    assert torch.allclose(ga_got, ga_want, atol=1e-5) and torch.allclose(gt_got, gt_want, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(batches(), st.booleans())
def test_compiled_log_z_and_gradients_equal_the_per_step_tensor_operations(spec, gold_sets):  # type: ignore[no-untyped-def]
    """log_partition's compiled forward-backward (time-invariant transitions) against chain_dp's per-step tensor
    operations differentiated by autograd: values and the gradients in emissions, transitions and start, with
    padded steps, unused labels and (``gold_sets``) the constrained form that may forbid label 0."""
    b, t_max, l_max, lengths, n_labels, seed, _ = spec
    g, emis, trans, start, step_mask = random_problem((*spec[:-1], False))
    label_mask = torch.tensor([[lab < k for lab in range(l_max)] for k in n_labels])[:, None, :].expand(b, t_max, l_max)
    if gold_sets:  # a random subset of the allowed labels at every step, label 0 where it would be empty
        label_mask = label_mask & (torch.rand((b, t_max, l_max), generator=g) < 0.5)
        label_mask = label_mask | (~label_mask.any(dim=2, keepdim=True) & (torch.arange(l_max) == 0))
    inputs = [x.clone().requires_grad_(True) for x in (emis, trans, start)]
    weights = torch.linspace(0.5, 2.0, b, dtype=torch.float64)
    results = []
    for fn in (crf.log_partition, lambda *a, **k: crf.chain_dp(*a, semiring="logsumexp", **k)[0]):
        z = fn(inputs[0], inputs[1], start=inputs[2], step_mask=step_mask, label_mask=label_mask,
               require_null=not gold_sets)
        grads = torch.autograd.grad((z * weights).sum(), inputs, allow_unused=True)  # one step: no transition
        results.append((z.detach(), [torch.zeros_like(x) if d is None else d for x, d in zip(inputs, grads, strict=True)]))
    (z_new, g_new), (z_ref, g_ref) = results
    assert torch.allclose(z_new, z_ref, rtol=1e-12, atol=1e-10)
    for mine, ref in zip(g_new, g_ref, strict=True):
        assert torch.allclose(mine, ref, rtol=1e-9, atol=1e-12)


def test_compiled_chain_gradient_passes_gradcheck() -> None:
    g = torch.Generator().manual_seed(3)
    emis, trans, start = (torch.randn(shape, generator=g, dtype=torch.float64, requires_grad=True)
                          for shape in ((3, 5, 4), (3, 4, 4), (3, 4)))
    mask = torch.tensor([[True] * 5, [True] * 2 + [False] * 3, [False] * 5])
    assert torch.autograd.gradcheck(lambda e, tr, s: crf.log_partition(e, tr, start=s, step_mask=mask), (emis, trans, start))


@pytest.mark.parametrize("all_real", [True, False])
def test_masked_rows_and_step_maxima_without_copies_equal_the_masked_forms(all_real: bool) -> None:
    """With every cell real (a batch of one unpadded sequence) the cells' rows are a view of the features and the
    steps' maxima skip the masked copy (Round 26): the same values as the masked forms."""
    gen = torch.Generator().manual_seed(3)
    feats = torch.randn(2, 4, 5, 3, generator=gen, dtype=torch.float64) * 10
    cells = torch.ones(2, 4, 5, dtype=torch.bool)
    if not all_real:
        cells[1, 2:] = False
        cells[0, 1, 3:] = False
    rows = crf.masked_rows(feats, cells)
    assert torch.equal(rows, feats[cells])
    assert (rows.data_ptr() == feats.data_ptr()) == all_real
    masked = feats.masked_fill(~cells[..., None], -1e4).max(dim=2).values
    want = torch.where(cells.any(dim=2, keepdim=True), masked, torch.zeros_like(masked))
    assert torch.equal(crf.step_maxima(feats, cells), want)
