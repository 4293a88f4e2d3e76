"""Labelled data for training and evaluating aligners: verified labels (and, on request,
imported reference labels) of a corpus or a language, as the engine's plain pairs and gold rows,
split by article group exactly as the corpus's exports split it (no article in two splits, and an
article an export puts in dev or test never in a model's train split), and the Task 1 / Task 2 score of an aligner
on them. Retraining and the baseline registry read the same data, so their metrics compare.

Complete or partial, per document pair: a pair is **complete** when every one of its candidate
pairs has a label (an 'all candidates' job verified to the end) or it has imported reference
labels (a full annotation); a cell that is not a labelled positive is then not aligned, as always.
Otherwise it is **partial** (a job that chose its items by a selection strategy, or one not verified
to the end): its unlabelled candidates are *unknown*, listed in ``LabelledData.unlabelled``, and
training marginalises them out (``alignment_engine.api.train(unlabelled=...)``) instead of reading
them as not aligned; scoring leaves predictions on them out (neither right nor wrong).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from alignment_engine.types import Alignment, DocPair
from annotation.models import CandidatePair, VerifiedLabel
from curation.models import Corpus, DocumentPair, ReferenceAlignment
from curation.plain import PlainPair, load_plain_pairs
from curation.queries import article_splits

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
    #: partial pairs: pair id -> the (simple id, complex id) candidates nobody labelled
    unlabelled: dict[str, set[tuple[str, str]]] = field(default_factory=dict)

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for s in SPLITS:
            labels = self.gold[s]
            partial = [p.pair_id for p in self.pairs[s] if p.pair_id in self.unlabelled]
            out[s] = {
                "articles": len(self.articles[s]),
                "pairs": len(self.pairs[s]),
                "labels": len(labels),
                "aligned": sum(a.label == "aligned" for a in labels),
                "partialAligned": sum(a.label == "partialAligned" for a in labels),
                "notAligned": sum(a.label == "notAligned" for a in labels),
                "partial_pairs": len(partial),
                "unlabelled": sum(len(self.unlabelled[p]) for p in partial),
            }
        return out


def split_ratios(ratios: Sequence[float]) -> dict[str, float]:
    """(train, dev, test) shares as the ``{split: weight}`` that :func:`assign_splits` takes."""
    if len(ratios) != 3 or any(r < 0 for r in ratios) or sum(ratios) <= 0:
        raise RetrainError("ratios must be three non-negative numbers (train, dev, test)")
    return dict(zip(SPLITS, (float(r) for r in ratios), strict=True))


def _label_rows(corpus_ids: Sequence[int], reference_roles: Sequence[str]
                ) -> tuple[dict[tuple[int, int], tuple[int, str]], set[int]]:
    """(simple pk, complex pk) -> (pair pk, label), verified labels overriding imported ones; and the
    pairs with imported reference labels (fully annotated)."""
    rows: dict[tuple[int, int], tuple[int, str]] = {}
    referenced: set[int] = set()
    if reference_roles:
        ref = ReferenceAlignment.objects.filter(pair__corpus_id__in=corpus_ids, role__in=list(reference_roles))
        for pair_id, s, c, label in ref.values_list("pair_id", "simple_id", "complex_id", "label").order_by("pk"):
            rows[(s, c)] = (pair_id, label)
            referenced.add(pair_id)
    verified = VerifiedLabel.objects.filter(candidate__pair__corpus_id__in=corpus_ids)
    for v_pair, v_simple, v_complex, v_label in verified.values_list(
        "candidate__pair_id", "candidate__simple_id", "candidate__complex_id", "label"
    ).order_by("pk"):
        rows[(int(v_simple), int(v_complex))] = (int(v_pair), str(v_label))
    return rows, referenced


def _unlabelled_candidates(labelled: dict[int, list[tuple[int, int, str]]],
                           complete: set[int]) -> dict[int, set[tuple[int, int]]]:
    """pair pk -> (simple pk, complex pk) of its candidates without a label, for the labelled pairs that
    are partial only (not in ``complete`` and with at least one candidate left unlabelled)."""
    have = {pk: {(s, c) for s, c, _ in rows} for pk, rows in labelled.items()}
    out: dict[int, set[tuple[int, int]]] = defaultdict(set)
    for pair_pk, s, c in CandidatePair.objects.filter(pair_id__in=list(labelled)).exclude(
            pair_id__in=list(complete)).values_list("pair_id", "simple_id", "complex_id"):
        if (s, c) not in have.get(pair_pk, set()):
            out[pair_pk].add((s, c))
    return out


def export_splits(corpus_ids: Iterable[int], ratios: Sequence[float] = DEFAULT_RATIOS, seed: int = 0) -> dict[str, str]:
    """``"corpus id:slug"`` -> split for every article of the corpora, each corpus split over all of
    its articles exactly as its Manual and Auto exports split it with the same ratios and seed
    (``assign_splits`` over the corpus's slugs). Retraining and the registry read their splits from
    here, so an article an export puts in dev or test is never in a model's train split (a split
    drawn over the labelled articles alone would put other articles there)."""
    weights = split_ratios(ratios)
    return {f"{corpus_id}:{slug}": split for corpus_id in corpus_ids
            for slug, split in article_splits(corpus_id, weights, seed).items()}


def collect_labelled_data(
    corpus_ids: Sequence[int],
    seed: int = 0,
    ratios: Sequence[float] = DEFAULT_RATIOS,
    reference_roles: Sequence[str] = (),
) -> LabelledData:
    rows, referenced = _label_rows(corpus_ids, reference_roles)
    by_pair: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    for (s, c), (pair_pk, label) in rows.items():
        by_pair[pair_pk].append((s, c, label))
    open_cells = _unlabelled_candidates(by_pair, referenced)
    article_key = {
        pk: f"{corpus_id}:{slug}"
        for pk, corpus_id, slug in DocumentPair.objects.filter(pk__in=list(by_pair)).values_list(
            "pk", "article__corpus_id", "article__slug"
        )
    }
    split_of = export_splits(corpus_ids, ratios, seed)
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
        unlabelled = {(id_of[s], id_of[c]) for s, c in open_cells.get(plain.pk, ()) if s in id_of and c in id_of}
        if unlabelled:
            data.unlabelled[plain.doc.pair_id] = unlabelled
        data.pairs[split].append(plain.doc)
        data.gold[split].extend(gold)
        if article_key[plain.pk] not in data.articles[split]:
            data.articles[split].append(article_key[plain.pk])
    return data


def score(aligner: Any, pairs: list[DocPair], gold: list[Alignment],
          unlabelled: dict[str, set[tuple[str, str]]] | None = None) -> dict[str, Any]:
    """Task 1 / Task 2 precision, recall and F1 of an aligner on labelled pairs. A prediction on an
    unlabelled candidate of a partial pair (``unlabelled``) is left out: nobody knows if it is right."""
    from alignment_engine.training import score_docs  # torch: only when something is scored

    if not pairs:
        return {}
    result = score_docs(pairs, gold, aligner.align(pairs), unlabelled)
    return {k: result[k] for k in ("task1", "task2") if k in result} | {"counts": result.get("counts", {})}


def corpus_ids_for(corpus: Corpus | None, language: str) -> list[int]:
    if corpus is not None:
        return [corpus.pk]
    return list(Corpus.objects.filter(language=language).values_list("pk", flat=True))
