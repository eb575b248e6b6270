"""Reading one ``.log`` for the audit: a PERMISSIVE streamed decode that keeps batch columns,
markers and offset pairs, and accounts for every byte (the rule ``klogs dump --json`` shares).

One pass reads the records and their batch headers together, in numpy columns; only a file with
skipped ranges is read a second time, headers only, over the good ranges between them."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from kafka_format.common.errors import KafkaFormatError
from kafka_format.log.audit.model import (
    _CRC_REASON,
    _ZERO_CHUNK,
    MAX_PAIRS_PER_FILE,
    BatchColumns,
    FileAccounting,
    LogScan,
    Marker,
)
from kafka_format.records import batch_v2, framing
from kafka_format.records.assembly import MAX_TIMESTAMP_MS
from kafka_format.records.batch_table import BatchTable
from kafka_format.records.columns import RecordColumns
from kafka_format.records.control import ControlRecordType, parse_control_key, parse_end_txn_marker
from kafka_format.records.file_records import DecodedChunk, SkippedRange, batch_tables, decoded_chunks
from kafka_format.records.record_batch import CODEC_MASK, CONTROL_MASK, MAGIC_V2, TRANSACTIONAL_MASK

# ---------------------------------------------------------------------------------------------
# reading one .log


@contextmanager
def _source(location: str, handle: Any) -> Iterator[Any]:
    """A local path as is; another location as an open pyarrow file."""
    if handle is None or handle.is_local:
        yield handle.fs_path(location) if handle is not None else location
        return
    f = handle.open_input_file(handle.fs_path(location))
    try:
        yield f
    finally:
        f.close()


def _read_range(location: str, handle: Any, start: int, length: int) -> bytes:
    if handle is None:
        with open(location, "rb") as fh:
            fh.seek(start)
            return fh.read(length)
    return bytes(handle.read_range(handle.fs_path(location), start, length))


def _all_zero(location: str, handle: Any, start: int, end: int) -> bool:
    while start < end:
        chunk = _read_range(location, handle, start, min(_ZERO_CHUNK, end - start))
        if not chunk or chunk.count(0) != len(chunk):
            return False
        start += len(chunk)
    return True


def batch_columns(table: BatchTable, base: int = 0, rows: slice = slice(None),
                  data: bytes | memoryview | None = None) -> BatchColumns:
    """The audit's columns of the entries ``rows`` of a batch table whose positions are relative to
    file position ``base``: the headers as stored, without decompression, and -1 where
    ``BATCH_SCHEMA`` has a null (a legacy entry's negative offset is no base offset either).
    A record decoder sets a legacy compressed wrapper's offsets and count from its inner
    messages: ``data`` (the bytes the positions index) gives back the wrapper's own offset, and
    its ``base_offset`` and ``count`` are -1 (unknown) again."""
    if rows != slice(None):
        table = table.take(rows)
    v2 = table.magic == MAGIC_V2
    wrapper = ~v2 & ((table.attributes & CODEC_MASK) != 0)
    low = table.attributes & 0xFF
    last_offset = table.last_offset.astype(np.int64)
    if data is not None:
        for i in np.flatnonzero(wrapper).tolist():
            last_offset[i] = framing.ENTRY.unpack_from(data, int(table.position[i]))[0]

    def v2_only(values: np.ndarray) -> np.ndarray:
        return np.where(v2, values, -1).astype(np.int64)

    return BatchColumns(
        position=table.position.astype(np.int64) + np.int64(base), size=table.size.astype(np.int64),
        magic=table.magic.astype(np.int64),
        base_offset=np.where(wrapper | (~v2 & (table.base_offset < 0)), -1, table.base_offset).astype(np.int64),
        last_offset=last_offset,
        count=np.where(wrapper | (table.count < 0), -1, table.count).astype(np.int64),
        max_timestamp=table.max_timestamp.astype(np.int64),
        is_transactional=v2 & ((low & TRANSACTIONAL_MASK) != 0),
        is_control=v2 & ((low & CONTROL_MASK) != 0),
        producer_id=v2_only(table.producer_id), producer_epoch=v2_only(table.producer_epoch),
        base_sequence=v2_only(table.base_sequence), last_sequence=v2_only(batch_v2.last_sequences(table)),
        leader_epoch=v2_only(table.leader_epoch), crc=table.crc.astype(np.int64),
        max_record_timestamp=np.full(len(table), -1, np.int64))


class _RecordFacts:
    """Aggregates of the records pass, kept per batch (never per record)."""

    def __init__(self) -> None:
        self.positions: list[np.ndarray] = []
        self.max_ts: list[np.ndarray] = []
        self.min_offset: list[np.ndarray] = []
        self.last: int | None = None
        self.pairs: list[tuple[int, int]] = []
        self.pair_count = 0
        self.markers: list[Marker] = []

    def add(self, chunk: DecodedChunk) -> None:
        """The records of one piece of a chunk (``table`` positions relative to ``chunk.base``)."""
        columns, table = chunk.columns, chunk.table
        if len(columns) == 0:
            return
        rows = columns.batch_row.astype(np.intp)
        offsets = columns.offset.astype(np.int64)
        positions = table.position[rows] + np.int64(chunk.base)
        ms = columns.timestamp.astype(np.int64)
        ts = np.where((ms >= -MAX_TIMESTAMP_MS) & (ms <= MAX_TIMESTAMP_MS), ms, -1)  # the Arrow column's (null: -1)
        # DumpLogSegments (deep): any record offset != previous + 1, over the whole file
        prev = np.concatenate([[self.last if self.last is not None else -1], offsets[:-1]])
        bad = np.flatnonzero(prev + 1 != offsets)
        if self.last is None and bad.size and bad[0] == 0:
            bad = bad[1:]
        self.pair_count += int(bad.size)
        room = MAX_PAIRS_PER_FILE - len(self.pairs)
        for i in bad[:max(room, 0)].tolist():
            self.pairs.append((int(prev[i]), int(offsets[i])))
        self.last = int(offsets[-1])
        starts = np.concatenate([[0], np.flatnonzero(np.diff(positions)) + 1])
        self.positions.append(positions[starts])
        self.max_ts.append(np.maximum.reduceat(ts, starts))
        self.min_offset.append(np.minimum.reduceat(offsets, starts))
        control = (table.magic[rows] == MAGIC_V2) & ((table.attributes[rows] & CONTROL_MASK) != 0)
        for i in np.flatnonzero(control).tolist():
            self._marker(columns, table, i, int(offsets[i]), int(positions[i]), int(ts[i]))

    def _marker(self, columns: RecordColumns, table: BatchTable, i: int, offset: int, position: int,
                ts: int) -> None:
        key = _bytes_at(columns.key_offsets, columns.key_data, columns.key_valid, i)
        value = _bytes_at(columns.value_offsets, columns.value_data, columns.value_valid, i)
        try:
            _version, kind = parse_control_key(key)
            if kind not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                return
            marker = parse_end_txn_marker(key, value)
        except KafkaFormatError:
            return
        row = int(columns.batch_row[i])
        self.markers.append(Marker(offset, position, int(table.producer_id[row]), int(table.producer_epoch[row]),
                                   kind == ControlRecordType.ABORT, marker.coordinator_epoch, ts))

    def per_batch(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(batch position, max record timestamp, min record offset), one row per batch."""
        if not self.positions:
            e = np.empty(0, np.int64)
            return e, e, e
        pos = np.concatenate(self.positions)
        ts = np.concatenate(self.max_ts)
        off = np.concatenate(self.min_offset)
        starts = np.concatenate([[0], np.flatnonzero(np.diff(pos)) + 1])  # a batch split over slices
        return pos[starts], np.maximum.reduceat(ts, starts), np.minimum.reduceat(off, starts)


def _bytes_at(offsets: np.ndarray, data: np.ndarray, valid: np.ndarray, i: int) -> bytes | None:
    return bytes(data[int(offsets[i]):int(offsets[i + 1])]) if valid[i] else None


def merge_skipped_ranges(found: Iterable[SkippedRange], limit: int, path: str | None) -> list[SkippedRange]:
    """Skipped ranges sorted, cut at ``limit`` and merged where they overlap or touch (one rule for
    ``klogs dump --json`` and the audit: the reason of the first range of a merged run is kept)."""
    merged: list[SkippedRange] = []
    for r in sorted(found, key=lambda r: (r.position, r.length, r.reason)):
        end = min(r.position + r.length, limit)
        if merged and r.position <= merged[-1].position + merged[-1].length:
            last = merged[-1]
            stop = max(last.position + last.length, end)
            merged[-1] = SkippedRange(path, last.position, stop - last.position, last.reason)
        elif end > r.position:
            merged.append(SkippedRange(path, r.position, end - r.position, r.reason))
    return merged


def header_pass(location: str, handle: Any, *, start: int = 0, end: int | None = None, mode: str = "FAILFAST",
                intact_only: bool = False) -> BatchColumns:
    """The batches of ``[start, end)`` of a ``.log``, headers only (``batch_tables``; with
    ``intact_only`` those whose CRC holds).  A problem the mode raises ends the read: the batches
    before it are returned, and the caller accounts for the rest."""
    parts: list[BatchColumns] = []
    with _source(location, handle) as src:
        try:
            for table in batch_tables(src, start=start, end=end, mode=mode):
                parts.append(batch_columns(table.take(table.crc_valid) if intact_only else table))
        except KafkaFormatError:
            pass
    return BatchColumns.concat(parts)


def scan_log(location: str, *, filesystem: Any = None, topic: str | None = None,
             partition: int | None = None, limit: int | None = None) -> LogScan:
    """Read one ``.log`` (streamed) and account for every byte of ``[0, limit or size)``.

    ``filesystem`` is a :class:`kafka_format.storage.fsio.FileSystemHandle` for non-local locations.
    """
    handle = filesystem
    with _source(location, handle) as src:
        if isinstance(src, str):
            size = os.path.getsize(src)
        else:
            size = int(src.size())
    end = size if limit is None else min(limit, size)
    raw: list[SkippedRange] = []
    facts = _RecordFacts()
    seen: list[BatchColumns] = []   # the batches the records pass read
    with _source(location, handle) as src:
        try:
            for chunk in decoded_chunks(src, end=end, mode="PERMISSIVE", on_skip=raw.append, include_headers=False):
                facts.add(chunk)
                seen.append(batch_columns(chunk.table, chunk.base, slice(chunk.lo, chunk.hi), chunk.data))
        except KafkaFormatError as exc:  # PERMISSIVE should not raise; if it does, the rest is skipped
            at = max((r.position + r.length for r in raw), default=0)
            if exc.position is not None and at <= exc.position < end:
                at = exc.position
            if at < end:
                raw.append(SkippedRange(location, at, end - at, exc.reason))
    merged = merge_skipped_ranges(raw, end, location)
    # whole batches of the good ranges between skipped ranges (klogs dump --json's accounting)
    parts: list[BatchColumns] = []
    skipped: list[SkippedRange] = []
    valid = skipped_bytes = 0
    done = 0
    starts = [0] + [r.position + r.length for r in merged]
    stops = [r.position for r in merged] + [end]
    for i, (lo, hi) in enumerate(zip(starts, stops, strict=True)):
        if hi > lo:
            bound = end if hi >= end else hi
            # a records pass that skipped nothing read every batch of [0, end): no second read
            cols = BatchColumns.concat(seen) if not raw else header_pass(location, handle, start=lo, end=hi)
            keep = cols.position + cols.size <= bound
            if not keep.all():
                cut_at = int(np.argmin(keep))
                cols = cols.take(slice(0, cut_at))
            if len(cols):
                parts.append(cols)
                valid += int(cols.size.sum())
                done = int(cols.position[-1] + cols.size[-1])
        if i == len(merged):
            break
        r = merged[i]
        if done < r.position:
            skipped.append(SkippedRange(location, done, r.position - done, "undecodable bytes"))
            skipped_bytes += r.position - done
        skipped.append(r)
        skipped_bytes += r.length
        done = r.position + r.length
    zero_tail = cut = 0
    if done < end:
        if _all_zero(location, handle, done, end):
            zero_tail = end - done
        elif end < size:
            cut = end - done
        else:
            skipped.append(SkippedRange(location, done, end - done, "undecodable bytes"))
            skipped_bytes += end - done
    batches = BatchColumns.concat(parts)
    pos, max_ts, min_off = facts.per_batch()
    if len(batches) and pos.size:
        j = np.searchsorted(pos, batches.position)
        j = np.minimum(j, pos.size - 1)
        hit = pos[j] == batches.position
        batches.max_record_timestamp = np.where(hit, max_ts[j], -1)
        unknown = batches.base_offset < 0
        batches.base_offset = np.where(unknown & hit, min_off[j], batches.base_offset)
    unknown = batches.base_offset < 0
    batches.base_offset = np.where(unknown, batches.last_offset, batches.base_offset)
    accounting = FileAccounting(topic, partition, location, end, valid, skipped_bytes, zero_tail, cut,
                                len(batches))
    return LogScan(location, end, batches, skipped, [r for r in raw if r.reason == _CRC_REASON], accounting,
                   facts.markers, facts.pairs, facts.pair_count)
