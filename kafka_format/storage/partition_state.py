"""Partition state offline: what a broker loading a replica knows of it, computed once.

One home for the values every job, the planner and the data source need of a replica:

* :class:`PartitionRef` — a replica as picklable data, re-opened from its directory where a task runs;
  :class:`TopicSelection` — ``--topic`` / ``--topic-pattern`` (the data source's ``topics`` /
  ``topicPattern``) as every job applies them;
* :func:`iter_batch_heads` — a segment's batch headers through the one batch-header walker
  (:func:`~kafka_format.storage.batch_heads.walk_batch_heads`, re-exported here:
  ``FileLogInputStream.nextBatch``, header bytes only, no decompression, no CRC);
* :func:`log_end_offset` — ``LogSegment.readNextOffset`` of the last segment;
* :func:`high_watermark` — the checkpoint entry as ``UnifiedLog.updateHighWatermark`` loads it
  (rule in :mod:`kafka_format.storage.watermarks`);
* :class:`ProducerReplay` / :func:`replay_open_transactions` / :func:`last_stable_offset` — the
  one producer and transaction replay (``ProducerStateManager``; the cleaner's
  ``lastRecordsOfActiveProducers`` too) and ``UnifiedLog.lastStableOffset``.

The log start offset is :attr:`kafka_format.storage.logdir.PartitionLog.log_start_offset`
(``LogLoader``).  No Spark, no record decoding: index files, producer snapshots and batch headers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from kafka_format.common.errors import KafkaFormatError, LogDirError
from kafka_format.records.entry import HEADER_SIZE_UP_TO_MAGIC
from kafka_format.storage.batch_heads import (  # the one header walker, re-exported
    NO_TIMESTAMP,
    SCAN_CHUNK,
    BatchHead,
    next_offset_after,
    parse_batch_head,
    walk_batch_heads,
)
from kafka_format.storage.logdir import PartitionLog, Segment, open_log_dirs
from kafka_format.storage.watermarks import (
    MISSING_HIGH_WATERMARK,
    high_watermark_on_load,
    last_stable_offset_from,
)

__all__ = [
    "MISSING_HIGH_WATERMARK",
    "SCAN_CHUNK",
    "BatchHead",
    "PartitionRef",
    "ProducerEntry",
    "ProducerReplay",
    "TopicSelection",
    "high_watermark",
    "high_watermark_on_load",
    "iter_batch_heads",
    "last_stable_offset",
    "last_stable_offset_from",
    "log_end_offset",
    "next_offset_after",
    "parse_batch_head",
    "replay_open_transactions",
    "walk_batch_heads",
]

@dataclass(frozen=True)
class PartitionRef:
    """One replica as picklable data (names and locations, no open file, no file system): what a driver
    hands a task, re-opened from its directory wherever the task runs (:meth:`open`).  Job tasks
    extend it with what else they need."""

    topic: str
    partition: int
    path: str            # the partition dir (a local path or a URI)
    log_dir: str         # the log dir holding it

    @classmethod
    def of(cls, replica: PartitionLog) -> PartitionRef:
        """The reference of an open replica."""
        return cls(replica.topic, replica.partition, replica.path, replica.log_dir)

    def open(self) -> PartitionLog:
        """The live replica in :attr:`path`, read again from its files and its log dir's checkpoints;
        :class:`LogDirError` when the directory no longer holds it."""
        for replica in open_log_dirs(self.path).all_partitions():
            if (replica.topic, replica.partition, replica.kind) == (self.topic, self.partition, "live"):
                return replica
        raise LogDirError("partition dir no longer holds the partition", path=self.path,
                          expected=f"{self.topic}-{self.partition}", found="nothing")


@dataclass(frozen=True)
class TopicSelection:
    """The topics a run reads: one of ``topics`` or a whole-name match (``re.fullmatch``) of
    ``pattern``; with neither, every topic.  ``--topic`` / ``--topic-pattern`` of every job and the
    data source's ``topics`` / ``topicPattern`` mean this."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None

    @classmethod
    def of(cls, topics: Sequence[str] | None = None, pattern: str | None = None) -> TopicSelection:
        """From the flags' values (``None`` or empty: no list)."""
        return cls(tuple(topics or ()), pattern)

    @property
    def everything(self) -> bool:
        """True when neither a list nor a pattern narrows the run."""
        return not self.topics and self.pattern is None

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` is selected."""
        if self.everything or topic in self.topics:
            return True
        return self.pattern is not None and _fullmatch(self.pattern, topic)

    def select(self, replicas: Iterable[PartitionLog]) -> list[PartitionLog]:
        """The replicas whose topic is selected, in their order."""
        return [r for r in replicas if self.matches(r.topic)]

    def regex(self, *, unless_named: Sequence[str] = ()) -> str:
        """One ``re.fullmatch`` pattern equal to :meth:`matches` (for a reader that takes a pattern,
        e.g. the data source's ``topicPattern``); with no list and no pattern, every topic but
        ``unless_named``."""
        alternatives = [re.escape(t) for t in self.topics]
        if self.pattern is not None:
            alternatives.append(f"(?:{self.pattern})")
        if not alternatives:
            return "".join(f"(?!{re.escape(t)}$)" for t in unless_named) + ".*"
        return "(?:" + "|".join(alternatives) + ")"


def _fullmatch(pattern: str, topic: str) -> bool:
    return re.fullmatch(pattern, topic) is not None



def _log_size(replica: PartitionLog, seg: Segment) -> int:
    if seg.log_size is not None:
        return int(seg.log_size)
    h = replica.filesystem
    st = h.stat(h.fs_path(seg.log_path or ""))
    return int(st.size or 0) if st is not None else 0


def iter_batch_heads(replica: PartitionLog, seg: Segment, start: int = 0, stop: int | None = None, *,
                     strict: bool = False, chunk: int = SCAN_CHUNK) -> Iterator[BatchHead]:
    """Batch headers of a segment's ``.log`` from byte ``start`` (a batch boundary), those starting
    before ``stop`` (None: to the end); :func:`walk_batch_heads` over the replica's filesystem.
    Stops quietly at corrupt framing unless ``strict``."""
    if seg.log_path is None:
        return
    end = _log_size(replica, seg)
    if end - start <= HEADER_SIZE_UP_TO_MAGIC:
        return
    h = replica.filesystem
    try:
        with h.opened(h.fs_path(seg.log_path)) as f:
            for head in walk_batch_heads(f.read_at, start, end, path=seg.log_path, chunk=chunk, strict=strict):
                if stop is not None and head.position >= stop:
                    return
                yield head
    except KafkaFormatError:
        if strict:
            raise



def last_index_position(replica: PartitionLog, seg: Segment) -> int:
    """Position of the last valid offset-index entry of ``seg`` (0 without one, or when it lies at
    or past the end of the ``.log``): where ``readNextOffset`` starts its walk."""
    idx = replica.offset_index(seg)
    if idx is None or not len(idx):
        return 0
    pos = int(idx.last_entry().position)
    return pos if pos < int(seg.log_size or 0) else 0


def log_end_offset(replica: PartitionLog) -> int:
    """Log end offset: ``replica.log_end_offset`` when discovery computed it, else
    ``LogSegment.readNextOffset`` of the last segment (batch headers from its last offset-index
    entry; corrupt framing ends the data, as recovery would; from the segment's start when the
    batch at that entry is cut off, as recovery's rebuilt index would).  A replica without segments: its log
    start offset (``LogLoader`` opens an empty segment there)."""
    if replica.log_end_offset is not None:
        return replica.log_end_offset
    if not replica.segments:
        return replica.log_start_offset
    seg = replica.segments[-1]
    start = last_index_position(replica, seg)
    end = next_offset_after(iter_batch_heads(replica, seg, start), seg.base_offset)
    if end == seg.base_offset and start > 0:
        # The batch the last index entry points at is cut off or damaged: Kafka's readNextOffset
        # would fall back to the base offset and hide the complete batches before it (a stream's
        # end would then skip them silently).  Recovery rebuilds the index and keeps them: so do we.
        end = next_offset_after(iter_batch_heads(replica, seg, 0), seg.base_offset)
    return end


def high_watermark(replica: PartitionLog, *, log_end_offset: int | None, override: int | None = None,
                   missing: int = MISSING_HIGH_WATERMARK) -> int:
    """The replica's high watermark as a broker loads it: :func:`high_watermark_on_load` of
    ``override``, else of the ``replication-offset-checkpoint`` entry, else of ``missing`` (Kafka
    loads 0 when the checkpoint has no entry, so the log start offset; a job may assume the log end
    offset instead and say so)."""
    hw = override if override is not None else replica.high_watermark_checkpoint
    return high_watermark_on_load(missing if hw is None else hw, log_start_offset=replica.log_start_offset,
                                  log_end_offset=log_end_offset)


# --- producer state --------------------------------------------------------------------------
@dataclass
class ProducerEntry:
    """``ProducerStateEntry``, the fields the offline replay keeps."""

    epoch: int
    last_data_offset: int = -1       # lastDataOffset of its latest data batch (-1: none since the epoch)
    last_timestamp: int = NO_TIMESTAMP
    txn_first_offset: int = -1       # currentTxnFirstOffset (-1: no open transaction)


def _latest_snapshot(replica: PartitionLog, upto: int) -> tuple[dict[int, ProducerEntry], int] | None:
    """Producers of the latest readable snapshot at or below ``upto`` and within the log, and its
    offset; an unreadable one is skipped for the next older (``ProducerStateManager.loadFromSnapshot``)."""
    first = replica.segments[0].base_offset if replica.segments else 0
    for snap in sorted(replica.snapshots, key=lambda s: s.offset, reverse=True):
        if not first <= snap.offset <= upto:
            continue
        try:
            entries = replica.read_snapshot(snap).entries
        except KafkaFormatError:
            continue
        return {e.producer_id: ProducerEntry(e.epoch, e.last_offset if e.last_offset >= 0 else -1, e.timestamp,
                                             e.current_txn_first_offset if e.has_open_txn else -1)
                for e in entries}, snap.offset
    return None


class ProducerReplay:
    """Producer state offline (``ProducerStateManager``): the latest usable snapshot at or below
    ``upto``, then the batch headers after it, below ``upto``, through :meth:`feed` (or
    :meth:`replay`, which walks the segments from the snapshot's index position).

    Per batch of a producer (``ProducerAppendInfo``): a new epoch forgets its last data offset; a
    data batch sets it and the last timestamp, and a transactional one opens a transaction unless
    one is open; a control batch with its marker record (an emptied one changes nothing) closes
    the open transaction, a marker at or above ``high_watermark`` leaving it unreplicated
    (``unreplicatedTxns``).  Without a snapshot the replay starts at the log start offset."""

    def __init__(self, replica: PartitionLog, upto: int, *, high_watermark: int | None = None) -> None:
        self.replica = replica
        self.upto = upto
        self.high_watermark = upto if high_watermark is None else high_watermark
        loaded = _latest_snapshot(replica, upto)
        self.producers, self.start = loaded if loaded is not None else ({}, replica.log_start_offset)
        self.from_snapshot = loaded is not None
        self.unreplicated: list[int] = []     # first offsets of transactions ended at/after HW

    def feed(self, head: BatchHead) -> None:
        """Apply one batch header (ignored outside ``[start, upto)`` or without a producer id)."""
        if head.last_offset < self.start or head.base_offset >= self.upto or head.producer_id < 0:
            return
        p = self.producers.get(head.producer_id)
        if p is None:
            p = self.producers[head.producer_id] = ProducerEntry(head.producer_epoch)
        if head.is_control and not head.count:
            return                                  # an emptied control batch: no state change
        if p.epoch != head.producer_epoch:
            p.epoch, p.last_data_offset = head.producer_epoch, -1
        p.last_timestamp = head.max_timestamp
        if head.is_control:
            if p.txn_first_offset >= 0 and head.last_offset >= self.high_watermark:
                self.unreplicated.append(p.txn_first_offset)
            p.txn_first_offset = -1
        else:
            p.last_data_offset = head.last_offset
            if head.is_transactional and p.txn_first_offset < 0:
                p.txn_first_offset = head.base_offset

    def replay(self) -> ProducerReplay:
        """Feed every batch from the snapshot (its offset-index position) up to ``upto``."""
        segs = self.replica.segments
        for i, seg in enumerate(segs):
            nxt = segs[i + 1].base_offset if i + 1 < len(segs) else None
            if seg.base_offset >= self.upto:
                break
            if nxt is not None and nxt <= self.start:
                continue
            position = 0
            if self.start > seg.base_offset:
                idx = self.replica.offset_index(seg)
                if idx is not None and len(idx):
                    offsets = idx.offsets.astype(np.int64, copy=False)
                    k = int(np.searchsorted(offsets, self.start, side="right")) - 1
                    position = int(idx.positions[k]) if k >= 0 else 0
            for head in iter_batch_heads(self.replica, seg, position):
                if head.base_offset >= self.upto:
                    return self
                self.feed(head)
        return self

    def open_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of its transaction still open."""
        return {pid: p.txn_first_offset for pid, p in self.producers.items() if p.txn_first_offset >= 0}

    def first_unstable_offset(self) -> int | None:
        """``firstUnstableOffset``: the earliest open or unreplicated transaction's first offset."""
        firsts = [*self.open_transactions().values(), *self.unreplicated]
        return min(firsts) if firsts else None

    def last_stable_offset(self) -> int:
        """LSO at ``high_watermark`` (:func:`last_stable_offset_from`).  A replay whose snapshot lies
        above the high watermark cannot tell what was open there: :func:`last_stable_offset` then
        replays from a snapshot at or below it."""
        if self.from_snapshot and self.start > self.high_watermark:
            return last_stable_offset(self.replica, self.high_watermark)
        return last_stable_offset_from(self.first_unstable_offset(), high_watermark=self.high_watermark,
                                       log_start_offset=self.replica.log_start_offset)

    def active_producers(self, now_ms: int, expiration_ms: int) -> dict[int, ProducerEntry]:
        """Producers ``removeExpiredProducers`` keeps at ``now_ms``: an open transaction, or a batch
        within ``producer.id.expiration.ms`` (``lastRecordsOfActiveProducers``' source)."""
        return {pid: p for pid, p in self.producers.items()
                if p.txn_first_offset >= 0 or now_ms - p.last_timestamp < expiration_ms}


def replay_open_transactions(replica: PartitionLog, high_watermark: int) -> dict[int, int]:
    """Producer id -> first offset of its transaction still open at ``high_watermark``
    (:class:`ProducerReplay` up to it)."""
    return ProducerReplay(replica, high_watermark).replay().open_transactions()


def last_stable_offset(replica: PartitionLog, high_watermark: int) -> int:
    """LSO offline: the first offset of the earliest transaction open at ``high_watermark``
    (:func:`replay_open_transactions`), raised to the log start offset, when below HW; else HW
    (:func:`last_stable_offset_from`)."""
    open_txns = replay_open_transactions(replica, high_watermark)
    first = min(open_txns.values()) if open_txns else None
    return last_stable_offset_from(first, high_watermark=high_watermark,
                                   log_start_offset=replica.log_start_offset)
