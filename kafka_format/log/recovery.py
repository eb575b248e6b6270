"""What a broker's log loader does to one partition dir on its next start, predicted offline.

:func:`plan_recovery` applies Kafka 4.4's rules (``LogManager.loadLogs``, ``LogLoader.load`` /
``loadSegmentFiles`` / ``recoverLog``, ``LogSegment.recover``, ``LeaderEpochFileCache``) to a
:class:`~kafka_format.storage.partition_log.PartitionLog` and its :class:`~kafka_format.storage.logdir.LogDir`:

* the ``.swap`` / ``.cleaned`` / ``.deleted`` reconciliation is :mod:`kafka_format.storage.log_loader`'s
  (its notes become the file actions here); index files without a ``.log`` are deleted;
* ``loadSegmentFiles``: a segment without ``.index`` is recovered whatever the shutdown (each such
  recovery truncates its own segment only); a missing ``.timeindex`` alone is created empty, not rebuilt;
* ``recoverLog`` without ``.kafka_cleanshutdown``: every segment from the one holding the
  recovery point (``recovery-point-offset-checkpoint``, 0 without an entry) is recovered in order;
  the first that loses bytes ends the walk and every later segment is deleted;
* ``LogSegment.recover``: batches walked from byte 0, each ``ensureValid`` (v2: size and CRC-32C;
  v0/v1: CRC-32); the first invalid batch, corrupt framing or cut-off tail truncates the ``.log``
  there; an offset-index entry after more than ``index.interval.bytes`` since the last one, with a
  time-index entry when the max timestamp grew, and a final time-index entry; an index entry whose
  offset is not above the previous one (``InvalidOffsetException``) empties the whole segment;
  leader epochs of v2 batches assigned to the epoch cache;
* afterwards: LEO = the last segment's next offset (all segments deleted when it is below the
  log start checkpoint), epoch cache truncated from the end at LEO and from the start at the log
  start checkpoint, log start = ``max(checkpoint, first base)``, recovery point = LEO after a clean
  shutdown else ``min(checkpoint, LEO)``, high watermark = the replication checkpoint clamped.

Producer-state rebuild and ``.txnindex`` rebuild are not predicted (their files are left as found).
Pure: reads the files, writes nothing; :func:`recovered_segment_files` gives the bytes a
``--write-segments`` copy holds.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_format.common.crc import crc32, crc32c
from kafka_format.common.errors import CorruptRecordError
from kafka_format.records import batch_v2
from kafka_format.records.entry import LOG_OVERHEAD
from kafka_format.records.record_batch import NO_TIMESTAMP
from kafka_format.storage.batch_heads import SCAN_CHUNK, BatchHead, next_offset_after, parse_batch_head
from kafka_format.storage.index import OFFSET_ENTRY, TIME_ENTRY
from kafka_format.storage.partition_files import Segment, filename_prefix_from_offset
from kafka_format.storage.partition_log import PartitionLog
from kafka_format.storage.partition_state import iter_batch_heads, last_index_position
from kafka_format.storage.watermarks import high_watermark_on_load

__all__ = ["ROW_FIELDS", "RecoveryPlan", "SegmentRecovery", "plan_recovery", "recover_segment",
           "recovered_segment_files"]

ROW_FIELDS = ("topic", "partition", "logDir", "cleanShutdown", "recoveryPoint", "logStartOffset",
              "logEndOffset", "highWatermark", "truncatedAt", "bytesDropped", "recordsDropped",
              "deletedSegments", "rebuiltIndexes", "leaderEpochs", "actions")
"""The keys of one ``partitions.jsonl`` line, in order."""

_CRC = struct.Struct(">I")
_LEGACY_CRC_AT = LOG_OVERHEAD            # v0/v1: crc right after offset and size
_LEGACY_CRC_FROM = LOG_OVERHEAD + 4      # ... covering magic .. end of message

_NOTE_ACTIONS = (    # log_loader's reconciliation notes -> what the broker does to the file
    (" (pending deletion)", "deleted {} (.deleted file left by a deletion)"),
    (" (unfinished cleaning output)", "deleted {} (.cleaned file of an interrupted cleaning)"),
    (" (replaced by swap segment)", "deleted {} (replaced by an interrupted swap)"),
)


@dataclass(frozen=True)
class SegmentRecovery:
    """``LogSegment.recover`` of one segment: where it stops and the indexes it rebuilds."""

    base_offset: int
    size: int
    valid_bytes: int
    next_offset: int
    reason: str | None                         # why bytes past valid_bytes go (None: none go)
    offset_entries: tuple[tuple[int, int], ...]  # (absolute offset, position)
    time_entries: tuple[tuple[int, int], ...]    # (timestamp, absolute offset)
    epochs: tuple[tuple[int, int], ...]          # (epoch, base offset) of each v2 batch with an epoch
    fatal: str | None = None                     # the broker cannot load the log (offset overflow)

    @property
    def truncated_bytes(self) -> int:
        return self.size - self.valid_bytes

    def index_bytes(self) -> bytes:
        """The rebuilt ``.index`` (trimmed to its entries)."""
        return b"".join(OFFSET_ENTRY.pack(o - self.base_offset, p) for o, p in self.offset_entries)

    def timeindex_bytes(self) -> bytes:
        """The rebuilt ``.timeindex`` (trimmed to its entries)."""
        return b"".join(TIME_ENTRY.pack(t, o - self.base_offset) for t, o in self.time_entries)


@dataclass(frozen=True)
class RecoveryPlan:
    """The broker's state of one partition after it loads it, and what it did to the files."""

    topic: str
    partition: int
    log_dir: str
    kind: str
    clean_shutdown: bool
    recovery_point: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    truncated_at: int | None
    bytes_dropped: int
    records_dropped: int
    deleted_segments: tuple[int, ...]
    rebuilt_indexes: tuple[int, ...]
    leader_epochs: tuple[tuple[int, int], ...]
    actions: tuple[str, ...]
    recovered: dict[int, SegmentRecovery] = field(default_factory=dict, compare=False)
    kept_segments: tuple[int, ...] = ()

    def row(self) -> dict[str, Any]:
        """One ``partitions.jsonl`` line (:data:`ROW_FIELDS`)."""
        return {"topic": self.topic, "partition": self.partition, "logDir": self.log_dir,
                "cleanShutdown": self.clean_shutdown, "recoveryPoint": self.recovery_point,
                "logStartOffset": self.log_start_offset, "logEndOffset": self.log_end_offset,
                "highWatermark": self.high_watermark, "truncatedAt": self.truncated_at,
                "bytesDropped": self.bytes_dropped, "recordsDropped": self.records_dropped,
                "deletedSegments": list(self.deleted_segments), "rebuiltIndexes": list(self.rebuilt_indexes),
                "leaderEpochs": [list(e) for e in self.leader_epochs], "actions": list(self.actions)}


def _valid(data: bytes, head: BatchHead) -> str | None:
    """``RecordBatch.ensureValid``: None, or why the batch is invalid."""
    if head.magic == 2:
        stored = _CRC.unpack_from(data, batch_v2.CRC_OFFSET)[0]
        computed = crc32c(data[batch_v2.ATTRIBUTES_OFFSET:head.size])
    else:
        stored = _CRC.unpack_from(data, _LEGACY_CRC_AT)[0]
        computed = crc32(data[_LEGACY_CRC_FROM:head.size])
    if stored != computed:
        return f"CRC mismatch (stored {stored}, computed {computed})"
    return None


def _walk(read_at: Any, size: int, path: str | None) -> Iterator[tuple[BatchHead | None, bytes, str | None]]:
    """``FileRecords.batches()`` from byte 0: (head, batch bytes, None) per batch, then at most one
    (None, b"", reason) where the walk stops before the end of the file."""
    pos = 0
    window, window_at = b"", 0
    while True:
        if size - pos <= 17:       # HEADER_SIZE_UP_TO_MAGIC: FileLogInputStream stops here
            if pos < size:
                yield None, b"", f"{size - pos} trailing bytes too short for a batch header"
            return
        want = min(batch_v2.HEADER_SIZE, size - pos)
        if not (window_at <= pos and pos + want <= window_at + len(window)):
            window, window_at = bytes(read_at(min(max(SCAN_CHUNK, want), size - pos), pos)), pos
        try:
            head = parse_batch_head(window[pos - window_at:pos - window_at + want], pos, size, path=path)
        except CorruptRecordError as err:
            yield None, b"", f"corrupt batch framing: {err}"
            return
        if head is None:
            zero = window[pos - window_at:pos - window_at + 12] == bytes(12)
            yield None, b"", ("zero-filled tail (size 0 is below the minimum record overhead)" if zero
                              else "batch cut off at the end of the file")
            return
        if pos + head.size > window_at + len(window):
            window, window_at = bytes(read_at(min(max(SCAN_CHUNK, head.size), size - pos), pos)), pos
        data = window[pos - window_at:pos - window_at + head.size]
        yield head, data, None
        pos += head.size


def recover_segment(part: PartitionLog, seg: Segment, index_interval_bytes: int) -> SegmentRecovery:
    """``LogSegment.recover`` of ``seg`` (read only): valid bytes, rebuilt indexes, epochs seen."""
    size = int(seg.log_size or 0)
    offsets: list[tuple[int, int]] = []
    times: list[tuple[int, int]] = []
    epochs: list[tuple[int, int]] = []
    max_ts, max_ts_offset = NO_TIMESTAMP, seg.base_offset
    valid, last_entry = 0, 0
    reason: str | None = None
    next_offset = seg.base_offset
    if seg.log_path is None or size == 0:
        return SegmentRecovery(seg.base_offset, size, 0, seg.base_offset, None, (), (), ())
    h = part.filesystem
    with h.opened(h.fs_path(seg.log_path)) as f:
        for head, data, stop in _walk(f.read_at, size, seg.log_path):
            if head is None:
                reason = f"at byte {valid}: {stop}"
                break
            bad = _valid(data, head)
            if bad is not None:
                reason = f"at byte {valid}: invalid batch at offset {head.base_offset}: {bad}"
                break
            if not 0 <= head.last_offset - seg.base_offset <= 0x7FFFFFFF:
                # ensureOffsetInRange: LogSegmentOffsetOverflowException; LogLoader.retryOnOffsetOverflow
                # then splits the segment, which refuses a segment without a real overflow: the log dir fails
                return SegmentRecovery(
                    seg.base_offset, size, size, seg.base_offset, None, (), (), (),
                    fatal=f"{seg.name}.log at byte {valid}: batch offset {head.last_offset} does not fit the "
                          "segment (offset overflow): the broker tries to split the segment, fails and takes "
                          "the log dir offline (it does not start on these files)")
            if head.max_timestamp > max_ts:
                max_ts, max_ts_offset = head.max_timestamp, head.last_offset
            if valid - last_entry > index_interval_bytes:
                if (offsets and head.last_offset <= offsets[-1][0]) or (times and max_ts_offset < times[-1][1]):
                    # OffsetIndex/TimeIndex.append: InvalidOffsetException -> recoverLog empties the segment
                    return SegmentRecovery(
                        seg.base_offset, size, 0, seg.base_offset,
                        f"at byte {valid}: offset {head.last_offset} not above the previous index entry "
                        "(InvalidOffsetException: the segment is emptied)", (), (), ())
                offsets.append((head.last_offset, valid))
                if max_ts > (times[-1][0] if times else NO_TIMESTAMP):
                    times.append((max_ts, max_ts_offset))
                last_entry = valid
            valid += head.size
            next_offset = head.last_offset + 1
            if head.magic >= 2 and head.leader_epoch >= 0 and (not epochs or epochs[-1][0] != head.leader_epoch):
                epochs.append((head.leader_epoch, head.base_offset))
    if max_ts > (times[-1][0] if times else NO_TIMESTAMP):
        times.append((max_ts, max_ts_offset))
    return SegmentRecovery(seg.base_offset, size, valid, next_offset, reason, tuple(offsets), tuple(times),
                           tuple(epochs))


def _read_next_offset(part: PartitionLog, seg: Segment) -> int:
    """``LogSegment.readNextOffset`` of a segment not recovered: its index trusted."""
    start = last_index_position(part, seg)
    return next_offset_after(iter_batch_heads(part, seg, start), seg.base_offset)


def _assign(cache: list[tuple[int, int]], epoch: int, start: int) -> None:
    """``LeaderEpochFileCache.assign``: append when the epoch differs from the latest (or starts
    earlier), first removing entries with epoch >= it or start offset >= it."""
    if cache and not (epoch != cache[-1][0] or start < cache[-1][1]):
        return
    while cache and (cache[-1][0] >= epoch or cache[-1][1] >= start):
        cache.pop()
    cache.append((epoch, start))


def _truncate_epochs(cache: list[tuple[int, int]], end: int, start: int) -> list[tuple[int, int]]:
    """``truncateFromEnd(end)`` (entries starting at or after ``end`` go), then
    ``truncateFromStart(start)`` (leading entries starting at or before ``start`` go, the last of
    them coming back starting at ``start``)."""
    out = [e for e in cache if e[1] < end]
    removed = [e for e in out if e[1] <= start]
    if removed:
        out = [(removed[-1][0], start), *out[len(removed):]]
    return out


def _claimed(part: PartitionLog, segs: Sequence[Segment], from_offset: int) -> int:
    """Offsets the batch headers of ``segs`` claim at or above ``from_offset`` (a union of ranges)."""
    ranges = sorted((max(h.base_offset, from_offset), h.last_offset)
                    for s in segs for h in iter_batch_heads(part, s) if h.last_offset >= from_offset)
    total, upto = 0, from_offset
    for lo, hi in ranges:
        lo = max(lo, upto)
        if hi >= lo:
            total += hi - lo + 1
            upto = hi + 1
    return total


def _file_actions(part: PartitionLog) -> list[str]:
    actions: list[str] = []
    for note in part.notes:
        if note.startswith("ignored ") and "(swap file of an incomplete split" in note:
            actions.append(f"deleted {note.split()[1]} (swap at or above the smallest .cleaned offset)")
            continue
        for tail, text in _NOTE_ACTIONS:
            if note.startswith("ignored ") and note.endswith(tail):
                actions.append(text.format(note[len("ignored "):-len(tail)]))
                break
        else:
            if note.startswith("used ") and note.endswith("(interrupted swap)"):
                words = note.split()
                actions.append(f"swap completed: renamed {words[1]} to {words[3]}")
    for orphan in part.orphan_segments:
        actions.append(f"deleted the index files of {orphan.name} (no .log)")
    return actions


def plan_recovery(part: PartitionLog, *, clean_shutdown: bool, index_interval_bytes: int = 4096,
                  expected_topic_id: str | None = None) -> RecoveryPlan:
    """The broker's load of ``part`` (a replica of a log dir that had ``clean_shutdown``)."""
    actions = _file_actions(part)
    recovery_ckpt = part.recovery_point if part.recovery_point is not None else 0
    start_ckpt = part.log_start_offset_checkpoint if part.log_start_offset_checkpoint is not None else 0
    if expected_topic_id is not None and part.topic_id is not None and part.topic_id != expected_topic_id:
        actions.append(f"partition.metadata topic id {part.topic_id} is not the topic's {expected_topic_id}: "
                       "the broker treats the replica as stray (renamed to -stray and deleted)")
    segs = [s for s in part.segments if s.log_path is not None]
    if part.kind == "delete":
        actions.append("-delete dir: loaded without recovery, removed after file.delete.delay.ms")
        end = _read_next_offset(part, segs[-1]) if segs else 0
        return RecoveryPlan(part.topic, part.partition, part.log_dir, part.kind, clean_shutdown, 0,
                            max(start_ckpt, segs[0].base_offset if segs else 0), end,
                            high_watermark_on_load(part.high_watermark_checkpoint or 0, log_start_offset=0,
                                                   log_end_offset=end),
                            None, 0, 0, (), (), tuple(part.leader_epochs.entries if part.leader_epochs else ()),
                            tuple(actions), kept_segments=tuple(s.base_offset for s in segs))
    if part.kind == "future":
        actions.append("-future dir: loaded and recovered as a future replica; alter-log-dirs resumes copying")
    cache: list[tuple[int, int]] = [(e.epoch, e.start_offset) for e in (part.leader_epochs.entries
                                                                        if part.leader_epochs else ())]
    recovered: dict[int, SegmentRecovery] = {}
    interval = index_interval_bytes

    def recover(seg: Segment) -> SegmentRecovery:
        r = recover_segment(part, seg, interval)
        if r.fatal is not None:
            actions.append(r.fatal)
        for epoch, base in r.epochs:
            if not cache or epoch > cache[-1][0]:
                _assign(cache, epoch, base)
        recovered[seg.base_offset] = r
        return r

    for seg in segs:                       # loadSegmentFiles: no .index -> recoverSegment
        if seg.index_path is None:
            actions.append(f"rebuilt the indexes of {seg.name} (no .index)")
            recover(seg)
        elif seg.timeindex_path is None:
            actions.append(f"created an empty {seg.name}.timeindex (missing; not rebuilt)")
    deleted: list[Segment] = []
    kept = list(segs)
    if not clean_shutdown:
        floor = [s for s in segs if s.base_offset <= recovery_ckpt]
        first = segs.index(floor[-1]) if floor else 0
        for i in range(first, len(segs)):
            r = recover(segs[i])
            if r.fatal is not None:
                break
            if r.truncated_bytes > 0:
                deleted = segs[i + 1:]
                kept = segs[:i + 1]
                break
    # LEO of the last kept segment
    last = kept[-1] if kept else None
    if last is None:
        end = start_ckpt
    elif last.base_offset in recovered:
        end = recovered[last.base_offset].next_offset
    else:
        end = _read_next_offset(part, last)
    if kept and end < start_ckpt:
        actions.append(f"deleted every segment: log end {end} is below the log start checkpoint {start_ckpt}")
        deleted, kept, cache, end = list(segs), [], [], start_ckpt
    if not kept:
        actions.append(f"created an empty segment at {start_ckpt}")
    for s in deleted:
        actions.append(f"deleted segment {s.name} (after a truncation; renamed .deleted)")
    shrunk = [b for b, r in recovered.items() if r.truncated_bytes > 0 and any(s.base_offset == b for s in kept)]
    for b in shrunk:
        r = recovered[b]
        actions.append(f"truncated {filename_prefix_from_offset(b)}.log to {r.valid_bytes} bytes {r.reason}")
    truncated_at = end if (deleted or shrunk) else None
    bytes_dropped = sum(int(s.log_size or 0) for s in deleted) + sum(recovered[b].truncated_bytes for b in shrunk)
    records_dropped = _claimed(part, segs, end) if truncated_at is not None else 0
    epochs = _truncate_epochs(cache, end, start_ckpt)
    log_start = max(start_ckpt, kept[0].base_offset if kept else start_ckpt)
    recovery_point = end if clean_shutdown else min(recovery_ckpt, end)
    hw = high_watermark_on_load(part.high_watermark_checkpoint or 0, log_start_offset=log_start,
                                log_end_offset=end)
    rebuilt = tuple(sorted(b for b in recovered if any(s.base_offset == b for s in kept)))
    return RecoveryPlan(part.topic, part.partition, part.log_dir, part.kind, clean_shutdown, recovery_point,
                        log_start, end, hw, truncated_at, bytes_dropped, records_dropped,
                        tuple(s.base_offset for s in deleted), rebuilt, tuple(epochs), tuple(actions),
                        recovered=recovered, kept_segments=tuple(s.base_offset for s in kept))


def recovered_segment_files(part: PartitionLog, plan: RecoveryPlan) -> Iterator[tuple[str, bytes]]:
    """(file name, bytes) of every segment file the broker leaves: kept ``.log`` files (truncated
    where recovered), rebuilt or original ``.index``/``.timeindex``, original ``.txnindex``."""
    h = part.filesystem

    def read(path: str | None, upto: int | None = None) -> bytes:
        if path is None:
            return b""
        with h.opened(h.fs_path(path)) as f:
            n = int(f.size()) if upto is None else upto
            return bytes(f.read_at(n, 0)) if n else b""

    by_base = {s.base_offset: s for s in part.segments}
    for base in plan.kept_segments:
        seg = by_base[base]
        name = filename_prefix_from_offset(base)
        r = plan.recovered.get(base)
        if r is not None:
            yield name + ".log", read(seg.log_path, r.valid_bytes)
            yield name + ".index", r.index_bytes()
            yield name + ".timeindex", r.timeindex_bytes()
        else:
            yield name + ".log", read(seg.log_path)
            yield name + ".index", read(seg.index_path)
            yield name + ".timeindex", read(seg.timeindex_path)
        if seg.txnindex_path is not None:
            yield name + ".txnindex", read(seg.txnindex_path)
