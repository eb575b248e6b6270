"""The report pages' content: summary first, problems before facts, human units with exact tooltips."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

from kafka_format.report.audit_page import render_audit_page, replica_label
from kafka_format.report.audit_page import summary_line as audit_line
from kafka_format.report.charts import Mark, TimeAxis, timeline_svg
from kafka_format.report.html import ROW_LIMIT, Cell, Page, bar_chart_svg, step_chart_svg
from kafka_format.report.retention_page import render_retention_page
from kafka_format.report.retention_page import summary_line as retention_line
from kafka_format.report.text import table


class _Tables(HTMLParser):
    """Rows of every ``<table id=...>`` as lists of (text, attrs) cells."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[tuple[str, dict[str, str | None]]]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._attrs: dict[str, str | None] = {}
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table" and a.get("id"):
            self._table = a["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell, self._attrs = [], a

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._table and self._cell is not None:
            self.tables[self._table][-1].append(("".join(self._cell).strip(), self._attrs))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _tables(page: str) -> dict[str, list[list[tuple[str, dict[str, str | None]]]]]:
    parser = _Tables()
    parser.feed(page)
    return parser.tables


def _finding(sev: str, check: str, part: int, msg: str = "m", **kw: Any) -> dict[str, Any]:
    row = {"severity": sev, "check": check, "topic": "t", "partition": part,
           "file": f"/data/broker-{1 + part % 2}/t-{part}/00000000000000000000.log", "position": 0,
           "offset": None, "expected": None, "actual": None, "message": msg}
    row.update(kw)
    return row


def test_audit_page_puts_problems_first_and_folds_expected_facts() -> None:
    findings = [_finding("info", "non-consecutive-offsets", 0, f"gap {i}") for i in range(60)]
    findings += [_finding("info", "open-transaction", 1), _finding("warning", "hanging-transaction", 1,
                                                                     actual="open for 3.0 years (95583104024 ms)"),
                 _finding("error", "crc-mismatch", 2, position=61)]
    files = [{"topic": "t", "partition": p, "file": f"/data/broker-1/t-{p}/00000000000000000000.log",
              "sizeBytes": 3 * 1024 ** 3, "validBytes": 3 * 1024 ** 3 - 10, "skippedBytes": 10 if p == 2 else 0,
              "zeroTailBytes": 0 if p == 2 else 10, "cutBytes": 0, "batches": 1234567} for p in range(3)]
    page = render_audit_page(findings, files)
    tables = _tables(page)
    problems = [[c[0] for c in row] for row in tables["problems"][1:]]
    assert [r[:2] for r in problems] == [["error", "crc-mismatch"], ["warning", "hanging-transaction"]]
    assert problems[0][3].endswith("t-2/00000000000000000000.log:61")
    info = {row[0][0]: row[1][0] for row in tables["info"][1:]}
    assert info == {"non-consecutive-offsets": "60", "open-transaction": "1"}     # one row per check
    assert len(tables["info"]) == 3
    assert page.index('id="problems"') < page.index('id="info"') < page.index('id="files"')
    assert page.index('class="cards"') < page.index('id="problems"')
    size_cell = tables["files"][1][2]
    assert size_cell[0] == "3.0 GiB" and size_cell[1]["title"] == f"{3 * 1024 ** 3:,} bytes"
    assert size_cell[1]["data-sort"] == str(3 * 1024 ** 3)
    assert tables["files"][1][0][0].endswith("t-2/00000000000000000000.log")    # the damaged file first
    assert "1,234,567" in page and "3.0 years" in page


def test_replica_label_names_the_log_dir() -> None:
    assert replica_label(_finding("error", "x", 3)) == "broker-2:t-3"
    assert replica_label({"topic": None, "partition": None, "file": None}) == "(log dir)"
    assert replica_label({"topic": "t", "partition": 3, "file": "/data/broker-2/t-3"}) == "broker-2:t-3"
    assert replica_label({"topic": "t", "partition": 3, "file": None}) == "t-3"
    assert replica_label({"topic": None, "partition": None,
                          "file": "/data/broker-2/replication-offset-checkpoint"}) == "broker-2"


def test_retention_page_summary_and_order() -> None:
    now = 1_700_000_000_000
    day = 86_400_000
    rows = [
        {"topic": "a", "partition": 0, "baseOffset": 0, "sizeBytes": 1 << 30, "largestTimestamp": now - 9 * day,
         "deletable": True, "reason": "retention.ms", "deletableAtMs": now - 2 * day},
        {"topic": "a", "partition": 0, "baseOffset": 100, "sizeBytes": 1 << 20, "largestTimestamp": now - day,
         "deletable": False, "reason": None, "deletableAtMs": now + 6 * day},
        {"topic": "b", "partition": 1, "baseOffset": 7, "sizeBytes": 512, "largestTimestamp": now,
         "deletable": False, "reason": None, "deletableAtMs": None},
    ]
    from kafka_format.log.retention import disk_usage_steps, summarize

    page = render_retention_page(rows, summarize(rows), disk_usage_steps(rows, now), now, notes=["n1"])
    tables = _tables(page)
    segs = [[c[0] for c in row] for row in tables["segments"][1:]]
    assert [(r[0], r[2], r[5], r[8]) for r in segs] == [("a", "0", "yes", "now"), ("a", "100", "no", "in 6.0 days"),
                                                        ("b", "7", "no", "never")]
    assert segs[1][7] == "2023-11-20 22:13:20 UTC"
    assert tables["segments"][2][7][1]["title"] == f"2023-11-20T22:13:20.000Z ({now + 6 * day} ms)"
    cards = re.findall(r'<div class="v">([^<]*)</div><div class="l">([^<]*)</div>', page)
    assert cards[0] == ("1.0 GiB", "reclaimable now")
    assert ("1 of 2", "partitions affected") in cards


def test_tables_sort_keys_and_escaping() -> None:
    page = Page("<t>").table(["x", "n"], [[Cell("<b>", title='"q"'), Cell("1.0 KiB", sort=1024)]],
                             table_id="t", numeric=("n",)).render()
    assert "<b>" not in page.replace("<body>", "") and "&lt;b&gt;" in page and 'title="&quot;q&quot;"' in page
    assert 'data-sort="1024"' in page and 'class="num nw"' in page


def test_charts_are_inline_svg_with_exact_tooltips() -> None:
    svg = bar_chart_svg("t", ["x", "y"], [("s", "#f00", [3.0, 0.0])], fmt=lambda v: f"{v:.0f} B")
    assert svg.startswith("<svg") and "<title>x: s 3 B (3)</title>" in svg and svg.count("<rect") == 2
    now = 1_700_000_000_000
    steps = step_chart_svg("s", [(now, 10.0), (now + 3_600_000, 4.0)], now_ms=now, y_text=lambda v: f"{v:g} B")
    assert steps.count("<circle") == 2 and "<title>from 2023-11-14 23:13:20 UTC: 4 B</title>" in steps
    ratio = bar_chart_svg("r", ["p"], [("dirty", "#f00", [0.25])], fmt=lambda v: f"{v:.0%}", scale_max=1.0)
    assert 'width="560"' in ratio and 'width="140.0"' in ratio     # a quarter of the full-width track


DAY = 86_400_000


def test_time_axis_steps_are_labelled_and_cover_the_spans() -> None:
    now = 1_700_000_000_000
    axis = TimeAxis.covering(now, [int(5.9 * DAY), int(3 * 365.25 * DAY)])
    assert [label for _, label in axis.ticks] == ["now", "+1 day", "+1 week", "+30 days", "+1 year", "+10 years"]
    step = (axis.x1 - axis.x0) / 5
    assert axis.x(0) == axis.x(-5) == axis.x0                          # deletable now: at "now"
    assert axis.x(DAY) == axis.x0 + step and axis.x(7 * DAY) == axis.x0 + 2 * step
    assert axis.x0 + step < axis.x(int(5.9 * DAY)) < axis.x0 + 2 * step   # between +1 day and +1 week
    assert axis.x(int(3 * 365.25 * DAY)) < axis.x(int(10 * 365.25 * DAY)) == axis.x1
    assert [label for _, label in TimeAxis.covering(now, []).ticks] == ["now", "+1 h"]


def test_timeline_has_a_mark_per_segment_and_a_never_band() -> None:
    now = 1_700_000_000_000
    svg = timeline_svg("t", [("a-0", [Mark(0, 100, "#d00", "a-0 segment 0: now"),
                                      Mark(2 * DAY, 400, "#fa0", "a-0 segment 9: later")]),
                             ("b-1", [Mark(None, 50, "#bbb", "b-1 segment 3: never")])], now_ms=now)
    circles = re.findall(r'<circle cx="([\d.]+)" cy="[\d.]+" r="([\d.]+)"[^>]*><title>([^<]*)</title>', svg)
    assert [c[2] for c in circles] == ["a-0 segment 0: now", "a-0 segment 9: later", "b-1 segment 3: never"]
    xs = [float(c[0]) for c in circles]
    assert xs[0] < xs[1] < xs[2] and xs[2] > 790                         # never: right of the time axis
    assert float(circles[1][1]) == 9.0 and float(circles[0][1]) == 6.0   # area follows the bytes (3 + 6 * sqrt)
    assert ">never</text>" in svg and ">+1 week<" in svg


def _part(topic: str, p: int, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"topic": topic, "partition": p, "logDir": "/d/broker-1", "cleanupPolicy": "compact",
                           "compact": True, "cleaned": True, "dirtyRatio": 0.75, "wouldCleanNow": True,
                           "reason": "dirty ratio 0.75 >= min.cleanable.dirty.ratio 0.5", "rounds": 1,
                           "recordsBefore": 1000, "recordsAfter": 10, "bytesBefore": 2 << 20,
                           "bytesAfter": 1 << 20, "tombstonesKept": 1, "tombstonesRemoved": 2}
    row.update(kw)
    return row


def test_compaction_page_shows_uncleanable_first_and_bytes_freed() -> None:
    from kafka_format.report.compaction_page import render_compaction_page

    summary = {"mode": "cleaner", "nowMs": 1_700_000_000_000, "partitions": [
        _part("a", 0), _part("a", 1, reason="uncleanable: /d/a-1/0.log:61: bad CRC", wouldCleanNow=False,
                             cleaned=False, recordsBefore=None, recordsAfter=None, bytesBefore=None, bytesAfter=None),
        _part("r", 0, compact=False, cleaned=False, cleanupPolicy="delete", reason="cleanup.policy=delete")]}
    page = render_compaction_page(summary)
    rows = [[c[0] for c in r] for r in _tables(page)["partitions"][1:]]
    assert [r[0] for r in rows] == ["a-1", "a-0", "r-0"]
    assert rows[1][3] == "75.0%" and rows[1][8] == "2.0 MiB" and rows[1][9] == "1.0 MiB"
    assert rows[2][3] == "-"                                  # the cleaner never looks at a delete-only topic
    cards = dict((v, k) for k, v in re.findall(r'<div class="v">([^<]*)</div><div class="l">([^<]*)</div>', page))
    assert cards["bytes the cleaner frees"] == "1.0 MiB" and cards["uncleanable partitions"] == "1"
    assert cards["records removed"] == "990"
    from kafka_format.report.compaction_page import summary_line

    assert summary_line(summary) == ("the cleaner frees 1.0 MiB (990 records) and picks 1 of 2 compacted "
                                     "partitions now; uncleanable: 1")
    full = render_compaction_page({"mode": "full", "partitions": [
        {"topic": "a", "partition": 0, "logDir": "/d/b", "recordsBefore": 5, "recordsAfter": 2, "keys": 2,
         "keysDeleted": 1, "recordsSuperseded": 2, "nullKeyRecords": 0}]})
    assert [[c[0] for c in r] for r in _tables(full)["partitions"][1:]] == [["a-0", "b", "5", "2", "2", "1", "2", "0"]]


def test_retention_page_pictures_and_partitions_reclaimable_first() -> None:
    now = 1_700_000_000_000
    rows = [
        {"topic": "a", "partition": 0, "baseOffset": 0, "sizeBytes": 1000, "largestTimestamp": now - DAY,
         "deletable": False, "reason": None, "deletableAtMs": now + DAY},
        {"topic": "b", "partition": 0, "baseOffset": 0, "sizeBytes": 3000, "largestTimestamp": now - 9 * DAY,
         "deletable": True, "reason": "retention.ms", "deletableAtMs": now},
        {"topic": "b", "partition": 0, "baseOffset": 50, "sizeBytes": 2000, "largestTimestamp": now,
         "deletable": False, "reason": None, "deletableAtMs": None},
    ]
    from kafka_format.log.retention import disk_usage_steps, summarize

    summary = summarize(rows)
    page = render_retention_page(rows, summary, disk_usage_steps(rows, now), now)
    assert [r[0][0] for r in _tables(page)["partitions"][1:]] == ["b-0", "a-0"]     # reclaimable now first
    assert "data:image/png" not in page and 'href="disk-usage.png"' in page         # linked, not embedded twice
    timeline = page[page.index("When each segment"):page.index("Bytes on disk over time")]
    assert timeline.count("<circle") == 3 + 3                       # a dot per segment, three in the legend
    assert "b-0 segment 0 (2.9 KiB): deletable now (retention.ms)" in timeline
    assert "a-0 segment 0 (1000 B): deletable at 2023-11-15 22:13:20 UTC, in 1.0 days" in timeline
    assert retention_line(summary, now) == (
        "deletable now: 2.9 KiB in 1 of 3 segments (1 of 2 partitions); later: 1000 B, the next at "
        "2023-11-15 22:13:20 UTC (in 1.0 days); never (without new data): 2.0 KiB")


def test_audit_page_names_what_and_when_and_puts_troubled_replicas_first() -> None:
    findings = [_finding("info", "non-consecutive-offsets", 0, f"gap {i}") for i in range(9)]
    findings += [_finding("warning", "replica-lagging", 3)]
    files = [{"topic": "t", "partition": 0, "file": "/data/broker-1/t-0/00000000000000000000.log",
              "sizeBytes": 2048, "validBytes": 2000, "skippedBytes": 48, "zeroTailBytes": 0, "cutBytes": 0,
              "batches": 3}]
    page = render_audit_page(findings, files, now_ms=1_700_000_000_000, logdirs=["/data"])
    assert "<h1>Audit at 2023-11-14 22:13:20 UTC</h1>" in page and "Log dirs: /data." in page
    chart = page[page.index("<svg"):page.index("</svg>")]
    assert chart.index("broker-2:t-3") < chart.index("broker-1:t-0")   # the warning's replica before 9 infos
    tables = _tables(page)
    assert [r[0][0] for r in tables["partitions"][1:]] == ["t-3", "t-0"]
    where = tables["problems"][1][3]
    assert where[0] == "broker-2/t-3/00000000000000000000.log:0"       # from the log dir's name on
    assert where[1]["title"] == "/data/broker-2/t-3/00000000000000000000.log:0"
    assert tables["files"][1][0][0] == "broker-1/t-0/00000000000000000000.log"
    assert audit_line(findings, files) == ("0 errors, 1 warnings, 9 informational; 1 of 2 partitions with "
                                           "problems; 2.0 KiB of log checked, 48 B not readable")


def test_long_texts_wrap_and_the_rest_keeps_to_one_line() -> None:
    page = Page("p").table(["n", "message"], [["1", "a long sentence"]], table_id="t", numeric=("n",),
                           wrap={"message": 14}).render()
    assert '<td class="num nw">1</td>' in page
    assert '<td class="wrap"><div class="w" style="min-width:14em">a long sentence</div></td>' in page


def test_text_tables_align_numbers_right() -> None:
    lines = table(["topic", "partition", "size", "ratio"], [["a", 3, "16.0 KiB", "41.8%"], ["bb", 12, "512 B", "-"]])
    assert lines == ["topic  partition      size  ratio",
                     "-----  ---------  --------  -----",
                     "a              3  16.0 KiB  41.8%",
                     "bb            12     512 B      -"]


def test_a_table_draws_its_first_rows_and_says_where_the_rest_are() -> None:
    read: list[int] = []

    def rows(n: int) -> Iterator[list[str]]:
        for i in range(n):
            read.append(i)
            yield [str(i)]

    page = Page("p").table(["n"], rows(ROW_LIMIT + 500), table_id="t", total=ROW_LIMIT + 500,
                           rest="All rows are in rows.parquet.").render()
    assert [r[0][0] for r in _tables(page)["t"][1:]] == [str(i) for i in range(ROW_LIMIT)]
    assert len(read) <= ROW_LIMIT + 1                       # a lazy iterable is read no further
    assert (f"The first {ROW_LIMIT:,} of {ROW_LIMIT + 500:,} rows, in the order above (sorting and the filter "
            "apply to these). All rows are in rows.parquet.") in page
    whole = Page("p").table(["n"], [["1"], ["2"]], table_id="t", rest="All rows are in rows.parquet.").render()
    assert "The first" not in whole and "rows.parquet" not in whole


def test_the_audit_page_stays_bounded_with_many_problems_and_files() -> None:
    n = ROW_LIMIT + 300
    findings = [_finding("error", "index-zero-tail", p) for p in range(n)]
    findings += [_finding("info", "open-transaction", p) for p in range(n)]
    files = [{"topic": "t", "partition": p, "file": f"/data/broker-1/t-{p}/00000000000000000000.log",
              "sizeBytes": 100, "validBytes": 100 - (p == n - 1), "skippedBytes": int(p == n - 1),
              "zeroTailBytes": 0, "cutBytes": 0, "batches": 1} for p in range(n)]
    page = render_audit_page(findings, files)
    tables = _tables(page)
    assert len(tables["problems"]) - 1 == len(tables["files"]) - 1 == len(tables["partitions"]) - 1 == ROW_LIMIT
    assert tables["files"][1][0][0] == f"broker-1/t-{n - 1}/00000000000000000000.log"   # the damaged file kept
    assert page.count(f"The first {ROW_LIMIT:,} of {n:,} rows") == 3
    assert "Every finding is in findings/ beside this page (Parquet)." in page
    assert "The accounting of every file is in files/ beside this page (Parquet)." in page
    info = tables["info"][1]
    assert info[1][0] == str(n) and page.count("<li>") >= 200 and f"… {n - 200} more" in page
