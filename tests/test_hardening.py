"""Hardened production: a Content-Security-Policy on every page with no inline script or style
left for it to block, schema and Swagger for logged-in users only, and the documented ``code``
on every API error body (a 429 of the rate limit says ``throttled``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings as django_settings

ROOT = Path(__file__).resolve().parent.parent
INLINE = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle=|\son[a-z]+=\"|javascript:", re.IGNORECASE)


def test_no_inline_scripts_or_styles_in_templates() -> None:
    offenders = []
    for template in ROOT.glob("**/templates/**/*.html"):
        if ".venv" in template.parts:
            continue
        for number, line in enumerate(template.read_text().splitlines(), 1):
            if INLINE.search(line) and 'type="application/json"' not in line:
                offenders.append(f"{template.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert offenders == []


@pytest.mark.django_db
def test_every_page_sends_the_policy(client, admin_user) -> None:  # type: ignore[no-untyped-def]
    client.force_login(admin_user)
    for url in ["/login/", "/corpora/", "/jobs/", "/api/corpora/", "/api/docs/"]:
        policy = client.get(url)["Content-Security-Policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy and "unsafe-inline" not in policy
        assert "frame-ancestors 'none'" in policy
    assert "csp.middleware.CSPMiddleware" in django_settings.MIDDLEWARE


@pytest.mark.django_db
def test_schema_and_swagger_for_logged_in_users_only(client, annotator) -> None:  # type: ignore[no-untyped-def]
    schema = client.get("/api/schema/")
    assert schema.status_code == 403 and b"not_authenticated" in schema.content
    docs = client.get("/api/docs/")
    assert docs.status_code == 302 and docs["Location"].startswith("/login/")
    client.force_login(annotator)
    assert client.get("/api/schema/").status_code == 200
    page = client.get("/api/docs/")
    assert page.status_code == 200 and b"<style" not in page.content
    assert client.get("/api/docs/?script=").status_code == 200  # the init script, served as a file


@pytest.mark.django_db
def test_error_bodies_carry_the_documented_code(client, annotator, researcher, settings) -> None:  # type: ignore[no-untyped-def]
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "hardening"}}
    assert client.get("/api/corpora/").json()["code"] == "not_authenticated"
    client.force_login(annotator)
    assert client.get("/api/corpora/").json()["code"] == "permission_denied"
    client.force_login(researcher)
    missing = client.get("/api/corpora/999999/")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    assert client.get("/api/pairs/?page=999").json()["code"] == "not_found"
    bad = client.post("/api/annotation/answers/", {"token": "", "label": "x"}, content_type="application/json")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid" and "label" in bad.json()["errors"]
    assert client.delete("/api/corpora/").json()["code"] == "method_not_allowed"
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"answers": "1/min"}}
    statuses = [client.post("/api/annotation/answers/", {"token": "t", "label": "aligned"}, content_type="application/json")
                for _ in range(3)]
    throttled = [r for r in statuses if r.status_code == 429]
    assert throttled and throttled[-1].json()["code"] == "throttled" and throttled[-1].json()["wait_seconds"] > 0


def test_every_operation_documents_its_errors() -> None:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    assert schema["components"]["schemas"]["Error"]["required"] == ["detail", "code"]
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            for status in ("400", "401", "403", "404", "429"):
                assert status in operation["responses"], (method, path, status)
                content = operation["responses"][status]["content"]["application/json"]["schema"]
                assert content == {"$ref": "#/components/schemas/Error"}


def test_schema_component_names_read_as_a_client_would_name_them() -> None:
    """drf-spectacular appends ``Request`` to request bodies; a serializer already named ``...Request``
    would give clients ``AnswerRequestRequest``."""
    from drf_spectacular.generators import SchemaGenerator

    names = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]
    assert {"AnswerRequest", "NextQuestionRequest"} <= set(names)
    assert [name for name in names if name.endswith("RequestRequest")] == []


@pytest.mark.django_db
def test_schema_reads_as_text_in_a_browser_and_keeps_its_media_type_for_clients(client, annotator) -> None:  # type: ignore[no-untyped-def]
    client.force_login(annotator)
    browser = client.get("/api/schema/", HTTP_ACCEPT="text/html,application/xhtml+xml,*/*;q=0.8")
    assert browser.status_code == 200 and browser["Content-Type"].startswith("text/plain")
    assert "attachment" not in browser.get("Content-Disposition", "") and b"openapi:" in browser.content
    tool = client.get("/api/schema/", HTTP_ACCEPT="*/*")
    assert tool.status_code == 200 and tool["Content-Type"].startswith("application/vnd.oai.openapi")
    as_json = client.get("/api/schema/?format=json", HTTP_ACCEPT="*/*")
    assert as_json.status_code == 200 and "json" in as_json["Content-Type"]
