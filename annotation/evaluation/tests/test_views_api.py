"""Pages and API: system names never reach a rater's HTML or JSON, a control looks like any
other version, roles, the whole flow of each design through the API, CSRF, throttling, the
OpenAPI schema, creating a study from a file and from an export, results and exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.evaluation.services import assignment, raters, studies
from annotation.evaluation.tests.factories import full_ratings, items, make_study
from annotation.models import EvalOutput, EvalPage, Rating, Study

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "evaluation-outputs.tsv"

pytestmark = pytest.mark.django_db

SECRET_SYSTEMS = ("zebramodel", "quokkanet", "narwhalmt")


def api_for(user, csrf: bool = False) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def secret_study(design: str, **extra: object) -> Study:
    data = items(6, ("alpha", "beta", "gamma"))
    for item in data:
        item.outputs = {new: item.outputs[old] for new, old in zip(SECRET_SYSTEMS, ("alpha", "beta", "gamma"), strict=True)}
    return studies.create_study(f"blind {design}", studies.StudySettings(design, raters_per_item=3, min_seconds=0, **extra), data)  # type: ignore[arg-type]


@pytest.mark.parametrize("design", ["likert", "slider", "comparative"])
def test_system_names_never_reach_a_raters_html_or_json(client, make_user, design):
    study = secret_study(design)
    rater = make_user("rhea", "annotator")
    client.force_login(rater)
    bodies = [client.get(reverse("evaluation:rate", args=[study.pk])).content.decode(),
              client.get(reverse("evaluation:home")).content.decode(),
              client.get(reverse("evaluation:instructions", args=[study.pk])).content.decode()]
    api = api_for(make_user("remy", "annotator"))
    bodies += [api.post(reverse("evaluation-study-next", args=[study.pk]), {}, format="json").content.decode(),
               api.get(reverse("evaluation-study-list")).content.decode(),
               api.get(reverse("evaluation-study-detail", args=[study.pk])).content.decode()]
    output_pks = list(EvalOutput.objects.filter(item__study=study).values_list("pk", flat=True))
    for body in bodies:
        for name in SECRET_SYSTEMS:
            assert name not in body.lower()
        assert "is_control" not in body and "base_system" not in body and "__control__" not in body
    page = EvalPage.objects.filter(rater=rater).get()
    html = bodies[0]
    assert page.token in html
    # output ids are not on the page either (they would tell systems apart): the form sends the
    # token and values by position only
    names = set(re.findall(r'<(?:input|select|textarea|button)\b[^>]*\bname="([^"]+)"', html))  # what the form sends
    assert "token" in names and any(n.startswith("r-") for n in names)  # the regex sees the form
    assert names <= {"csrfmiddlewaretoken", "token"} | {f"r-{p}-{d}" for p in range(4) for d in ("fluency", "adequacy", "simplicity", "quality", "comparative")}
    assert "output" not in " ".join(re.findall(r'data-[a-z-]+', html)) and len(output_pks) >= 18
    keys = set(json.loads(bodies[3]))
    assert keys == {"token", "source", "reference", "outputs", "dimensions"}
    assert all(set(o) == {"position", "text", "segments"} for o in json.loads(bodies[3])["outputs"])


def _version_blocks(html: str) -> list[str]:
    return re.findall(r'<li class="ev-version".*?</li>', html, flags=re.S)


def test_a_control_looks_exactly_like_a_system_version(client, make_user):
    study = secret_study("slider")
    rater = make_user("rhea", "annotator")
    client.force_login(rater)
    html = client.get(reverse("evaluation:rate", args=[study.pk])).content.decode()
    page = EvalPage.objects.get(rater=rater)
    outputs = {o.pk: o for o in EvalOutput.objects.filter(pk__in=page.order)}
    blocks = _version_blocks(html)
    assert len(blocks) == 4 and sum(outputs[pk].is_control for pk in page.order) == 1
    normalised = []
    for pos, block in enumerate(blocks):
        block = re.sub(r'<p class="ev-sent">.*?</p>', "TEXT", block, flags=re.S)
        block = block.replace(f'data-pos="{pos}"', "POS").replace(f"r-{pos}-", "r-N-").replace(f">{pos + 1}<", ">N<")
        block = block.replace(f"version {pos + 1}", "version N")
        normalised.append(block)
    assert len(set(normalised)) == 1, normalised


@pytest.mark.parametrize("design", ["likert", "slider", "comparative"])
def test_each_design_end_to_end_through_the_api(make_user, design):
    study = make_study(design, n_items=4, raters=2)
    raters = [make_user(f"api{i}", "annotator") for i in range(3)]
    for user in raters:
        api = api_for(user)
        while True:
            r = api.post(reverse("evaluation-study-next", args=[study.pk]), {}, format="json")
            if r.status_code == 204:
                break
            page = r.json()
            dims = page["dimensions"]
            ratings = [{"position": o["position"], "values": {d["key"]: d["maximum"] for d in dims}} for o in page["outputs"]]
            a = api.post(reverse("evaluation-answer"), {"token": page["token"], "ratings": ratings}, format="json")
            assert a.status_code == 200, a.json()
    versions = 3 + (design == "slider")  # three systems, and the control in slider studies
    dims = 3 if design == "likert" else 1
    assert Rating.objects.filter(study=study).count() == 4 * 2 * versions * dims
    researcher = make_user("rita", "researcher")
    res = api_for(researcher).get(reverse("evaluation-study-results", args=[study.pk]))
    assert res.status_code == 200
    data = res.json()
    assert data["counts"]["pages_answered"] == 8 and {s["system"] for s in data["scores"]} == set(study.systems)
    expected_max = {"likert": 5, "slider": 100, "comparative": 2}[design]
    assert all(s["mean"] == expected_max for s in data["scores"])
    assert api_for(raters[0]).get(reverse("evaluation-study-results", args=[study.pk])).status_code == 403  # raters never see results


def test_api_errors_too_fast_invalid_gone_and_idempotent(make_user):
    study = make_study("likert", min_seconds=30)
    user = make_user("anna", "annotator")
    api = api_for(user)
    page = api.post(reverse("evaluation-study-next", args=[study.pk]), {}, format="json").json()
    ratings = full_ratings(study, 3)
    r = api.post(reverse("evaluation-answer"), {"token": page["token"], "ratings": ratings}, format="json")
    assert r.status_code == 429 and r.json()["code"] == "too_fast" and "30 seconds per page" in r.json()["detail"]
    study.min_seconds = 0
    study.save()
    bad = api.post(reverse("evaluation-answer"), {"token": page["token"], "ratings": ratings[:2]}, format="json")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid" and "version(s) 3" in bad.json()["detail"]
    assert api.post(reverse("evaluation-answer"), {"token": page["token"], "ratings": "x"}, format="json").status_code == 400
    first = api.post(reverse("evaluation-answer"), {"token": page["token"], "ratings": ratings}, format="json")
    again = api.post(reverse("evaluation-answer"), {"token": page["token"], "ratings": ratings}, format="json")
    assert first.status_code == again.status_code == 200 and again.json()["duplicate"] is True
    assert Rating.objects.count() == 9
    other = api_for(make_user("eve", "annotator"))
    assert other.post(reverse("evaluation-answer"), {"token": page["token"], "ratings": ratings}, format="json").status_code == 410
    assert api.get(reverse("evaluation-study-me", args=[study.pk])).json() == {"answered": 1, "excluded": False}
    studies.set_status(study, "paused")
    assert api.post(reverse("evaluation-study-next", args=[study.pk]), {}, format="json").status_code == 404  # paused: hidden from raters


def test_excluded_rater_is_refused_everywhere(client, make_user):
    study = make_study("likert")
    user = make_user("anna", "annotator")
    assignment.next_page(study, user)
    raters.exclude_rater(study, user.pk)
    client.force_login(user)
    page = client.get(reverse("evaluation:rate", args=[study.pk]))
    assert page.status_code == 403 and "Thank you for your work" in page.content.decode()
    r = api_for(user).post(reverse("evaluation-study-next", args=[study.pk]), {}, format="json")
    assert r.status_code == 403 and r.json()["code"] == "excluded"


def test_csrf_and_throttle(make_user, settings):
    study = make_study("likert")
    csrf_api = api_for(make_user("c", "annotator"), csrf=True)
    assert csrf_api.post(reverse("evaluation-study-next", args=[study.pk]), {}, format="json").status_code == 403
    assert csrf_api.post(reverse("evaluation-answer"), {"token": "x", "ratings": []}, format="json").status_code == 403
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"answers": "2/min"}}
    api = api_for(make_user("t", "annotator"))
    codes = []
    for _ in range(3):
        page = api.post(reverse("evaluation-study-next", args=[study.pk]), {}, format="json").json()
        codes.append(api.post(reverse("evaluation-answer"), {"token": page["token"], "ratings": full_ratings(study, 3)}, format="json").status_code)
    assert codes == [200, 200, 429]


def test_permissions_by_role(client, make_user, annotator, researcher, admin_user, verifier):
    study = make_study("slider")
    researcher_pages = [
        reverse("evaluation:new"), reverse("evaluation:detail", args=[study.pk]), reverse("evaluation:edit", args=[study.pk]),
        reverse("evaluation:results", args=[study.pk]),
    ]
    client.force_login(annotator)
    for url in researcher_pages:
        assert client.get(url).status_code == 403, url
    assert client.post(reverse("evaluation:export", args=[study.pk])).status_code == 403
    assert client.post(reverse("evaluation:detail", args=[study.pk]), {"status": "closed"}).status_code == 403
    assert client.get(reverse("evaluation:rate", args=[study.pk])).status_code == 200
    assert client.get(reverse("evaluation:home")).status_code == 200
    for user in (researcher, admin_user):
        client.force_login(user)
        for url in researcher_pages:
            assert client.get(url).status_code == 200, (user.username, url)
    client.force_login(verifier)  # verifiers rate (they hold a labeler role) but do not run studies
    assert client.get(reverse("evaluation:rate", args=[study.pk])).status_code == 200
    assert client.get(reverse("evaluation:detail", args=[study.pk])).status_code == 403
    client.logout()
    assert client.get(reverse("evaluation:rate", args=[study.pk])).status_code == 302
    outsider = make_user("nobody")
    client.force_login(outsider)
    assert client.get(reverse("evaluation:home")).status_code == 403
    assert api_for(outsider).get(reverse("evaluation-study-list")).status_code == 403
    client.force_login(researcher)
    client.post(reverse("evaluation:detail", args=[study.pk]), {"status": "closed"})
    study.refresh_from_db()
    assert study.status == "closed" and study.closed_at is not None


def test_no_javascript_fallback_submits_a_page(client, make_user):
    study = make_study("likert")
    user = make_user("anna", "annotator")
    client.force_login(user)
    client.get(reverse("evaluation:rate", args=[study.pk]))
    page = EvalPage.objects.get(rater=user)
    data = {"token": page.token, **{f"r-{p}-{d}": "4" for p in range(3) for d in ("fluency", "adequacy", "simplicity")}}
    r = client.post(reverse("evaluation:submit", args=[study.pk]), data)
    assert r.status_code == 302 and Rating.objects.filter(page=page).count() == 9
    assert set(Rating.objects.values_list("value", flat=True)) == {4.0}
    bad = client.post(reverse("evaluation:submit", args=[study.pk]), {"token": "nope"}, follow=True)
    assert "no longer reserved" in bad.content.decode()


def test_schema_lists_the_evaluation_endpoints(client, admin_user):
    client.force_login(admin_user)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for path in ("/api/annotation/evaluation/studies/", "/api/annotation/evaluation/studies/{id}/next/",
                 "/api/annotation/evaluation/answers/", "/api/annotation/evaluation/studies/{id}/results/",
                 "/api/annotation/evaluation/studies/{id}/me/"):
        assert path in schema["paths"], path
    assert "PageAnswerRequest" in schema["components"]["schemas"] and "Results" in schema["components"]["schemas"]


def test_create_from_a_file_in_the_page_is_all_or_nothing(client, researcher):
    client.force_login(researcher)
    bad = "item_id\tsource\tsystem\toutput\n1\tA long sentence here.\tx\tShort.\n1\tA long sentence here.\tx\tAgain.\n"
    r = client.post(reverse("evaluation:new"), {
        "name": "Bad", "design": "likert", "outputs_file": SimpleUploadedFile("out.tsv", bad.encode()), "split": "test",
        "raters_per_item": 5, "sample_size": 100, "seed": 0, "min_seconds": 20, "control_threshold": 20, "flag_share": 0.2,
    })
    body = r.content.decode()
    assert r.status_code == 200 and "out.tsv:3: item &#x27;1&#x27; has a second output of system &#x27;x&#x27;" in body
    assert not Study.objects.exists()
    with open(str(EXAMPLE), "rb") as handle:
        good = SimpleUploadedFile("evaluation-outputs.tsv", handle.read())
    r = client.post(reverse("evaluation:new"), {
        "name": "Good", "design": "slider", "outputs_file": good, "split": "test", "raters_per_item": 3, "sample_size": 4,
        "seed": 3, "min_seconds": 10, "control_threshold": 15, "flag_share": 0.25,
    })
    study = Study.objects.get(name="Good")
    assert r.status_code == 302 and study.items.count() == 4 and study.control_threshold == 15
    assert study.source_info["file"] == "evaluation-outputs.tsv" and len(study.source_info["sha256"]) == 64
    assert EvalOutput.objects.filter(item__study=study, is_control=True).count() == 4


def test_results_page_and_export_files(client, make_user, researcher, tmp_path, settings):
    settings.EXPORTS_DIR = tmp_path
    study = make_study("likert", n_items=6, raters=2)
    users = [make_user(f"u{i}", "annotator") for i in range(2)]
    from annotation.evaluation.services import rating

    for k, user in enumerate(users):
        while (page := assignment.next_page(study, user)) is not None:
            rating.submit_page(user, page.token, full_ratings(study, 3, value=3 + k))
    raters.exclude_rater(study, users[1].pk)
    client.force_login(researcher)
    html = client.get(reverse("evaluation:results", args=[study.pk])).content.decode()
    assert "<svg" in html and "Fluency" in html and "Avg." in html and "SARI" in html and "Holm" in html
    assert "1 excluded rater" in html and "54 ratings kept apart" in html
    r = client.post(reverse("evaluation:export", args=[study.pk]))
    assert r.status_code == 302
    folder = tmp_path / "evaluation" / f"study-{study.pk}" / "1"
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(["README.md", "aggregates.csv", "aggregates.jsonl", "card.json", "pairwise.csv", "pairwise.jsonl",
                            "raters.json", "ratings.csv", "ratings.jsonl", "ratings_excluded.csv", "ratings_excluded.jsonl"])
    card = json.loads((folder / "card.json").read_text())
    assert card["counts"]["ratings"] == 54 and card["counts"]["excluded_ratings"] == 54
    assert len((folder / "ratings.csv").read_text().splitlines()) == 55  # header + rows: a recount
    assert len((folder / "ratings_excluded.jsonl").read_text().splitlines()) == 54
    assert "u0" not in (folder / "ratings.csv").read_text() and "u1" not in (folder / "raters.json").read_text()
    assert {f["name"] for f in card["files"]} >= {"ratings.csv", "README.md"}
    download = client.get(reverse("evaluation:export_file", args=[study.pk, 1, "ratings.csv"]))
    assert download.status_code == 200 and b"item_id" in b"".join(download.streaming_content)
    assert client.get(reverse("evaluation:export_file", args=[study.pk, 1, "..%2Fcard.json"])).status_code == 404
    detail = client.get(reverse("evaluation:detail", args=[study.pk])).content.decode()
    assert "ratings.csv" in detail and "excluded" in detail
    # progress recounted from the items: u1's pages went back to the queue when u1 was excluded
    assert "Items</span><strong>6</strong><small class=\"muted\">0 complete</small>" in detail
    assert "Pages rated</span><strong>6</strong><small class=\"muted\">of 12 wanted</small>" in detail


RATER_PAGES = {"home", "rate", "submit", "instructions"}


def test_every_other_evaluation_page_is_403_for_a_rater(client, annotator):
    """Like tests/test_roles_everywhere.py for the evaluation namespace: new researcher pages are
    covered automatically."""
    from django.urls import URLPattern, URLResolver, get_resolver

    def named(patterns, namespace=None):  # type: ignore[no-untyped-def]
        for p in patterns:
            if isinstance(p, URLResolver):
                yield from named(p.url_patterns, p.namespace or namespace)
            elif isinstance(p, URLPattern) and p.name:
                yield namespace, p

    study = make_study("likert")
    urls = []
    for namespace, pattern in named(get_resolver().url_patterns):
        if namespace == "evaluation" and pattern.name not in RATER_PAGES:
            kwargs = {name: (study.pk if name == "study_id" else 1 if name == "number" else "card.json") for name in pattern.pattern.converters}
            urls.append(reverse(f"evaluation:{pattern.name}", kwargs=kwargs))
    assert len(urls) >= 6
    client.force_login(annotator)
    statuses = {}
    for url in urls:
        status = client.get(url).status_code
        statuses[url] = client.post(url).status_code if status == 405 else status
    assert statuses == {url: 403 for url in urls}
