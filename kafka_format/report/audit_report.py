"""Audit's outputs: the HTML report and the published ``--out`` directory (``findings/`` and
``files/`` as Parquet, ``report.html``).

The checks are :mod:`kafka_format.log.audit.auditor`'s; this module only renders and publishes their rows.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_format.log.audit.auditor import ACCOUNTING_COLUMNS, REPORT_OWNER
from kafka_format.output.publish import crash_point
from kafka_format.output.store import output_dir
from kafka_format.report.audit_page import render_audit_page

__all__ = ["render_html", "write_outputs"]


def render_html(findings: Sequence[dict[str, Any]], files: Sequence[dict[str, Any]], *,
                title: str | None = None, now_ms: int | None = None, logdirs: Sequence[str] = ()) -> str:
    """The self-contained HTML report (:mod:`kafka_format.report.audit_page`): a summary, the
    problems first, informational findings folded one row per check, findings per broker and
    partition, and the byte accounting.  Every text is escaped."""
    return render_audit_page(findings, files, title=title, now_ms=now_ms, logdirs=logdirs)


def write_outputs(out: str, findings: Sequence[dict[str, Any]], files: Sequence[dict[str, Any]], *,
                  now_ms: int | None = None, logdirs: Sequence[str] = ()) -> None:
    """Publish ``out/findings/`` (Parquet), ``out/files/`` (Parquet) and ``out/report.html`` at once
    (:func:`kafka_format.output.publish.staging_dir`: a crash leaves the previous ``out`` or none).  ``out``
    must be absent, empty or a previous audit output (:data:`REPORT_OWNER`'s marker); ``now_ms`` and
    ``logdirs`` (shown as given, credentials redacted by the caller) head the page."""
    finding_schema = pa.schema([
        pa.field("severity", pa.string(), False), pa.field("check", pa.string(), False),
        pa.field("topic", pa.string()), pa.field("partition", pa.int32()), pa.field("file", pa.string()),
        pa.field("position", pa.int64()), pa.field("offset", pa.int64()), pa.field("expected", pa.string()),
        pa.field("actual", pa.string()), pa.field("message", pa.string(), False)])
    files_schema = pa.schema([
        pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
        pa.field("file", pa.string(), False),
        *(pa.field(c, pa.int64(), False) for c in ACCOUNTING_COLUMNS[3:])])
    with output_dir(out, REPORT_OWNER) as tmp:
        for name, rows, schema in (("findings", findings, finding_schema), ("files", files, files_schema)):
            os.mkdir(os.path.join(tmp, name))
            table = pa.Table.from_pylist([dict(r) for r in rows], schema=schema)
            pq.write_table(table, os.path.join(tmp, name, "part-00000.parquet"))
        with open(os.path.join(tmp, "report.html"), "w", encoding="utf-8") as fh:
            fh.write(render_html(findings, files, now_ms=now_ms, logdirs=logdirs))
        crash_point("audit-before-publish")
