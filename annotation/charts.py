"""Small inline SVG charts drawn on the server (no JavaScript chart library).

Each function returns SVG markup with every text escaped; the statistics page embeds it.
Colours follow ``static/css/app.css``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

import numpy as np
from django.utils.safestring import SafeString, mark_safe

ACCENT = (47, 111, 143)  # --accent
PAPER = (244, 246, 245)
INK, MUTED, LINE = "#1f2328", "#6a7078", "#e2e2dc"
BAR_MAIN, BAR_SECOND, BAR_REMOVED, THRESHOLD = "#2f6f8f", "#9cc3d5", "#c9ccd1", "#b3412e"
FONT = 'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif"'


def _mix(share: float) -> str:
    share = min(max(share, 0.0), 1.0)
    r, g, b = (round(p + (a - p) * share) for p, a in zip(PAPER, ACCENT, strict=True))
    return f"rgb({r},{g},{b})"


def _svg(width: int, height: int, body: list[str], title: str) -> SafeString:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}" class="chart" {FONT}><title>{escape(title)}</title>'
    )
    return mark_safe(head + "".join(body) + "</svg>")  # noqa: S308 - every text above is escaped


def confusion_svg(matrix: np.ndarray, labels: Sequence[str], row_title: str, col_title: str, title: str) -> SafeString:
    """Heat map of a (K, K) count matrix; shading and percentages are per row."""
    k = len(labels)
    cell_w, cell_h, left, top = 104, 58, 128, 56
    width, height = left + k * cell_w + 12, top + k * cell_h + 14
    matrix = np.asarray(matrix, dtype=np.int64)
    row_sum = matrix.sum(axis=1)
    body = [
        f'<text x="{left + k * cell_w / 2}" y="16" text-anchor="middle" font-size="13" fill="{MUTED}">{escape(col_title)} →</text>',
        f'<text x="14" y="{top + k * cell_h / 2}" text-anchor="middle" font-size="13" fill="{MUTED}" '
        f'transform="rotate(-90 14 {top + k * cell_h / 2})">{escape(row_title)} →</text>',
    ]
    for c, label in enumerate(labels):
        body.append(
            f'<text x="{left + c * cell_w + cell_w / 2}" y="{top - 10}" text-anchor="middle" font-size="13" fill="{INK}">{escape(label)}</text>'
        )
        body.append(
            f'<text x="{left - 10}" y="{top + c * cell_h + cell_h / 2 + 5}" text-anchor="end" font-size="13" fill="{INK}">{escape(label)}</text>'
        )
    for r in range(k):
        for c in range(k):
            share = matrix[r, c] / row_sum[r] if row_sum[r] else 0.0
            x, y = left + c * cell_w, top + r * cell_h
            ink = "#ffffff" if share > 0.55 else INK
            stroke = f' stroke="{INK}" stroke-width="1.5"' if r == c else f' stroke="{LINE}"'
            body.append(f'<rect x="{x}" y="{y}" width="{cell_w - 4}" height="{cell_h - 4}" rx="5" fill="{_mix(share)}"{stroke}/>')
            body.append(
                f'<text x="{x + (cell_w - 4) / 2}" y="{y + 24}" text-anchor="middle" font-size="15" font-weight="600" fill="{ink}">{matrix[r, c]:,}</text>'
            )
            body.append(
                f'<text x="{x + (cell_w - 4) / 2}" y="{y + 42}" text-anchor="middle" font-size="11" fill="{ink}">{share:.0%} of row</text>'
            )
    return _svg(width, height, body, title)


@dataclass
class Bar:
    name: str
    main: float | None  # drawn dark
    second: float | None  # drawn light, below
    muted: bool = False
    note: str = ""


def bars_svg(bars: Sequence[Bar], main_name: str, second_name: str, title: str, threshold: float | None = None) -> SafeString:
    """Horizontal paired bars on a 0..1 scale, one row per entry, an optional threshold line."""
    left, right, top, row_h = 150, 70, 34, 34
    plot_w = 340
    width, height = left + plot_w + right, top + max(len(bars), 1) * row_h + 28
    second_x = 10 + 17 + round(len(main_name) * 6.6) + 24
    body = [
        f'<rect x="10" y="8" width="12" height="10" rx="2" fill="{BAR_MAIN}"/>'
        f'<text x="27" y="17" font-size="12" fill="{INK}">{escape(main_name)}</text>',
        f'<rect x="{second_x}" y="8" width="12" height="10" rx="2" fill="{BAR_SECOND}"/>'
        f'<text x="{second_x + 17}" y="17" font-size="12" fill="{INK}">{escape(second_name)}</text>',
    ]
    axis_y = top + len(bars) * row_h
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = left + tick * plot_w
        body.append(f'<line x1="{x}" y1="{top - 4}" x2="{x}" y2="{axis_y}" stroke="{LINE}"/>')
        body.append(f'<text x="{x}" y="{axis_y + 16}" text-anchor="middle" font-size="11" fill="{MUTED}">{tick:.2f}</text>')
    for i, bar in enumerate(bars):
        y = top + i * row_h
        name_ink = MUTED if bar.muted else INK
        body.append(f'<text x="{left - 10}" y="{y + 19}" text-anchor="end" font-size="13" fill="{name_ink}">{escape(bar.name[:20])}</text>')
        for value, dy, colour, h in ((bar.main, 5, BAR_MAIN, 12), (bar.second, 18, BAR_SECOND, 9)):
            if value is None:
                continue
            fill = BAR_REMOVED if bar.muted else colour
            w = max(min(value, 1.0), 0.0) * plot_w
            body.append(f'<rect x="{left}" y="{y + dy}" width="{w:.1f}" height="{h}" rx="2" fill="{fill}"/>')
        label = f"{bar.main:.2f}" if bar.main is not None else "–"
        body.append(f'<text x="{left + plot_w + 8}" y="{y + 16}" font-size="12" fill="{name_ink}">{label}</text>')
        if bar.note:
            body.append(f'<text x="{left + plot_w + 8}" y="{y + 29}" font-size="10" fill="{THRESHOLD}">{escape(bar.note)}</text>')
    if threshold is not None:
        x = left + threshold * plot_w
        body.append(f'<line x1="{x}" y1="{top - 6}" x2="{x}" y2="{axis_y}" stroke="{THRESHOLD}" stroke-dasharray="4 3" stroke-width="1.5"/>')
        body.append(f'<text x="{x}" y="{axis_y + 28}" text-anchor="middle" font-size="11" fill="{THRESHOLD}">threshold {threshold:.0%}</text>')
        height += 6
    return _svg(width, height, body, title)


SERIES_COLOURS = (BAR_MAIN, "#b7791f", "#2e7d4f", "#8a5fb0")  # accent, partial, aligned, violet
LABEL_COLOURS = {"aligned": "#2e7d4f", "partialAligned": "#b7791f", "notAligned": "#a9aeb5"}


def lines_svg(x_labels: Sequence[str], series: Mapping[str, Sequence[float | None]], title: str,
              y_max: float = 1.0, y_label: str = "") -> SafeString:
    """Lines over ordered categories (e.g. model versions by date) on 0..y_max; a gap where a value is None.
    Each point carries its value as a tooltip."""
    n = max(len(x_labels), 1)
    rotate = n > 8
    left, right, top, bottom = 44, 16, 34, 58 if rotate else 34
    plot_w, plot_h, inset = max(420, min(80 * n, 720)), 180, 24
    legend_w = 10 + sum(17 + round(len(name) * 6.6) + 24 for name in series)
    width, height = max(left + plot_w + right, legend_w), top + plot_h + bottom
    step = (plot_w - 2 * inset) / (n - 1) if n > 1 else 0.0

    def x_of(i: int) -> float:
        return left + (inset + i * step if n > 1 else plot_w / 2)

    def y_of(v: float) -> float:
        return top + plot_h - max(min(v / y_max, 1.0), 0.0) * plot_h

    body: list[str] = []
    legend_x = 10
    for k, name in enumerate(series):
        colour = SERIES_COLOURS[k % len(SERIES_COLOURS)]
        body.append(f'<rect x="{legend_x}" y="8" width="12" height="10" rx="2" fill="{colour}"/>'
                    f'<text x="{legend_x + 17}" y="17" font-size="12" fill="{INK}">{escape(name)}</text>')
        legend_x += 17 + round(len(name) * 6.6) + 24
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = y_of(tick * y_max)
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="{LINE}"/>')
        body.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" fill="{MUTED}">{tick * y_max:g}</text>')
    if y_label:
        body.append(f'<text x="12" y="{top + plot_h / 2}" text-anchor="middle" font-size="11" fill="{MUTED}" '
                    f'transform="rotate(-90 12 {top + plot_h / 2})">{escape(y_label)}</text>')
    for i, label in enumerate(x_labels):
        x = x_of(i)
        turn = f' transform="rotate(-30 {x:.1f} {top + plot_h + 16})"' if rotate else ""
        body.append(f'<text x="{x:.1f}" y="{top + plot_h + 16}" text-anchor="{"end" if rotate else "middle"}" font-size="11" '
                    f'fill="{MUTED}"{turn}>{escape(label[:18])}</text>')
    for k, (name, values) in enumerate(series.items()):
        colour = SERIES_COLOURS[k % len(SERIES_COLOURS)]
        run: list[str] = []
        for i, v in enumerate(values):
            if v is None:
                if len(run) > 1:
                    body.append(f'<polyline points="{" ".join(run)}" fill="none" stroke="{colour}" stroke-width="2"/>')
                run = []
                continue
            run.append(f"{x_of(i):.1f},{y_of(v):.1f}")
        if len(run) > 1:
            body.append(f'<polyline points="{" ".join(run)}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for i, v in enumerate(values):
            if v is not None:
                body.append(f'<circle cx="{x_of(i):.1f}" cy="{y_of(v):.1f}" r="3.5" fill="{colour}">'
                            f'<title>{escape(x_labels[i])}: {escape(name)} {v:.3f}</title></circle>')
    return _svg(width, height, body, title)


def stacked_bars_svg(rows: Sequence[tuple[str, dict[str, int]]], keys: Sequence[str], title: str) -> SafeString:
    """One horizontal bar per row, split into ``keys`` (label colours), each segment with its count."""
    left, right, top, row_h, plot_w = 90, 60, 34, 30, 420
    width, height = left + plot_w + right, top + max(len(rows), 1) * row_h + 8
    biggest = max((sum(counts.get(k, 0) for k in keys) for _, counts in rows), default=0) or 1
    body: list[str] = []
    legend_x = 10
    for k in keys:
        colour = LABEL_COLOURS.get(k, SERIES_COLOURS[len(body) % len(SERIES_COLOURS)])
        body.append(f'<rect x="{legend_x}" y="8" width="12" height="10" rx="2" fill="{colour}"/>'
                    f'<text x="{legend_x + 17}" y="17" font-size="12" fill="{INK}">{escape(k)}</text>')
        legend_x += 17 + round(len(k) * 6.6) + 24
    for i, (name, counts) in enumerate(rows):
        y = top + i * row_h
        body.append(f'<text x="{left - 10}" y="{y + 17}" text-anchor="end" font-size="13" fill="{INK}">{escape(name)}</text>')
        x = float(left)
        total = 0
        for k in keys:
            n = int(counts.get(k, 0))
            total += n
            w = n / biggest * plot_w
            if n:
                colour = LABEL_COLOURS.get(k, BAR_SECOND)
                body.append(f'<rect x="{x:.1f}" y="{y + 4}" width="{w:.1f}" height="18" fill="{colour}">'
                            f'<title>{escape(name)}: {escape(k)} {n:,}</title></rect>')
                if w > 34:
                    body.append(f'<text x="{x + w / 2:.1f}" y="{y + 17}" text-anchor="middle" font-size="11" fill="#ffffff">{n:,}</text>')
            x += w
        body.append(f'<text x="{x + 6:.1f}" y="{y + 17}" font-size="12" fill="{MUTED}">{total:,}</text>')
    return _svg(width, height, body, title)


def progress_svg(points: Sequence[tuple[float, int]], total: int, title: str, unit: str) -> SafeString:
    """Work done over elapsed seconds: a step line from (0, 0) to the last point, the total as a dashed line."""
    left, right, top, bottom, plot_w, plot_h = 48, 20, 14, 36, 480, 150
    width, height = left + plot_w + right, top + plot_h + bottom
    t_max = max((t for t, _ in points), default=0.0) or 1.0
    y_max = max(total, max((d for _, d in points), default=0), 1)

    def xy(t: float, d: int) -> str:
        return f"{left + t / t_max * plot_w:.1f},{top + plot_h - d / y_max * plot_h:.1f}"

    body = [f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="{LINE}"/>',
            f'<line x1="{left}" y1="{top}" x2="{left + plot_w}" y2="{top}" stroke="{THRESHOLD}" stroke-dasharray="4 3"/>',
            f'<text x="{left - 6}" y="{top + 4}" text-anchor="end" font-size="11" fill="{MUTED}">{y_max:,}</text>',
            f'<text x="{left - 6}" y="{top + plot_h + 4}" text-anchor="end" font-size="11" fill="{MUTED}">0</text>',
            f'<text x="{left}" y="{top + plot_h + 18}" font-size="11" fill="{MUTED}">0 s</text>',
            f'<text x="{left + plot_w}" y="{top + plot_h + 18}" text-anchor="end" font-size="11" fill="{MUTED}">{t_max:,.0f} s</text>',
            f'<text x="{left + plot_w / 2}" y="{top + plot_h + 30}" text-anchor="middle" font-size="11" fill="{MUTED}">'
            f'{escape(unit)} done over time since the job started</text>']
    steps = [xy(0.0, 0)]
    previous = 0
    for t, d in sorted(points):
        steps.append(xy(t, previous))
        steps.append(xy(t, d))
        previous = d
    body.append(f'<polyline points="{" ".join(steps)}" fill="none" stroke="{BAR_MAIN}" stroke-width="2"/>')
    return _svg(width, height, body, title)
