"""Paragraph-alignment correction: corpora to correct, the two-column editor, save and next."""

from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.db.models import Count, Exists, OuterRef
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone

from accounts.params import TextField, query
from accounts.permissions import role_required
from accounts.roles import Role
from annotation.models import ParagraphAlignmentRevision
from annotation.services import candidates, correction
from annotation.views_label import user_of
from curation.models import Corpus, DocumentPair
from curation.queries import document_paragraphs

CORRECTORS = (Role.VERIFIER,)


@role_required(*CORRECTORS)
def correct_index(request: HttpRequest) -> HttpResponse:
    manual = ParagraphAlignmentRevision.objects.filter(pair=OuterRef("pk"), source="manual")
    corpora = []
    for corpus in Corpus.objects.annotate(n_pairs=Count("pairs")).order_by("name"):
        done = corpus.pairs.filter(Exists(manual)).count()
        corpora.append((corpus, done))
    recent = ParagraphAlignmentRevision.objects.filter(source="manual").select_related("pair", "user")[:15]
    return render(request, "annotation/correct_index.html", {"corpora": corpora, "recent": recent})


class AfterParams(forms.Form):
    after = TextField(max_length=200, help_text="the pair id to continue after")


@role_required(*CORRECTORS)
def correct_next(request: HttpRequest, corpus_id: int) -> HttpResponse:
    corpus = get_object_or_404(Corpus, pk=corpus_id)
    pair = correction.next_pair(corpus, user_of(request), query(AfterParams, request.GET)["after"])
    if pair is None:
        messages.success(request, f"Every pair of {corpus.name} has a corrected paragraph alignment.")
        return redirect("annotation:correct_index")
    return redirect("annotation:correct_pair", pair.pk)


def _parse_links(raw: str) -> list[tuple[int, int]]:
    links = []
    for part in raw.replace(" ", "").split(","):
        if part:
            c, _, s = part.partition("-")
            links.append((int(c), int(s)))
    return links


@role_required(*CORRECTORS)
def correct_pair(request: HttpRequest, pair_id: int) -> HttpResponse:
    pair = get_object_or_404(DocumentPair.objects.select_related("corpus", "article", "complex", "simple"), pk=pair_id)
    if request.method == "POST":
        try:
            links = _parse_links(request.POST.get("links", ""))
            result = correction.save_links(pair, user_of(request), links)
        except (ValueError, correction.CorrectionError) as exc:
            messages.error(request, f"Not saved: {exc}")
            return redirect("annotation:correct_pair", pair.pk)
        messages.success(
            request,
            f"Saved {pair.pair_id}: {len(result.added)} link(s) added, {len(result.removed)} removed; "
            f"{result.candidates} candidate sentence pairs.",
        )
        if request.POST.get("action") == "next":
            correction.release_lock(pair, user_of(request))
            return redirect(f"{_next_url(pair)}")
        return redirect("annotation:correct_pair", pair.pk)
    candidates.ensure_auto_alignment(pair)
    lock = correction.acquire_lock(pair, user_of(request))
    current = candidates.current_links(pair)
    revisions = ParagraphAlignmentRevision.objects.filter(pair=pair).select_related("user")[:8]
    return render(
        request,
        "annotation/correct.html",
        {
            "pair": pair,
            "lock": lock,
            "lock_until": timezone.localtime(lock.expires_at),
            "complex_paras": document_paragraphs(pair.complex, pair.pair_id, 1),
            "simple_paras": document_paragraphs(pair.simple, pair.pair_id, 0),
            "links": current,
            "links_json": json.dumps(current),
            "revisions": revisions,
        },
    )


def _next_url(pair: DocumentPair) -> str:
    from django.urls import reverse

    return reverse("annotation:correct_next", args=[pair.corpus_id]) + f"?after={pair.pair_id}"
