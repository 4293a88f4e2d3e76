"""Filters that show stored JSON as text people read: ``{{ params|as_text }}``, ``{% for k, v in card.source|as_items %}``."""

from __future__ import annotations

from typing import Any

from django import template

from pipeline import presenting

register = template.Library()


@register.filter
def as_items(value: Any) -> list[tuple[str, str]]:
    """A JSON object as (dotted key, text) pairs for a definition list."""
    return presenting.definition_items(value) if isinstance(value, dict) else []


@register.filter
def as_text(value: Any) -> str:
    """A small JSON object on one line: "min 0.1, max 0.9"; "none" when empty."""
    if isinstance(value, dict):
        items = presenting.definition_items(value)
        return ", ".join(f"{k} {v}" for k, v in items) if items else "none"
    return "none" if value in (None, "", [], {}) else str(value)
