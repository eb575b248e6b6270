"""``klogs recover``'s outputs: ``partitions.jsonl`` lines or a table, ``report.html`` (what will be
lost first, by partition) and, with ``--write-segments``, ``segments/`` as the broker leaves them."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafka_format.log.recovery import ROW_FIELDS, RecoveryPlan, recovered_segment_files
from kafka_format.output.ownership import Owner
from kafka_format.output.store import output_dir
from kafka_format.report.html import Card, Page
from kafka_format.report.text import table
from kafka_format.storage.partition_log import PartitionLog

__all__ = ["REPORT_OWNER", "format_rows", "render_html", "write_report"]

REPORT_OWNER = Owner("recover", "report")


def format_rows(rows: Sequence[Mapping[str, Any]], fmt: str = "jsonl") -> str:
    """JSON lines (:data:`ROW_FIELDS`) or an aligned text table."""
    if fmt == "jsonl":
        return "".join(json.dumps({k: r[k] for k in ROW_FIELDS}, separators=(",", ":")) + "\n" for r in rows)
    if fmt == "table":
        cols = [k for k in ROW_FIELDS if k != "actions"]

        def cell(v: Any) -> Any:
            if v is None:
                return ""
            if isinstance(v, bool):
                return "true" if v else "false"
            if isinstance(v, list):
                return json.dumps(v, separators=(",", ":"))
            return v

        return "".join(line + "\n" for line in table(cols, [[cell(r[k]) for k in cols] for r in rows]))
    raise ValueError(f"format must be 'jsonl' or 'table', not {fmt!r}")


def render_html(rows: Sequence[Mapping[str, Any]]) -> str:
    """The page: cards, the partitions that lose records (first), then every partition and its actions."""
    losing = [r for r in rows if r["recordsDropped"] or r["bytesDropped"]]
    page = Page("What the broker will do on its next start", "klogs recover (dry run: nothing was changed)")
    page.cards([
        Card("partitions", str(len(rows))),
        Card("lose records", str(sum(1 for r in rows if r["recordsDropped"])),
             cls="error" if any(r["recordsDropped"] for r in rows) else "ok"),
        Card("records dropped", str(sum(int(r["recordsDropped"]) for r in rows))),
        Card("bytes dropped", str(sum(int(r["bytesDropped"]) for r in rows))),
    ])
    page.heading("What will be lost")
    if losing:
        page.table(["topic", "partition", "logDir", "truncatedAt", "recordsDropped", "bytesDropped",
                    "deletedSegments"],
                   [[r["topic"], r["partition"], r["logDir"], r["truncatedAt"], r["recordsDropped"],
                     r["bytesDropped"], ", ".join(map(str, r["deletedSegments"]))] for r in losing],
                   table_id="losses")
    else:
        page.paragraph("Nothing: no partition loses a byte.")
    page.heading("Every partition")
    page.table(["topic", "partition", "logDir", "cleanShutdown", "logStartOffset", "logEndOffset",
                "highWatermark", "recoveryPoint", "rebuiltIndexes", "leaderEpochs"],
               [[r["topic"], r["partition"], r["logDir"], str(r["cleanShutdown"]).lower(), r["logStartOffset"],
                 r["logEndOffset"], r["highWatermark"], r["recoveryPoint"],
                 ", ".join(map(str, r["rebuiltIndexes"])), json.dumps(r["leaderEpochs"])] for r in rows],
               table_id="partitions")
    page.heading("File actions")
    page.bullets([f"{r['topic']}-{r['partition']} ({r['logDir']}): {a}" for r in rows for a in r["actions"]]
                 or ["none"])
    return page.render()


def _segments_dir(tmp: str, plan: RecoveryPlan, index: int) -> str:
    part = f"{plan.topic}-{plan.partition}" + ("" if plan.kind == "live" else f"-{plan.kind}")
    return os.path.join(tmp, "segments", f"logdir-{index}", part)


def write_report(out: str, rows: Sequence[Mapping[str, Any]], *,
                 segments: Iterable[tuple[int, PartitionLog, RecoveryPlan]] | None = None) -> None:
    """Publish ``out``: ``partitions.jsonl``, ``report.html``,
    and ``segments/logdir-N/<topic>-<partition>/`` (N: the log dir's position among the inputs'
    log dirs) when ``segments`` are given."""
    with output_dir(out, REPORT_OWNER) as tmp:
        with open(os.path.join(tmp, "partitions.jsonl"), "w", encoding="utf-8") as f:
            f.write(format_rows(rows, "jsonl"))
        with open(os.path.join(tmp, "report.html"), "w", encoding="utf-8") as f:
            f.write(render_html(rows))
        for index, part, plan in segments or ():
            if plan.kind == "delete":
                continue                       # the broker removes the dir
            target = _segments_dir(tmp, plan, index)
            os.makedirs(target, exist_ok=True)
            for file_name, data in recovered_segment_files(part, plan):
                with open(os.path.join(target, file_name), "wb") as fb:
                    fb.write(data)
