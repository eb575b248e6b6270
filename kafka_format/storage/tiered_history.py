"""One history per tiered partition: which remote segment or local segment serves each offset.

A partition with tiered storage (KIP-405) serves offsets ``[logStartOffset, localLogStartOffset)``
from the remote tier and the rest from its local segments (``ReplicaManager.readFromLog``: a
fetch at or above ``logStartOffset`` and below ``localLogStartOffset`` is a remote read).  This
module decides, offline and as the broker does, which remote segment serves each offset below the
local log start:

* the remote segments readable by the broker are those in ``COPY_SEGMENT_FINISHED``, registered
  per leader epoch in the order their copies finished (``RemoteLogMetadataCache`` /
  ``RemoteLogLeaderEpochState.handleSegmentWithCopySegmentFinishedState``: a segment uploaded
  again by a new leader for the same epoch range unreferences the older one).  The cache is
  :class:`~kafka_format.internal.remote_log_metadata_cache.RemoteLogMetadataCache`, the one
  implementation of Kafka's: the replay of ``__remote_log_metadata``'s cache of the partition, or one
  built from the finished segments in finish order (``RemoteLogMetadataCache.from_finished_segments``);
* an offset is served by ``remoteLogSegmentMetadata(epochForOffset(offset), offset)``
  (``RemoteLogManager.read`` / ``findNextSegmentMetadata``): the epoch that owns the offset in the
  local replica's leader epoch cache (``leader-epoch-checkpoint``, ``LeaderEpochFileCache.epochForOffset``),
  the greatest registered start offset of that epoch at or below the offset, and the offset
  within that epoch's range in the segment;
* ``logStartOffset`` is the ``log-start-offset-checkpoint`` entry (``LogLoader`` keeps it as is
  for a remote-enabled log), else what ``RemoteLogManager.findLogStartOffset`` would set; the
  local log start is ``max(logStartOffset, first local base)`` (``UnifiedLog``).

The answer is a :class:`TieredHistory`: pieces in offset order (:class:`RemotePiece`,
:class:`LocalPiece`), each the offsets one segment serves, and typed findings for everything
that does not fit: gaps, remote segments no offset is served from or only partly, files the
metadata names but the store lacks, filesets no metadata names.  :meth:`TieredHistory.read_logs`
gives the pieces as partition logs the planner and the split reader read where the files lie.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TypeVar

from kafka_format.common.errors import LogDirError
from kafka_format.internal.remote_log_metadata import (
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
)
from kafka_format.internal.remote_log_metadata_cache import RemoteLogMetadataCache
from kafka_format.storage import checkpoints as ckpt
from kafka_format.storage.partition_files import Segment
from kafka_format.storage.partition_log import PartitionLog
from kafka_format.storage.partition_state import log_end_offset as local_log_end_offset
from kafka_format.storage.remote_tier import (
    RemoteFileset,
    RemoteFileType,
    RemotePartitionDir,
    RemoteStorage,
    fileset_file_name,
    remote_partition_dir_name,
    remote_partition_log,
)

__all__ = [
    "FROM_CHECKPOINT",
    "FROM_LOCAL_LOG",
    "FROM_REMOTE_TIER",
    "LOCAL_TIER",
    "REMOTE_TIER",
    "LocalPiece",
    "MissingRemoteFiles",
    "NoLeaderEpochs",
    "OffsetGap",
    "PartlyServedSegment",
    "Piece",
    "RemotePiece",
    "RemoteSizeMismatch",
    "TierFinding",
    "TierLog",
    "TieredHistory",
    "UnfinishedFileset",
    "UnnamedFileset",
    "UnusedRemoteSegment",
    "epoch_for_offset",
    "filtered_lineage",
    "find_log_start_offset",
    "leader_epoch_lineage",
    "tiered_history",
    "tiered_log_start",
    "within_leader_epochs",
]

REMOTE_TIER = "remote"
LOCAL_TIER = "local"
#: ``TieredHistory.log_start_source`` values: where the log start offset came from.
FROM_CHECKPOINT = "log-start-offset-checkpoint"
FROM_REMOTE_TIER = "RemoteLogManager.findLogStartOffset"
FROM_LOCAL_LOG = "local log start"

Lineage = tuple[ckpt.EpochEntry, ...]


# ---------------------------------------------------------------------------------------------
# Kafka's rules


def _lineage(entries: Iterable[tuple[int, int]]) -> Lineage:
    """A leader epoch cache's entries as ``LeaderEpochFileCache`` keeps them: by epoch (a TreeMap)."""
    by_epoch = {int(e): int(o) for e, o in entries}
    return tuple(ckpt.EpochEntry(e, by_epoch[e]) for e in sorted(by_epoch))


def leader_epoch_lineage(replica: PartitionLog) -> Lineage:
    """The replica's ``leader-epoch-checkpoint`` as ``LeaderEpochFileCache`` keeps it: (epoch, start
    offset) entries by epoch, none without the file."""
    return _lineage(replica.leader_epochs.entries if replica.leader_epochs is not None else ())


def epoch_for_offset(lineage: Sequence[tuple[int, int]], offset: int) -> int | None:
    """``LeaderEpochFileCache.epochForOffset`` over (epoch, start offset) entries in epoch order:
    the epoch whose start offset equals ``offset``, else the last epoch before the first entry that
    starts above it; None when the first entry already does."""
    previous: int | None = None
    for epoch, start in lineage:
        if start == offset:
            return epoch
        if start > offset:
            return previous
        previous = epoch
    return previous


def filtered_lineage(lineage: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``RemoteLogManager.buildFilteredLeaderEpochMap``: epochs followed by one with the same start
    offset (no records of their own) left out."""
    items = list(lineage)
    drop = {items[i][0] for i in range(len(items) - 1) if items[i][1] == items[i + 1][1]}
    return [(e, o) for e, o in items if e not in drop]


def within_leader_epochs(metadata: RemoteLogSegmentMetadata, log_end_offset: int,
                         lineage: Sequence[tuple[int, int]]) -> bool:
    """``RemoteLogManager.isRemoteSegmentWithinLeaderEpochs`` against the replica's leader epoch
    lineage (filtered as the broker's cleanup filters it): the segment's epochs and their start
    offsets agree with the lineage and its end offset lies below the epoch's successor and the log
    end offset."""
    leader = dict(filtered_lineage(_lineage(lineage)))
    seg = filtered_lineage(list(metadata.segment_leader_epochs.items()))   # in epoch order
    if not leader or not seg:
        return False
    leader_keys = sorted(leader)
    seg_map = dict(seg)
    seg_keys = [e for e, _ in seg]
    last = seg_keys[-1]
    if last < leader_keys[0] or last > leader_keys[-1]:
        return False
    first = next((e for e in seg_keys if e >= leader_keys[0]), None)
    if first is None:
        return False

    def higher(keys: list[int], mapping: Mapping[int, int], epoch: int) -> tuple[int, int] | None:
        k = next((e for e in keys if e > epoch), None)
        return None if k is None else (k, mapping[k])

    for epoch, offset in seg:
        if epoch < first:
            continue
        if epoch not in leader:
            return False
        if epoch == first and any(e < epoch for e in leader_keys) and offset < leader[epoch]:
            return False
        if epoch == last:
            nxt = higher(leader_keys, leader, epoch)
            if nxt is not None and metadata.end_offset > nxt[1] - 1:
                return False
        if epoch != last and higher(leader_keys, leader, epoch) != higher(seg_keys, seg_map, epoch):
            return False
    return metadata.end_offset < log_end_offset


def find_log_start_offset(lineage: Sequence[tuple[int, int]], cache: RemoteLogMetadataCache) -> int | None:
    """``RemoteLogManager.findLogStartOffset``: from the earliest epoch of the lineage on, the start
    offset of the first segment ``listRemoteLogSegments(epoch)`` lists (None when no epoch lists one)."""
    for epoch, _ in _lineage(lineage):
        listed = cache.list_remote_log_segments(epoch)
        if listed:
            return listed[0].start_offset
    return None


def tiered_log_start(local: PartitionLog, cache: RemoteLogMetadataCache,
                     lineage: Sequence[tuple[int, int]] | None = None) -> tuple[int, str]:
    """A tiered replica's log start and where it comes from: the ``log-start-offset-checkpoint``
    entry as is (``LogLoader`` keeps a remote log's checkpointed start, below its first local segment
    once local retention deleted segments), else ``RemoteLogManager.findLogStartOffset`` over the
    remote metadata, else the local log start; never above the local log start.  ``lineage``: the
    leader epochs as (epoch, start offset) (default: the replica's ``leader-epoch-checkpoint``)."""
    local_start = local.log_start_offset
    if local.log_start_offset_checkpoint is not None:
        log_start, source = local.log_start_offset_checkpoint, FROM_CHECKPOINT
    else:
        if lineage is None:
            lineage = leader_epoch_lineage(local)
        found = find_log_start_offset(_lineage(lineage), cache)
        if found is not None and found < local_start:
            log_start, source = found, FROM_REMOTE_TIER
        else:
            log_start, source = local_start, FROM_LOCAL_LOG
    return min(log_start, local_start), source


# ---------------------------------------------------------------------------------------------
# the answer


@dataclass(frozen=True)
class RemotePiece:
    """Offsets ``[start_offset, end_offset)`` served by one remote segment.  ``fileset`` is the
    store's fileset of the segment (None when the store has none: a :class:`MissingRemoteFiles`
    finding says so); ``epoch`` is the leader epoch the lookup at ``start_offset`` used."""

    start_offset: int
    end_offset: int
    metadata: RemoteLogSegmentMetadata
    fileset: RemoteFileset | None
    epoch: int

    tier = REMOTE_TIER

    @property
    def segment_id(self) -> str:
        return self.metadata.segment_id

    @property
    def segment_start_offset(self) -> int:
        return self.metadata.start_offset

    @property
    def segment_end_offset(self) -> int:
        """The segment's last offset (inclusive, as the metadata says)."""
        return self.metadata.end_offset

    @property
    def size(self) -> int:
        """``segmentSizeInBytes``."""
        return self.metadata.segment_size_in_bytes

    @property
    def max_timestamp_ms(self) -> int:
        return self.metadata.max_timestamp_ms

    @property
    def readable(self) -> bool:
        """Whether the broker's fetch finds every file it opens (the fileset is complete and named
        after the metadata's start offset)."""
        return (self.fileset is not None and self.fileset.complete
                and self.fileset.start_offset == self.metadata.start_offset)

    def location(self, kind: RemoteFileType = RemoteFileType.SEGMENT) -> str | None:
        """Location of the fileset's file of ``kind`` (None when absent)."""
        return None if self.fileset is None else self.fileset.location(kind)


@dataclass(frozen=True)
class LocalPiece:
    """Offsets ``[start_offset, end_offset)`` served by the local segment ``index`` of the replica."""

    start_offset: int
    end_offset: int
    segment: Segment
    index: int

    tier = LOCAL_TIER

    @property
    def size(self) -> int:
        return int(self.segment.log_size or 0)

    def location(self) -> str | None:
        return self.segment.log_path


Piece = RemotePiece | LocalPiece


@dataclass(frozen=True, kw_only=True)
class TierFinding:
    """Something the tiers hold that a clean history would not: where it starts and what it is."""

    start_offset: int
    message: str


@dataclass(frozen=True, kw_only=True)
class OffsetGap(TierFinding):
    """Offsets ``[start_offset, end_offset)`` no segment serves (a fetch there is out of range):
    ``between`` is ``log start and remote tier``, ``remote segments`` or ``remote tier and local log``."""

    end_offset: int
    between: str
    before: str | None = None        # segment id (or local location) serving the offset before
    after: str | None = None         # segment id (or local location) serving end_offset


@dataclass(frozen=True, kw_only=True)
class UnusedRemoteSegment(TierFinding):
    """A ``COPY_SEGMENT_FINISHED`` segment no offset of the history is served from; ``reason``:
    ``below log start``, ``replaced`` (unreferenced by a later copy of its epochs: ``replaced_by``),
    ``outside lineage`` (``isRemoteSegmentWithinLeaderEpochs`` false) or ``not chosen`` (the lineage's
    epochs map its offsets to ``served_by``)."""

    end_offset: int
    segment_id: str
    reason: str
    replaced_by: tuple[str, ...] = ()
    served_by: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PartlyServedSegment(TierFinding):
    """A chosen segment whose offsets ``unserved`` (half-open ranges inside the history's remote
    range) are served by other segments (``served_by``) or by none."""

    end_offset: int
    segment_id: str
    unserved: tuple[tuple[int, int], ...]
    served_by: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class MissingRemoteFiles(TierFinding):
    """A ``COPY_SEGMENT_FINISHED`` segment whose files the store lacks (``missing`` types) or holds
    under other names; ``expected`` is the ``.log`` location the broker's fetch opens."""

    end_offset: int
    segment_id: str
    expected: str
    missing: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class RemoteSizeMismatch(TierFinding):
    """The ``.log`` of a segment is not ``segmentSizeInBytes`` long."""

    segment_id: str
    location: str
    expected: int
    found: int | None


@dataclass(frozen=True, kw_only=True)
class UnnamedFileset(TierFinding):
    """A fileset no metadata names (the orphan of a copy that failed or was interrupted before
    its metadata was written, or of a deletion whose metadata is gone)."""

    segment_id: str
    location: str
    files: tuple[str, ...]
    complete: bool


@dataclass(frozen=True, kw_only=True)
class UnfinishedFileset(TierFinding):
    """A fileset whose segment's metadata is in a state the broker does not read from
    (``COPY_SEGMENT_STARTED``: copying or failed; ``DELETE_SEGMENT_*``: being or already deleted)."""

    segment_id: str
    location: str
    state: str


@dataclass(frozen=True, kw_only=True)
class NoLeaderEpochs(TierFinding):
    """The replica has no leader epoch entries: ``RemoteLogManager.read`` finds no epoch for any
    offset, so the broker serves nothing from the remote tier."""

    end_offset: int


F = TypeVar("F", bound=TierFinding)


@dataclass(frozen=True)
class TierLog:
    """Offsets ``[start_offset, end_offset)`` of one tier as a partition log whose segments do not
    overlap: plan it with these bounds (remote runs are ``kind="remote"`` logs over the fileset files)."""

    tier: str
    log: PartitionLog
    start_offset: int
    end_offset: int


@dataclass(frozen=True)
class TieredHistory:
    """A tiered partition from its log start to its log end, as the broker serves it."""

    partition: TopicIdPartition
    log_start_offset: int
    log_start_source: str
    local_log_start_offset: int
    log_end_offset: int
    pieces: tuple[Piece, ...]
    findings: tuple[TierFinding, ...]
    #: ``COPY_SEGMENT_FINISHED`` segments wholly at or above the local log start (served locally)
    local_copies: tuple[RemoteLogSegmentMetadata, ...]
    local: PartitionLog = field(repr=False)
    remote: RemoteStorage | None = field(default=None, repr=False)
    remote_dir: RemotePartitionDir | None = field(default=None, repr=False)

    @property
    def remote_pieces(self) -> tuple[RemotePiece, ...]:
        return tuple(p for p in self.pieces if isinstance(p, RemotePiece))

    @property
    def local_pieces(self) -> tuple[LocalPiece, ...]:
        return tuple(p for p in self.pieces if isinstance(p, LocalPiece))

    def expected_location(self, piece: RemotePiece) -> str:
        """The ``.log`` location the broker's fetch opens for ``piece``."""
        return _expected_log(self.remote, self.remote_dir, self.partition, piece.metadata)

    def findings_of(self, kind: type[F]) -> list[F]:
        """The findings of one type."""
        return [f for f in self.findings if isinstance(f, kind)]

    def read_logs(self, *, skip_unreadable: bool = False,
                  keep: Callable[[RemotePiece], bool] | None = None) -> list[TierLog]:
        """The pieces as partition logs to read, in offset order: runs of remote pieces whose files
        end where the next begins (each run one ``kind="remote"`` log over the fileset files), then
        the local replica from the local log start.  ``keep`` leaves out the remote pieces it is
        false for (pruning by their metadata: no file of theirs is opened).  A remote piece the store
        cannot serve raises :class:`LogDirError` naming the file the broker would open, unless
        ``skip_unreadable``."""
        out: list[TierLog] = []
        run: list[RemotePiece] = []

        def flush() -> None:
            if not run:
                return
            assert self.remote is not None and self.remote_dir is not None
            filesets = [p.fileset for p in run if p.fileset is not None]
            log = remote_partition_log(self.remote, self.remote_dir, filesets,
                                       end_offsets=[p.segment_end_offset for p in run],
                                       log_start_offset=run[0].start_offset, log_end_offset=run[-1].end_offset,
                                       leader_epochs=self.local.leader_epochs)
            out.append(TierLog(REMOTE_TIER, log, run[0].start_offset, run[-1].end_offset))
            run.clear()

        for piece in self.remote_pieces:
            if keep is not None and not keep(piece):
                flush()
                continue
            if not piece.readable:
                if skip_unreadable:
                    flush()
                    continue
                raise LogDirError(f"remote segment {piece.segment_id} cannot be read",
                                  path=_expected_log(self.remote, self.remote_dir, self.partition, piece.metadata),
                                  expected=f"a complete fileset for offsets {piece.segment_start_offset}.."
                                           f"{piece.segment_end_offset}",
                                  found="; ".join(piece.fileset.problems) if piece.fileset else "no file of it",
                                  code="REMOTE_FILESET_INVALID")
            if run:
                prev = run[-1]
                if not (piece.start_offset == prev.end_offset == prev.segment_end_offset + 1
                        and piece.start_offset == piece.segment_start_offset):
                    flush()
            run.append(piece)
        flush()
        if self.local_pieces:
            out.append(TierLog(LOCAL_TIER, self.local, self.local_pieces[0].start_offset, self.log_end_offset))
        return out


# ---------------------------------------------------------------------------------------------
# building the history


def _expected_log(remote: RemoteStorage | None, directory: RemotePartitionDir | None, partition: TopicIdPartition,
                  metadata: RemoteLogSegmentMetadata) -> str:
    """The ``.log`` location the broker's fetch opens (``RemoteLogSegmentFileset.openFileset``)."""
    if remote is not None and remote.expected_log is not None:
        return remote.expected_log(partition, metadata)
    name = fileset_file_name(metadata.start_offset, metadata.segment_id, RemoteFileType.SEGMENT)
    if directory is not None:
        return f"{directory.location}/{name}"
    where = remote_partition_dir_name(partition)
    return f"{remote.root}/{where}/{name}" if remote is not None else f"{where}/{name}"


def _identity(local: PartitionLog, metadata: Sequence[RemoteLogSegmentMetadata],
              remote: RemoteStorage | None) -> tuple[TopicIdPartition, RemotePartitionDir | None]:
    topic_id = local.topic_id
    for m in metadata:
        if (m.partition.topic, m.partition.partition) != (local.topic, local.partition):
            raise ValueError(f"segment {m.segment_id} belongs to {m.partition}, not to {local.topic}-{local.partition}")
        if topic_id is None:
            topic_id = m.partition.topic_id
        elif m.partition.topic_id != topic_id:
            raise ValueError(f"segment {m.segment_id} belongs to topic id {m.partition.topic_id}, "
                             f"the replica's is {topic_id} ({local.path})")
    if topic_id is None and remote is not None:
        dirs = remote.partition_dirs(local.topic, local.partition)
        if len(dirs) > 1:
            raise ValueError(f"{remote.root} holds {len(dirs)} incarnations of {local.topic}-{local.partition} "
                             f"({', '.join(d.name for d in dirs)}): the replica has no topic id to choose by")
        if dirs:
            topic_id = dirs[0].partition.topic_id
    if topic_id is None:
        raise ValueError(f"no topic id for {local.topic}-{local.partition}: no partition.metadata in {local.path}, "
                         "no segment metadata and no remote partition dir")
    partition = TopicIdPartition(topic_id, local.topic, local.partition)
    return partition, (remote.partition_dir(partition) if remote is not None else None)


def _intervals(start: int, end: int, points: Iterable[int]) -> list[tuple[int, int]]:
    cuts = sorted({start, end, *(p for p in points if start < p < end)})
    return list(pairwise(cuts))


def _subtract(lo: int, hi: int, ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """``[lo, hi)`` minus ``ranges`` (half-open), as sorted half-open ranges."""
    out: list[tuple[int, int]] = []
    at = lo
    for s, e in sorted(ranges):
        if e <= at:
            continue
        if s >= hi:
            break
        if s > at:
            out.append((at, s))
        at = max(at, e)
    if at < hi:
        out.append((at, hi))
    return out


def _fmt(ranges: Sequence[tuple[int, int]]) -> str:
    return ", ".join(f"{s}..{e - 1}" for s, e in ranges)


def tiered_history(local: PartitionLog, metadata: Iterable[RemoteLogSegmentMetadata] | RemoteLogMetadataCache,
                   remote: RemoteStorage | None, *,
                   leader_epochs: Sequence[tuple[int, int]] | None = None,
                   log_end_offset: int | None = None) -> TieredHistory:
    """The partition's history from its log start to its log end (see the module doc).

    ``local``: the replica (its segments, ``log-start-offset-checkpoint`` entry, leader epochs,
    topic id).  ``metadata``: the partition's remote metadata, either its
    :class:`~kafka_format.internal.remote_log_metadata_cache.RemoteLogMetadataCache` as replayed from
    ``__remote_log_metadata`` (``RemoteLogMetadataView.cache(partition)``), or its remote segments,
    each once in its latest state, in the order their copies finished (the ``COPY_SEGMENT_FINISHED``
    ones are replayed into a cache in that order: ``RemoteLogMetadataCache.from_finished_segments``;
    the others account for filesets).  ``remote``: the discovered store (None: no store, every named
    segment missing).  ``leader_epochs`` replaces the replica's ``leader-epoch-checkpoint``;
    ``log_end_offset`` the replica's (``LogSegment.readNextOffset`` of its last segment).
    """
    if isinstance(metadata, RemoteLogMetadataCache):
        cache = metadata
        given = cache.list_remote_log_segments()             # every segment not yet deleted
        partition, remote_dir = _identity(local, given, remote)
        finished = [m for m in given if m.state is RemoteLogSegmentState.COPY_SEGMENT_FINISHED]
    else:
        given = list(metadata)
        partition, remote_dir = _identity(local, given, remote)
        ids = [m.segment_id for m in given]
        if len(set(ids)) != len(ids):
            twice = sorted({i for i in ids if ids.count(i) > 1})
            raise ValueError(f"segments given twice: {twice} (pass each once, in its latest state)")
        finished = [m for m in given if m.state is RemoteLogSegmentState.COPY_SEGMENT_FINISHED]
        cache = RemoteLogMetadataCache.from_finished_segments(finished)
    if leader_epochs is not None:
        lineage = _lineage(leader_epochs)
    else:
        lineage = leader_epoch_lineage(local)
    findings: list[TierFinding] = []

    # -- offsets: log start, local log start, log end
    local_start = local.log_start_offset                      # max(checkpoint, first local base)
    leo = local_log_end_offset(local) if log_end_offset is None else log_end_offset
    log_start, source = tiered_log_start(local, cache, lineage)

    # -- remote pieces: offset by offset as RemoteLogManager.read chooses, merged into runs
    pieces: list[Piece] = []
    gaps: list[tuple[int, int]] = []
    if log_start < local_start:
        if not lineage:
            findings.append(NoLeaderEpochs(
                start_offset=log_start, end_offset=local_start,
                message=f"no leader epoch entries for {partition} ({local.path}): the broker's remote reads "
                        f"find no epoch (epochForOffset), offsets {log_start}..{local_start - 1} are not served"))
        # epochForOffset changes at an entry's start offset and, for entries sharing a start
        # offset, one past it (the exact match is the first of them, later offsets the last)
        points = cache.lookup_breakpoints() | {o for _, o in lineage} | {o + 1 for _, o in lineage}
        for lo, hi in _intervals(log_start, local_start, points):
            epoch = epoch_for_offset(lineage, lo)
            chosen = cache.remote_log_segment_metadata(epoch, lo) if epoch is not None else None
            last = pieces[-1] if pieces else None
            if chosen is None:
                if gaps and gaps[-1][1] == lo:
                    gaps[-1] = (gaps[-1][0], hi)
                else:
                    gaps.append((lo, hi))
            elif (isinstance(last, RemotePiece) and last.segment_id == chosen.segment_id
                  and last.end_offset == lo):
                pieces[-1] = RemotePiece(last.start_offset, hi, last.metadata, last.fileset, last.epoch)
            else:
                fileset = remote_dir.fileset(chosen.segment_id) if remote_dir is not None else None
                pieces.append(RemotePiece(lo, hi, chosen, fileset, epoch if epoch is not None else -1))

    # -- local pieces: the replica's segments from the local log start
    segs = local.segments
    bases = [s.base_offset for s in segs]
    for i, seg in enumerate(segs):
        nxt = bases[i + 1] if i + 1 < len(bases) else None
        if nxt is not None and nxt <= local_start:
            continue                                          # wholly below the local log start
        lo = max(seg.base_offset, local_start)
        end = nxt if nxt is not None else leo                 # the last one ends at the log end offset
        pieces.append(LocalPiece(lo, max(end, lo), seg, i))

    findings.extend(_gap_findings(gaps, pieces, log_start, local_start))
    findings.extend(_segment_findings(finished, pieces, cache, lineage, log_start, local_start, leo))
    findings.extend(_fileset_findings(partition, remote, remote_dir, given, finished))
    findings.sort(key=lambda f: (f.start_offset, type(f).__name__))
    local_copies = tuple(sorted((m for m in finished if m.start_offset >= local_start),
                                key=lambda m: (m.start_offset, m.segment_id)))
    return TieredHistory(partition, log_start, source, local_start, leo, tuple(pieces), tuple(findings),
                         local_copies, local, remote, remote_dir)


def _piece_name(piece: Piece | None) -> str | None:
    if piece is None:
        return None
    if isinstance(piece, RemotePiece):
        return piece.segment_id
    return piece.location()


def _gap_findings(gaps: list[tuple[int, int]], pieces: list[Piece], log_start: int,
                  local_start: int) -> list[TierFinding]:
    out: list[TierFinding] = []
    ending = {p.end_offset: p for p in pieces}
    starting: dict[int, Piece] = {}
    for p in pieces:
        starting.setdefault(p.start_offset, p)
    for lo, hi in gaps:
        before, after = ending.get(lo), starting.get(hi)
        if before is None and lo == log_start:
            between = "log start and remote tier"
        elif hi == local_start:
            between = "remote tier and local log"
        else:
            between = "remote segments"
        out.append(OffsetGap(
            start_offset=lo, end_offset=hi, between=between, before=_piece_name(before), after=_piece_name(after),
            message=f"offsets {lo}..{hi - 1} are served by no segment (between {between}: "
                    f"{_piece_name(before) or 'log start ' + str(log_start)} and "
                    f"{_piece_name(after) or 'local log start ' + str(local_start)})"))
    return out


def _segment_findings(finished: list[RemoteLogSegmentMetadata], pieces: list[Piece], cache: RemoteLogMetadataCache,
                      lineage: Lineage, log_start: int, local_start: int, leo: int) -> list[TierFinding]:
    out: list[TierFinding] = []
    remote = [p for p in pieces if isinstance(p, RemotePiece)]
    served: dict[str, list[tuple[int, int]]] = {}
    for p in remote:
        served.setdefault(p.segment_id, []).append((p.start_offset, p.end_offset))

    def overlapping(lo: int, hi: int, exclude: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.segment_id for p in remote
                                   if p.segment_id != exclude and p.start_offset < hi and lo < p.end_offset))

    for m in finished:
        sid, lo, hi = m.segment_id, m.start_offset, m.end_offset + 1
        span = f"{lo}..{hi - 1}"
        if sid in served:
            inner_lo, inner_hi = max(lo, log_start), min(hi, local_start)
            unserved = _subtract(inner_lo, inner_hi, served[sid])
            if unserved:
                by = tuple(dict.fromkeys(s for a, b in unserved for s in overlapping(a, b, sid)))
                out.append(PartlyServedSegment(
                    start_offset=lo, end_offset=m.end_offset, segment_id=sid, unserved=tuple(unserved), served_by=by,
                    message=f"remote segment {sid} ({span}) serves {_fmt(served[sid])}; offsets {_fmt(unserved)} "
                            f"are served by {', '.join(by) if by else 'no segment'} (leader epoch lineage)"))
            continue
        if lo >= local_start:
            continue                                         # a remote copy of what the local log serves
        if hi <= log_start:
            out.append(UnusedRemoteSegment(
                start_offset=lo, end_offset=m.end_offset, segment_id=sid, reason="below log start",
                message=f"remote segment {sid} ({span}) lies below the log start offset {log_start}: "
                        "the broker no longer serves it (its remote retention deletes it)"))
            continue
        by = overlapping(lo, hi, sid)
        if not cache.is_referenced(m.remote_log_segment_id):
            replaced = tuple(r.id for r in cache.replaced_by(m.remote_log_segment_id))
            out.append(UnusedRemoteSegment(
                start_offset=lo, end_offset=m.end_offset, segment_id=sid, reason="replaced", replaced_by=replaced,
                served_by=by,
                message=f"remote segment {sid} ({span}) was replaced for its leader epochs by the later copy of "
                        f"{', '.join(replaced)} (RemoteLogLeaderEpochState): no offset is served from it"))
        elif not within_leader_epochs(m, leo, lineage):
            out.append(UnusedRemoteSegment(
                start_offset=lo, end_offset=m.end_offset, segment_id=sid, reason="outside lineage", served_by=by,
                message=f"remote segment {sid} ({span}, epochs {dict(m.segment_leader_epochs)}) is not within the leader epoch "
                        f"lineage {dict(lineage)} (isRemoteSegmentWithinLeaderEpochs): no offset is served from it"
                        + (f"; {', '.join(by)} serve its offsets" if by else "")))
        else:
            out.append(UnusedRemoteSegment(
                start_offset=lo, end_offset=m.end_offset, segment_id=sid, reason="not chosen", served_by=by,
                message=f"remote segment {sid} ({span}) is served for no offset: the leader epoch lineage maps its "
                        f"offsets to {', '.join(by) if by else 'no segment'}"))
    return out


def _fileset_findings(partition: TopicIdPartition, remote: RemoteStorage | None, remote_dir: RemotePartitionDir | None,
                      given: list[RemoteLogSegmentMetadata], finished: list[RemoteLogSegmentMetadata]
                      ) -> list[TierFinding]:
    out: list[TierFinding] = []
    for m in finished:
        expected = _expected_log(remote, remote_dir, partition, m)
        fileset = remote_dir.fileset(m.segment_id) if remote_dir is not None else None
        span = f"{m.start_offset}..{m.end_offset}"
        if fileset is None:
            where = "no partition dir " + remote_partition_dir_name(partition) if remote_dir is None else "no file of it"
            out.append(MissingRemoteFiles(
                start_offset=m.start_offset, end_offset=m.end_offset, segment_id=m.segment_id, expected=expected,
                missing=tuple(t.name for t in RemoteFileType if not t.optional),
                message=f"remote segment {m.segment_id} ({span}) is COPY_SEGMENT_FINISHED but the store has "
                        f"{where}: expected {expected}"))
            continue
        if fileset.start_offset != m.start_offset:
            out.append(MissingRemoteFiles(
                start_offset=m.start_offset, end_offset=m.end_offset, segment_id=m.segment_id, expected=expected,
                missing=tuple(t.name for t in RemoteFileType if not t.optional),
                message=f"remote segment {m.segment_id} ({span}): the store names its files after start offset "
                        f"{fileset.start_offset}, the broker's fetch opens {expected}"))
            continue
        if not fileset.complete:
            out.append(MissingRemoteFiles(
                start_offset=m.start_offset, end_offset=m.end_offset, segment_id=m.segment_id, expected=expected,
                missing=tuple(t.name for t in fileset.missing),
                message=f"remote segment {m.segment_id} ({span}) in {fileset.partition_dir}: "
                        + "; ".join(fileset.problems)))
        size = fileset.log_size
        log = fileset.location(RemoteFileType.SEGMENT)
        if log is not None and size != m.segment_size_in_bytes:
            out.append(RemoteSizeMismatch(
                start_offset=m.start_offset, segment_id=m.segment_id, location=log, expected=m.segment_size_in_bytes,
                found=size,
                message=f"{log}: the metadata says segmentSizeInBytes {m.segment_size_in_bytes}, the file has "
                        f"{'an unknown size' if size is None else f'{size} bytes'}"))
    if remote_dir is not None:
        states = {m.segment_id: m.state for m in given}
        for f in remote_dir.filesets:
            state = states.get(f.segment_id)
            names = tuple(x.name for x in f.files)
            if state is None:
                out.append(UnnamedFileset(
                    start_offset=f.start_offset, segment_id=f.segment_id, location=f.partition_dir, files=names,
                    complete=f.complete,
                    message=f"fileset {f.segment_id} at start offset {f.start_offset} in {f.partition_dir} "
                            f"({'complete' if f.complete else 'partial'}: {', '.join(names)}) is named by no "
                            "segment metadata: left by a failed or interrupted copy"))
            elif state is not RemoteLogSegmentState.COPY_SEGMENT_FINISHED:
                out.append(UnfinishedFileset(
                    start_offset=f.start_offset, segment_id=f.segment_id, location=f.partition_dir, state=state.name,
                    message=f"fileset {f.segment_id} at start offset {f.start_offset} in {f.partition_dir} belongs "
                            f"to a segment in {state.name}: the broker does not read from it"))
    return out
