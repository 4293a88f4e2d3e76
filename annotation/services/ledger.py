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
from typing import Any, ClassVar, Generic, TypeVar

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


class OnTask:
    """A ledger row: it measures ``seconds`` on task and costs ``cost``; hours are derived."""

    seconds: float
    cost: Decimal

    @property
    def hours(self) -> float:
        return self.seconds / 3600


Row = TypeVar("Row", bound=OnTask)


def summed(rows: Sequence[Row], template: Row) -> Row:
    """``template`` with every number field (int, float, Decimal; not bool) replaced by its sum over ``rows``."""
    numbers = [f.name for f in fields(template)  # type: ignore[arg-type]
               if isinstance(getattr(template, f.name), (int, float, Decimal)) and not isinstance(getattr(template, f.name), bool)]
    return replace(template, **{n: sum((getattr(r, n) for r in rows), type(getattr(template, n))(0)) for n in numbers})  # type: ignore[type-var]


def row_dict(row: OnTask, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """A ledger row as JSON: cost as a decimal string, seconds to 0.1 s, ``drop`` left out."""
    d = {k: v for k, v in asdict(row).items() if k not in drop}  # type: ignore[call-overload]
    d["cost"] = str(row.cost)
    d["seconds"] = round(row.seconds, 1)
    return d


@dataclass
class CostLedger(Generic[Row]):
    """Pay terms and one row per person; the total is derived from the rows, never stored beside
    them. Subclasses name their rows (``row_type``: its first field is the person, ``people``: the
    JSON key of the rows, ``flags``: per-person fields the total leaves out) and add ``figures``."""

    currency: str
    pay_per_judgment: Decimal
    pay_per_hour: Decimal
    rows: list[Row] = field(default_factory=list)

    row_type: ClassVar[type[Any]]
    people: ClassVar[str]
    flags: ClassVar[tuple[str, ...]]

    @property
    def total(self) -> Row:
        """The sum of the rows."""
        return summed(self.rows, self.row_type("total"))

    def figures(self) -> dict[str, Any]:
        """The ledger's own JSON figures beside the total (costs per unit, what they divide by)."""
        return {}

    def as_dict(self, per_person: bool = True) -> dict[str, Any]:
        """JSON-ready: money as strings with their currency (exact decimals), seconds rounded; an
        export leaves the people out (``per_person=False``: no per-person pay)."""
        person = fields(self.row_type)[0].name
        out: dict[str, Any] = {**pay_terms(self), "total": row_dict(self.total, drop=(person, *self.flags)), **self.figures()}
        if per_person:
            out[self.people] = [row_dict(r) for r in self.rows]
        return out


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


@dataclass(kw_only=True)
class Ledger(CostLedger[LedgerRow]):
    job_id: int
    verified_pairs: int = 0

    row_type = LedgerRow
    people = "annotators"
    flags = ("removed",)

    @property
    def cost_per_valid_judgment(self) -> Decimal | None:
        return per_unit(self.total.cost, self.total.valid_judgments)

    @property
    def cost_per_verified_pair(self) -> Decimal | None:
        return per_unit(self.total.cost, self.verified_pairs)

    def figures(self) -> dict[str, Any]:
        return {"verified_pairs": self.verified_pairs, "cost_per_valid_judgment": money(self.cost_per_valid_judgment),
                "cost_per_verified_pair": money(self.cost_per_verified_pair)}


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
    ledger = Ledger(job.currency, Decimal(job.pay_per_judgment), Decimal(job.pay_per_hour), job_id=job.pk)
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
