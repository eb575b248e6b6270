"""The reference pages name everything a user can set or read: every option of the data source and
every column it yields (docs/datasource.md), every flag of each job and every column of its outputs
(docs/jobs/<job>.md, common flags on docs/jobs/index.md).  A new option, flag or column without its
documentation fails here."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from kafka_format.cli.reference import command_parsers

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def _page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_every_data_source_option_and_column_is_documented() -> None:
    from kafka_format.read.options import KNOWN_OPTIONS
    from kafka_format.read.split_reader import CORRUPT_COLUMN
    from kafka_format.records.schema import BATCH_SCHEMA, RECORD_SCHEMA, TIER_FIELD

    page = _page("datasource.md")
    missing = [o for o in KNOWN_OPTIONS.values() if f"`{o}`" not in page and f'.option("{o}"' not in page]
    missing += [c for c in (*RECORD_SCHEMA.names, *BATCH_SCHEMA.names, TIER_FIELD.name, CORRUPT_COLUMN) if f"`{c}`" not in page]
    assert missing == []


def _output_columns() -> dict[str, tuple[str, ...]]:
    from kafka_format.engine.compaction import DECISION_FIELDS, SUMMARY_SCHEMA
    from kafka_format.engine.groups import ANOMALY_SCHEMA
    from kafka_format.engine.groups import COLUMNS as GROUP_COLUMNS
    from kafka_format.engine.offsets import COLUMNS as OFFSET_COLUMNS
    from kafka_format.engine.table_view import FULL_SUMMARY_COLUMNS
    from kafka_format.log.audit.auditor import ACCOUNTING_COLUMNS, FINDING_COLUMNS
    from kafka_format.log.retention import SEGMENT_FIELDS

    return {
        "offsets": OFFSET_COLUMNS,
        "retention": tuple(SEGMENT_FIELDS),
        "compaction": (*SUMMARY_SCHEMA.names, *FULL_SUMMARY_COLUMNS, *(f.name for f in DECISION_FIELDS)),
        "audit": (*FINDING_COLUMNS, *ACCOUNTING_COLUMNS),
        "groups": (*GROUP_COLUMNS, *ANOMALY_SCHEMA.names),
    }


@pytest.mark.parametrize("job", ["offsets", "retention", "compaction", "audit", "export", "groups", "schemas",
                                 "dump"])
def test_every_flag_of_a_job_is_on_its_page(job: str) -> None:
    parsers = {name: parser for name, _, parser in command_parsers()}
    page = _page(f"jobs/{job}.md")
    common = _page("jobs/index.md")
    flags = [f for a in parsers[job]._actions if not isinstance(a, argparse._HelpAction)
             for f in a.option_strings if f.startswith("--")]
    assert flags and [f for f in flags if not _names(f, page) and not _names(f, common)] == []


def _names(flag: str, text: str) -> bool:
    return re.search(re.escape(flag) + r"(?![\w-])", text) is not None


@pytest.mark.parametrize("job", ["offsets", "retention", "compaction", "audit", "groups"])
def test_every_output_column_of_a_job_is_on_its_page(job: str) -> None:
    page = _page(f"jobs/{job}.md")
    assert [c for c in _output_columns()[job] if f"`{c}`" not in page] == []


def test_every_field_of_the_export_result_is_on_its_page() -> None:
    """The JSON object ``klogs export`` prints: every key, and every key of a skipped range."""
    from kafka_format.engine.export import ExportResult
    from kafka_format.records.schema import CORRUPT_TYPE

    page = _page("jobs/export.md")
    keys = ExportResult(out="o", format="parquet", partition_by=("topic",), typed={}).to_json()
    ranges = [CORRUPT_TYPE.field(i).name for i in range(CORRUPT_TYPE.num_fields)]
    assert [k for k in keys if f"`{k}`" not in page] == []
    assert [k for k in ranges if f'"{k}"' not in page] == []
