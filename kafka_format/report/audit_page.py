"""Audit's ``report.html``: problems first, expected facts folded, byte accounting last.

Input: the finding rows (``severity, check, topic, partition, file, position, offset, expected,
actual, message``) and the per-``.log`` byte accounting rows (``topic, partition, file, sizeBytes,
validBytes, skippedBytes, zeroTailBytes, cutBytes, batches``), as :mod:`kafka_format.log.audit.auditor` writes
them to Parquet.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_format.report.html import Card, Cell, Page, bar_chart_svg, details_list
from kafka_format.report.units import human_bytes, human_count

__all__ = ["render_audit_page", "replica_label"]

_RANK = {"error": 2, "warning": 1, "info": 0}
_COLOURS = {"error": "#d9534f", "warning": "#f0ad4e", "info": "#9fb7d9"}


def replica_label(row: Mapping[str, Any]) -> str:
    """``broker-1:orders-3``: the name of the log dir holding the finding's file and the partition;
    just the partition when the finding names no file, just the log dir for a log-dir-level file."""
    topic = row.get("topic")
    part = "" if topic is None else f"{topic}-{row['partition']}"
    path = str(row.get("file") or "").rstrip("/")
    if not path:
        return part or "(log dir)"
    if part and os.path.basename(path) == part:                        # the partition directory itself
        log_dir = os.path.dirname(path)
    elif part and os.path.basename(os.path.dirname(path)) == part:     # a file inside it
        log_dir = os.path.dirname(os.path.dirname(path))
    elif "." in os.path.basename(path) or "checkpoint" in os.path.basename(path):
        log_dir = os.path.dirname(path)                                  # a log dir's own state file
    else:
        log_dir = path
    name = os.path.basename(log_dir)
    if not name:
        return part or "(log dir)"
    return f"{name}:{part}" if part else name


def _where(f: Mapping[str, Any]) -> str:
    if f.get("file") is None:
        return ""
    return str(f["file"]) + ("" if f.get("position") is None else f":{f['position']}")


def _size(n: int) -> Cell:
    return Cell(human_bytes(n), title=f"{n:,} bytes", sort=n)


def render_audit_page(findings: Sequence[Mapping[str, Any]], files: Sequence[Mapping[str, Any]], *,
                      title: str = "klogs audit") -> str:
    """The audit report page (one self-contained HTML file)."""
    count = {sev: sum(1 for f in findings if f["severity"] == sev) for sev in ("error", "warning", "info")}
    problems = [f for f in findings if f["severity"] in ("error", "warning")]
    partitions = {(a["topic"], a["partition"]) for a in files} | {
        (f["topic"], f["partition"]) for f in findings if f.get("topic") is not None}
    troubled = {(f["topic"], f["partition"]) for f in problems if f.get("topic") is not None}
    size = sum(int(a["sizeBytes"]) for a in files)
    skipped = sum(int(a["skippedBytes"]) + int(a["cutBytes"]) for a in files)

    page = Page(title, "Every check of kafka-dump-log plus checkpoint, leader-epoch, producer-snapshot, "
                       ".txnindex and cross-replica checks; problems first.")
    page.cards([
        Card("errors", human_count(count["error"]), cls="error" if count["error"] else "ok"),
        Card("warnings", human_count(count["warning"]), cls="warning" if count["warning"] else "ok"),
        Card("partitions with problems", f"{len(troubled)} of {len(partitions)}",
             cls="warning" if troubled else None),
        Card("log bytes checked", human_bytes(size), f"{size:,} bytes in {len(files)} .log files"),
        Card("bytes not readable", human_bytes(skipped), f"{skipped:,} bytes skipped or cut",
             "warning" if skipped else None),
        Card("informational facts", human_count(count["info"]), "expected findings, folded below"),
    ])

    per_replica: dict[str, dict[str, int]] = {}
    for f in findings:
        acc = per_replica.setdefault(replica_label(f), {"error": 0, "warning": 0, "info": 0})
        acc[f["severity"]] = acc.get(f["severity"], 0) + 1
    labels = sorted(per_replica)
    page.heading("Findings per broker and partition")
    page.svg(bar_chart_svg("findings per log dir and partition", labels,
                           [(sev, _COLOURS[sev], [per_replica[k][sev] for k in labels])
                            for sev in ("error", "warning", "info")], fmt=lambda v: f"{int(v)}"))

    page.heading(f"Problems ({len(problems)})")
    ordered = sorted(problems, key=lambda f: (-_RANK[f["severity"]], f["check"], f.get("topic") or "",
                                              f.get("partition") if f.get("partition") is not None else -1,
                                              _where(f)))
    page.table(
        ["severity", "check", "partition", "file:position", "offset", "expected", "actual", "message"],
        [[Cell(f["severity"], sort=-_RANK[f["severity"]], cls=f["severity"]), f["check"],
          "" if f.get("topic") is None else f"{f['topic']}-{f['partition']}", _where(f),
          "" if f.get("offset") is None else Cell(str(f["offset"]), sort=int(f["offset"])),
          f.get("expected") or "", f.get("actual") or "", f["message"]] for f in ordered],
        table_id="problems", numeric=("offset",), row_classes=[f["severity"] for f in ordered],
        empty="No errors or warnings.")

    infos: dict[str, list[Mapping[str, Any]]] = {}
    for f in findings:
        if f["severity"] == "info":
            infos.setdefault(f["check"], []).append(f)
    page.heading("Informational facts, one row per check")
    page.table(
        ["check", "count", "partitions", "findings"],
        [[check, Cell(str(len(rows)), sort=len(rows)),
          Cell(str(len({(r.get('topic'), r.get('partition')) for r in rows})),
               sort=len({(r.get('topic'), r.get('partition')) for r in rows})),
          Cell(details_list(f"show {len(rows)}", [
              " ".join(x for x in ("" if r.get("topic") is None else f"{r['topic']}-{r['partition']}",
                                   _where(r), "" if r.get("offset") is None else f"offset {r['offset']}",
                                   str(r["message"])) if x) for r in rows]), raw_html=True)]
         for check, rows in sorted(infos.items(), key=lambda kv: (-len(kv[1]), kv[0]))],
        table_id="info", numeric=("count", "partitions"), empty="none")

    page.heading("Findings per partition")
    per_partition: dict[tuple[Any, Any], dict[str, int]] = {}
    for f in findings:
        acc = per_partition.setdefault((f.get("topic"), f.get("partition")), {"error": 0, "warning": 0, "info": 0})
        acc[f["severity"]] = acc.get(f["severity"], 0) + 1
    table_rows: list[list[Cell | str]] = []
    for key in sorted(partitions, key=lambda k: (k[0] or "", k[1] if k[1] is not None else -1)):
        sev = per_partition.get(key, {"error": 0, "warning": 0, "info": 0})
        table_rows.append([f"{key[0]}-{key[1]}", Cell(str(sev["error"]), sort=sev["error"]),
                           Cell(str(sev["warning"]), sort=sev["warning"]), Cell(str(sev["info"]), sort=sev["info"])])
    page.table(["partition", "errors", "warnings", "info"], table_rows, table_id="partitions",
               numeric=("errors", "warnings", "info"), empty="no partitions")

    page.heading("Byte accounting per .log (valid + skipped + zero tail + cut = size)")
    acct = sorted(files, key=lambda a: (-(int(a["skippedBytes"]) + int(a["cutBytes"])), str(a["file"])))
    page.table(
        ["file", "partition", "size", "valid", "skipped", "zero tail", "cut", "batches"],
        [[str(a["file"]), f"{a['topic']}-{a['partition']}", _size(int(a["sizeBytes"])), _size(int(a["validBytes"])),
          _size(int(a["skippedBytes"])), _size(int(a["zeroTailBytes"])), _size(int(a["cutBytes"])),
          Cell(human_count(int(a["batches"])), title=str(a["batches"]), sort=int(a["batches"]))] for a in acct],
        table_id="files", numeric=("size", "valid", "skipped", "zero tail", "cut", "batches"),
        row_classes=["error" if int(a["skippedBytes"]) + int(a["cutBytes"]) else None for a in acct],
        empty="no .log files")
    return page.render()
