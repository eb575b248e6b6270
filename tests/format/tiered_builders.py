"""LocalTieredStorage trees for the remote-tier tests.

A local replica is written by the project's writer (``kafka_format.writer``); its closed segments
are "uploaded" as ``RemoteLogManager.copyLogSegment`` copies them: the ``.log``, ``.index``,
``.timeindex`` (and ``.txnindex`` when there is one) byte for byte, the producer snapshot taken
at the next segment's base offset, and a leader-epoch checkpoint of the epoch entries below that
offset (``getLeaderEpochEntries(log, -1, nextSegmentBaseOffset)``), all named
``<20-digit start offset>-<segment uuid>.<type>`` under ``kafka-tiered-storage/<topic>-<partition>-<topicId>/``
(``RemoteLogSegmentFileset.openFileset``).  The segment's metadata is what ``copyLogSegment``
writes: start = base offset, end = next base - 1, ``segmentLeaderEpochs`` =
``epochEntriesInRange(base, nextBase)``, size = the ``.log``'s, max timestamp = the segment's.
"""

from __future__ import annotations

import shutil
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from testhelpers import CountingLocalFS

from kafka_format.common.kafka_uuid import uuid_to_string
from kafka_format.internal.remote_log_metadata import (
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
)
from kafka_format.storage import checkpoints as ckpt
from kafka_format.storage.logdir import PartitionLog, open_log_dirs
from kafka_format.storage.remote_tier import ROOT_STORAGE_DIR_NAME, RemoteFileType, fileset_file_name
from kafka_format.writer import LogDirWriter, PartitionWriter, Record, build_v2_batch
from kafka_format.writer.segments import SegmentWriter, segment_file_name

FIRST_TS = 1_700_000_000_000
TOPIC_ID_BYTES = bytes(range(1, 17))
TOPIC_ID = uuid_to_string(TOPIC_ID_BYTES)
PER_BATCH = 5


def segment_uuid(n: int) -> str:
    """A segment id (``Uuid.toString`` of 16 bytes; ``n`` tells the segments apart)."""
    return uuid_to_string(struct.pack(">QQ", 0x5E6_0000_0000 + n, n))


def timestamp_of(offset: int) -> int:
    return FIRST_TS + offset * 1000


def value_of(offset: int) -> bytes:
    return f"value-{offset}".encode()


def epoch_entries_in_range(lineage: Sequence[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """``LeaderEpochFileCache.epochEntriesInRange(start, end)``: ``truncateFromStart(start)`` (the
    entries at or below ``start`` removed, the last of them kept at ``start``; skipped for a
    negative start) then ``truncateFromEnd(end)`` (entries starting at or after ``end`` removed)."""
    entries = sorted(lineage)
    if start >= 0:
        removed = []
        while entries and entries[0][1] <= start:
            removed.append(entries.pop(0))
        if removed:
            entries.insert(0, (removed[-1][0], start))
    while entries and entries[-1][1] >= end:
        entries.pop()
    return entries


@dataclass
class LocalReplica:
    """A written log dir with one partition."""

    log_dir: Path
    topic: str
    partition: int
    writer: PartitionWriter

    @property
    def directory(self) -> Path:
        return self.log_dir / f"{self.topic}-{self.partition}"

    @property
    def lineage(self) -> list[tuple[int, int]]:
        return list(self.writer.leader_epochs)

    def open(self) -> PartitionLog:
        """The replica as discovery reads it."""
        return open_log_dirs(self.log_dir).replicas(self.topic, self.partition)[0]

    def segment(self, base: int) -> SegmentWriter:
        return next(s for s in self.writer.segments if s.base_offset == base)

    def next_base(self, base: int) -> int:
        bases = [s.base_offset for s in self.writer.segments]
        i = bases.index(base)
        return bases[i + 1] if i + 1 < len(bases) else self.writer.log_end_offset

    def delete_below(self, base: int, *, log_start: int | None = None) -> None:
        """Local retention after upload: the segments below ``base`` deleted, and the
        ``log-start-offset-checkpoint`` entry (always written for a remote-enabled log,
        ``checkpointLogStartOffsetsInDir``) set to ``log_start``."""
        for seg in self.writer.segments:
            if seg.base_offset < base:
                for f in seg.files():
                    f.unlink()
        if log_start is not None:
            (self.log_dir / ckpt.LOG_START_OFFSET_CHECKPOINT).write_bytes(
                ckpt.format_offset_checkpoint({(self.topic, self.partition): log_start}))


def write_replica(root: Path, *, topic: str = "orders", partition: int = 0,
                  epochs: Sequence[tuple[int, int]] = ((0, 60),), rolls: Iterable[int] = (),
                  segment_bytes: int = 1 << 30) -> LocalReplica:
    """A log dir ``root`` with ``topic``-``partition``: ``epochs`` = (leader epoch, record count) in
    order, batches of :data:`PER_BATCH` records (offset o: value ``value-o``, timestamp
    ``FIRST_TS + o s``); a new segment at each offset of ``rolls`` (and wherever
    ``segment_bytes`` makes the writer roll)."""
    d = LogDirWriter(root, node_id=1, cluster_id="tieredTestCluster00000", kraft=True)
    w = d.partition(topic, partition, topic_id=TOPIC_ID_BYTES, segment_bytes=segment_bytes)
    roll_at = set(rolls)
    offset = 0
    for epoch, count in epochs:
        end = offset + count
        while offset < end:
            n = min(PER_BATCH, end - offset)
            if offset in roll_at:
                w.roll(offset)
            recs = [Record(key=f"k{o % 7}".encode(), value=value_of(o), timestamp=timestamp_of(o))
                    for o in range(offset, offset + n)]
            w.append(build_v2_batch(recs, base_offset=offset, partition_leader_epoch=epoch))
            offset += n
    w.close()
    d.close(written_at_ms=FIRST_TS + 10_000_000)
    return LocalReplica(root, topic, partition, w)


def remote_dir(remote_root: Path, topic: str = "orders", partition: int = 0, topic_id: str = TOPIC_ID) -> Path:
    """``<remote_root>/kafka-tiered-storage/<topic>-<partition>-<topicId>`` (created)."""
    path = remote_root / ROOT_STORAGE_DIR_NAME / f"{topic}-{partition}-{topic_id}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def upload(replica: LocalReplica, base: int, remote_root: Path, segment_id: str, *,
           lineage: Sequence[tuple[int, int]] | None = None, state: RemoteLogSegmentState =
           RemoteLogSegmentState.COPY_SEGMENT_FINISHED) -> RemoteLogSegmentMetadata:
    """Copy the closed segment at ``base`` into the remote store as ``RemoteLogManager`` does and
    return its metadata."""
    seg = replica.segment(base)
    nxt = replica.next_base(base)
    epochs = replica.lineage if lineage is None else list(lineage)
    target = remote_dir(remote_root, replica.topic, replica.partition)

    def name(kind: RemoteFileType) -> Path:
        return target / fileset_file_name(base, segment_id, kind)

    shutil.copyfile(seg.path(".log"), name(RemoteFileType.SEGMENT))
    shutil.copyfile(seg.path(".index"), name(RemoteFileType.OFFSET_INDEX))
    shutil.copyfile(seg.path(".timeindex"), name(RemoteFileType.TIME_INDEX))
    if seg.path(".txnindex").exists():
        shutil.copyfile(seg.path(".txnindex"), name(RemoteFileType.TRANSACTION_INDEX))
    shutil.copyfile(replica.directory / segment_file_name(nxt, ".snapshot"), name(RemoteFileType.PRODUCER_SNAPSHOT))
    name(RemoteFileType.LEADER_EPOCH_CHECKPOINT).write_bytes(
        ckpt.format_leader_epoch_checkpoint(epoch_entries_in_range(epochs, -1, nxt)))
    return RemoteLogSegmentMetadata(
        partition=TopicIdPartition(TOPIC_ID, replica.topic, replica.partition), segment_id=segment_id,
        start_offset=base, end_offset=nxt - 1, broker_id=1, max_timestamp_ms=seg.max_timestamp_so_far,
        event_timestamp_ms=FIRST_TS + 20_000_000, segment_leader_epochs=dict(epoch_entries_in_range(epochs, base, nxt)),
        segment_size_in_bytes=seg.size, custom_metadata=None, state=state)


def put_fileset(remote_root: Path, start: int, segment_id: str, *, size: int = 100,
                kinds: Iterable[RemoteFileType] = tuple(t for t in RemoteFileType if not t.optional),
                topic: str = "orders", partition: int = 0) -> Path:
    """A fileset of placeholder files (``.log`` of ``size`` bytes) for layout-only tests."""
    target = remote_dir(remote_root, topic, partition)
    for kind in kinds:
        (target / fileset_file_name(start, segment_id, kind)).write_bytes(
            b"\0" * size if kind is RemoteFileType.SEGMENT else b"")
    return target


def metadata(segment_id: str, start: int, end: int, epochs: dict[int, int], *, size: int = 100,
             state: RemoteLogSegmentState = RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
             topic: str = "orders", partition: int = 0) -> RemoteLogSegmentMetadata:
    """Segment metadata written by hand (placeholder filesets, overlap scenarios)."""
    return RemoteLogSegmentMetadata(
        partition=TopicIdPartition(TOPIC_ID, topic, partition), segment_id=segment_id, start_offset=start,
        end_offset=end, broker_id=1, max_timestamp_ms=timestamp_of(end), event_timestamp_ms=FIRST_TS,
        segment_leader_epochs=epochs, segment_size_in_bytes=size, custom_metadata=None, state=state)


class Counting(CountingLocalFS):
    """The local filesystem counting store requests (:class:`testhelpers.CountingLocalFS`);
    ``listed`` the base dirs listed, in order."""

    @property
    def listed(self) -> list[str]:
        return [base for base, _recursive in self.listings]


def write_metadata_log(log_dir: Path, records: Sequence[object]) -> None:
    """``__remote_log_metadata-0`` in ``log_dir`` holding ``records`` (one batch), as the broker's
    topic-based metadata manager writes them."""
    from kafka_format.internal.remote_log_metadata import encode_remote_log_metadata

    directory = log_dir / "__remote_log_metadata-0"
    directory.mkdir()
    seg = SegmentWriter(directory, 0)
    seg.append([build_v2_batch([Record(value=encode_remote_log_metadata(r), timestamp=FIRST_TS)  # type: ignore[arg-type]
                                for r in records], base_offset=0, partition_leader_epoch=0)])
    seg.close()


def copy_records(finished: Iterable[RemoteLogSegmentMetadata]) -> list[object]:
    """What ``RemoteLogManager.copyLogSegment`` publishes for each copied segment: its metadata in
    ``COPY_SEGMENT_STARTED``, then the update to ``COPY_SEGMENT_FINISHED``."""
    from dataclasses import replace

    from kafka_format.internal.remote_log_metadata import RemoteLogSegmentMetadataUpdate

    out: list[object] = []
    for m in finished:
        out.append(replace(m, state=RemoteLogSegmentState.COPY_SEGMENT_STARTED))
        out.append(RemoteLogSegmentMetadataUpdate(m.partition, m.segment_id, None,
                                                  RemoteLogSegmentState.COPY_SEGMENT_FINISHED, FIRST_TS + 1, 1))
    return out


#: producer ids of :func:`write_tiered_cluster`'s transactions
ABORTED_IN_REMOTE, ABORTED_ACROSS, COMMITTED = 9, 7, 8


@dataclass
class TieredCluster:
    """A broker log dir with a tiered ``orders-0`` (its remote storage beside it) and an untiered
    ``plain-0``; ``rows``: the (offset, value) of every data record of ``orders-0`` and
    ``aborted`` the offsets of the records of its aborted transactions."""

    log_dir: Path
    remote_root: Path
    replica: LocalReplica
    uploaded: list[RemoteLogSegmentMetadata]
    rows: list[tuple[int, bytes]]
    aborted: set[int]
    plain_rows: int


def write_tiered_cluster(root: Path) -> TieredCluster:
    """``orders-0``: 100 offsets in segments 0, 40, 50 and 70; epoch 0 below 50, then 2.  Producer
    9's transaction (10-14) is aborted by a marker at 15, all in segment 0; producer 7's (40-44 and
    50-54) by a marker at 55, so its records lie on both sides of the local log start and its
    ``.txnindex`` entry in the local segment 50; producer 8's (61-64) is committed at 65.  Segments 0
    and 40 were copied to ``<root>/remote`` and deleted locally (local log start 50, the
    ``log-start-offset-checkpoint`` keeps 0); ``__remote_log_metadata-0`` holds their copies.
    ``plain-0``: 20 records with no remote tier."""
    from kafka_format.records.control import CONTROL_ABORT, CONTROL_COMMIT
    from kafka_format.writer import build_control_batch

    log_dir = root / "broker"
    d = LogDirWriter(log_dir, node_id=1, cluster_id="tieredTestCluster00000", kraft=True)
    w = d.partition("orders", 0, topic_id=TOPIC_ID_BYTES)
    rows: list[tuple[int, bytes]] = []
    aborted: set[int] = set()

    def data(start: int, n: int, epoch: int, pid: int | None = None) -> None:
        recs = [Record(key=f"k{o % 7}".encode(), value=value_of(o), timestamp=timestamp_of(o))
                for o in range(start, start + n)]
        txn = {} if pid is None else {"producer_id": pid, "producer_epoch": 0, "base_sequence": start,
                                      "transactional": True}
        w.append(build_v2_batch(recs, base_offset=start, partition_leader_epoch=epoch, **txn))
        rows.extend((o, value_of(o)) for o in range(start, start + n))
        if pid in (ABORTED_IN_REMOTE, ABORTED_ACROSS):
            aborted.update(range(start, start + n))

    def marker(offset: int, epoch: int, pid: int, commit: bool) -> None:
        w.append(build_control_batch(CONTROL_COMMIT if commit else CONTROL_ABORT, base_offset=offset, timestamp=timestamp_of(offset),
                                     producer_id=pid, producer_epoch=0, coordinator_epoch=0,
                                     partition_leader_epoch=epoch))

    data(0, 5, 0), data(5, 5, 0), data(10, 5, 0, ABORTED_IN_REMOTE)
    marker(15, 0, ABORTED_IN_REMOTE, commit=False)
    for start in range(16, 40, 5):
        data(start, min(5, 40 - start), 0)
    w.roll(40)
    data(40, 5, 0, ABORTED_ACROSS), data(45, 5, 0)
    w.roll(50)
    data(50, 5, 2, ABORTED_ACROSS)
    marker(55, 2, ABORTED_ACROSS, commit=False)
    data(56, 5, 2), data(61, 4, 2, COMMITTED)
    marker(65, 2, COMMITTED, commit=True)
    data(66, 4, 2)
    w.roll(70)
    for start in range(70, 100, 5):
        data(start, 5, 2)
    w.close()
    p = d.partition("plain", 0, topic_id=bytes(range(101, 117)))
    p.append(build_v2_batch([Record(value=value_of(o), timestamp=timestamp_of(o)) for o in range(20)],
                            base_offset=0, partition_leader_epoch=3))
    p.close()
    d.close(written_at_ms=FIRST_TS + 10_000_000)
    replica = LocalReplica(log_dir, "orders", 0, w)
    remote_root = root / "remote"
    uploaded = [upload(replica, 0, remote_root, segment_uuid(0)), upload(replica, 40, remote_root, segment_uuid(40))]
    replica.delete_below(50, log_start=0)
    write_metadata_log(log_dir, copy_records(uploaded))
    return TieredCluster(log_dir, remote_root, replica, uploaded, rows, aborted, 20)
