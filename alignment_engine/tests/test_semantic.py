"""The semantic channels (``alignment_engine.semantic``) against brute force, and the encoder's cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

from alignment_engine import semantic
from alignment_engine.features import lexical_feature_names, lexical_features
from alignment_engine.semantic import SEMANTIC_FEATURES, semantic_features


def _unit(rng: np.random.Generator, k: int, d: int = 8) -> np.ndarray:
    x = rng.normal(size=(k, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _brute(s: np.ndarray, c: np.ndarray, widths: tuple[int, int]) -> np.ndarray:
    m, n = len(s), len(c)
    out = np.zeros((m, n, len(SEMANTIC_FEATURES)))
    cos = s @ c.T

    def run_cos(vec: np.ndarray, rows: np.ndarray) -> float:
        mean = rows.sum(axis=0)
        return float(vec @ mean / np.linalg.norm(mean))

    for i in range(m):
        for j in range(n):
            out[i, j, 0] = cos[i, j]
            out[i, j, 1] = cos[i, j] - cos[i].max()
            out[i, j, 2] = cos[i, j] - cos[:, j].max()
            out[i, j, 3] = cos[i - 1, j] if i > 0 else 0.0
            out[i, j, 4] = cos[i + 1, j] if i + 1 < m else 0.0
            out[i, j, 5] = cos[i, j - 1] if j > 0 else 0.0
            out[i, j, 6] = cos[i, j + 1] if j + 1 < n else 0.0
            out[i, j, 7] = max(run_cos(s[i], c[a:a + w]) for w in range(1, widths[1] + 1)
                               for a in range(max(0, j - w + 1), min(j, n - w) + 1))
            out[i, j, 8] = max(run_cos(c[j], s[a:a + w]) for w in range(1, widths[0] + 1)
                               for a in range(max(0, i - w + 1), min(i, m - w) + 1))
    return out


@pytest.mark.parametrize(("m", "n", "widths"), [(5, 7, (3, 2)), (1, 4, (6, 3)), (6, 1, (2, 4)), (4, 4, (1, 1))])
def test_channels_equal_brute_force(m: int, n: int, widths: tuple[int, int]) -> None:
    rng = np.random.default_rng(m * 10 + n)
    s, c = _unit(rng, m), _unit(rng, n)
    got = semantic_features(s.astype(np.float32), c.astype(np.float32), widths)
    assert got.shape == (m, n, len(SEMANTIC_FEATURES)) and got.dtype == np.float32
    np.testing.assert_allclose(got, _brute(s, c, widths), atol=1e-5)


def test_a_split_is_seen_by_the_run_channel() -> None:
    """A complex sentence whose meaning is the sum of two simple sentences: each part alone is a weak match,
    the run of both is the best one (``sem_srun``)."""
    a, b, other = np.eye(3)
    complex_ = ((a + b) / np.sqrt(2))[None]
    simple = np.stack([a, b, other])
    f = semantic_features(simple, complex_, (2, 1))
    srun = f[:, 0, SEMANTIC_FEATURES.index("sem_srun")]
    cos = f[:, 0, SEMANTIC_FEATURES.index("sem_cos")]
    np.testing.assert_allclose(cos[:2], [1 / np.sqrt(2)] * 2, atol=1e-6)
    np.testing.assert_allclose(srun[:2], [1.0, 1.0], atol=1e-6)
    assert srun[2] < 0.8


def test_empty_sides() -> None:
    assert semantic_features(np.zeros((0, 8)), np.zeros((3, 8))).shape == (0, 3, len(SEMANTIC_FEATURES))
    assert lexical_features([], ["Ein Satz."], context=True, semantic=True).shape == (
        0, 1, len(lexical_feature_names(True, False, True)))


def test_the_encoder_embeds_each_distinct_text_once_and_bounds_its_cache() -> None:
    enc = semantic.SentenceEncoder(cache_size=3)
    texts = ["Der Hund bellt.", "Die Katze schläft.", "Der Hund bellt."]
    first = enc.embed(texts)
    assert enc.encoded == 2
    np.testing.assert_array_equal(first[0], first[2])
    again = enc.embed(texts[:2])
    assert enc.encoded == 2  # both cached
    np.testing.assert_array_equal(again, first[:2])
    enc.embed(["Eins.", "Zwei."])
    assert len(enc._cache) == 3  # the least recently used text left
    assert "Der Hund bellt." not in enc._cache


def test_lexical_features_append_the_semantic_channels_last() -> None:
    simple = ["Der Kaiser liebte Kleider.", "Er hatte viele."]
    complex_ = ["Der Kaiser liebte neue Kleider über alles.", "Das Wetter war schlecht."]
    plain = lexical_features(simple, complex_, context=True)
    both = lexical_features(simple, complex_, context=True, semantic=True)
    names = lexical_feature_names(True, False, True)
    assert both.shape == (2, 2, len(names)) and names[-len(SEMANTIC_FEATURES):] == list(SEMANTIC_FEATURES)
    np.testing.assert_array_equal(both[:, :, : plain.shape[-1]], plain)
    cos = both[:, :, names.index("sem_cos")]
    assert cos[0, 0] > cos[0, 1]  # the emperor's clothes, not the weather


def test_the_bf16_fast_path_stays_close_to_float32_and_keeps_its_own_cache() -> None:
    texts = ["Der Kaiser liebte neue Kleider über alles.", "Der Kaiser hatte sehr gerne neue Kleider.",
             "Das Wetter war schlecht."]
    fast, exact = semantic.SentenceEncoder(precision="bfloat16"), semantic.shared_encoder("float32")
    a, b = fast.embed(texts), exact.embed(texts)
    assert a.dtype == np.float32 and not np.array_equal(a, b)  # computed, not read from the float32 cache
    assert ((a * b).sum(axis=1) > 0.999).all()
    assert semantic.shared_encoder("bfloat16") is not exact and semantic.shared_encoder("bfloat16").precision == "bfloat16"
    with pytest.raises(ValueError, match="precision"):
        semantic.SentenceEncoder(precision="int4")


def test_an_aligner_embeds_in_int8_on_a_cpu_by_default_in_float32_when_asked_and_in_bf16_only_where_native(
        tmp_path, monkeypatch) -> None:
    pytest.importorskip("onnxruntime")
    from alignment_engine import e5_int8, e5_small
    from alignment_engine.crf_aligner import CRFAligner
    from alignment_engine.tests.test_training import _tiny
    from alignment_engine.training import train_model

    pairs, gold = _tiny()
    model_dir = train_model(pairs, gold, out_dir=tmp_path / "m", seed=0, device="cpu", crf_epochs=2, hidden=8,
                            transition_hidden=4, semicrf_epochs=1, cv_folds=2, members=1)
    meta = json.loads((model_dir / "model.json").read_text(encoding="utf-8"))
    assert meta["config"]["semantic"] and meta["config"]["semantic_precision"] == "float32"
    assert meta["semantic_encoder"] == semantic.ENCODER_NAME  # trained in float32
    plain = CRFAligner.load(model_dir, "cpu")
    assert (plain.semantic_precision, plain.semantic_device) == ("int8", "cpu")  # the default on a CPU
    exact = CRFAligner.load(model_dir, "cpu", precision="float32")
    assert (exact.semantic_precision, exact.semantic_device) == ("float32", "cpu")
    for precision, aligner in (("int8", plain), ("float32", exact)):
        encoder = semantic.shared_encoder(precision)
        encoder.clear()
        monkeypatch.setattr(encoder, "store", None)  # the product's embedding store (pipeline.apps) may hold them
        assert any(aligner.align(pairs)) and pairs[0].simple_sentences()[0] in encoder._cache, precision
        assert aligner.counters["semantic_sentences"] > 0
    assert CRFAligner.load(model_dir, "cpu", quantize=True).semantic_precision == "int8"  # --quantize: the same
    with pytest.raises(ValueError, match="precision must be one of"):
        CRFAligner.load(model_dir, "cpu", precision="int4")
    monkeypatch.setattr(e5_int8, "available", lambda: False)  # without ONNX Runtime
    assert CRFAligner.load(model_dir, "cpu").semantic_precision == "float32"
    monkeypatch.setattr(e5_small, "native_bf16", lambda: True)
    fast = CRFAligner.load(model_dir, "cpu", quantize=True)
    assert fast.semantic_precision == "bfloat16"
    bf16 = semantic.shared_encoder("bfloat16")
    bf16.clear()
    monkeypatch.setattr(bf16, "store", None)
    assert any(fast.align(pairs)) and pairs[0].simple_sentences()[0] in bf16._cache  # embedded by the bf16 encoder
    monkeypatch.setattr(e5_small, "native_bf16", lambda: False)
    assert CRFAligner.load(model_dir, "cpu", quantize=True).semantic_precision == "float32"


def test_the_store_keeps_embeddings_for_the_next_process_per_precision(tmp_path) -> None:
    texts = ["Der Hund bellt.", "Die Katze schläft."]
    store = semantic.EmbeddingStore(tmp_path / "emb.sqlite3")
    first = semantic.SentenceEncoder(store=store)
    a = first.embed(texts)
    assert first.encoded == 2
    later = semantic.SentenceEncoder(store=semantic.EmbeddingStore(tmp_path / "emb.sqlite3"))  # another run
    b = later.embed([*texts, "Neu."])
    assert later.encoded == 1  # only the new sentence went through the encoder
    np.testing.assert_array_equal(b[:2], a)
    fast = semantic.SentenceEncoder(precision="bfloat16", store=store)
    fast.embed(texts)
    assert fast.encoded == 2  # another precision: other vectors, other keys
    assert semantic.EmbeddingStore.key("float32", texts[0]) != semantic.EmbeddingStore.key("bfloat16", texts[0])


def test_use_store_reaches_the_shared_encoders(tmp_path) -> None:
    enc = semantic.shared_encoder()
    before = semantic._STORE
    try:
        semantic.use_store(tmp_path / "e.sqlite3")
        assert enc.store is not None and enc.store.path == tmp_path / "e.sqlite3"
        enc.clear()
        enc.embed(["Ein Satz, der in den Speicher geht."])
        assert (tmp_path / "e.sqlite3").is_file()
        semantic.use_store(None)
        assert enc.store is None
    finally:
        semantic.use_store(before)


def test_the_module_the_product_imports_at_start_up_stays_light() -> None:
    """``pipeline.apps`` imports this module in every Django process (``use_store``): no torch, scipy or
    similarity code on the way (they come with the first embedding)."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, alignment_engine.semantic\n"
            "heavy = [m for m in ('torch', 'scipy', 'alignment_engine.similarity', 'alignment_engine.e5_small')"
            " if m in sys.modules]\n"
            "print(' '.join(heavy) if heavy else 'LIGHT')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "LIGHT"


def test_encoders_are_shared_per_precision_and_device_and_a_gpu_keeps_its_own_store_keys(monkeypatch) -> None:
    assert semantic.shared_encoder("float32", "cpu") is semantic.shared_encoder()
    cpu = semantic.SentenceEncoder()
    assert cpu.device == "cpu" and cpu.store_precision == "float32"
    assert cpu._model is semantic.network("cpu") is semantic.SentenceEncoder(precision="bfloat16")._model  # loaded once
    monkeypatch.setattr(semantic, "network", lambda device: cpu._model)  # no GPU here: only the key is checked
    gpu = semantic.SentenceEncoder(device="cuda", precision="bfloat16")
    assert gpu.store_precision == "bfloat16@cuda"
    assert semantic.EmbeddingStore.key(gpu.store_precision, "Satz.") != semantic.EmbeddingStore.key("bfloat16", "Satz.")


def test_the_cpu_bf16_vectors_of_the_older_kernel_are_not_served_from_a_store(tmp_path) -> None:
    """bf16 on the CPU changed kernel in Round 23 (other last bits): its store name changed with it, so a store holding
    the older vectors under "bfloat16" serves none of them; float32 and int8 keep their names (and their stores)."""
    assert semantic.SentenceEncoder(precision="float32").store_precision == "float32"
    assert semantic.SentenceEncoder(precision="int8").store_precision == "int8"
    store = semantic.EmbeddingStore(tmp_path / "e.sqlite3")
    old = np.full(semantic.DIM, 0.5, dtype=np.float32)
    store.put([(semantic.EmbeddingStore.key("bfloat16", "Ein Satz."), old)])
    enc = semantic.SentenceEncoder(precision="bfloat16", store=store)
    assert enc.store_precision != "bfloat16"
    got = enc.embed(["Ein Satz."])
    assert enc.encoded == 1 and not np.array_equal(got[0], old)  # computed, not the stored old vector
    assert (got[0] @ semantic.SentenceEncoder().embed(["Ein Satz."])[0]) > 0.9999


def test_an_unusable_store_is_dropped_with_a_warning_and_the_embeddings_come_out_the_same(tmp_path, caplog) -> None:
    """The product points every process at EMBEDDINGS_CACHE; a file that turned into something else (or a full
    disk) must not fail an alignment: the store is a cache."""
    texts = ["Der Hund bellt.", "Die Katze schläft."]
    bad = tmp_path / "emb.sqlite3"
    bad.write_bytes(b"not a database at all\\n" * 100)
    enc = semantic.SentenceEncoder(store=semantic.EmbeddingStore(bad))
    with caplog.at_level("WARNING", logger="alignment_engine.semantic"):
        got = enc.embed(texts)
    np.testing.assert_array_equal(got, semantic.SentenceEncoder().embed(texts))
    assert enc.store is None and enc.encoded == 2
    assert str(bad) in caplog.text and "going on without it" in caplog.text
    assert bad.read_bytes().startswith(b"not a database")  # left as it was


def test_a_model_trained_in_int8_embeds_in_int8_when_it_trains_and_when_it_aligns(tmp_path, monkeypatch) -> None:
    pytest.importorskip("onnxruntime")
    from alignment_engine.crf_aligner import CRFAligner
    from alignment_engine.tests.test_training import _tiny
    from alignment_engine.training import train_model

    int8 = semantic.shared_encoder("int8")
    int8.clear()
    monkeypatch.setattr(int8, "store", None)  # the product's embedding store (pipeline.apps) may hold them already
    pairs, gold = _tiny()
    model_dir = train_model(pairs, gold, out_dir=tmp_path / "m", seed=0, device="cpu", crf_epochs=2, hidden=8,
                            transition_hidden=4, semicrf_epochs=1, cv_folds=2, semantic_precision="int8", members=1)
    assert pairs[0].simple_sentences()[0] in int8._cache  # training embedded with the int8 encoder
    meta = json.loads((model_dir / "model.json").read_text(encoding="utf-8"))
    assert meta["config"]["semantic_precision"] == "int8" and "int8 through ONNX Runtime" in meta["semantic_encoder"]
    for quantize in (False, True):  # --quantize leaves a model's own int8 as it is
        aligner = CRFAligner.load(model_dir, "cpu", quantize=quantize)
        assert (aligner.semantic_precision, aligner.semantic_device) == ("int8", "cpu")
    int8.clear()
    assert any(aligner.align(pairs)) and aligner.counters["semantic_sentences"] > 0
    with pytest.raises(ValueError, match="int8 embeddings run on the CPU only"):
        semantic.SentenceEncoder(precision="int8", device="cuda")
