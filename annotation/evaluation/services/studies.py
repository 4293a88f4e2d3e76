"""Creating a study from imported items (sampling, outputs, controls), editing, status."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, fields
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from annotation.evaluation.balance import derived_seed
from annotation.evaluation.controls import make_control, vocabulary
from annotation.evaluation.designs import DEFAULT_INSTRUCTIONS, DESIGNS
from annotation.evaluation.importers import ItemInput
from annotation.models import EvalItem, EvalOutput, Study
from annotation.models.pay import PAY_FIELDS, PayError, check_pay

CONTROL = "__control__"  # the control's member name in the balanced design (never shown)


class StudyError(Exception):
    """The study cannot be created or changed this way (shown to the user)."""


@dataclass
class StudySettings:
    design: str
    raters_per_item: int = 5
    sample_size: int = 100
    seed: int = 0
    min_seconds: int = 20
    reservation_minutes: int = 30
    show_reference: bool = False
    instructions: str = ""
    control_threshold: float = 20.0
    flag_share: float = 0.2
    min_control_pages: int = 3
    pay_per_judgment: Decimal = Decimal(0)  # per rating (control ratings included); the cost ledger
    pay_per_hour: Decimal = Decimal(0)
    currency: str = "USD"

    def check(self) -> None:
        if self.design not in DESIGNS:
            raise StudyError(f"design must be one of {', '.join(DESIGNS)}, got {self.design!r}")
        for name in ("raters_per_item", "sample_size"):
            if getattr(self, name) < 1:
                raise StudyError(f"{name} must be at least 1")
        if self.min_seconds < 0 or self.seed < 0:
            raise StudyError("min_seconds and seed must not be negative")
        if not 0 <= self.flag_share <= 1:
            raise StudyError("flag_share is a share between 0 and 1")
        if not 0 <= self.control_threshold <= 100:
            raise StudyError("control_threshold is on the slider's 0-100 scale")
        try:
            for name, value in check_pay(asdict(self)).items():
                setattr(self, name, value)
        except PayError as exc:
            raise StudyError(str(exc)) from exc


EDITABLE = ("min_seconds", "reservation_minutes", "show_reference", "instructions", "control_threshold", "flag_share",
            "min_control_pages", "raters_per_item", *PAY_FIELDS)


def sample_items(items: list[ItemInput], size: int, seed: int) -> list[ItemInput]:
    """``size`` items drawn at random by ``seed`` (all when there are fewer), in input order."""
    if len(items) <= size:
        return list(items)
    keep = set(random.Random(derived_seed(seed, "sample")).sample(range(len(items)), size))
    return [item for i, item in enumerate(items) if i in keep]


@transaction.atomic
def create_study(
    name: str, settings: StudySettings, items: list[ItemInput], created_by: User | None = None,
    source_info: dict[str, Any] | None = None,
) -> Study:
    """A study over a random sample of ``items``; slider studies get one control per item."""
    settings.check()
    design = DESIGNS[settings.design]
    if not name.strip():
        raise StudyError("a study needs a name")
    if not items:
        raise StudyError("no items to evaluate")
    systems = sorted({s for item in items for s in item.outputs})
    if not systems:
        raise StudyError("the items have no system outputs")
    if CONTROL in systems:
        raise StudyError(f"{CONTROL!r} is reserved; rename that system")
    if design.needs_reference:
        missing = [item.key for item in items if not item.references]
        if missing:
            raise StudyError(f"the {design.key} design compares with the reference, and {len(missing)} items have none (first: {missing[0]!r})")
    chosen = sample_items(items, settings.sample_size, settings.seed)
    values = asdict(settings)
    values["instructions"] = settings.instructions.strip() or DEFAULT_INSTRUCTIONS[design.key]
    values["show_reference"] = settings.show_reference or design.needs_reference
    study = Study.objects.create(
        name=name.strip()[:200], systems=systems, created_by=created_by,
        source_info={**(source_info or {}), "input_items": len(items), "sampled_items": len(chosen), "systems": systems},
        **values,
    )
    rows = EvalItem.objects.bulk_create(
        EvalItem(study=study, key=item.key, position=n, source=item.source, references=item.references)
        for n, item in enumerate(chosen)
    )
    outputs = [EvalOutput(item=row, system=s, text=item.outputs[s]) for row, item in zip(rows, chosen, strict=True) for s in systems]
    if design.controls:
        vocab = vocabulary([i.source for i in chosen] + [r for i in chosen for r in i.references]
                           + [t for i in chosen for t in i.outputs.values()])
        for row, item in zip(rows, chosen, strict=True):
            rng = random.Random(derived_seed(settings.seed, "control", item.key))
            base = rng.choice(systems)
            try:
                control = make_control(item.outputs[base], vocab, rng)
            except ValueError as exc:
                raise StudyError(f"item {item.key!r}: {exc}") from exc
            outputs.append(EvalOutput(
                item=row, system="", text=control.text, is_control=True,
                control={"base_system": base, "replaced": [list(r) for r in control.replaced]},
            ))
    EvalOutput.objects.bulk_create(outputs)
    return study


def members(study: Study) -> list[str]:
    """What the balanced design orders on each page: the systems, and the control if any."""
    return [*study.systems, CONTROL] if DESIGNS[study.design].controls else list(study.systems)


def set_status(study: Study, status: str) -> Study:
    if status not in Study.Status.values:
        raise StudyError(f"status must be one of {', '.join(Study.Status.values)}")
    study.status = status
    study.closed_at = timezone.now() if status == Study.Status.CLOSED else None
    study.save(update_fields=["status", "closed_at"])
    return study


def update_settings(study: Study, **changes: Any) -> Study:
    unknown = set(changes) - set(EDITABLE)
    if unknown:
        raise StudyError(f"cannot change {', '.join(sorted(unknown))} after creation")
    merged = StudySettings(**{f.name: changes.get(f.name, getattr(study, f.name)) for f in fields(StudySettings)})
    merged.check()
    changes.update({k: getattr(merged, k) for k in PAY_FIELDS if k in changes})  # as cleaned
    if DESIGNS[study.design].needs_reference:
        changes["show_reference"] = True
    for key, value in changes.items():
        setattr(study, key, value)
    study.save(update_fields=list(changes))
    return study
