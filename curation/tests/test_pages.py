"""Corpus pages: roles on every page, content with sentence ids, htmx partial, query counts."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from curation.models import Article, Corpus, DocumentPair

STAFF = ["verifier", "researcher", "admin"]


def _routes(patterns: list, namespace: str | None = None) -> Iterator[tuple[str | None, URLPattern]]:  # type: ignore[type-arg]
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _routes(p.url_patterns, p.namespace or namespace)
        else:
            yield namespace, p


def curation_urls() -> list[str]:
    """Every page of the curation and pipeline apps (staff only), with 1 for each id (the role check
    runs before the lookup)."""
    urls = []
    for namespace, pattern in _routes(get_resolver().url_patterns):
        if namespace not in ("curation", "pipeline") or not pattern.name:
            continue
        kwargs = {name: 1 for name in pattern.pattern.converters}
        urls.append(reverse(f"{namespace}:{pattern.name}", kwargs=kwargs))
    return urls


@pytest.fixture
def demo(db):  # type: ignore[no-untyped-def]
    call_command("load_demo")
    return Corpus.objects.get(name="Demo (English news)")


def _status(client, url: str) -> int:  # type: ignore[no-untyped-def]
    status = client.get(url).status_code
    if status == 405:  # POST-only views check the role on POST
        status = client.post(url).status_code
    return status


@pytest.mark.django_db
def test_annotator_gets_403_on_every_curation_page_and_import(client_for, annotator):
    client = client_for(annotator)
    urls = curation_urls()
    assert reverse("pipeline:import_upload") in urls and reverse("curation:corpus_list") in urls
    assert reverse("pipeline:job_list") in urls and reverse("pipeline:export_list") in urls
    statuses = {url: _status(client, url) for url in urls}
    assert statuses == {url: 403 for url in urls}


@pytest.mark.django_db
def test_anonymous_is_redirected_to_login_everywhere(client):
    for url in [*curation_urls(), reverse("home")]:
        response = client.get(url)
        if response.status_code == 405:
            response = client.post(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url


@pytest.mark.django_db
def test_annotator_cannot_open_django_admin(client_for, annotator):
    client = client_for(annotator)
    for url in ("/admin/", "/admin/curation/corpus/", "/admin/auth/user/"):
        response = client.get(url)
        # Django admin answers non-staff users with its login page, never with the admin
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/"), url
    page = client.get("/admin/", follow=True)
    assert b"not authorized" in page.content and b"Site administration" not in page.content


@pytest.mark.django_db
def test_demo_admin_opens_django_admin_for_every_model(client_for, demo):
    from django.contrib.auth import get_user_model

    call_command("create_demo_users", "--password", "pw-demo-123", stdout=None)
    client = client_for(get_user_model().objects.get(username="admin"))
    for model in ("corpus", "article", "document", "paragraph", "sentence", "documentpair", "referencealignment", "importrecord"):
        assert client.get(f"/admin/curation/{model}/").status_code == 200, model


@pytest.mark.django_db
def test_verifier_cannot_open_researcher_pages(client_for, verifier):
    client = client_for(verifier)
    assert client.get(reverse("pipeline:job_start")).status_code == 403
    assert client.post(reverse("pipeline:model_promote", kwargs={"version_id": 1})).status_code == 403
    assert client.get(reverse("pipeline:import_upload")).status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize("role", STAFF)
def test_staff_see_corpora_article_and_pair(client_for, make_user, role, demo):
    client = client_for(make_user(f"u_{role}", role))
    page = client.get(reverse("curation:corpus_list"))
    assert page.status_code == 200
    assert "Demo (English news)" in page.content.decode()
    body = client.get(reverse("curation:corpus_detail", args=[demo.pk])).content.decode()
    assert "city_bikes" in body and "space_seeds" in body and 'id="articles"' in body
    article = Article.objects.get(slug="city_bikes")
    body = client.get(reverse("curation:article_detail", args=[article.pk])).content.decode()
    assert "city_bikes.0_1" in body and "city_bikes.1_2" in body
    assert "Level 2" in body and "A station is a place where people can take a bike and bring it back." in body
    pair = DocumentPair.objects.get(pair_id="city_bikes.0_1")
    body = client.get(reverse("curation:pair_detail", args=[pair.pk])).content.decode()
    assert "city_bikes.0_1-1-0-0" in body and "city_bikes.0_1-0-0-0" in body
    assert "city_bikes.0_1-1-4-1" in body  # complex side, 5th paragraph, 2nd sentence
    assert re.search(r"city_bikes\.0_1-0-0-1</span>\s*It will add 600 bicycles", body)


@pytest.mark.django_db
def test_article_table_htmx_partial(client_for, researcher, demo):
    client = client_for(researcher)
    url = reverse("curation:corpus_detail", args=[demo.pk])
    full = client.get(url, {"q": "bees"}).content.decode()
    assert "<html" in full.lower()
    partial = client.get(url, {"q": "bees"}, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial.lower() and "<nav" not in partial.lower()
    assert partial.lstrip().startswith("<table") and "rooftop_bees" in partial and "city_bikes" not in partial
    assert "No article matches." in client.get(url, {"q": "zzz"}, HTTP_HX_REQUEST="true").content.decode()


@pytest.mark.django_db
def test_corpus_list_query_count_does_not_grow(client_for, researcher, demo, django_assert_max_num_queries, write_file):
    from curation.importers.run import run_import
    from curation.importers.types import ImportOptions

    for n in range(5):
        for level in (0, 1):
            write_file(f"c{n}/a{n}.en.{level}.txt", f"Sentence number {n} at level {level} is here.\n")
        run_import(write_file(f"c{n}/a{n}.en.0.txt", f"Sentence number {n} at level 0 is here.\n").parent,
                   ImportOptions(corpus=f"Corpus {n}", format="text"))
    client = client_for(researcher)
    client.get(reverse("curation:corpus_list"))  # warm the session and role caches
    with django_assert_max_num_queries(8):
        page = client.get(reverse("curation:corpus_list"))
    assert page.content.decode().count("<tr>") == 1 + 6


@pytest.mark.django_db
def test_pages_404_for_missing_objects(client_for, researcher):
    client = client_for(researcher)
    assert client.get(reverse("curation:pair_detail", args=[999])).status_code == 404
    assert client.get(reverse("curation:article_detail", args=[999])).status_code == 404


@pytest.mark.django_db
def test_pair_page_counts_its_reference_alignments(client_for, researcher, write_file):
    from curation.importers.run import run_import
    from curation.tests.conftest import options

    pairs = write_file("p.jsonl", '{"pair_id": "p1", "complex": [["Cats sleep a lot.", "Dogs bark."]], "simple": [["Cats sleep."]]}\n')
    gold = write_file("g.tsv", "aligned\tp1-0-0-0\tp1-1-0-0\tCats sleep.\tCats sleep a lot.\n"
                               "partialAligned\tp1-0-0-0\tp1-1-0-1\tCats sleep.\tDogs bark.\n")
    run_import(pairs, options("jsonl"))
    run_import(gold, options("tsv"))
    pair = DocumentPair.objects.get(pair_id="p1")
    body = client_for(researcher).get(reverse("curation:pair_detail", args=[pair.pk])).content.decode()
    assert "2 reference sentence alignments imported." in body


@pytest.mark.django_db
def test_corpus_counts_are_separate_subqueries_never_a_join(write_file):
    """Counting articles and pairs through one join multiplies their rows (35 M at Newsela's
    size); each count is its own subquery, and the counts stay exact."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from curation.importers.run import run_import
    from curation.importers.types import ImportOptions
    from curation.queries import corpora_with_counts

    for slug in ("one", "two", "three"):
        for level in (0, 1, 2):
            path = write_file(f"many/{slug}.en.{level}.txt", f"The {slug} story at level {level} is here.\n")
    run_import(path.parent, ImportOptions(corpus="Three levels", format="text", all_levels=True))
    with CaptureQueriesContext(connection) as captured:
        counts = {c.name: (c.n_articles, c.n_pairs) for c in corpora_with_counts()}  # type: ignore[attr-defined]
    assert counts == {"Three levels": (3, 9)}  # 3 articles x 3 level pairs (0-1, 0-2, 1-2)
    assert len(captured.captured_queries) == 1
    assert "JOIN" not in captured.captured_queries[0]["sql"].upper()


def test_level_captions_never_repeat_a_numeric_label():
    from curation.models import Document

    assert Document(level=0, level_label="0").level_caption == "level 0"
    assert Document(level=0, level_label="0").level_name == "level 0"
    assert Document(level=2, level_label="ele").level_caption == "level 2 · ele"
    assert Document(level=2, level_label="ele").level_name == "ele"
    assert Document(level=1, level_label="").level_caption == "level 1"


@pytest.mark.django_db
def test_pair_page_names_numeric_levels_once(client_for, researcher, write_file):
    from curation.importers.run import run_import
    from curation.importers.types import ImportOptions

    for level in (0, 1):
        path = write_file(f"lv/story.en.{level}.txt", f"The story at level {level} is here.\n")
    run_import(path.parent, ImportOptions(corpus="Numeric levels", format="text", all_levels=True))
    pair = DocumentPair.objects.get(complex__level=0, simple__level=1)
    body = client_for(researcher).get(reverse("curation:pair_detail", args=[pair.pk])).content.decode()
    assert "level 0 → level 1" in body and "Complex <small>level 0</small>" in body
    assert "level 0 · 0" not in body and "level 1 · 1" not in body
