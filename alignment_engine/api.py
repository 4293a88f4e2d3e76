"""The engine's public entry points (plain data in, plain data out; no Django).

>>> from alignment_engine import api
>>> aligner = api.load_aligner()                    # the training-free default (``DEFAULT_METHOD``)
>>> rows_per_pair = aligner.align(pairs)            # list[list[Alignment]], one list per DocPair
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from alignment_engine import paragraphs as _paragraphs
from alignment_engine import similarity as _similarity
from alignment_engine.baselines import BASELINES, LogisticAligner, make_baseline
from alignment_engine.errors import InputError, ModelError
from alignment_engine.evaluation import evaluate as _evaluate
from alignment_engine.sequence import SequenceAligner, SequenceConfig
from alignment_engine.types import Alignment, DocPair, ProgressCallback

DEFAULT_METHOD = "sequence"
METHODS: tuple[str, ...] = ("sequence", "crf", *BASELINES)
METHOD_HELP: dict[str, str] = {
    "sequence": "training-free default: lexical similarity mix + monotonic Viterbi with a null state",
    "crf": "trained neural CRF aligner (needs --model DIR from `train`)",
    "jaccard": "JaccardAlign: greedy one-to-one matching over word Jaccard (Xu et al. 2015)",
    "jaccard-best": "best complex sentence per simple sentence over word Jaccard, above a threshold",
    "tfidf": "best match over word TF-IDF cosine (Paetzold et al. 2017)",
    "c3g": "CATS C3G, closest-similarity strategy (same as cats / cats-closest)",
    "cats": "CATS C3G, closest-similarity strategy",
    "cats-closest": "CATS C3G, closest-similarity strategy",
    "cats-sequence": "CATS C3G, keeping-sequence strategy",
    "massalign": "MASSAlign-style vicinity-driven search over TF-IDF",
    "lr": "best match over a logistic regression on lexical features (default coefficients or --model / --train-gold)",
    "minilm": "best match over all-MiniLM-L6-v2 bi-encoder cosine",
}
MODEL_FORMAT_VERSION = 1
MODEL_META = "model.json"


class Aligner(Protocol):
    name: str

    def align(self, pairs: Sequence[DocPair], progress: ProgressCallback | None = None) -> list[list[Alignment]]: ...


def resolve_device(device: str = "auto") -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; ``cpu`` / ``cuda`` pass through."""
    if device not in ("auto", "cpu", "cuda") and not device.startswith("cuda:"):
        raise ValueError(f"unknown device {device!r}; use auto, cpu or cuda")
    if device == "cpu":
        return device
    try:
        import torch

        available = torch.cuda.is_available()
    except ImportError:  # pragma: no cover - torch is a dependency
        available = False
    if device == "auto":
        return "cuda" if available else "cpu"
    if not available:
        raise ModelError(f"device {device!r} requested but torch sees no CUDA GPU; use --device cpu or auto")
    return device


def read_model_meta(model_dir: str | Path) -> dict:
    path = Path(model_dir) / MODEL_META
    if not path.is_file():
        raise ModelError(f"{model_dir}: not a model directory (no {MODEL_META})")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ModelError(f"{path}: unreadable: {e}") from None
    if not isinstance(meta, dict):
        raise ModelError(f"{path}: expected a JSON object")
    return meta


def trained_on(meta: Mapping[str, object]) -> str:
    """What the written model of a ``model.json`` was trained on: "train + dev" for a model refitted on
    train + dev (``refit``; its ``dev_metrics`` are the held-out run's), else "train"."""
    refit = meta.get("refit")
    return str(refit.get("final_model", "train")) if isinstance(refit, dict) else "train"


def trained_method(meta: Mapping[str, object]) -> str | None:
    """The method a ``model.json`` names ("method", or "kind" as the CRF's model store writes it); None when it
    names none (a hand-written sequence config)."""
    named = meta.get("method") or meta.get("kind")
    return str(named) if named else None


def model_method(model_dir: str | Path) -> str:
    """The method a model directory was trained for (:func:`trained_method`; CRF when it names none)."""
    return trained_method(read_model_meta(model_dir)) or "crf"


def load_aligner(method: str = DEFAULT_METHOD, model_dir: str | Path | None = None, device: str = "auto",
                 threshold: float | None = None, quantize: bool = False, precision: str | None = None,
                 members: int | None = None) -> Aligner:
    """An aligner by method name (see :data:`METHODS`); ``model_dir`` for ``crf`` and optionally ``lr``/baselines.

    ``quantize`` (crf): int8 dynamic quantization of a cross-encoder (CPU), about 1.8x faster; ``precision`` (crf):
    the semantic channels' sentence encoder (default: int8 on a CPU where ONNX Runtime is installed for a model
    trained in float32; see :meth:`alignment_engine.crf_aligner.CRFAligner.load`); ``members`` (crf): the first k
    members of a seed ensemble (default: all)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    meta = read_model_meta(model_dir) if model_dir is not None else {}
    trained = trained_method(meta)
    if trained and trained != method:  # another method's model: say so, not "bad config" or a missing field
        raise ModelError(f"{model_dir} holds a {trained!r} model, not one for {method!r}: align it with --method "
                         f"{trained} (or leave --method out)")
    if method == "crf":
        if model_dir is None:
            raise ModelError("method 'crf' needs a trained model directory (--model DIR); see `train`")
        from alignment_engine.crf_aligner import CRFAligner  # heavy (torch); imported only when needed

        return CRFAligner.load(model_dir, device=device, quantize=quantize, precision=precision, members=members)
    if method == "sequence":
        config = SequenceConfig()
        if model_dir is not None:
            try:
                config = SequenceConfig(**meta.get("config", {}))
            except (TypeError, ValueError) as e:
                raise ModelError(f"{model_dir}: bad sequence config in {MODEL_META}: {e}") from None
        return SequenceAligner(config)
    if threshold is None and "threshold" in meta:
        threshold = float(meta["threshold"])
    if method == "lr" and model_dir is not None and (Path(model_dir) / "lr.json").is_file():
        return LogisticAligner(_similarity.LogisticSimilarity.load(Path(model_dir) / "lr.json"), threshold)
    dev = resolve_device(device) if method == "minilm" else "cpu"
    return make_baseline(method, threshold, dev)


def train_lr(pairs: Sequence[DocPair], gold: Sequence[Alignment], out_dir: str | Path | None = None,
             dev_pairs: Sequence[DocPair] | None = None, dev_gold: Sequence[Alignment] | None = None) -> LogisticAligner:
    """Fit the logistic-regression baseline on gold (threshold tuned on dev, else on the training data)."""
    from alignment_engine.baselines import tune_threshold
    from alignment_engine.evaluation import group_by_pair
    from alignment_engine.gold import gold_matrix

    by_pair = group_by_pair(gold)
    examples = [(p.simple_sentences(), p.complex_sentences(), gold_matrix(p, by_pair.get(p.pair_id, [])))
                for p in pairs]
    model = _similarity.LogisticSimilarity.fit(examples)
    aligner = LogisticAligner(model)
    tuned = tune_threshold(aligner, dev_pairs or pairs, dev_gold or gold, grid=np.round(np.arange(0.0, 1.0, 0.025), 3).tolist())
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        model.save(out / "lr.json")
        meta = {"format_version": MODEL_FORMAT_VERSION, "method": "lr", "config": {}, "threshold": tuned.threshold,
                "thresholds": {"lr": tuned.threshold}, "dev_metrics": {"task1": tuned.task1, "task2": tuned.task2},
                "data": {"train_pairs": len(pairs), "train_gold_rows": len(gold),
                         "dev_pairs": len(dev_pairs or []), "dev_gold_rows": len(dev_gold or [])}}
        (out / MODEL_META).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return aligner


# ---- paragraph alignment and candidates ---------------------------------------------------

def align_paragraphs(pair: DocPair, similarity: str = "tfidf", algorithm: str = "news",
                     thresholds: dict | None = None) -> list[tuple[int, int, float]]:
    """(complex_paragraph, simple_paragraph, score) links; "news" = Algorithm 2, "wikipedia" = Algorithms 3+4."""
    return _paragraphs.align_paragraphs(pair, similarity, algorithm, thresholds)


def candidate_pairs(pair: DocPair, links: list[tuple[int, int, float]]) -> list[tuple[str, str]]:
    """(simple_id, complex_id) of every sentence pair inside linked paragraphs (the paper's Newsela strategy)."""
    return _paragraphs.candidate_pairs(pair, links)


def top_k_candidates(pair: DocPair, k: int = 3, measures: Sequence[str] = ("jaccard", "tfidf", "c3g")
                     ) -> list[tuple[str, str]]:
    """For each simple sentence the top-k complex sentences under each measure (the paper's Wikipedia strategy)."""
    simple, complex_ = pair.simple_sentences(), pair.complex_sentences()
    if not simple or not complex_ or k <= 0:
        return []
    sids, cids = pair.simple_ids(), pair.complex_ids()
    chosen = np.zeros((len(simple), len(complex_)), dtype=bool)
    kk = min(k, len(complex_))
    rows = np.arange(len(simple)).reshape(-1, 1)
    for name in measures:
        mat = _similarity.similarity_matrix(name, simple, complex_)
        top = np.argsort(-mat, axis=1, kind="stable")[:, :kk]
        chosen[rows, top] = True
    return [(sids[i], cids[j]) for i, j in zip(*np.nonzero(chosen), strict=True)]


def similarity_matrix(name: str, simple: list[str], complex: list[str]) -> np.ndarray:
    """m x n matrix (rows = simple sentences) of a measure of :data:`alignment_engine.similarity.MEASURES`."""
    return _similarity.similarity_matrix(name, simple, complex)


def evaluate(gold: list[Alignment], pred: list[Alignment], pairs: list[DocPair] | None = None,
             by_document: bool = False) -> dict:
    """Task 1 and Task 2 P/R/F1, identical strings left out (agrees with ../shared/tools/score_alignments.py);
    ``by_document``: also every document's (``documents``, by pair id)."""
    return _evaluate(gold, pred, pairs, by_document=by_document)


def use_embeddings_cache(path: str | Path | None) -> None:
    """Keep the sentence embeddings of the semantic channels (the default model's) in the SQLite file ``path``
    too, created if missing, so that later runs and other processes embed only sentences never seen before;
    ``None``: in memory only (the engine's default; the product sets ``EMBEDDINGS_CACHE``). A file that is not
    such a store (or cannot be written) raises :class:`InputError` naming it and changes nothing."""
    import sqlite3

    from alignment_engine import semantic

    if path is None:
        semantic.use_store(None)
        return
    store = semantic.EmbeddingStore(path)
    try:
        store.check()
    except (sqlite3.Error, OSError) as e:
        raise InputError(f"{path}: not a usable embeddings cache ({e})") from e
    semantic.use_store(store)  # the store checked, with its open connection


def train_defaults() -> dict:
    """The options :func:`train` uses when given none (``CRFConfig().to_dict()``, no torch import)."""
    from alignment_engine.crf_config import CRFConfig

    return CRFConfig().to_dict()


def train(train_pairs: Sequence[DocPair], train_gold: Sequence[Alignment], dev_pairs: Sequence[DocPair] | None = None,
          dev_gold: Sequence[Alignment] | None = None, out_dir: str | Path = "var/models/crf", seed: int = 0,
          device: str = "auto", progress: ProgressCallback | None = None,
          unlabelled: Mapping[str, Iterable[tuple[str, str]]] | None = None, **options: object) -> Path:
    """Train the neural CRF aligner (forwards to ``alignment_engine.training.train_model``).

    With no ``options`` this trains ``CRFConfig()``, the best configuration measured (the same model as
    ``python -m alignment_engine train`` without ``--set``); each option changes one ``CRFConfig`` field.
    ``unlabelled`` (pair id -> (simple_id, complex_id) cells nobody labelled) marks the pairs whose
    labels are partial: in train pairs those cells are marginalised out instead of read as not aligned;
    in dev pairs predictions on them are left out of the dev figures (neither right nor wrong).
    """
    from alignment_engine.training import train_model

    return train_model(train_pairs, train_gold, dev_pairs, dev_gold, out_dir=out_dir, seed=seed, device=device,
                       progress=progress, unlabelled=unlabelled, **options)  # type: ignore[arg-type]


def align(pairs: Sequence[DocPair], method: str = DEFAULT_METHOD, model_dir: str | Path | None = None,
          device: str = "auto", progress: ProgressCallback | None = None) -> list[list[Alignment]]:
    """Shortcut: ``load_aligner(method, model_dir, device).align(pairs, progress)``."""
    return load_aligner(method, model_dir, device).align(pairs, progress)
