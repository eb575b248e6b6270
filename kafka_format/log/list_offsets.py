"""Offset for timestamp offline: Kafka's ListOffsets answer from index files.

:func:`list_offsets` answers what a broker holding ``replica`` would answer a client's
ListOffsets request (latest request version) for one partition and one timestamp spec:

* ``spec >= 0`` (``UnifiedLog.searchOffsetInLocalLog`` → ``LogSegment.findOffsetByTimestamp`` →
  ``FileRecords.searchForTimestamp``): the first segment (offset order) whose
  ``largestTimestamp >= spec`` (time-index last entry; the active segment scanned from its last
  index entry, as the broker keeps that value in memory; the ``.log`` mtime when no timestamp is
  known); in it, time-index lookup, offset-index lookup of ``max(O, logStartOffset)``, then the
  first batch with ``maxTimestamp >= spec`` holding a record with ``timestamp >= spec`` and
  ``offset >= logStartOffset``.  Later segments are never tried.  Epoch: the batch's
  ``partitionLeaderEpoch``, none when it is -1 (``FileRecords.maybeLeaderEpoch``).
* ``-1`` LATEST (``Partition.fetchOffsetForTimestamp``): the last fetchable offset (HW for
  read_uncommitted, LSO for read_committed), epoch = the partition's current leader epoch
  (offline: the last ``leader-epoch-checkpoint`` entry).
* ``-2`` EARLIEST, and ``-4`` EARLIEST_LOCAL without tiered storage: ``logStartOffset``; epoch of
  the earliest epoch-cache entry if its start <= logStartOffset (``UnifiedLog.fetchOffsetByTimestamp``;
  the cache is ``truncateFromStart(logStartOffset)``-ed on load, so that is the last checkpoint
  entry starting at or before logStartOffset).  Not filtered by HW/LSO.
* ``-3`` MAX_TIMESTAMP: the segment with the greatest ``maxTimestampSoFar`` (first on ties, no
  mtime fallback); from the offset-index position of its offset, the first batch whose
  ``maxTimestamp`` equals it, and in it the first record with that timestamp
  (``RecordBatch.offsetOfMaxTimestamp``: none for magic 0 or an empty batch).  Epoch: the batch's
  epoch when >= 0.
* ``-5`` LATEST_TIERED, ``-6`` EARLIEST_PENDING_UPLOAD: without remote storage offset -1, epoch -1
  (Kafka's answer for a partition without remote storage).
* A tiered replica (:class:`TieredOffsets`, from its remote log metadata; ``UnifiedLog`` with
  ``remoteLogEnabled()``): ``-2`` is the log start as checkpointed (``LogLoader`` keeps a remote
  log's checkpointed start, below its first local segment), epoch of the earliest epoch entry if
  its start <= it; ``-4`` the local log start (``max(logStartOffset, first segment base)``), epoch
  ``epochForOffset`` of it; ``-5`` ``highestOffsetInRemoteStorage`` (-1: nothing copied, epoch -1),
  epoch ``epochForOffset`` of it; ``-6`` the first offset not yet copied, ``max(highest + 1,
  logStartOffset)`` (nothing copied: the ``-2`` answer when the local log starts at the log start,
  else -1), epoch ``epochForOffset`` of it.  A timestamp is searched in the remote tier first
  (``RemoteLogManager.findOffsetByTimestamp``): the first copied segment, in leader epoch order from
  the epoch of the log start, whose max timestamp reaches it and whose end offset reaches the log
  start; it is searched in its remote files (time index, offset index, batches, as a local segment)
  when it starts below the first local segment, else in the local log; no answer there: the local
  log from its local log start.  A remote segment whose files are not given is a
  :class:`~kafka_format.common.errors.LogDirError`, never the local log's answer.
* ``ReplicaManager.fetchOffset`` then hides answers with ``offset >= lastFetchableOffset`` for every
  spec except -1/-2/-4 (answer: timestamp -1, offset -1).

An answer is an :class:`OffsetAnswer` with ``None`` where Kafka sends -1.

Index-only reads: per lookup, index files are read by positioned single-entry
reads (binary search; the zero-tail reading rule of :mod:`kafka_format.storage.index`), one last-entry
read per segment for its largest timestamp, batch *headers* of at most about one index interval
of ``.log`` and the one batch holding the answer.  The scan starts where Kafka's does, or later
where the time index proves that the skipped batches are all older than the target (see
:meth:`PartitionLookup._scan_start`); the answer is Kafka's either way.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kafka_format.common.errors import IndexFormatError, KafkaFormatError, LogDirError
from kafka_format.records.record_batch import NO_PARTITION_LEADER_EPOCH, NO_TIMESTAMP
from kafka_format.storage import fsio
from kafka_format.storage.index import OFFSET_ENTRY, TIME_ENTRY, OffsetPosition, TimestampOffset
from kafka_format.storage.logdir import PartitionLog, Segment
from kafka_format.storage.partition_files import SegmentTable
from kafka_format.storage.partition_log import REMOTE_KIND
from kafka_format.storage.partition_state import (
    SCAN_CHUNK,
    BatchHead,
    high_watermark,
    last_stable_offset,
    next_offset_after,
    walk_batch_heads,
)

__all__ = [
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_PENDING_UPLOAD_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "ISOLATION_LEVELS",
    "LATEST_TIERED_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "SPEC_NAMES",
    "OffsetAnswer",
    "OffsetLocation",
    "PartitionLookup",
    "TieredOffsets",
    "TimestampLocation",
    "list_offsets",
    "parse_timestamp_spec",
]

# ListOffsetsRequest.java
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6

SPEC_NAMES: dict[str, int] = {
    "latest": LATEST_TIMESTAMP,
    "earliest": EARLIEST_TIMESTAMP,
    "max-timestamp": MAX_TIMESTAMP,
    "earliest-local": EARLIEST_LOCAL_TIMESTAMP,
    "latest-tiered": LATEST_TIERED_TIMESTAMP,
    "earliest-pending-upload": EARLIEST_PENDING_UPLOAD_TIMESTAMP,
}
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")

_INT = re.compile(r"[+-]?[0-9]+")
_SCAN_CHUNK = SCAN_CHUNK          # read size of a full header scan of a segment without a .index
_DECODED_KEPT = 16                # decoded batches a PartitionLookup keeps

Opener = Callable[[str], Any]     # location -> file with read_at(n, offset) (pyarrow NativeFile-like)


def parse_timestamp_spec(text: str | int) -> int:
    """A ``--timestamp`` value: a name of :data:`SPEC_NAMES`, Kafka's numeric -1..-6, or a time
    (ms since the epoch or ISO-8601) as :func:`kafka_format.log.topicconfig.parse_time` reads every
    time flag.  ValueError otherwise."""
    from kafka_format.log.topicconfig import parse_time

    if isinstance(text, str) and text.strip().lower() in SPEC_NAMES:
        return SPEC_NAMES[text.strip().lower()]
    number = isinstance(text, int) or bool(_INT.fullmatch(text.strip()))
    try:
        value = parse_time(text)
    except ValueError as exc:
        if number:                  # outside Java's long: the message every time flag gives
            raise
        names = ", ".join(SPEC_NAMES)
        raise ValueError(f"bad timestamp {text!r}: expected ms, ISO-8601, {names} or -1..-6") from exc
    if value < 0 and not number:
        raise ValueError(f"bad timestamp {text!r}: before the epoch (a negative time is one of Kafka's "
                         "special values -1..-6, given by name or number)")
    if value < EARLIEST_PENDING_UPLOAD_TIMESTAMP:
        raise ValueError(f"bad timestamp {text!r}: Kafka answers UNSUPPORTED_VERSION for negative "
                         "values other than -1..-6")
    return value


@dataclass(frozen=True)
class OffsetAnswer:
    """One ListOffsets answer; ``None`` where Kafka sends -1 (no offset / no timestamp / no epoch)."""

    timestamp: int                  # the requested spec (ms, or the negative special value)
    offset: int | None
    record_timestamp: int | None
    leader_epoch: int | None


@dataclass(frozen=True)
class OffsetLocation:
    """Where an offset is read from (:meth:`PartitionLookup.locate_offset`): the segment's index in
    the replica, the file position, size and base offset of the batch holding it, and the timestamp of
    the first record at or above it (None for magic 0, or a batch whose records end below it)."""

    segment: int
    position: int
    size: int
    batch_base_offset: int
    timestamp: int | None


@dataclass(frozen=True)
class RemoteCandidate:
    """A copied segment ``RemoteLogManager.findOffsetByTimestamp`` may search: ``COPY_SEGMENT_FINISHED``
    and within the replica's leader epoch lineage.  ``segment``: its remote files as a segment
    (:meth:`kafka_format.storage.remote_tier.RemoteFileset.segment`), None when the remote storage was
    not given or lacks them."""

    start_offset: int
    end_offset: int
    max_timestamp: int
    segment_id: str
    segment: Segment | None = None


@dataclass(frozen=True)
class TieredOffsets:
    """What a tiered replica's remote log metadata tells ListOffsets: ``log_start_offset`` (the
    replica's log start with the remote tier: :func:`kafka_format.storage.tiered_history.tiered_log_start`),
    ``highest_remote_offset``, ``highestOffsetInRemoteStorage`` as
    ``RemoteLogManager.findHighestRemoteOffset`` finds it (-1: nothing copied), and ``candidates``,
    the copied segments in the order ``findOffsetByTimestamp`` lists them (leader epochs from the one
    of the log start on, each epoch's ``listRemoteLogSegments``)."""

    log_start_offset: int
    highest_remote_offset: int
    candidates: tuple[RemoteCandidate, ...] = ()

    def remote_choice(self, target: int) -> RemoteCandidate | None:
        """The segment ``RemoteLogManager.findOffsetByTimestamp`` searches for ``target``: the first
        candidate whose max timestamp reaches it and whose end offset reaches the log start."""
        return next((c for c in self.candidates
                     if c.max_timestamp >= target and c.end_offset >= self.log_start_offset), None)


@dataclass(frozen=True)
class TimestampLocation:
    """Where :meth:`PartitionLookup.locate_timestamp` found Kafka's answer: the batch and the record."""

    segment_index: int
    position: int
    size: int
    base_offset: int
    last_offset: int
    offset: int
    timestamp: int
    leader_epoch: int | None


@dataclass(frozen=True)
class _Found:
    """``FileRecords.TimestampAndOffset`` before the client filter."""

    timestamp: int
    offset: int
    leader_epoch: int | None


class _Index:
    """Positioned single-entry reads of one ``.index``/``.timeindex`` (valid prefix by the
    zero-tail reading rule: an entry at i > 0 with relative offset 0, or an all-zero entry 0,
    ends the data)."""

    def __init__(self, file: Any, base_offset: int, size: int, kind: str, path: str | None = None) -> None:
        self.file = file
        self.path = path
        self.base = base_offset
        self.kind = kind
        self.struct = OFFSET_ENTRY if kind == "offset" else TIME_ENTRY
        self.slots = size // self.struct.size
        self._end: int | None = None
        self._cache: dict[int, tuple[int, int]] = {}

    def _raw(self, i: int) -> tuple[int, int]:
        hit = self._cache.get(i)
        if hit is not None:
            return hit
        width = self.struct.size
        data = self.file.read_at(width, i * width)
        if len(data) != width:
            raise IndexFormatError("short read in index", path=self.path, position=i * width,
                                   expected=f"{width} bytes", found=f"{len(data)} bytes")
        a, b = self.struct.unpack(data)
        self._cache[i] = (a, b)
        return a, b

    def _rel(self, i: int) -> int:
        a, b = self._raw(i)
        return a if self.kind == "offset" else b

    def _is_end(self, i: int) -> bool:
        return self._raw(i) == (0, 0) if i == 0 else self._rel(i) == 0

    def end(self) -> int:
        """Valid entries: the last slot when it is real (a trimmed index), else a binary search for
        the zero tail."""
        if self._end is None:
            n = self.slots
            if n == 0 or self._is_end(0):
                self._end = 0
            elif not self._is_end(n - 1):
                self._end = n
            else:
                lo, hi = 1, n - 1          # first end slot lies in [lo, hi]
                while lo < hi:
                    mid = (lo + hi) // 2
                    if self._is_end(mid):
                        hi = mid
                    else:
                        lo = mid + 1
                self._end = lo
        return self._end

    def key(self, i: int) -> int:
        a, _b = self._raw(i)
        return self.base + a if self.kind == "offset" else a

    def entry(self, i: int) -> OffsetPosition | TimestampOffset:
        a, b = self._raw(i)
        if self.kind == "offset":
            return OffsetPosition(self.base + a, b)
        return TimestampOffset(a, self.base + b)

    def floor(self, target: int) -> int:
        """Slot of the greatest valid entry with key <= target, -1 if none (``AbstractIndex`` lookup)."""
        lo, hi, found = 0, self.end() - 1, -1
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.key(mid) <= target:
                found, lo = mid, mid + 1
            else:
                hi = mid - 1
        return found


class _EmptyIndex(_Index):
    def __init__(self, base_offset: int, kind: str) -> None:
        super().__init__(None, base_offset, 0, kind)


@dataclass
class _SegmentReader:
    """The files of one replica's segments as a lookup reads them: open files, index slots, batch
    headers (:func:`kafka_format.storage.partition_state.walk_batch_heads`) and the records of single batches,
    each kept between lookups."""

    replica: PartitionLog
    opener: Opener | None
    strict: bool
    _files: dict[str, Any] = field(default_factory=dict)
    _indexes: dict[tuple[int, str], _Index] = field(default_factory=dict)
    _tails: dict[int, list[BatchHead]] = field(default_factory=dict)
    _unindexed: dict[int, tuple[list[BatchHead], list[int]]] = field(default_factory=dict)
    _decoded: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()

    def open(self, location: str) -> Any:
        f = self._files.get(location)
        if f is None:
            if self.opener is not None:
                f = self.opener(location)
            else:
                h = self.replica.filesystem
                f = h.open_input_file(h.fs_path(location))
            self._files[location] = f
        return f

    def index(self, i: int, kind: str) -> _Index:
        key = (i, kind)
        idx = self._indexes.get(key)
        if idx is None:
            seg = self.replica.segments[i]
            path, size = ((seg.index_path, seg.index_size) if kind == "offset"
                          else (seg.timeindex_path, seg.timeindex_size))
            if path is None or not size:
                idx = _EmptyIndex(seg.base_offset, kind)
            else:
                idx = _Index(self.open(path), seg.base_offset, size, kind, path)
            self._indexes[key] = idx
        return idx

    def offset_lookup(self, i: int, target: int) -> int:
        """``OffsetIndex.lookup(target).position`` (0 when no entry <= target)."""
        idx = self.index(i, "offset")
        slot = idx.floor(target)
        return 0 if slot < 0 else int(idx.entry(slot)[1])

    def heads(self, seg: Segment, start: int) -> Iterator[BatchHead]:
        """Batch headers of ``seg`` from ``start`` (a batch boundary) to its end, reading only header
        bytes; stops where ``FileLogInputStream.nextBatch`` stops (< 17 bytes left, a size running
        past the file) and at an all-zero size field (preallocated tail).

        A segment without a ``.index`` file is one the broker would recover (rebuilding its
        indexes from a full scan, ``LogSegment.recover``): its headers are read once, in large
        chunks, and kept for later lookups (the rebuilt index gives the same answers as a scan)."""
        if seg.log_path is None or not seg.log_size:
            return
        if seg.index_path is None:
            cached = self._unindexed.get(seg.base_offset)
            if cached is None:
                heads = list(self._read_heads(seg, 0, _SCAN_CHUNK))
                cached = self._unindexed[seg.base_offset] = (heads, [h.position for h in heads])
            heads, positions = cached
            yield from itertools.islice(heads, bisect.bisect_left(positions, start), None)
            return
        yield from self._read_heads(seg, start, 0)

    def _read_heads(self, seg: Segment, start: int, chunk: int) -> Iterator[BatchHead]:
        """Header walk (:func:`kafka_format.storage.partition_state.walk_batch_heads`) over this lookup's open
        file: one positioned read per header, or ``chunk``-byte windows."""
        f = self.open(seg.log_path or "")
        yield from walk_batch_heads(f.read_at, start, int(seg.log_size or 0), path=seg.log_path, chunk=chunk,
                                    strict=self.strict)

    def records(self, seg: Segment, head: BatchHead) -> tuple[np.ndarray, np.ndarray]:
        """(offsets, timestamps in ms) of the records of one batch, decoded from its bytes alone
        (the last few batches are kept: lookups of near timestamps land in the same batch)."""
        key = (seg.base_offset, head.position)
        hit = self._decoded.get(key)
        if hit is None:
            hit = self._decode(seg, head)
            if len(self._decoded) >= _DECODED_KEPT:
                self._decoded.pop(next(iter(self._decoded)))
            self._decoded[key] = hit
        return hit

    def _decode(self, seg: Segment, head: BatchHead) -> tuple[np.ndarray, np.ndarray]:
        from kafka_format.records.file_records import decode_bytes

        data = self.open(seg.log_path or "").read_at(head.size, head.position)
        offsets: list[np.ndarray] = []
        stamps: list[np.ndarray] = []
        try:
            for rb in decode_bytes(bytes(data), verify_crc=False):   # Kafka's read path skips CRCs
                offsets.append(rb.column("offset").to_numpy(zero_copy_only=False).astype(np.int64))
                us = rb.column("timestamp").cast("int64").fill_null(-1000)
                stamps.append(us.to_numpy(zero_copy_only=False) // 1000)
        except KafkaFormatError as err:        # report at the file position of the batch
            raise type(err)(err.reason, path=seg.log_path, position=head.position, expected=err.expected,
                            found=err.found) from err
        if not offsets:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        return np.concatenate(offsets), np.concatenate(stamps)

    def tail(self, i: int) -> list[BatchHead]:
        """Batch headers of segment ``i`` from its last offset-index entry to its end (cached)."""
        tail = self._tails.get(i)
        if tail is None:
            seg = self.replica.segments[i]
            oidx = self.index(i, "offset")
            m = oidx.end()
            start = int(oidx.entry(m - 1)[1]) if m else 0
            if start >= (seg.log_size or 0):
                start = 0
            tail = self._tails[i] = list(self.heads(seg, start))
        return tail


@dataclass
class PartitionLookup:
    """ListOffsets over one replica, with per-segment values cached between lookups.

    ``opener(location)`` opens a file for positioned reads (default: the replica's filesystem);
    files stay open until :meth:`close`.  ``high_watermark_override`` replaces the
    ``replication-offset-checkpoint`` value; when neither is known the log end offset is used
    (noted in :attr:`notes`).  ``strict=False`` ends a segment's batches at corrupt framing (as
    recovery truncates) instead of raising :class:`~kafka_format.common.errors.CorruptRecordError`.
    """

    replica: PartitionLog
    opener: Opener | None = None
    high_watermark_override: int | None = None
    strict: bool = True
    tiered: TieredOffsets | None = None
    notes: list[str] = field(default_factory=list)
    _max_ts: dict[int, TimestampOffset] = field(default_factory=dict, repr=False)
    _leo: int | None = field(default=None, repr=False)
    _lso: int | None = field(default=None, repr=False)
    _reader: _SegmentReader = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._reader = _SegmentReader(self.replica, self.opener, self.strict)

    def __enter__(self) -> PartitionLookup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._reader.close()

    def max_timestamp_so_far(self, i: int) -> TimestampOffset:
        """``LogSegment.readMaxTimestampAndOffsetSoFar``: the time index's last entry; where the broker
        holds the value in memory (see below) the greater of that entry and the batch maxima from the
        last offset-index entry on (``readLargestTimestamp`` / ``recover``).  A missing ``.timeindex``
        beside an existing ``.index`` is created empty by the broker (``LogSegment`` constructor):
        no timestamp, so ``largestTimestamp`` falls back to the mtime."""
        hit = self._max_ts.get(i)
        if hit is not None:
            return hit
        seg = self.replica.segments[i]
        tidx = self._reader.index(i, "time")
        n = tidx.end()
        best = TimestampOffset(NO_TIMESTAMP, seg.base_offset)
        if n:
            last = tidx.entry(n - 1)
            assert isinstance(last, TimestampOffset)     # a time index's entries
            best = last
        active = i == len(self.replica.segments) - 1
        # in memory on a running broker / after recovery: the active segment, a segment whose time
        # index was not trimmed (crash), a segment without .index (recovered, indexes rebuilt)
        if active or n < tidx.slots or seg.index_path is None:
            ts, off = int(best.timestamp), int(best.offset)
            for head in self._reader.tail(i):
                if head.max_timestamp > ts:
                    ts, off = head.max_timestamp, head.last_offset
            best = TimestampOffset(ts, off)
        self._max_ts[i] = TimestampOffset(int(best[0]), int(best[1]))
        return self._max_ts[i]

    def largest_timestamp(self, i: int) -> int:
        """``LogSegment.largestTimestamp``: max timestamp so far if >= 0, else the ``.log`` mtime."""
        ts = self.max_timestamp_so_far(i).timestamp
        if ts >= 0:
            return ts
        mtime = self.replica.segments[i].log_mtime_ms
        return mtime if mtime is not None else NO_TIMESTAMP

    def log_end_offset(self) -> int:
        """``LogSegment.readNextOffset`` of the last segment: from its last offset-index entry, the
        last complete batch's ``lastOffset + 1``, else its base offset."""
        if self._leo is None:
            segs = self.replica.segments
            if not segs:
                self._leo = self.replica.log_start_offset
            else:
                tail = self._reader.tail(len(segs) - 1)
                self._leo = next_offset_after(tail, segs[-1].base_offset)
        return self._leo

    def high_watermark(self) -> int:
        """HW as the broker loads it: the checkpoint value bounded to [logStartOffset, LEO]
        (``UnifiedLog.updateHighWatermark``); without a checkpoint entry the LEO (noted)."""
        leo = self.log_end_offset()
        if self.high_watermark_override is None and self.replica.high_watermark_checkpoint is None:
            note = (f"{self.replica.topic}-{self.replica.partition}: no replication-offset-checkpoint entry, "
                    "high watermark taken as the log end offset")
            if note not in self.notes:
                self.notes.append(note)
        return high_watermark(self.replica, log_end_offset=leo, override=self.high_watermark_override, missing=leo)

    def last_stable_offset(self) -> int:
        """LSO offline (:func:`kafka_format.storage.partition_state.last_stable_offset`): ``min(HW,
        max(first unstable offset, logStartOffset))``."""
        if self._lso is None:
            self._lso = last_stable_offset(self.replica, self.high_watermark())
        return self._lso

    # -- the broker side (UnifiedLog.fetchOffsetByTimestamp) -----------------------------------
    def _scan_start(self, i: int, target: int, start_offset: int) -> int:
        """Where ``findOffsetByTimestamp`` starts reading, moved forward when the time index proves the
        skipped batches older than ``target``.

        Kafka: ``offsetIndex.lookup(max(O, startOffset))`` for the time-index entry ``(T, O)`` =
        greatest with ``T <= target``.  If ``T < target`` and the next entry ``(T', O')`` exists
        (``T' > target``), every index point before the one that wrote ``(T', O')`` called
        ``timeIndex.maybeAppend`` with a max timestamp <= T (else an entry between the two would
        exist), and the batch of ``O'`` comes after the greatest index entry with offset < O'.  So
        every batch before that entry's position has ``maxTimestamp <= T < target`` and is skipped
        by Kafka's scan too.
        """
        tidx = self._reader.index(i, "time")
        k = tidx.floor(target)
        ts, off = tidx.entry(k) if k >= 0 else TimestampOffset(NO_TIMESTAMP, self.replica.segments[i].base_offset)
        pos = self._reader.offset_lookup(i, max(off, start_offset))
        if ts < target and k + 1 < tidx.end():
            _, next_off = tidx.entry(k + 1)
            pos = max(pos, self._reader.offset_lookup(i, next_off - 1))
        return pos

    def locate_timestamp(self, target: int) -> TimestampLocation | None:
        """``searchOffsetInLocalLog(target, logStartOffset)``, before the client filter,
        with the batch that holds the answer."""
        log_start = self.replica.log_start_offset
        for i, seg in enumerate(self.replica.segments):
            if self.largest_timestamp(i) < target:
                continue
            for head in self._reader.heads(seg, self._scan_start(i, target, log_start)):
                if head.max_timestamp < target:
                    continue
                offsets, stamps = self._reader.records(seg, head)
                hits = np.flatnonzero((stamps >= target) & (offsets >= log_start))
                if hits.size:
                    j = int(hits[0])
                    epoch = None if head.leader_epoch == NO_PARTITION_LEADER_EPOCH else head.leader_epoch
                    return TimestampLocation(i, head.position, head.size, head.base_offset, head.last_offset,
                                             int(offsets[j]), int(stamps[j]), epoch)
            return None          # the broker does not try later segments
        return None

    def find_offset_by_timestamp(self, target: int) -> _Found | None:
        """``searchOffsetInLocalLog(target, logStartOffset)``, before the client filter."""
        hit = self.locate_timestamp(target)
        return None if hit is None else _Found(hit.timestamp, hit.offset, hit.leader_epoch)

    def find_max_timestamp(self) -> _Found | None:
        """MAX_TIMESTAMP (KAFKA-16310): before the client filter."""
        segs = self.replica.segments
        if not segs:
            return None
        best_i, best = 0, self.max_timestamp_so_far(0)
        for i in range(1, len(segs)):
            cur = self.max_timestamp_so_far(i)
            if cur.timestamp > best.timestamp:
                best_i, best = i, cur
        seg = segs[best_i]
        for head in self._reader.heads(seg, self._reader.offset_lookup(best_i, best.offset)):
            if head.max_timestamp != best.timestamp:
                continue
            if head.magic == 0:
                return None
            offsets, stamps = self._reader.records(seg, head)
            hits = np.flatnonzero(stamps == best.timestamp)
            if not hits.size:
                return None
            epoch = head.leader_epoch if head.leader_epoch >= 0 else None
            return _Found(best.timestamp, int(offsets[int(hits[0])]), epoch)
        return None

    def locate_offset(self, offset: int) -> OffsetLocation | None:
        """Where ``offset`` is read from: the first batch whose last offset reaches it, in the last
        segment based at or below it (``LogSegment.translateOffset``: offset-index lookup, then batch
        headers), with the timestamp of its first record at or above ``offset``; None past the
        last batch (or before the first segment)."""
        segs = self.replica.segments
        bases = [s.base_offset for s in segs]
        i = bisect.bisect_right(bases, offset) - 1
        if i < 0:
            i = 0 if segs and offset < bases[0] else -1
        while 0 <= i < len(segs):
            seg = segs[i]
            for head in self._reader.heads(seg, self._reader.offset_lookup(i, offset)):
                if head.last_offset < offset:
                    continue
                ts: int | None = None
                if head.magic > 0:
                    offsets, stamps = self._reader.records(seg, head)
                    later = np.flatnonzero(offsets >= offset)
                    if len(later):
                        ts = int(stamps[later[0]])
                return OffsetLocation(i, head.position, head.size, int(head.base_offset), ts)
            i += 1          # past this segment's batches: the next segment's first batch
            offset = max(offset, bases[i] if i < len(segs) else offset)
        return None

    # -- the client's answer (Partition.fetchOffsetForTimestamp, ReplicaManager.fetchOffset) ---
    def last_fetchable_offset(self, isolation: str) -> int:
        """``Partition.fetchOffsetForTimestamp``: LSO for read_committed, HW for read_uncommitted."""
        if isolation == "read_committed":
            return self.last_stable_offset()
        if isolation == "read_uncommitted":
            return self.high_watermark()
        raise ValueError(f"isolation must be one of {ISOLATION_LEVELS}, got {isolation!r}")

    def list_offsets(self, spec: int, isolation: str = "read_uncommitted") -> OffsetAnswer:
        """Kafka's ListOffsets answer for ``spec`` (module docstring)."""
        if isolation not in ISOLATION_LEVELS:
            raise ValueError(f"isolation must be one of {ISOLATION_LEVELS}, got {isolation!r}")
        if spec < EARLIEST_PENDING_UPLOAD_TIMESTAMP:
            raise ValueError(f"unsupported timestamp {spec}: Kafka answers UNSUPPORTED_VERSION")
        epochs = self.replica.leader_epochs
        if self.tiered is not None and spec in _TIERED_SPECS:
            return self._tiered_answer(spec, isolation)
        if spec == LATEST_TIMESTAMP:
            return OffsetAnswer(spec, self.last_fetchable_offset(isolation), None,
                                epochs.latest_epoch if epochs else None)
        if spec in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            start = self.replica.log_start_offset
            epoch = epochs.epoch_for_offset(start) if epochs else None
            return OffsetAnswer(spec, start, None, epoch)
        if spec in (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):
            return OffsetAnswer(spec, None, None, None)
        found = None
        if spec >= 0 and self.tiered is not None:
            found = self._remote_offset_by_timestamp(spec)
        if found is None:
            found = self.find_max_timestamp() if spec == MAX_TIMESTAMP else self.find_offset_by_timestamp(spec)
        if found is None or found.offset >= self.last_fetchable_offset(isolation):
            return OffsetAnswer(spec, None, None, None)
        return OffsetAnswer(spec, found.offset, None if found.timestamp == NO_TIMESTAMP else found.timestamp,
                            found.leader_epoch)


    def _remote_offset_by_timestamp(self, target: int) -> _Found | None:
        """``RemoteLogManager.findOffsetByTimestamp`` (searched before the local log, which answers when
        this is None): the chosen segment (:meth:`TieredOffsets.remote_choice`) searched in its remote
        files when it starts below the first local segment, else in the local log (from its first
        segment whose largest timestamp reaches ``target``), both with the log start as the starting
        offset.  A remote segment without its files is a :class:`LogDirError`, never the local log's
        answer."""
        assert self.tiered is not None
        chosen = self.tiered.remote_choice(target)
        if chosen is None:
            return None
        segs = self.replica.segments
        if len(segs) and chosen.start_offset >= segs[0].base_offset:
            return self.find_offset_by_timestamp(target)
        if chosen.segment is None:
            raise LogDirError(
                f"timestamp {target} of {self.replica.topic}-{self.replica.partition} is answered by the remote "
                f"tier: its copied segment {chosen.segment_id} of offsets {chosen.start_offset}..{chosen.end_offset} "
                f"(max timestamp {chosen.max_timestamp}), which local retention deleted, is searched first "
                "(RemoteLogManager.findOffsetByTimestamp) and its files are not given", path=self.replica.path,
                expected="the segment's files in the remote storage (--remote-storage)",
                found="only its remote log metadata")
        remote = PartitionLog(topic=self.replica.topic, partition=self.replica.partition, path=self.replica.path,
                              log_dir=self.replica.log_dir, kind=REMOTE_KIND,
                              segments=SegmentTable.from_segments([chosen.segment]),
                              log_start_offset_checkpoint=self.tiered.log_start_offset)
        # RemoteIndexCache.lookupTimestamp, then the scan; the files are locations (any store fsio opens)
        with PartitionLookup(remote, opener=fsio.open_input_file, strict=self.strict) as lookup:
            hit = lookup.locate_timestamp(target)
        return None if hit is None else _Found(hit.timestamp, hit.offset, hit.leader_epoch)

    def _tiered_answer(self, spec: int, isolation: str) -> OffsetAnswer:
        """-2, -4, -5, -6 of a tiered replica (module doc)."""
        assert self.tiered is not None
        epochs = self.replica.leader_epochs
        entries = epochs.entries if epochs else ()

        def epoch_of(offset: int) -> int | None:
            return epochs.epoch_for_offset(offset) if epochs else None

        log_start = self.tiered.log_start_offset
        earliest = OffsetAnswer(EARLIEST_TIMESTAMP, log_start, None,
                                entries[0].epoch if entries and entries[0].start_offset <= log_start else None)
        if spec == EARLIEST_TIMESTAMP:
            return earliest
        local_start = self.replica.log_start_offset
        if spec == EARLIEST_LOCAL_TIMESTAMP:
            return OffsetAnswer(spec, local_start, None, epoch_of(local_start))
        highest = self.tiered.highest_remote_offset
        if spec == LATEST_TIERED_TIMESTAMP:
            offset, epoch = (None, None) if highest < 0 else (highest, epoch_of(highest))
        elif highest < 0:      # EARLIEST_PENDING_UPLOAD, nothing copied
            offset, epoch = (log_start, earliest.leader_epoch) if local_start == log_start else (None, None)
        else:
            offset = max(highest + 1, log_start)
            epoch = epoch_of(offset)
        if offset is None or offset >= self.last_fetchable_offset(isolation):   # ReplicaManager.fetchOffset
            return OffsetAnswer(spec, None, None, None)
        return OffsetAnswer(spec, offset, None, epoch)


_TIERED_SPECS = (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP, LATEST_TIERED_TIMESTAMP,
                 EARLIEST_PENDING_UPLOAD_TIMESTAMP)


def list_offsets(replica: PartitionLog, spec: int, *, isolation: str = "read_uncommitted",
                 high_watermark: int | None = None, opener: Opener | None = None) -> OffsetAnswer:
    """Kafka's ListOffsets answer for one replica and one timestamp spec (see the module docstring).

    ``high_watermark`` overrides the ``replication-offset-checkpoint`` entry (missing: the log end
    offset).  For many lookups on one replica use :class:`PartitionLookup` (it caches segment values).
    """
    with PartitionLookup(replica, opener=opener, high_watermark_override=high_watermark) as lookup:
        return lookup.list_offsets(spec, isolation)
