"""The cost ledger of a human-evaluation study: per rater and in total, the pages served and
answered, the ratings given, the control ratings (the study's test questions), the time on task
the server measured, the ratings that the exclusion of a rater discarded, and with the study's
pay settings the cost per valid rating and per item fully rated. The labeling job's ledger
(``annotation.services.ledger``) owns the pricing, the totals and the JSON shape; this module only
counts a study's rows.

- pages served: ``StudyRater.pages_served`` (an expired reservation's page row is deleted and the
  item served again, so the counter is the only record of it); pages answered: answered
  ``EvalPage`` rows;
- ratings: ``Rating`` rows on system outputs (one value, one version, one dimension), valid or not;
  control ratings: ``Rating`` rows on controls (slider studies), paid like test answers;
- discarded: system ratings set apart (``is_valid=False``) when the rater was excluded;
  valid = ratings - discarded;
- seconds on task: ``EvalPage.seconds`` of answered pages, the server's measure from the later of
  the serve time and the rater's previous answer to the answer;
- cost = ``pay_per_judgment`` x (ratings + control ratings) + ``pay_per_hour`` x hours on task;
  every rating is paid, the excluded raters' included (the waste shows as the discarded column);
- cost per valid rating = total cost / valid ratings; per item fully rated = total cost / items
  with ``raters_per_item`` valid pages.

For researchers only: rows name raters (the study's pages and API for raters never show it).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, Sum

from annotation.models import EvalPage, Rating, Study, StudyRater
from annotation.services.ledger import CostLedger, OnTask, cost_of, money, per_unit


@dataclass
class StudyLedgerRow(OnTask):
    rater: str
    pages_served: int = 0
    pages_answered: int = 0
    ratings: int = 0
    valid_ratings: int = 0
    discarded: int = 0
    control_ratings: int = 0
    seconds: float = 0.0
    cost: Decimal = Decimal(0)
    excluded: bool = False


@dataclass(kw_only=True)
class StudyLedger(CostLedger[StudyLedgerRow]):
    study_id: int
    items: int = 0
    items_complete: int = 0

    row_type = StudyLedgerRow
    people = "raters"
    flags = ("excluded",)

    @property
    def cost_per_valid_rating(self) -> Decimal | None:
        return per_unit(self.total.cost, self.total.valid_ratings)

    @property
    def cost_per_item(self) -> Decimal | None:
        return per_unit(self.total.cost, self.items_complete)

    def figures(self) -> dict[str, Any]:
        return {"items": self.items, "items_complete": self.items_complete,
                "cost_per_valid_rating": money(self.cost_per_valid_rating), "cost_per_item": money(self.cost_per_item)}


def study_ledger(study: Study) -> StudyLedger:
    """The ledger of ``study``, rows by user name."""
    rows: dict[int, StudyLedgerRow] = {}
    for uid, username, served, excluded in StudyRater.objects.filter(study=study).values_list(
        "rater_id", "rater__username", "pages_served", "excluded"
    ):
        rows[uid] = StudyLedgerRow(username, pages_served=served, excluded=excluded)
    answered = (EvalPage.objects.filter(study=study, answered_at__isnull=False).order_by().values("rater_id")
                .annotate(n=Count("pk"), seconds=Sum("seconds")))
    for r in answered:
        row = rows.setdefault(r["rater_id"], StudyLedgerRow(str(r["rater_id"])))
        row.pages_answered, row.seconds = r["n"], float(r["seconds"] or 0)
    rated = (Rating.objects.filter(study=study).order_by().values("rater_id")
             .annotate(system=Count("pk", filter=Q(output__is_control=False)),
                       valid=Count("pk", filter=Q(output__is_control=False, is_valid=True)),
                       control=Count("pk", filter=Q(output__is_control=True))))
    for c in rated:
        row = rows.setdefault(c["rater_id"], StudyLedgerRow(str(c["rater_id"])))
        row.ratings, row.valid_ratings, row.control_ratings = c["system"], c["valid"], c["control"]
        row.discarded = c["system"] - c["valid"]
    items = study.items.aggregate(n=Count("pk"), complete=Count("pk", filter=Q(ratings_count__gte=study.raters_per_item)))
    book = StudyLedger(study.currency, Decimal(study.pay_per_judgment), Decimal(study.pay_per_hour), study_id=study.pk,
                       items=items["n"], items_complete=items["complete"])
    for row in sorted(rows.values(), key=lambda r: r.rater):
        if not (row.pages_served or row.pages_answered or row.ratings or row.control_ratings):
            continue
        row.cost = cost_of(study, row.ratings + row.control_ratings, row.seconds)
        book.rows.append(row)
    return book
