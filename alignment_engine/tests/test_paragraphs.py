import itertools

import numpy as np
import pytest

from alignment_engine import paragraphs as par
from alignment_engine.similarity import similarity_matrix
from alignment_engine.types import Alignment, DocPair


def _brute_sim_p(pair: DocPair, name: str) -> np.ndarray:
    """Algorithm 1 with plain loops over paragraphs and sentences (sentence scores fitted on the document)."""
    k, l_ = len(pair.simple), len(pair.complex)
    full = similarity_matrix(name, pair.simple_sentences(), pair.complex_sentences())
    s_ids = [(p, s) for p, para in enumerate(pair.simple) for s in range(len(para))]
    c_ids = [(p, s) for p, para in enumerate(pair.complex) for s in range(len(para))]
    out = np.zeros((2, k, l_))
    for i, j in itertools.product(range(k), range(l_)):
        rows = [a for a, (p, _) in enumerate(s_ids) if p == i]
        cols = [b for b, (p, _) in enumerate(c_ids) if p == j]
        maxima = [max(full[a, b] for b in cols) for a in rows]
        out[0, i, j] = sum(maxima) / len(maxima)
        out[1, i, j] = max(maxima)
    return out


PAIR = DocPair(
    "p",
    complex=[["The old mayor opened the new bridge on Monday.", "Hundreds of people watched."],
             ["The bridge cost ten million pounds.", "It took three years to build."],
             ["Critics said the money should have gone to schools."]],
    simple=[["The mayor opened the bridge on Monday.", "Many people watched."],
            ["The bridge cost a lot of money.", "Some people said schools needed the money more."]],
)


def test_algorithm1_matches_brute_force():
    np.testing.assert_allclose(par.paragraph_similarity(PAIR, "c3g"), _brute_sim_p(PAIR, "c3g"), atol=1e-12)


def test_distance_is_one_based():
    d = par.distance_matrix(2, 4)
    assert d[0, 1] == pytest.approx(0.0)  # 1/2 - 2/4
    assert d[1, 3] == pytest.approx(0.0)
    assert d[0, 0] == pytest.approx(0.25)


def test_defaults_are_the_papers_tables_10_and_11():
    assert par.defaults("news") == {"tau1": 0.1, "tau2": 0.34, "tau3": 0.9998861788416304,
                                    "tau4": 0.998915818299745, "tau5": 0.5}
    assert par.defaults("wikipedia") == {"tau1": 0.991775706637882, "tau2": 0.8, "tau3": 0.5, "tau4": 5,
                                         "tau5": 0.9958}
    par.defaults("news")["tau1"] = 9.0  # a fresh copy each time
    assert par.defaults("news")["tau1"] == 0.1
    with pytest.raises(ValueError, match="unknown paragraph algorithm"):
        par.defaults("books")


OLD = {"tau1": 0.1, "tau2": 0.35, "tau3": 0.9, "tau4": 0.5, "tau5": 0.2}


def test_algorithm2_rules():
    sim_p = np.zeros((2, 2, 6))  # k = 2 simple, l = 6 complex paragraphs
    sim_p[0, 0, 2] = 0.5  # best average of row 0, d = |1/2 - 3/6| = 0 -> linked (rule 1)
    sim_p[0, 1, 0] = 0.5  # best average of row 1 but far: d = |1 - 1/6| > tau2 -> not by rule 1
    sim_p[1, 1, 0] = 0.95  # ... but its maximum exceeds tau3 -> linked (rule 2)
    sim_p[1, 1, 4] = sim_p[1, 1, 5] = 0.6  # two neighbours above tau4, both within tau5 -> both linked (rule 3)
    align = par.align_news(sim_p, OLD)
    assert align.dtype == bool and align.shape == (2, 6)
    assert align[0, 2] and align[1, 0] and align[1, 4] and align[1, 5]
    assert align.sum() == 4
    assert not par.align_news(sim_p, {**OLD, "tau3": 0.99})[1, 0]
    assert not par.align_news(sim_p, {**OLD, "tau5": 0.1})[1, 4]
    # rule 1 takes the first maximum only; at d = tau2 exactly it does not fire (strict <)
    tie = np.zeros((2, 1, 2))
    tie[0, 0] = [0.4, 0.4]
    assert par.align_news(tie, {**OLD, "tau2": 0.6}).tolist() == [[True, False]]
    assert not par.align_news(tie, {**OLD, "tau2": 0.5}).any()  # d(1, 1) = |1 - 1/2| = 0.5


def test_algorithm2_with_table_10_thresholds():
    """Worked by hand with the paper's defaults: tau1 .1, tau2 .34, tau3 .99988..., tau4 .99891..., tau5 .5."""
    sim_p = np.zeros((2, 2, 4))  # k = 2, l = 4: d(1, j) = |.5 - j/4| = .25 0 .25 .5; d(2, j) = .75 .5 .25 0
    sim_p[0, 0] = [0.05, 0.3, 0.2, 0.0]  # row 1: best average .3 at j = 2 (d 0) -> linked
    sim_p[0, 1] = [0.6, 0.1, 0.0, 0.0]  # row 2: best average .6 at j = 1, but d = .75 >= .34 -> not linked
    sim_p[1, 1] = [0.99995, 0.2, 0.9995, 0.9995]  # j = 1 a near-copy (> tau3) -> linked although far;
    # j = 3, 4 both > tau4 and d = .25, 0 < tau5 -> both linked
    sim_p[1, 0, 3] = 0.9995  # row 1, j = 4 alone above tau4: its neighbour j = 3 is not -> not linked
    align = par.align_news(sim_p)
    assert align.tolist() == [[False, True, False, False], [True, False, True, True]]


def test_algorithm4_every_branch():
    """Worked by hand from the pseudo-code (tau1 .5, tau2 .8, tau3 .5, tau4 5, tau5 .9; k = 2, l = 10)."""
    th = {"tau1": 0.5, "tau2": 0.8, "tau3": 0.5, "tau4": 5, "tau5": 0.9}
    sim = np.zeros((1, 2, 10))
    # i = 1: d = |.5 - j/10| < .8 everywhere; candidates j = 1, 8, 9 (1-based), range 8: 8/10 > .5 and 8 > 5
    # -> spread: the closest to i (j = 1, |1 - 1| = 0) stays, j = 8 stays (.95 > tau5), j = 9 goes (.7)
    sim[0, 0, [0, 7, 8]] = [0.6, 0.95, 0.7]
    # i = 2: d = |1 - j/10|; j = 1 (.99) is too far (d .9), j = 2 has d .8 (not < .8); candidates j = 6, 10:
    # range 4, 4/10 <= .5 -> not spread, both stay; j = 4 at .5 is not above tau1
    sim[0, 1, [0, 1, 3, 5, 9]] = [0.99, 0.99, 0.5, 0.6, 0.6]
    align = par.align_wikipedia(sim, th)
    assert align.shape == (2, 10) and align.dtype == bool
    assert np.flatnonzero(align[0]).tolist() == [0, 7]
    assert np.flatnonzero(align[1]).tolist() == [5, 9]
    # spread share above tau3 but range not above tau4 paragraphs -> all candidates stay
    assert np.flatnonzero(par.align_wikipedia(sim, {**th, "tau4": 8})[0]).tolist() == [0, 7, 8]
    # a lower tau5 keeps j = 9 too; a single candidate is always kept
    assert np.flatnonzero(par.align_wikipedia(sim, {**th, "tau5": 0.65})[0]).tolist() == [0, 7, 8]
    one = np.zeros((1, 1, 10))
    one[0, 0, 9] = 0.6
    assert np.flatnonzero(par.align_wikipedia(one, {**th, "tau2": 1.0})[0]).tolist() == [9]
    # the closest candidate is by raw index |m - i|: for i = 2 of candidates 1 and 10 it is 1, which stays
    # although it is the weakest; 10 stays because it is above tau5
    far = np.zeros((1, 2, 10))
    far[0, 1, [0, 4, 9]] = [0.55, 0.6, 0.95]
    got = par.align_wikipedia(far, {**th, "tau2": 1.01})
    assert np.flatnonzero(got[1]).tolist() == [0, 9]


def test_algorithm4_with_table_11_thresholds():
    sim = np.zeros((1, 1, 3))
    sim[0, 0] = [0.995, 0.99, 0.9999]  # k = 1, l = 3: d = |1 - j/3| = .67 .33 0 < .8; tau1 = .99178
    align = par.align_wikipedia(sim)
    assert align.tolist() == [[True, False, True]]  # range 2 is not > tau4 = 5: no pruning


def test_algorithms_check_the_shape_of_sim_p():
    with pytest.raises(ValueError, match=r"align_news takes simP of shape \(2, k, l\)"):
        par.align_news(np.zeros((1, 2, 2)))
    with pytest.raises(ValueError, match=r"align_wikipedia takes simP of shape \(1, k, l\)"):
        par.align_wikipedia(np.zeros((2, 2, 2)))
    assert par.paragraph_similarity_max(PAIR, "c3g").shape == (1, 2, 3)
    np.testing.assert_allclose(par.paragraph_similarity_max(PAIR, "c3g")[0], _brute_sim_p(PAIR, "c3g")[1])


def test_align_paragraphs_and_candidates():
    links = par.align_paragraphs(PAIR, "c3g", "news", {"tau1": 0.05, "tau2": 1.0})
    assert (0, 0) in {(c, s) for c, s, _ in links}
    cands = par.candidate_pairs(PAIR, links)
    assert ("p-0-0-0", "p-1-0-0") in cands
    assert all(sid.startswith("p-0-") and cid.startswith("p-1-") for sid, cid in cands)


def test_wikipedia_algorithm_and_merge_groups():
    links = par.align_paragraphs(PAIR, "c3g", "wikipedia", {"tau1": 0.05, "tau2": 1.0})
    assert links
    groups = par.merge_groups([(0, 0, 1.0), (1, 0, 1.0), (3, 0, 1.0), (2, 1, 1.0)])
    assert groups == [(0, [0, 1]), (0, [3]), (1, [2])]


def test_empty_and_single_sentence_documents():
    assert par.align_paragraphs(DocPair("e", [], []), "c3g") == []
    assert par.align_paragraphs(DocPair("e", [["Only one."]], []), "c3g") == []
    one = DocPair("o", [["A cat sat."]], [["A cat sat."]])
    assert par.align_paragraphs(one, "c3g") == [(0, 0, 1.0)]
    assert par.align_paragraphs(one, "c3g", "wikipedia") == [(0, 0, 1.0)]


def test_gold_paragraph_links_are_reexported_for_the_tuner():
    gold = [Alignment("aligned", "p-0-1-0", "p-1-2-0"), Alignment("notAligned", "p-0-0-0", "p-1-0-0"),
            Alignment("aligned", "q-0-0-0", "q-1-0-0")]
    assert par.gold_paragraph_links([PAIR], gold) == {("p", 2, 1)}


def test_tuner_not_worse_than_defaults_on_deplain(shared_data):
    from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl

    pairs = read_pairs_jsonl(shared_data / "deplain-web" / "dev_pairs.jsonl")
    gold = read_alignment_tsv(shared_data / "deplain-web" / "dev_gold.tsv")
    res = par.tune_thresholds(pairs, gold, "c3g", "wikipedia", rounds=1)
    assert res.f1 >= res.default_f1
    assert res.f1 > 0.5
    assert set(res.thresholds) == set(par.WIKI_DEFAULTS)
