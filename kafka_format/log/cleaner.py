"""Offline log cleaner: what Kafka's cleaner keeps, record by record.

No Spark here.  The model follows Kafka's sources (1eb7644): ``LogCleanerManager.cleanableOffsets``
/ ``calculateCleanableBytes`` / ``maxCompactionDelay`` / ``grabFilthiestCompactedLog`` (plan),
``LogToClean`` (clean/cleanable bytes, ratio), ``Cleaner.doClean`` / ``buildOffsetMap`` /
``buildOffsetMapForSegment`` / ``groupSegmentsBySize`` / ``cleanSegments`` / ``cleanInto`` /
``shouldRetainRecord``, ``CleanedTransactionMetadata``, ``SkimpyOffsetMap`` (capacity, latest
offset), ``MemoryRecords.filterTo`` / ``buildRetainedRecordsInto`` (copy, rebuild, delete-horizon
stamping, RETAIN_EMPTY headers), ``UnifiedLog.lastRecordsOfActiveProducers`` and
``ProducerAppendInfo`` / ``ProducerStateEntry`` (producer state replayed offline).

Decisions (one row per record at/after logStartOffset, control records included):

kept
  ``latest``               highest offset for its key in the offset map of the round that last
                           rewrote it
  ``not-in-map``           key absent from that map (its only records are in the clean section)
  ``uncleanable``          at/after firstUncleanable, or beyond the last round's map
                           (``offset > map.latestOffset``: kept without looking at the key)
  ``null-key-uncleanable`` a null-key record that no round reached (same two cases)
  ``tombstone-horizon``    a tombstone kept until its batch's delete horizon (v2) or because its
                           segment is newer than the legacy horizon (magic 0/1)
  ``marker-retained``      a control record kept (data of its txn still present, horizon not
                           reached, or non-transaction control type)
  ``not-eligible``         added: the partition is not cleaned at ``now`` (not compacted, or not
                           eligible and ``force`` is False); nothing was examined
removed
  ``superseded``           a later record for the same key is in the map (``supersededBy``)
  ``tombstone-expired``    a tombstone whose horizon passed
  ``null-key``             null key inside a cleaned range (``stats.invalidMessage``)
  ``aborted``              data of an aborted transaction (whole batch discarded)
  ``marker-removed``       a control record removed (its txn's data gone, horizon passed)
  ``below-log-start``      reserved: the table has no rows below logStartOffset

Key identity is Kafka's: the offset map holds 16-byte MD5 digests of keys (``SkimpyOffsetMap``,
``CleanerConfig.HASH_ALGORITHM``), at most its capacity of them: two keys with one digest are one
key, as in Kafka.  The map holds
``int(slots * log.cleaner.io.buffer.load.factor)`` keys, ``slots = min(dedupe.buffer.size /
log.cleaner.threads, Int.MAX) // 24`` (``LogCleaner``: one map per cleaner thread).

A round (``Cleaner.doClean``) maps keys from firstDirty; the map is full when it already holds
its capacity before a put (checked for every keyed record, even a key it holds), and its
latestOffset is the last record put or the last offset of a completed batch, so a round can end
inside a batch.  Then every segment below endOffset is rewritten in ``groupSegmentsBySize``
groups.  ``rounds="all"`` repeats rounds at the same ``now`` while endOffset < firstUncleanable.
Rewritten segments get indexes by the per-batch rule (KAFKA-806, as :mod:`kafka_format.writer`),
the mtime of the group's last segment, and a ``.txnindex`` of the aborted transactions whose
ABORT marker was kept while their data was still seen (``cleanedIndex``).

Memory is bounded by configuration, not by the partition: the model holds batch headers only
(one small entry per batch), the offset map (its capacity), ``batch_rows`` decoded records and a
read buffer (``log.cleaner.io.buffer.size``).  Records stay on disk: every round re-reads the
segments batch by batch (the original bytes, or the bytes an earlier round rebuilt, which go to a
``spill`` work file as Kafka writes a cleaned segment); each round appends its records' decisions
to a work file, and :meth:`CleanResult.iter_decisions` merges them in offset order.

Offline inputs: LEO = next offset of the last segment (batch scan); HW = replication checkpoint
capped at LEO (LEO when absent); LSO = min(HW, first offset of the earliest open transaction or of a
transaction whose marker is at/above HW), from the latest producer snapshot at/below LEO plus the
batches after it; the same replay gives ``lastRecordsOfActiveProducers`` (producers expired at
``now`` per ``producer.id.expiration.ms`` dropped, as ``removeExpiredProducers`` would).  Segment
``largestTimestamp`` = max batch timestamp from a header scan, else the ``.log`` mtime.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_format.storage import partition_state
from kafka_format.records.file_records import decode_segment, iter_batches
from kafka_format.records.compression import compress
from kafka_format.common.errors import KafkaFormatError
from kafka_format.storage.logdir import PartitionLog, Segment
from kafka_format.records.control import ControlRecordType, parse_control_key
from kafka_format.log.topicconfig import ConfigError, TopicConfig
from kafka_format.storage.txnindex import AbortedTxn
from kafka_format.writer.batches import (
    CODEC_MASK,
    CREATE_TIME,
    LEGACY_TIMESTAMP_TYPE_MASK,
    LOG_APPEND_TIME,
    MAGIC_V1,
    MAGIC_V2,
    V2_HEADER_SIZE,
    BuiltBatch,
    Record,
    build_empty_batch,
    build_v2_batch,
)
from kafka_format.writer.segments import SegmentWriter

__all__ = [
    "DECISIONS",
    "REASONS",
    "KEEP_REASONS",
    "REMOVE_REASONS",
    "DECISION_SCHEMA",
    "CleanerPlan",
    "CleanResult",
    "CleanerError",
    "plan_cleaning",
    "clean_partition",
    "write_cleaned_partition",
    "map_capacity",
    "map_slots_for",
    "group_segments_by_size",
]

DECISIONS = ("keep", "remove")
KEEP_REASONS = ("latest", "not-in-map", "uncleanable", "null-key-uncleanable", "tombstone-horizon",
                "marker-retained", "not-eligible")
REMOVE_REASONS = ("superseded", "tombstone-expired", "null-key", "aborted", "marker-removed",
                  "below-log-start")
REASONS = KEEP_REASONS + REMOVE_REASONS

DECISION_SCHEMA = pa.schema([
    pa.field("offset", pa.int64()),
    pa.field("decision", pa.string()),
    pa.field("reason", pa.string()),
    pa.field("supersededBy", pa.int64()),
    pa.field("isTombstone", pa.bool_()),
    pa.field("batchBaseOffset", pa.int64()),
])

INT32_MAX = (1 << 31) - 1
LONG_MAX = (1 << 63) - 1
MD5_BYTES = 16            # CleanerConfig.HASH_ALGORITHM digest size
OFFSET_BYTES = 8          # SkimpyOffsetMap: hash + offset per slot
EMPTY_BATCH_SIZE = V2_HEADER_SIZE   # an emptied batch is its 61-byte header (writeEmptyHeader)
CONTROL_ABORT = int(ControlRecordType.ABORT)
CONTROL_COMMIT = int(ControlRecordType.COMMIT)
OFFSET_INDEX_ENTRY = 8
TIME_INDEX_ENTRY = 12

_KEEP, _REMOVE = 0, 1
_R = {name: i for i, name in enumerate(REASONS)}


class CleanerError(KafkaFormatError):
    """The cleaner would fail here (Kafka marks the partition uncleanable)."""

    code = "CLEANER_ERROR"


# ---------------------------------------------------------------------------------------------
# public values


@dataclass(frozen=True)
class CleanerPlan:
    """Which range the cleaner takes at ``now`` (``LogCleanerManager`` / ``LogToClean``)."""

    topic: str
    partition: int
    compact: bool
    log_start_offset: int
    log_end_offset: int
    high_watermark: int | None
    last_stable_offset: int
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    dirty_ratio: float
    needs_compaction_now: bool
    would_clean_now: bool
    reason: str


@dataclass
class CleanResult:
    """Outcome of :func:`clean_partition`; ``decisions`` follows :data:`DECISION_SCHEMA`.

    Counts cover the table's records (offset >= logStartOffset): ``tombstones_removed`` counts
    every removed tombstone (superseded or expired), ``markers_*`` control records.  Bytes cover
    every batch of the partition: ``bytes_after`` sums the batches the cleaner would leave (copied
    batches exactly; rebuilt ones as :mod:`kafka_format.writer` encodes them at the codec's default
    level; empty batches 61).  ``first_dirty_after`` = the new cleaner checkpoint.

    The per-record decisions stay on disk (the cleaner's work files) until asked for:
    :meth:`iter_decisions` streams them in offset order, ``decisions`` builds the whole table
    (small partitions, tests).  :meth:`close` removes the work files (also done when the result
    is garbage-collected).
    """

    plan: CleanerPlan
    rounds: int
    records_before: int
    records_after: int
    bytes_before: int
    bytes_after: int
    tombstones_kept: int
    tombstones_removed: int
    markers_kept: int
    markers_removed: int
    empty_batches_kept: int
    first_dirty_after: int
    _model: Any = field(default=None, repr=False, compare=False)
    _decisions: pa.Table | None = field(default=None, repr=False, compare=False)

    def iter_decisions(self, max_rows: int | None = None) -> Iterator[pa.RecordBatch]:
        """The decisions (:data:`DECISION_SCHEMA`) in offset order, ``max_rows`` at most a batch."""
        if self._decisions is not None:
            yield from self._decisions.to_batches(max_chunksize=max_rows)
            return
        if self._model is None:
            raise RuntimeError("the cleaner's work files are gone (result closed)")
        m: _Model = self._model
        bases = _batch_bases(m)
        for chunk in _decision_chunks(m, self.plan.log_start_offset, self.rounds > 0 or m.ran,
                                      max_rows or m.max_rows):
            yield _decision_batch(chunk, bases)

    @property
    def decisions(self) -> pa.Table:
        """Every decision as one table (materialised: use :meth:`iter_decisions` for big partitions)."""
        if self._decisions is not None:
            return self._decisions
        return pa.Table.from_batches(list(self.iter_decisions()), schema=DECISION_SCHEMA)

    def close(self) -> None:
        """Remove the cleaner's work files (the decisions and rebuilt batches on disk)."""
        if self._model is not None:
            self._model.close()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if self._decisions is None and self._model is not None:
            state["_decisions"] = self.decisions   # a pickled result carries its decisions, not the work files
        state["_model"] = None
        return state


# ---------------------------------------------------------------------------------------------
# the partition model: batch headers (no records), mutable per round; records stay on disk

SPILL = -1                   # _Batch.src of a batch rebuilt into the model's spill file
_BASE_DTYPE = np.dtype([("off", "<i8"), ("flags", "u1"), ("bi", "<i8")])   # one per original record
_DEC_DTYPE = np.dtype([("off", "<i8"), ("dec", "i1"), ("rsn", "i1"), ("sup", "<i8")])  # one per decided record
_TOMB, _CTRL, _NULLKEY = 1, 2, 4

DEFAULT_BATCH_ROWS = 8192    # records decoded at a time (the cleaner's working set of records)


@dataclass(slots=True)
class _Batch:
    seg: int                 # index of the original segment holding its bytes
    position: int
    size: int                # original bytes
    magic: int
    base_offset: int
    last_offset: int
    codec: int
    timestamp_type: int
    transactional: bool
    control: bool
    producer_id: int
    producer_epoch: int
    base_sequence: int
    leader_epoch: int
    max_timestamp: int
    horizon: int | None      # current delete horizon (None = bit clear)
    count: int
    alive: bool = True
    state: str = "orig"      # "orig" (original bytes), "rebuilt" (bytes in the spill file), "empty"
    cur_size: int = 0
    cur_max_timestamp: int = -1
    orig_base_offset: int = -1   # set when a legacy re-wrap moves base_offset
    cur_pos: int = 0         # position of the current bytes in the spill file (state "rebuilt")
    n_alive: int = 0         # records in the current bytes

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0


@dataclass
class _Seg:
    base: int
    b_lo: int
    b_hi: int
    mtime: int
    txns: list[AbortedTxn]
    orig: int | None          # index of the untouched original segment, None once rewritten
    size: int = 0
    index_size: int = 0
    timeindex_size: int = 0
    index_offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    index_positions: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


class _Model:
    """Batch headers of a partition and the cleaner's work files: ``base`` (offset, flags, batch of
    every original record), ``spill`` (bytes of rebuilt batches, appended round by round, as Kafka
    writes a cleaned segment) and one ``round-N`` file of decisions per round."""

    def __init__(self, replica: PartitionLog, work_dir: str | None, read_size: int, max_rows: int) -> None:
        self.replica = replica
        self.segments: list[Segment] = list(replica.segments)
        self.batches: list[_Batch] = []
        self.segs: list[_Seg] = []
        self.control_type: dict[int, int] = {}     # batch index -> control type of its record
        self.read_size = read_size
        self.max_rows = max_rows
        self.ran = False
        self.dir = tempfile.mkdtemp(prefix="klogs-cleaner-", dir=work_dir)
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.dir, True)
        self.base_path = os.path.join(self.dir, "base")
        self.spill_path = os.path.join(self.dir, "spill")
        self.spill = open(self.spill_path, "w+b")  # noqa: SIM115  (closed by close())
        self.spill_end = 0
        self.rounds: list[str] = []

    def close(self) -> None:
        if not self.spill.closed:
            self.spill.close()
        self._finalizer()

    def append_spill(self, data: bytes) -> int:
        pos = self.spill_end
        self.spill.write(data)
        self.spill_end += len(data)
        return pos


def _fs(replica: PartitionLog, location: str) -> str:
    return replica.filesystem.fs_path(location)


def _codec_id(name: str) -> int:
    return {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}[name]


def _scan_headers(replica: PartitionLog, seg: Segment) -> list[Any]:
    if seg.log_path is None:
        return []
    with replica.filesystem.opened(_fs(replica, seg.log_path)) as f:
        try:
            return list(iter_batches(f))
        except KafkaFormatError as exc:
            raise _named(exc, seg.log_path) from None


def _named(exc: KafkaFormatError, path: str) -> KafkaFormatError:
    """``exc`` naming ``path`` when it was raised over an open file (``<bytes>``)."""
    if exc.path is None:
        exc.path = path
        exc.args = (exc._render(),)
    return exc


class _Appender:
    """Fixed-width rows appended to a file, ``flush_rows`` at a time."""

    def __init__(self, path: str, dtype: np.dtype, flush_rows: int) -> None:
        self.f = open(path, "wb")  # noqa: SIM115  (closed by close())
        self.dtype = dtype
        self.parts: list[np.ndarray] = []
        self.n = 0
        self.flush_rows = flush_rows

    def add(self, rows: np.ndarray) -> None:
        self.parts.append(rows)
        self.n += len(rows)
        if self.n >= self.flush_rows:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            np.concatenate(self.parts).tofile(self.f)
        self.parts, self.n = [], 0

    def close(self) -> None:
        self.flush()
        self.f.close()


def _load_model(replica: PartitionLog, work_dir: str | None, read_size: int, max_rows: int) -> _Model:
    """Batches from the header scan; one streaming decode of every segment (``max_rows`` records at
    a time) writes each record's offset, flags and batch to the ``base`` work file and settles what
    the headers do not tell (record counts, control types, legacy wrappers' first offsets)."""
    m = _Model(replica, work_dir, read_size, max_rows)
    batches = m.batches
    base = _Appender(m.base_path, _BASE_DTYPE, max_rows)
    try:
        for si, seg in enumerate(replica.segments):
            hdrs = _scan_headers(replica, seg)      # this segment's headers only
            b0 = len(batches)
            for h in hdrs:
                batches.append(_Batch(
                    seg=si, position=h.position, size=h.size, magic=h.magic,
                    base_offset=h.base_offset if h.base_offset is not None else h.last_offset,
                    last_offset=h.last_offset, codec=_codec_id(h.compression), timestamp_type=h.timestamp_type,
                    transactional=bool(h.is_transactional), control=bool(h.is_control),
                    producer_id=h.producer_id if h.producer_id is not None else -1,
                    producer_epoch=h.producer_epoch if h.producer_epoch is not None else -1,
                    base_sequence=h.base_sequence if h.base_sequence is not None else -1,
                    leader_epoch=h.partition_leader_epoch if h.partition_leader_epoch is not None else -1,
                    max_timestamp=h.max_timestamp, horizon=h.delete_horizon_ms,
                    count=h.count if h.count is not None else 0, cur_size=h.size,
                    cur_max_timestamp=h.max_timestamp))
            positions = np.array([h.position for h in hdrs], dtype=np.int64)
            if seg.log_path is not None and hdrs:
                with replica.filesystem.opened(_fs(replica, seg.log_path)) as f:
                    for rb in decode_segment(f, include_headers=False, max_rows_per_batch=max_rows,
                                             read_size=read_size):
                        o = rb.column("offset").to_numpy(zero_copy_only=False).astype(np.int64)
                        p = rb.column("position").to_numpy(zero_copy_only=False).astype(np.int64)
                        idx = np.searchsorted(positions, p) + b0
                        kcol = rb.column("key")
                        c = rb.column("isControl").to_numpy(zero_copy_only=False).astype(bool)
                        null_key = kcol.is_null().to_numpy(zero_copy_only=False)
                        tomb = rb.column("value").is_null().to_numpy(zero_copy_only=False) & ~c
                        rows = np.empty(len(o), _BASE_DTYPE)
                        rows["off"] = o
                        rows["bi"] = idx
                        rows["flags"] = (tomb * _TOMB) | (c * _CTRL) | ((null_key & ~c) * _NULLKEY)
                        base.add(rows)
                        ids, counts = np.unique(idx, return_counts=True)
                        for bi, n in zip(ids.tolist(), counts.tolist()):
                            batches[bi].n_alive += n
                        for j in np.nonzero(c)[0]:
                            m.control_type[int(idx[j])] = int(parse_control_key(kcol[int(j)].as_py())[1])
                        # legacy wrappers: base offset = first inner offset (not in the header)
                        legacy = rb.column("magic").to_numpy(zero_copy_only=False) < MAGIC_V2
                        if legacy.any():
                            bbo = rb.column("batchBaseOffset").to_numpy(zero_copy_only=False)
                            for j in np.nonzero(legacy)[0]:
                                b = batches[int(idx[j])]
                                if b.base_offset > int(bbo[j]):
                                    b.base_offset = int(bbo[j])
            oi = replica.offset_index(seg)
            m.segs.append(_Seg(
                base=seg.base_offset, b_lo=b0, b_hi=len(batches), mtime=seg.log_mtime_ms or 0,
                txns=list(replica.txn_index(seg).entries), orig=si, size=seg.log_size or 0,
                index_size=seg.index_size or 0, timeindex_size=seg.timeindex_size or 0,
                index_offsets=(np.asarray(oi.offsets, np.int64) if oi is not None else np.zeros(0, np.int64)),
                index_positions=(np.asarray(oi.positions, np.int64) if oi is not None else np.zeros(0, np.int64))))
    except BaseException:
        base.close()
        m.close()
        raise
    base.close()
    return m


_Rows = Any   # a pa.RecordBatch of one batch's current records (RECORD_SCHEMA columns), or None: no records


def _batch_rows(m: _Model, ids: Sequence[int], *, headers: bool) -> Iterator[tuple[int, _Rows]]:
    """``(batch index, its current records)`` for batches ``ids`` in order, decoded from their
    current bytes (original segment or spill file) ``m.max_rows`` records at a time; a batch split
    over decoded chunks is joined (one batch's records: bounded by the broker's max message size)."""
    run: list[int] = []
    run_src: tuple[int, int] | None = None   # (source, last position)
    for bi in ids:
        b = m.batches[bi]
        if b.state == "empty" or b.n_alive == 0:
            yield from _decode_run(m, run, headers)
            run, run_src = [], None
            yield bi, None
            continue
        src = SPILL if b.state == "rebuilt" else b.seg
        pos = b.cur_pos if b.state == "rebuilt" else b.position
        if run_src is not None and (run_src[0] != src or pos <= run_src[1]):
            yield from _decode_run(m, run, headers)
            run = []
        run.append(bi)
        run_src = (src, pos)
    yield from _decode_run(m, run, headers)


def _decode_run(m: _Model, run: list[int], headers: bool) -> Iterator[tuple[int, _Rows]]:
    if not run:
        return
    first = m.batches[run[0]]
    rebuilt = first.state == "rebuilt"
    pos_of = {(m.batches[bi].cur_pos if rebuilt else m.batches[bi].position): bi for bi in run}
    start, last = min(pos_of), max(pos_of)
    if rebuilt:
        m.spill.flush()
        opened: Any = open(m.spill_path, "rb")  # noqa: SIM115
        path = m.spill_path
    else:
        loc = m.segments[first.seg].log_path
        assert loc is not None
        path = loc
        opened = m.replica.filesystem.opened(_fs(m.replica, loc))
    got: dict[int, list[pa.RecordBatch]] = {}
    order = iter(run)
    pending = next(order)
    with opened as f:
        try:
            for rb in decode_segment(f, start=start, end=last + 1, include_headers=headers,
                                     max_rows_per_batch=m.max_rows, read_size=m.read_size):
                pos = rb.column("position").to_numpy(zero_copy_only=False)
                cuts = np.concatenate(([0], np.flatnonzero(pos[1:] != pos[:-1]) + 1, [len(pos)]))
                for a, z in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
                    bi = pos_of.get(int(pos[a]))
                    if bi is None:
                        continue           # a batch between wanted ones (dead, or not asked for)
                    while pending != bi:   # wanted batches before it had no records
                        if pending in got:
                            yield pending, _joined(got.pop(pending))
                        else:
                            yield pending, None
                        pending = next(order)
                    got.setdefault(bi, []).append(rb.slice(a, z - a))
        except KafkaFormatError as exc:
            raise _named(exc, path) from None
    while True:
        yield pending, (_joined(got.pop(pending)) if pending in got else None)
        nxt = next(order, None)
        if nxt is None:
            return
        pending = nxt


def _joined(parts: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(parts) == 1:
        return parts[0]
    return pa.Table.from_batches(parts).combine_chunks().to_batches()[0]


# ---------------------------------------------------------------------------------------------
# producer state (ProducerAppendInfo / ProducerStateEntry), offline


@dataclass
class _Producer:
    epoch: int
    last_data_offset: int = -1
    last_timestamp: int = -1
    txn_first_offset: int = -1


def _replay_producers(replica: PartitionLog, headers: Iterable[list[Any]], leo: int, hw: int, now_ms: int,
                      expiration_ms: int) -> tuple[dict[int, _Producer], int | None]:
    """(active producers at ``now``, first unstable offset) from the latest snapshot <= LEO plus the
    batches after it."""
    producers: dict[int, _Producer] = {}
    start = replica.log_start_offset
    snaps = [s for s in replica.snapshots if s.offset <= leo]
    if snaps:
        snap = max(snaps, key=lambda s: s.offset)
        try:
            parsed = replica.read_snapshot(snap)
        except KafkaFormatError:
            parsed = None  # the broker deletes a bad snapshot and rebuilds from the log
        if parsed is not None:
            start = snap.offset
            for e in parsed.entries:
                producers[e.producer_id] = _Producer(e.epoch, e.last_offset if e.last_offset >= 0 else -1,
                                                     e.timestamp, e.current_txn_first_offset)
    unreplicated: list[int] = []
    for hdrs in headers:
        for h in hdrs:
            if h.last_offset < start or h.producer_id is None or h.producer_id < 0:
                continue
            p = producers.get(h.producer_id)
            if p is None:
                p = producers[h.producer_id] = _Producer(h.producer_epoch)
            if h.is_control:
                if not h.count:
                    continue  # an emptied control batch: no state change
                if p.epoch != h.producer_epoch:
                    p.epoch, p.last_data_offset = h.producer_epoch, -1
                if p.txn_first_offset >= 0 and h.last_offset >= hw:
                    unreplicated.append(p.txn_first_offset)
                p.txn_first_offset = -1
                p.last_timestamp = h.max_timestamp
            else:
                if p.epoch != h.producer_epoch:
                    p.epoch, p.last_data_offset = h.producer_epoch, -1
                p.last_data_offset = h.last_offset
                p.last_timestamp = h.max_timestamp
                if h.is_transactional and p.txn_first_offset < 0:
                    p.txn_first_offset = h.base_offset
    open_firsts = [p.txn_first_offset for p in producers.values() if p.txn_first_offset >= 0]
    first_unstable = min(open_firsts + unreplicated) if (open_firsts or unreplicated) else None
    active = {pid: p for pid, p in producers.items()
              if p.txn_first_offset >= 0 or now_ms - p.last_timestamp < expiration_ms}
    return active, first_unstable


# ---------------------------------------------------------------------------------------------
# plan (LogCleanerManager.cleanableOffsets, calculateCleanableBytes, maxCompactionDelay)


def _segments_overlapping(bases: Sequence[int], start: int, end: int) -> list[int]:
    """Indexes of ``LogSegments.values(from, to)``: floor segment of ``from`` up to base < ``to``."""
    if start == end:
        return []
    floor = None
    for i, b in enumerate(bases):
        if b <= start:
            floor = i
    first = floor if floor is not None else 0
    return [i for i in range(first, len(bases)) if bases[i] < end]


@dataclass
class _PlanInputs:
    seg_max_ts: list[int]            # per segment: its batches' largest timestamp, -1 when none
    seg_first_ts: list[int | None]   # per segment: its first batch's max timestamp, None when empty
    leo: int
    hw: int | None
    lso: int
    active_producers: dict[int, _Producer]


def _plan_inputs(replica: PartitionLog, config: TopicConfig, now_ms: int) -> _PlanInputs:
    """One streaming header scan (one segment's headers held at a time): LEO, HW, LSO, the producer
    state and the per-segment timestamps the plan needs."""
    segs = replica.segments
    last = _scan_headers(replica, segs[-1]) if segs else []
    leo = segs[-1].base_offset if segs else 0
    if last:
        leo = last[-1].last_offset + 1
    elif replica.log_end_offset is not None:
        leo = replica.log_end_offset
    hw_ck = replica.high_watermark_checkpoint
    hw_eff = partition_state.high_watermark(replica, log_end_offset=leo, missing=leo)
    expiration = int(config.broker("producer.id.expiration.ms"))
    max_ts: list[int] = []
    first_ts: list[int | None] = []

    def scanned() -> Iterator[list[Any]]:
        for i, seg in enumerate(segs):
            hdrs = last if i == len(segs) - 1 else _scan_headers(replica, seg)
            max_ts.append(max((h.max_timestamp for h in hdrs), default=-1))
            first_ts.append(hdrs[0].max_timestamp if hdrs else None)
            yield hdrs

    active, first_unstable = _replay_producers(replica, scanned(), leo, hw_eff, now_ms, expiration)
    lso = partition_state.last_stable_offset_from(first_unstable, high_watermark=hw_eff,
                                                  log_start_offset=replica.log_start_offset)
    return _PlanInputs(max_ts, first_ts, leo, None if hw_ck is None else hw_eff, lso, active)


def _plan(replica: PartitionLog, config: TopicConfig, now_ms: int, inp: _PlanInputs,
          checkpoint: int | None) -> CleanerPlan:
    segs = replica.segments
    bases = [s.base_offset for s in segs]
    sizes = [s.log_size or 0 for s in segs]
    start = replica.log_start_offset
    dirty = start if checkpoint is None or checkpoint < start or checkpoint > inp.leo else checkpoint
    active_base = bases[-1] if bases else 0
    candidates = [inp.lso, active_base]

    def non_active_from(offset: int) -> list[int]:
        if not bases or offset > active_base:
            return []
        return _segments_overlapping(bases, offset, active_base)

    min_lag = max(config.min_compaction_lag_ms, 0)
    if min_lag > 0:
        for i in non_active_from(dirty):
            ts = inp.seg_max_ts[i]
            largest = ts if ts >= 0 else (segs[i].log_mtime_ms or 0)
            if largest > now_ms - min_lag:
                candidates.append(bases[i])
                break
    uncleanable = max(dirty, min(candidates))
    nas = non_active_from(uncleanable)
    first_uncleanable = bases[nas[0]] if nas else active_base
    clean_bytes = sum(sizes[i] for i in _segments_overlapping(bases, -1, dirty))
    cleanable_bytes = sum(sizes[i] for i in _segments_overlapping(bases, min(dirty, first_uncleanable),
                                                                   first_uncleanable))
    total = clean_bytes + cleanable_bytes
    ratio = cleanable_bytes / total if total > 0 else 0.0
    max_lag = max(config.max_compaction_lag_ms, 0)
    first_ts = [LONG_MAX if inp.seg_first_ts[i] is None else inp.seg_first_ts[i] for i in non_active_from(dirty)]
    first_ts = [t for t in first_ts if t > 0]
    earliest = min(first_ts) if first_ts else LONG_MAX
    need_now = earliest < now_ms - max_lag
    compact = config.compact
    if not compact:
        would, why = False, "cleanup.policy has no compact"
    elif total <= 0:
        would, why = False, ("empty log" if not any(sizes) else
                             "nothing cleanable: no closed segment below the first uncleanable offset")
    elif need_now and cleanable_bytes > 0:
        would, why = True, "max.compaction.lag.ms exceeded"
    elif ratio > config.min_cleanable_dirty_ratio:
        would, why = True, "dirty ratio above min.cleanable.dirty.ratio"
    elif cleanable_bytes == 0:
        would, why = False, "nothing cleanable"
    else:
        would, why = False, "dirty ratio at or below min.cleanable.dirty.ratio"
    return CleanerPlan(topic=replica.topic, partition=replica.partition, compact=compact,
                       log_start_offset=start, log_end_offset=inp.leo, high_watermark=inp.hw,
                       last_stable_offset=inp.lso, first_dirty_offset=dirty,
                       first_uncleanable_offset=first_uncleanable, clean_bytes=clean_bytes,
                       cleanable_bytes=cleanable_bytes, dirty_ratio=ratio, needs_compaction_now=need_now,
                       would_clean_now=would, reason=why)


def plan_cleaning(replica: PartitionLog, config: TopicConfig, now_ms: int) -> CleanerPlan:
    """Range and eligibility of ``replica`` for the cleaner at ``now_ms``."""
    inp = _plan_inputs(replica, config, now_ms)
    return _plan(replica, config, now_ms, inp, replica.cleaner_offset_checkpoint)


# ---------------------------------------------------------------------------------------------
# transactions (CleanedTransactionMetadata)


class _TxnState:
    def __init__(self) -> None:
        self.pending: list[AbortedTxn] = []
        self.committed: set[int] = set()
        self.aborted: dict[int, list[Any]] = {}   # pid -> [txn, lastObservedBatchOffset or None]
        self.cleaned_index: list[AbortedTxn] | None = None

    def add(self, txns: Iterable[AbortedTxn]) -> None:
        self.pending.extend(txns)
        self.pending.sort(key=lambda t: t.first_offset)

    def _consume(self, offset: int) -> None:
        while self.pending and self.pending[0].first_offset <= offset:
            t = self.pending.pop(0)
            self.aborted.setdefault(t.producer_id, [t, None])

    def on_control(self, b: _Batch, has_record: bool, ctype: int | None) -> bool:
        self._consume(b.last_offset)
        if not has_record:
            return True
        if ctype == CONTROL_ABORT:
            meta = self.aborted.pop(b.producer_id, None)
            if meta is not None and meta[1] is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(meta[0])
                return False
            return True
        if ctype == CONTROL_COMMIT:
            if b.producer_id in self.committed:
                self.committed.discard(b.producer_id)
                return False
            return True
        return False

    def on_data(self, b: _Batch) -> bool:
        self._consume(b.last_offset)
        if not b.transactional:
            return False
        meta = self.aborted.get(b.producer_id)
        if meta is not None:
            meta[1] = b.last_offset
            return True
        self.committed.add(b.producer_id)
        return False


def _collect_aborted(m: _Model, log_start: int, base: int, upper: int) -> list[AbortedTxn]:
    """``LocalLog.collectAbortedTransactions``: from the segment containing ``base``."""
    bases = [s.base for s in m.segs]
    first = 0
    for i, b in enumerate(bases):
        if b <= base:
            first = i
    if not bases or (bases[0] > base):
        return []
    out: list[AbortedTxn] = []
    for s in m.segs[first:]:
        for t in s.txns:
            if t.last_offset >= log_start and t.first_offset < upper:
                out.append(t)
            if t.last_stable_offset >= upper:
                return out
    return out


# ---------------------------------------------------------------------------------------------
# sizes and encoding of batches as a cleaner writes them


def map_slots_for(config: TopicConfig) -> int:
    """Slots of one cleaner thread's ``SkimpyOffsetMap``: ``min(dedupe.buffer.size / threads,
    Int.MAX) // (16-byte MD5 + 8-byte offset)`` (``LogCleaner`` builds one map per thread)."""
    memory = min(int(config.broker("log.cleaner.dedupe.buffer.size"))
                 // int(config.broker("log.cleaner.threads")), INT32_MAX)
    return memory // (MD5_BYTES + OFFSET_BYTES)


def map_capacity(config: TopicConfig, slots: int | None = None) -> int:
    """Keys one round's offset map takes: ``int(slots * log.cleaner.io.buffer.load.factor)``
    (``Cleaner.buildOffsetMapForSegment``: ``maxDesiredMapSize``)."""
    n = map_slots_for(config) if slots is None else slots
    load = float(config.broker("log.cleaner.io.buffer.load.factor"))
    if n * load <= 1:  # Cleaner's require(): the map could not hold one key
        raise ConfigError(f"offset map of {n} slots at load factor {load} cannot hold one key "
                          "(log.cleaner.dedupe.buffer.size / log.cleaner.threads too small)")
    return int(n * load)


def _legacy_entry(magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None,
                  offset: int) -> bytes:
    from kafka_format.writer.batches import _legacy_message, _log_entry  # one layout, in the writer
    return _log_entry(offset, _legacy_message(magic, attributes, timestamp, key, value))


def _empty_batch(b: _Batch) -> BuiltBatch:
    """``DefaultRecordBatch.writeEmptyHeader`` for ``b`` (RETAIN_EMPTY with no record left)."""
    return build_empty_batch(base_offset=b.base_offset, last_offset_delta=b.last_offset - b.base_offset,
                             max_timestamp=b.max_timestamp, timestamp_type=b.timestamp_type,
                             partition_leader_epoch=b.leader_epoch, producer_id=b.producer_id,
                             producer_epoch=b.producer_epoch, base_sequence=b.base_sequence,
                             transactional=b.transactional, control=b.control)


_Row = tuple[int, Any, Any, int, Any]   # offset, key, value, timestamp ms, headers


def _rows_of(rows: pa.RecordBatch, keep: np.ndarray) -> list[_Row]:
    """The kept records of one batch as rows for :func:`_rebuild`."""
    sub = rows.filter(pa.array(keep))
    ts = pc.cast(sub.column("timestamp"), pa.int64()).to_pylist()
    return [(o, k, v, t // 1000, hs) for o, k, v, t, hs in zip(
        sub.column("offset").to_pylist(), sub.column("key").to_pylist(), sub.column("value").to_pylist(), ts,
        sub.column("headers").to_pylist())]


def _rebuild(b: _Batch, sel: list[_Row]) -> BuiltBatch:
    """``buildRetainedRecordsInto``: batch ``b`` rebuilt around its retained records ``sel``."""
    if b.magic >= MAGIC_V2:
        recs = [Record(k, v, t, tuple((h["key"], h["value"]) for h in hs), o - b.base_offset)
                for o, k, v, t, hs in sel]
        lat = b.timestamp_type == LOG_APPEND_TIME
        return build_v2_batch(recs, base_offset=b.base_offset, codec=b.codec,
                              timestamp_type=LOG_APPEND_TIME if lat else CREATE_TIME,
                              log_append_time=b.max_timestamp if lat else None,
                              partition_leader_epoch=b.leader_epoch, producer_id=b.producer_id,
                              producer_epoch=b.producer_epoch, base_sequence=b.base_sequence,
                              transactional=b.transactional, control=b.control, delete_horizon=b.horizon,
                              last_offset_delta=b.last_offset - b.base_offset)
    # legacy: MemoryRecordsBuilder from the first retained record (v1 inner offsets relative to it,
    # v0 absolute), inner messages carry the wrapper's timestamp type, wrapper offset = last kept
    lat = b.magic == MAGIC_V1 and b.timestamp_type == LOG_APPEND_TIME
    first = sel[0][0]
    inner = []
    max_ts = -1
    for o, k, v, t, _ in sel:
        ts = b.max_timestamp if lat else (t if b.magic == MAGIC_V1 else -1)
        max_ts = max(max_ts, ts)
        inner.append(_legacy_entry(b.magic, LEGACY_TIMESTAMP_TYPE_MASK if lat else 0, ts, k, v,
                                   o - first if b.magic == MAGIC_V1 else o))
    value = compress(b.codec, b"".join(inner), magic=b.magic)
    last = sel[-1][0]
    wrapper_ts = b.max_timestamp if lat else max_ts
    attributes = (b.codec & CODEC_MASK) | (LEGACY_TIMESTAMP_TYPE_MASK if lat else 0)
    data = _legacy_entry(b.magic, attributes, wrapper_ts, None, value, last)
    return BuiltBatch(data=data, magic=b.magic, base_offset=first, last_offset=last,
                      max_timestamp=wrapper_ts if b.magic == MAGIC_V1 else -1,
                      offset_of_max_timestamp=last, record_count=len(sel), codec=b.codec)


def _batch_stream(m: _Model, ids: Sequence[int]) -> Iterator[tuple[int, BuiltBatch]]:
    """What the cleaner writes for batches ``ids`` (in order): original bytes, rebuilt bytes from
    the spill file, or empty headers; one batch in memory at a time."""
    fs = m.replica.filesystem
    with contextlib.ExitStack() as stack:
        handles: dict[int, Any] = {}
        for bi in ids:
            b = m.batches[bi]
            if b.state == "empty":
                yield bi, _empty_batch(b)
                continue
            src = SPILL if b.state == "rebuilt" else b.seg
            f = handles.get(src)
            if f is None:
                if src == SPILL:
                    m.spill.flush()
                    f = stack.enter_context(open(m.spill_path, "rb"))
                else:
                    loc = m.segments[src].log_path
                    assert loc is not None
                    f = stack.enter_context(fs.opened(_fs(m.replica, loc)))
                handles[src] = f
            f.seek(b.cur_pos if src == SPILL else b.position)
            data = f.read(b.cur_size)
            yield bi, BuiltBatch(data=data, magic=b.magic, base_offset=b.base_offset, last_offset=b.last_offset,
                                 max_timestamp=b.cur_max_timestamp, offset_of_max_timestamp=b.last_offset,
                                 record_count=b.n_alive if src == SPILL else b.count)


def _index_layout(sizes: Sequence[int], last_offsets: Sequence[int], max_ts: Sequence[int],
                  interval: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Offset-index entries (offsets, positions) and time-index entry count of a cleaned segment
    (per-batch rule + final time entry), as :class:`kafka_format.writer.segments.SegmentWriter`
    writes them."""
    offsets: list[int] = []
    positions: list[int] = []
    times = 0
    last_t = -1
    max_so_far = -1
    since = 0
    pos = 0
    for size, lo, t in zip(sizes, last_offsets, max_ts):
        if t > max_so_far:
            max_so_far = t
        if since > interval:
            offsets.append(lo)
            positions.append(pos)
            if max_so_far > last_t:
                times += 1
                last_t = max_so_far
            since = 0
        pos += size
        since += size
    if max_so_far > last_t:
        times += 1
    return np.array(offsets, np.int64), np.array(positions, np.int64), times


# ---------------------------------------------------------------------------------------------
# one round (Cleaner.doClean)


def group_segments_by_size(sizes: Sequence[int], index_sizes: Sequence[int], timeindex_sizes: Sequence[int],
                           bases: Sequence[int], max_size: int, max_index_size: int,
                           first_uncleanable: int) -> list[list[int]]:
    """``Cleaner.groupSegmentsBySize`` over segments given by their sizes; returns index groups."""
    groups: list[list[int]] = []
    i, n = 0, len(sizes)
    while i < n:
        group = [i]
        log_size, idx, tidx = sizes[i], index_sizes[i], timeindex_sizes[i]
        i += 1
        while i < n:
            last_off = bases[i + 1] - 1 if i + 1 < n else first_uncleanable - 1
            if (log_size + sizes[i] <= max_size and idx + index_sizes[i] <= max_index_size
                    and tidx + timeindex_sizes[i] <= max_index_size
                    and (sizes[i] == 0 or last_off - bases[group[0]] <= INT32_MAX)):
                # Scala's ``group.last`` is the group's FIRST segment (the list is built by prepending)
                group.append(i)
                log_size += sizes[i]
                idx += index_sizes[i]
                tidx += timeindex_sizes[i]
                i += 1
            else:
                break
        groups.append(group)
    return groups




def _seg_next_offset(m: _Model, s: _Seg) -> int:
    for bi in range(s.b_hi - 1, s.b_lo - 1, -1):
        if m.batches[bi].alive:
            return m.batches[bi].last_offset + 1
    return s.base


def _alive_ids(m: _Model, lo: int, hi: int) -> list[int]:
    return [bi for bi in range(lo, hi) if m.batches[bi].alive]


def _index_lookup_batch(m: _Model, s: _Seg, target: int) -> int:
    """First batch index to scan: position of ``OffsetIndex.lookup(target)``."""
    k = int(np.searchsorted(s.index_offsets, target, side="right"))
    pos = int(s.index_positions[k - 1]) if k else 0
    cur = 0
    for bi in range(s.b_lo, s.b_hi):
        b = m.batches[bi]
        if not b.alive:
            continue
        if cur >= pos:
            return bi
        cur += b.cur_size
    return s.b_hi


def _digest(key: bytes) -> bytes:
    """The offset map's key: the key's MD5 digest (``SkimpyOffsetMap``, ``CleanerConfig.HASH_ALGORITHM``)."""
    return hashlib.md5(key).digest()  # noqa: S324  (Kafka's choice, not a security use)


def _round(m: _Model, config: TopicConfig, now_ms: int, first_dirty: int, first_uncleanable: int,
           capacity: int, active: dict[int, _Producer], log_start: int) -> int:
    """One cleaning round; mutates the model, writes this round's decisions; returns endOffset."""
    bases = [s.base for s in m.segs]
    offset_map, latest = _build_offset_map(m, bases, first_dirty, first_uncleanable, capacity, log_start)
    end_offset = latest + 1
    # 2. rewrite [0, endOffset) in groups
    last_clean = [s for s in m.segs if s.base < first_dirty]
    legacy_horizon = (last_clean[-1].mtime - config.delete_retention_ms) if (first_dirty > 0 and last_clean) else 0
    to_clean = _segments_overlapping(bases, 0, end_offset)
    if not to_clean:
        return end_offset
    cs = [m.segs[i] for i in to_clean]
    groups = group_segments_by_size([s.size for s in cs], [s.index_size for s in cs],
                                    [s.timeindex_size for s in cs], [s.base for s in cs],
                                    config.segment_bytes, config.segment_index_bytes, first_uncleanable)
    txn = _TxnState()
    drm = config.delete_retention_ms
    new_segs: list[_Seg] = []
    out = _Appender(os.path.join(m.dir, f"round-{len(m.rounds)}"), _DEC_DTYPE, m.max_rows)
    m.rounds.append(out.f.name)
    try:
        for g in groups:
            group = [cs[i] for i in g]
            cleaned_txns: list[AbortedTxn] = []
            txn.cleaned_index = cleaned_txns
            for j, s in enumerate(group):
                upper = group[j + 1].base if j + 1 < len(group) else _seg_next_offset(m, s)
                txn.add(_collect_aborted(m, log_start, s.base, upper))
                retain_legacy = s.mtime > legacy_horizon
                for bi, rows in _batch_rows(m, _alive_ids(m, s.b_lo, s.b_hi), headers=True):
                    p = _plan_batch(m, bi, m.batches[bi], txn, retain_legacy, now_ms, first_uncleanable, active)
                    _filter_batch(m, p, rows, offset_map, latest, now_ms, drm, out)
            merged = _Seg(base=group[0].base, b_lo=group[0].b_lo, b_hi=group[-1].b_hi, mtime=group[-1].mtime,
                          txns=cleaned_txns, orig=None)
            _refresh_seg(m, merged, config.index_interval_bytes)
            new_segs.append(merged)
    finally:
        out.close()
    m.spill.flush()
    m.segs = new_segs + m.segs[to_clean[-1] + 1:]
    return end_offset


def _build_offset_map(m: _Model, bases: list[int], first_dirty: int, first_uncleanable: int, capacity: int,
                      log_start: int) -> tuple[dict[bytes, int], int]:
    """``Cleaner.buildOffsetMap``: (key digest -> latest offset, at most ``capacity`` keys; the map's
    latestOffset).  Batches are walked in order for the transaction state and ``latest``; the map is
    full when it already holds ``capacity`` keys before a put (checked for every keyed record
    at/after firstDirty, even one whose key it holds): the round then ends inside that batch."""
    txn = _TxnState()
    txn.add(_collect_aborted(m, log_start, first_dirty, first_uncleanable))
    dirty = _segments_overlapping(bases, first_dirty, first_uncleanable)
    offset_map: dict[bytes, int] = {}
    latest = -1
    for k, si in enumerate(dirty):
        s = m.segs[si]
        next_start = m.segs[dirty[k + 1]].base if k + 1 < len(dirty) else first_uncleanable
        for bi, rows in _batch_rows(m, _alive_ids(m, _index_lookup_batch(m, s, first_dirty), s.b_hi),
                                    headers=False):
            b = m.batches[bi]
            if b.control:
                txn.on_control(b, b.n_alive > 0, m.control_type.get(bi))
            elif not txn.on_data(b) and rows is not None:
                pairs = [(_digest(key), o) for o, key in zip(rows.column("offset").to_pylist(),
                                                             rows.column("key").to_pylist())
                         if key is not None and o >= first_dirty]
                if len(offset_map) + len(pairs) <= capacity:
                    offset_map.update(pairs)      # never full before a put in this batch
                else:
                    put = -1
                    for digest, o in pairs:
                        if len(offset_map) >= capacity:
                            return offset_map, (put if put >= 0 else latest)
                        offset_map[digest] = o
                        put = o
            if b.last_offset >= first_dirty:
                latest = b.last_offset
        latest = next_start - 1
    return offset_map, latest


def _refresh_seg(m: _Model, s: _Seg, interval: int) -> None:
    live = [m.batches[bi] for bi in _alive_ids(m, s.b_lo, s.b_hi)]
    offsets, positions, times = _index_layout([b.cur_size for b in live], [b.last_offset for b in live],
                                              [b.cur_max_timestamp for b in live], interval)
    s.size = sum(b.cur_size for b in live)
    s.index_offsets, s.index_positions = offsets, positions
    s.index_size = len(offsets) * OFFSET_INDEX_ENTRY
    s.timeindex_size = times * TIME_INDEX_ENTRY


def _is_last_of_producer(b: _Batch, active: dict[int, _Producer]) -> bool:
    p = active.get(b.producer_id)
    if p is None:
        return False
    if p.last_data_offset >= 0:
        return b.last_offset == p.last_data_offset
    return b.control and b.producer_epoch == p.epoch


@dataclass
class _BatchPlan:
    """What ``cleanInto`` settles for a batch before looking at its records."""

    bi: int
    batch: _Batch
    discard: bool             # the whole batch goes (aborted data, or a marker past its horizon)
    marker_empty_txn: bool    # a control batch whose transaction is empty (stamps a horizon)
    retention: str            # BatchRetention: DELETE, DELETE_EMPTY or RETAIN_EMPTY
    retain_legacy: bool       # a legacy tombstone's segment is newer than the legacy horizon


def _plan_batch(m: _Model, bi: int, b: _Batch, txn: _TxnState, retain_legacy: bool, now_ms: int,
                first_uncleanable: int, active: dict[int, _Producer]) -> _BatchPlan:
    """``cleanInto``'s ``checkBatchRetention`` for one batch (walks the transaction state in order)."""
    if b.control:
        can = txn.on_control(b, b.n_alive > 0, m.control_type.get(bi))
        discard = can and b.horizon is not None and b.horizon <= now_ms
    else:
        can = txn.on_data(b)
        discard = can
    if b.has_producer_id and _is_last_of_producer(b, active):
        retention = "RETAIN_EMPTY"
    elif b.last_offset + 1 == first_uncleanable:
        retention = "RETAIN_EMPTY"
    elif discard:
        retention = "DELETE"
    else:
        retention = "DELETE_EMPTY"
    return _BatchPlan(bi, b, discard, can and b.control, retention, retain_legacy)


def _filter_batch(m: _Model, p: _BatchPlan, rows: _Rows, offset_map: dict[bytes, int], latest: int, now_ms: int,
                  drm: int, out: _Appender) -> None:
    """``cleanInto``'s record filter (``shouldRetainRecord``) and ``MemoryRecords.filterTo`` for one
    batch: its records decided (appended to the round's decisions), then the batch's outcome
    (copied, rebuilt into the spill file, emptied or dropped)."""
    b = p.batch
    n = 0 if rows is None else rows.num_rows
    keep = np.zeros(n, bool)
    tomb_kept = 0
    if n:
        off = rows.column("offset").to_numpy(zero_copy_only=False).astype(np.int64)
        key_list = rows.column("key").to_pylist()
        null = np.fromiter((k is None for k in key_list), bool, n)
        tomb = rows.column("value").is_null().to_numpy(zero_copy_only=False)
        if b.control:
            tomb = np.zeros(n, bool)
        reason = np.zeros(n, np.int8)
        found = np.full(n, -1, np.int64)
        # the conditions in shouldRetainRecord's order; each record takes the first that applies
        if p.discard:
            reason[:] = _R["marker-removed"] if b.control else _R["aborted"]
        elif b.control:
            keep[:] = True
            reason[:] = _R["marker-retained"]
        else:
            above = off > latest                      # beyond the map: kept without looking at the key
            keep[above] = True
            reason[above] = np.where(null[above], _R["null-key-uncleanable"], _R["uncleanable"])
            rest = ~above
            look = rest & ~null
            if look.any():
                get = offset_map.get
                found[look] = np.fromiter((get(_digest(key_list[i]), -1) for i in np.flatnonzero(look).tolist()),
                                          np.int64, int(look.sum()))
            null_here = rest & null
            reason[null_here] = _R["null-key"]
            rest &= ~null
            superseded = rest & (off < found)
            reason[superseded] = _R["superseded"]
            rest &= ~superseded
            live = rest & ~tomb
            keep[live] = True
            reason[live] = np.where(found[live] >= 0, _R["latest"], _R["not-in-map"])
            tombs = rest & tomb
            if tombs.any():
                if b.magic >= MAGIC_V2:
                    tk = b.horizon is None or now_ms < b.horizon
                else:
                    tk = p.retain_legacy
                keep[tombs] = tk
                reason[tombs] = _R["tombstone-horizon"] if tk else _R["tombstone-expired"]
            found[~superseded] = -1
        dec = np.empty(n, _DEC_DTYPE)
        dec["off"] = off
        dec["dec"] = np.where(keep, _KEEP, _REMOVE)
        dec["rsn"] = reason
        dec["sup"] = found
        out.add(dec)
        tomb_kept = int((keep & tomb).sum())
    kept_n = int(keep.sum())
    if p.retention == "DELETE":
        b.alive = False
        return
    if kept_n:
        write_original = kept_n == n
        need_horizon = b.magic >= MAGIC_V2 and (bool(tomb_kept) or p.marker_empty_txn) and b.horizon is None
        if write_original and not need_horizon:
            return  # copied as it is (original bytes, or the same rebuilt bytes again)
        if need_horizon:
            b.horizon = now_ms + drm
        built = _rebuild(b, _rows_of(rows, keep))
        b.state = "rebuilt"
        b.cur_pos = m.append_spill(built.data)
        b.cur_size, b.cur_max_timestamp = built.size, built.max_timestamp
        b.n_alive = kept_n
        if b.magic < MAGIC_V2:
            if b.orig_base_offset < 0:
                b.orig_base_offset = b.base_offset
            b.base_offset = built.base_offset
    elif p.retention == "RETAIN_EMPTY":
        if b.magic < MAGIC_V2:
            raise CleanerError("Empty batches are only supported for magic v2 and above",
                               path=m.segments[b.seg].log_path, position=b.position,
                               expected="magic >= 2 for a batch the cleaner keeps empty",
                               found=f"magic {b.magic}", base_offset=b.base_offset)
        b.state = "empty"
        b.horizon = None
        b.n_alive = 0
        b.cur_size, b.cur_max_timestamp = EMPTY_BATCH_SIZE, b.max_timestamp
    else:
        b.alive = False


# ---------------------------------------------------------------------------------------------
# clean_partition


def clean_partition(replica: PartitionLog, config: TopicConfig, now_ms: int, *, map_slots: int | None = None,
                    rounds: str = "all", force: bool = False, batch_rows: int = DEFAULT_BATCH_ROWS,
                    read_buffer: int | None = None, work_dir: str | None = None) -> CleanResult:
    """What the log cleaner keeps after cleaning everything cleanable at ``now_ms``.

    ``map_slots``: slots of the offset map (default from the broker settings, :func:`map_slots_for`;
    it takes ``int(slots * load factor)`` keys, :func:`map_capacity`); ``rounds``: ``"all"``
    repeats rounds (same ``now``) while the map fills before firstUncleanable, ``"one"`` stops after
    the first; ``force`` cleans a compacted partition even when the dirty ratio does not qualify.

    Memory is bounded by configuration, not by the partition: the offset map (its capacity),
    ``batch_rows`` records decoded at a time, ``read_buffer`` bytes read at a time (default
    ``log.cleaner.io.buffer.size``; a batch larger than that is read whole), plus the batch
    headers.  Per-record decisions and rebuilt batches go to work files in ``work_dir`` (default:
    the system temp dir), removed when the result is closed or collected.
    """
    if rounds not in ("all", "one"):
        raise ValueError("rounds must be 'all' or 'one'")
    if batch_rows < 1:
        raise ValueError("batch_rows must be >= 1")
    read_size = int(config.broker("log.cleaner.io.buffer.size")) if read_buffer is None else int(read_buffer)
    inp = _plan_inputs(replica, config, now_ms)
    plan = _plan(replica, config, now_ms, inp, replica.cleaner_offset_checkpoint)
    capacity = map_capacity(config, map_slots)
    m = _load_model(replica, work_dir, read_size, batch_rows)
    active = inp.active_producers
    del inp
    n_rounds = 0
    first_dirty = plan.first_dirty_offset
    run = plan.compact and (plan.would_clean_now or (force and plan.first_uncleanable_offset > first_dirty))
    m.ran = bool(run)
    try:
        if run:
            uncleanable = plan.first_uncleanable_offset
            while True:
                end = _round(m, config, now_ms, first_dirty, uncleanable, capacity, active, plan.log_start_offset)
                n_rounds += 1
                progressed = end > first_dirty
                first_dirty = max(end, first_dirty)
                if rounds == "one" or end >= uncleanable or not progressed:
                    break
        return _result(m, plan, n_rounds, first_dirty if run else plan.first_dirty_offset)
    except BaseException:
        m.close()
        raise


class _SortedReader:
    """Rows of a work file (sorted by ``off``) taken in order, ``block`` rows read at a time."""

    def __init__(self, path: str, dtype: np.dtype, block: int) -> None:
        self.f = open(path, "rb")  # noqa: SIM115  (closed by close())
        self.dtype = dtype
        self.block = block
        self.buf = np.zeros(0, dtype)

    def upto(self, hi: int) -> np.ndarray:
        """The next rows with ``off <= hi``."""
        out = []
        while True:
            if not len(self.buf):
                self.buf = np.fromfile(self.f, self.dtype, count=self.block)
                if not len(self.buf):
                    break
            k = int(np.searchsorted(self.buf["off"], hi, side="right"))
            out.append(self.buf[:k])
            self.buf = self.buf[k:]
            if len(self.buf):
                break
        return np.concatenate(out) if len(out) > 1 else (out[0] if out else np.zeros(0, self.dtype))

    def close(self) -> None:
        self.f.close()


@dataclass
class _Chunk:
    off: np.ndarray
    dec: np.ndarray
    rsn: np.ndarray
    sup: np.ndarray
    flags: np.ndarray
    bi: np.ndarray


def _decision_chunks(m: _Model, log_start: int, ran: bool, max_rows: int) -> Iterator[_Chunk]:
    """Every record at/after ``log_start`` with its final decision, in offset order: the ``base``
    work file merged with each round's decisions (a later round's decision replaces an earlier one:
    a record a round keeps is looked at again by the next)."""
    base = _SortedReader(m.base_path, _BASE_DTYPE, max_rows)
    readers = [_SortedReader(p, _DEC_DTYPE, max_rows) for p in m.rounds]
    last = None
    try:
        while True:
            rows = np.fromfile(base.f, _BASE_DTYPE, count=max_rows)
            if not len(rows):
                return
            off = rows["off"]
            if (last is not None and off[0] <= last) or (len(off) > 1 and not bool((off[1:] > off[:-1]).all())):
                raise CleanerError("offsets do not increase", path=m.replica.path,
                                   expected="strictly increasing record offsets", found=f"offset {int(off[0])}")
            last = int(off[-1])
            flags = rows["flags"]
            dec = np.full(len(rows), _KEEP, np.int8)
            if ran:
                rsn = np.where(flags & _NULLKEY, _R["null-key-uncleanable"], _R["uncleanable"]).astype(np.int8)
            else:
                rsn = np.full(len(rows), _R["not-eligible"], np.int8)
            sup = np.full(len(rows), -1, np.int64)
            for r in readers:
                got = r.upto(last)
                if len(got):
                    at = np.searchsorted(off, got["off"])
                    dec[at], rsn[at], sup[at] = got["dec"], got["rsn"], got["sup"]
            sel = off >= log_start
            if not sel.all():
                rows, dec, rsn, sup = rows[sel], dec[sel], rsn[sel], sup[sel]
            if len(rows):
                yield _Chunk(rows["off"], dec, rsn, sup, rows["flags"], rows["bi"])
    finally:
        base.close()
        for r in readers:
            r.close()


_DECISION_STR = pa.array(DECISIONS, pa.string())
_REASON_STR = pa.array(REASONS, pa.string())


def _decision_batch(c: _Chunk, bases: np.ndarray) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([
        pa.array(c.off, pa.int64()),
        _DECISION_STR.take(pa.array(c.dec.astype(np.int32))),
        _REASON_STR.take(pa.array(c.rsn.astype(np.int32))),
        pa.array(c.sup, pa.int64(), mask=c.sup < 0),
        pa.array((c.flags & _TOMB).astype(bool), pa.bool_()),
        pa.array(bases[c.bi], pa.int64()),
    ], schema=DECISION_SCHEMA)


def _batch_bases(m: _Model) -> np.ndarray:
    """Per batch: the base offset of the source batch (a legacy re-wrap's original one)."""
    return np.fromiter((b.orig_base_offset if b.orig_base_offset >= 0 else b.base_offset for b in m.batches),
                       np.int64, len(m.batches))


def _result(m: _Model, plan: CleanerPlan, n_rounds: int, first_dirty_after: int) -> CleanResult:
    before = after = tk = tr = mk = mr = 0
    for c in _decision_chunks(m, plan.log_start_offset, m.ran, m.max_rows):
        kept = c.dec == _KEEP
        tomb = (c.flags & _TOMB).astype(bool)
        ctrl = (c.flags & _CTRL).astype(bool)
        before += len(kept)
        after += int(kept.sum())
        tk += int((kept & tomb).sum())
        tr += int((~kept & tomb).sum())
        mk += int((kept & ctrl).sum())
        mr += int((~kept & ctrl).sum())
    empty = sum(1 for b in m.batches if b.alive and b.n_alive == 0)
    return CleanResult(
        plan=plan, rounds=n_rounds,
        records_before=before, records_after=after,
        bytes_before=sum(b.size for b in m.batches),
        bytes_after=sum(b.cur_size for b in m.batches if b.alive),
        tombstones_kept=tk, tombstones_removed=tr, markers_kept=mk, markers_removed=mr,
        empty_batches_kept=empty, first_dirty_after=first_dirty_after, _model=m)


# ---------------------------------------------------------------------------------------------
# write_cleaned_partition


def write_cleaned_partition(replica: PartitionLog, config: TopicConfig, now_ms: int, dest_partition_dir: str, *,
                            result: CleanResult | None = None) -> None:
    """Write the cleaned partition in Kafka's format into ``dest_partition_dir`` (existing, empty).

    Rewritten segments: one per cleaning group, batches copied byte for byte or rebuilt as
    ``filterTo`` does, indexes by the per-batch rule, ``.txnindex`` with the aborted txns whose
    ABORT marker the cleaner kept with data; untouched segments, producer snapshots,
    ``leader-epoch-checkpoint`` and ``partition.metadata`` are copied; mtimes kept.  Batches are
    streamed one at a time.
    """
    if result is None or result._model is None:
        result = clean_partition(replica, config, now_ms)
    m: _Model = result._model
    if not os.path.isdir(dest_partition_dir):
        raise FileNotFoundError(dest_partition_dir)
    if os.listdir(dest_partition_dir):
        raise FileExistsError(f"{dest_partition_dir} is not empty")
    fs = replica.filesystem
    suffix_paths = (("log_path", ".log"), ("index_path", ".index"), ("timeindex_path", ".timeindex"),
                    ("txnindex_path", ".txnindex"))
    for s in m.segs:
        name = f"{s.base:020d}"
        if s.orig is not None:
            seg = m.segments[s.orig]
            for attr, suffix in suffix_paths:
                loc = getattr(seg, attr)
                if loc is not None:
                    target = os.path.join(dest_partition_dir, name + suffix)
                    _copy(fs, loc, target, seg.log_mtime_ms)
            continue
        w = SegmentWriter(dest_partition_dir, s.base, index_interval_bytes=config.index_interval_bytes,
                          segment_index_bytes=config.segment_index_bytes)
        for _, built in _batch_stream(m, _alive_ids(m, s.b_lo, s.b_hi)):
            w.append([built])
        for t in s.txns:
            w.add_aborted_txn(t)
        w.close()
        if s.mtime:
            for p in w.files():
                os.utime(p, ns=(s.mtime * 1_000_000, s.mtime * 1_000_000))
    for snap in replica.snapshots:
        _copy(fs, snap.path, os.path.join(dest_partition_dir, os.path.basename(fs.fs_path(snap.path))), None)
    for name in ("leader-epoch-checkpoint", "partition.metadata"):
        loc = replica.path.rstrip("/") + "/" + name
        try:
            _copy(fs, loc, os.path.join(dest_partition_dir, name), None)
        except (OSError, KafkaFormatError):
            pass


def _copy(fs: Any, location: str, target: str, mtime_ms: int | None) -> None:
    src = fs.fs_path(location)
    if os.path.exists(src) and "://" not in location:
        shutil.copy2(src, target)
    else:
        with fs.opened(src) as f, open(target, "wb") as out:
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                out.write(chunk)
    if mtime_ms:
        os.utime(target, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
