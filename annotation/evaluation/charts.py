"""The results plot: per dimension, each system's mean with its 95% interval, drawn on the
server as inline SVG with the helpers and colours of ``annotation.charts``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from django.utils.safestring import SafeString

from annotation.charts import BAR_MAIN, INK, LINE, MUTED, _svg


def intervals_svg(
    panels: Sequence[tuple[str, Sequence[tuple[str, float, float, float]]]], low: float, high: float, title: str
) -> SafeString:
    """``panels``: ``(dimension label, [(system, mean, ci_low, ci_high), ...])``, drawn side by side
    on the scale ``low..high``."""
    left, panel_w, gap, top, row_h = 130, 230, 28, 40, 30
    n_rows = max((len(rows) for _, rows in panels), default=1)
    width = left + len(panels) * (panel_w + gap)
    height = top + n_rows * row_h + 34
    span = (high - low) or 1.0
    ticks = [low + span * k / 4 for k in range(5)]
    body: list[str] = []
    systems = [name for name, *_ in panels[0][1]] if panels else []
    for r, name in enumerate(systems):
        y = top + r * row_h + row_h / 2
        body.append(f'<text x="{left - 12}" y="{y + 4}" text-anchor="end" font-size="13" fill="{INK}">{escape(name[:18])}</text>')
    for p, (label, rows) in enumerate(panels):
        x0 = left + p * (panel_w + gap)

        def x(v: float, x0: float = x0) -> float:
            return x0 + (min(max(v, low), high) - low) / span * panel_w

        body.append(f'<text x="{x0 + panel_w / 2}" y="18" text-anchor="middle" font-size="13" font-weight="600" fill="{INK}">{escape(label)}</text>')
        axis_y = top + n_rows * row_h
        for t in ticks:
            body.append(f'<line x1="{x(t):.1f}" y1="{top - 6}" x2="{x(t):.1f}" y2="{axis_y}" stroke="{LINE}"/>')
            text = f"{t:g}" if abs(t - round(t)) < 1e-9 else f"{t:.1f}"
            body.append(f'<text x="{x(t):.1f}" y="{axis_y + 16}" text-anchor="middle" font-size="11" fill="{MUTED}">{text}</text>')
        for r, (_, mean, lo, hi) in enumerate(rows):
            y = top + r * row_h + row_h / 2
            if any(math.isnan(v) for v in (mean, lo, hi)):
                body.append(f'<text x="{x0 + 4}" y="{y + 4}" font-size="11" fill="{MUTED}">no ratings</text>')
                continue
            body.append(
                f'<g><title>{escape(f"{mean:.2f} [{lo:.2f}, {hi:.2f}]")}</title>'
                f'<line x1="{x(lo):.1f}" y1="{y}" x2="{x(hi):.1f}" y2="{y}" stroke="{BAR_MAIN}" stroke-width="3" stroke-linecap="round"/>'
                f'<circle cx="{x(mean):.1f}" cy="{y}" r="5" fill="#ffffff" stroke="{BAR_MAIN}" stroke-width="2.5"/></g>'
            )
    return _svg(width, height, body, title)
