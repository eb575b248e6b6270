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

from kafka_format.log.audit.tables import files_table, findings_table
from kafka_format.output.ownership import Owner
from kafka_format.output.publish import crash_point
from kafka_format.output.store import output_dir
from kafka_format.report.audit_page import render_audit_page

__all__ = ["REPORT_OWNER", "render_html", "write_outputs"]

REPORT_OWNER = Owner("audit", "report")            # the marker of an --out directory


def render_html(findings: pa.Table | Sequence[dict[str, Any]], files: pa.Table | Sequence[dict[str, Any]], *,
                title: str | None = None, now_ms: int | None = None, logdirs: Sequence[str] = ()) -> str:
    """The self-contained HTML report (:mod:`kafka_format.report.audit_page`): a summary, the
    problems first, informational findings folded one row per check, findings per broker and
    partition, and the byte accounting.  Every text is escaped."""
    return render_audit_page(findings, files, title=title, now_ms=now_ms, logdirs=logdirs)


def write_outputs(out: str, findings: pa.Table | Sequence[dict[str, Any]],
                  files: pa.Table | Sequence[dict[str, Any]], *,
                  now_ms: int | None = None, logdirs: Sequence[str] = ()) -> None:
    """Publish ``out/findings/`` (Parquet), ``out/files/`` (Parquet) and ``out/report.html`` at once
    (:func:`kafka_format.output.publish.staging_dir`: a crash leaves the previous ``out`` or none).  ``out``
    must be absent, empty or a previous audit output (:data:`REPORT_OWNER`'s marker); ``now_ms`` and
    ``logdirs`` (shown as given, credentials redacted by the caller) head the page.  The rows are
    written in their order (:mod:`kafka_format.log.audit.tables`: the engines sort them)."""
    findings, files = findings_table(findings), files_table(files)
    with output_dir(out, REPORT_OWNER) as tmp:
        for name, table in (("findings", findings), ("files", files)):
            os.mkdir(os.path.join(tmp, name))
            pq.write_table(table, os.path.join(tmp, name, "part-00000.parquet"))
        with open(os.path.join(tmp, "report.html"), "w", encoding="utf-8") as fh:
            fh.write(render_html(findings, files, now_ms=now_ms, logdirs=logdirs))
        crash_point("audit-before-publish")
