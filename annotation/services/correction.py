"""Paragraph-alignment correction: pair locks, the automatic first alignment, saving the
corrected links with a revision, and regenerating the pair's candidate sentence pairs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from alignment_engine.types import DocPair
from annotation.models import CandidatePair, JobItem, PairLock, ParagraphAlignmentRevision, ParagraphLink
from annotation.services import prealign
from curation.models import Corpus, DocumentPair, Paragraph, Sentence
from curation.queries import pair_as_plain

LOCK_MINUTES = 30


class CorrectionError(ValueError):
    """Invalid links or a pair locked by someone else."""


@dataclass(frozen=True)
class LockState:
    mine: bool
    holder: str
    expires_at: datetime


@dataclass(frozen=True)
class SaveResult:
    revision: ParagraphAlignmentRevision
    added: list[list[int]]
    removed: list[list[int]]
    candidates: int


def doc_pair(pair: DocumentPair) -> DocPair:
    plain = pair_as_plain(pair)
    return DocPair(
        pair_id=str(plain["pair_id"]),
        complex=plain["complex"],  # type: ignore[arg-type]
        simple=plain["simple"],  # type: ignore[arg-type]
        language=str(plain["language"]),
    )


def acquire_lock(pair: DocumentPair, user: User, minutes: int = LOCK_MINUTES) -> LockState:
    """Lock the pair to ``user`` unless another user holds an unexpired lock (then report them)."""
    now = timezone.now()
    expires = now + timedelta(minutes=minutes)
    for _attempt in range(2):
        try:
            with transaction.atomic():
                lock = PairLock.objects.select_for_update().select_related("user").filter(pair=pair).first()
                if lock is None:
                    PairLock.objects.create(pair=pair, user=user, expires_at=expires)
                    return LockState(True, user.get_username(), expires)
                if lock.user_id != user.pk and lock.expires_at > now:
                    return LockState(False, lock.user.get_username(), lock.expires_at)
                lock.user = user  # type: ignore[assignment]
                lock.expires_at = expires
                lock.save(update_fields=["user", "expires_at"])
                return LockState(True, user.get_username(), expires)
        except IntegrityError:  # another verifier created the lock between our read and insert
            continue
    lock = PairLock.objects.select_related("user").get(pair=pair)
    return LockState(lock.user_id == user.pk, lock.user.get_username(), lock.expires_at)


def release_lock(pair: DocumentPair, user: User) -> None:
    PairLock.objects.filter(pair=pair, user=user).delete()


def current_links(pair: DocumentPair) -> list[dict[str, object]]:
    rows = ParagraphLink.objects.filter(pair=pair).values_list(
        "complex_paragraph__position", "simple_paragraph__position", "score", "origin"
    )
    return [{"c": c, "s": s, "score": score, "origin": origin} for c, s, score, origin in sorted(rows)]


def _paragraph_pks(pair: DocumentPair) -> tuple[dict[int, int], dict[int, int]]:
    cx = dict(Paragraph.objects.filter(document_id=pair.complex_id).values_list("position", "pk"))
    sx = dict(Paragraph.objects.filter(document_id=pair.simple_id).values_list("position", "pk"))
    return cx, sx


def _write_links(pair: DocumentPair, links: dict[tuple[int, int], tuple[float | None, str]]) -> None:
    cx, sx = _paragraph_pks(pair)
    ParagraphLink.objects.filter(pair=pair).delete()
    ParagraphLink.objects.bulk_create(
        ParagraphLink(pair=pair, complex_paragraph_id=cx[c], simple_paragraph_id=sx[s], score=score, origin=origin)
        for (c, s), (score, origin) in sorted(links.items())
    )


def regenerate_candidates(pair: DocumentPair, dp: DocPair, links: list[tuple[int, int, float]]) -> int:
    """Every sentence pair inside aligned paragraphs becomes a candidate (Newsela strategy).

    Stale paragraph candidates are deleted unless a job or a verifier already uses them.
    Returns the number of candidate pairs of this pair inside the current links.
    """
    wanted = set(prealign.candidate_pairs(dp, links))
    sentence_pk = _sentence_pks(pair)
    wanted_pks = {(sentence_pk[s], sentence_pk[c]) for s, c in wanted if s in sentence_pk and c in sentence_pk}
    existing = CandidatePair.objects.filter(pair=pair, source=CandidatePair.Source.PARAGRAPH)
    stale = [
        pk
        for pk, s, c, used in existing.annotate(
            used=Exists(JobItem.objects.filter(candidate=OuterRef("pk")))
        ).values_list("pk", "simple_id", "complex_id", "used")
        if (s, c) not in wanted_pks and not used
    ]
    CandidatePair.objects.filter(pk__in=stale).filter(verified__isnull=True).delete()
    CandidatePair.objects.bulk_create(
        [CandidatePair(pair=pair, simple_id=s, complex_id=c, source=CandidatePair.Source.PARAGRAPH) for s, c in sorted(wanted_pks)],
        ignore_conflicts=True,
    )
    return len(wanted_pks)


def _sentence_pks(pair: DocumentPair) -> dict[str, int]:
    out: dict[str, int] = {}
    for side, doc_id in ((1, pair.complex_id), (0, pair.simple_id)):
        for pk, p, s in Sentence.objects.filter(document_id=doc_id).values_list("pk", "paragraph_position", "position"):
            out[f"{pair.pair_id}-{side}-{p}-{s}"] = pk
    return out


def ensure_auto_alignment(pair: DocumentPair) -> bool:
    """Compute and store the automatic paragraph alignment on first open. True when computed now."""
    if ParagraphLink.objects.filter(pair=pair).exists() or ParagraphAlignmentRevision.objects.filter(pair=pair).exists():
        return False
    dp = doc_pair(pair)
    algorithm = "wikipedia" if pair.corpus.kind == Corpus.Kind.WIKIPEDIA else "news"
    links = prealign.align_paragraphs(dp, algorithm=algorithm)
    with transaction.atomic():
        if ParagraphAlignmentRevision.objects.select_for_update().filter(pair=pair).exists():
            return False
        _write_links(pair, {(c, s): (score, ParagraphLink.Origin.AUTO) for c, s, score in links})
        ParagraphAlignmentRevision.objects.create(
            pair=pair,
            user=None,
            links=[[c, s] for c, s, _ in links],
            added=[[c, s] for c, s, _ in links],
            source="engine",
        )
        regenerate_candidates(pair, dp, links)
    return True


def save_links(pair: DocumentPair, user: User, links: list[tuple[int, int]]) -> SaveResult:
    """Replace the pair's paragraph links by ``links`` (complex, simple positions), keep a revision."""
    dp = doc_pair(pair)
    wanted = set()
    for c, s in links:
        if not (0 <= c < len(dp.complex) and 0 <= s < len(dp.simple)):
            raise CorrectionError(f"paragraph link ({c}, {s}) is outside the documents")
        wanted.add((int(c), int(s)))
    state = acquire_lock(pair, user)
    if not state.mine:
        raise CorrectionError(f"being corrected by {state.holder} until {timezone.localtime(state.expires_at):%H:%M}")
    sim = prealign.paragraph_similarity(dp)
    with transaction.atomic():
        old = {
            (c, s): (score, origin)
            for c, s, score, origin in ParagraphLink.objects.select_for_update()
            .filter(pair=pair)
            .values_list("complex_paragraph__position", "simple_paragraph__position", "score", "origin")
        }
        new = {
            key: old.get(key, (round(sim[key[0]][key[1]], 4), ParagraphLink.Origin.MANUAL)) for key in wanted
        }
        added = sorted([c, s] for c, s in wanted - old.keys())
        removed = sorted([c, s] for c, s in old.keys() - wanted)
        _write_links(pair, new)
        revision = ParagraphAlignmentRevision.objects.create(
            pair=pair, user=user, links=sorted([c, s] for c, s in wanted), added=added, removed=removed, source="manual"
        )
        n = regenerate_candidates(pair, dp, [(c, s, new[(c, s)][0] or 0.0) for c, s in sorted(wanted)])
    return SaveResult(revision, added, removed, n)


def pairs_to_correct(corpus: Corpus):  # type: ignore[no-untyped-def]
    """Pairs of the corpus without a manual revision, in pair-id order."""
    manual = ParagraphAlignmentRevision.objects.filter(pair=OuterRef("pk"), source="manual")
    return corpus.pairs.annotate(corrected=Exists(manual)).filter(corrected=False).order_by("pair_id")


def next_pair(corpus: Corpus, user: User, after: str = "") -> DocumentPair | None:
    """The next uncorrected pair after ``after`` (wrapping around) not locked by someone else."""
    now = timezone.now()
    locked = PairLock.objects.filter(pair=OuterRef("pk"), expires_at__gt=now).filter(~Q(user=user))
    qs = pairs_to_correct(corpus).annotate(locked=Exists(locked)).filter(locked=False)
    return qs.filter(pair_id__gt=after).first() or qs.exclude(pair_id=after).first()
