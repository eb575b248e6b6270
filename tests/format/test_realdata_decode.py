"""Every non-empty ``.log`` written by a real broker (../shared/realdata) decodes with valid
CRCs and equals kafka-python's decode of the same file, record for record."""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow as pa
import pytest
from builders import DECODERS, aiokafka_records, arrow_records, comparable, kafka_python_records
from conftest import REALDATA, realdata_logs

from kafka_format.records.file_records import decode_file, decode_segment, iter_batches
from kafka_format.records.schema import RECORD_SCHEMA

LOGS = realdata_logs()

pytestmark = pytest.mark.realdata


def _id(path: Path) -> str:
    return str(path.relative_to(REALDATA))


@pytest.mark.parametrize("log", LOGS, ids=[_id(p) for p in LOGS])
def test_decodes_like_kafka_python_with_valid_crcs(realdata, log):
    data = log.read_bytes()
    headers = list(iter_batches(log))
    assert headers, "a non-empty real .log has batches"
    assert all(h.crc_valid for h in headers)
    # MANIFEST: no bytes after the last complete batch in any set; batches are contiguous.
    assert headers[-1].position + headers[-1].size == len(data)
    assert all(a.position + a.size == b.position for a, b in itertools.pairwise(headers))

    ours = arrow_records(list(decode_file(log)))
    assert comparable(ours) == kafka_python_records(data)
    partition_dir = log.parent.name
    if partition_dir.endswith(("-delete", "-future", "-stray")):  # LocalLog: strip from the last '.'
        partition_dir = partition_dir.rsplit(".", 1)[0]
    for row in ours[:1]:
        assert f"{row['topic']}-{row['partition']}" == partition_dir
        assert row["segment"] == int(log.stem)
        assert row["logDir"] == str(log.parent.parent)


def test_largest_file_equals_aiokafka_with_small_chunks(realdata):
    log = max(LOGS, key=lambda p: p.stat().st_size)
    ours = arrow_records(list(decode_segment(log, read_size=64 << 10)))
    assert comparable(ours) == aiokafka_records(log.read_bytes())


def test_batch_granularity_counts_match_records(realdata):
    log = next(p for p in LOGS if "orders-0" in str(p))
    batches = pa.Table.from_batches(list(decode_segment(log, granularity="batch")))
    records = sum(b.num_rows for b in decode_file(log))
    assert pa.compute.sum(batches.column("count")).as_py() == records


def _one_log_per_set(limit: int = 400_000) -> list[Path]:
    """Per realdata set, its largest .log under ``limit`` bytes (keeps the reference run short)."""
    best: dict[str, Path] = {}
    for p in LOGS:
        size = p.stat().st_size
        key = p.relative_to(REALDATA).parts[0]
        if size <= limit and (key not in best or size > best[key].stat().st_size):
            best[key] = p
    return sorted(best.values())


@pytest.mark.skipif(len(DECODERS) < 2, reason="compiled decoder not built")
@pytest.mark.parametrize("log", _one_log_per_set(), ids=[_id(p) for p in _one_log_per_set()])
def test_reference_and_compiled_decoders_agree(realdata, log):
    tables = [pa.Table.from_batches(list(decode_segment(log, decoder=d)), schema=RECORD_SCHEMA)
              for d in DECODERS]
    assert tables[0].num_rows > 0
    assert all(t.equals(tables[0]) for t in tables[1:])
