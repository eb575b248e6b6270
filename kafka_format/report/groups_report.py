"""The groups job's outputs: its lines (``jsonl`` / ``table``), the summary per group and the
published report directory (``groups.jsonl`` or ``groups.txt``, ``summary.json``, ``report.html``).

The rules are :mod:`kafka_format.log.groups`' and :mod:`kafka_format.engine.groups`'; this module
only renders and publishes what they computed.  Problems come first everywhere: groups that lost
unread records, then groups the retention pass at ``--now`` takes unread records from, then the
rest by lag.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_format.log.groups import COLUMNS
from kafka_format.output.ownership import Owner
from kafka_format.output.publish import crash_point
from kafka_format.output.store import output_dir
from kafka_format.report.html import Card, Cell, Page
from kafka_format.report.text import table
from kafka_format.report.units import human_bytes, human_count, human_duration, utc_text

__all__ = ["NOTES", "REPORT_OWNER", "TABLE_COLUMNS", "format_kafka", "format_rows", "summarize", "summary_line",
           "write_report"]

REPORT_OWNER = Owner("groups", "report")          # the marker of a --out report
# What the numbers assume, in the report and summary.json.
NOTES = (
    "Committed offsets, groups and members are the state the group coordinator loads from __consumer_offsets "
    "up to its high watermark; classic groups with members are Stable as loaded (their members' session "
    "timeouts are not modelled).",
    "lag = high watermark - committed offset (the LAG of kafka-consumer-groups --describe); lagBytes counts "
    "the batches from the one holding the first unread record to the high watermark.",
    "offsetExpiresAtMs follows the coordinator's expiration condition with --offsets-retention-minutes; "
    "the coordinator deletes an expired offset at its next check (offsets.retention.check.interval.ms).",
    "Retention columns: the retention pass at --now (the retention job's rules, no new data assumed); a "
    "tiered partition loses records only when its remote segments are deleted.",
)
# The terminal table: the columns a person reads first.
TABLE_COLUMNS = ("group", "topic", "partition", "committedOffset", "highWatermark", "lag", "lagBytes",
                 "timeLagMs", "state", "offsetExpiresAtMs", "lostRecords", "retentionLossRecords",
                 "losesRecordsAtMs")


def _cell(column: str, value: Any, now_ms: int) -> str:
    if value is None:
        return "-"
    if column == "lagBytes":
        return human_bytes(int(value))
    if column in ("timeLagMs", "commitAgeMs"):
        return human_duration(max(int(value), 0))
    if column in ("offsetExpiresAtMs", "losesRecordsAtMs"):
        v = int(value)
        return "now" if v <= now_ms else utc_text(v).replace(" UTC", "Z").replace(" ", "T")
    return str(value)


def format_rows(rows: Sequence[Mapping[str, Any]], fmt: str, now_ms: int) -> str:
    """jsonl (one object per row, exactly the job's columns), an aligned text table, or ``kafka``
    (:func:`format_kafka`'s stdout)."""
    if fmt == "jsonl":
        return "".join(json.dumps({k: r.get(k) for k in COLUMNS}, separators=(",", ":")) + "\n" for r in rows)
    if fmt == "kafka":
        return format_kafka(rows)[0]
    if fmt == "table":
        cells = [[_cell(k, r.get(k), now_ms) for k in TABLE_COLUMNS] for r in rows]
        return "".join(line + "\n" for line in table(list(TABLE_COLUMNS), cells))
    raise ValueError(f"format must be 'jsonl', 'table' or 'kafka', not {fmt!r}")


_MISSING = "-"                                          # ConsumerGroupCommand.MISSING_COLUMN_VALUE
_REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")
# ListGroupsOptions.forConsumerGroups(): classic and consumer groups of these protocol types
_DESCRIBED_GROUP_TYPES = ("classic", "consumer")
_DESCRIBED_PROTOCOL_TYPES = (None, "", "consumer")


def _java_order(text: str) -> bytes:
    """``String.compareTo`` order (UTF-16 code units), the order of a ``TreeMap<String, ...>``."""
    return text.encode("utf-16-be", "surrogatepass")


def format_kafka(rows: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """(stdout, stderr) of Kafka 4.4's ``kafka-consumer-groups --describe --all-groups`` (the offsets
    view, without ``--verbose``) over the groups of ``rows``: groups in ``TreeMap`` order; per group
    the members with partitions, most partitions first, each member's partitions by topic then
    partition, then the committed partitions no member holds; the table's widths from the group's
    own rows (at least 15); "has no active members" / "is rebalancing" on stderr first.  Share and
    streams groups and classic groups of other protocol types (Connect's) are not consumer groups
    there and are left out.  Members with as many partitions keep the order of the rows (by topic, partition),
    where the broker's response order would decide."""
    by_group: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        if r["groupType"] not in _DESCRIBED_GROUP_TYPES or r.get("protocolType") not in _DESCRIBED_PROTOCOL_TYPES:
            continue
        by_group.setdefault(str(r["group"]), []).append(r)
    out: list[str] = []
    err: list[str] = []
    for group in sorted(by_group, key=_java_order):
        grows = [r for r in by_group[group] if r.get("topic") is not None]
        state = str(by_group[group][0]["state"])
        if state == "Empty":
            err.append(f"\nConsumer group '{group}' has no active members.\n")
        elif state in _REBALANCING:
            err.append(f"\nWarning: Consumer group '{group}' is rebalancing.\n")
        members: dict[str, list[Mapping[str, Any]]] = {}
        for r in grows:
            if r.get("consumerId") is not None:
                members.setdefault(str(r["consumerId"]), []).append(r)
        ordered = sorted(members.values(), key=len, reverse=True)         # a stable sort: ties keep their order
        unassigned = [r for r in grows if r.get("consumerId") is None and r.get("committedOffset") is not None]
        table_rows = [r for m in ordered for r in _by_topic_partition(m)] + _by_topic_partition(unassigned)
        if not table_rows:
            continue
        cells = [[group, *_kafka_cells(r)] for r in table_rows]
        # printOffsetFormat: "\n%-Gs %-Ts %-10s %-15s %-15s %-15s %-Cs %-Hs %s", G/T/C/H at least 15
        widths = [max(15, *(len(c[i]) for c in cells)) if i in (0, 1, 6, 7) else w
                  for i, w in enumerate((0, 0, 10, 15, 15, 15, 0, 0))]

        def line(values: Sequence[str], widths: Sequence[int] = widths) -> str:
            return "\n" + " ".join(v.ljust(w) for v, w in zip(values, widths, strict=False)) + " " + values[-1]

        out.append(line(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                         "HOST", "CLIENT-ID"]))
        out.extend(line(c) for c in cells)
        out.append("\n")
    return "".join(out), "".join(err)


def _by_topic_partition(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(rows, key=lambda r: (_java_order(str(r["topic"])), int(r["partition"])))


def _kafka_cells(r: Mapping[str, Any]) -> list[str]:
    """TOPIC .. CLIENT-ID of one row, as ConsumerGroupCommand prints them."""
    offset, end = r.get("committedOffset"), r.get("highWatermark")
    lag = None if offset is None or offset == -1 or end is None else end - offset

    def text(v: Any) -> str:
        return _MISSING if v is None else str(v)

    return [str(r["topic"]), str(r["partition"]), text(offset), text(end), text(lag),
            text(r.get("consumerId")), text(r.get("host")), text(r.get("clientId"))]


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per group (problems first) and in total: partitions, lag, records lost already, records the
    retention pass at --now deletes unread and the earliest time retention takes an unread record."""
    per: dict[str, dict[str, Any]] = {}
    for r in rows:
        g = per.setdefault(r["group"], {
            "group": r["group"], "type": r["groupType"], "state": r["state"], "members": r["members"],
            "partitions": 0, "lag": 0, "lagBytes": 0, "lostRecords": 0, "retentionLossRecords": 0,
            "retentionLossBytes": 0, "losesRecordsAtMs": None, "expiredOffsets": 0, "maxTimeLagMs": None})
        if r.get("topic") is None:
            continue
        g["partitions"] += 1
        for k in ("lag", "lagBytes", "lostRecords", "retentionLossRecords", "retentionLossBytes"):
            g[k] += int(r.get(k) or 0)
        g["expiredOffsets"] += 1 if r.get("offsetExpired") else 0
        at = r.get("losesRecordsAtMs")
        if at is not None and (g["losesRecordsAtMs"] is None or at < g["losesRecordsAtMs"]):
            g["losesRecordsAtMs"] = at
        tl = r.get("timeLagMs")
        if tl is not None and (g["maxTimeLagMs"] is None or tl > g["maxTimeLagMs"]):
            g["maxTimeLagMs"] = tl
    groups = sorted(per.values(), key=lambda g: (-g["lostRecords"], -g["retentionLossRecords"],
                                                 g["losesRecordsAtMs"] if g["losesRecordsAtMs"] is not None
                                                 else 2 ** 63, -g["lag"], g["group"]))
    total = {"groups": len(groups), "partitions": sum(g["partitions"] for g in groups),
             "lag": sum(g["lag"] for g in groups), "lagBytes": sum(g["lagBytes"] for g in groups),
             "groupsLost": sum(1 for g in groups if g["lostRecords"]),
             "groupsLosing": sum(1 for g in groups if g["retentionLossRecords"]),
             "lostRecords": sum(g["lostRecords"] for g in groups),
             "retentionLossRecords": sum(g["retentionLossRecords"] for g in groups),
             "retentionLossBytes": sum(g["retentionLossBytes"] for g in groups)}
    return {"groups": groups, "total": total}


def summary_line(summary: Mapping[str, Any]) -> str:
    """One line: groups, total lag, groups that lost records and that the retention pass at --now takes from."""
    t = summary["total"]

    def groups(n: int) -> str:
        return f"{n} group" + ("" if n == 1 else "s")

    return (f"{groups(t['groups'])}, {t['partitions']} group-partitions, lag {human_count(t['lag'])} records "
            f"({human_bytes(t['lagBytes'])}); lost already: {groups(t['groupsLost'])}, "
            f"{human_count(t['lostRecords'])} records; deleted unread by retention at --now: "
            f"{groups(t['groupsLosing'])}, {human_count(t['retentionLossRecords'])} records "
            f"({human_bytes(t['retentionLossBytes'])})")


def render_html(rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Any], anomalies: Sequence[Mapping[str, Any]],
                now_ms: int, notes: Sequence[str] = ()) -> str:
    """The report page: cards, the groups at risk, every group, the refused records, the notes."""
    t = summary["total"]
    page = Page(f"Consumer groups at {utc_text(now_ms)}",
                "Committed offsets as the group coordinator loads them, lag, and the unread records retention takes.")
    page.cards([
        Card("groups that lost unread records", str(t["groupsLost"]), f"{t['lostRecords']:,} records",
             "error" if t["groupsLost"] else "ok"),
        Card("groups losing records to retention now", str(t["groupsLosing"]),
             f"{t['retentionLossRecords']:,} records, {human_bytes(t['retentionLossBytes'])}",
             "warning" if t["groupsLosing"] else "ok"),
        Card("groups", human_count(t["groups"]), f"on {t['partitions']} partitions"),
        Card("total lag", human_count(t["lag"]), human_bytes(t["lagBytes"])),
        Card("refused coordinator records", str(sum(1 for a in anomalies if a["kind"] == "refused")),
             None, "error" if any(a["kind"] == "refused" for a in anomalies) else "ok"),
    ])
    page.heading("Groups, problems first")
    page.table(["group", "type", "state", "members", "partitions", "lag", "lost", "retention takes",
                "retention first takes", "expired offsets"],
               [[g["group"], g["type"], g["state"], g["members"], g["partitions"], g["lag"], g["lostRecords"],
                 g["retentionLossRecords"],
                 Cell("never" if g["losesRecordsAtMs"] is None else utc_text(g["losesRecordsAtMs"]),
                      sort=g["losesRecordsAtMs"] if g["losesRecordsAtMs"] is not None else 2 ** 63),
                 g["expiredOffsets"]] for g in summary["groups"]], table_id="groups",
               numeric=("members", "partitions", "lag", "lost", "retention takes", "expired offsets"))
    page.heading("Partitions")
    page.table(list(TABLE_COLUMNS), [[_cell(k, r.get(k), now_ms) for k in TABLE_COLUMNS] for r in rows],
               table_id="partitions", total=len(rows), rest="groups.jsonl (or groups.txt) beside this page",
               numeric=("partition", "committedOffset", "highWatermark", "lag", "lostRecords",
                        "retentionLossRecords"))
    if anomalies:
        page.heading("Coordinator records Kafka's loader skips or refuses")
        page.table(["topic", "partition", "offset", "kind", "message"],
                   [[a["topic"], a["partition"], a["offset"], a["kind"], a["message"]] for a in anomalies],
                   table_id="anomalies", wrap=("message",), numeric=("partition", "offset"))
    page.heading("What the numbers assume")
    page.bullets([*NOTES, *notes])
    return page.render()


def write_report(out: str, rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Any],
                 anomalies: Sequence[Mapping[str, Any]], now_ms: int, *, fmt: str = "jsonl",
                 inputs: Mapping[str, Any] | None = None, notes: Sequence[str] = ()) -> None:
    """Publish ``out`` atomically: ``groups.jsonl`` (or ``groups.txt``), ``summary.json`` and
    ``report.html``; ``out`` must be absent, empty or a previous report of this job."""
    doc = {"nowMs": now_ms, "inputs": dict(inputs or {}), **summary, "anomalies": list(anomalies),
           "notes": [*NOTES, *notes]}
    with output_dir(out, REPORT_OWNER) as tmp:
        name = "groups.jsonl" if fmt == "jsonl" else "groups.txt"
        with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
            f.write(format_rows(rows, fmt, now_ms))
        with open(os.path.join(tmp, "summary.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        with open(os.path.join(tmp, "report.html"), "w", encoding="utf-8") as f:
            f.write(render_html(rows, summary, anomalies, now_ms, notes))
        crash_point("groups:staged")
