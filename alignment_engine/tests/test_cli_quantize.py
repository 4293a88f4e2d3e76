"""`align --quantize` runs a trained CRF with the int8 cross-encoder and writes the same pairs format; where the
CPU has no native bf16 the sentence encoder runs in int8, and where ONNX Runtime is missing too `align` says that
it stays float32; `--precision` picks the sentence encoder's precision for crf only."""

from __future__ import annotations

from pathlib import Path

import pytest

from alignment_engine.cli import main
from alignment_engine.io import read_alignment_tsv, write_pairs_jsonl
from alignment_engine.tests.test_training import _tiny
from alignment_engine.training import train_model


def test_align_with_quantized_encoder(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from alignment_engine import e5_int8, e5_small, semantic

    monkeypatch.setattr(e5_small, "native_bf16", lambda: False)
    pairs, gold = _tiny()
    model_dir = train_model(
        pairs, gold, out_dir=tmp_path / "m", seed=0, device="cpu",
        emission="encoder+lexical", encoder_steps=2, crf_epochs=2, hidden=8, transition_hidden=4, members=1,
    )
    write_pairs_jsonl(tmp_path / "pairs.jsonl", pairs)
    outputs = {}
    for name, extra, onnx in (("plain", [], True), ("int8", ["--quantize"], True),
                              ("no onnxruntime", ["--quantize"], False)):
        monkeypatch.setattr(e5_int8, "available", lambda onnx=onnx: onnx)
        out = tmp_path / f"{name}.tsv"
        argv = ["align", "--input", str(tmp_path / "pairs.jsonl"), "--output", str(out),
                "--model", str(model_dir), "--device", "cpu", *extra]
        capsys.readouterr()
        assert main(argv) == 0
        outputs[name] = read_alignment_tsv(out)
        said = capsys.readouterr().err
        # the model has semantic channels: int8 embeds them here, unless ONNX Runtime is missing
        assert ("sentence encoder in float32" in said) == (name == "no onnxruntime"), said
    monkeypatch.setattr(e5_int8, "available", lambda: True)
    argv = ["align", "--input", str(tmp_path / "pairs.jsonl"), "--output", str(tmp_path / "exact.tsv"),
            "--model", str(model_dir), "--device", "cpu"]
    exact = semantic.shared_encoder("float32")
    exact.clear()
    monkeypatch.setattr(exact, "store", None)  # the product's embedding store (pipeline.apps) may hold them
    assert main([*argv, "--precision", "float32"]) == 0  # exactly as trained
    assert pairs[0].simple_sentences()[0] in exact._cache  # embedded by the float32 encoder, not the default int8
    outputs["exact"] = read_alignment_tsv(tmp_path / "exact.tsv")
    capsys.readouterr()
    assert main([*argv, "--method", "sequence", "--precision", "int8"]) == 2  # a method without a sentence encoder
    assert "--precision applies to the crf method" in capsys.readouterr().err
    for rows in outputs.values():
        assert rows, "the aligner found no pair at all"
        assert all(r.label in ("aligned", "partialAligned") for r in rows)
        assert {r.simple_id.split("-")[0] for r in rows} <= {"a", "b"}
