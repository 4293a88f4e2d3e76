"""``{% page_slot "name" %}``: render the templates higher apps contributed to a slot (see curation.page_slots)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString, mark_safe

from curation import page_slots

register = template.Library()


@register.simple_tag(takes_context=True)
def page_slot(context: template.Context, name: str) -> SafeString:
    engine = context.template.engine if context.template is not None else template.engines["django"].engine  # type: ignore[attr-defined]
    parts = []
    for template_name in page_slots.templates(name):
        with context.push():
            parts.append(engine.get_template(template_name).render(context))
    return mark_safe("".join(parts))  # noqa: S308 - each part is a template rendered with autoescaping
