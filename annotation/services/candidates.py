"""Paragraph links, their revisions and candidate sentence pairs of a document pair: the one owner.

- from the engine (``alignment_engine.api``): Algorithm 1 paragraph similarity, the automatic
  paragraph alignment (Algorithms 2-4), every sentence pair inside aligned paragraphs (the
  paper's Newsela strategy) or the top complex sentences per simple sentence under several
  similarity measures (its Wikipedia strategy);
- paragraph links: the current links of a pair, replacing them (by hand or automatically) with
  a :class:`ParagraphAlignmentRevision` saying who or what changed them; a pair corrected by
  hand keeps its links whatever an automatic pass computes;
- candidate pairs: kept in step with the wanted pairs of a strategy; a stale automatic candidate
  is removed only when nothing refers to it (a labeling-job item, a test question, a verified
  label, or anything added later that points at candidates).

Correction (``correction``), pre-population (``pipeline.services.prepopulate``) and labeling-job
setup (``job_setup``) all go through these functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.contrib.auth.models import User
from django.db import models, transaction
from django.db.models import Exists, OuterRef, QuerySet

from alignment_engine import api
from alignment_engine import paragraphs as engine_paragraphs
from alignment_engine.types import DocPair
from annotation.models import CandidatePair, ParagraphAlignmentRevision, ParagraphLink
from curation.models import Corpus, DocumentPair
from curation.plain import PlainPair, load_plain_pairs

Link = tuple[int, int, float]  # (complex paragraph position, simple paragraph position, score)
AUTOMATIC = (CandidatePair.Source.PARAGRAPH, CandidatePair.Source.TOPK)


# --- from the engine ----------------------------------------------------------------------------


def paragraph_similarity(pair: DocPair) -> list[list[float]]:
    """complex x simple matrix of Algorithm 1 paragraph similarities (average of per-sentence maxima)."""
    return engine_paragraphs.paragraph_similarity(pair)[0].T.tolist()  # type: ignore[no-any-return]


def align_paragraphs(pair: DocPair, algorithm: str = "news", similarity: str = "tfidf",
                     thresholds: dict[str, float] | None = None) -> list[Link]:
    """(complex_paragraph, simple_paragraph, score) links of the automatic paragraph alignment."""
    return [
        (int(c), int(s), float(score))
        for c, s, score in api.align_paragraphs(pair, similarity=similarity, algorithm=algorithm, thresholds=thresholds)  # type: ignore[arg-type]
    ]


def candidate_pairs(pair: DocPair, links: Sequence[Link]) -> list[tuple[str, str]]:
    """(simple_id, complex_id) of every sentence pair inside aligned paragraphs (Newsela strategy)."""
    return list(api.candidate_pairs(pair, list(links)))


def top_k_candidates(pair: DocPair, k: int = 3, measures: Sequence[str] = ("jaccard", "tfidf", "c3g")) -> list[tuple[str, str]]:
    """For each simple sentence the top-k complex sentences under each measure (Wikipedia strategy)."""
    return list(api.top_k_candidates(pair, k=k, measures=tuple(measures)))


def algorithm_for(corpus_kind: str) -> str:
    """The paper's paragraph algorithm for a kind of corpus: Algorithms 3+4 for Wikipedia, else 2."""
    return "wikipedia" if corpus_kind == Corpus.Kind.WIKIPEDIA else "news"


# --- paragraph links and revisions ---------------------------------------------------------------


def current_links(pair: DocumentPair) -> list[dict[str, object]]:
    rows = ParagraphLink.objects.filter(pair=pair).values_list(
        "complex_paragraph__position", "simple_paragraph__position", "score", "origin"
    )
    return [{"c": c, "s": s, "score": score, "origin": origin} for c, s, score, origin in sorted(rows)]


def corrected_by_hand(pair_pk: int) -> bool:
    """True when a person saved this pair's links (a manual revision, or manual links)."""
    return (
        ParagraphAlignmentRevision.objects.filter(pair_id=pair_pk, source="manual").exists()
        or ParagraphLink.objects.filter(pair_id=pair_pk, origin=ParagraphLink.Origin.MANUAL).exists()
    )


def link_positions(plain: PlainPair) -> dict[tuple[int, int], tuple[float | None, str]]:
    """The pair's current links by (complex, simple) paragraph position: (score, origin)."""
    cpos = {pk: i for i, pk in enumerate(plain.complex_paragraph_pk)}
    spos = {pk: i for i, pk in enumerate(plain.simple_paragraph_pk)}
    return {
        (cpos[c], spos[s]): (score, origin)
        for c, s, score, origin in ParagraphLink.objects.filter(pair_id=plain.pk).values_list(
            "complex_paragraph_id", "simple_paragraph_id", "score", "origin"
        )
        if c in cpos and s in spos
    }


def write_links(plain: PlainPair, links: dict[tuple[int, int], tuple[float | None, str]],
                origins: Iterable[str] = (ParagraphLink.Origin.AUTO, ParagraphLink.Origin.MANUAL)) -> int:
    """Bring the pair's links of the given origins to ``links`` ((c, s) -> (score, origin)):
    only the differences are written (deleted, inserted, updated), so an unchanged alignment
    writes nothing. Returns the rows written."""
    wanted = {
        (plain.complex_paragraph_pk[c], plain.simple_paragraph_pk[s]): (score, origin)
        for (c, s), (score, origin) in links.items()
    }
    existing = {
        (c, s): (pk, score, origin)
        for pk, c, s, score, origin in ParagraphLink.objects.filter(pair_id=plain.pk, origin__in=list(origins)).values_list(
            "pk", "complex_paragraph_id", "simple_paragraph_id", "score", "origin"
        )
    }
    gone = [pk for key, (pk, _, _) in existing.items() if key not in wanted]
    if gone:
        ParagraphLink.objects.filter(pk__in=gone).delete()
    changed = [
        ParagraphLink(pk=existing[key][0], score=score, origin=origin)
        for key, (score, origin) in wanted.items()
        if key in existing and existing[key][1:] != (score, origin)
    ]
    if changed:
        ParagraphLink.objects.bulk_update(changed, ["score", "origin"])
    fresh = [
        ParagraphLink(pair_id=plain.pk, complex_paragraph_id=c, simple_paragraph_id=s, score=score, origin=origin)
        for (c, s), (score, origin) in sorted(wanted.items())
        if (c, s) not in existing
    ]
    if fresh:
        ParagraphLink.objects.bulk_create(fresh, ignore_conflicts=True)
    return len(gone) + len(changed) + len(fresh)


def record_revision(pair_pk: int, new: Iterable[tuple[int, int]], old: Iterable[tuple[int, int]], source: str,
                    user: User | None = None) -> ParagraphAlignmentRevision:
    """Keep who or what (``source``: manual, engine, prepopulate) changed the links, and how."""
    fresh, before = set(new), set(old)
    return ParagraphAlignmentRevision.objects.create(
        pair_id=pair_pk, user=user, links=sorted([c, s] for c, s in fresh),
        added=sorted([c, s] for c, s in fresh - before), removed=sorted([c, s] for c, s in before - fresh),
        source=source,
    )


def replace_automatic_links(plain: PlainPair, links: Sequence[Link], source: str) -> int:
    """Replace the automatic links by ``links`` (writing only the differences) and record a
    revision when the set of links changed. Returns the link rows written (0: unchanged)."""
    old = set(link_positions(plain))
    written = write_links(plain, {(c, s): (float(score), ParagraphLink.Origin.AUTO) for c, s, score in links},
                          origins=(ParagraphLink.Origin.AUTO,))
    fresh = {(c, s) for c, s, _ in links}
    if fresh != old:
        record_revision(plain.pk, fresh, old, source)
    return written


def ensure_auto_alignment(pair: DocumentPair) -> bool:
    """Compute and store the automatic paragraph alignment on first open. True when computed now."""
    if ParagraphLink.objects.filter(pair=pair).exists() or ParagraphAlignmentRevision.objects.filter(pair=pair).exists():
        return False
    plain = load_plain_pairs([pair.pk])[0]
    links = align_paragraphs(plain.doc, algorithm=algorithm_for(pair.corpus.kind))
    with transaction.atomic():
        if ParagraphAlignmentRevision.objects.select_for_update().filter(pair=pair).exists():
            return False
        write_links(plain, {(c, s): (score, ParagraphLink.Origin.AUTO) for c, s, score in links})
        record_revision(pair.pk, [(c, s) for c, s, _ in links], [], source="engine")
        sync_candidates(plain, paragraph_keys(plain, links), CandidatePair.Source.PARAGRAPH,
                        replace=(CandidatePair.Source.PARAGRAPH,))
    return True


# --- candidate pairs -----------------------------------------------------------------------------


def human_references() -> list[models.ForeignObjectRel]:
    """Every relation that points at candidate pairs, hidden ones (``related_name="+"``, e.g.
    ``TestQuestion.candidate``) included: ``_meta.related_objects`` leaves those out."""
    return [
        f for f in CandidatePair._meta.get_fields(include_hidden=True)
        if isinstance(f, models.ForeignObjectRel) and (f.one_to_many or f.one_to_one)
    ]


def protected_candidates() -> models.Q:
    """Candidates that something refers to (job items, test questions, verified labels, ...)."""
    q = models.Q()
    for rel in human_references():
        q |= models.Q(pk__in=rel.related_model._default_manager.values(rel.field.attname))
    return q


def keys_of(plain: PlainPair, pairs: Iterable[tuple[str, str]]) -> list[tuple[int, int]]:
    """(simple pk, complex pk) of (simple id, complex id) pairs, in order, without repeats."""
    return [(plain.sentence_pk[s], plain.sentence_pk[c]) for s, c in dict.fromkeys(pairs)]


def paragraph_keys(plain: PlainPair, links: Sequence[Link]) -> list[tuple[int, int]]:
    return keys_of(plain, candidate_pairs(plain.doc, links))


def sync_candidates(plain: PlainPair, wanted: Sequence[tuple[int, int]], source: str,
                    replace: Sequence[str] = AUTOMATIC) -> tuple[int, int]:
    """Add the ``wanted`` (simple pk, complex pk) candidates that are missing (as ``source``) and
    remove the pair's candidates of the ``replace`` sources that are no longer wanted and that
    nothing refers to. Returns (created, removed)."""
    existing = set(CandidatePair.objects.filter(pair_id=plain.pk).values_list("simple_id", "complex_id"))
    missing = [sc for sc in wanted if sc not in existing]
    CandidatePair.objects.bulk_create(
        [CandidatePair(pair_id=plain.pk, simple_id=s, complex_id=c, source=source) for s, c in missing],
        ignore_conflicts=True,
    )
    keep = set(wanted)
    stale = [
        pk
        for pk, s, c in CandidatePair.objects.filter(pair_id=plain.pk, source__in=list(replace))
        .exclude(protected_candidates())
        .values_list("pk", "simple_id", "complex_id")
        if (s, c) not in keep
    ]
    if stale:
        CandidatePair.objects.filter(pk__in=stale).delete()
    return len(missing), len(stale)


def score_candidates(plain: PlainPair, aligner: object) -> int:
    """Candidate score = the aligner's score where it aligns the pair, else 0. Returns the candidates scored."""
    predicted = {
        (plain.sentence_pk[a.simple_id], plain.sentence_pk[a.complex_id]): (a.score if a.score is not None else 1.0)
        for a in aligner.align([plain.doc])[0]  # type: ignore[attr-defined]
        if a.label != "notAligned"
    }
    rows = list(CandidatePair.objects.filter(pair_id=plain.pk).only("pk", "simple_id", "complex_id", "score"))
    changed = []
    for row in rows:
        score = float(predicted.get((row.simple_id, row.complex_id), 0.0))
        if row.score != score:  # write only the scores that changed (a re-run writes nothing)
            row.score = score
            changed.append(row)
    if changed:
        CandidatePair.objects.bulk_update(changed, ["score"], batch_size=1000)
    return len(rows)


def manual_candidate(pair_pk: int, simple_pk: int, complex_pk: int) -> CandidatePair:
    """The candidate of a sentence pair named by hand (gold rows), created if it is new."""
    candidate, _ = CandidatePair.objects.get_or_create(
        simple_id=simple_pk, complex_id=complex_pk, defaults={"pair_id": pair_pk, "source": CandidatePair.Source.MANUAL}
    )
    return candidate


def inside_links(pairs: QuerySet[DocumentPair]) -> QuerySet[CandidatePair]:
    """Candidates inside the pairs' current paragraph links (auto-aligning pairs not yet opened)."""
    for pair in pairs.select_related("corpus"):
        ensure_auto_alignment(pair)
    inside = ParagraphLink.objects.filter(
        pair=OuterRef("pair"),
        complex_paragraph=OuterRef("complex__paragraph"),
        simple_paragraph=OuterRef("simple__paragraph"),
    )
    return CandidatePair.objects.filter(pair__in=pairs).filter(Exists(inside))


def top_k(pairs: QuerySet[DocumentPair], k: int) -> list[int]:
    """Top-k candidates of each pair (created where missing, kept otherwise); their pks in order."""
    pks: list[int] = []
    for plain in load_plain_pairs(pairs.values_list("pk", flat=True)):
        keys = keys_of(plain, top_k_candidates(plain.doc, k=k))
        sync_candidates(plain, keys, CandidatePair.Source.TOPK, replace=())
        lookup = {
            (s, c): pk for pk, s, c in CandidatePair.objects.filter(pair_id=plain.pk).values_list("pk", "simple_id", "complex_id")
        }
        pks.extend(lookup[key] for key in keys if key in lookup)
    return pks
