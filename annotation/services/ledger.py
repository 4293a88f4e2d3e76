"""The annotation cost ledger of a labeling job: per annotator and in total, what was answered,
what removal discarded, the time on task the server measured, and with the job's pay settings
the cost per valid judgment and per verified pair. Every figure is a recount of rows.

- judgments: every ``Judgment`` (valid or not); discarded: those invalidated by a removal;
- test answers: the membership's true count (``tests_answered``, one ``TestAnswer`` row each);
- seconds on task: the server's own measure, ``Judgment.seconds`` + ``TestAnswer.seconds``: from the
  later of the serve time and the annotator's previous answer to the answer (a preloaded question
  does not count twice; the client's clock plays no part);
- cost = ``pay_per_judgment`` x (judgments + test answers) + ``pay_per_hour`` x hours on task:
  every answer is paid, test questions and judgments later discarded included (the worker did the
  work; what removal wastes shows as the discarded column and in the cost per valid judgment);
- cost per valid judgment = total cost / valid judgments; per verified pair = total cost / verified
  labels of the job's candidate pairs.

Figure Eight's billing is the reference (docs/annotation-quality.md, "Cost ledger").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, TypeVar

from django.db.models import Count, Q, Sum

from annotation.models import Judgment, LabelingJob, Membership, TestAnswer, VerifiedLabel
from annotation.models.pay import PaySettings

CENT = Decimal("0.01")
UNIT = Decimal("0.0001")  # precision of a cost per unit (per valid judgment, per verified pair, per rating)

# The pieces every cost ledger shares (labeling jobs here, evaluation studies in
# annotation.evaluation.services.ledger): the price of answers and time, a cost per unit, a total
# derived from the rows, and the JSON shape of pay terms, rows and money.


def cost_of(pay: PaySettings, answers: int, seconds: float) -> Decimal:
    """``pay_per_judgment`` x answers + ``pay_per_hour`` x hours, rounded to cents."""
    price = Decimal(pay.pay_per_judgment) * answers + Decimal(pay.pay_per_hour) * Decimal(str(seconds)) / 3600
    return price.quantize(CENT, rounding=ROUND_HALF_UP)


def per_unit(cost: Decimal, units: int) -> Decimal | None:
    """Cost per unit to 4 decimals; None when there is no unit to divide by."""
    return (cost / units).quantize(UNIT) if units else None


def money(value: Decimal | None) -> str | None:
    """Money in JSON: an exact decimal string (None stays null)."""
    return None if value is None else str(value)


def pay_terms(pay: PaySettings | Any) -> dict[str, str]:
    """The pay settings as JSON, at the fields' precision (0.0300 per answer, 12.00 per hour)."""
    return {"currency": pay.currency, "pay_per_judgment": str(Decimal(pay.pay_per_judgment).quantize(UNIT)),
            "pay_per_hour": str(Decimal(pay.pay_per_hour).quantize(CENT))}


R = TypeVar("R")


def summed(rows: Sequence[R], template: R) -> R:
    """``template`` with every number field (int, float, Decimal; not bool) replaced by its sum over ``rows``."""
    sums = {f.name: sum((getattr(r, f.name) for r in rows), type(getattr(template, f.name))(0))
            for f in fields(template)  # type: ignore[arg-type]
            if isinstance(getattr(template, f.name), (int, float, Decimal)) and not isinstance(getattr(template, f.name), bool)}
    return replace(template, **sums)  # type: ignore[type-var]


def row_dict(row: Any, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """A ledger row as JSON: cost as a decimal string, seconds to 0.1 s, ``drop`` left out."""
    d = {k: v for k, v in asdict(row).items() if k not in drop}
    d["cost"] = str(row.cost)
    d["seconds"] = round(row.seconds, 1)
    return d


class OnTask:
    """Rows that measure ``seconds`` on task also show hours."""

    seconds: float

    @property
    def hours(self) -> float:
        return self.seconds / 3600


@dataclass
class LedgerRow(OnTask):
    annotator: str
    judgments: int = 0
    valid_judgments: int = 0
    discarded: int = 0
    test_answers: int = 0
    seconds: float = 0.0
    cost: Decimal = Decimal(0)
    removed: bool = False


@dataclass
class Ledger:
    job_id: int
    currency: str
    pay_per_judgment: Decimal
    pay_per_hour: Decimal
    rows: list[LedgerRow] = field(default_factory=list)
    verified_pairs: int = 0

    @property
    def total(self) -> LedgerRow:
        """The sum of the annotators' rows (derived, never stored beside them)."""
        return summed(self.rows, LedgerRow("total"))

    @property
    def cost_per_valid_judgment(self) -> Decimal | None:
        total = self.total
        return per_unit(total.cost, total.valid_judgments)

    @property
    def cost_per_verified_pair(self) -> Decimal | None:
        return per_unit(self.total.cost, self.verified_pairs)

    def as_dict(self, per_annotator: bool = True) -> dict[str, Any]:
        """JSON-ready: money as strings with their currency (exact decimals), seconds rounded."""
        out: dict[str, Any] = {
            **pay_terms(self),
            "total": row_dict(self.total, drop=("annotator", "removed")),
            "verified_pairs": self.verified_pairs,
            "cost_per_valid_judgment": money(self.cost_per_valid_judgment),
            "cost_per_verified_pair": money(self.cost_per_verified_pair),
        }
        if per_annotator:
            out["annotators"] = [row_dict(r) for r in self.rows]
        return out


def job_ledger(job: LabelingJob, names: dict[int, str] | None = None) -> Ledger:
    """The ledger of ``job``; ``names`` (user id -> shown name) defaults to user names."""
    rows: dict[int, LedgerRow] = {}
    usernames: dict[int, str] = {}
    judged = (
        Judgment.objects.filter(job=job).order_by().values("annotator_id", "annotator__username")
        .annotate(n=Count("pk"), valid=Count("pk", filter=Q(is_valid=True)), seconds=Sum("seconds"))
    )
    seconds: dict[int, float] = defaultdict(float)
    for r in judged:
        uid = r["annotator_id"]
        usernames[uid] = r["annotator__username"]
        rows[uid] = LedgerRow("", judgments=r["n"], valid_judgments=r["valid"], discarded=r["n"] - r["valid"])
        seconds[uid] += float(r["seconds"] or 0)
    for uid, secs in TestAnswer.objects.filter(job=job).order_by().values_list("annotator_id").annotate(s=Sum("seconds")):
        seconds[uid] += float(secs or 0)
    for uid, username, tests, removed in Membership.objects.filter(job=job).values_list(
        "annotator_id", "annotator__username", "tests_answered", "removed"
    ):
        usernames[uid] = username
        row = rows.setdefault(uid, LedgerRow(""))
        row.test_answers, row.removed = tests, removed
    ledger = Ledger(job.pk, job.currency, Decimal(job.pay_per_judgment), Decimal(job.pay_per_hour))
    for uid in sorted(rows, key=lambda u: usernames.get(u, "")):
        row = rows[uid]
        if not (row.judgments or row.test_answers):
            continue
        row.annotator = (names or {}).get(uid, usernames.get(uid, str(uid)))
        row.seconds = seconds[uid]
        row.cost = cost_of(job, row.judgments + row.test_answers, row.seconds)
        ledger.rows.append(row)
    ledger.verified_pairs = VerifiedLabel.objects.filter(candidate__job_items__job=job).count()
    return ledger
