"""Audit's ``report.html``: problems first, expected facts folded, byte accounting last.

Input: the finding rows (``severity, check, topic, partition, file, position, offset, expected,
actual, message``) and the per-``.log`` byte accounting rows (``topic, partition, file, sizeBytes,
validBytes, skippedBytes, zeroTailBytes, cutBytes, batches``), as Arrow tables
(:mod:`kafka_format.log.audit.tables`; lists of dict rows are converted) in the order they are
written to Parquet.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_format.log.audit.tables import files_table, findings_table, place_keys, severity_rank
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


def _count_by(table: pa.Table, keys: list[str]) -> Iterator[tuple[Any, ...]]:
    """``(key..., count)`` of each distinct value of ``keys``, in order of first appearance (made
    into Python values a few thousand groups at a time)."""
    groups = table.group_by(keys, use_threads=False).aggregate([([], "count_all")])
    for batch in groups.select([*keys, "count_all"]).to_batches(max_chunksize=8192):
        yield from zip(*(column.to_pylist() for column in batch.columns))


def _partitions(table: pa.Table, mask: pa.ChunkedArray | None = None) -> set[tuple[Any, Any]]:
    """The distinct (topic, partition) pairs of the rows that name a topic (of those in ``mask``)."""
    keys = table.select(["topic", "partition"])
    named = pc.is_valid(keys["topic"])
    return {(t, p) for t, p, _ in _count_by(keys.filter(named if mask is None else pc.and_(named, mask)),
                                            ["topic", "partition"])}


def _total(column: pa.ChunkedArray) -> int:
    return int(pc.sum(column).as_py() or 0)


def _is(table: pa.Table, *severities: str) -> pa.ChunkedArray:
    return pc.is_in(table["severity"], value_set=pa.array(severities))


def audit_totals(findings: pa.Table | Sequence[Mapping[str, Any]],
                 files: pa.Table | Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The figures a person looks at first: findings per severity, partitions seen and those with
    errors or warnings, log bytes checked and bytes not readable (skipped or cut)."""
    return _totals(findings_table(findings), files_table(files))[0]


def _totals(f: pa.Table, a: pa.Table) -> tuple[dict[str, int], set[tuple[Any, Any]]]:
    """:func:`audit_totals` and the (topic, partition) pairs it counted."""
    per_severity = {sev: n for sev, n in _count_by(f, ["severity"])}
    partitions = _partitions(a) | _partitions(f)
    return ({**{sev: per_severity.get(sev, 0) for sev in ("error", "warning", "info")},
             "partitions": len(partitions), "troubled": len(_partitions(f, _is(f, "error", "warning"))),
             "files": a.num_rows, "bytes": _total(a["sizeBytes"]),
             "unreadable": _total(a["skippedBytes"]) + _total(a["cutBytes"])}, partitions)


def summary_line(findings: pa.Table | Sequence[Mapping[str, Any]], files: pa.Table | Sequence[Mapping[str, Any]]) -> str:
    """One line after the findings at a terminal: counts, partitions with problems, bytes checked."""
    t = audit_totals(findings, files)
    return (f"{t['error']} errors, {t['warning']} warnings, {t['info']} informational; {t['troubled']} of "
            f"{t['partitions']} partitions with problems; {human_bytes(t['bytes'])} of log checked, "
            f"{human_bytes(t['unreadable'])} not readable")


def _first(table: pa.Table, keys: dict[str, pa.ChunkedArray | pa.Array], orders: Sequence[str],
           limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` rows of ``table`` sorted (stably) by ``keys`` in ``orders``."""
    if table.num_rows == 0 or limit <= 0:
        return []
    order = pc.sort_indices(pa.table(keys), sort_keys=list(zip(keys, orders)))[:limit]
    return table.take(order).to_pylist()


def render_audit_page(findings: pa.Table | Sequence[Mapping[str, Any]],
                      files: pa.Table | Sequence[Mapping[str, Any]], *,
                      title: str | None = None, now_ms: int | None = None, logdirs: Sequence[str] = ()) -> str:
    """The audit report page (one self-contained HTML file); ``now_ms`` and ``logdirs``: what was
    audited, when, named under the title.  Its tables are bounded (:data:`ROW_LIMIT` rows, the
    informational findings :data:`_FOLDED` per check): the page is made from the columns, and only
    the rows it shows become Python objects."""
    findings, files = findings_table(findings), files_table(files)
    t, partitions = _totals(findings, files)
    count = {sev: t[sev] for sev in ("error", "warning", "info")}
    problems = count["error"] + count["warning"]
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
        Card("log bytes checked", human_bytes(size), f"{size:,} bytes in {files.num_rows} .log files"),
        Card("bytes not readable", human_bytes(skipped), f"{skipped:,} bytes skipped or cut",
             "warning" if skipped else None),
        Card("informational facts", human_count(count["info"]), "expected findings, folded below"),
    ])

    per_replica: dict[str, dict[str, int]] = {}
    for topic, part, path, sev, n in _count_by(findings, ["topic", "partition", "file", "severity"]):
        acc = per_replica.setdefault(replica_label({"topic": topic, "partition": part, "file": path}),
                                     {"error": 0, "warning": 0, "info": 0})
        acc[sev] = acc.get(sev, 0) + n
    labels = sorted(per_replica, key=lambda k: (-per_replica[k]["error"], -per_replica[k]["warning"],
                                                -per_replica[k]["info"], k))
    page.heading("Findings per broker and partition")
    page.svg(bar_chart_svg("findings per log dir and partition (errors and warnings first)", labels,
                           [(sev, _COLOURS[sev], [per_replica[k][sev] for k in labels])
                            for sev in ("error", "warning", "info")], fmt=lambda v: f"{int(v)}",
                           order=range(len(labels))))

    page.heading(f"Problems ({problems})")
    keys = {"rank": severity_rank(findings), "check": findings["check"],
            **place_keys(findings, ("topic", "partition", "file", "position"))}
    ordered = _first(findings, keys, ["ascending"] * len(keys), min(ROW_LIMIT, problems))
    page.table(
        ["severity", "check", "partition", "file:position", "offset", "expected", "actual", "message"],
        ([Cell(f["severity"], sort=-_RANK[f["severity"]], cls=f["severity"]), f["check"],
          "" if f.get("topic") is None else f"{f['topic']}-{f['partition']}", _where_cell(f),
          "" if f.get("offset") is None else Cell(str(f["offset"]), sort=int(f["offset"])),
          f.get("expected") or "", f.get("actual") or "", f["message"]] for f in ordered),
        table_id="problems", numeric=("offset",), wrap={"expected": 7, "actual": 7, "message": 14},
        row_classes=[f["severity"] for f in ordered], total=problems, rest=_FINDINGS_REST,
        empty="No errors or warnings.")

    is_info = _is(findings, "info")
    infos = findings.select(["check", "topic", "partition"]).filter(is_info)
    spread: dict[str, int] = {}
    for check, _, _, _ in _count_by(infos, ["check", "topic", "partition"]):
        spread[check] = spread.get(check, 0) + 1
    info_rows = []
    for check, n in sorted(_count_by(infos, ["check"]), key=lambda kv: (-kv[1], kv[0])):
        first = pc.indices_nonzero(pc.and_(is_info, pc.equal(findings["check"], check)))[:_FOLDED]
        shown = findings.take(first).to_pylist()
        info_rows.append([check, Cell(str(n), sort=n), Cell(str(spread[check]), sort=spread[check]),
                          Cell(details_list(f"show {n}", [_info_text(r) for r in shown], limit=_FOLDED, total=n),
                               raw_html=True)])
    page.heading("Informational facts, one row per check")
    page.table(["check", "count", "partitions", "findings"], info_rows,
               table_id="info", numeric=("count", "partitions"), wrap=("findings",), empty="none")

    page.heading("Findings per partition: problems first")
    per_partition: dict[tuple[Any, Any], dict[str, int]] = {}
    for topic, part, sev, n in _count_by(findings, ["topic", "partition", "severity"]):
        acc = per_partition.setdefault((topic, part), {"error": 0, "warning": 0, "info": 0})
        acc[sev] = acc.get(sev, 0) + n
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
    acct = _first(files, {"unreadable": pc.add(files["skippedBytes"], files["cutBytes"]), "file": files["file"]},
                  ["descending", "ascending"], ROW_LIMIT)
    page.table(
        ["file", "partition", "size", "valid", "skipped", "zero tail", "cut", "batches"],
        ([Cell(short_path(a), title=str(a["file"])), f"{a['topic']}-{a['partition']}", _size(int(a["sizeBytes"])),
          _size(int(a["validBytes"])), _size(int(a["skippedBytes"])), _size(int(a["zeroTailBytes"])),
          _size(int(a["cutBytes"])),
          Cell(human_count(int(a["batches"])), title=str(a["batches"]), sort=int(a["batches"]))] for a in acct),
        table_id="files", numeric=("size", "valid", "skipped", "zero tail", "cut", "batches"),
        row_classes=["error" if int(a["skippedBytes"]) + int(a["cutBytes"]) else None for a in acct],
        total=files.num_rows, rest="The accounting of every file is in files/ beside this page (Parquet).",
        empty="no .log files")
    return page.render()


def _info_text(r: Mapping[str, Any]) -> str:
    """One folded informational finding: partition, file:position, offset, message."""
    return " ".join(x for x in ("" if r.get("topic") is None else f"{r['topic']}-{r['partition']}",
                                short_path(r) + ("" if r.get("position") is None else f":{r['position']}")
                                if r.get("file") else "",
                                "" if r.get("offset") is None else f"offset {r['offset']}",
                                str(r["message"])) if x)
