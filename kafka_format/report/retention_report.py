"""Retention's outputs: the segment lines (``jsonl`` / ``table``), the disk-usage chart (PNG) and the
published report directory (segments, ``summary.json``, ``disk-usage.png``, ``disk-usage.html``).

The rules are :mod:`kafka_format.log.retention`'s; this module only renders and publishes what they
computed.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from kafka_format.common.units import human_bytes, utc_text
from kafka_format.log.retention import SEGMENT_FIELDS, disk_usage_steps
from kafka_format.output.ownership import Owner
from kafka_format.output.publish import crash_point
from kafka_format.output.store import output_dir
from kafka_format.report.retention_page import render_retention_page
from kafka_format.report.text import table

__all__ = ["NOTES", "REPORT_OWNER", "format_segments", "render_chart_png", "render_html", "write_report"]

REPORT_OWNER = Owner("retention", "report")          # the marker of a --out report
# What the numbers assume, in the report and summary.json.
NOTES = (
    "HW: replication-offset-checkpoint capped at LEO and raised to logStartOffset; a partition without "
    "an entry is assumed to have HW = LEO (Kafka would load 0 and delete nothing until replication "
    "advances it).",
    "deletableAtMs assumes no new data and a constant HW; null = no retention step reaches the segment.",
    "Tiered storage (remote.storage.enable): local.retention.* apply and breaching segments are reported "
    "as local deletion candidates, assuming they are uploaded; remote segments are not visible offline.",
    "sizeBytes is the .log file length; a crashed broker's recovery of unflushed tails is not modelled.",
    "largestTimestamp is the segment's newest record timestamp; where no record has one (magic 0), it is "
    "the .log file's modification time, as Kafka takes it (a copied log dir carries the copy's time).",
)


def format_segments(rows: Sequence[Mapping[str, Any]], fmt: str = "jsonl") -> str:
    """The per-segment lines: JSON objects (``jsonl``) or an aligned text ``table``."""
    if fmt == "jsonl":
        return "".join(json.dumps({k: r[k] for k in SEGMENT_FIELDS}, separators=(",", ":")) + "\n" for r in rows)
    if fmt == "table":
        def cell(k: str, v: Any) -> Any:
            if v is None:
                return ""
            if isinstance(v, bool):
                return "true" if v else "false"
            if k == "sizeBytes":
                return human_bytes(int(v))
            if k in ("largestTimestamp", "deletableAtMs"):
                return utc_text(int(v)).replace(" UTC", "Z").replace(" ", "T")
            return v

        cells = [[cell(k, r[k]) for k in SEGMENT_FIELDS] for r in rows]
        return "".join(line + "\n" for line in table(list(SEGMENT_FIELDS), cells))
    raise ValueError(f"format must be 'jsonl' or 'table', not {fmt!r}")


def render_chart_png(steps: Sequence[tuple[int, int]], *, title: str = "bytes on disk, no new data") -> bytes:
    """A step chart of total bytes over time (matplotlib, Agg canvas, no global pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    points = list(steps)
    if len(points) == 1 or points[-1][0] == points[0][0]:
        points.append((points[0][0] + 3_600_000, points[-1][1]))      # show an hour of flat line
    else:
        span = points[-1][0] - points[0][0]
        points.append((points[-1][0] + max(span // 20, 1), points[-1][1]))
    last_ms = 253_402_300_799_000          # 9999-12-31T23:59:59Z, the last instant datetime holds
    times = [datetime.fromtimestamp(min(max(t, 0), last_ms) / 1000, tz=UTC) for t, _ in points]
    fig = Figure(figsize=(9, 4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    # matplotlib's stubs leave out the datetimes its units registry (matplotlib.dates) converts
    ax.step(times, [b for _, b in points], where="post")  # type: ignore[arg-type]
    ax.set_title(title)
    ax.set_xlabel("time (UTC)")
    ax.set_ylabel("on disk")
    ax.set_ylim(bottom=0)
    ticks, labels = _byte_ticks(max(b for _, b in points))
    ax.set_yticks(ticks, labels)
    ax.grid(True, alpha=0.3)
    fig.autofmt_xdate()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _byte_ticks(top: int) -> tuple[list[int], list[str]]:
    """Round ticks in one binary unit from 0 to at least ``top`` bytes (``0, 20 KiB, 40 KiB, ...``)."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    k = 0
    while k < len(units) - 1 and top >= 1024 ** (k + 1):
        k += 1
    scaled = max(top / 1024 ** k, 1.0)
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if scaled / s <= 6)
    count = int(-(-scaled // step))
    ticks = [i * step * 1024 ** k for i in range(count + 1)]
    return ticks, ["0"] + [f"{i * step} {units[k]}" for i in range(1, count + 1)]


def render_html(summary: Sequence[Mapping[str, Any]], steps: Sequence[tuple[int, int]], now_ms: int, *,
                png_name: str | None = "disk-usage.png", rows: Sequence[Mapping[str, Any]] = (),
                groups: Sequence[Mapping[str, Any]] | None = None) -> str:
    """The report page (:mod:`kafka_format.report.retention_page`): summary first, reclaimable bytes
    per topic, when each segment becomes deletable, bytes on disk over time (``png_name``: the PNG of
    that line beside the page, linked), segments by when they become deletable, per partition."""
    return render_retention_page(rows, summary, steps, now_ms, notes=NOTES, png_name=png_name, groups=groups)


def write_report(out: str, rows: Sequence[Mapping[str, Any]], summary: Sequence[Mapping[str, Any]], now_ms: int, *,
                 fmt: str = "jsonl", inputs: Mapping[str, Any] | None = None,
                 groups: Sequence[Mapping[str, Any]] | None = None) -> None:
    """Publish ``out`` atomically: segments (``segments.jsonl`` or ``segments.txt``), ``summary.json``,
    ``disk-usage.png`` and ``disk-usage.html``; with ``groups`` (the log dirs hold
    ``__consumer_offsets``) the consumer groups' summary in both (``summary.json`` -> ``groups``).  ``out`` must be absent, empty or a previous report
    (:data:`REPORT_OWNER`'s marker); anything else is refused untouched."""
    steps = disk_usage_steps(rows, now_ms)
    png = render_chart_png(steps)
    totals = {k: sum(int(s[k]) for s in summary) for k in
              ("segments", "bytes", "deletableSegments", "deletableBytes", "bytesRemaining", "bytesNeverDeletable")}
    doc = {"nowMs": now_ms, "inputs": dict(inputs or {}), "partitions": list(summary), "total": totals,
           "diskUsage": [{"fromMs": t, "bytes": b} for t, b in steps], "notes": list(NOTES)}
    if groups is not None:
        doc["groups"] = list(groups)
    with output_dir(out, REPORT_OWNER) as tmp:
        name = "segments.jsonl" if fmt == "jsonl" else "segments.txt"
        with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
            f.write(format_segments(rows, fmt))
        with open(os.path.join(tmp, "summary.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        with open(os.path.join(tmp, "disk-usage.png"), "wb") as fb:
            fb.write(png)
        with open(os.path.join(tmp, "disk-usage.html"), "w", encoding="utf-8") as f:
            f.write(render_html(summary, steps, now_ms, rows=rows, groups=groups))
        crash_point("retention:staged")
