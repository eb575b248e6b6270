"""Compaction's ``report.html``: what the cleaner frees per partition, how dirty each log is, and why
a partition is or is not cleaned now.

Input: the document the job writes as ``summary.json`` (``mode``, ``nowMs``, ``partitions``: one
row per partition replica with the cleaner's plan and result, or the table view's counts).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_format.report.charts import bar_chart_svg
from kafka_format.report.html import Card, Cell, Page
from kafka_format.report.units import human_bytes, human_count, utc_text

__all__ = ["cleaner_totals", "render_compaction_page", "summary_line"]


def _size(n: Any) -> Cell:
    if n is None:
        return Cell("-", sort=-1)
    return Cell(human_bytes(int(n)), title=f"{int(n):,} bytes", sort=int(n))


def _count(n: Any) -> Cell:
    if n is None:
        return Cell("-", sort=-1)
    return Cell(human_count(int(n)), title=str(n), sort=int(n))


def _label(p: Mapping[str, Any]) -> str:
    log_dir = os.path.basename(str(p.get("logDir") or "").rstrip("/"))
    part = f"{p['topic']}-{p['partition']}"
    return f"{log_dir}:{part}" if log_dir else part


def _ratio(p: Mapping[str, Any]) -> Cell:
    """The dirty ratio in percent; ``-`` where the cleaner never looks (no ``compact`` policy)."""
    exact = p.get("dirtyRatio")
    if not p.get("compact") or exact is None:
        return Cell("-", title=None if exact is None else f"{exact} (not compacted: the cleaner skips it)",
                    sort=-1)
    return Cell(f"{float(exact):.1%}", title=str(exact), sort=float(exact))


def _uncleanable(p: Mapping[str, Any]) -> bool:
    return str(p.get("reason") or "").startswith("uncleanable")


def cleaner_totals(parts: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Cleaner mode's figures a person looks at first: uncleanable partitions, bytes and records the
    cleaner frees, compacted partitions and those it picks now, tombstones removed."""
    compacted = [p for p in parts if p.get("compact")]
    cleaned = [p for p in compacted if p.get("cleaned")]
    return {
        "uncleanable": sum(1 for p in parts if _uncleanable(p)),
        "saved": sum(int(p.get("bytesBefore") or 0) - int(p.get("bytesAfter") or 0) for p in cleaned),
        "before": sum(int(p.get("bytesBefore") or 0) for p in cleaned),
        "removed": sum(int(p.get("recordsBefore") or 0) - int(p.get("recordsAfter") or 0) for p in cleaned),
        "compacted": len(compacted), "picked": sum(1 for p in compacted if p.get("wouldCleanNow")),
        "tombstones": sum(int(p.get("tombstonesRemoved") or 0) for p in cleaned),
        "notCompacted": len(parts) - len(compacted)}


def summary_line(summary: Mapping[str, Any]) -> str:
    """One line under the terminal table (cleaner mode): what cleaning frees, what is uncleanable."""
    t = cleaner_totals(list(summary.get("partitions") or []))
    return (f"the cleaner frees {human_bytes(t['saved'])} ({human_count(t['removed'])} records) and picks "
            f"{t['picked']} of {t['compacted']} compacted partitions now; uncleanable: {t['uncleanable']}")


def render_compaction_page(summary: Mapping[str, Any]) -> str:
    """The compaction report page (one self-contained HTML file)."""
    parts: Sequence[Mapping[str, Any]] = list(summary.get("partitions") or [])
    mode = str(summary.get("mode") or "cleaner")
    now = summary.get("nowMs")
    when = f" at {utc_text(int(now))}" if now is not None else ""
    if mode == "full":
        return _full_page(parts, when)
    compacted = [p for p in parts if p.get("compact")]
    t = cleaner_totals(parts)
    saved, before, removed = t["saved"], t["before"], t["removed"]
    page = Page(f"Compaction{when}", "What Kafka's log cleaner keeps when it cleans everything cleanable, "
                                     "and what that frees.")
    page.cards([
        Card("uncleanable partitions", str(t["uncleanable"]), cls="error" if t["uncleanable"] else "ok"),
        Card("bytes the cleaner frees", human_bytes(saved), f"{saved:,} of {before:,} bytes",
             "warning" if saved else None),
        Card("records removed", human_count(removed)),
        Card("partitions the cleaner picks now", f"{t['picked']} of {t['compacted']} compacted"),
        Card("tombstones removed", human_count(t["tombstones"])),
        Card("partitions not compacted", str(t["notCompacted"]),
             "cleanup.policy without compact: retention only"),
    ])
    labels = [_label(p) for p in compacted]
    page.heading("Bytes saved per partition")
    page.svg(bar_chart_svg("bytes before cleaning: kept and freed", labels, [
        ("kept", "#5b9bd5", [float(p["bytesAfter"] if p.get("bytesAfter") is not None else p.get("bytesBefore") or 0)
                             for p in compacted]),
        ("freed", "#d9534f", [float(int(p.get("bytesBefore") or 0) - int(p.get("bytesAfter") or 0))
                              if p.get("cleaned") else 0.0 for p in compacted]),
    ], fmt=human_bytes))
    page.heading("Dirty ratio per partition")
    page.svg(bar_chart_svg("dirty ratio: cleanable bytes / (clean + cleanable bytes), out of 100%", labels, [
        ("dirty ratio", "#f0ad4e", [float(p.get("dirtyRatio") or 0.0) for p in compacted]),
    ], fmt=lambda v: f"{float(v):.1%}", scale_max=1.0))
    ordered = sorted(parts, key=lambda p: (not _uncleanable(p), not p.get("compact"), not p.get("wouldCleanNow"),
                                           str(p["topic"]), int(p["partition"]), str(p.get("logDir"))))
    page.heading("Per partition (uncleanable first)")
    page.table(
        ["partition", "log dir", "policy", "dirty ratio", "cleaned now", "reason", "records before",
         "records after", "bytes before", "bytes after", "tombstones kept", "tombstones removed", "rounds"],
        [[f"{p['topic']}-{p['partition']}", os.path.basename(str(p.get("logDir") or "").rstrip("/")),
          str(p.get("cleanupPolicy") or ""),
          _ratio(p),
          "yes" if p.get("wouldCleanNow") else "no", str(p.get("reason") or ""),
          _count(p.get("recordsBefore")), _count(p.get("recordsAfter")), _size(p.get("bytesBefore")),
          _size(p.get("bytesAfter")), _count(p.get("tombstonesKept")), _count(p.get("tombstonesRemoved")),
          _count(p.get("rounds"))] for p in ordered],
        table_id="partitions",
        numeric=("dirty ratio", "records before", "records after", "bytes before", "bytes after",
                 "tombstones kept", "tombstones removed", "rounds"),
        wrap={"reason": 14},
        row_classes=["error" if _uncleanable(p) else None for p in ordered], empty="no partitions",
        rest="Every partition is in summary.json beside this page.")
    return page.render()


def _full_page(parts: Sequence[Mapping[str, Any]], when: str) -> str:
    before = sum(int(p.get("recordsBefore") or 0) for p in parts)
    after = sum(int(p.get("recordsAfter") or 0) for p in parts)
    page = Page(f"Compacted table view{when}", "For every key, its latest record; keys whose latest record is "
                                               "a tombstone are absent.")
    page.cards([
        Card("records in the logs", human_count(before)),
        Card("rows in the table view", human_count(after)),
        Card("records superseded", human_count(sum(int(p.get("recordsSuperseded") or 0) for p in parts))),
        Card("keys deleted", human_count(sum(int(p.get("keysDeleted") or 0) for p in parts))),
        Card("records without a key", human_count(sum(int(p.get("nullKeyRecords") or 0) for p in parts)),
             "a compacted topic's cleaner fails on these"),
    ])
    labels = [_label(p) for p in parts]
    page.heading("Records per partition: kept in the table view and superseded")
    page.svg(bar_chart_svg("records per partition", labels, [
        ("in the table view", "#5b9bd5", [float(p.get("recordsAfter") or 0) for p in parts]),
        ("superseded or deleted", "#d9534f",
         [float(int(p.get("recordsBefore") or 0) - int(p.get("recordsAfter") or 0)) for p in parts]),
    ], fmt=lambda v: human_count(int(v))))
    page.heading("Per partition")
    page.table(["partition", "log dir", "records before", "rows after", "keys", "keys deleted",
                "records superseded", "records without a key"],
               [[f"{p['topic']}-{p['partition']}", os.path.basename(str(p.get("logDir") or "").rstrip("/")),
                 _count(p.get("recordsBefore")), _count(p.get("recordsAfter")), _count(p.get("keys")),
                 _count(p.get("keysDeleted")), _count(p.get("recordsSuperseded")),
                 _count(p.get("nullKeyRecords"))] for p in parts],
               table_id="partitions",
               numeric=("records before", "rows after", "keys", "keys deleted", "records superseded",
                        "records without a key"), empty="no partitions",
               rest="Every partition is in summary.json beside this page.")
    return page.render()
