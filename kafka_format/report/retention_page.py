"""Retention's ``disk-usage.html``: what the retention pass frees now, what it frees later, and when.

Input: the job's per-segment rows (``topic, partition, baseOffset, sizeBytes, largestTimestamp,
deletable, reason, deletableAtMs``), its per-partition summary and the disk-usage steps, as
:mod:`kafka_format.log.retention` computes them.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_format.report.html import Card, Cell, Page, bar_chart_svg, step_chart_svg
from kafka_format.report.units import human_bytes, human_count, human_duration, utc_text, utc_text_ms

__all__ = ["render_retention_page"]

_NOW, _LATER, _NEVER = "#d9534f", "#f0ad4e", "#bbbbbb"


def _size(n: int) -> Cell:
    return Cell(human_bytes(n), title=f"{n:,} bytes", sort=n)


def _instant(ms: int | None, never: str = "never") -> Cell:
    if ms is None:
        return Cell(never, sort=2 ** 63)
    return Cell(utc_text(ms), title=f"{utc_text_ms(ms)} ({ms} ms)", sort=ms)


def _in(ms: int | None, now_ms: int, deletable: bool) -> Cell:
    if deletable:
        return Cell("now", sort=0)
    if ms is None:
        return Cell("never", sort=2 ** 63)
    span = max(ms - now_ms, 0)
    return Cell(f"in {human_duration(span)}", title=f"{span} ms after --now", sort=span)


def render_retention_page(rows: Sequence[Mapping[str, Any]], summary: Sequence[Mapping[str, Any]],
                          steps: Sequence[tuple[int, int]], now_ms: int, *, notes: Sequence[str] = (),
                          png: bytes | None = None, png_name: str = "disk-usage.png") -> str:
    """The retention report page (one self-contained HTML file)."""
    total = sum(int(s["bytes"]) for s in summary)
    now_bytes = sum(int(s["deletableBytes"]) for s in summary)
    now_segs = sum(int(s["deletableSegments"]) for s in summary)
    never = sum(int(s["bytesNeverDeletable"]) for s in summary)
    later_bytes = total - now_bytes - never
    affected = sum(1 for s in summary if int(s["deletableSegments"]) > 0)
    nexts = [s["nextDeletionMs"] for s in summary if s["nextDeletionMs"] is not None]
    nxt = min(nexts) if nexts else None

    page = Page(f"Retention at {utc_text(now_ms)}",
                "The segments Kafka's retention pass deletes at --now, and when each other segment becomes "
                "deletable if no new data arrives.")
    page.cards([
        Card("reclaimable now", human_bytes(now_bytes), f"{now_bytes:,} bytes in {now_segs} segments",
             "warning" if now_bytes else "ok"),
        Card("segments deletable now", human_count(now_segs)),
        Card("partitions affected", f"{affected} of {len(summary)}"),
        Card("on disk", human_bytes(total), f"{total:,} bytes"),
        Card("reclaimable later", human_bytes(later_bytes), f"{later_bytes:,} bytes"),
        Card("next deletion", utc_text(nxt) if nxt is not None else "none",
             None if nxt is None else f"{nxt} ms, in {human_duration(max(nxt - now_ms, 0))}"),
        Card("never deletable without new data", human_bytes(never), f"{never:,} bytes"),
    ])

    by_topic: dict[str, list[int]] = {}
    for r in rows:
        acc = by_topic.setdefault(str(r["topic"]), [0, 0, 0])
        size = int(r["sizeBytes"])
        if r["deletable"]:
            acc[0] += size
        elif r["deletableAtMs"] is not None:
            acc[1] += size
        else:
            acc[2] += size
    topics = sorted(by_topic)
    page.heading("Reclaimable bytes per topic")
    page.svg(bar_chart_svg("bytes per topic", topics, [
        ("deletable now", _NOW, [by_topic[t][0] for t in topics]),
        ("deletable later", _LATER, [by_topic[t][1] for t in topics]),
        ("not reached by retention", _NEVER, [by_topic[t][2] for t in topics]),
    ], fmt=human_bytes))

    page.heading("Bytes on disk over time (no new data)")
    page.svg(step_chart_svg("bytes on disk", steps, x_text=utc_text, y_text=human_bytes))
    if png is not None:
        page.image(f"data:image/png;base64,{base64.b64encode(png).decode('ascii')}",
                   "bytes on disk over time (PNG)", link=png_name)

    page.heading("Segments: deletable now first, then by when they become deletable")
    ordered = sorted(rows, key=lambda r: (not r["deletable"], r["deletableAtMs"] is None,
                                          r["deletableAtMs"] or 0, r["topic"], r["partition"], r["baseOffset"]))
    page.table(
        ["topic", "partition", "base offset", "size", "newest record", "deletable", "reason", "deletable at",
         "when"],
        [[r["topic"], Cell(str(r["partition"]), sort=int(r["partition"])),
          Cell(str(r["baseOffset"]), sort=int(r["baseOffset"])), _size(int(r["sizeBytes"])),
          _instant(int(r["largestTimestamp"]), "none"), "yes" if r["deletable"] else "no", r["reason"] or "",
          _instant(r["deletableAtMs"]), _in(r["deletableAtMs"], now_ms, bool(r["deletable"]))]
         for r in ordered],
        table_id="segments", numeric=("partition", "base offset", "size"),
        row_classes=["warning" if r["deletable"] else None for r in ordered], empty="no segments")

    page.heading("Per partition")
    page.table(
        ["partition", "segments", "on disk", "deletable segments", "reclaimable now", "remaining",
         "never deletable", "next deletion", "last deletion"],
        [[f"{s['topic']}-{s['partition']}", Cell(str(s["segments"]), sort=int(s["segments"])),
          _size(int(s["bytes"])), Cell(str(s["deletableSegments"]), sort=int(s["deletableSegments"])),
          _size(int(s["deletableBytes"])), _size(int(s["bytesRemaining"])), _size(int(s["bytesNeverDeletable"])),
          _instant(s["nextDeletionMs"]), _instant(s["lastDeletionMs"])] for s in summary],
        table_id="partitions",
        numeric=("segments", "on disk", "deletable segments", "reclaimable now", "remaining", "never deletable"),
        empty="no partitions")

    page.heading("Bytes on disk from each instant")
    page.table(["from", "bytes on disk"], [[_instant(t), _size(b)] for t, b in steps], table_id="steps",
               numeric=("bytes on disk",))
    if notes:
        page.heading("Assumptions")
        page.bullets(notes, cls="note")
    return page.render()
