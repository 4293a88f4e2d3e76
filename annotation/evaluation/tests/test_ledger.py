"""The study cost ledger: recounts of pages, ratings, control ratings, ratings discarded by the
exclusion of a rater and the server's time on task, priced with the study's pay settings (per
rating, per hour, both or nothing); on the owner's page, in the API (never for raters), in the
export's card and from the command line; bad pay settings refused with the field's name."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.evaluation.forms import StudyForm
from annotation.evaluation.services import assignment, exporting, ledger, raters, rating, studies
from annotation.evaluation.tests.factories import full_ratings, items, make_study
from annotation.forms_jobs import JobForm
from annotation.models import EvalItem, EvalPage, Rating, Study, StudyRater

pytestmark = pytest.mark.django_db
EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "evaluation-outputs.tsv"
SECONDS = {"ann": 30.0, "bob": 45.0, "cat": 12.0}


def rate(study: Study, user, seconds: float, careless: bool = False) -> int:  # type: ignore[no-untyped-def]
    """Rate every page left for ``user``, each ``seconds`` after serving (server clock); careless
    raters score the control high (and fail it)."""
    clock, done = timezone.now(), 0
    while (page := assignment.next_page(study, user)) is not None:
        EvalPage.objects.filter(pk=page.pk).update(served_at=clock)
        clock += timedelta(seconds=seconds)
        values = full_ratings(study, len(page.order), value=90 if careless else 10)
        rating.submit_page(user, page.token, values, now=clock)
        done += 1
    return done


def small_study(make_user, pay_per_judgment: str, pay_per_hour: str):  # type: ignore[no-untyped-def]
    """A slider study (one control per page) of 4 items x 2 raters: ann and bob rate everything,
    cat rates first, fails every control and is excluded (her items go back to ann and bob)."""
    study = make_study("slider", n_items=4, raters=2, pay_per_judgment=pay_per_judgment, pay_per_hour=pay_per_hour, currency="EUR")
    users = {name: make_user(name, "annotator") for name in SECONDS}
    rate(study, users["cat"], SECONDS["cat"], careless=True)
    assert StudyRater.objects.get(study=study, rater=users["cat"]).flagged
    raters.exclude_rater(study, users["cat"].pk)
    for name in ("ann", "bob"):
        rate(study, users[name], SECONDS[name])
    return study, users


@pytest.mark.parametrize(("per_rating", "per_hour"), [("0.03", "0"), ("0", "12.00"), ("0.0250", "9.50"), ("0", "0")])
def test_ledger_recounts_rows_and_prices_them(make_user, per_rating, per_hour):
    study, users = small_study(make_user, per_rating, per_hour)
    book = ledger.study_ledger(study)
    assert [r.rater for r in book.rows] == ["ann", "bob", "cat"]
    for row in book.rows:
        user = users[row.rater]
        mine = Rating.objects.filter(study=study, rater=user)
        pages = EvalPage.objects.filter(study=study, rater=user, answered_at__isnull=False)
        assert row.pages_answered == pages.count() > 0
        assert row.pages_served == StudyRater.objects.get(study=study, rater=user).pages_served >= row.pages_answered
        assert row.ratings == mine.filter(output__is_control=False).count()
        assert row.control_ratings == mine.filter(output__is_control=True).count() == row.pages_answered  # one control per page
        assert row.valid_ratings == mine.filter(output__is_control=False, is_valid=True).count()
        assert row.discarded == row.ratings - row.valid_ratings
        assert row.seconds == pytest.approx(SECONDS[row.rater] * row.pages_answered)
        expected = Decimal(per_rating) * (row.ratings + row.control_ratings) + Decimal(per_hour) * Decimal(str(row.seconds)) / 3600
        assert row.cost == expected.quantize(Decimal("0.01"))
    ann, bob, cat = book.rows
    assert cat.excluded and cat.discarded == cat.ratings > 0 and cat.valid_ratings == 0
    assert not ann.excluded and ann.discarded == 0 == bob.discarded
    total = book.total
    assert total.cost == ann.cost + bob.cost + cat.cost and total.ratings == Rating.objects.filter(study=study, output__is_control=False).count()
    assert total.valid_ratings == Rating.objects.filter(study=study, output__is_control=False, is_valid=True).count()
    complete = EvalItem.objects.filter(study=study, ratings_count__gte=2).count()
    assert book.items == 4 and book.items_complete == complete == 4  # ann and bob rated every item after cat's exclusion
    assert book.cost_per_valid_rating == (total.cost / total.valid_ratings).quantize(Decimal("0.0001"))
    assert book.cost_per_item == (total.cost / complete).quantize(Decimal("0.0001"))
    if per_rating == per_hour == "0":
        assert total.cost == 0 and book.cost_per_valid_rating == 0
    else:
        assert total.cost > 0
        # the excluded rater's pay is spent without valid ratings: the cost per valid rating is higher than with her left out
        assert book.cost_per_valid_rating > ((ann.cost + bob.cost) / total.valid_ratings).quantize(Decimal("0.0001"))


def test_ledger_of_an_untouched_study_is_empty():
    book = ledger.study_ledger(Study.objects.get(pk=make_study("likert", pay_per_judgment="0.05").pk))
    assert book.rows == [] and book.total.cost == 0 and book.cost_per_valid_rating is None and book.cost_per_item is None
    assert book.as_dict()["cost_per_item"] is None and book.as_dict()["pay_per_judgment"] == "0.0500"


def test_ledger_on_the_owners_page_and_in_the_api_never_for_raters(client, make_user, researcher):
    study, users = small_study(make_user, "0.03", "12")
    book = ledger.study_ledger(study)
    client.force_login(researcher)
    page = client.get(reverse("evaluation:detail", args=[study.pk])).content.decode()
    assert 'id="ledger-table"' in page and f"{book.total.cost}</th>" in page
    assert f"{book.cost_per_valid_rating} EUR" in page and f"{book.cost_per_item} EUR" in page
    assert reverse("evaluation-study-ledger", args=[study.pk]) in page
    api = APIClient()
    api.force_login(researcher)
    data = api.get(reverse("evaluation-study-ledger", args=[study.pk])).json()
    assert data == json.loads(json.dumps(book.as_dict()))
    assert data["currency"] == "EUR" and data["total"]["cost"] == str(book.total.cost)
    assert [r["rater"] for r in data["raters"]] == ["ann", "bob", "cat"] and data["raters"][2]["excluded"] is True
    assert data["total"]["discarded"] == Rating.objects.filter(study=study, is_valid=False, output__is_control=False).count()
    # a rater (of this very study) reads neither the ledger nor the owner's page, and no rater page carries pay or figures
    rater = APIClient()
    rater.force_login(users["ann"])
    assert rater.get(reverse("evaluation-study-ledger", args=[study.pk])).status_code == 403
    client.force_login(users["ann"])
    assert client.get(reverse("evaluation:detail", args=[study.pk])).status_code == 403
    bodies = [rater.get(reverse("evaluation-study-detail", args=[study.pk])).content.decode(),
              rater.get(reverse("evaluation-study-me", args=[study.pk])).content.decode(),
              client.get(reverse("evaluation:home")).content.decode()]
    for body in bodies:
        assert "pay_per" not in body and "bob" not in body and str(book.total.cost) not in body
    missing = api.get(reverse("evaluation-study-ledger", args=[study.pk + 999]))
    assert missing.status_code == 404


def test_schema_documents_the_ledger(client, admin_user):
    client.force_login(admin_user)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    op = schema["paths"]["/api/annotation/evaluation/studies/{id}/ledger/"]["get"]
    assert set(op["responses"]) >= {"200", "403", "404"}
    ledger_schema = schema["components"]["schemas"]["StudyLedger"]
    assert {"currency", "pay_per_judgment", "pay_per_hour", "total", "cost_per_valid_rating", "cost_per_item", "raters"} <= set(ledger_schema["properties"])


def test_export_card_holds_the_ledger_totals(make_user, tmp_path, settings):
    settings.EXPORTS_DIR = tmp_path
    study, _ = small_study(make_user, "0.0250", "9.50")
    folder, card = exporting.export_study(study, n_boot=200)
    book = ledger.study_ledger(study)
    on_disk = json.loads((folder / "card.json").read_text())
    assert on_disk["annotation_cost"] == card["annotation_cost"] == json.loads(json.dumps(book.as_dict(per_person=False)))
    assert "raters" not in on_disk["annotation_cost"]  # no per-person pay in an export
    readme = (folder / "README.md").read_text()
    assert "## Cost ledger" in readme and f"| cost | {book.total.cost} EUR |" in readme
    assert f"| cost per valid rating | {book.cost_per_valid_rating} EUR |" in readme


@pytest.mark.parametrize(("field", "value", "message"), [
    ("pay_per_hour", "-1", "cannot be negative"),
    ("pay_per_judgment", "-0.01", "cannot be negative"),
    ("pay_per_judgment", "20000", "not a plausible price"),
    ("pay_per_hour", "5000000", "not a plausible price"),
    ("pay_per_hour", "NaN", "number"),
    ("pay_per_judgment", "0.123456", "decimal places"),
    ("currency", "eur", "three-letter ISO 4217 code"),
])
def test_bad_pay_is_refused_with_the_fields_name(client, researcher, field, value, message):
    # the service
    with pytest.raises(studies.StudyError, match=f"^{field}: .*{message}"):
        studies.create_study("x", studies.StudySettings("likert", **{field: value}), items(2))  # type: ignore[arg-type]
    # the new-study form and page
    data = {"name": "Paid", "design": "likert", "split": "test", "raters_per_item": 3, "sample_size": 4, "seed": 0,
            "min_seconds": 0, "control_threshold": 20, "flag_share": 0.2, field: value}
    form = StudyForm(data, {"outputs_file": SimpleUploadedFile("o.tsv", EXAMPLE.read_bytes())})
    assert not form.is_valid() and list(form.errors) == [field] and message in str(form.errors[field])
    client.force_login(researcher)
    with open(EXAMPLE, "rb") as handle:
        r = client.post(reverse("evaluation:new"), {**data, "outputs_file": SimpleUploadedFile("o.tsv", handle.read())})
    assert r.status_code == 200 and not Study.objects.exists()
    # the settings page of an existing study
    study = make_study("likert", pay_per_hour="10")
    edit = {k: getattr(study, k) for k in studies.EDITABLE}
    r = client.post(reverse("evaluation:edit", args=[study.pk]), {**edit, field: value})
    assert r.status_code == 200 and message in r.content.decode().replace("&#x27;", "'")
    study.refresh_from_db()
    assert study.pay_per_hour == Decimal("10") and study.currency == "USD"
    # the labeling job's form shares the same fields
    assert message in str(JobForm({field: value}).errors.get(field, ""))
    # the command line
    with pytest.raises(CommandError, match=f"{field}: "):
        call_command("evaluation_study", "create", "cli", "--design", "likert", "--outputs", str(EXAMPLE),
                     f"--{field.replace('_', '-')}", value)


def test_pay_is_set_on_creation_and_edited_on_the_settings_page(client, researcher):
    client.force_login(researcher)
    with open(EXAMPLE, "rb") as handle:
        r = client.post(reverse("evaluation:new"), {
            "name": "Paid", "design": "likert", "outputs_file": SimpleUploadedFile("o.tsv", handle.read()), "split": "test",
            "raters_per_item": 3, "sample_size": 4, "seed": 0, "min_seconds": 0, "control_threshold": 20, "flag_share": 0.2,
            "pay_per_judgment": "0.04", "pay_per_hour": "", "currency": "GBP",
        })
    study = Study.objects.get(name="Paid")
    assert r.status_code == 302 and study.pay_per_judgment == Decimal("0.04") and study.pay_per_hour == 0 and study.currency == "GBP"
    edit = {k: getattr(study, k) for k in studies.EDITABLE}
    r = client.post(reverse("evaluation:edit", args=[study.pk]), {**edit, "pay_per_hour": "11.50", "currency": "EUR"})
    study.refresh_from_db()
    assert r.status_code == 302 and study.pay_per_hour == Decimal("11.50") and study.currency == "EUR"
    studies.update_settings(study, pay_per_judgment="0.5")
    study.refresh_from_db()
    assert study.pay_per_judgment == Decimal("0.5")


def test_simulate_and_ledger_from_the_command_line():
    def run(*args: str) -> str:
        out = StringIO()
        call_command("evaluation_study", *args, stdout=out)
        return out.getvalue()

    run("create", "CLI paid", "--design", "slider", "--outputs", str(EXAMPLE), "--raters", "3", "--min-seconds", "5",
        "--pay-per-rating", "0.02", "--pay-per-hour", "10", "--currency", "EUR")
    study = Study.objects.get(name="CLI paid")
    assert (study.pay_per_judgment, study.pay_per_hour, study.currency) == (Decimal("0.02"), Decimal("10"), "EUR")
    sim = run("simulate", str(study.pk), "--raters", "5", "--careless", "1")
    book = ledger.study_ledger(study)
    assert f"cost {book.total.cost} EUR" in sim and f"{book.total.ratings} ratings" in sim and book.total.pages_answered == 18
    run("exclude", str(study.pk), "--rater", "sim-rater-0")
    excluded = ledger.study_ledger(study)
    assert excluded.total.cost == book.total.cost and excluded.total.discarded > 0  # exclusion discards, the pay stays spent
    assert excluded.items_complete < excluded.items  # the excluded rater's items went back to the queue
    # a second run (its raters' clocks resume where the first left them; the excluded rater is skipped) completes them
    again = run("simulate", str(study.pk), "--raters", "5")
    text = run("ledger", str(study.pk))
    after = ledger.study_ledger(study)
    assert "submitted 0 pages" not in again and after.items_complete == after.items == 6
    assert after.total.pages_answered > 18 and after.rows[0].pages_answered == excluded.rows[0].pages_answered
    assert after.total.cost > book.total.cost and after.cost_per_item == (after.total.cost / 6).quantize(Decimal("0.0001"))
    assert f"total\t{after.total.pages_served}\t{after.total.pages_answered}\t{after.total.ratings}\t{after.total.discarded}" in text
    data = json.loads(run("ledger", str(study.pk), "--json"))
    assert data["total"]["discarded"] == after.total.discarded and len(data["raters"]) == 5


def test_ledger_costs_four_queries_whatever_the_raters(make_user, django_assert_num_queries):
    study, _users = small_study(make_user, "0.03", "12.00")
    with django_assert_num_queries(4):  # raters, answered pages, ratings, items (count and complete in one)
        book = ledger.study_ledger(study)
    assert len(book.rows) == 3 and book.items == 4


def test_pay_is_changed_in_the_api_and_the_ledger_recounts(make_user, researcher):
    study, users = small_study(make_user, "0.03", "12")
    api = APIClient()
    api.force_login(researcher)
    url = reverse("evaluation-study-ledger", args=[study.pk])
    before = api.get(url).json()
    data = api.patch(url, {"pay_per_judgment": "0.06", "currency": "USD"}, format="json").json()
    study.refresh_from_db()
    assert (study.pay_per_judgment, study.pay_per_hour, study.currency) == (Decimal("0.06"), Decimal(12), "USD")
    assert data == api.get(url).json() and data["currency"] == "USD"
    assert Decimal(data["total"]["cost"]) > Decimal(before["total"]["cost"])
    for body in ({"currency": "usd"}, {"pay_per_hour": "-1"}, {"pay_per_judgment": "1e3"}):
        assert api.patch(url, body, format="json").status_code == 400, body
    assert api.patch(url, {}, format="json").json() == data  # nothing to change
    study.refresh_from_db()
    assert (study.pay_per_judgment, study.currency) == (Decimal("0.06"), "USD")
    rater = APIClient()
    rater.force_login(users["ann"])
    assert rater.patch(url, {"pay_per_hour": "0"}, format="json").status_code == 403
