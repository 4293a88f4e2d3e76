"""Paragraph-alignment correction: pair locks, saving the corrected links (with a revision and
the pair's candidate sentence pairs brought in step, through ``candidates``), and the queue of
pairs left to correct."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from annotation.models import CandidatePair, PairLock, ParagraphAlignmentRevision, ParagraphLink
from annotation.services import candidates
from curation.models import Corpus, DocumentPair
from curation.plain import load_plain_pairs

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


def save_links(pair: DocumentPair, user: User, links: list[tuple[int, int]]) -> SaveResult:
    """Replace the pair's paragraph links by ``links`` (complex, simple positions), keep a revision."""
    plain = load_plain_pairs([pair.pk])[0]
    dp = plain.doc
    wanted = set()
    for c, s in links:
        if not (0 <= c < len(dp.complex) and 0 <= s < len(dp.simple)):
            raise CorrectionError(f"paragraph link ({c}, {s}) is outside the documents")
        wanted.add((int(c), int(s)))
    state = acquire_lock(pair, user)
    if not state.mine:
        raise CorrectionError(f"being corrected by {state.holder} until {timezone.localtime(state.expires_at):%H:%M}")
    sim = candidates.paragraph_similarity(dp)
    with transaction.atomic():
        list(ParagraphLink.objects.select_for_update().filter(pair=pair).values_list("pk", flat=True))
        old = candidates.link_positions(plain)
        new = {key: old.get(key, (round(sim[key[0]][key[1]], 4), ParagraphLink.Origin.MANUAL)) for key in wanted}
        candidates.write_links(plain, new)
        revision = candidates.record_revision(pair.pk, wanted, old, source="manual", user=user)
        keys = candidates.paragraph_keys(plain, [(c, s, new[(c, s)][0] or 0.0) for c, s in sorted(wanted)])
        candidates.sync_candidates(plain, keys, CandidatePair.Source.PARAGRAPH, replace=(CandidatePair.Source.PARAGRAPH,))
    return SaveResult(revision, revision.added, revision.removed, len(keys))


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
