"""The learned decoder's pieces: candidate cells, cell and paragraph features, group closure."""

from __future__ import annotations

import numpy as np

from alignment_engine.paragraph_model import PARAGRAPH_FEATURES, cell_paragraph_values, paragraph_features
from alignment_engine.stacking import DIRECTIONAL, _rank, _shift, candidates, cell_feature_names, cell_features, closure


def test_closure_completes_m_to_n_groups_only():
    pred = np.zeros((5, 5), dtype=bool)
    pred[0, 0] = True  # 1:1 stays
    pred[1, 1] = pred[2, 1] = True  # a split (1 complex, 2 simple) stays as it is
    pred[3, 2] = pred[3, 3] = pred[4, 3] = True  # an m:n group missing (4, 2)
    got = closure(pred)
    want = pred.copy()
    want[4, 2] = True
    np.testing.assert_array_equal(got, want)
    assert not closure(np.zeros((0, 3), dtype=bool)).size
    np.testing.assert_array_equal(closure(np.zeros((2, 2), dtype=bool)), np.zeros((2, 2), dtype=bool))


def test_candidates_and_neighbour_features():
    mf = np.array([[0.9, 0.0], [0.5, 0.0005]], dtype=np.float32)
    mr = np.array([[0.8, 0.0], [0.0, 0.0]], dtype=np.float32)
    vf = np.array([[True, False], [True, False]])
    vr = np.array([[True, False], [False, False]])
    mask = candidates(mf, mr, vf, vr)
    assert mask.tolist() == [[True, False], [True, False]]
    lex = np.zeros((2, 2, 3), dtype=np.float32)
    para = np.array([[0.7, 0.2], [0.1, 0.4]])
    feats = cell_features(mf, mr, vf, vr, lex, para)
    names = cell_feature_names(3, True)
    assert feats.shape == (2, 2, len(names)) and len(names) == len(DIRECTIONAL) + 3 + 2
    col = {n: i for i, n in enumerate(names)}
    # the forward marginal of the next simple sentence in the same column (the other part of a split)
    assert feats[0, 0, col["fwd_next_simple"]] == np.float32(0.5)
    assert feats[1, 0, col["fwd_prev_simple"]] == np.float32(0.9)
    assert feats[1, 0, col["vit_fwd_prev_simple"]] == 1.0
    assert feats[0, 0, col["simple_mass"]] == np.float32(0.9)
    assert feats[0, 1, col["para_gap"]] == np.float32(0.2 - 0.7)
    assert cell_features(mf, mr, vf, vr, lex, None).shape[-1] == len(DIRECTIONAL) + 3


def test_paragraph_features_sum_marginals_per_paragraph_pair():
    simple = [["a", "b"], ["c"]]
    complex_ = [["x"], ["y", "z"]]
    c3g = np.array([[0.9, 0.1, 0.0], [0.8, 0.0, 0.2], [0.0, 0.6, 0.4]])
    mf = np.array([[0.9, 0.0, 0.0], [0.6, 0.0, 0.2], [0.0, 0.5, 0.3]], dtype=np.float32)
    mr = np.zeros((3, 3), dtype=np.float32)
    vit = mf > 0.4
    f = paragraph_features(c3g, simple, complex_, mf, mr, vit)
    assert f.shape == (2, 2, len(PARAGRAPH_FEATURES))
    col = {n: i for i, n in enumerate(PARAGRAPH_FEATURES)}
    assert f[0, 0, col["avg"]] == np.float32((0.9 + 0.8) / 2) and f[0, 0, col["max"]] == np.float32(0.9)
    assert f[0, 0, col["marg_fwd_share"]] == np.float32((0.9 + 0.6) / 2)  # mass of S_1 sent into C_1, per sentence
    assert f[1, 1, col["marg_fwd_share"]] == np.float32(0.8)
    assert f[0, 1, col["marg_max"]] == np.float32(0.2) and f[0, 1, col["viterbi_any"]] == 0.0
    assert f[1, 1, col["dist"]] == 0.0 and f[0, 1, col["size_complex"]] == 2.0
    assert f[1, 1, col["nb_prev_diag"]] == np.float32((0.9 + 0.8) / 2)
    cells = cell_paragraph_values(np.array([[1.0, 2.0], [3.0, 4.0]]), simple, complex_)
    assert cells.tolist() == [[1.0, 2.0, 2.0], [1.0, 2.0, 2.0], [3.0, 4.0, 4.0]]


def test_span_features_match_word_sets_cell_by_cell():
    """Every span channel recomputed from Python word sets (brute force) for a merge and a split."""
    from alignment_engine.similarity import _word_tuple, word_incidence
    from alignment_engine.stacking import SPAN_CHANNELS, span_features

    simple = ["the dog ran home and the cat slept", "birds sing", "fish swim fast"]
    complex_ = ["the dog ran home", "later the cat slept", "birds sing loudly and fish swim fast", "nothing here"]
    rng = np.random.default_rng(0)
    score = rng.random((3, 4))
    s_w, c_w = word_incidence(simple, complex_)
    out = span_features(s_w, c_w, score)
    assert out.shape == (3, 4, len(SPAN_CHANNELS))
    S = [set(_word_tuple(t)) for t in simple]
    C = [set(_word_tuple(t)) for t in complex_]

    def best_other(row: np.ndarray, j: int) -> int:
        others = [k for k in range(len(row)) if k != j]
        return max(others, key=lambda k: (row[k], -k))

    for i in range(3):
        for j in range(4):
            b = best_other(score[i], j)
            pair = len(S[i] & (C[j] | C[b])) / len(S[i])
            run = set().union(*C[max(j - 1, 0): j + 2])
            bc = best_other(score[:, j], i)
            pair_c = len(C[j] & (S[i] | S[bc])) / len(C[j])
            run_c = set().union(*S[max(i - 1, 0): i + 2])
            expected = [pair - len(S[i] & C[b]) / len(S[i]), pair_c - len(C[j] & S[bc]) / len(C[j]),
                        pair, pair_c, len(S[i] & run) / len(S[i]), len(C[j] & run_c) / len(C[j])]
            assert np.allclose(out[i, j], expected), (i, j, out[i, j], expected)
    # the merge: "later the cat slept" completes the cover of simple 0 when its best partner is complex 0
    score = np.zeros((3, 4))
    score[0, 0] = 1.0
    out = span_features(s_w, c_w, score)
    assert np.isclose(out[0, 1, 0], 2 / 7) and np.isclose(out[0, 1, 2], 6 / 7)  # + "cat", "slept"; "and" uncovered
    assert span_features(np.zeros((0, 0)), np.zeros((2, 0)), np.zeros((0, 2))).shape == (0, 2, len(SPAN_CHANNELS))


def test_extra_candidates_are_the_candidates_of_the_decoding_behind_the_extra_channels():
    from alignment_engine.stacking import candidates, extra_candidates, extra_channels

    rng = np.random.default_rng(5)
    sparse = lambda: (rng.random((6, 7)) * (rng.random((6, 7)) > 0.7)).astype(np.float32)  # noqa: E731
    fm, rm = sparse(), sparse()
    fv, rv = rng.random((6, 7)) > 0.85, rng.random((6, 7)) > 0.85
    want = candidates(fm, rm, fv, rv)
    assert want.any() and not want.all()
    assert (extra_candidates(extra_channels(fm, rm, fv, rv)) == want).all()


def test_average_decodings_averages_marginals_and_votes_paths():
    from alignment_engine.stacking import Decoded, average_decodings

    a = Decoded(np.array([[True, False]]), np.array([[False, False]]), np.array([[0.8, 0.2]], dtype=np.float32),
                np.array([[0.4, 0.0]], dtype=np.float32))
    b = Decoded(np.array([[False, True]]), np.array([[False, True]]), np.array([[0.4, 0.6]], dtype=np.float32),
                np.array([[0.0, 0.5]], dtype=np.float32))
    c = Decoded(np.array([[False, True]]), np.array([[False, False]]), np.array([[0.0, 1.0]], dtype=np.float32),
                np.array([[0.2, 0.1]], dtype=np.float32))
    assert average_decodings([a]) is a
    two = average_decodings([a, b])  # one of two members is half: on the path
    assert two.forward.tolist() == [[True, True]] and two.reverse.tolist() == [[False, True]]
    np.testing.assert_allclose(two.forward_marginals, [[0.6, 0.4]], rtol=1e-6)
    three = average_decodings([a, b, c])  # one of three is not
    assert three.forward.tolist() == [[False, True]] and three.reverse.tolist() == [[False, False]]
    np.testing.assert_allclose(three.reverse_marginals, [[0.2, 0.2]], rtol=1e-6)
    assert three.forward_marginals.dtype == np.float32


def _stacked_cell_features(mf, mr, vf, vr, lex, para, span):  # type: ignore[no-untyped-def]
    """cell_features as it was written before Round 26: every channel in float64, stacked, cast at the end."""
    mf, mr, vf, vr = (a.astype(np.float64) for a in (mf, mr, vf, vr))
    mx = np.maximum(mf, mr)
    chans = [
        mf, mr, mx, np.minimum(mf, mr), vf, vr,
        _shift(mf, -1, 0), _shift(mf, 1, 0), _shift(mr, 0, -1), _shift(mr, 0, 1),
        _shift(mx, -1, 0), _shift(mx, 1, 0), _shift(mx, 0, -1), _shift(mx, 0, 1), _shift(mx, -1, -1), _shift(mx, 1, 1),
        _shift(vf, -1, 0), _shift(vf, 1, 0), _shift(vr, 0, -1), _shift(vr, 0, 1),
        np.broadcast_to(mf.sum(axis=1, keepdims=True), mf.shape), np.broadcast_to(mr.sum(axis=0, keepdims=True), mf.shape),
        1.0 / (1.0 + _rank(mx, 1)), 1.0 / (1.0 + _rank(mx, 0)),
    ]
    parts = [np.stack(chans, axis=-1), lex.astype(np.float64)]
    if para is not None:
        p = para.astype(np.float64)
        parts.append(np.stack([p, p - (p.max(axis=1, keepdims=True) if p.size else p)], axis=-1))
    if span is not None:
        parts.append(span.astype(np.float64))
    return np.concatenate(parts, axis=-1).astype(np.float32)


def test_cell_features_written_channel_by_channel_equal_the_stacked_float64_form():
    """Round 26 writes each channel into the float32 result instead of stacking every channel in float64 first (a
    long document's stack was 1.5 GB): the same bits, with and without the paragraph and span channels."""
    rng = np.random.default_rng(5)
    for m, n in ((7, 9), (1, 4), (0, 3)):
        mf, mr = rng.random((m, n)).astype(np.float32), rng.random((m, n)).astype(np.float32)
        vf, vr = mf > 0.6, mr > 0.7
        lex = rng.normal(size=(m, n, 5)).astype(np.float32)
        lex64 = rng.normal(size=(m, n, 2))  # float64 channels are rounded once, as the cast of the stack did
        para, span = rng.random((m, n)), rng.random((m, n, 6))
        for lx in (lex, lex64):
            for p in (None, para):
                for sp in (None, span):
                    got = cell_features(mf, mr, vf, vr, lx, p, sp)
                    want = _stacked_cell_features(mf, mr, vf, vr, lx, p, sp)
                    assert got.dtype == want.dtype == np.float32 and got.shape == want.shape
                    np.testing.assert_array_equal(got, want)
