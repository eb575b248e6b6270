"""Reading one ``.log`` for the audit: a PERMISSIVE streamed decode that keeps batch columns,
markers and offset pairs, and accounts for every byte (the rule ``klogs dump --json`` shares)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow as pa

from kafka_format.records.file_records import SkippedRange, decode_segment
from kafka_format.log.audit.model import (
    _CRC_REASON,
    _ZERO_CHUNK,
    MAX_PAIRS_PER_FILE,
    BatchColumns,
    FileAccounting,
    LogScan,
    Marker,
)
from kafka_format.common.errors import KafkaFormatError
from kafka_format.records.control import ControlRecordType, parse_control_key, parse_end_txn_marker

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


def _column(table: pa.Table, name: str, fill: int) -> np.ndarray:
    col = table.column(name)
    if col.null_count:
        col = col.fill_null(fill)
    return col.to_numpy().astype(np.int64)


def _batches_of(tables: list[pa.RecordBatch]) -> BatchColumns:
    if not tables:
        return BatchColumns.concat([])
    t = pa.Table.from_batches(tables)
    return BatchColumns(
        position=_column(t, "position", -1), size=_column(t, "size", 0), magic=_column(t, "magic", -1),
        base_offset=_column(t, "baseOffset", -1), last_offset=_column(t, "lastOffset", -1),
        count=_column(t, "count", -1), max_timestamp=_column(t, "maxTimestamp", -1),
        is_transactional=t.column("isTransactional").fill_null(False).to_numpy(zero_copy_only=False),
        is_control=t.column("isControl").fill_null(False).to_numpy(zero_copy_only=False),
        producer_id=_column(t, "producerId", -1), producer_epoch=_column(t, "producerEpoch", -1),
        base_sequence=_column(t, "baseSequence", -1), last_sequence=_column(t, "lastSequence", -1),
        leader_epoch=_column(t, "partitionLeaderEpoch", -1), crc=_column(t, "crc", -1),
        max_record_timestamp=np.full(t.num_rows, -1, np.int64))


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

    def add(self, rb: pa.RecordBatch) -> None:
        if rb.num_rows == 0:
            return
        offsets = rb.column("offset").to_numpy().astype(np.int64)
        positions = rb.column("position").to_numpy().astype(np.int64)
        ts_col = rb.column("timestamp").cast(pa.int64())
        ts = ts_col.fill_null(-1000).to_numpy() // 1000 if ts_col.null_count else ts_col.to_numpy() // 1000
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
        control = rb.column("isControl").to_numpy(zero_copy_only=False)
        for i in np.flatnonzero(control).tolist():
            self._marker(rb, i, int(offsets[i]), int(positions[i]), int(ts[i]))

    def _marker(self, rb: pa.RecordBatch, i: int, offset: int, position: int, ts: int) -> None:
        key = rb.column("key")[i].as_py()
        value = rb.column("value")[i].as_py()
        try:
            _version, kind = parse_control_key(key)
            if kind not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                return
            marker = parse_end_txn_marker(key, value)
        except KafkaFormatError:
            return
        pid = rb.column("producerId")[i].as_py()
        epoch = rb.column("producerEpoch")[i].as_py()
        self.markers.append(Marker(offset, position, -1 if pid is None else int(pid),
                                   -1 if epoch is None else int(epoch), kind == ControlRecordType.ABORT,
                                   marker.coordinator_epoch, ts))

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
    with _source(location, handle) as src:
        try:
            for rb in decode_segment(src, end=end, mode="PERMISSIVE", on_skip=raw.append,
                                     granularity="record", include_headers=False):
                facts.add(rb)
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
            tables: list[pa.RecordBatch] = []
            with _source(location, handle) as src:
                try:
                    tables.extend(decode_segment(src, start=lo, end=hi, granularity="batch"))
                except KafkaFormatError:
                    pass  # the rest of the range is accounted as skipped below
            cols = _batches_of(tables)
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
