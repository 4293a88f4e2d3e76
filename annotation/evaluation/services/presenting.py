"""What a rater sees of a page: the source, the reference when the study shows it, and the
outputs by position only. Never a system name, an output id, or which output is the control
(a control looks exactly like a system output)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet

from accounts.roles import Role, has_role
from annotation.evaluation.controls import word_diff
from annotation.evaluation.designs import DESIGNS
from annotation.models import EvalOutput, EvalPage, Study, StudyRater


@dataclass(frozen=True)
class OutputView:
    position: int
    text: str
    segments: list[tuple[str, str]]  # the slider design's diff against the source; else empty

    def as_dict(self) -> dict[str, Any]:
        return {"position": self.position, "text": self.text, "segments": [{"kind": k, "text": t} for k, t in self.segments]}


@dataclass(frozen=True)
class PageView:
    token: str
    source: str
    reference: str
    outputs: list[OutputView]

    def as_dict(self) -> dict[str, Any]:
        return {"token": self.token, "source": self.source, "reference": self.reference,
                "outputs": [o.as_dict() for o in self.outputs]}


def page_view(page: EvalPage) -> PageView:
    study = page.study
    item = page.item
    texts = dict(EvalOutput.objects.filter(pk__in=page.order).values_list("pk", "text"))
    diff = DESIGNS[study.design].controls  # the slider design highlights additions and deletions
    outputs = [OutputView(pos, texts[pk], word_diff(item.source, texts[pk]) if diff else []) for pos, pk in enumerate(page.order)]
    reference = " / ".join(item.references) if study.show_reference else ""
    return PageView(page.token, item.source, reference, outputs)


def design_spec(study: Study) -> dict[str, Any]:
    """The scales of the study's design for the rating page (no data about any system)."""
    design = DESIGNS[study.design]
    return {
        "design": design.key,
        "dimensions": [
            {"key": d.key, "label": d.label, "question": d.question, "minimum": d.minimum, "maximum": d.maximum,
             "level": d.level, "low": d.low, "high": d.high, "choices": [list(c) for c in d.choices]}
            for d in design.dimensions
        ],
    }


@dataclass(frozen=True)
class MyProgress:
    answered: int
    excluded: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def my_progress(membership: StudyRater | None) -> MyProgress:
    if membership is None:
        return MyProgress(0, False)
    return MyProgress(membership.pages_answered, membership.excluded)


def visible_studies(user: User) -> QuerySet[Study]:
    """Open studies for raters; researchers (and admins) see every study."""
    qs = Study.objects.order_by("-created_at")
    if has_role(user, Role.RESEARCHER):
        return qs
    return qs.filter(status=Study.Status.OPEN)


def page_by_token(user: User, token: str) -> EvalPage | None:
    return EvalPage.objects.select_related("study", "item").filter(token=token, rater=user).first()
