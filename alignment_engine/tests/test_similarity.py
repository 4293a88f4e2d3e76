import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from alignment_engine import similarity as sim
from alignment_engine.text import words

SIMPLE = ["The cat sat on the mat.", "Dogs bark loudly.", "", "Straße über Äpfel"]
COMPLEX = ["A cat sat on a mat today.", "The dog barked.", "Nothing here", "the cat the cat", "Strasse über Äpfel!"]


def _sklearn_cosine(analyzer):  # type: ignore[no-untyped-def]
    x = TfidfVectorizer(analyzer=analyzer).fit_transform(SIMPLE + COMPLEX)
    return (x[: len(SIMPLE)] @ x[len(SIMPLE) :].T).toarray()


def test_c3g_equals_char_trigram_tfidf_cosine():
    np.testing.assert_allclose(sim.c3g(SIMPLE, COMPLEX), _sklearn_cosine(sim.char_ngrams), atol=1e-12)


def test_tfidf_equals_word_tfidf_cosine():
    np.testing.assert_allclose(sim.tfidf(SIMPLE, COMPLEX), _sklearn_cosine(words), atol=1e-12)


def test_jaccard_values():
    mat = sim.jaccard(["a b c", "x"], ["a b d", "x x", ""])
    expected: list[list[float]] = [[2 / 4, 0, 0], [0, 1, 0]]
    np.testing.assert_allclose(mat, expected)


def test_containment_is_directional():
    cs, cc = sim.containment(["a b"], ["a b c d"])
    assert cs[0, 0] == 1.0
    assert cc[0, 0] == 0.5


@pytest.mark.parametrize("name", ["jaccard", "tfidf", "c3g", "lr"])
@pytest.mark.parametrize(("m", "n"), [(0, 0), (0, 3), (2, 0), (1, 1), (3, 4)])
def test_shapes_and_range(name, m, n):
    out = sim.similarity_matrix(name, SIMPLE[:m], COMPLEX[:n])
    assert out.shape == (m, n)
    if out.size:
        assert out.min() >= 0.0 and out.max() <= 1.0 + 1e-9


def test_identical_sentences_score_one():
    for name in ("jaccard", "tfidf", "c3g"):
        out = sim.similarity_matrix(name, ["Same words here."], ["Same words here.", "other"])
        assert out[0, 0] == pytest.approx(1.0)
        assert out[0, 1] < 0.5


def test_unknown_measure_raises():
    with pytest.raises(ValueError, match="unknown similarity"):
        sim.similarity_matrix("nope", ["a"], ["b"])


def test_feature_stack_channels():
    names = sim.feature_names()
    feats = sim.feature_stack(SIMPLE, COMPLEX)
    assert feats.shape == (len(SIMPLE), len(COMPLEX), len(names))
    c3g = feats[:, :, names.index("c3g")]
    np.testing.assert_allclose(c3g, sim.c3g(SIMPLE, COMPLEX))
    # the best cell of each row under the first measure has row_rank 1 and row_gap 0
    first = feats[:, :, 0]
    rows = np.arange(len(SIMPLE))
    best = first.argmax(axis=1)
    assert np.all(feats[rows, best, names.index("row_rank")] == 1.0)
    assert np.all(feats[rows, best, names.index("row_gap")] == 0.0)
    assert feats[0, 0, names.index("pos_diff")] == pytest.approx(abs(0.5 / 4 - 0.5 / 5))
    assert sim.feature_stack([], COMPLEX).shape == (0, len(COMPLEX), len(names))


def test_rank_desc():
    mat = np.array([[0.1, 0.9, 0.5]])
    np.testing.assert_array_equal(sim.rank_desc(mat, 1), [[2, 0, 1]])


def test_logistic_similarity_fit_roundtrip(tmp_path):
    simple = ["the cat sat", "dogs bark", "birds sing songs"]
    complex_ = ["a cat sat down", "some dogs bark loudly", "fish swim", "birds sing many songs"]
    gold = np.zeros((3, 4), dtype=int)
    gold[0, 0] = gold[1, 1] = gold[2, 3] = 1
    model = sim.LogisticSimilarity.fit([(simple, complex_, gold)] * 3)
    probs = model(simple, complex_)
    assert probs.shape == (3, 4)
    assert np.all(probs[gold == 1] > probs[gold == 0].max())
    model.save(tmp_path / "lr.json")
    again = sim.LogisticSimilarity.load(tmp_path / "lr.json")
    np.testing.assert_allclose(again(simple, complex_), probs)


def test_default_lr_is_shipped():
    model = sim.LogisticSimilarity.default()
    assert model.measures == sim.LR_MEASURES
    assert sim._DEFAULT_LR.is_file()


@pytest.mark.slow
def test_minilm_cosine():
    out = sim.minilm(["A cat sits on the mat."], ["The cat is sitting on the mat.", "Stock markets fell."])
    assert out.shape == (1, 2)
    assert out[0, 0] > out[0, 1]
