"""The CRF aligner's fast inference path gives exactly the rows of the previous implementation.

``data/speed_fixture_rows.json`` holds the rows (ids, label, score) that the engine produced before the
speed work (commit 1f19f9d) for :func:`speed_fixture.speed_corpus` with the model trained below; the
fast path (shared word / character bags, documents batched through the CRF and the learned decoder)
must reproduce them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from alignment_engine import similarity
from alignment_engine.crf_aligner import CRFAligner
from alignment_engine.tests.speed_fixture import speed_corpus
from alignment_engine.training import train_model

ROWS = Path(__file__).with_name("data") / "speed_fixture_rows.json"


@pytest.fixture(scope="module")
def fixture_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pairs, gold = speed_corpus()
    return train_model(pairs, gold, out_dir=tmp_path_factory.mktemp("speed") / "m", seed=0, device="cpu",
                       crf_epochs=3, hidden=8, transition_hidden=4, semantic=False, members=1)  # the rows predate it


def _rows(out: list) -> list:
    return [[[r.simple_id, r.complex_id, r.label, r.score] for r in rows] for rows in out]


def _docs() -> list:
    train, _ = speed_corpus()
    test, _ = speed_corpus(n_docs=4, seed=11)
    return train + test


def test_rows_identical_to_the_previous_implementation(fixture_model: Path) -> None:
    out = CRFAligner.load(fixture_model, "cpu").align(_docs())
    expected = json.loads(ROWS.read_text(encoding="utf-8"))
    assert sum(len(r) for r in expected) == 94
    assert _rows(out) == expected


def test_batching_documents_changes_nothing(fixture_model: Path) -> None:
    aligner = CRFAligner.load(fixture_model, "cpu")
    docs = _docs()
    together = _rows(aligner.align(docs))
    one_by_one = [_rows(aligner.align([d]))[0] for d in docs]
    assert together == one_by_one
    assert any(together)


def _random_text(rng: random.Random) -> str:
    vocab = ["the", "cat", "Sat", "on", "mat", "über", "straße", "dog", "a", "ran", "42", "x"]
    words = [rng.choice(vocab) for _ in range(rng.randint(0, 9))]
    return " ".join(words) + rng.choice(["", ".", " !", "?!"])


@pytest.mark.parametrize("seed", range(6))
def test_lexical_matrices_equal_the_separate_measures(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    simple = [_random_text(rng) for _ in range(rng.randint(1, 12))]
    complex_ = [_random_text(rng) for _ in range(rng.randint(1, 12))]
    fast = similarity.lexical_matrices(simple, complex_)
    cs, cc = similarity.containment(simple, complex_)
    exact = {"jaccard": similarity.jaccard(simple, complex_), "contain_simple": cs, "contain_complex": cc}
    for name, ref in exact.items():
        assert np.array_equal(fast[name], ref), name  # integer counts: bit for bit
    for name in ("tfidf", "c3g"):
        ref = similarity.similarity_matrix(name, simple, complex_)
        np.testing.assert_allclose(fast[name], ref, rtol=0, atol=1e-12)
    # documents too large for dense bags take the sparse measures: same values
    monkeypatch.setattr(similarity, "DENSE_LIMIT", 0)
    sparse = similarity.lexical_matrices(simple, complex_)
    for name, ref in fast.items():
        np.testing.assert_allclose(sparse[name], ref, rtol=0, atol=1e-12)


def test_lexical_matrices_of_empty_sides_are_empty() -> None:
    out = similarity.lexical_matrices([], ["A sentence."])
    assert all(v.shape == (0, 1) for v in out.values())


def test_chunks_keep_order_and_bound_documents_and_cells(fixture_model: Path) -> None:
    aligner = CRFAligner.load(fixture_model, "cpu")
    docs = _docs()
    aligner.chunk_size, aligner.chunk_cells = 3, 10**9
    groups = aligner.chunks(docs)
    assert [d for g in groups for d in g] == docs and max(len(g) for g in groups) == 3
    sizes = [len(d.simple_sentences()) * len(d.complex_sentences()) for d in docs]
    aligner.chunk_size, aligner.chunk_cells = 100, max(sizes)
    for g in aligner.chunks(docs):
        assert len(g) == 1 or sum(len(d.simple_sentences()) * len(d.complex_sentences()) for d in g) <= max(sizes)
    assert _rows(aligner.align(docs)) == json.loads(ROWS.read_text(encoding="utf-8"))
