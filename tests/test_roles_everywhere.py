"""An annotator reaches only labeling pages: every other annotation page and the staff API answer 403."""

from __future__ import annotations

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

# The annotation pages an annotator works in; every other annotation page is for staff roles.
ANNOTATOR_PAGES = {"home", "label", "answer_form", "instructions", "context"}


def _named_routes(patterns: list, namespace: str | None = None):  # type: ignore[no-untyped-def,type-arg]
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _named_routes(p.url_patterns, p.namespace or namespace)
        elif isinstance(p, URLPattern) and p.name:
            yield namespace, p


def staff_annotation_urls() -> list[str]:
    urls = []
    for namespace, pattern in _named_routes(get_resolver().url_patterns):
        if namespace == "annotation" and pattern.name not in ANNOTATOR_PAGES:
            kwargs = {name: 1 for name in pattern.pattern.converters}
            urls.append(reverse(f"annotation:{pattern.name}", kwargs=kwargs))
    return urls


@pytest.mark.django_db
def test_annotator_gets_403_on_staff_annotation_pages(client_for, annotator) -> None:  # type: ignore[no-untyped-def]
    client = client_for(annotator)
    urls = staff_annotation_urls()
    assert reverse("annotation:job_new") in urls and reverse("annotation:verify_index") in urls
    statuses = {}
    for url in urls:
        status = client.get(url).status_code
        if status == 405:
            status = client.post(url).status_code
        statuses[url] = status
    assert statuses == {url: 403 for url in urls}


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/corpora/", "/api/articles/", "/api/documents/", "/api/pairs/"])
def test_annotator_gets_403_on_the_corpus_api(client_for, annotator, path: str) -> None:  # type: ignore[no-untyped-def]
    assert client_for(annotator).get(path).status_code == 403


@pytest.mark.django_db
def test_annotator_home_is_the_labeling_start_page(client_for, annotator) -> None:  # type: ignore[no-untyped-def]
    response = client_for(annotator).get(reverse("home"))
    assert response.status_code == 302 and response["Location"] == reverse("annotation:home")
    assert client_for(annotator).get(reverse("annotation:home")).status_code == 200
