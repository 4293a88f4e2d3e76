"""Pay settings shared by labeling jobs and human-evaluation studies (the cost ledger's input):
a price per answer and/or per hour on task, in one currency. The validators here are the one
place that says what a sensible value is; forms, commands and services all use them
(``check_pay``), so a negative or absurd value is refused with the field's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

PAY_FIELDS = ("pay_per_judgment", "pay_per_hour", "currency")
# "absurd" bounds, loose enough for currencies with small units (JPY, KRW, IDR wages per hour)
MAX_PAY_PER_JUDGMENT = Decimal("10000")
MAX_PAY_PER_HOUR = Decimal("1000000")


def _bounds(top: Decimal, what: str) -> list[Any]:
    return [MinValueValidator(Decimal(0), message=f"{what} cannot be negative."),
            MaxValueValidator(top, message=f"{what} above {top:,} is not a plausible price; check the unit.")]


class PaySettings(models.Model):
    """Abstract: what one answer and one hour on task cost (both may be used, both default to 0)."""

    pay_per_judgment = models.DecimalField(
        max_digits=10, decimal_places=4, default=0, validators=_bounds(MAX_PAY_PER_JUDGMENT, "Pay per answer"),
        help_text="pay per answer: a labeling judgment or test answer; a study's rating (control ratings included)",
    )
    pay_per_hour = models.DecimalField(
        max_digits=10, decimal_places=2, default=0, validators=_bounds(MAX_PAY_PER_HOUR, "Pay per hour"),
        help_text="pay per hour on task (seconds from serving to answer)",
    )
    currency = models.CharField(
        max_length=3, default="USD", help_text="ISO 4217 code, e.g. USD, EUR",
        validators=[RegexValidator(r"^[A-Z]{3}\Z", "A currency is a three-letter ISO 4217 code in capitals, e.g. USD, EUR.")],
    )

    class Meta:
        abstract = True


class PayError(ValueError):
    """A pay setting is refused; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def check_pay(values: Mapping[str, Any]) -> dict[str, Any]:
    """The pay settings among ``values`` cleaned by the model fields (Decimals, a currency code);
    raises PayError naming the first bad field."""
    out: dict[str, Any] = {}
    for name in PAY_FIELDS:
        if name not in values:
            continue
        try:
            out[name] = PaySettings._meta.get_field(name).clean(values[name], None)  # type: ignore[union-attr]
        except ValidationError as exc:
            raise PayError(name, " ".join(exc.messages)) from exc
    return out


def apply_pay(instance: PaySettings, values: Mapping[str, Any]) -> list[str]:
    """Set the pay settings among ``values`` on a job or study (cleaned by :func:`check_pay`, so a bad
    value raises PayError naming its field and nothing is saved; an empty value, None or "", is the
    field's default: 0 or USD) and save only those fields, so a concurrent change of another setting
    is not overwritten. Returns the fields saved."""
    cleaned = check_pay({name: PaySettings._meta.get_field(name).default if value in (None, "") else value  # type: ignore[union-attr]
                         for name, value in values.items()})
    for name, value in cleaned.items():
        setattr(instance, name, value)
    if cleaned:
        instance.save(update_fields=list(cleaned))
    return list(cleaned)


def pay_form_field(name: str, help_text: str | None = None) -> Any:
    """The form field of pay setting ``name`` with the model field's validators, optional (empty: the default)."""
    model_field: Any = PaySettings._meta.get_field(name)
    form_field = model_field.formfield(required=False, initial=model_field.default, help_text=help_text or model_field.help_text)
    form_field.validators = [*form_field.validators, *model_field._validators]
    return form_field
