"""No 500 on any input: hostile values swept over every URL pattern, as every role and anonymously.

Every named URL pattern of the site (the Django admin aside: its own changelist validates its
lookups) is requested with real ids and with hostile ones in the path, with every query
parameter any view reads set to a hostile value (NUL, "abc", "1.5", "²" which ``isdigit``
accepts, a number past PostgreSQL's bigint, NaN, infinity, 1,500 characters, empty), and POSTed
the same values as a form and (API) as JSON. The test client re-raises any exception a view
lets through, so a 500 fails the test with its traceback. On PostgreSQL (CI) a NUL reaching the
database would be a 500 too.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

HOSTILE = ["\x00", "a\x00b", "abc", "1.5", "²", "٣", "-1", "0", "99999999999999999999", "nan", "inf", "-Infinity",
           "x" * 1500, "", "%", "<b>"]
# The fast sweep's share of them (one of each kind of trouble); the slow sweep sends them all.
FAST = ["a\x00b", "abc", "1.5", "²", "99999999999999999999", "nan", "x" * 1500]
FEW = ["a\x00b", "²", "99999999999999999999"]
# Every query or form parameter a view or API reads by name (grep request.GET / request.POST / query_params).
PARAMS = ["q", "page", "corpus", "kind", "language", "after", "item", "source", "method", "min_shared", "status",
          "exclude", "token", "label", "links", "action", "ratios", "run", "export", "split", "seed", "name",
          "r-0-fluency", "r-1-meaning"]
PATH_HOSTILE = {"int": ["99999999999999999999"], "str": ["\x00", "²", "x" * 300, "nan"]}


def _routes(patterns: list[Any], namespace: str | None = None) -> Iterator[tuple[str | None, URLPattern]]:
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _routes(p.url_patterns, p.namespace or namespace)
        elif isinstance(p, URLPattern) and p.name:
            yield namespace, p


def _kwarg_names(pattern: URLPattern) -> list[str]:
    converters = getattr(pattern.pattern, "converters", {})
    return list(converters) if converters else list(pattern.pattern.regex.groupindex)


def all_routes() -> list[tuple[str, list[str]]]:
    """(reversible name, kwarg names) of every named pattern outside the admin, no format suffixes."""
    seen: dict[str, list[str]] = {}
    for namespace, pattern in _routes(get_resolver().url_patterns):
        if namespace == "admin" or "format" in _kwarg_names(pattern):
            continue
        name = f"{namespace}:{pattern.name}" if namespace else str(pattern.name)
        seen.setdefault(name, _kwarg_names(pattern))
    return sorted(seen.items())


@pytest.fixture
def world(db, make_user):  # type: ignore[no-untyped-def]
    """One of everything the URLs name, and the ids to put in them."""
    from annotation.models import JobItem
    from annotation.tests.factories import make_job
    from pipeline.models import AlignmentRun, ExportedDataset, Job, ModelVersion

    labeling = make_job()
    corpus = labeling.corpus
    pair = corpus.pairs.first()
    item = JobItem.objects.filter(job=labeling).first()
    job = Job.objects.create(kind=Job.Kind.EXPORT, corpus=corpus)
    version = ModelVersion.objects.create(name="m")
    run = AlignmentRun.objects.create(corpus=corpus, method="test", job=job)
    dataset = ExportedDataset.objects.create(corpus=corpus, kind="auto", run=run, job=job)
    ids = {
        "corpus_id": corpus.pk, "article_id": pair.article_id, "pair_id": pair.pk, "item_id": item.pk,
        "version_id": version.pk, "dataset_id": dataset.pk, "study_id": 1, "number": 1, "name": "card.md", "token": "t",
    }
    per_namespace_job = {"pipeline": job.pk, "annotation": labeling.pk}
    api_pk = {"corpus": corpus.pk, "article": pair.article_id, "documentpair": pair.pk, "document": pair.complex_id,
              "labelingjob": labeling.pk, "evaluation-study": 1}
    return {"ids": ids, "job": per_namespace_job, "api_pk": api_pk}


def _kwargs(name: str, names: list[str], world: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in names:
        if k == "job_id":
            out[k] = world["job"].get(name.split(":")[0], 1)
        elif k == "pk":
            out[k] = world["api_pk"].get(name.rsplit("-", 1)[0], 1)
        else:
            out[k] = world["ids"].get(k, 1)
    return out


def _urls(world: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(route name, URL): the real-id URL, then one URL per hostile path value."""
    for name, names in all_routes():
        kwargs = _kwargs(name, names, world)
        yield name, reverse(name, kwargs=kwargs)
        for k in names:
            kind = "int" if isinstance(kwargs[k], int) and k != "pk" else "str"
            for bad in PATH_HOSTILE[kind] + (PATH_HOSTILE["int"] if k == "pk" else []):
                try:
                    yield name, reverse(name, kwargs={**kwargs, k: bad})
                except Exception:  # noqa: S112 - the pattern cannot even express the value (e.g. "." in a DRF pk)
                    continue


def sweep(client: Client, world: dict[str, Any], values: list[str] = HOSTILE, **extra: Any) -> dict[str, int]:
    """Request everything; returns {status: count}. A 500 or an escaped exception fails at once."""
    counts: dict[str, int] = {}

    def check(method: str, url: str, response: Any) -> None:
        assert response.status_code < 500, f"{method} {url!r}: {response.status_code}"
        counts[str(response.status_code)] = counts.get(str(response.status_code), 0) + 1

    for _name, url in _urls(world):
        check("GET", url, client.get(url, **extra))
        for value in values:
            data = {p: value for p in PARAMS}
            check("GET", url, client.get(url, data, **extra))
            check("POST", url, client.post(url, data, **extra))
            if url.startswith("/api/"):
                body = {"token": value, "label": value, "exclude": [value], "ratings": [{"position": value, "values": {value: value}}]}
                check("POST json", url, client.post(url, body, content_type="application/json", **extra))
    return counts


@pytest.mark.django_db
def test_no_500_on_hostile_input_as_admin(world, make_user, client) -> None:  # type: ignore[no-untyped-def]
    """Admin passes every role check, so this reaches every view's parameter handling."""
    client.force_login(make_user("user-admin", "admin"))
    counts = sweep(client, world, FAST)
    assert sum(counts.values()) > 500
    assert counts.get("400", 0) > 100, counts  # real refusals met, not only redirects


@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.parametrize("role", [None, "annotator"])
def test_no_500_on_hostile_input_anonymous_and_annotator(role: str | None, world, make_user, client) -> None:  # type: ignore[no-untyped-def]
    if role:
        client.force_login(make_user(f"user-{role}", role))
    counts = sweep(client, world, FEW)
    assert sum(counts.values()) > 300
    assert counts.get("403" if role else "302", 0) > 50, counts


@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.parametrize("role", [None, "annotator", "verifier", "researcher", "admin"])
def test_no_500_on_any_hostile_value_every_role(role: str | None, world, make_user, client) -> None:  # type: ignore[no-untyped-def]
    if role:
        client.force_login(make_user(f"user-{role}", role))
    assert sum(sweep(client, world).values()) > 1000


@pytest.fixture(autouse=True)
def _local_cache(settings):  # type: ignore[no-untyped-def]
    """Failed logins are counted in the cache: keep each test's count to itself."""
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "hostile-input"}}
    from django.core.cache import cache

    cache.clear()


@pytest.mark.django_db
@pytest.mark.parametrize("username", ["a\x00b", "\x00", "x" * 5000, "é\x00"])
def test_basic_auth_with_hostile_user_name_is_refused(username: str, world, make_user, client, settings) -> None:  # type: ignore[no-untyped-def]
    settings.API_BASIC_AUTH = True
    token = base64.b64encode(f"{username}:pw".encode()).decode()
    for url in ["/api/corpora/", "/api/annotation/jobs/", f"/api/pairs/{world['ids']['pair_id']}/"]:
        response = client.get(url, HTTP_AUTHORIZATION=f"Basic {token}")
        assert response.status_code in (401, 403), (url, response.status_code)
        assert response.json()["code"] == "authentication_failed"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "field"),
    [("/api/articles/?corpus=abc", "corpus"), ("/api/pairs/?corpus=1.5", "corpus"), ("/api/pairs/?corpus=%C2%B2", "corpus"),
     ("/api/articles/?corpus=99999999999999999999", "corpus")],
)
def test_api_filters_name_the_bad_field(url: str, field: str, admin_user, client) -> None:  # type: ignore[no-untyped-def]
    client.force_login(admin_user)
    response = client.get(url)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid" and field in body["errors"] and body["detail"].startswith(field), body


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/corpora/{corpus}/?q=%00", "/models/?language=%00", "/annotate/correct/{corpus}/next/?after=%00",
                                  "/annotate/q/%00/context/", "/exports/?corpus=%C2%B2", "/annotate/verify/{job}/?item=%C2%B2"])
def test_pages_refuse_with_the_field_named(path: str, world, admin_user, client) -> None:  # type: ignore[no-untyped-def]
    client.force_login(admin_user)
    url = path.format(corpus=world["ids"]["corpus_id"], job=world["job"]["annotation"])
    response = client.get(url)
    assert response.status_code == 400, (url, response.status_code)
    text = response.content.decode()
    expected = url.split("?")[1].split("=")[0] if "?" in url else "address"
    assert expected in text, text[:500]
