"""The higher floors contribute their parts to the corpus pages and the navigation (page slots)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from curation import page_slots
from pipeline.tests.pipeline_corpus import build_corpus

pytestmark = pytest.mark.django_db


def nav_links(html: str) -> list[str]:
    nav = html[html.index('<nav class="mainnav"'):html.index("</nav>")]
    return re.findall(r">([^<>]+)</a>", nav)


def test_nav_links_come_from_each_app_in_order(client_for, make_user) -> None:  # type: ignore[no-untyped-def]
    admin = make_user("ada", "admin")
    admin.groups.add(*make_user("v", "verifier").groups.all(), *make_user("r", "researcher").groups.all())
    html = client_for(admin).get(reverse("curation:corpus_list")).content.decode()
    assert nav_links(html) == ["Corpora", "Labeling", "Paragraphs", "Evaluation", "Jobs", "Models", "Agreement", "Verify",
                               "Exports", "Import", "Admin"]
    assert page_slots.templates("nav") == ["annotation/_nav_labeling.html", "annotation/evaluation/_nav.html",
                                           "pipeline/_nav_jobs.html", "annotation/_nav_quality.html", "pipeline/_nav_exports.html"]


def test_corpus_and_pair_pages_show_what_the_higher_apps_contribute(client_for, make_user) -> None:  # type: ignore[no-untyped-def]
    corpus = build_corpus(n_articles=1)
    pair = corpus.pairs.get()
    admin = make_user("ada", "admin")
    page = client_for(admin).get(reverse("curation:corpus_detail", args=[corpus.pk])).content.decode()
    assert reverse("pipeline:export_list") + f"?corpus={corpus.pk}" in page  # pipeline's part
    assert reverse("pipeline:corpus_stats", args=[corpus.pk]) in page
    verifier = make_user("vic", "verifier")
    page = client_for(verifier).get(reverse("curation:pair_detail", args=[pair.pk])).content.decode()
    assert reverse("annotation:correct_pair", args=[pair.pk]) in page  # annotation's part
    with pytest.raises(ValueError, match="unknown page slot"):
        page_slots.contribute("sidebar", "x.html")
