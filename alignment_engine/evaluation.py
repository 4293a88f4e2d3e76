"""Task 1 / Task 2 precision, recall and F1 (Jiang et al. 2020), identical strings left out.

Mirrors ``../shared/tools/score_alignments.py`` exactly (same rounding, same handling of duplicates,
out-of-scope rows and identical-string pairs), so both report the same figures for the same files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from alignment_engine.errors import InputError
from alignment_engine.types import Alignment, DocPair

POSITIVE = {"aligned": True, "partialAligned": True, "identical": True, "notAligned": False}
STRICT = ("aligned", "identical")


def norm(text: str) -> str:
    return " ".join(text.split())


def prf(tp: int, n_pred: int, n_gold: int) -> dict:
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {
        "precision": round(p, 6), "recall": round(r, 6), "f1": round(f, 6),
        "tp": tp, "fp": n_pred - tp, "fn": n_gold - tp, "n_pred": n_pred, "n_gold": n_gold,
    }


def _pair_of(sentence_id: str) -> str:
    return sentence_id.split("-", 1)[0]


def pair_texts(pairs: Iterable[DocPair]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for pair in pairs:
        texts.update(pair.texts())
    return texts


def evaluate(gold: Sequence[Alignment], pred: Sequence[Alignment], pairs: Sequence[DocPair] | None = None) -> dict:
    """Scores of ``pred`` against ``gold``: ``task1``, ``task2``, ``with_identical`` and ``counts``.

    With ``pairs`` only their documents are scored and identity is judged on their sentence texts;
    without, the gold's documents and texts are used (prediction texts only for ids found in neither).
    """
    for label_row in gold:
        if label_row.label not in POSITIVE:
            raise InputError(f"unknown gold label {label_row.label!r}")
    texts: dict[str, str] = {}
    for r in gold:
        texts.setdefault(r.simple_id, r.simple_text)
        texts.setdefault(r.complex_id, r.complex_text)
    given = pair_texts(pairs) if pairs is not None else None
    if given is not None:
        texts.update(given)
        scope = {_pair_of(i) for i in given} | {p.pair_id for p in pairs or ()}
        missing = sorted({_pair_of(r.simple_id) for r in gold} - scope)
        if missing:
            raise InputError(f"gold documents missing from the pairs: {', '.join(missing[:10])}")
        for r in gold:
            for i in (r.simple_id, r.complex_id):
                if i not in given:
                    raise InputError(f"gold id {i} does not exist in the pairs")
    else:
        scope = {_pair_of(r.simple_id) for r in gold}

    gold_map: dict[tuple[str, str], str] = {}
    for r in gold:
        k = (r.simple_id, r.complex_id)
        if k in gold_map:
            if POSITIVE[gold_map[k]] != POSITIVE[r.label]:
                raise InputError(f"gold pair {k} appears again with a conflicting label")
            continue
        gold_map[k] = r.label

    pred_map: dict[tuple[str, str], str] = {}
    out_of_scope = dup = conflicts = 0
    for r in pred:
        if r.label not in POSITIVE:
            raise InputError(f"unknown prediction label {r.label!r}")
        if _pair_of(r.simple_id) not in scope:
            out_of_scope += 1
            continue
        for i, t in ((r.simple_id, r.simple_text), (r.complex_id, r.complex_text)):
            if given is None and i not in texts:
                texts[i] = t
            elif given is not None and i not in given:
                raise InputError(f"prediction uses sentence id {i} that does not exist in the pairs")
        k = (r.simple_id, r.complex_id)
        if k in pred_map:
            dup += 1
            if POSITIVE[pred_map[k]] != POSITIVE[r.label]:
                conflicts += 1
            upgrade = POSITIVE[r.label] and not POSITIVE[pred_map[k]]  # a positive row wins over notAligned
            if upgrade or (r.label == "aligned" and pred_map[k] == "partialAligned"):
                pred_map[k] = r.label
            continue
        pred_map[k] = r.label

    def ident(k: tuple[str, str]) -> bool:
        return norm(texts.get(k[0], "")) == norm(texts.get(k[1], "\0"))

    gold_pos = {k for k, lab in gold_map.items() if POSITIVE[lab]}
    gold_strict = {k for k, lab in gold_map.items() if lab in STRICT}
    pred_pos = {k for k, lab in pred_map.items() if POSITIVE[lab]}
    pred_strict = {k for k, lab in pred_map.items() if lab in STRICT}
    identical = {k for k in gold_pos | pred_pos if ident(k)}

    def block(g: set, p: set) -> dict:
        return prf(len(g & p), len(p), len(g))

    return {
        "task1": block(gold_pos - identical, pred_pos - identical),
        "task2": block(gold_strict - identical, pred_strict - identical),
        "with_identical": block(gold_pos, pred_pos),
        "counts": {
            "docs_scored": len(scope),
            "gold_positive_pairs": len(gold_pos),
            "gold_identical_string_pairs": len(gold_pos & identical),
            "pred_rows": len(pred),
            "pred_rows_out_of_scope": out_of_scope,
            "pred_duplicate_rows": dup,
            "pred_conflicting_labels": conflicts,
            "pred_positive_pairs": len(pred_pos),
        },
    }


def gold_matrix(pair: DocPair, gold: Iterable[Alignment], strict: bool = False):  # type: ignore[no-untyped-def]
    """0/1 numpy matrix (simple x complex, document order) of the gold positives of one pair."""
    import numpy as np

    s_index = {sid: i for i, sid in enumerate(pair.simple_ids())}
    c_index = {cid: j for j, cid in enumerate(pair.complex_ids())}
    out = np.zeros((len(s_index), len(c_index)), dtype=np.int8)
    for r in gold:
        ok = r.label in STRICT if strict else POSITIVE.get(r.label, False)
        if ok and r.simple_id in s_index and r.complex_id in c_index:
            out[s_index[r.simple_id], c_index[r.complex_id]] = 1
    return out


def group_by_pair(rows: Iterable[Alignment]) -> dict[str, list[Alignment]]:
    out: dict[str, list[Alignment]] = {}
    for r in rows:
        out.setdefault(_pair_of(r.simple_id), []).append(r)
    return out


def paragraph_prf(pred_links: set[tuple[str, int, int]], gold_links: set[tuple[str, int, int]]) -> dict:
    """Precision / recall / F1 of paragraph links ``(pair_id, complex_paragraph, simple_paragraph)``."""
    return prf(len(pred_links & gold_links), len(pred_links), len(gold_links))
