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

Key identity is exact byte equality (keys become ids by a dictionary encoding of the partition's
key bytes).  Kafka compares 16-byte MD5 digests of keys (``SkimpyOffsetMap``); an MD5 collision
would merge two keys there and not here.  The map holds
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

Memory: the model holds batch headers and, per record, its offset, key id and flags (about 30
bytes a record; key bytes only while the ids are made; values and headers are read again, batch
by batch, only for batches that must be rebuilt).  Decisions are numpy operations over a round's
records, the walk over batches (transaction state, retention) is per batch.

Offline inputs: LEO = next offset of the last segment (batch scan); HW = replication checkpoint
capped at LEO (LEO when absent); LSO = min(HW, first offset of the earliest open transaction or of a
transaction whose marker is at/above HW), from the latest producer snapshot at/below LEO plus the
batches after it; the same replay gives ``lastRecordsOfActiveProducers`` (producers expired at
``now`` per ``producer.id.expiration.ms`` dropped, as ``removeExpiredProducers`` would).  Segment
``largestTimestamp`` = max batch timestamp from a header scan, else the ``.log`` mtime.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_format import partition_state
from kafka_format.api import decode_segment, iter_batches
from kafka_format.compression import compress
from kafka_format.errors import KafkaFormatError
from kafka_format.logdir import PartitionLog, Segment
from kafka_format.records.control import ControlRecordType, parse_control_key
from kafka_format.topicconfig import ConfigError, TopicConfig
from kafka_format.txnindex import AbortedTxn
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
    """

    plan: CleanerPlan
    rounds: int
    decisions: pa.Table
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

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_model"] = None  # the in-memory cleaner model stays where it was built
        return state


# ---------------------------------------------------------------------------------------------
# the partition model: batch headers + record metadata (no values), mutable per round


@dataclass
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
    r_lo: int
    r_hi: int
    count: int
    alive: bool = True
    state: str = "orig"      # "orig" (original bytes), "rebuilt", "empty"
    cur_size: int = 0
    cur_max_timestamp: int = -1
    orig_base_offset: int = -1   # set when a legacy re-wrap moves base_offset

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
    index_entries: list[tuple[int, int]] = field(default_factory=list)  # (offset, position)


@dataclass
class _Model:
    replica: PartitionLog
    segments: list[Segment]
    batches: list[_Batch]
    offsets: np.ndarray
    key_ids: np.ndarray            # per record: id of its key bytes (exact equality), -1 = null key
    n_keys: int                    # distinct key ids
    tomb: np.ndarray
    control: np.ndarray
    batch_of: np.ndarray
    alive: np.ndarray
    decision: np.ndarray
    reason: np.ndarray
    superseded: np.ndarray
    segs: list[_Seg]
    control_type: dict[int, int]   # batch index -> control type of its record


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


def _load_model(replica: PartitionLog, headers: list[list[Any]]) -> _Model:
    batches: list[_Batch] = []
    offs: list[np.ndarray] = []
    key_chunks: list[pa.Array] = []
    tombs: list[np.ndarray] = []
    ctrls: list[np.ndarray] = []
    bof: list[np.ndarray] = []
    segs: list[_Seg] = []
    control_type: dict[int, int] = {}
    n = 0
    for si, seg in enumerate(replica.segments):
        hdrs = headers[si]
        b0 = len(batches)
        pos_to_batch: dict[int, int] = {}
        for h in hdrs:
            pos_to_batch[h.position] = len(batches)
            batches.append(_Batch(
                seg=si, position=h.position, size=h.size, magic=h.magic,
                base_offset=h.base_offset if h.base_offset is not None else h.last_offset,
                last_offset=h.last_offset, codec=_codec_id(h.compression), timestamp_type=h.timestamp_type,
                transactional=bool(h.is_transactional), control=bool(h.is_control),
                producer_id=h.producer_id if h.producer_id is not None else -1,
                producer_epoch=h.producer_epoch if h.producer_epoch is not None else -1,
                base_sequence=h.base_sequence if h.base_sequence is not None else -1,
                leader_epoch=h.partition_leader_epoch if h.partition_leader_epoch is not None else -1,
                max_timestamp=h.max_timestamp, horizon=h.delete_horizon_ms, r_lo=0, r_hi=0,
                count=h.count if h.count is not None else 0, cur_size=h.size,
                cur_max_timestamp=h.max_timestamp))
        positions = np.array([h.position for h in hdrs], dtype=np.int64)
        if seg.log_path is not None and hdrs:
            with replica.filesystem.opened(_fs(replica, seg.log_path)) as f:
                for rb in decode_segment(f, include_headers=False):
                    o = rb.column("offset").to_numpy(zero_copy_only=False).astype(np.int64)
                    p = rb.column("position").to_numpy(zero_copy_only=False).astype(np.int64)
                    idx = np.searchsorted(positions, p) + b0
                    offs.append(o)
                    bof.append(idx.astype(np.int64))
                    kcol = rb.column("key")
                    key_chunks.append(pa.concat_arrays([kcol]))   # own buffers: not the batch's values
                    tombs.append(rb.column("value").is_null().to_numpy(zero_copy_only=False))
                    c = rb.column("isControl").to_numpy(zero_copy_only=False).astype(bool)
                    ctrls.append(c)
                    bbo = rb.column("batchBaseOffset").to_numpy(zero_copy_only=False)
                    for j in np.nonzero(c)[0]:
                        control_type[int(idx[j])] = int(parse_control_key(kcol[int(j)].as_py())[1])
                    # legacy wrappers: base offset = first inner offset (not in the header)
                    legacy = rb.column("magic").to_numpy(zero_copy_only=False) < MAGIC_V2
                    for j in np.nonzero(legacy)[0]:
                        b = batches[int(idx[j])]
                        if b.base_offset > int(bbo[j]):
                            b.base_offset = int(bbo[j])
        oi = replica.offset_index(seg)
        entries = list(zip(oi.offsets.tolist(), oi.positions.tolist())) if oi is not None else []
        segs.append(_Seg(base=seg.base_offset, b_lo=b0, b_hi=len(batches), mtime=seg.log_mtime_ms or 0,
                         txns=list(replica.txn_index(seg).entries), orig=si, size=seg.log_size or 0,
                         index_size=seg.index_size or 0, timeindex_size=seg.timeindex_size or 0,
                         index_entries=entries))
    offsets = np.concatenate(offs) if offs else np.zeros(0, np.int64)
    batch_of = np.concatenate(bof) if bof else np.zeros(0, np.int64)
    tomb = np.concatenate(tombs) if tombs else np.zeros(0, bool)
    control = np.concatenate(ctrls) if ctrls else np.zeros(0, bool)
    n = len(offsets)
    # record ranges per batch (records are in batch order)
    if n:
        starts = np.searchsorted(batch_of, np.arange(len(batches)), side="left")
        ends = np.searchsorted(batch_of, np.arange(len(batches)), side="right")
        for i, b in enumerate(batches):
            b.r_lo, b.r_hi = int(starts[i]), int(ends[i])
    tomb = tomb & ~control
    reason = np.full(n, _R["uncleanable"], np.int8)
    key_ids, n_keys = _key_ids(key_chunks, n)
    del key_chunks
    null_key = (key_ids < 0) & ~control
    reason[null_key] = _R["null-key-uncleanable"]
    return _Model(replica=replica, segments=list(replica.segments), batches=batches, offsets=offsets,
                  key_ids=key_ids, n_keys=n_keys, tomb=tomb, control=control, batch_of=batch_of, alive=np.ones(n, bool),
                  decision=np.full(n, _KEEP, np.int8), reason=reason,
                  superseded=np.full(n, -1, np.int64), segs=segs, control_type=control_type)


def _key_ids(chunks: list[pa.Array], n: int) -> tuple[np.ndarray, int]:
    """One id per record for its key's exact bytes (a dictionary encoding over the partition: equal
    bytes, equal id), -1 for a null key; and the number of distinct keys."""
    if not n:
        return np.zeros(0, np.int64), 0
    encoded = pc.dictionary_encode(pa.chunked_array(chunks, type=pa.binary()))
    n_keys = len(encoded.chunks[0].dictionary) if encoded.num_chunks else 0
    ids = np.concatenate([c.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
                          for c in encoded.chunks])
    return ids, n_keys


# ---------------------------------------------------------------------------------------------
# producer state (ProducerAppendInfo / ProducerStateEntry), offline


@dataclass
class _Producer:
    epoch: int
    last_data_offset: int = -1
    last_timestamp: int = -1
    txn_first_offset: int = -1


def _replay_producers(replica: PartitionLog, headers: list[list[Any]], leo: int, hw: int, now_ms: int,
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
    headers: list[list[Any]]
    leo: int
    hw: int | None
    lso: int
    active_producers: dict[int, _Producer]


def _plan_inputs(replica: PartitionLog, config: TopicConfig, now_ms: int) -> _PlanInputs:
    headers = [_scan_headers(replica, s) for s in replica.segments]
    leo = replica.segments[-1].base_offset if replica.segments else 0
    if headers and headers[-1]:
        leo = headers[-1][-1].last_offset + 1
    elif replica.log_end_offset is not None:
        leo = replica.log_end_offset
    hw_ck = replica.high_watermark_checkpoint
    hw_eff = partition_state.high_watermark(replica, log_end_offset=leo, missing=leo)
    expiration = int(config.broker("producer.id.expiration.ms"))
    active, first_unstable = _replay_producers(replica, headers, leo, hw_eff, now_ms, expiration)
    lso = partition_state.last_stable_offset_from(first_unstable, high_watermark=hw_eff,
                                                  log_start_offset=replica.log_start_offset)
    return _PlanInputs(headers, leo, None if hw_ck is None else hw_eff, lso, active)


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
            ts = max((h.max_timestamp for h in inp.headers[i]), default=-1)
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
    first_ts = [inp.headers[i][0].max_timestamp if inp.headers[i] else LONG_MAX for i in non_active_from(dirty)]
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


def _rebuild(m: _Model, b: _Batch, rows: list[_Row]) -> BuiltBatch:
    """``buildRetainedRecordsInto``: batch ``b`` rebuilt around its alive records (``rows`` = all
    records of the source batch, in order)."""
    keep = set(m.offsets[b.r_lo:b.r_hi][m.alive[b.r_lo:b.r_hi]].tolist())
    sel = [r for r in rows if r[0] in keep]
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
    """What the cleaner writes for batches ``ids`` (global order): original bytes, empty headers or
    rebuilt batches.  One streaming read per original segment; a batch's records are held only
    until it is built."""
    by_seg: dict[int, list[int]] = {}
    for bi in ids:
        by_seg.setdefault(m.batches[bi].seg, []).append(bi)
    for si in sorted(by_seg):
        group = by_seg[si]
        loc = m.segments[si].log_path
        assert loc is not None
        fs = m.replica.filesystem
        with fs.opened(_fs(m.replica, loc)) as f, fs.opened(_fs(m.replica, loc)) as g:
            rebuilt = {m.batches[bi].position: bi for bi in group if m.batches[bi].state == "rebuilt"}
            made = _rebuild_in_segment(m, g, rebuilt) if rebuilt else iter(())
            for bi in group:
                b = m.batches[bi]
                if b.state == "orig":
                    f.seek(b.position)
                    yield bi, BuiltBatch(data=f.read(b.size), magic=b.magic, base_offset=b.base_offset,
                                         last_offset=b.last_offset, max_timestamp=b.max_timestamp,
                                         offset_of_max_timestamp=b.last_offset, record_count=b.count)
                elif b.state == "empty":
                    yield bi, _empty_batch(b)
                else:
                    got, built = next(made)
                    assert got == bi
                    yield bi, built


def _rebuild_in_segment(m: _Model, f: Any, wanted: dict[int, int]) -> Iterator[tuple[int, BuiltBatch]]:
    positions = np.array(sorted(wanted), dtype=np.int64)
    cur: int | None = None
    rows: list[_Row] = []
    for rb in decode_segment(f, start=int(positions[0]), end=int(positions[-1]) + 1):
        pos = rb.column("position").to_numpy(zero_copy_only=False)
        mask = np.isin(pos, positions)
        if not mask.any():
            continue
        sub = rb.filter(pa.array(mask))
        cols = zip(sub.column("position").to_pylist(), sub.column("offset").to_pylist(),
                   sub.column("key").to_pylist(), sub.column("value").to_pylist(),
                   pc.cast(sub.column("timestamp"), pa.int64()).to_pylist(), sub.column("headers").to_pylist())
        for p, o, k, v, t, hs in cols:
            if p != cur:
                if cur is not None:
                    yield wanted[cur], _rebuild(m, m.batches[wanted[cur]], rows)
                cur, rows = p, []
            rows.append((o, k, v, t // 1000, hs))
    if cur is not None:
        yield wanted[cur], _rebuild(m, m.batches[wanted[cur]], rows)


def _refresh_sizes(m: _Model, ids: Sequence[int]) -> None:
    """Current size / max timestamp of batches ``ids`` as the cleaner would write them."""
    rebuilt = [bi for bi in ids if m.batches[bi].state == "rebuilt"]
    for bi in ids:
        b = m.batches[bi]
        if b.state == "orig":
            b.cur_size, b.cur_max_timestamp = b.size, b.max_timestamp
        elif b.state == "empty":
            b.cur_size, b.cur_max_timestamp = EMPTY_BATCH_SIZE, b.max_timestamp
    for bi, built in _batch_stream(m, rebuilt):
        b = m.batches[bi]
        b.cur_size, b.cur_max_timestamp = built.size, built.max_timestamp
        if b.magic < MAGIC_V2:
            if b.orig_base_offset < 0:
                b.orig_base_offset = b.base_offset
            b.base_offset = built.base_offset


def _index_layout(sizes: Sequence[int], last_offsets: Sequence[int], max_ts: Sequence[int],
                  interval: int) -> tuple[list[tuple[int, int]], int]:
    """Offset-index entries and time-index entry count of a cleaned segment (per-batch rule +
    final time entry), as :class:`kafka_format.writer.segments.SegmentWriter` writes them."""
    entries: list[tuple[int, int]] = []
    times = 0
    last_t = -1
    max_so_far = -1
    since = 0
    pos = 0
    for size, lo, t in zip(sizes, last_offsets, max_ts):
        if t > max_so_far:
            max_so_far = t
        if since > interval:
            entries.append((lo, pos))
            if max_so_far > last_t:
                times += 1
                last_t = max_so_far
            since = 0
        pos += size
        since += size
    if max_so_far > last_t:
        times += 1
    return entries, times


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


def _alive_records(m: _Model, b: _Batch) -> np.ndarray:
    r = np.arange(b.r_lo, b.r_hi)
    return r[m.alive[b.r_lo:b.r_hi]]


def _ctype(m: _Model, bi: int, b: _Batch) -> tuple[bool, int | None]:
    recs = _alive_records(m, b)
    return len(recs) > 0, m.control_type.get(bi)


def _index_lookup_batch(m: _Model, s: _Seg, target: int) -> int:
    """First batch index to scan: position of ``OffsetIndex.lookup(target)``."""
    pos = 0
    for off, p in s.index_entries:
        if off <= target:
            pos = p
        else:
            break
    cur = 0
    for bi in range(s.b_lo, s.b_hi):
        b = m.batches[bi]
        if not b.alive:
            continue
        if cur >= pos:
            return bi
        cur += b.cur_size
    return s.b_hi


def _round(m: _Model, config: TopicConfig, now_ms: int, first_dirty: int, first_uncleanable: int,
           capacity: int, active: dict[int, _Producer], log_start: int) -> int:
    """One cleaning round; mutates the model; returns endOffset."""
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
    for g in groups:
        group = [cs[i] for i in g]
        cleaned_txns: list[AbortedTxn] = []
        txn.cleaned_index = cleaned_txns
        plans: list[_BatchPlan] = []
        for j, s in enumerate(group):
            upper = group[j + 1].base if j + 1 < len(group) else _seg_next_offset(m, s)
            txn.add(_collect_aborted(m, log_start, s.base, upper))
            retain_legacy = s.mtime > legacy_horizon
            for bi in range(s.b_lo, s.b_hi):
                b = m.batches[bi]
                if b.alive:
                    plans.append(_plan_batch(m, bi, b, txn, retain_legacy, now_ms, first_uncleanable, active))
        _filter_batches(m, plans, offset_map, latest, now_ms, drm)
        merged = _Seg(base=group[0].base, b_lo=group[0].b_lo, b_hi=group[-1].b_hi, mtime=group[-1].mtime,
                      txns=cleaned_txns, orig=None)
        _refresh_seg(m, merged, config.index_interval_bytes)
        new_segs.append(merged)
    m.segs = new_segs + m.segs[to_clean[-1] + 1:]
    return end_offset


def _build_offset_map(m: _Model, bases: list[int], first_dirty: int, first_uncleanable: int, capacity: int,
                      log_start: int) -> tuple[np.ndarray, int]:
    """``Cleaner.buildOffsetMap``: (latest offset per key id, -1 = not in the map; the map's
    latestOffset).  Batches are walked in order for the transaction state and ``latest``; the
    records of every mapped batch are decided at once: the map is full when it already holds
    ``capacity`` distinct keys before a put (checked for every keyed record at/after firstDirty)."""
    txn = _TxnState()
    txn.add(_collect_aborted(m, log_start, first_dirty, first_uncleanable))
    dirty = _segments_overlapping(bases, first_dirty, first_uncleanable)
    candidates: list[np.ndarray] = []   # per mapped batch: its keyed alive records at/after firstDirty
    latest_before: list[int] = []       # ``latest`` when that batch was reached
    latest = -1
    for k, si in enumerate(dirty):
        s = m.segs[si]
        next_start = m.segs[dirty[k + 1]].base if k + 1 < len(dirty) else first_uncleanable
        for bi in range(_index_lookup_batch(m, s, first_dirty), s.b_hi):
            b = m.batches[bi]
            if not b.alive:
                continue
            if b.control:
                has, ct = _ctype(m, bi, b)
                txn.on_control(b, has, ct)
            elif not txn.on_data(b):
                recs = _alive_records(m, b)
                recs = recs[(m.key_ids[recs] >= 0) & (m.offsets[recs] >= first_dirty)]
                if len(recs):
                    candidates.append(recs)
                    latest_before.append(latest)
            if b.last_offset >= first_dirty:
                latest = b.last_offset
        latest = next_start - 1
    offset_map = np.full(m.n_keys, -1, np.int64)
    if not candidates:
        return offset_map, latest
    recs = np.concatenate(candidates)
    ids = m.key_ids[recs]
    first_seen = np.zeros(len(ids), bool)
    first_seen[np.unique(ids, return_index=True)[1]] = True
    size_before = np.cumsum(first_seen) - first_seen
    over = np.nonzero(size_before >= capacity)[0]
    if len(over):                                   # full: the round ends inside batch j
        cut = int(over[0])
        ends = np.cumsum([len(c) for c in candidates])
        j = int(np.searchsorted(ends, cut, side="right"))
        start_j = int(ends[j]) - len(candidates[j])
        latest = int(m.offsets[recs[cut - 1]]) if cut > start_j else latest_before[j]
        recs, ids = recs[:cut], ids[:cut]
    np.maximum.at(offset_map, ids, m.offsets[recs])
    return offset_map, latest


def _refresh_seg(m: _Model, s: _Seg, interval: int) -> None:
    ids = [bi for bi in range(s.b_lo, s.b_hi) if m.batches[bi].alive]
    _refresh_sizes(m, ids)
    live = [m.batches[bi] for bi in ids]
    entries, times = _index_layout([b.cur_size for b in live], [b.last_offset for b in live],
                                   [b.cur_max_timestamp for b in live], interval)
    s.size = sum(b.cur_size for b in live)
    s.index_entries = entries
    s.index_size = len(entries) * OFFSET_INDEX_ENTRY
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
    recs = _alive_records(m, b)
    if b.control:
        can = txn.on_control(b, len(recs) > 0, m.control_type.get(bi))
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


def _filter_batches(m: _Model, plans: Sequence[_BatchPlan], offset_map: np.ndarray, latest: int, now_ms: int,
                    drm: int) -> None:
    """``cleanInto``'s record filter (``shouldRetainRecord``) and ``MemoryRecords.filterTo`` for the
    batches of one group: every record decided at once (numpy), then each batch's outcome."""
    if not plans:
        return
    parts = [_alive_records(m, p.batch) for p in plans]
    counts = np.array([len(r) for r in parts], np.int64)
    recs = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    local = np.repeat(np.arange(len(plans)), counts)
    per_batch = np.array([(p.discard, p.batch.control, p.batch.magic >= MAGIC_V2, p.batch.horizon is not None,
                           p.retain_legacy) for p in plans], dtype=bool).reshape(len(plans), 5)
    horizon_b = np.array([p.batch.horizon if p.batch.horizon is not None else 0 for p in plans], np.int64)
    discard, control, v2, has_h, legacy_keep = (per_batch[local, i] for i in range(5))
    off = m.offsets[recs]
    key = m.key_ids[recs]
    tomb = m.tomb[recs]
    found = (offset_map[np.maximum(key, 0)] if m.n_keys else np.zeros(len(key), np.int64))
    found = np.where(key >= 0, found, -1)
    keep = np.zeros(len(recs), bool)
    reason = np.zeros(len(recs), np.int8)
    # the conditions in shouldRetainRecord's order; each record takes the first that applies
    reason[discard] = np.where(control[discard], _R["marker-removed"], _R["aborted"])
    marker = ~discard & control
    keep[marker] = True
    reason[marker] = _R["marker-retained"]
    rest = ~discard & ~control
    above = rest & (off > latest)                     # beyond the map: kept without looking at the key
    keep[above] = True
    reason[above] = np.where(key[above] < 0, _R["null-key-uncleanable"], _R["uncleanable"])
    rest &= ~above
    null = rest & (key < 0)
    reason[null] = _R["null-key"]
    rest &= ~null
    superseded = rest & (off < found)
    reason[superseded] = _R["superseded"]
    rest &= ~superseded
    live = rest & ~tomb
    keep[live] = True
    reason[live] = np.where(found[live] >= 0, _R["latest"], _R["not-in-map"])
    tombs = rest & tomb
    tomb_keep = np.where(v2, ~has_h | (now_ms < horizon_b[local]), legacy_keep)
    keep[tombs] = tomb_keep[tombs]
    reason[tombs] = np.where(tomb_keep[tombs], _R["tombstone-horizon"], _R["tombstone-expired"])
    m.reason[recs] = reason
    gone = recs[~keep]
    m.alive[gone] = False
    m.decision[gone] = _REMOVE
    m.superseded[recs[superseded]] = found[superseded]
    kept_n = np.bincount(local, weights=keep, minlength=len(plans)).astype(np.int64)
    tombs_kept = np.bincount(local, weights=keep & tomb, minlength=len(plans)).astype(np.int64)
    for k, p in enumerate(plans):
        b = p.batch
        if p.retention == "DELETE":
            b.alive = False
            continue
        if kept_n[k]:
            write_original = kept_n[k] == counts[k]
            need_horizon = b.magic >= MAGIC_V2 and (bool(tombs_kept[k]) or p.marker_empty_txn) and b.horizon is None
            if write_original and not need_horizon:
                continue  # copied as it is (original bytes, or the same rebuilt bytes again)
            if need_horizon:
                b.horizon = now_ms + drm
            b.state = "rebuilt"
        elif p.retention == "RETAIN_EMPTY":
            if b.magic < MAGIC_V2:
                raise CleanerError("Empty batches are only supported for magic v2 and above",
                                   path=m.segments[b.seg].log_path, position=b.position,
                                   expected="magic >= 2 for a batch the cleaner keeps empty",
                                   found=f"magic {b.magic}", base_offset=b.base_offset)
            b.state = "empty"
            b.horizon = None
        else:
            b.alive = False


# ---------------------------------------------------------------------------------------------
# clean_partition


def clean_partition(replica: PartitionLog, config: TopicConfig, now_ms: int, *, map_slots: int | None = None,
                    rounds: str = "all", force: bool = False) -> CleanResult:
    """What the log cleaner keeps after cleaning everything cleanable at ``now_ms``.

    ``map_slots``: slots of the offset map (default from the broker settings, :func:`map_slots_for`;
    it takes ``int(slots * load factor)`` keys, :func:`map_capacity`); ``rounds``: ``"all"``
    repeats rounds (same ``now``) while the map fills before firstUncleanable, ``"one"`` stops after
    the first; ``force`` cleans a compacted partition even when the dirty ratio does not qualify.
    """
    if rounds not in ("all", "one"):
        raise ValueError("rounds must be 'all' or 'one'")
    inp = _plan_inputs(replica, config, now_ms)
    plan = _plan(replica, config, now_ms, inp, replica.cleaner_offset_checkpoint)
    m = _load_model(replica, inp.headers)
    capacity = map_capacity(config, map_slots)
    n_rounds = 0
    first_dirty = plan.first_dirty_offset
    run = plan.compact and (plan.would_clean_now or (force and plan.first_uncleanable_offset > first_dirty))
    if not run:
        m.reason[:] = _R["not-eligible"]
    else:
        uncleanable = plan.first_uncleanable_offset
        while True:
            end = _round(m, config, now_ms, first_dirty, uncleanable, capacity, inp.active_producers,
                         plan.log_start_offset)
            n_rounds += 1
            progressed = end > first_dirty
            first_dirty = max(end, first_dirty)
            if rounds == "one" or end >= uncleanable or not progressed:
                break
    return _result(m, plan, n_rounds, first_dirty if run else plan.first_dirty_offset)


def _result(m: _Model, plan: CleanerPlan, n_rounds: int, first_dirty_after: int) -> CleanResult:
    sel = m.offsets >= plan.log_start_offset
    idx = np.nonzero(sel)[0]
    order = idx[np.argsort(m.offsets[idx], kind="stable")]
    dec = np.array(DECISIONS, dtype=object)[m.decision[order]]
    rsn = np.array(REASONS, dtype=object)[m.reason[order]]
    sup = m.superseded[order]
    bases = np.array([b.orig_base_offset if b.orig_base_offset >= 0 else b.base_offset for b in m.batches],
                     dtype=np.int64)
    bbo = bases[m.batch_of[order]] if len(order) else np.zeros(0, np.int64)
    table = pa.table({
        "offset": pa.array(m.offsets[order], pa.int64()),
        "decision": pa.array(dec.tolist(), pa.string()),
        "reason": pa.array(rsn.tolist(), pa.string()),
        "supersededBy": pa.array(sup, pa.int64(), mask=sup < 0),
        "isTombstone": pa.array(m.tomb[order], pa.bool_()),
        "batchBaseOffset": pa.array(bbo, pa.int64()),
    }, schema=DECISION_SCHEMA)
    kept = m.alive[order]
    tomb = m.tomb[order]
    ctrl = m.control[order]
    empty = 0
    for b in m.batches:
        if b.alive and not m.alive[b.r_lo:b.r_hi].any():
            empty += 1
    return CleanResult(
        plan=plan, rounds=n_rounds, decisions=table,
        records_before=len(order), records_after=int(kept.sum()),
        bytes_before=sum(b.size for b in m.batches),
        bytes_after=sum(b.cur_size for b in m.batches if b.alive),
        tombstones_kept=int((kept & tomb).sum()), tombstones_removed=int((~kept & tomb).sum()),
        markers_kept=int((kept & ctrl).sum()), markers_removed=int((~kept & ctrl).sum()),
        empty_batches_kept=empty, first_dirty_after=first_dirty_after, _model=m)


# ---------------------------------------------------------------------------------------------
# write_cleaned_partition


def write_cleaned_partition(replica: PartitionLog, config: TopicConfig, now_ms: int, dest_partition_dir: str, *,
                            result: CleanResult | None = None) -> None:
    """Write the cleaned partition in Kafka's format into ``dest_partition_dir`` (existing, empty).

    Rewritten segments: one per cleaning group, batches copied byte for byte or rebuilt as
    ``filterTo`` does, indexes by the per-batch rule, ``.txnindex`` with the aborted txns whose
    ABORT marker the cleaner kept with data; untouched segments, producer snapshots,
    ``leader-epoch-checkpoint`` and ``partition.metadata`` are copied; mtimes kept.
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
        for _, built in _batch_stream(m, [bi for bi in range(s.b_lo, s.b_hi) if m.batches[bi].alive]):
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
