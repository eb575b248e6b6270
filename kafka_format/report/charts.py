"""Inline SVG pictures for the report pages: stacked bars, and a time axis shared by a step line and
a timeline of marks.

Every picture is plain SVG markup (no script, no network) with its exact values in ``<title>``
tooltips.  Times are drawn on :class:`TimeAxis`: spans after ``--now`` on a ladder of human steps
(``now``, ``+1 h``, ``+1 day``, ``+1 week``, ...), each step the same width, so a segment deletable in
six days and one deletable in three years both show where they are, and the axis says so.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kafka_format.common.units import utc_text

__all__ = ["Mark", "TimeAxis", "bar_chart_svg", "step_chart_svg", "timeline_svg"]

_e = html.escape

_MINUTE = 60_000
_HOUR = 60 * _MINUTE
_DAY = 24 * _HOUR
_YEAR = int(365.25 * _DAY)
# The axis' steps after now; an axis uses the run of them that covers its spans.
_LADDER: tuple[tuple[int, str], ...] = (
    (_MINUTE, "+1 min"), (_HOUR, "+1 h"), (_DAY, "+1 day"), (7 * _DAY, "+1 week"), (30 * _DAY, "+30 days"),
    (_YEAR, "+1 year"), (10 * _YEAR, "+10 years"), (100 * _YEAR, "+100 years"))

# Geometry shared by the step line and the timeline, so their time axes line up on a page.
_WIDTH, _LEFT, _RIGHT, _NEVER_W = 900, 180, 790, 70


@dataclass(frozen=True)
class TimeAxis:
    """Spans after ``now_ms`` mapped to x: ``now`` at the left, then equal-width steps of
    :data:`_LADDER` from the largest step at or below the smallest span to the smallest step at or
    above the largest (linear within a step).  Spans at or before now sit at ``now``."""

    now_ms: int
    ticks: tuple[tuple[int, str], ...]
    x0: float = _LEFT
    x1: float = _RIGHT

    @classmethod
    def covering(cls, now_ms: int, spans: Iterable[int]) -> TimeAxis:
        """The axis for these spans (ms after ``now_ms``)."""
        positive = [s for s in spans if s > 0]
        if not positive:
            return cls(now_ms, ((0, "now"), _LADDER[1]))
        lo, hi = min(positive), max(positive)
        start = max((i for i, (v, _) in enumerate(_LADDER) if v <= lo), default=0)
        end = min((i for i, (v, _) in enumerate(_LADDER) if v >= hi), default=len(_LADDER) - 1)
        return cls(now_ms, ((0, "now"), *_LADDER[start:max(start, end) + 1]))

    def x(self, span: int) -> float:
        """The x of a span after now (clamped to the axis)."""
        if span <= 0:
            return self.x0
        step = (self.x1 - self.x0) / (len(self.ticks) - 1)
        for i in range(len(self.ticks) - 1):
            lo, hi = self.ticks[i][0], self.ticks[i + 1][0]
            if span < hi:
                return self.x0 + step * (i + (span - lo) / (hi - lo))
        return self.x1

    def draw(self, y: float, *, never: bool = False) -> list[str]:
        """The axis line at ``y``, its ticks and labels (each with its UTC date as a tooltip) and,
        with ``never``, the label of the band right of the axis."""
        out = [f'<line x1="{self.x0}" y1="{y}" x2="{self.x1}" y2="{y}" stroke="#999"/>']
        for span, label in self.ticks:
            x = self.x(span)
            text = label if span else "now"
            anchor = "start" if span == 0 else ("end" if x >= self.x1 else "middle")
            out.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="#999"/>'
                       f'<text x="{x:.1f}" y="{y + 16}" text-anchor="{anchor}">{_e(text)}'
                       f"<title>{_e(utc_text(self.now_ms + span))}</title></text>")
        if never:
            mid = _RIGHT + 12 + (_NEVER_W - 12) / 2
            out.append(f'<text x="{mid:.1f}" y="{y + 16}" text-anchor="middle">never</text>')
        return out


@dataclass(frozen=True)
class Mark:
    """One mark on a timeline row: its span after now (None: never), its weight (drawn as the
    mark's area), colour and tooltip."""

    span: int | None
    weight: float
    colour: str
    tooltip: str


def bar_chart_svg(title: str, labels: Sequence[str], series: Sequence[tuple[str, str, Sequence[float]]], *,
                  fmt: Callable[[float], str] = str, limit: int = 30, scale_max: float | None = None,
                  order: Sequence[int] | None = None) -> str:
    """Horizontal stacked bars, one per label; ``series`` = ``(name, colour, values)``; ``fmt`` turns a
    value into text for the tooltips and the total after each bar.  The ``limit`` largest bars are
    drawn (or the first ``limit`` of ``order``, indexes into ``labels``).  ``scale_max`` fixes the value of
    a full-width bar (e.g. ``1.0`` for ratios, drawn over a grey track); by default the largest bar."""
    totals = [sum(s[2][i] for s in series) for i in range(len(labels))]
    if order is None:
        order = sorted(range(len(labels)), key=lambda i: (-totals[i], labels[i]))
    order = list(order)[:limit]
    top = scale_max if scale_max is not None else max([totals[i] for i in order] + [0])
    label_w, bar_w, row_h, head_h = 260, 560, 20, 42
    height = head_h + row_h * max(len(order), 1) + 24
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {label_w + bar_w + 120} {height}" '
           f'width="{label_w + bar_w + 120}" height="{height}" role="img" aria-label="{_e(title)}">',
           f'<text x="0" y="14" style="font-size:13px;font-weight:600">{_e(title)}</text>']
    x = label_w
    for name, colour, _values in series:
        out.append(f'<rect x="{x}" y="22" width="10" height="10" fill="{_e(colour)}"/>'
                   f'<text x="{x + 14}" y="31">{_e(name)}</text>')
        x += 14 + 7 * len(name) + 18
    if not order:
        out.append(f'<text x="{label_w}" y="{head_h + 14}">nothing to show</text>')
    for row, i in enumerate(order):
        y = head_h + row * row_h
        label = labels[i] if len(labels[i]) <= 40 else labels[i][:39] + "…"
        out.append(f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end">{_e(label)}<title>{_e(labels[i])}'
                   f"</title></text>")
        if scale_max is not None:
            out.append(f'<rect x="{label_w}" y="{y + 3}" width="{bar_w}" height="{row_h - 6}" fill="#eee"/>')
        x0 = float(label_w)
        for name, colour, values in series:
            v = values[i]
            if v <= 0 or top <= 0:
                continue
            w = max(min(v / top, 1.0) * bar_w, 1.0)
            out.append(f'<rect x="{x0:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" fill="{_e(colour)}">'
                       f"<title>{_e(labels[i])}: {_e(name)} {_e(fmt(v))} ({v:g})</title></rect>")
            x0 += w
        after = label_w + bar_w if scale_max is not None else x0
        out.append(f'<text x="{after + 4:.1f}" y="{y + 14}">{_e(fmt(totals[i]))}</text>')
    if len(labels) > len(order):
        out.append(f'<text x="{label_w}" y="{height - 6}" class="note">{len(labels) - len(order)} more '
                   f"not drawn (all are in the tables)</text>")
    out.append("</svg>")
    return "".join(out)


def step_chart_svg(title: str, points: Sequence[tuple[int, float]], *, now_ms: int,
                   y_text: Callable[[float], str] = str) -> str:
    """A step line of ``(instant ms, y)`` points (y holds from each instant to the next), e.g. bytes
    on disk over time, on the :class:`TimeAxis` from ``now_ms``.  Every point has its UTC date and
    its y in a tooltip; the last level runs to the end of the axis."""
    pts = sorted(points, key=lambda p: p[0])
    axis = TimeAxis.covering(now_ms, (t - now_ms for t, _ in pts))
    h, top_pad, bottom = 250, 28, 40
    base = h - bottom
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {h}" width="{_WIDTH}" height="{h}" '
           f'role="img" aria-label="{_e(title)}">',
           f'<text x="0" y="14" style="font-size:13px;font-weight:600">{_e(title)}</text>']
    if not pts:
        out.append(f'<text x="{_LEFT}" y="60">no data</text></svg>')
        return "".join(out)
    y_hi = max(p[1] for p in pts) or 1

    def sy(y: float) -> float:
        return base - y / y_hi * (base - top_pad)

    for frac in (0.0, 0.5, 1.0):                      # gridlines with human labels
        yy = sy(y_hi * frac)
        out.append(f'<line x1="{axis.x0}" y1="{yy:.1f}" x2="{axis.x1}" y2="{yy:.1f}" stroke="#eee"/>'
                   f'<text x="{axis.x0 - 6}" y="{yy + 4:.1f}" text-anchor="end">'
                   f"{_e(y_text(y_hi * frac) if frac else '0')}</text>")
    out.extend(axis.draw(base))
    path = [f"M{axis.x(pts[0][0] - now_ms):.1f},{sy(pts[0][1]):.1f}"]
    for t, y in pts[1:]:
        path.append(f"H{axis.x(t - now_ms):.1f}")
        path.append(f"V{sy(y):.1f}")
    path.append(f"H{axis.x1}")
    out.append(f'<path d="{" ".join(path)}" fill="none" stroke="#2a6fdb" stroke-width="2"/>')
    for t, y in pts:
        out.append(f'<circle cx="{axis.x(t - now_ms):.1f}" cy="{sy(y):.1f}" r="3" fill="#2a6fdb">'
                   f"<title>from {_e(utc_text(t))}: {_e(y_text(y))}</title></circle>")
    out.append("</svg>")
    return "".join(out)


def timeline_svg(title: str, rows: Sequence[tuple[str, Sequence[Mark]]], *, now_ms: int,
                 legend: Sequence[tuple[str, str]] = (), limit: int = 40) -> str:
    """One row per label with its marks on the :class:`TimeAxis` from ``now_ms`` (a mark without a
    span in the ``never`` band at the right), e.g. when each segment of a partition becomes
    deletable.  A mark's area follows its weight.  The first ``limit`` rows are drawn."""
    shown = list(rows)[:limit]
    marks = [m for _, ms in shown for m in ms]
    axis = TimeAxis.covering(now_ms, (m.span for m in marks if m.span is not None))
    row_h, head_h = 22, 42
    height = head_h + row_h * max(len(shown), 1) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {height}" width="{_WIDTH}" '
           f'height="{height}" role="img" aria-label="{_e(title)}">',
           f'<text x="0" y="14" style="font-size:13px;font-weight:600">{_e(title)}</text>']
    x = float(_LEFT)
    for name, colour in legend:
        out.append(f'<circle cx="{x + 5}" cy="27" r="5" fill="{_e(colour)}"/>'
                   f'<text x="{x + 14}" y="31">{_e(name)}</text>')
        x += 14 + 7 * len(name) + 18
    never_x0 = _RIGHT + 12
    base = head_h + row_h * max(len(shown), 1)
    out.append(f'<rect x="{never_x0}" y="{head_h}" width="{_NEVER_W - 12}" height="{base - head_h}" fill="#f4f4f4"/>')
    heaviest = max([m.weight for m in marks] + [1.0])
    for row, (label, row_marks) in enumerate(shown):
        y = head_h + row * row_h + row_h / 2
        text = label if len(label) <= 28 else label[:27] + "…"
        out.append(f'<line x1="{_LEFT}" y1="{y}" x2="{_RIGHT}" y2="{y}" stroke="#f0f0f0"/>'
                   f'<text x="{_LEFT - 14}" y="{y + 4}" text-anchor="end">{_e(text)}<title>{_e(label)}</title></text>')
        for m in row_marks:
            cx = axis.x(m.span) if m.span is not None else never_x0 + (_NEVER_W - 12) / 2
            r = 3 + 6 * math.sqrt(max(m.weight, 0.0) / heaviest)
            out.append(f'<circle cx="{cx:.1f}" cy="{y}" r="{r:.1f}" fill="{_e(m.colour)}" fill-opacity="0.75" '
                       f'stroke="#fff" stroke-width="0.5"><title>{_e(m.tooltip)}</title></circle>')
    if not shown:
        out.append(f'<text x="{_LEFT}" y="{head_h + 14}">nothing to show</text>')
    out.extend(axis.draw(base + 6, never=True))
    if len(rows) > len(shown):
        out.append(f'<text x="{_LEFT}" y="{height - 4}" class="note">{len(rows) - len(shown)} more rows not drawn '
                   f"(all are in the tables)</text>")
    out.append("</svg>")
    return "".join(out)
