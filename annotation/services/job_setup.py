"""Labeling-job creation: candidate pairs by strategy, gold test questions with explanations."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import QuerySet

from alignment_engine.ids import COMPLEX, SentenceId
from annotation.models import JobItem, LabelingJob, TestQuestion, VerifiedLabel
from annotation.models.labeling import new_seed
from annotation.services import candidates, selection
from curation.models import AlignmentLabel, Corpus, DocumentPair, ReferenceAlignment, Sentence
from curation.plain import load_plain_pairs

DEFAULT_EXPLANATIONS = {
    AlignmentLabel.ALIGNED.value: (
        "Aligned: the simple sentence says the same thing as the complex sentence, in simpler or shorter words. "
        "Nothing important is added or lost."
    ),
    AlignmentLabel.PARTIAL.value: (
        "Partially aligned: the two sentences share some content, but one of them has important information "
        "the other lacks (for example one half of a split or merged sentence)."
    ),
    AlignmentLabel.NOT_ALIGNED.value: (
        "Not aligned: the sentences are about different things, even if they share some words or names."
    ),
}


class JobError(ValueError):
    """A job cannot be created as asked (bad gold file, no candidates...)."""


@dataclass(frozen=True)
class GoldRow:
    simple_id: str
    complex_id: str
    label: str
    explanation: str = ""


@dataclass
class JobSettings:
    judgments_per_pair: int = 5
    test_question_every: int = 5
    min_seconds: int = 10
    accuracy_threshold: float = 0.85
    min_test_questions: int = 4
    reservation_minutes: int = 15
    top_k: int = 3
    instructions: str = ""
    pay_per_judgment: Decimal = Decimal(0)
    pay_per_hour: Decimal = Decimal(0)
    currency: str = "USD"
    selection: selection.Selection = field(default_factory=selection.Selection)  # which candidates become items
    # candidate pairs already verified (by this or an earlier job) are not labelled again: a second,
    # uncertainty-chosen job after a random one spends its budget on new pairs
    skip_verified: bool = True
    extra: dict[str, object] = field(default_factory=dict)


def parse_gold_tsv(text: str, where: str = "gold.tsv") -> list[GoldRow]:
    """``label, simple_id, complex_id, explanation`` (4 columns) or the alignment TSV
    (``label, simple_id, complex_id, simple, complex, score``) with an optional 7th column explanation."""
    rows: list[GoldRow] = []
    labels = set(AlignmentLabel.values)
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.rstrip("\r\n").split("\t")
        if n == 1 and cols[0].strip().lower() == "label":
            continue
        if len(cols) < 3:
            raise JobError(f"{where}:{n}: expected at least 3 tab-separated columns (label, simple_id, complex_id)")
        label = cols[0].strip()
        if label not in labels:
            raise JobError(f"{where}:{n}: unknown label {label!r} (use {', '.join(sorted(labels))})")
        explanation = cols[3] if len(cols) == 4 else (cols[6] if len(cols) >= 7 else "")
        rows.append(GoldRow(cols[1].strip(), cols[2].strip(), label, explanation.strip()))
    return rows


def _sentence_lookup(corpus: Corpus, ids: Iterable[str]) -> dict[str, tuple[int, int]]:
    """sentence id -> (document pair pk, sentence pk) for the ids that exist in the corpus."""
    wanted: dict[str, SentenceId] = {}
    for sid in ids:
        try:
            wanted[sid] = SentenceId.parse(sid)
        except ValueError:
            continue  # reported as not in the corpus
    pairs = {
        p.pair_id: p for p in DocumentPair.objects.filter(corpus=corpus, pair_id__in={w.pair_id for w in wanted.values()})
    }
    out: dict[str, tuple[int, int]] = {}
    by_doc: dict[int, dict[tuple[int, int], int]] = {}
    for sid, parsed in wanted.items():
        pair = pairs.get(parsed.pair_id)
        if pair is None:
            continue
        p, s = parsed.position
        doc_id = pair.complex_id if parsed.side == COMPLEX else pair.simple_id
        if doc_id not in by_doc:
            by_doc[doc_id] = {
                (pp, ss): pk
                for pk, pp, ss in Sentence.objects.filter(document_id=doc_id).values_list("pk", "paragraph_position", "position")
            }
        pk = by_doc[doc_id].get((p, s))
        if pk is not None:
            out[sid] = (pair.pk, pk)
    return out


def gold_from_rows(corpus: Corpus, rows: Sequence[GoldRow]) -> list[tuple[int, str, str]]:
    """(candidate pk, gold label, explanation) for uploaded gold rows; unknown ids raise JobError."""
    lookup = _sentence_lookup(corpus, [r.simple_id for r in rows] + [r.complex_id for r in rows])
    missing = sorted({sid for r in rows for sid in (r.simple_id, r.complex_id) if sid not in lookup})
    if missing:
        raise JobError(f"{len(missing)} sentence id(s) not in corpus {corpus.name}: {', '.join(missing[:5])}")
    out = []
    for r in rows:
        pair_pk, simple_pk = lookup[r.simple_id]
        _, complex_pk = lookup[r.complex_id]
        cand = candidates.manual_candidate(pair_pk, simple_pk, complex_pk)
        out.append((cand.pk, r.label, r.explanation or DEFAULT_EXPLANATIONS[r.label]))
    return out


def gold_from_reference(corpus: Corpus, pairs: QuerySet[DocumentPair], limit_not_aligned: int = 200) -> list[tuple[int, str, str]]:
    """Gold rows imported as ReferenceAlignment (role gold), plus hard notAligned pairs of the same
    document pairs (top lexical matches that the gold does not list: absent rows are not aligned)."""
    refs = ReferenceAlignment.objects.filter(pair__in=pairs, role=ReferenceAlignment.Role.GOLD)
    out = []
    gold_keys: set[tuple[int, int]] = set()
    for pair_pk, s, c, label in refs.values_list("pair_id", "simple_id", "complex_id", "label"):
        cand = candidates.manual_candidate(pair_pk, s, c)
        gold_keys.add((s, c))
        out.append((cand.pk, label, DEFAULT_EXPLANATIONS[label]))
    has_not_aligned = any(label == AlignmentLabel.NOT_ALIGNED for _, label, _ in out)
    if out and not has_not_aligned:
        added = 0
        pair_pks = DocumentPair.objects.filter(pk__in=refs.values("pair_id").distinct()).values_list("pk", flat=True)
        for plain in load_plain_pairs(pair_pks):
            for sid, cid in candidates.top_k_candidates(plain.doc, k=1, measures=("jaccard",)):
                key = (plain.sentence_pk[sid], plain.sentence_pk[cid])
                if key in gold_keys or added >= limit_not_aligned:
                    continue
                cand = candidates.manual_candidate(plain.pk, key[0], key[1])
                out.append((cand.pk, AlignmentLabel.NOT_ALIGNED.value, DEFAULT_EXPLANATIONS[AlignmentLabel.NOT_ALIGNED]))
                added += 1
    return out


def gold_from_verified(pairs: QuerySet[DocumentPair]) -> list[tuple[int, str, str]]:
    rows = VerifiedLabel.objects.filter(candidate__pair__in=pairs).values_list("candidate_id", "label")
    return [(cand, label, DEFAULT_EXPLANATIONS[label]) for cand, label in rows]


def balanced_sample(rows: Sequence[tuple[int, str, str]], limit: int, seed: int = 0) -> list[tuple[int, str, str]]:
    """Up to ``limit`` rows, drawn round-robin over labels so every label is represented."""
    by_label: dict[str, list[tuple[int, str, str]]] = {}
    seen: set[int] = set()
    for row in rows:
        if row[0] not in seen:
            seen.add(row[0])
            by_label.setdefault(row[1], []).append(row)
    rng = random.Random(seed)
    for group in by_label.values():
        rng.shuffle(group)
    out: list[tuple[int, str, str]] = []
    while len(out) < limit and any(by_label.values()):
        for label in sorted(by_label):
            if by_label[label] and len(out) < limit:
                out.append(by_label[label].pop())
    return out


def create_job(
    *,
    name: str,
    corpus: Corpus,
    created_by: User | None,
    strategy: str = LabelingJob.Strategy.PARAGRAPH,
    pair_ids: Sequence[str] = (),
    settings: JobSettings | None = None,
    gold: Sequence[tuple[int, str, str]] = (),
    max_tests: int = 50,
    seed: int | None = None,
) -> LabelingJob:
    """Create a job over the corpus's pairs (or ``pair_ids``) with test questions from ``gold``
    ((candidate pk, label, explanation) rows, see ``gold_from_*``). Test pairs are not job items.

    ``seed`` (default: a fresh random one, stored on the job) draws the test-question sample and
    the items' random ranks: two jobs from the same gold get different test questions.
    ``settings.selection`` chooses which candidates become items (all by default; a random sample or
    the promoted model's most uncertain ones, :mod:`annotation.services.selection`) among the
    candidates not verified yet (``settings.skip_verified``, the default; the number left out is
    recorded as ``selection["verified_left_out"]``)."""
    settings = settings or JobSettings()
    seed = new_seed() if seed is None else seed
    pairs = corpus.pairs.all()
    if pair_ids:
        pairs = pairs.filter(pair_id__in=list(pair_ids))
        found = set(pairs.values_list("pair_id", flat=True))
        unknown = sorted(set(pair_ids) - found)
        if unknown:
            raise JobError(f"unknown pair id(s) in {corpus.name}: {', '.join(unknown[:5])}")
    if strategy == LabelingJob.Strategy.TOPK:
        candidate_pks = candidates.top_k(pairs, settings.top_k)
    else:
        candidate_pks = list(candidates.inside_links(pairs).order_by("pair__pair_id", "simple_id", "complex_id").values_list("pk", flat=True))
    tests = balanced_sample(gold, max_tests, seed)
    test_pks = {pk for pk, _, _ in tests}
    item_pks = list(dict.fromkeys(pk for pk in candidate_pks if pk not in test_pks))
    if not item_pks:
        raise JobError("no candidate pairs: align the pairs' paragraphs first or choose other pairs")
    left_out = 0
    if settings.skip_verified:
        verified = set(VerifiedLabel.objects.filter(candidate__pair__in=pairs).values_list("candidate_id", flat=True))
        kept = [pk for pk in item_pks if pk not in verified]
        left_out = len(item_pks) - len(kept)
        if not kept:
            raise JobError(f"every one of the {left_out} candidate pairs is already verified: choose other pairs, "
                           "or include verified pairs to label them again")
        item_pks = kept
    try:
        chosen, chosen_how = selection.choose(item_pks, settings.selection, corpus.language)
    except selection.SelectionError as exc:
        raise JobError(str(exc)) from None
    if left_out:
        chosen_how = {**chosen_how, "verified_left_out": left_out}
    if not chosen:
        raise JobError(f"the {settings.selection.strategy} selection chose no candidate pair")
    with transaction.atomic():
        job = LabelingJob.objects.create(
            name=name,
            corpus=corpus,
            strategy=strategy,
            created_by=created_by,
            judgments_per_pair=settings.judgments_per_pair,
            test_question_every=settings.test_question_every,
            min_seconds=settings.min_seconds,
            accuracy_threshold=settings.accuracy_threshold,
            min_test_questions=settings.min_test_questions,
            reservation_minutes=settings.reservation_minutes,
            top_k=settings.top_k,
            instructions=settings.instructions,
            seed=seed,
            pay_per_judgment=settings.pay_per_judgment,
            pay_per_hour=settings.pay_per_hour,
            currency=settings.currency,
            selection=chosen_how,
        )
        rng = random.Random(seed)
        JobItem.objects.bulk_create([JobItem(job=job, candidate_id=pk, rank=rng.random(), selection_score=score,
                                             selection_reason=reason) for pk, score, reason in chosen], batch_size=2000)
        TestQuestion.objects.bulk_create(
            [TestQuestion(job=job, candidate_id=pk, gold_label=label, explanation=expl) for pk, label, expl in tests]
        )
    refresh_item_statistics()
    return job


def refresh_item_statistics() -> None:
    """ANALYZE the tables a new job has just filled (PostgreSQL). Serving takes the first free item
    in (rank, pk) order with ``FOR UPDATE SKIP LOCKED``; planned without statistics on the new rows
    (autovacuum comes a minute or more later: when the annotators start) PostgreSQL sorted every
    item past the start rank with its sentences on each serve (11-130 ms) instead of reading the
    index up to the first free row (0.1-0.4 ms)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f'ANALYZE "{JobItem._meta.db_table}", "{TestQuestion._meta.db_table}"')
