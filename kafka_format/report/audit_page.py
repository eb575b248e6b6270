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

from kafka_format.report.charts import bar_chart_svg
from kafka_format.report.html import ROW_LIMIT, Card, Cell, Page, details_list
from kafka_format.report.units import human_bytes, human_count, utc_text

__all__ = ["audit_totals", "render_audit_page", "replica_label", "summary_line"]

_RANK = {"error": 2, "warning": 1, "info": 0}
_COLOURS = {"error": "#d9534f", "warning": "#f0ad4e", "info": "#9fb7d9"}
_FOLDED = 200      # informational findings listed per check
_FINDINGS_REST = "Every finding is in findings/ beside this page (Parquet)."


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


def short_path(row: Mapping[str, Any]) -> str:
    """The row's file from its log dir's name on (``broker-2/orders-3/00000000000000000000.log``):
    the log dir's parents are the same for every row of a run (the full path is in the tooltip)."""
    path = str(row.get("file") or "").rstrip("/")
    label = replica_label(row)
    log_dir_name = label.split(":", 1)[0] if ":" in label or row.get("topic") is None else ""
    if not path or not log_dir_name or log_dir_name == "(log dir)":
        return path
    marker = os.sep + log_dir_name + os.sep
    cut = path.rfind(marker)
    if cut >= 0:
        return path[cut + 1:]
    return log_dir_name if path.endswith(os.sep + log_dir_name) else path


def _where_cell(f: Mapping[str, Any]) -> Cell:
    """``file:position`` from the log dir's name on; the whole path in the tooltip."""
    if f.get("file") is None:
        return Cell("")
    at = "" if f.get("position") is None else f":{f['position']}"
    return Cell(short_path(f) + at, title=_where(f))


def _size(n: int) -> Cell:
    return Cell(human_bytes(n), title=f"{n:,} bytes", sort=n)


def audit_totals(findings: Sequence[Mapping[str, Any]], files: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The figures a person looks at first: findings per severity, partitions seen and those with
    errors or warnings, log bytes checked and bytes not readable (skipped or cut)."""
    partitions = {(a["topic"], a["partition"]) for a in files} | {
        (f["topic"], f["partition"]) for f in findings if f.get("topic") is not None}
    troubled = {(f["topic"], f["partition"]) for f in findings
                if f["severity"] in ("error", "warning") and f.get("topic") is not None}
    return {**{sev: sum(1 for f in findings if f["severity"] == sev) for sev in ("error", "warning", "info")},
            "partitions": len(partitions), "troubled": len(troubled), "files": len(files),
            "bytes": sum(int(a["sizeBytes"]) for a in files),
            "unreadable": sum(int(a["skippedBytes"]) + int(a["cutBytes"]) for a in files)}


def summary_line(findings: Sequence[Mapping[str, Any]], files: Sequence[Mapping[str, Any]]) -> str:
    """One line after the findings at a terminal: counts, partitions with problems, bytes checked."""
    t = audit_totals(findings, files)
    return (f"{t['error']} errors, {t['warning']} warnings, {t['info']} informational; {t['troubled']} of "
            f"{t['partitions']} partitions with problems; {human_bytes(t['bytes'])} of log checked, "
            f"{human_bytes(t['unreadable'])} not readable")


def render_audit_page(findings: Sequence[Mapping[str, Any]], files: Sequence[Mapping[str, Any]], *,
                      title: str | None = None, now_ms: int | None = None, logdirs: Sequence[str] = ()) -> str:
    """The audit report page (one self-contained HTML file); ``now_ms`` and ``logdirs``: what was
    audited, when, named under the title."""
    t = audit_totals(findings, files)
    count = {sev: t[sev] for sev in ("error", "warning", "info")}
    problems = [f for f in findings if f["severity"] in ("error", "warning")]
    partitions = {(a["topic"], a["partition"]) for a in files} | {
        (f["topic"], f["partition"]) for f in findings if f.get("topic") is not None}
    size, skipped = t["bytes"], t["unreadable"]

    if title is None:
        title = "Audit" + ("" if now_ms is None else f" at {utc_text(now_ms)}")
    page = Page(title, "Every check of kafka-dump-log plus checkpoint, leader-epoch, producer-snapshot, "
                       ".txnindex and cross-replica checks; problems first."
                + (f" Log dirs: {', '.join(logdirs)}." if logdirs else ""))
    page.cards([
        Card("errors", human_count(count["error"]), cls="error" if count["error"] else "ok"),
        Card("warnings", human_count(count["warning"]), cls="warning" if count["warning"] else "ok"),
        Card("partitions with problems", f"{t['troubled']} of {t['partitions']}",
             cls="warning" if t["troubled"] else None),
        Card("log bytes checked", human_bytes(size), f"{size:,} bytes in {len(files)} .log files"),
        Card("bytes not readable", human_bytes(skipped), f"{skipped:,} bytes skipped or cut",
             "warning" if skipped else None),
        Card("informational facts", human_count(count["info"]), "expected findings, folded below"),
    ])

    per_replica: dict[str, dict[str, int]] = {}
    for f in findings:
        acc = per_replica.setdefault(replica_label(f), {"error": 0, "warning": 0, "info": 0})
        acc[f["severity"]] = acc.get(f["severity"], 0) + 1
    labels = sorted(per_replica, key=lambda k: (-per_replica[k]["error"], -per_replica[k]["warning"],
                                                -per_replica[k]["info"], k))
    page.heading("Findings per broker and partition")
    page.svg(bar_chart_svg("findings per log dir and partition (errors and warnings first)", labels,
                           [(sev, _COLOURS[sev], [per_replica[k][sev] for k in labels])
                            for sev in ("error", "warning", "info")], fmt=lambda v: f"{int(v)}",
                           order=range(len(labels))))

    page.heading(f"Problems ({len(problems)})")
    ordered = sorted(problems, key=lambda f: (-_RANK[f["severity"]], f["check"], f.get("topic") or "",
                                              f.get("partition") if f.get("partition") is not None else -1,
                                              _where(f)))
    page.table(
        ["severity", "check", "partition", "file:position", "offset", "expected", "actual", "message"],
        ([Cell(f["severity"], sort=-_RANK[f["severity"]], cls=f["severity"]), f["check"],
          "" if f.get("topic") is None else f"{f['topic']}-{f['partition']}", _where_cell(f),
          "" if f.get("offset") is None else Cell(str(f["offset"]), sort=int(f["offset"])),
          f.get("expected") or "", f.get("actual") or "", f["message"]] for f in ordered),
        table_id="problems", numeric=("offset",), wrap={"expected": 7, "actual": 7, "message": 14},
        row_classes=[f["severity"] for f in ordered[:ROW_LIMIT]], total=len(ordered), rest=_FINDINGS_REST,
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
                                   short_path(r) + ("" if r.get("position") is None else f":{r['position']}")
                                   if r.get("file") else "",
                                   "" if r.get("offset") is None else f"offset {r['offset']}",
                                   str(r["message"])) if x) for r in rows[:_FOLDED]], limit=_FOLDED,
                            total=len(rows)), raw_html=True)]
         for check, rows in sorted(infos.items(), key=lambda kv: (-len(kv[1]), kv[0]))],
        table_id="info", numeric=("count", "partitions"), wrap=("findings",), empty="none")

    page.heading("Findings per partition: problems first")
    per_partition: dict[tuple[Any, Any], dict[str, int]] = {}
    for f in findings:
        acc = per_partition.setdefault((f.get("topic"), f.get("partition")), {"error": 0, "warning": 0, "info": 0})
        acc[f["severity"]] = acc.get(f["severity"], 0) + 1
    table_rows: list[list[Cell | str]] = []
    classes: list[str | None] = []
    none = {"error": 0, "warning": 0, "info": 0}
    for key in sorted(partitions, key=lambda k: (-per_partition.get(k, none)["error"],
                                                 -per_partition.get(k, none)["warning"],
                                                 k[0] or "", k[1] if k[1] is not None else -1)):
        sev = per_partition.get(key, none)
        classes.append("error" if sev["error"] else "warning" if sev["warning"] else None)
        table_rows.append([f"{key[0]}-{key[1]}", Cell(str(sev["error"]), sort=sev["error"]),
                           Cell(str(sev["warning"]), sort=sev["warning"]), Cell(str(sev["info"]), sort=sev["info"])])
    page.table(["partition", "errors", "warnings", "info"], table_rows, table_id="partitions",
               numeric=("errors", "warnings", "info"), empty="no partitions",
               row_classes=classes, rest=_FINDINGS_REST)

    page.heading("Byte accounting per .log (valid + skipped + zero tail + cut = size)")
    acct = sorted(files, key=lambda a: (-(int(a["skippedBytes"]) + int(a["cutBytes"])), str(a["file"])))
    page.table(
        ["file", "partition", "size", "valid", "skipped", "zero tail", "cut", "batches"],
        ([Cell(short_path(a), title=str(a["file"])), f"{a['topic']}-{a['partition']}", _size(int(a["sizeBytes"])),
          _size(int(a["validBytes"])), _size(int(a["skippedBytes"])), _size(int(a["zeroTailBytes"])),
          _size(int(a["cutBytes"])),
          Cell(human_count(int(a["batches"])), title=str(a["batches"]), sort=int(a["batches"]))] for a in acct),
        table_id="files", numeric=("size", "valid", "skipped", "zero tail", "cut", "batches"),
        row_classes=["error" if int(a["skippedBytes"]) + int(a["cutBytes"]) else None for a in acct[:ROW_LIMIT]],
        total=len(acct), rest="The accounting of every file is in files/ beside this page (Parquet).",
        empty="no .log files")
    return page.render()
