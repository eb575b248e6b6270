"""Audit checks of one segment's files: the ``.log`` bytes (CRC, skipped ranges, tails), its batch
offsets and range, the ``.index`` and the ``.timeindex`` (``DumpLogSegments`` ``--verify-index-only``
and ``--index-sanity-check`` and more)."""

from __future__ import annotations

import os
import struct

import numpy as np

from kafka_format.common.crc import crc32, crc32c
from kafka_format.common.errors import KafkaFormatError
from kafka_format.common.limits import INT32_MAX
from kafka_format.log.audit.model import (
    _INCOMPLETE_TAIL,
    _LEGACY_CRC_AT,
    _LEGACY_CRC_FROM,
    _V2,
    _V2_CRC,
    _V2_CRC_AT,
    _V2_CRC_FROM,
    ERROR,
    INFO,
    WARNING,
    LogScan,
    PartitionChecks,
)
from kafka_format.log.audit.scan import (
    _read_range,
)
from kafka_format.storage.index import OffsetIndex, TimeIndex
from kafka_format.storage.logdir import Segment


def _preallocated(index: OffsetIndex | TimeIndex) -> bool:
    """Entries that pass the reading rule, then zero slots only, to the end of a file of whole
    slots: the shape of an index the broker preallocated and has not trimmed."""
    return index.zero_tail and index.valid_entries < index.raw_entries and not index.anomalies


class SegmentChecks(PartitionChecks):
    """The per-segment checks of a replica's audit."""

    # -- bytes of one .log -------------------------------------------------------------------------
    def _log_findings(self, seg: Segment, scan: LogScan, active: bool) -> None:
        path = scan.path
        for r in scan.crc_failures:
            stored, computed = self._crc_pair(path, r.position)
            self.add(ERROR, "batch-crc", "stored CRC does not match the batch bytes", file=path,
                     position=r.position, expected=stored, actual=computed)
        for r in scan.skipped:
            at_end = r.position + r.length >= scan.size
            if at_end and (_INCOMPLETE_TAIL in r.reason or r.reason == "undecodable bytes"):
                # DumpLogSegments: "Found N invalid bytes at the end of <file>".  In the active
                # segment this is what a crash mid-write leaves (recovery truncates it).
                self.add(WARNING if active else ERROR, "invalid-bytes-at-end",
                         f"Found {r.length} invalid bytes at the end of {os.path.basename(path)}"
                         + (" (partial write of the active segment; the broker truncates it on recovery)"
                            if active else ""),
                         file=path, position=r.position, expected="0 bytes after the last batch",
                         actual=f"{r.length} bytes")
            else:
                self.add(ERROR, "skipped-bytes", f"{r.length} bytes skipped: {r.reason}", file=path,
                         position=r.position, expected="a valid batch", actual=f"{r.length} bytes")
        if self.deep and scan.non_consecutive_count:
            for a, b in scan.non_consecutive:
                self.add(INFO, "non-consecutive-offsets", f"{a} is followed by {b}", file=path, offset=b,
                         expected=a + 1, actual=b)
            if scan.non_consecutive_count > len(scan.non_consecutive):
                self.add(INFO, "non-consecutive-offsets",
                         f"{scan.non_consecutive_count - len(scan.non_consecutive)} more pairs not listed",
                         file=path)

    def _crc_pair(self, path: str, position: int) -> tuple[str | None, str | None]:
        try:
            head = _read_range(path, self.handle, position, 17)
            if len(head) < 17:
                return None, None
            size = struct.unpack_from(">i", head, 8)[0] + 12
            data = _read_range(path, self.handle, position, size)
            if len(data) < size:
                return None, None
            if head[16] >= _V2:
                return (f"crc {_V2_CRC.unpack_from(data, _V2_CRC_AT)[0]}",
                        f"crc {crc32c(memoryview(data)[_V2_CRC_FROM:])}")
            return (f"crc {_V2_CRC.unpack_from(data, _LEGACY_CRC_AT)[0]}",
                    f"crc {crc32(memoryview(data)[_LEGACY_CRC_FROM:])}")
        except (KafkaFormatError, OSError, struct.error):
            return None, None

    # -- batch ranges of one segment ---------------------------------------------------------------
    def _segment_findings(self, seg: Segment, scan: LogScan, i: int) -> None:
        b = scan.batches
        path = scan.path
        if not len(b):
            return
        base = seg.base_offset
        first = int(b.base_offset[0])
        if first < base:
            self.add(ERROR, "first-batch-below-segment-base",
                     "first batch starts below the offset in the file name", file=path,
                     position=int(b.position[0]), offset=first, expected=f">= {base}", actual=first)
        rel = b.last_offset - base
        for k in np.flatnonzero((rel < 0) | (rel > INT32_MAX))[:10].tolist():
            self.add(ERROR, "offset-overflow", "batch last offset does not fit the segment "
                     "(0 <= lastOffset - baseOffset(file) <= Int.MAX, LogSegment.recover)", file=path,
                     position=int(b.position[k]), offset=int(b.last_offset[k]),
                     expected=f"[{base}, {base + INT32_MAX}]", actual=int(b.last_offset[k]))
        for k in np.flatnonzero(b.last_offset < b.base_offset)[:10].tolist():
            self.add(ERROR, "batch-offsets", "lastOffset below baseOffset", file=path,
                     position=int(b.position[k]), offset=int(b.base_offset[k]),
                     expected=f"lastOffset >= {int(b.base_offset[k])}", actual=int(b.last_offset[k]))
        v2 = (b.magic == _V2) & (b.count >= 0)
        for k in np.flatnonzero(v2 & (b.count > b.last_offset - b.base_offset + 1))[:10].tolist():
            self.add(ERROR, "record-count", "more records than offsets the batch spans", file=path,
                     position=int(b.position[k]), offset=int(b.base_offset[k]),
                     expected=f"count <= {int(b.last_offset[k] - b.base_offset[k] + 1)}",
                     actual=int(b.count[k]))
        for k in (np.flatnonzero(b.base_offset[1:] <= b.last_offset[:-1]) + 1)[:10].tolist():
            self.add(ERROR, "offsets-not-increasing",
                     "batch starts at or below the previous batch's last offset",
                     file=path, position=int(b.position[k]), offset=int(b.base_offset[k]),
                     expected=f"> {int(b.last_offset[k - 1])}", actual=int(b.base_offset[k]))
        segs = self.r.segments
        if i + 1 < len(segs):
            nxt = segs[i + 1].base_offset
            last = int(b.last_offset[-1])
            if last >= nxt:
                self.add(ERROR, "segment-overlap", f"segment holds offsets up to {last}, the next segment "
                         f"starts at {nxt}", file=path, position=int(b.position[-1]), offset=last,
                         expected=f"< {nxt}", actual=last)

    # -- zero slots of the active segment's indexes ------------------------------------------------
    def _active_zero_tail(self, check: str, kind: str, path: str, index: OffsetIndex | TimeIndex,
                          sanity_check: str, sane: bool) -> None:
        """The zero slots after the entries of the newest segment's ``.index``/``.timeindex``.

        A running broker preallocates the active segment's indexes (``AbstractIndex``: the file is
        ``segment.index.bytes`` rounded down to whole slots, zero past the entries) and trims them
        when the segment rolls or the log closes.  Where the broker recovers the segment when it
        loads the log (:attr:`recovered_on_start`), it rebuilds both indexes from the ``.log``: the
        zero slots are the normal state of a live log, an info finding saying so (and that the
        broker's ``sanityCheck``, which reads the last slot, fails on the untrimmed file, as
        ``kafka-dump-log --index-sanity-check`` reports).  Where it does not (the log dir has
        ``.kafka_cleanshutdown``), the broker takes every slot for an entry: a warning.  Zero slots
        with data after them, or after entries that break the reading rule, are damage, reported by
        the entry checks; the info then only counts them."""
        at = index.valid_entries * index.ENTRY_SIZE
        slots = f"{index.raw_entries - index.valid_entries} zero slots"
        why = self.recovered_on_start
        if not _preallocated(index):
            self.add(INFO, check, "zero slots after the last valid entry (active segment)", file=path,
                     position=at, actual=slots)
        elif why is not None:
            failing = "" if sane else (f"; {sanity_check} (kafka-dump-log --index-sanity-check) fails on the "
                                       "untrimmed file, whose last slot is zero, but the broker does not run it "
                                       "on a segment it recovers")
            self.add(INFO, check, f"preallocated zero slots after the last entry: taken as the active segment of "
                     f"{why}; the broker rebuilds this {kind} from the .log{failing}", file=path, position=at,
                     actual=slots)
        else:
            self.add(WARNING, check, f"zero slots after the last entry of the active segment's {kind}, but the "
                     "log dir has .kafka_cleanshutdown: a broker that stops cleanly trims them "
                     "(AbstractIndex.close) and, starting without recovery, takes them for entries",
                     file=path, position=at,
                     expected=f"{index.valid_entries} entries, file of {at} bytes", actual=slots)

    # -- .index ------------------------------------------------------------------------------------
    def _offset_index(self, seg: Segment, scan: LogScan, active: bool) -> None:
        b = scan.batches
        if seg.index_path is None:
            if len(b):
                self.add(WARNING, "index-missing",
                         "segment has no .index (the broker rebuilds it on recovery)",
                         file=seg.log_path, offset=seg.base_offset)
            return
        path = seg.index_path
        try:
            oi = self.r.offset_index(seg)
        except KafkaFormatError as err:
            self.add(ERROR, "index-corrupt", err.reason, file=path, position=err.position,
                     expected=err.expected, actual=err.found)
            return
        assert oi is not None
        sanity = oi.sanity_check()
        rebuilt = active and _preallocated(oi) and self.recovered_on_start is not None
        if not sanity.ok and not rebuilt:
            self.add(WARNING if active else ERROR, "index-sanity", str(sanity.message), file=path,
                     expected="OffsetIndex.sanityCheck passes", actual="CorruptIndexException")
        if oi.zero_tail and oi.valid_entries < oi.raw_entries:
            at = oi.valid_entries * 8
            if active:
                self._active_zero_tail("index-zero-tail", "index", path, oi, "OffsetIndex.sanityCheck", sanity.ok)
            else:
                self.add(ERROR, "index-zero-tail", "zero slots in a closed segment's index (Kafka trims the "
                         "index when the segment rolls)", file=path, position=at,
                         expected=f"{oi.valid_entries} entries, file of {oi.valid_entries * 8} bytes",
                         actual=f"{oi.raw_entries - oi.valid_entries} zero slots")
        for a in oi.anomalies:
            check = {"offset_not_increasing": "index-order", "position_not_increasing": "index-order",
                     "bad_first_entry": "index-order", "data_after_zero_tail": "index-zero-tail",
                     "position_past_log_end": "index-offset-mismatch"}.get(a.what)
            if check is None:
                continue  # partial_entry: reported by the sanity check
            self.add(ERROR, check, f"offset index entry {a.entry}: {a.what.replace('_', ' ')}", file=path,
                     position=a.position, expected=a.expected, actual=a.found)
        # DumpLogSegments --verify-index-only: every slot up to the zero-tail stop
        rel = oi.raw["relative_offset"].astype(np.int64)
        pos = oi.raw["position"].astype(np.int64)
        stop = np.flatnonzero(rel[1:] == 0)
        n = int(stop[0]) + 1 if stop.size else rel.size
        if oi.zero_tail:  # zero slots are preallocation, not entries (DumpLogSegments would read slot 0)
            n = min(n, oi.valid_entries)
        positions = b.position
        for k in range(n):
            offset, position = seg.base_offset + int(rel[k]), int(pos[k])
            j = int(np.searchsorted(positions, position))
            if j >= len(b) or int(positions[j]) != position:
                self.add(ERROR, "index-offset-mismatch", "index entry does not point at a batch", file=path,
                         position=k * 8, offset=offset,
                         expected=f"a batch starting at log position {position}",
                         actual="no batch there")
                continue
            last = int(b.last_offset[j])
            if last == offset:
                continue
            later = b.last_offset[j:]
            if last < offset and bool((later == offset).any()):
                # pre-KAFKA-806 entry of a multi-batch append (follower fetch, cleaner): correct for lookup
                self.add(WARNING, "index-offset-mismatch", "entry carries the last offset of a multi-batch "
                         "append at its first batch (pre-KAFKA-806 index rule)", file=path, position=k * 8,
                         offset=offset, expected=f"log offset {offset}", actual=f"log offset {last}")
            else:
                self.add(ERROR, "index-offset-mismatch", f"Index offset: {offset}, log offset: {last}",
                         file=path, position=k * 8, offset=offset, expected=offset, actual=last)

    # -- .timeindex --------------------------------------------------------------------------------
    def _time_index(self, seg: Segment, scan: LogScan, active: bool) -> None:
        b = scan.batches
        has_ts = bool(len(b)) and bool((b.max_timestamp >= 0).any())
        if seg.timeindex_path is None:
            if has_ts:
                self.add(INFO, "timeindex-missing",
                         "segment has no .timeindex (the broker creates an empty one)",
                         file=seg.log_path, offset=seg.base_offset)
            return
        path = seg.timeindex_path
        try:
            ti = self.r.time_index(seg)
        except KafkaFormatError as err:
            self.add(ERROR, "index-corrupt", err.reason, file=path, position=err.position,
                     expected=err.expected, actual=err.found)
            return
        assert ti is not None
        sanity = ti.sanity_check()
        rebuilt = active and _preallocated(ti) and self.recovered_on_start is not None
        if not sanity.ok and not rebuilt:
            note = ""
            if active:
                note = (" (the broker rebuilds it on start)" if self.recovered_on_start is not None else
                        " (the log dir has .kafka_cleanshutdown: the broker starts without rebuilding it)")
            self.add(WARNING if active else ERROR, "index-sanity", str(sanity.message) + note, file=path,
                     expected="TimeIndex.sanityCheck passes", actual="CorruptIndexException")
        if ti.zero_tail and ti.valid_entries < ti.raw_entries:
            if active:
                self._active_zero_tail("timeindex-zero-tail", "time index", path, ti, "TimeIndex.sanityCheck",
                                       sanity.ok)
            else:
                self.add(ERROR, "timeindex-zero-tail", "zero slots in a closed segment's time index", file=path,
                         position=ti.valid_entries * 12, actual=f"{ti.raw_entries - ti.valid_entries} zero slots")
        for a in ti.anomalies:
            check = {"offset_decreasing": "timeindex-order", "negative_entry": "timeindex-order",
                     "data_after_zero_tail": "timeindex-zero-tail"}.get(a.what)
            if check is not None:
                self.add(ERROR, check, f"time index entry {a.entry}: {a.what.replace('_', ' ')}", file=path,
                         position=a.position, expected=a.expected, actual=a.found)
        ts_raw = ti.raw["timestamp"].astype(np.int64)
        rel = ti.raw["relative_offset"].astype(np.int64)
        stop = np.flatnonzero(rel[1:] == 0)
        n = int(stop[0]) + 1 if stop.size else rel.size
        if ti.zero_tail:
            n = min(n, ti.valid_entries)
        prev = -1
        record_ts = b.max_record_timestamp if self.deep else b.max_timestamp
        for k in range(n):
            ts, offset = int(ts_raw[k]), seg.base_offset + int(rel[k])
            j = int(np.searchsorted(b.last_offset, offset)) if len(b) else 0
            if j >= len(b):
                self.add(WARNING, "timeindex-offset-not-found", "indexed offset not found in the log",
                         file=path, position=k * 12, offset=offset, expected=offset, actual=-1)
            elif int(b.last_offset[j]) != offset:
                self.add(WARNING, "timeindex-offset-not-found", "indexed offset is not a batch's last offset "
                         "(record-level offsets were written before KAFKA-16310)", file=path, position=k * 12,
                         offset=offset, expected=offset, actual=int(b.last_offset[j]))
            else:
                log_ts = int(record_ts[j]) if int(record_ts[j]) >= 0 else int(b.max_timestamp[j])
                if log_ts != ts:
                    self.add(ERROR, "timeindex-timestamp-mismatch",
                             f"Index timestamp: {ts}, log timestamp: {log_ts}", file=path, position=k * 12,
                             offset=offset, expected=log_ts, actual=ts)
                if prev >= ts:
                    self.add(ERROR, "timeindex-out-of-order",
                             f"Index timestamp: {ts}, Previously indexed timestamp: {prev}", file=path,
                             position=k * 12, offset=offset, expected=f"> {prev}", actual=ts)
            prev = ts
        if not active and has_ts and ti.sanity_check().ok:
            seg_max = int(b.max_timestamp.max())
            last_ts = int(ts_raw[ti.valid_entries - 1]) if ti.valid_entries else -1
            if last_ts != seg_max:
                self.add(ERROR, "timeindex-last-entry",
                         "last time-index entry of a closed segment is not the "
                         "segment's max timestamp (TimeIndex final entry on roll)", file=path,
                         position=max(ti.valid_entries - 1, 0) * 12, expected=seg_max, actual=last_ts)
