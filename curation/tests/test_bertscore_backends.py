"""BERTScore's two encoder backends: which one a process picks, and that they agree."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import curation.curate.bertscore as bs

CANDIDATES = [
    "The cat sat on the mat. It was happy.",
    "The city council said on Monday that a new bridge would be built. It had been debated for years.",
    "Bananas are yellow fruit.",
    "Rain.",
]
REFERENCES = [
    "The happy cat sat on the mat.",
    "The city council said on Monday that a new bridge over the river would be built after years of debate.",
    "The happy cat sat on the mat.",
    "Rain fell all day.",
]


@pytest.fixture
def fresh_backend(monkeypatch: Any) -> Iterator[None]:
    """Forget this process's choice of backend (and the scores cached under it) before and after."""
    bs._onnx_session.cache_clear()
    monkeypatch.setattr(bs, "_score_cache", bs.OrderedDict())
    yield
    bs._onnx_session.cache_clear()


def test_torch_backend_when_asked(monkeypatch: Any, fresh_backend: None) -> None:
    monkeypatch.setenv("BERTSCORE_BACKEND", "torch")
    assert bs.backend() == "torch"


def test_onnx_backend_without_onnxruntime_is_a_clear_error(monkeypatch: Any, fresh_backend: None) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    monkeypatch.setenv("BERTSCORE_BACKEND", "auto")
    assert bs.backend() == "torch"  # auto falls back
    bs._onnx_session.cache_clear()
    monkeypatch.setenv("BERTSCORE_BACKEND", "onnx")
    with pytest.raises(RuntimeError, match="onnxruntime is not installed"):
        bs.backend()


def test_no_export_without_the_onnx_package(monkeypatch: Any, tmp_path: Path) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnx" else real(name, *a))
    target = tmp_path / "encoder.onnx"
    assert bs.export_onnx(target) is False and not target.exists()


def test_cache_file_names_the_package_version_and_layer(monkeypatch: Any, tmp_path: Path) -> None:
    monkeypatch.setenv("BERTSCORE_CACHE_DIR", str(tmp_path))
    path = bs.onnx_file()
    folder = path.parent
    assert folder.parent == tmp_path and path.name == "model.onnx"
    assert folder.name.startswith("minilm-l6-v2-0.1.0-") and folder.name.endswith("-layer6")


@pytest.mark.slow
def test_tokenizer_file_gives_the_ids_of_autotokenizer() -> None:
    """The Rust tokenizer over tokenizer.json (its fixed padding and 128-token truncation turned
    off, truncation at 256) gives the ids AutoTokenizer gave the torch scorer."""
    tokenizer, _ = bs._load()
    texts = [*CANDIDATES, *REFERENCES, "Der Bürgermeister eröffnete die Brücke.", " ".join(["word"] * 300), "Don't!"]
    want = tokenizer(texts, truncation=True, max_length=bs.MAX_LENGTH)["input_ids"]
    assert bs.tokenize(texts) == want
    assert len(want[-2]) == bs.MAX_LENGTH


@pytest.mark.slow
def test_onnx_backend_equals_torch(monkeypatch: Any, tmp_path: Path, fresh_backend: None) -> None:
    """The encoder exported to ONNX (in a child process, into an empty cache dir) scores like
    torch within 1e-6; a second process start reuses the file."""
    if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None:
        pytest.skip("onnxruntime and onnx are not installed (requirements.txt has them: make install)")
    monkeypatch.setenv("BERTSCORE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("BERTSCORE_BACKEND", "torch")
    want = bs.bertscore_f1(CANDIDATES, REFERENCES)
    bs._onnx_session.cache_clear()
    monkeypatch.setattr(bs, "_score_cache", bs.OrderedDict())
    monkeypatch.setenv("BERTSCORE_BACKEND", "onnx")
    assert bs.backend() == "onnx" and bs.onnx_file().exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [bs.onnx_file().parent.name]  # no staging left
    assert (bs.onnx_file().parent / "model.onnx.data").stat().st_size > 80_000_000  # the weights, beside the graph
    got = bs.bertscore_f1(CANDIDATES, REFERENCES)
    assert max(abs(a - b) for a, b in zip(got, want, strict=True)) < 1e-6
    assert want[0] > want[2] and abs(bs.bertscore_f1([REFERENCES[0]], [REFERENCES[0]])[0] - 1.0) < 1e-5
