"""REST API: role checks, list/detail shapes, the pair text action, the OpenAPI schema."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from curation.models import Article, Corpus, Document, DocumentPair

ENDPOINTS = ["/api/corpora/", "/api/articles/", "/api/documents/", "/api/pairs/"]


@pytest.fixture
def demo(db):  # type: ignore[no-untyped-def]
    call_command("load_demo")
    return Corpus.objects.get(name="Demo (English news)")


@pytest.mark.django_db
def test_api_refuses_anonymous_and_annotators(client, client_for, annotator, demo):
    pair = DocumentPair.objects.first()
    assert pair is not None
    urls = [*ENDPOINTS, f"/api/pairs/{pair.pk}/", f"/api/pairs/{pair.pk}/text/"]
    for url in urls:
        assert client.get(url).status_code in (401, 403), url
    client = client_for(annotator)
    for url in urls:
        assert client.get(url).status_code == 403, url


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["verifier", "researcher", "admin"])
def test_api_lists_for_staff_roles(client_for, make_user, role, demo):
    client = client_for(make_user(f"api_{role}", role))
    corpora = client.get("/api/corpora/").json()
    assert corpora["count"] == 1 and corpora["results"][0]["name"] == "Demo (English news)"
    articles = client.get("/api/articles/", {"corpus": demo.pk}).json()
    assert articles["count"] == 8
    first = articles["results"][0]
    assert first["slug"] == "avalanche_dog" and [d["level_label"] for d in first["documents"]] == ["0", "1", "2"]
    assert client.get("/api/documents/").json()["count"] == 24
    pairs = client.get("/api/pairs/", {"corpus": demo.pk}).json()
    assert pairs["count"] == 16 and {"pair_id", "complex", "simple", "article", "corpus"} <= set(pairs["results"][0])


@pytest.mark.django_db
def test_api_pair_text_is_the_jsonl_shape(client_for, researcher, demo):
    pair = DocumentPair.objects.get(pair_id="rooftop_bees.1_2")
    data = client_for(researcher).get(f"/api/pairs/{pair.pk}/text/").json()
    assert data["pair_id"] == "rooftop_bees.1_2" and data["language"] == "en"
    assert data["simple"][0][0] == "There are bees on the roof of Greenfield Secondary School."
    assert len(data["complex"]) == pair.complex.paragraphs.count()
    detail = client_for(researcher).get(f"/api/documents/{pair.simple_id}/").json()
    assert detail == {"id": pair.simple_id, "article": pair.article_id, "level": 2, "level_label": "2", "title": "rooftop_bees"}


@pytest.mark.django_db
def test_api_is_read_only(client_for, researcher, demo):
    client = client_for(researcher)
    assert client.post("/api/corpora/", {"name": "x", "language": "en"}).status_code == 405
    article = Article.objects.first()
    assert article is not None
    assert client.delete(f"/api/articles/{article.pk}/").status_code == 405
    assert Article.objects.count() == 8 and Document.objects.count() == 24


@pytest.mark.django_db
def test_openapi_schema(client_for, researcher):
    response = client_for(researcher).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    for path in ("/api/corpora/", "/api/articles/", "/api/documents/", "/api/pairs/", "/api/pairs/{id}/text/"):
        assert path in schema["paths"], path
