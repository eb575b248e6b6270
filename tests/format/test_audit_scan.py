"""The audit's read of one ``.log`` (``kafka_format.log.audit.scan.scan_log``): one pass over a
file when nothing is skipped, a second (headers only) over the good ranges of a damaged one, and
the same batches and record facts either way.

Oracles, independent of the audit's columns:
* the batch view of ``decode_segment(granularity="batch")`` (Arrow, ``BATCH_SCHEMA``; a null
  is -1), the reader ``klogs dump`` and the data source share;
* the records of ``decode_segment`` (Arrow, ``RECORD_SCHEMA``), grouped by batch position in
  plain Python: a batch's largest record timestamp and smallest offset;
* the files are built from known batches: which ones are transaction markers, and their
  producer, epoch and coordinator epoch.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from kafka_format.log.audit import scan
from kafka_format.log.audit.model import BatchColumns
from kafka_format.log.audit.scan import scan_log
from kafka_format.records.file_records import batch_tables, decode_segment
from kafka_format.writer.batches import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    BuiltBatch,
    Record,
    build_control_batch,
    build_empty_batch,
    build_legacy_messages,
    build_legacy_wrapper,
    build_v2_batch,
)

TS = 1_700_000_000_000
KINDS = ("v2", "v2-transactional", "marker", "empty", "v0", "v1", "v0-wrapper", "v1-wrapper")
V2_CODECS = (CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)
LEGACY_CODECS = (CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4)


def mixed_entries(seed: int, count: int = 24) -> list[tuple[str, BuiltBatch]]:
    """``count`` runs of entries (kind, entry) of every kind (v2 with every codec and sequences near the int
    wrap, transactional batches, COMMIT/ABORT markers, empty batches, v0/v1 messages and compressed
    wrappers) at consecutive offsets; a marker's kind is ``marker:<coordinator epoch>``."""
    rng = random.Random(seed)
    out: list[tuple[str, BuiltBatch]] = []
    offset = 0
    for i in range(count):
        kind = KINDS[i % len(KINDS)] if i < len(KINDS) else rng.choice(KINDS)
        records = [Record(key=rng.randbytes(rng.randint(0, 8)) if rng.random() < 0.8 else None,
                          value=rng.randbytes(rng.randint(0, 60)) if rng.random() < 0.9 else None,
                          timestamp=TS + rng.randint(-5, 10_000)) for _ in range(rng.randint(1, 6))]
        if kind == "v2":
            built = [build_v2_batch(records, base_offset=offset, codec=rng.choice(V2_CODECS), producer_id=7,
                                    producer_epoch=1, base_sequence=rng.choice([-1, 0, 2**31 - 3]),
                                    partition_leader_epoch=3)]
        elif kind == "v2-transactional":
            built = [build_v2_batch(records, base_offset=offset, codec=rng.choice(V2_CODECS), producer_id=9,
                                    producer_epoch=2, base_sequence=i, transactional=True)]
        elif kind == "marker":
            built = [build_control_batch(rng.choice([0, 1]), base_offset=offset, timestamp=TS + i, producer_id=9,
                                         producer_epoch=2, coordinator_epoch=5 + i)]
        elif kind == "empty":
            built = [build_empty_batch(base_offset=offset, last_offset_delta=2, max_timestamp=TS + i, producer_id=7,
                                       producer_epoch=1, base_sequence=0)]
        elif kind in ("v0", "v1"):
            built = build_legacy_messages(records, magic=int(kind[1]), base_offset=offset)
        else:
            built = [build_legacy_wrapper(records, magic=int(kind[1]), base_offset=offset,
                                          codec=rng.choice(LEGACY_CODECS))]
        label = f"marker:{5 + i}" if kind == "marker" else kind    # with its coordinator epoch
        for b in built:
            out.append((label, b))
            offset = b.last_offset + 1
    return out


def write(path: Path, entries: list[tuple[str, BuiltBatch]]) -> Path:
    path.write_bytes(b"".join(b.data for _kind, b in entries))
    return path


ARROW_NAMES = {"position": "position", "size": "size", "magic": "magic", "base_offset": "baseOffset",
               "last_offset": "lastOffset", "count": "count", "max_timestamp": "maxTimestamp",
               "is_transactional": "isTransactional", "is_control": "isControl", "producer_id": "producerId",
               "producer_epoch": "producerEpoch", "base_sequence": "baseSequence",
               "last_sequence": "lastSequence", "leader_epoch": "partitionLeaderEpoch", "crc": "crc"}


def arrow_view(rb: pa.RecordBatch) -> dict[str, list[int]]:
    """One Arrow batch-view batch in the audit's column names, nulls as -1 (False for flags)."""
    out: dict[str, list[int]] = {}
    for ours, theirs in ARROW_NAMES.items():
        fill = 0 if ours.startswith("is_") else -1
        out[ours] = [fill if v is None else int(v) for v in rb.column(theirs).to_pylist()]
    return out


def arrow_batches(path: Path, start: int = 0, end: int | None = None) -> dict[str, np.ndarray]:
    """The batch view of the Arrow reader of ``[start, end)`` (:func:`arrow_view`)."""
    rows: dict[str, list[int]] = {k: [] for k in ARROW_NAMES}
    for rb in decode_segment(str(path), start=start, end=end, granularity="batch"):
        for name, values in arrow_view(rb).items():
            rows[name] += values
    return {k: np.array(v, dtype=np.int64) for k, v in rows.items()}


def record_facts(path: Path) -> dict[int, tuple[int, int]]:
    """Batch position -> (largest record timestamp in ms, smallest record offset)."""
    out: dict[int, tuple[int, int]] = {}
    for rb in decode_segment(str(path), include_headers=False):
        for pos, ts, off in zip(rb.column("position").to_pylist(), rb.column("timestamp").cast("int64").to_pylist(),
                                rb.column("offset").to_pylist(), strict=True):
            ms = -1 if ts is None else ts // 1000
            old = out.get(pos)
            out[pos] = (ms, off) if old is None else (max(old[0], ms), min(old[1], off))
    return out


def assert_batches(got: BatchColumns, path: Path, start: int = 0, end: int | None = None) -> None:
    """``got`` holds the Arrow reader's batches of ``[start, end)``; a base offset the header does
    not hold (a legacy wrapper's) is its records' smallest offset, as the audit fills it in."""
    want = arrow_batches(path, start, end)
    facts = record_facts(path)
    for name, values in want.items():
        if name != "base_offset":
            assert getattr(got, name).astype(np.int64).tolist() == values.tolist(), name
    positions = want["position"].tolist()
    assert got.base_offset.tolist() == [b if b >= 0 else facts[p][1]
                                        for p, b in zip(positions, want["base_offset"].tolist(), strict=True)]
    assert got.max_record_timestamp.tolist() == [facts[p][0] if p in facts else -1 for p in positions]


@pytest.fixture
def one_pass(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, int]]]:
    """The ranges the audit reads a second time (headers only), recorded."""
    again: list[tuple[int, int]] = []
    real = scan.header_pass

    def spy(location: str, handle: Any, **kw: Any) -> BatchColumns:
        again.append((kw["start"], kw["end"]))
        return real(location, handle, **kw)

    monkeypatch.setattr(scan, "header_pass", spy)
    yield again


@pytest.mark.parametrize("seed", range(6))
def test_a_clean_file_is_read_once_and_gives_every_batch(tmp_path: Path, seed: int,
                                                          one_pass: list[tuple[int, int]]) -> None:
    entries = mixed_entries(seed)
    path = write(tmp_path / "00000000000000000000.log", entries)
    got = scan_log(str(path))
    assert one_pass == []
    assert got.skipped == [] and got.accounting.valid_bytes == path.stat().st_size
    assert len(got.batches) == len(entries)
    assert_batches(got.batches, path)
    # a legacy wrapper: its own offset is the last one, its first inner offset the base
    for (kind, built), base, last, count in zip(entries, got.batches.base_offset.tolist(),
                                                 got.batches.last_offset.tolist(), got.batches.count.tolist(),
                                                 strict=True):
        assert (base, last) == (built.base_offset, built.last_offset), kind
        if kind.endswith("wrapper"):
            assert count == -1
    markers = [(b.base_offset, b.producer_id, b.producer_epoch, int(kind.split(":")[1]))
               for kind, b in entries if kind.startswith("marker")]
    assert markers
    assert [(m.offset, m.producer_id, m.producer_epoch, m.coordinator_epoch) for m in got.markers] == markers


@pytest.mark.parametrize("seed", range(4))
def test_a_damaged_file_rereads_its_good_ranges(tmp_path: Path, seed: int, one_pass: list[tuple[int, int]]) -> None:
    entries = mixed_entries(seed)
    data = bytearray(b"".join(b.data for _kind, b in entries))
    bad = len(entries) // 2
    at = sum(len(b.data) for _kind, b in entries[:bad])
    data[at + len(entries[bad][1].data) - 1] ^= 0xFF        # the last byte: inside the CRC'd region
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    got = scan_log(str(path))
    hole = (at, len(entries[bad][1].data))
    assert [(r.position, r.length) for r in got.skipped] == [hole]
    assert one_pass == [(0, at), (at + hole[1], len(data))]
    assert len(got.batches) == len(entries) - 1
    before = arrow_batches(path, 0, at)
    after = arrow_batches(path, at + hole[1])
    for name in before:
        if name != "base_offset":
            assert getattr(got.batches, name).tolist() == before[name].tolist() + after[name].tolist(), name
    assert got.batches.base_offset.tolist() == [b.base_offset for k, (_kind, b) in enumerate(entries) if k != bad]


@pytest.mark.parametrize("seed", range(3))
def test_a_limit_inside_a_batch_cuts_that_batch(tmp_path: Path, seed: int) -> None:
    entries = mixed_entries(seed)
    path = write(tmp_path / "00000000000000000000.log", entries)
    sizes = [len(b.data) for _kind, b in entries]
    limit = sum(sizes[:5]) + sizes[5] // 2
    got = scan_log(str(path), limit=limit)
    assert len(got.batches) == 5 and got.accounting.cut_bytes == sizes[5] // 2
    assert_batches(got.batches, path, 0, sum(sizes[:5]))


def test_mutated_files_give_the_arrow_readers_batches(tmp_path: Path) -> None:
    """Random damage (bit flips, zeroed runs, truncation, inserted junk): the batches the audit keeps
    are the Arrow batch reader's over the same good ranges, whichever pass read them."""
    rng = random.Random(11)
    base = b"".join(b.data for _kind, b in mixed_entries(99, 16))
    for i in range(60):
        data = bytearray(base)
        op = i % 4
        if op == 0:
            for _ in range(rng.randint(1, 3)):
                j = rng.randrange(len(data))
                data[j] ^= 1 << rng.randrange(8)
        elif op == 1:
            j = rng.randrange(len(data))
            data[j:j + 40] = bytes(len(data[j:j + 40]))
        elif op == 2:
            del data[rng.randrange(len(data)):]
        else:
            j = rng.randrange(len(data))
            data[j:j] = os.urandom(rng.randint(1, 30))
        path = tmp_path / f"{i:020d}.log"
        path.write_bytes(bytes(data))
        got = scan_log(str(path))
        stops = [r.position for r in got.skipped] + [len(data)]
        starts = [0] + [r.position + r.length for r in got.skipped]
        ranges = [(a, b) for a, b in zip(starts, stops, strict=True) if b > a]
        want: dict[str, list[int]] = {}
        for a, b in ranges:
            found = arrow_batches(path, a, b)
            inside = [k for k, (p, n) in enumerate(zip(found["position"].tolist(), found["size"].tolist(), strict=True))
                      if p + n <= b]
            for name, values in found.items():
                want.setdefault(name, []).extend(values[inside].tolist())
        for name, values in want.items():
            if name == "base_offset":   # a legacy wrapper's (-1 here) is filled from its records
                kept = [g for g, w in zip(got.batches.base_offset.tolist(), values, strict=True) if w >= 0]
                assert kept == [w for w in values if w >= 0], i
            else:
                assert getattr(got.batches, name).tolist() == values, (i, name)


def test_batch_columns_are_the_arrow_batch_view(tmp_path: Path) -> None:
    """``batch_columns`` (numpy, what the audit and its replica comparison keep) equals the Arrow
    batch reader's columns, nulls as -1, over intact and damaged files, legacy offsets included."""
    rng = random.Random(5)
    for i in range(40):
        entries = mixed_entries(200 + i, 12)
        data = bytearray(b"".join(b.data for _kind, b in entries))
        for _ in range(i % 3):
            j = rng.randrange(len(data))
            data[j] ^= 1 << rng.randrange(8)
        if i % 5 == 4:   # the v0 message's offset made negative (its CRC does not cover it)
            at = sum(len(b.data) for _kind, b in entries[:KINDS.index("v0")])
            assert entries[KINDS.index("v0")][0] == "v0"
            data[at:at + 8] = (-12345).to_bytes(8, "big", signed=True)
        path = tmp_path / f"{i:020d}.log"
        path.write_bytes(bytes(data))
        want: dict[str, list[int]] = {}
        for rb in decode_segment(str(path), granularity="batch", mode="PERMISSIVE"):
            for name, values in arrow_view(rb).items():
                want.setdefault(name, []).extend(values)
        got = BatchColumns.concat([scan.batch_columns(t) for t in batch_tables(str(path), mode="PERMISSIVE")])
        for name, values in want.items():
            assert getattr(got, name).astype(np.int64).tolist() == values, (i, name)
