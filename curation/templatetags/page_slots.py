"""``{% page_slot "name" %}``: render the templates higher apps contributed to a slot (see curation.page_slots)."""

from __future__ import annotations

import re

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


_LINK = re.compile(r'<a\b([^>]*?)\bhref="([^"]+)"([^>]*)>')
_ALSO = re.compile(r'\bdata-nav-also="([^"]*)"')


class NavigationNode(template.Node):
    def __init__(self, nodelist: template.NodeList) -> None:
        self.nodelist = nodelist

    def render(self, context: template.Context) -> str:
        html = self.nodelist.render(context)
        request = context.get("request")
        path = getattr(request, "path", "") or ""
        best, best_len = -1, 0
        links = list(_LINK.finditer(html))
        for i, match in enumerate(links):
            prefixes = [match.group(2)]
            also = _ALSO.search(match.group(1) + match.group(3))
            if also:
                prefixes += also.group(1).split()
            for prefix in prefixes:
                if prefix != "/" and path.startswith(prefix) and len(prefix) > best_len:
                    best, best_len = i, len(prefix)
        if best < 0:
            return html
        m = links[best]
        marked = f'<a{m.group(1)}href="{m.group(2)}"{m.group(3)} aria-current="page" class="active">'
        return html[: m.start()] + marked + html[m.end():]


@register.tag
def navigation(parser: template.base.Parser, token: template.base.Token) -> NavigationNode:
    """``{% navigation %}<a href=...>...{% endnavigation %}``: the link whose address (or one of the
    space-separated prefixes in its ``data-nav-also``) is the longest prefix of the current path
    gets ``aria-current="page"``, so the navigation shows where the user is."""
    nodelist = parser.parse(("endnavigation",))
    parser.delete_first_token()
    return NavigationNode(nodelist)
