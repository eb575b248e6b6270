"""An audit's results as Arrow columns (kafka_format.log.audit.tables): the order both engines give
the findings, rows gathered a batch at a time, and the page's figures and first rows computed from
the columns, each against a plain Python computation over the same rows."""

from __future__ import annotations

import html
import itertools
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_format.log.audit import tables
from kafka_format.log.audit.model import ACCOUNTING_COLUMNS, FINDING_COLUMNS, SEVERITY_RANK, at_or_above
from kafka_format.report import audit_page
from kafka_format.report.audit_page import audit_totals, render_audit_page

pytestmark = pytest.mark.property

_finding = st.fixed_dictionaries({
    "severity": st.sampled_from(["error", "warning", "info", "odd"]),
    "check": st.sampled_from(["batch-crc", "index-zero-tail", "open-transaction"]),
    "topic": st.one_of(st.none(), st.sampled_from(["a", "b", "é", "a-1"])),
    "partition": st.one_of(st.none(), st.integers(0, 3)),
    "file": st.one_of(st.none(), st.sampled_from(["/d/a-0/0.log", "/d/a-0/9.log", "/d/b-1/0.index"])),
    "position": st.one_of(st.none(), st.integers(0, 30)),
    "offset": st.one_of(st.none(), st.integers(-1, 1 << 40)),
    "expected": st.one_of(st.none(), st.text(max_size=3)),
    "actual": st.one_of(st.none(), st.text(max_size=3)),
})


def _numbered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row's message is its index: equal keys must keep the rows' order."""
    return [{**r, "message": f"m{i}"} for i, r in enumerate(rows)]


def _python_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (-SEVERITY_RANK.get(r["severity"], 0), r["topic"] or "",
                                       r["partition"] if r["partition"] is not None else -1, r["file"] or "",
                                       r["position"] if r["position"] is not None else -1, r["check"]))


def _file_row(i: int, topic: str | None = "a", partition: int | None = 0, bad: int = 0) -> dict[str, Any]:
    return {"topic": topic, "partition": partition, "file": f"/d/{topic}-{partition}/{i:020d}.log",
            "sizeBytes": 100 + i, "validBytes": 100 + i - bad, "skippedBytes": bad, "zeroTailBytes": 0,
            "cutBytes": 0, "batches": i}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_finding, max_size=40), cuts=st.lists(st.integers(0, 40), max_size=4),
       as_table=st.integers(0, 4))
def test_the_collector_orders_findings_as_a_stable_sort_over_the_rows(
        rows: list[dict[str, Any]], cuts: list[int], as_table: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows added as several tasks (some as tables, as Spark slices send them), through batches of
    3 rows, come out in the order of a stable Python sort of the rows: severity, topic, partition,
    file, position, check; null keys first; unknown severities with the informational ones."""
    monkeypatch.setattr(tables, "_BATCH_ROWS", 3)      # the same for every example
    rows = _numbered(rows)
    bounds = sorted({0, len(rows), *(min(c, len(rows)) for c in cuts)})
    collector = tables.ResultCollector()
    for k, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        part = [tuple(r[c] for c in FINDING_COLUMNS) for r in rows[lo:hi]]
        files = [tuple(_file_row(lo + j).values()) for j in range(hi - lo)]
        if k == as_table:
            slice_collector = tables.ResultCollector()
            slice_collector.add(part, files)
            collector.add_tables(*slice_collector.tables(ordered=False))
        else:
            collector.add(part, files)
    findings, accounting = collector.tables()
    assert findings.to_pylist() == _python_order(rows)
    assert accounting.column_names == list(ACCOUNTING_COLUMNS)
    assert accounting["file"].to_pylist() == sorted(_file_row(i)["file"] for i in range(len(rows)))
    assert at_or_above(findings, "warning") == sum(1 for r in rows if r["severity"] in ("error", "warning"))
    assert at_or_above(findings, "error") == at_or_above(rows, "error")


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(_finding, max_size=40), bad=st.lists(st.integers(0, 5), max_size=6))
def test_the_page_figures_are_counts_over_the_rows(rows: list[dict[str, Any]], bad: list[int]) -> None:
    """audit_totals from the columns: findings per severity, partitions seen (accounting rows and
    findings naming a topic), partitions with an error or warning, bytes checked and not readable."""
    rows = _numbered(rows)
    files = [_file_row(i, topic="a" if i % 2 else "c", partition=i % 3, bad=b) for i, b in enumerate(bad)]
    seen = {(a["topic"], a["partition"]) for a in files} | {(f["topic"], f["partition"]) for f in rows
                                                             if f["topic"] is not None}
    troubled = {(f["topic"], f["partition"]) for f in rows
                if f["severity"] in ("error", "warning") and f["topic"] is not None}
    expected = {**{sev: sum(1 for f in rows if f["severity"] == sev) for sev in ("error", "warning", "info")},
                "partitions": len(seen), "troubled": len(troubled), "files": len(files),
                "bytes": sum(a["sizeBytes"] for a in files), "unreadable": sum(bad)}
    assert audit_totals(rows, files) == expected
    assert audit_totals(tables.findings_table(rows), tables.files_table(files)) == expected


def _table_column(page: str, table_id: str, column: int) -> list[str]:
    body = re.search(rf'<table class="data" id="{table_id}">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert body is not None
    return [html.unescape(re.sub(r"<[^>]+>", "", cells[column]))
            for cells in (re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
                          for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S))]


def test_the_page_draws_the_first_problems_and_files_in_their_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """With more rows than a table draws, the page shows the first ones of the problems' order
    (severity, check, topic, partition, file, position: a missing value first) and of the
    accounting's (bytes not readable, most first, then file), and says how many there are in all."""
    monkeypatch.setattr(audit_page, "ROW_LIMIT", 7)
    rows = _numbered([{"severity": ("error", "warning", "info")[i % 3], "check": ("batch-crc", "index-order")[i % 2],
                       "topic": (None, "t", "u")[i % 3], "partition": i % 4, "file": f"/d/t-0/{i % 2}.log",
                       "position": (i * 37) % 120 + 5, "offset": i, "expected": None, "actual": None}
                      for i in range(60)])
    problems = [r for r in rows if r["severity"] != "info"]

    first = sorted(problems, key=lambda r: (-SEVERITY_RANK[r["severity"]], r["check"], r["topic"] or "",
                                            r["partition"], r["file"], r["position"]))[:7]
    files = [_file_row(i, bad=(i * 7) % 4) for i in range(20)]
    worst = sorted(files, key=lambda a: (-(a["skippedBytes"] + a["cutBytes"]), a["file"]))[:7]
    page = render_audit_page(tables.findings_table(rows), tables.files_table(files))
    assert _table_column(page, "problems", 7) == [r["message"] for r in first]
    assert [p.rsplit("/", 1)[-1] for p in _table_column(page, "files", 0)] == [
        a["file"].rsplit("/", 1)[-1] for a in worst]
    assert f"The first 7 of {len(problems)} rows" in page and "The first 7 of 20 rows" in page
