"""The engine's one scorer: Task 1 / Task 2 precision, recall and F1 (Jiang et al. 2020), identical
strings left out, and recall / precision by alignment-group shape.

The Task 1 / Task 2 blocks mirror ``../shared/tools/score_alignments.py`` exactly (same rounding, same
handling of duplicates, out-of-scope rows and identical-string pairs), so both report the same figures
for the same files. Training (``model.json`` ``dev_metrics``), the command line and the product's model
registry all score with :func:`evaluate`.

Group shapes (``groups`` in the result): the connected components of the positive pairs of one side
(gold or prediction; a component is a set of complex and simple sentences linked by pairs) are
``1:1``, ``1:n`` (one complex sentence split into n simple ones), ``n:1`` (n complex sentences merged
into one simple one) or ``m:n``. ``groups.gold[shape]`` gives the share of the Task 1 gold pairs in
gold groups of that shape and their recall; ``groups.pred[shape]`` the precision of the predicted
pairs in predicted groups of that shape (Task 1 pairs, identical strings left out).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from alignment_engine.errors import InputError
from alignment_engine.gold import STRICT_LABELS
from alignment_engine.ids import pair_id_of
from alignment_engine.types import Alignment, DocPair

POSITIVE = {"aligned": True, "partialAligned": True, "identical": True, "notAligned": False}
STRICT = tuple(sorted(STRICT_LABELS))
SHAPES = ("1:1", "1:n", "n:1", "m:n")


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
    return pair_id_of(sentence_id)


def group_shapes(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Shape of the connected component (of ``pairs``) that each ``(simple_id, complex_id)`` pair belongs to.

    ``1:1``; ``1:n`` one complex sentence with several simple ones (a split); ``n:1`` several complex
    sentences with one simple one (a merge); ``m:n`` several of both.
    """
    parent: dict[tuple[int, str], tuple[int, str]] = {}

    def find(x: tuple[int, str]) -> tuple[int, str]:
        root = x
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    items = list(dict.fromkeys(pairs))
    for s, c in items:
        a, b = find((0, s)), find((1, c))
        if a != b:
            parent[a] = b
    n_simple: dict[tuple[int, str], set[str]] = {}
    n_complex: dict[tuple[int, str], set[str]] = {}
    for s, c in items:
        root = find((0, s))
        n_simple.setdefault(root, set()).add(s)
        n_complex.setdefault(root, set()).add(c)
    out: dict[tuple[str, str], str] = {}
    for s, c in items:
        root = find((0, s))
        many_s, many_c = len(n_simple[root]) > 1, len(n_complex[root]) > 1
        out[(s, c)] = "m:n" if many_s and many_c else "1:n" if many_s else "n:1" if many_c else "1:1"
    return out


def shape_scores(gold_pos: set[tuple[str, str]], pred_pos: set[tuple[str, str]],
                 scored: Callable[[tuple[str, str]], bool]) -> dict:
    """Recall per gold group shape and precision per predicted group shape, over the pairs ``scored`` keeps.

    Groups are the components of all positive pairs of each side (identical strings included, so a
    split whose first part is copied is still a split); only the pairs ``scored`` keeps are counted.
    """
    g_shape, p_shape = group_shapes(gold_pos), group_shapes(pred_pos)
    g_all = [k for k in gold_pos if scored(k)]
    p_all = [k for k in pred_pos if scored(k)]
    out: dict = {"gold": {}, "pred": {}}
    for shape in SHAPES:
        g = [k for k in g_all if g_shape[k] == shape]
        tp = sum(1 for k in g if k in pred_pos)
        out["gold"][shape] = {"gold": len(g), "share": round(len(g) / len(g_all), 6) if g_all else 0.0,
                              "tp": tp, "recall": round(tp / len(g), 6) if g else 0.0}
        p = [k for k in p_all if p_shape[k] == shape]
        tp = sum(1 for k in p if k in gold_pos)
        out["pred"][shape] = {"pred": len(p), "tp": tp, "precision": round(tp / len(p), 6) if p else 0.0}
    return out


def pair_texts(pairs: Iterable[DocPair]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for pair in pairs:
        texts.update(pair.texts())
    return texts


@dataclass
class Matched:
    """Gold and predicted rows matched by pair, as :func:`evaluate` scores them (:func:`match_rows`)."""

    gold: dict[tuple[str, str], str]  # label of every gold (simple_id, complex_id) pair
    pred: dict[tuple[str, str], str]  # label of every predicted pair in scope (duplicates resolved)
    texts: dict[str, str]  # sentence id -> text
    scope: set[str]  # the pair ids scored
    out_of_scope: int
    duplicates: int
    conflicts: int

    def ident(self, k: tuple[str, str]) -> bool:
        return norm(self.texts.get(k[0], "")) == norm(self.texts.get(k[1], "\0"))

    def positives(self) -> tuple[set[tuple[str, str]], set[tuple[str, str]], set[tuple[str, str]]]:
        """(gold positive pairs, predicted positive pairs, those of either that are identical strings)."""
        gold_pos = {k for k, lab in self.gold.items() if POSITIVE[lab]}
        pred_pos = {k for k, lab in self.pred.items() if POSITIVE[lab]}
        return gold_pos, pred_pos, {k for k in gold_pos | pred_pos if self.ident(k)}


def match_rows(gold: Sequence[Alignment], pred: Sequence[Alignment], pairs: Sequence[DocPair] | None = None) -> Matched:
    """Validate and match ``gold`` and ``pred`` by pair, as :func:`evaluate` does before scoring.

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
    return Matched(gold_map, pred_map, texts, scope, out_of_scope, dup, conflicts)


def evaluate(gold: Sequence[Alignment], pred: Sequence[Alignment], pairs: Sequence[DocPair] | None = None,
             by_document: bool = False) -> dict:
    """Scores of ``pred`` against ``gold``: ``task1``, ``task2``, ``with_identical``, ``groups`` and ``counts``
    (rows matched by :func:`match_rows`). ``by_document``: also ``documents``, every scored document's Task 1 and
    Task 2 by pair id (their counts sum to the totals), so that a researcher sees which documents an aligner fails on."""
    m = match_rows(gold, pred, pairs)
    gold_pos, pred_pos, identical = m.positives()
    gold_strict = {k for k, lab in m.gold.items() if lab in STRICT}
    pred_strict = {k for k, lab in m.pred.items() if lab in STRICT}

    def block(g: set, p: set) -> dict:
        return prf(len(g & p), len(p), len(g))

    tasks = {"task1": (gold_pos - identical, pred_pos - identical),
             "task2": (gold_strict - identical, pred_strict - identical)}
    extra: dict = {}
    if by_document:
        per_task = {task: _per_document(g, p) for task, (g, p) in tasks.items()}
        extra["documents"] = {doc: {task: per_task[task](doc) for task in tasks} for doc in sorted(m.scope, key=_natural)}
    return {
        **{task: block(g, p) for task, (g, p) in tasks.items()},
        "with_identical": block(gold_pos, pred_pos),
        "groups": shape_scores(gold_pos, pred_pos, lambda k: k not in identical),
        "counts": {
            "docs_scored": len(m.scope),
            "gold_positive_pairs": len(gold_pos),
            "gold_identical_string_pairs": len(gold_pos & identical),
            "pred_rows": len(pred),
            "pred_rows_out_of_scope": m.out_of_scope,
            "pred_duplicate_rows": m.duplicates,
            "pred_conflicting_labels": m.conflicts,
            "pred_positive_pairs": len(pred_pos),
        },
        **extra,
    }


def _per_document(gold: set[tuple[str, str]], pred: set[tuple[str, str]]) -> Callable[[str], dict]:
    """The :func:`prf` block of one document (by pair id) from the pairs of every document."""
    n_gold, n_pred, tp = (Counter(_pair_of(k[0]) for k in keys) for keys in (gold, pred, gold & pred))
    return lambda doc: prf(tp[doc], n_pred[doc], n_gold[doc])


def _natural(pair_id: str) -> tuple[int, int | str]:
    """Sort key of pair ids: numbers (ASCII digits) in numeric order, before other ids."""
    return (0, int(pair_id)) if pair_id.isascii() and pair_id.isdigit() else (1, pair_id)


def group_by_pair(rows: Iterable[Alignment]) -> dict[str, list[Alignment]]:
    out: dict[str, list[Alignment]] = {}
    for r in rows:
        out.setdefault(_pair_of(r.simple_id), []).append(r)
    return out


def paragraph_prf(pred_links: set[tuple[str, int, int]], gold_links: set[tuple[str, int, int]]) -> dict:
    """Precision / recall / F1 of paragraph links ``(pair_id, complex_paragraph, simple_paragraph)``."""
    return prf(len(pred_links & gold_links), len(pred_links), len(gold_links))
