"""The semi-Markov CRF: torch forward = numpy forward (tested against brute force), gold likelihood, marginals."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from alignment_engine import semimarkov
from alignment_engine.semicrf import (
    NEG,
    _tensor_log_partition,
    _tensor_viterbi,
    cell_marginals,
    gold_options,
    log_partition,
    run_values,
    viterbi,
)
from alignment_engine.tests.test_semimarkov import _labellings, _score  # every labelling of a tiny sequence, a score


def _valid(span: np.ndarray) -> np.ndarray:
    m, n, width = span.shape
    ok = (np.arange(n)[:, None] + np.arange(1, width + 1)[None, :]) <= n
    return np.where(ok[None], span, NEG)


def test_torch_forward_matches_numpy_and_brute_force_batched() -> None:
    rng = np.random.default_rng(0)
    shapes = [(3, 3, 2), (2, 2, 2), (4, 3, 2)]
    t, n, width = 4, 3, 2
    spans = np.full((len(shapes), t, n, width), NEG)
    trans = np.zeros((len(shapes), n + 1, n))
    mask = np.zeros((len(shapes), t), dtype=bool)
    expected = []
    for b, (mm, nn_, _) in enumerate(shapes):
        s = rng.normal(size=(mm, nn_, width))
        tr = rng.normal(size=(nn_ + 1, nn_))
        spans[b, :mm, :nn_] = _valid(s)
        trans[b, : nn_ + 1, :nn_] = tr
        mask[b, :mm] = True
        brute = np.log(sum(np.exp(_score(lab, s, tr)) for lab in _labellings(mm, nn_, width)))
        assert np.isclose(semimarkov.log_partition(s, tr), brute)
        expected.append(brute)
    got = log_partition(torch.tensor(spans), torch.tensor(trans), torch.tensor(mask))
    assert np.allclose(got.numpy(), expected, atol=1e-6)


def test_restricted_forward_is_the_gold_score_and_gradient_gives_marginals() -> None:
    rng = np.random.default_rng(1)
    m, n, width = 3, 4, 3
    s = _valid(rng.normal(size=(m, n, width)))
    tr = rng.normal(size=(n + 1, n))
    gold = np.array([[0, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 1]])
    gs, gn = gold_options(gold, width)
    assert gs[0, 1, 1] and gs.sum() == 2 and gn.tolist() == [False, True, False]
    span_t = torch.tensor(s[None], requires_grad=True)
    restricted = torch.where(torch.tensor(gs[None]), span_t, torch.full_like(span_t, NEG))
    null = torch.tensor(np.where(gn, 0.0, NEG)[None])
    zg = log_partition(restricted, torch.tensor(tr[None]), torch.ones(1, m, dtype=torch.bool), null)
    assert np.isclose(float(zg.detach()), _score(((1, 2), None, (3, 1)), s, tr))
    z = log_partition(span_t, torch.tensor(tr[None]), torch.ones(1, m, dtype=torch.bool))
    (grad,) = torch.autograd.grad(z.sum(), span_t)
    labs = _labellings(m, n, width)
    w = np.array([np.exp(_score(lab, s, tr)) for lab in labs])
    w /= w.sum()
    brute = np.zeros((m, n))
    for p, lab in zip(w, labs, strict=True):
        for i, x in enumerate(lab):
            if x is not None:
                brute[i, x[0]: x[0] + x[1]] += p
    assert np.allclose(cell_marginals(grad[0].numpy()), brute, atol=1e-6)


def test_gold_options_of_long_and_split_runs() -> None:
    gs, gn = gold_options(np.array([[1, 1, 1, 1, 0, 1]]), 3)
    assert gs[0, 0, 2] and gs[0, 1, 2] and gs[0, 5, 0] and gs.sum() == 3 and not gn[0]


def test_run_values_score_a_run_as_a_whole() -> None:
    rows = ["Der Hund bellt laut, während die Katze schläft."]
    cols = ["Der Hund bellt laut.", "Die Katze schläft.", "Es regnet."]
    v = run_values(rows, cols, 2)
    assert v.shape == (1, 3, 2, 3)
    assert v[0, 0, 1, 0] > max(v[0, 0, 0, 0], v[0, 1, 0, 0])  # the pair's concatenation beats either part
    assert np.isclose(v[0, 0, 1, 2], 1.0)  # every word of the run is in the row sentence
    assert v[0, 2, 1].tolist() == [0.0, 0.0, 0.0]  # runs past the end


def _run_values_one_vector_per_run(rows: list[str], cols: list[str], width: int) -> np.ndarray:
    """The earlier implementation of run_values (one summed vector per run, scipy.sparse): the reference."""
    import scipy.sparse as sp

    from alignment_engine.similarity import _bags_from_codes, _char_codes, _pair_bags, _word_tuple
    from alignment_engine.span_emission import _l2, _sets_matrix, runs

    m, n = len(rows), len(cols)
    out = np.zeros((m, n, width, 3), dtype=np.float32)
    run_list = runs(n, width)
    inc = _sets_matrix([list(range(a, a + w)) for a, w in run_list], n)
    cr, cc = _bags_from_codes([_char_codes(t) for t in rows], [_char_codes(t) for t in cols])
    df = np.asarray((sp.vstack([cr, cc]) > 0).sum(axis=0)).ravel().astype(np.float64)
    idf = sp.diags(np.log((1.0 + m + n) / (1.0 + df)) + 1.0)
    cos = np.asarray((_l2(sp.csr_matrix(cr @ idf)) @ _l2(sp.csr_matrix(inc[:, :n] @ sp.csr_matrix(cc @ idf))).T).todense())
    br, bc = _pair_bags([_word_tuple(t) for t in rows], [_word_tuple(t) for t in cols], binary=True)
    union = sp.csr_matrix((inc[:, :n] @ bc) > 0, dtype=np.float64)
    inter = np.asarray((br @ union.T).todense())
    r_size = np.maximum(np.asarray(br.sum(axis=1)).ravel(), 1.0)
    u_size = np.maximum(np.asarray(union.sum(axis=1)).ravel(), 1.0)
    for r, (a, w) in enumerate(run_list):
        out[:, a, w - 1] = np.stack([cos[:, r], inter[:, r] / r_size, inter[:, r] / u_size[r]], axis=1)
    return out


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n_rows,n_cols,width", [(5, 7, 3), (4, 2, 6), (1, 1, 3), (9, 12, 6)])
def test_run_values_equal_one_summed_vector_per_run(n_rows: int, n_cols: int, width: int, sparse: bool,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The prefix-sum run values equal a vector built for every run (sentences with repeated, missing and
    no words, a run width beyond the document), from dense bags and from the sparse ones of documents
    above ``similarity.DENSE_LIMIT``."""
    if sparse:
        from alignment_engine import similarity

        monkeypatch.setattr(similarity, "DENSE_LIMIT", 0)
        assert similarity._dense_bags(["Der Hund."]) == (None, None)  # the sparse path is the one tested
    rng = np.random.default_rng(n_rows * 100 + n_cols)
    vocab = ["Hund", "Katze", "bellt", "schläft", "laut", "der", "die", "und", "Regen", "fällt", "heute"]
    def sentence() -> str:
        return " ".join(rng.choice(vocab, size=int(rng.integers(0, 7)))) + "."
    rows, cols = [sentence() for _ in range(n_rows)], [sentence() for _ in range(n_cols)]
    cols[0] = rows[0]
    np.testing.assert_allclose(run_values(rows, cols, width), _run_values_one_vector_per_run(rows, cols, width),
                               atol=1e-6)


def test_gold_options_of_partial_labels_open_unlabelled_spans() -> None:
    gold = np.array([[0, 1, 0], [0, 0, 0], [0, 0, 0]])
    unknown = np.array([[True, False, False], [True, True, False], [False, False, False]])
    gs, gn = gold_options(gold, 2, unknown)
    assert gs[0].sum() == 1 and gs[0, 1, 0] and not gn[0]  # a labelled positive: its run only
    assert gs[1, 0, 0] and gs[1, 1, 0] and gs[1, 0, 1] and gs[1].sum() == 3 and gn[1]  # null or unlabelled spans
    assert gs[2].sum() == 0 and gn[2]


@pytest.mark.parametrize("ties", [False, True])
def test_batched_viterbi_gives_the_numpy_labellings(ties: bool) -> None:
    """The batched torch Viterbi against :func:`semimarkov.viterbi` per sequence, on padded batches of
    different shapes (widths wider than a row included); with integer scores ties are frequent and must
    break the same way."""
    rng = np.random.default_rng(1)
    for _ in range(20):
        width = int(rng.integers(1, 4))
        shapes = [(int(rng.integers(1, 7)), int(rng.integers(1, 6))) for _ in range(int(rng.integers(1, 5)))]
        t, n = max(s[0] for s in shapes), max(s[1] for s in shapes)
        spans = np.full((len(shapes), t, n, width), NEG)
        trans = np.zeros((len(shapes), n + 1, n))
        mask = np.zeros((len(shapes), t), dtype=bool)
        singles = []
        for b, (mm, nn_) in enumerate(shapes):
            s = rng.integers(-2, 3, size=(mm, nn_, width)).astype(float) if ties else rng.normal(size=(mm, nn_, width))
            tr = rng.integers(-1, 2, size=(nn_ + 1, nn_)).astype(float) if ties else rng.normal(size=(nn_ + 1, nn_))
            spans[b, :mm, :nn_] = _valid(s)
            trans[b, : nn_ + 1, :nn_] = tr
            mask[b, :mm] = True
            singles.append(semimarkov.viterbi(s, tr))
        got = viterbi(torch.tensor(spans), torch.tensor(trans), torch.tensor(mask))
        for b, ((mm, nn_), (labels, best)) in enumerate(zip(shapes, singles, strict=True)):
            want = np.zeros((mm, nn_), dtype=bool)
            for i, lab in enumerate(labels):
                if lab is not None:
                    want[i, lab[0]: lab[0] + lab[1]] = True
            assert (got[b, :mm, :nn_] == want).all()
            assert not got[b, mm:].any() and not got[b, :, nn_:].any()
            assert np.isclose(_score(tuple(labels), spans[b, :mm, :nn_], trans[b, : nn_ + 1, :nn_]), best)


def test_batched_decoding_equals_one_document_at_a_time() -> None:
    from alignment_engine.crf_aligner import prepare_docs
    from alignment_engine.crf_config import CRFConfig
    from alignment_engine.semicrf import BiSemiCRF, build_span_sequences, decode_semicrf
    from alignment_engine.types import DocPair

    pairs = [
        DocPair("a", [["The cat sat on the mat today.", "It was very happy there."], ["Dogs bark loudly at night."]],
                [["The cat sat on the mat.", "It was happy."], ["Dogs bark at night."]]),
        DocPair("b", [["Rain fell over the city for days.", "People stayed inside their houses."]],
                [["It rained for days.", "People stayed inside.", "New sentence without source."]]),
    ]
    cfg = CRFConfig().with_options(span_emission_widths=(3, 2))
    docs = prepare_docs(pairs, cfg, None)
    n_feat = docs[0].lex.shape[-1]
    torch.manual_seed(0)
    model = BiSemiCRF(n_feat, cfg).eval()
    mean, scale = np.zeros(n_feat, dtype=np.float32), np.ones(n_feat, dtype=np.float32)
    seqs = {d: build_span_sequences(docs, d, cfg, mean, scale) for d in ("s2c", "c2s")}
    together = decode_semicrf(model, seqs, docs, batch_size=8)
    alone = decode_semicrf(model, seqs, docs, batch_size=1)
    for x, y in zip(together, alone, strict=True):
        assert np.allclose(x.forward_marginals, y.forward_marginals, atol=1e-5)
        assert np.allclose(x.reverse_marginals, y.reverse_marginals, atol=1e-5)
        assert (x.forward == y.forward).all() and (x.reverse == y.reverse).all()
        assert x.forward_marginals.max() > 0 and (x.forward_marginals <= 1).all()


def test_forward_with_runs_wider_than_the_row_matches_brute_force() -> None:
    """Widths above the number of labels (no span of that width fits) take the branch that shifts nothing in."""
    rng = np.random.default_rng(4)
    for m, n, width in ((3, 2, 4), (2, 1, 3), (3, 3, 3)):
        s = rng.normal(size=(m, n, width))
        tr = rng.normal(size=(n + 1, n))
        brute = np.log(sum(np.exp(_score(lab, s, tr)) for lab in _labellings(m, n, width)))
        got = log_partition(torch.tensor(_valid(s)[None]), torch.tensor(tr[None]), torch.ones(1, m, dtype=torch.bool))
        assert np.isclose(float(got[0]), brute, atol=1e-9)


def _random_batch(seed: int, sizes: list[tuple[int, int]], width: int, forbid: float = 0.0) -> tuple:
    """A padded batch of random span scores (NEG past each sequence's end and, with ``forbid``, on that share of
    the spans, as the gold restriction does), transitions, step mask and null scores (some NEG), all float64."""
    rng = np.random.default_rng(seed)
    t, n = max(m for m, _ in sizes), max(k for _, k in sizes)
    span = np.full((len(sizes), t, n, width), NEG)
    trans = rng.normal(size=(len(sizes), n + 1, n)) * 2
    mask = np.zeros((len(sizes), t), dtype=bool)
    null = rng.normal(size=(len(sizes), t))
    for b, (m, k) in enumerate(sizes):
        s = _valid(rng.normal(size=(m, k, width)) * 3)
        if forbid:
            s = np.where(rng.random(s.shape) < forbid, NEG, s)
        span[b, :m, :k] = s
        mask[b, :m] = True
    null[rng.random(null.shape) < 0.2] = NEG
    return (torch.tensor(span, requires_grad=True), torch.tensor(trans, requires_grad=True), torch.tensor(mask),
            torch.tensor(null, requires_grad=True))


@pytest.mark.parametrize("forbid", [0.0, 0.6])
def test_compiled_forward_and_gradients_equal_the_tensor_formulation(forbid: float) -> None:
    """log Z and its gradients in the span scores, the transitions and the null scores (forward-backward, compiled)
    equal autograd through the per-step tensor operations (the path off the CPU), on padded batches with masked
    steps, forbidden spans and forbidden nulls; both Viterbi paths give the same labellings."""
    for seed, width in ((0, 3), (1, 6), (2, 1)):
        inputs = _random_batch(seed, [(7, 5), (3, 9), (9, 2), (1, 1)], width, forbid)
        grads = []
        values = []
        for fn in (log_partition, _tensor_log_partition):
            z = fn(*inputs)
            values.append(z.detach())
            weights = torch.linspace(0.5, 2.0, z.shape[0], dtype=z.dtype)  # an upstream gradient other than ones
            grads.append(torch.autograd.grad((z * weights).sum(), [inputs[0], inputs[1], inputs[3]]))
        assert torch.isfinite(values[0]).all()
        # a sequence left no labelling by the forbidden options scores about NEG either way (its gradients are 0)
        possible = values[1] > NEG / 2
        assert torch.equal(possible, values[0] > NEG / 2)
        assert torch.allclose(values[0][possible], values[1][possible], rtol=1e-12, atol=1e-9)
        for mine, ref in zip(*grads, strict=True):
            assert torch.allclose(mine[possible], ref[possible], rtol=1e-9, atol=1e-12)
        if not forbid:  # (a forbidden-only sequence has no best labelling to compare)
            span, trans, mask = inputs[0].detach(), inputs[1].detach(), inputs[2]
            assert np.array_equal(viterbi(span, trans, mask), _tensor_viterbi(span, trans, mask))


def test_compiled_gradient_passes_gradcheck() -> None:
    span, trans, mask, null = _random_batch(5, [(4, 3), (2, 4)], 3)
    assert torch.autograd.gradcheck(lambda s, tr, nl: log_partition(s, tr, mask, nl), (span, trans, null))


def _dense_scores(scorer, batch) -> tuple[torch.Tensor, torch.Tensor]:
    """The scorer's formulation before it was made fast: the emission network on every padded cell, the span
    layer on the concatenated window statistics, runs and width one-hot, the transition network on every
    (previous end, start) pair's features."""
    from alignment_engine.features import start_features, transition_features
    from alignment_engine.semicrf import _window

    feats = batch.feats
    b, t, n, _ = feats.shape
    e = torch.where(batch.cell_mask, scorer.emit(feats).squeeze(-1), torch.zeros(b, t, n, dtype=feats.dtype))
    row_max = feats.masked_fill(~batch.cell_mask[..., None], -1e4).max(dim=2).values
    row_max = torch.where(batch.cell_mask.any(dim=2, keepdim=True), row_max, torch.zeros_like(row_max))
    onehot = torch.eye(scorer.width, dtype=feats.dtype).expand(b, t, n, scorer.width, scorer.width)
    x = torch.cat([_window(e, scorer.width, "mean")[..., None], _window(e, scorer.width, "max")[..., None],
                   _window(e, scorer.width, "min")[..., None], batch.runs, onehot], dim=-1)
    span = scorer.span(x).squeeze(-1) - scorer.null(row_max)[..., None]
    span = torch.where(batch.valid, span, torch.full_like(span, NEG))
    trans = feats.new_zeros((b, n + 1, n))
    for k, nl in enumerate(batch.n_labels):
        trans[k, 1: nl + 1, :nl] = scorer.trans(transition_features(nl + 1)[1:, 1:, :]).squeeze(-1)
        trans[k, 0, :nl] = scorer.start(start_features(nl + 1)[1:]).squeeze(-1)
    return span, trans


def _perturbed_model_and_sequences(seed: int) -> tuple:
    """Both directions' span sequences of five synthetic documents (several sizes) and a semi-Markov CRF whose weights
    are moved away from the initial span layer (mostly 0)."""
    from alignment_engine.crf_config import CRFConfig
    from alignment_engine.semicrf import BiSemiCRF, build_span_sequences
    from alignment_engine.tests.test_training import _prepared, _synthetic

    cfg = CRFConfig()
    docs, mean, scale, mats = _prepared(*_synthetic(5), cfg)
    torch.manual_seed(seed)
    model = BiSemiCRF(len(mean), cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model, {d: build_span_sequences(docs, d, cfg, mean, scale, mats) for d in ("s2c", "c2s")}


def test_span_scorer_equals_its_dense_formulation_with_gradients() -> None:
    """The scorer skips padded cells, never builds the span layer's input and runs the transition network on one
    row per jump: the same scores and weight gradients as the dense formulation, up to float rounding."""
    from alignment_engine.semicrf import batch_log_likelihood, collate_spans

    model, span_seqs = _perturbed_model_and_sequences(2)
    for d in ("s2c", "c2s"):
        scorer = model.direction(d)
        seqs = span_seqs[d]
        batch = collate_spans(seqs)  # sequences of several sizes: padding in both dimensions
        assert len({s.feats.shape[:2] for s in seqs}) > 1
        fast, dense = scorer(batch), _dense_scores(scorer, batch)
        for x, y in zip(fast, dense, strict=True):
            assert x.shape == y.shape and torch.allclose(x, y, rtol=1e-12, atol=1e-12)
        grads = []
        for how in (lambda sc, bt: sc(bt), _dense_scores):
            scorer.zero_grad()
            span, trans = how(scorer, batch)
            # the training loss through the spans and transitions as the likelihood reads them
            z = log_partition(span, trans, batch.step_mask)
            z.sum().backward()
            grads.append([p.grad.clone() for p in scorer.parameters()])
        for x, y in zip(*grads, strict=True):
            assert torch.allclose(x, y, rtol=1e-9, atol=1e-12)
        assert torch.isfinite(batch_log_likelihood(scorer, batch)).all()


def test_the_likelihood_runs_both_forward_algorithms_in_one_batch_with_the_same_bits() -> None:
    """batch_log_likelihood runs log Z and the gold-restricted log Z as one batch of twice the sequences: the same
    values and weight gradients, bit for bit, as the two calls one after the other (each sequence's steps are
    computed alone whatever else shares the batch)."""
    from alignment_engine.semicrf import batch_log_likelihood, collate_spans

    model, span_seqs = _perturbed_model_and_sequences(3)
    for d in ("s2c", "c2s"):
        scorer = model.direction(d)
        batch = collate_spans(span_seqs[d])
        results = []
        for together in (True, False):
            scorer.zero_grad()
            if together:
                ll = batch_log_likelihood(scorer, batch)
            else:
                span, trans = scorer(batch)
                gold_span = torch.where(batch.gold_span, span, torch.full_like(span, NEG))
                gold_null = torch.where(batch.gold_null, torch.zeros_like(span[..., 0, 0]),
                                        torch.full_like(span[..., 0, 0], NEG))
                ll = log_partition(gold_span, trans, batch.step_mask, gold_null) - \
                    log_partition(span, trans, batch.step_mask)
            ll.sum().backward()
            results.append((ll.detach(), [p.grad.clone() for p in scorer.parameters()]))
        (ll_a, g_a), (ll_b, g_b) = results
        assert (ll_a < 0).all() and torch.equal(ll_a, ll_b)
        assert all(torch.equal(x, y) for x, y in zip(g_a, g_b, strict=True))


def test_the_compiled_loops_run_on_the_cpu_only_and_the_tensor_formulations_elsewhere(monkeypatch) -> None:
    """numba's loops take CPU arrays; a tensor elsewhere (a GPU, here the meta device) goes through the tensor
    formulations, as does every tensor in a Python without numba: both CRFs' log Z dispatch on it, with equal values."""
    from alignment_engine import crf, crf_kernels

    assert crf_kernels.AVAILABLE  # numba is in requirements.txt
    assert crf_kernels.compiled_for(torch.zeros(1))
    assert not crf_kernels.compiled_for(torch.zeros(1, device="meta"))
    span, trans, mask, null = _random_batch(7, [(4, 3), (2, 2)], 2)
    emis = torch.randn((2, 4, 3), dtype=torch.float64, requires_grad=True)
    results = []
    for available in (True, False):
        monkeypatch.setattr(crf_kernels, "AVAILABLE", available)
        z_semi, z_chain = log_partition(span, trans, mask, null), crf.log_partition(emis, trans[:, 1:], step_mask=mask)
        results.append((z_semi.detach(), z_chain.detach(), viterbi(span.detach(), trans.detach(), mask)))
        names = {type(z_semi.grad_fn).__name__, type(z_chain.grad_fn).__name__}
        assert (names == {"LogPartitionBackward", "ChainLogPartitionBackward"}) == available, names
    (semi_a, chain_a, vit_a), (semi_b, chain_b, vit_b) = results
    assert torch.allclose(semi_a, semi_b, rtol=1e-12) and torch.allclose(chain_a, chain_b, rtol=1e-12)
    assert np.array_equal(vit_a, vit_b)
