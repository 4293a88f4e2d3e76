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


def test_algorithm2_rules():
    sim_p = np.zeros((2, 2, 6))  # k = 2 simple, l = 6 complex paragraphs
    sim_p[0, 0, 2] = 0.5  # best average of row 0, d = |1/2 - 3/6| = 0 -> linked (rule 1)
    sim_p[0, 1, 0] = 0.5  # best average of row 1 but far: d = |1 - 1/6| > tau2 -> not by rule 1
    sim_p[1, 1, 0] = 0.95  # ... but its maximum exceeds tau3 -> linked (rule 2)
    sim_p[1, 1, 4] = sim_p[1, 1, 5] = 0.6  # two neighbours above tau4, both within tau5 -> both linked (rule 3)
    align = par.align_news(sim_p)
    assert align[0, 2] and align[1, 0] and align[1, 4] and align[1, 5]
    assert align.sum() == 4
    assert not par.align_news(sim_p, {"tau3": 0.99})[1, 0]
    assert not par.align_news(sim_p, {"tau5": 0.1})[1, 4]


def test_align_paragraphs_and_candidates():
    links = par.align_paragraphs(PAIR, "c3g", "news", {"tau1": 0.05, "tau2": 1.0})
    assert (0, 0) in {(c, s) for c, s, _ in links}
    cands = par.candidate_pairs(PAIR, links)
    assert ("p-0-0-0", "p-1-0-0") in cands
    assert all(sid.startswith("p-0-") and cid.startswith("p-1-") for sid, cid in cands)


def test_wikipedia_algorithm_and_merge_groups():
    links = par.align_paragraphs(PAIR, "c3g", "wikipedia", {"tau1": 0.05, "tau2": 1.0, "tau3": 0.99})
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
