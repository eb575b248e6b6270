"""Retention's ``disk-usage.html``: what the retention pass frees now, what it frees later, and when.

Input: the job's per-segment rows (``topic, partition, baseOffset, sizeBytes, largestTimestamp,
deletable, reason, deletableAtMs``), its per-partition summary and the disk-usage steps, as
:mod:`kafka_format.log.retention` computes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafka_format.report.charts import Mark, bar_chart_svg, step_chart_svg, timeline_svg
from kafka_format.report.html import ROW_LIMIT, Card, Cell, Page
from kafka_format.report.units import human_bytes, human_count, human_duration, utc_text, utc_text_ms

__all__ = ["render_retention_page", "retention_totals", "summary_line"]

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


def _mark(r: Mapping[str, Any], now_ms: int) -> Mark:
    size, at = int(r["sizeBytes"]), r["deletableAtMs"]
    what = f"{r['topic']}-{r['partition']} segment {r['baseOffset']} ({human_bytes(size)}): "
    if r["deletable"]:
        return Mark(0, size, _NOW, what + f"deletable now ({r['reason']})")
    if at is None:
        return Mark(None, size, _NEVER, what + "never deletable without new data")
    span = max(int(at) - now_ms, 0)
    return Mark(span, size, _LATER, what + f"deletable at {utc_text(int(at))}, in {human_duration(span)}")


def retention_totals(summary: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The figures a person looks at first, from the per-partition summary: bytes on disk, bytes and
    segments deletable now, partitions affected, bytes reclaimable later and never, next deletion."""
    total = sum(int(s["bytes"]) for s in summary)
    now_bytes = sum(int(s["deletableBytes"]) for s in summary)
    never = sum(int(s["bytesNeverDeletable"]) for s in summary)
    nexts = [int(s["nextDeletionMs"]) for s in summary if s["nextDeletionMs"] is not None]
    return {"bytes": total, "segments": sum(int(s["segments"]) for s in summary), "partitions": len(summary),
            "nowBytes": now_bytes, "nowSegments": sum(int(s["deletableSegments"]) for s in summary),
            "affected": sum(1 for s in summary if int(s["deletableSegments"]) > 0),
            "laterBytes": total - now_bytes - never, "neverBytes": never, "next": min(nexts) if nexts else None}


def summary_line(summary: Sequence[Mapping[str, Any]], now_ms: int) -> str:
    """One line under the terminal table: what the pass frees now, what later, the next deletion."""
    t = retention_totals(summary)
    nxt = "" if t["next"] is None else \
        f", the next at {utc_text(t['next'])} (in {human_duration(max(t['next'] - now_ms, 0))})"
    return (f"deletable now: {human_bytes(t['nowBytes'])} in {t['nowSegments']} of {t['segments']} segments "
            f"({t['affected']} of {t['partitions']} partitions); later: {human_bytes(t['laterBytes'])}{nxt}; "
            f"never (without new data): {human_bytes(t['neverBytes'])}")


def _groups_section(page: Page, groups: Sequence[Mapping[str, Any]], now_ms: int) -> None:
    """Which consumer groups lost unread records already, which this pass takes unread records from,
    and when retention first reaches each group's unread records (no new data)."""
    page.heading("Consumer groups: unread records lost and taken by retention, problems first")
    page.table(
        ["group", "state", "lost already", "taken by this pass", "bytes taken", "first taken", "lag"],
        [[g["group"], g["state"], Cell(str(g["lostRecords"]), sort=int(g["lostRecords"])),
          Cell(str(g["retentionLossRecords"]), sort=int(g["retentionLossRecords"])),
          _size(int(g["retentionLossBytes"])),
          _in(g["losesRecordsAtMs"], now_ms, g["losesRecordsAtMs"] is not None and g["losesRecordsAtMs"] <= now_ms),
          Cell(str(g["lag"]), sort=int(g["lag"]))] for g in groups],
        table_id="groups", numeric=("lost already", "taken by this pass", "bytes taken", "lag"),
        row_classes=["error" if g["lostRecords"] else "warning" if g["retentionLossRecords"] else None
                     for g in groups[:ROW_LIMIT]],
        rest="Every group is in summary.json beside this page (klogs groups gives each partition).",
        empty="no consumer groups in __consumer_offsets")


def render_retention_page(rows: Sequence[Mapping[str, Any]], summary: Sequence[Mapping[str, Any]],
                          steps: Sequence[tuple[int, int]], now_ms: int, *, notes: Sequence[str] = (),
                          png_name: str | None = "disk-usage.png",
                          groups: Sequence[Mapping[str, Any]] | None = None) -> str:
    """The retention report page (one self-contained HTML file); ``png_name``: the PNG of the same
    step line beside it, linked; ``groups``: the consumer groups' summary
    (:func:`kafka_format.report.groups_report.summarize`, problems first), a section of its own."""
    t = retention_totals(summary)
    total, now_bytes, now_segs, never = t["bytes"], t["nowBytes"], t["nowSegments"], t["neverBytes"]
    later_bytes, affected, nxt = t["laterBytes"], t["affected"], t["next"]

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
        Card("next deletion" + ("" if nxt is None else f", in {human_duration(max(nxt - now_ms, 0))}"),
             utc_text(nxt) if nxt is not None else "none", None if nxt is None else f"{nxt} ms"),
        Card("never deletable without new data", human_bytes(never), f"{never:,} bytes"),
    ])

    if groups is not None:
        _groups_section(page, groups, now_ms)

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
    topics = sorted(by_topic, key=lambda t: (-by_topic[t][0], -by_topic[t][1], -sum(by_topic[t]), t))
    page.heading("Reclaimable bytes per topic")
    page.svg(bar_chart_svg("bytes per topic: deletable now, deletable later, not reached by retention", topics, [
        ("deletable now", _NOW, [by_topic[t][0] for t in topics]),
        ("deletable later", _LATER, [by_topic[t][1] for t in topics]),
        ("not reached by retention", _NEVER, [by_topic[t][2] for t in topics]),
    ], fmt=human_bytes, order=range(len(topics))))

    page.heading("When each segment becomes deletable (no new data)")
    by_part: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for r in rows:
        by_part.setdefault((str(r["topic"]), int(r["partition"])), []).append(r)

    def first(part: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
        spans = [0 if r["deletable"] else int(r["deletableAtMs"]) - now_ms for r in part
                 if r["deletable"] or r["deletableAtMs"] is not None]
        return (0, min(spans)) if spans else (1, 0)

    parts = sorted(by_part, key=lambda k: (first(by_part[k]), k))
    page.svg(timeline_svg(
        "one row per partition, one dot per segment sized by its bytes (time steps not to scale)", [(f"{t}-{p}", [_mark(r, now_ms) for r in by_part[(t, p)]]) for t, p in parts],
        now_ms=now_ms, legend=[("deletable now", _NOW), ("deletable later", _LATER), ("never", _NEVER)]))

    page.heading("Bytes on disk over time (no new data)")
    page.svg(step_chart_svg(f"bytes on disk from {utc_text(now_ms)} on, as the segments above go", steps,
                            now_ms=now_ms, y_text=human_bytes))
    if png_name:
        page.link(f"The same line on a linear time axis: {png_name}", png_name)

    page.heading("Segments: deletable now first, then by when they become deletable")
    ordered = sorted(rows, key=lambda r: (not r["deletable"], r["deletableAtMs"] is None,
                                          r["deletableAtMs"] or 0, r["topic"], r["partition"], r["baseOffset"]))
    page.table(
        ["topic", "partition", "base offset", "size", "newest record", "deletable", "reason", "deletable at",
         "when"],
        ([r["topic"], Cell(str(r["partition"]), sort=int(r["partition"])),
          Cell(str(r["baseOffset"]), sort=int(r["baseOffset"])), _size(int(r["sizeBytes"])),
          _instant(int(r["largestTimestamp"]), "none"), "yes" if r["deletable"] else "no", r["reason"] or "",
          _instant(r["deletableAtMs"]), _in(r["deletableAtMs"], now_ms, bool(r["deletable"]))]
         for r in ordered),
        table_id="segments", numeric=("partition", "base offset", "size"),
        row_classes=["warning" if r["deletable"] else None for r in ordered[:ROW_LIMIT]], total=len(ordered),
        rest="Every segment is in the segments file beside this page.", empty="no segments")

    page.heading("Per partition: reclaimable now first, then by next deletion")
    summary = sorted(summary, key=lambda s: (-int(s["deletableBytes"]), s["nextDeletionMs"] is None,
                                             s["nextDeletionMs"] or 0, str(s["topic"]), int(s["partition"])))
    page.table(
        ["partition", "segments", "on disk", "deletable segments", "reclaimable now", "remaining",
         "never deletable", "next deletion", "last deletion"],
        [[f"{s['topic']}-{s['partition']}", Cell(str(s["segments"]), sort=int(s["segments"])),
          _size(int(s["bytes"])), Cell(str(s["deletableSegments"]), sort=int(s["deletableSegments"])),
          _size(int(s["deletableBytes"])), _size(int(s["bytesRemaining"])), _size(int(s["bytesNeverDeletable"])),
          _instant(s["nextDeletionMs"]), _instant(s["lastDeletionMs"])] for s in summary],
        table_id="partitions", row_classes=["warning" if int(s["deletableBytes"]) else None for s in summary],
        rest="Every partition is in summary.json beside this page.",
        numeric=("segments", "on disk", "deletable segments", "reclaimable now", "remaining", "never deletable"),
        empty="no partitions")

    page.heading("Bytes on disk from each instant")
    page.table(["from", "bytes on disk"], [[_instant(t), _size(b)] for t, b in steps], table_id="steps",
               numeric=("bytes on disk",))
    if notes:
        page.heading("Assumptions")
        page.bullets(notes, cls="note")
    return page.render()
