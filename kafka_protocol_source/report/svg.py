"""Charts as inline SVG text: line charts over time, horizontal bar charts, small histograms.

Owns geometry and drawing only; is handed the numbers (already computed by the report's
queries) and returns markup that needs no script, stylesheet or network to show. Every mark
carries its value in ``data-series``/``data-x``/``data-value`` attributes and a ``<title>``
tooltip, so a reader can hover and a test can read back what was drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

PALETTE = ("#2f6db5", "#d9572b", "#3a9b5c", "#8a55b5", "#c9a227", "#5b6770")
_FONT = 'font-family="system-ui, sans-serif" font-size="11"'
_AXIS = "#8a929a"
_GRID = "#e3e6ea"


@dataclass(frozen=True)
class Series:
    name: str
    values: list  # one number (or None: no value there) per x position / category
    color: str


def line_chart(
    xs: list,
    x_labels: list[str],
    series: list[Series],
    *,
    chart_id: str,
    title: str,
    y_unit: str,
    log_y: bool = False,
    width: int = 1120,
    height: int = 250,
) -> str:
    """One line per series over ``xs``; a None value breaks its line. ``x_labels`` label the xs."""
    left, right, top, bottom = 64, 16, 28, 42
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [v for s in series for v in s.values if v is not None and (v > 0 or not log_y)]
    y_of, ticks = _y_scale(values, plot_h, log_y)
    span = ((xs[-1] - xs[0]) or 1) if xs else 1

    def x_of(x):
        return left + (x - xs[0]) / span * plot_w

    parts = [
        _open_svg(chart_id, width, height, title),
        _y_axis(ticks, y_of, left, top, plot_w),
        _header(f"{title} ({y_unit})", series, width - right),
    ]
    step = max(1, math.ceil(len(xs) / 8))
    for i in range(0, len(xs), step):
        x = x_of(xs[i])
        parts.append(
            f'<line x1="{x:.1f}" y1="{top + plot_h}" x2="{x:.1f}" y2="{top + plot_h + 4}" stroke="{_AXIS}"/>'
            f'<text x="{x:.1f}" y="{top + plot_h + 16}" text-anchor="middle" {_FONT} fill="#444">'
            f"{escape(x_labels[i])}</text>"
        )
    for s in series:
        segments: list[list[tuple[float, float]]] = [[]]
        for x, v in zip(xs, s.values, strict=False):
            if v is None or (log_y and v <= 0):
                segments.append([])
            else:
                segments[-1].append((x_of(x), top + y_of(v)))
        for seg in filter(None, segments):
            points = " ".join(f"{px:.1f},{py:.1f}" for px, py in seg)
            parts.append(f'<polyline points="{points}" fill="none" stroke="{s.color}" stroke-width="1.6"/>')
        for i, (x, v) in enumerate(zip(xs, s.values, strict=False)):
            if v is None or (log_y and v <= 0):
                continue
            parts.append(
                f'<circle cx="{x_of(x):.1f}" cy="{top + y_of(v):.1f}" r="2.2" fill="{s.color}" '
                f'data-series="{escape(s.name)}" data-x="{x}" data-value="{v!r}">'
                f"<title>{escape(s.name)} at {escape(x_labels[i])}: {_short(v)} {escape(y_unit)}</title>"
                "</circle>"
            )
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(
    categories: list[str], series: list[Series], *, chart_id: str, title: str, unit: str, width: int = 1120
) -> str:
    """Horizontal bars, one group per category, one bar per series in it."""
    label_w, right, top, bar_h, gap = 220, 90, 30, 13, 10
    group_h = bar_h * len(series) + gap
    height = top + group_h * len(categories) + 24
    plot_w = width - label_w - right
    largest = max((v for s in series for v in s.values if v), default=0) or 1
    parts = [_open_svg(chart_id, width, height, title), _header(f"{title} ({unit})", series, width - right)]
    for i, category in enumerate(categories):
        y0 = top + i * group_h
        parts.append(
            f'<text x="{label_w - 8}" y="{y0 + bar_h * len(series) / 2 + 4:.1f}" text-anchor="end" '
            f'{_FONT} fill="#222">{escape(_clip(category, 34))}<title>{escape(category)}</title></text>'
        )
        for j, s in enumerate(series):
            v = s.values[i] or 0
            w = v / largest * plot_w
            y = y0 + j * bar_h
            parts.append(
                f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" fill="{s.color}" '
                f'data-series="{escape(s.name)}" data-x="{escape(category)}" data-value="{v!r}">'
                f"<title>{escape(category)}, {escape(s.name)}: {_short(v)} {escape(unit)}</title></rect>"
                f'<text x="{label_w + w + 4:.1f}" y="{y + bar_h - 3}" {_FONT} fill="#444">{_short(v)}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def histogram(
    labels: list[str],
    counts: list,
    *,
    chart_id: str,
    title: str,
    color: str = PALETTE[0],
    width: int = 268,
    height: int = 170,
) -> str:
    """Vertical bars of ``counts`` over the bins named by ``labels`` (first and last shown under the axis)."""
    left, right, top, bottom = 34, 8, 24, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    y_of, ticks = _y_scale([c for c in counts if c] + [0], plot_h, False, whole=True)
    bar_w = plot_w / max(1, len(counts))
    parts = [
        _open_svg(chart_id, width, height, title),
        _y_axis(ticks, y_of, left, top, plot_w),
        f'<text x="{left}" y="14" {_FONT} font-weight="600" fill="#222">{escape(title)}</text>',
    ]
    for i, (label, count) in enumerate(zip(labels, counts, strict=False)):
        x = left + i * bar_w
        y = top + y_of(count or 0)
        parts.append(
            f'<rect x="{x + 0.5:.1f}" y="{y:.1f}" width="{max(bar_w - 1, 0.5):.1f}" '
            f'height="{top + plot_h - y:.1f}" fill="{color}" data-series="{escape(title)}" '
            f'data-x="{escape(label)}" data-value="{count!r}"><title>{escape(label)}: {count}</title></rect>'
        )
    edges = [label.split("–")[0] for label in labels] + [labels[-1].split("–")[-1]] if labels else []
    for i in sorted({round(k * (len(edges) - 1) / 3) for k in range(4)}) if edges else []:
        x = left + i * bar_w
        anchor = "start" if i == 0 else "end" if i == len(edges) - 1 else "middle"
        parts.append(
            f'<line x1="{x:.1f}" y1="{top + plot_h}" x2="{x:.1f}" y2="{top + plot_h + 3}" stroke="{_AXIS}"/>'
            f'<text x="{x:.1f}" y="{height - 12}" text-anchor="{anchor}" {_FONT} fill="#444">'
            f"{escape(edges[i])}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _open_svg(chart_id: str, width: int, height: int, title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{escape(chart_id)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    )


def _y_scale(values: list, plot_h: float, log_y: bool, *, whole: bool = False):
    """A function from value to pixels below the plot's top, and the ticks to draw."""
    if log_y:
        lo = math.floor(math.log10(min(values))) if values else 0
        hi = max(math.ceil(math.log10(max(values))) if values else 1, lo + 1)
        ticks = [10.0**e for e in range(lo, hi + 1)]
        return (lambda v: plot_h - (math.log10(v) - lo) / (hi - lo) * plot_h), ticks
    hi = max(values, default=0) or 1
    ticks = _nice_ticks(hi, whole=whole)
    top_tick = ticks[-1]
    return (lambda v: plot_h - v / top_tick * plot_h), ticks


def _nice_ticks(hi: float, count: int = 4, *, whole: bool = False) -> list[float]:
    raw = hi / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    step = max(1, round(step)) if whole else step
    return [i * step for i in range(math.ceil(hi / step - 1e-9) + 1)]


def _y_axis(ticks, y_of, left, top, plot_w) -> str:
    parts = []
    for t in ticks:
        y = top + y_of(t)
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="{_GRID}"/>'
            f'<text x="{left - 5}" y="{y + 4:.1f}" text-anchor="end" {_FONT} fill="#444">{_short(t)}</text>'
        )
    return "".join(parts)


def _header(title: str, series: list[Series], right_edge: float) -> str:
    """The chart's title on the left, its legend ending at ``right_edge``."""
    parts = [f'<text x="8" y="14" {_FONT} font-size="12" font-weight="600" fill="#222">{escape(title)}</text>']
    x = right_edge - sum(24 + 6.2 * len(s.name) for s in series)
    for s in series:
        parts.append(
            f'<rect x="{x:.0f}" y="5" width="10" height="10" fill="{s.color}"/>'
            f'<text x="{x + 14:.0f}" y="14" {_FONT} fill="#222">{escape(s.name)}</text>'
        )
        x += 24 + 6.2 * len(s.name)
    return "".join(parts)


def _short(v) -> str:
    """A number in at most about four significant digits: 0.0213, 1.5, 250, 12.3k, 4.1M."""
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.3g}M"
    if a >= 1e4:
        return f"{v / 1e3:.3g}k"
    if a == int(a):
        return str(int(v))
    return f"{v:.3g}"


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
