"""Labelled data for training and evaluating aligners: verified labels (and, on request,
imported reference labels) of a corpus or a language, as the engine's plain pairs and gold rows,
split by article group (no article in two splits), and the Task 1 / Task 2 score of an aligner
on them. Retraining and the baseline registry read the same data, so their metrics compare.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from alignment_engine.types import Alignment, DocPair
from annotation.models import VerifiedLabel
from curation.curate.splits import assign_splits
from curation.models import Corpus, DocumentPair, ReferenceAlignment
from curation.plain import PlainPair, load_plain_pairs

SPLITS = ("train", "dev", "test")
DEFAULT_RATIOS = (0.7, 0.1, 0.2)  # Newsela-Manual: 35/5/10 article groups


class RetrainError(ValueError):
    """Not enough labelled data, or bad parameters."""


@dataclass
class LabelledData:
    """Plain pairs and gold rows per split, plus the counts a model version records."""

    pairs: dict[str, list[DocPair]] = field(default_factory=lambda: {s: [] for s in SPLITS})
    gold: dict[str, list[Alignment]] = field(default_factory=lambda: {s: [] for s in SPLITS})
    articles: dict[str, list[str]] = field(default_factory=lambda: {s: [] for s in SPLITS})

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for s in SPLITS:
            labels = self.gold[s]
            out[s] = {
                "articles": len(self.articles[s]),
                "pairs": len(self.pairs[s]),
                "labels": len(labels),
                "aligned": sum(a.label == "aligned" for a in labels),
                "partialAligned": sum(a.label == "partialAligned" for a in labels),
                "notAligned": sum(a.label == "notAligned" for a in labels),
            }
        return out


def split_ratios(ratios: Sequence[float]) -> dict[str, float]:
    """(train, dev, test) shares as the ``{split: weight}`` that :func:`assign_splits` takes."""
    if len(ratios) != 3 or any(r < 0 for r in ratios) or sum(ratios) <= 0:
        raise RetrainError("ratios must be three non-negative numbers (train, dev, test)")
    return dict(zip(SPLITS, (float(r) for r in ratios), strict=True))


def _label_rows(corpus_ids: Sequence[int], reference_roles: Sequence[str]) -> dict[tuple[int, int], tuple[int, str]]:
    """(simple pk, complex pk) -> (pair pk, label); verified labels override imported ones."""
    rows: dict[tuple[int, int], tuple[int, str]] = {}
    if reference_roles:
        ref = ReferenceAlignment.objects.filter(pair__corpus_id__in=corpus_ids, role__in=list(reference_roles))
        for pair_id, s, c, label in ref.values_list("pair_id", "simple_id", "complex_id", "label").order_by("pk"):
            rows[(s, c)] = (pair_id, label)
    verified = VerifiedLabel.objects.filter(candidate__pair__corpus_id__in=corpus_ids)
    for v_pair, v_simple, v_complex, v_label in verified.values_list(
        "candidate__pair_id", "candidate__simple_id", "candidate__complex_id", "label"
    ).order_by("pk"):
        rows[(int(v_simple), int(v_complex))] = (int(v_pair), str(v_label))
    return rows


def collect_labelled_data(
    corpus_ids: Sequence[int],
    seed: int = 0,
    ratios: Sequence[float] = DEFAULT_RATIOS,
    reference_roles: Sequence[str] = (),
) -> LabelledData:
    rows = _label_rows(corpus_ids, reference_roles)
    by_pair: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    for (s, c), (pair_pk, label) in rows.items():
        by_pair[pair_pk].append((s, c, label))
    article_key = {
        pk: f"{corpus_id}:{slug}"
        for pk, corpus_id, slug in DocumentPair.objects.filter(pk__in=list(by_pair)).values_list(
            "pk", "article__corpus_id", "article__slug"
        )
    }
    split_of = assign_splits(article_key.values(), split_ratios(ratios), seed)
    data = LabelledData()
    plains: list[PlainPair] = load_plain_pairs(sorted(by_pair, key=lambda pk: (article_key[pk], pk)))
    for plain in plains:
        split = split_of[article_key[plain.pk]]
        texts = plain.doc.texts()
        id_of = {pk: sid for sid, pk in plain.sentence_pk.items()}
        gold = [
            Alignment(label=label, simple_id=id_of[s], complex_id=id_of[c], simple_text=texts[id_of[s]],
                      complex_text=texts[id_of[c]])
            for s, c, label in sorted(by_pair[plain.pk])
            if s in id_of and c in id_of
        ]
        data.pairs[split].append(plain.doc)
        data.gold[split].extend(gold)
        if article_key[plain.pk] not in data.articles[split]:
            data.articles[split].append(article_key[plain.pk])
    return data


def score(aligner: Any, pairs: list[DocPair], gold: list[Alignment]) -> dict[str, Any]:
    """Task 1 / Task 2 precision, recall and F1 of an aligner on labelled pairs."""
    from alignment_engine import api

    if not pairs:
        return {}
    predicted = [a for rows in aligner.align(pairs) for a in rows]
    result = api.evaluate(gold, predicted, pairs)
    return {k: result[k] for k in ("task1", "task2") if k in result} | {"counts": result.get("counts", {})}


def corpus_ids_for(corpus: Corpus | None, language: str) -> list[int]:
    if corpus is not None:
        return [corpus.pk]
    return list(Corpus.objects.filter(language=language).values_list("pk", flat=True))
