"""Pre-population: paragraph alignment and candidate sentence pairs for document pairs.

For every chosen pair:

- automatic paragraph links are replaced by fresh ones from ``align_paragraphs`` (Algorithm 2
  for news corpora, Algorithms 3+4 for Wikipedia), with a revision recorded when they change. A
  pair whose alignment was corrected by hand (a ``manual`` revision or ``manual`` links) keeps
  its links untouched, and its candidates come from them;
- candidate sentence pairs are added (``paragraph`` strategy: every pair inside aligned
  paragraphs, the paper's Newsela strategy; ``topk``: the top-k complex sentences per simple
  sentence under each measure, its Wikipedia strategy). Stale automatic candidates are removed
  only when nothing refers to them (no labeling-job item, test question or verified label);
- candidates are scored with the language's promoted model (or a chosen method): the score of
  its prediction where it aligns the pair, else 0 — a pre-label for ordering and review.

Running it twice gives the same rows (idempotent), and a re-run that changes nothing writes
nothing: links, candidates and scores are compared with what is stored and only the differences
are written (``links_written``, ``candidates_created``/``removed``; scores only where they moved).
Human work is never deleted: candidates that a job item, test question or verified label refers
to are kept (``candidates.protected_candidates``, and ``on_delete=RESTRICT`` in the models).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from annotation.models import CandidatePair
from annotation.services import candidates
from curation.models import Corpus, DocumentPair
from curation.plain import PlainPair, load_plain_pairs
from pipeline import jobs
from pipeline.jobs import Echo, Outcome
from pipeline.models import Job

ALGORITHM_BY_KIND = {Corpus.Kind.NEWS: "news", Corpus.Kind.WIKIPEDIA: "wikipedia", Corpus.Kind.OTHER: "news"}
STRATEGY_BY_KIND = {Corpus.Kind.NEWS: "paragraph", Corpus.Kind.WIKIPEDIA: "topk", Corpus.Kind.OTHER: "paragraph"}
BATCH = 50  # pairs loaded per query batch


@dataclass
class PrepopulateOptions:
    similarity: str = "tfidf"
    algorithm: str | None = None  # None: by corpus kind
    strategy: str | None = None  # "paragraph" | "topk"; None: by corpus kind
    top_k: int = 3
    thresholds: dict[str, float] | None = None
    # candidate scores: "promoted" (the language's promoted model, if any), a method name, or "" (none)
    score_with: str = "promoted"

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> PrepopulateOptions:
        names = ("similarity", "algorithm", "strategy", "top_k", "thresholds", "score_with")
        known = {k: params[k] for k in names if k in params}
        return cls(**known)


@dataclass
class PrepopulateStats:
    pairs: int = 0
    links_created: int = 0  # automatic links computed
    links_written: int = 0  # link rows deleted, inserted or updated (0 when nothing changed)
    links_kept_manual: int = 0
    candidates_created: int = 0
    candidates_removed: int = 0
    candidates_total: int = 0
    candidates_scored: int = 0
    scored_with: str = ""
    skipped_pairs: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def scorer_for(options: PrepopulateOptions, language: str) -> tuple[Any, str]:
    """The aligner whose predictions score the candidates, and its name; (None, "") for none."""
    from pipeline.services.align_corpus import get_aligner
    from pipeline.services.registry import promoted_for

    if not options.score_with:
        return None, ""
    if options.score_with == "promoted":
        mv = promoted_for(language)
        if mv is None:
            return None, ""
        return get_aligner(mv.method, mv.path), f"model version {mv.pk} ({mv.name})"
    return get_aligner(options.score_with), options.score_with


def prepopulate_pair(
    plain: PlainPair, corpus_kind: str, options: PrepopulateOptions, stats: PrepopulateStats, scorer: Any = None
) -> None:
    """Links, candidates and scores of one pair (the rows themselves are ``annotation.services.candidates``')."""
    corrected = candidates.corrected_by_hand(plain.pk)
    strategy = options.strategy or STRATEGY_BY_KIND.get(corpus_kind, "paragraph")  # type: ignore[call-overload]
    if corrected:  # a person corrected this pair: its links stand, candidates follow them
        current = candidates.link_positions(plain)
        links = [(c, s, 1.0) for c, s in current]
        stats.links_kept_manual += len(current)
    else:
        algorithm = options.algorithm or ALGORITHM_BY_KIND.get(corpus_kind, "news")  # type: ignore[call-overload]
        links = candidates.align_paragraphs(plain.doc, algorithm=algorithm, similarity=options.similarity,
                                            thresholds=options.thresholds)
    if strategy == "topk":
        wanted = candidates.keys_of(plain, candidates.top_k_candidates(plain.doc, k=options.top_k))
        source = CandidatePair.Source.TOPK
    else:
        wanted = candidates.paragraph_keys(plain, links)
        source = CandidatePair.Source.PARAGRAPH
    with transaction.atomic():
        if not corrected:
            stats.links_written += candidates.replace_automatic_links(plain, links, source="prepopulate")
            stats.links_created += len(links)
        created, removed = candidates.sync_candidates(plain, wanted, source)
        stats.candidates_created += created
        stats.candidates_removed += removed
    stats.candidates_total += len(wanted)
    if scorer is not None:
        stats.candidates_scored += candidates.score_candidates(plain, scorer)
    stats.pairs += 1


def prepopulate(
    pair_pks: Sequence[int],
    options: PrepopulateOptions | None = None,
    progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> PrepopulateStats:
    """Pre-populate the pairs in order; ``should_stop`` is asked between pairs."""
    options = options or PrepopulateOptions()
    stats = PrepopulateStats()
    meta = {
        pk: (kind, language)
        for pk, kind, language in DocumentPair.objects.filter(pk__in=list(pair_pks)).values_list(
            "pk", "corpus__kind", "corpus__language"
        )
    }
    scorers: dict[str, tuple[Any, str]] = {}
    total = len(pair_pks)
    done = 0
    for start in range(0, total, BATCH):
        batch = list(pair_pks[start : start + BATCH])
        loaded = {p.pk: p for p in load_plain_pairs(batch)}
        for pk in batch:
            if should_stop is not None and should_stop():
                return stats
            plain = loaded.get(pk)
            if plain is None:
                stats.skipped_pairs.append(pk)
            else:
                kind, language = meta[pk]
                if language not in scorers:
                    scorers[language] = scorer_for(options, language)
                scorer, stats.scored_with = scorers[language]
                prepopulate_pair(plain, kind, options, stats, scorer)
            done += 1
            if progress is not None:
                progress(done, total)
    return stats


def create_job(corpus: Corpus, pair_pks: Sequence[int] | None, options: PrepopulateOptions, user: Any = None) -> Job:
    """The job row of a pre-population (send it with ``pipeline.tasks.enqueue_prepopulate``, or run
    it here with :func:`run_job`)."""
    params: dict[str, Any] = {k: v for k, v in options.__dict__.items() if v is not None}
    if pair_pks is not None:
        params["pair_ids"] = list(pair_pks)
    return jobs.create_job(Job.Kind.PREPOPULATE, params, corpus=corpus, user=user)


def run_job(job_id: int, progress: Echo | None = None, retry_on: tuple[type[BaseException], ...] = ()) -> Outcome:
    """Run a pre-population job: pairs from its parameters, progress per pair (on the job, and to
    ``progress`` too, e.g. a command's tqdm bar); cancellation is checked between pairs."""

    def body(job: Job, recorder: jobs.ProgressRecorder) -> jobs.Finished:
        pair_pks = job.params.get("pair_ids")
        if pair_pks is None:
            pair_pks = list(DocumentPair.objects.filter(corpus=job.corpus).order_by("pk").values_list("pk", flat=True))
        recorder(0, len(pair_pks), message=f"{len(pair_pks)} document pairs")
        recorder.check = False  # asked between pairs by should_stop instead
        stats = prepopulate(pair_pks, PrepopulateOptions.from_params(job.params), progress=recorder,
                            should_stop=lambda: jobs.cancel_requested(job_id))
        if jobs.cancel_requested(job_id):
            raise jobs.JobCancelled(f"cancelled after {stats.pairs} pairs", result=stats.as_dict())
        return jobs.Finished(stats.as_dict(), f"{stats.pairs} pairs, {stats.candidates_total} candidates")

    return jobs.run(job_id, body, echo=progress, retry_on=retry_on)
