"""The landing page's cards: for each role the user holds, its counts and its next step.

Config sits above every app, so it may read them all; each count is one query on rows that exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, Exists, OuterRef, Q
from django.urls import reverse

from accounts.roles import Role, has_role, user_roles


@dataclass
class Card:
    role: str
    title: str
    counts: list[tuple[str, int | str, str]]  # (label, value, link)
    next_label: str
    next_url: str
    note: str = ""
    links: list[tuple[str, str]] = field(default_factory=list)


def _annotator(user: Any) -> Card:
    from annotation.models import LabelingJob
    from annotation.services.presenting import visible_jobs

    open_jobs = visible_jobs(user).filter(status=LabelingJob.Status.OPEN).count()
    url = reverse("annotation:home")
    return Card("annotator", "Label sentence pairs", [("open labeling jobs", open_jobs, url)],
                "Start labeling" if open_jobs else "See labeling jobs", url,
                "" if open_jobs else "No job is open for you right now.")


def _verifier() -> Card:
    from annotation.models import ParagraphAlignmentRevision
    from annotation.services import verification
    from curation.models import DocumentPair

    queues = [counts for _job, counts in verification.jobs_with_queues()]  # a constant number of queries
    remaining = sum(q.remaining for q in queues)
    disagreements = sum(q.disagreements_remaining for q in queues)
    manual = ParagraphAlignmentRevision.objects.filter(pair=OuterRef("pk"), source="manual")
    uncorrected = DocumentPair.objects.exclude(Exists(manual)).count()
    verify_url = reverse("annotation:verify_index")
    counts: list[tuple[str, int | str, str]] = [("labels to verify", remaining, verify_url),
                                                ("of them with disagreement", disagreements, verify_url)]
    counts.append(("pairs whose paragraphs nobody corrected", uncorrected, reverse("annotation:correct_index")))
    return Card("verifier", "Verify labels", counts, "Open the verification queue" if remaining else "Correct paragraph alignments",
                verify_url if remaining else reverse("annotation:correct_index"))


def _researcher() -> Card:
    from pipeline.models import AlignmentRun, Job, ModelVersion

    job_counts = Job.objects.aggregate(active=Count("pk", filter=Q(status__in=["queued", "running"])),
                                       failed=Count("pk", filter=Q(status="failed")))
    trained = ModelVersion.objects.exclude(path="").count()
    runs = AlignmentRun.objects.count()
    counts: list[tuple[str, int | str, str]] = [
        ("jobs running or queued", job_counts["active"], reverse("pipeline:job_list")),
        ("failed jobs", job_counts["failed"], reverse("pipeline:job_list")),
        ("alignment runs", runs, reverse("pipeline:job_list") + "?kind=align_corpus"),
        ("trained models", trained, reverse("pipeline:model_list")),
    ]
    if not runs:
        step = ("Align a corpus", reverse("pipeline:job_start") + "#form-align")
    elif not trained:
        step = ("Retrain on verified labels", reverse("pipeline:job_start") + "#form-retrain")
    else:
        step = ("Compare model versions", reverse("pipeline:model_list"))
    return Card("researcher", "Runs, models and jobs", counts, *step,
                links=[("Start a job", reverse("pipeline:job_start")), ("Agreement", reverse("annotation:stats_index"))])


def _admin() -> Card:
    from curation.models import Corpus, ImportRecord
    from pipeline.models import ExportedDataset

    people = get_user_model().objects.filter(is_active=True).count()
    corpora = Corpus.objects.count()
    counts: list[tuple[str, int | str, str]] = [
        ("corpora", corpora, reverse("curation:corpus_list")),
        ("imports", ImportRecord.objects.count(), reverse("pipeline:import_upload")),
        ("exports", ExportedDataset.objects.count(), reverse("pipeline:export_list")),
        ("people", people, reverse("admin:auth_user_changelist")),
    ]
    step = ("Import a corpus", reverse("pipeline:import_upload")) if not corpora else ("Export a dataset", reverse("pipeline:export_list"))
    return Card("admin", "Imports, exports and people", counts, *step)


def cards(user: Any) -> list[Card]:
    """One card per role the user holds (an admin holds them all but labeling), most powerful first."""
    out = []
    if has_role(user, Role.ADMIN):
        out.append(_admin())
    if has_role(user, Role.RESEARCHER):
        out.append(_researcher())
    if has_role(user, Role.VERIFIER):
        out.append(_verifier())
    if Role.ANNOTATOR.value in user_roles(user):  # the group itself (an admin is no annotator); read once per request
        out.append(_annotator(user))
    return out
