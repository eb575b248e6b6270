"""Write a whole broker log directory: partitions plus the text files a broker keeps beside them.

Text formats (``CheckpointFile.java``, ``OffsetCheckpointFile.java``,
``LeaderEpochCheckpointFile.java``, ``PartitionMetadataFile.java``, ``MetaProperties.java``)::

    *-offset-checkpoint      "0\\n" + "<N>\\n" + N x "<topic> <partition> <offset>\\n"
    leader-epoch-checkpoint  "0\\n" + "<N>\\n" + N x "<epoch> <startOffset>\\n"
    partition.metadata       "version: 0\\ntopic_id: <base64url Uuid, no padding>"   (no final newline)
    meta.properties          java.util.Properties.store(): "#\\n#<date>\\n" + key=value lines
                             (version 0: broker.id [cluster.id]; version 1: node.id cluster.id [directory.id])
    .kafka_cleanshutdown     {"version":0,"brokerEpoch":N}

Checkpoint entries are written sorted by (topic, partition); the broker writes them in its map's
order, which readers must not rely on.  The text itself comes from :mod:`kafka_format.storage.checkpoints`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_format.storage.checkpoints import (  # the file names re-exported (__all__)
    CLEAN_SHUTDOWN,
    CLEANER_OFFSET_CHECKPOINT,
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES,
    PARTITION_METADATA,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    UUID_BYTES,
    format_clean_shutdown,
    format_leader_epoch_checkpoint,
    format_meta_properties,
    format_offset_checkpoint,
    format_partition_metadata,
    uuid_to_string,
)
from kafka_format.storage.checkpoints import OFFSET_CHECKPOINT_VERSION as CHECKPOINT_VERSION  # re-exported
from kafka_format.writer.segments import PartitionWriter

__all__ = [
    "CHECKPOINT_VERSION",
    "CLEANER_OFFSET_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "LogDirWriter",
    "PartitionState",
    "encode_leader_epoch_checkpoint",
    "encode_offset_checkpoint",
    "encode_partition_metadata",
    "uuid_to_base64",
]

def uuid_to_base64(uuid: bytes) -> str:
    """Kafka ``Uuid.toString``: URL-safe base64 of the 16 bytes without padding."""
    if len(uuid) != UUID_BYTES.size:
        raise ValueError("a Kafka Uuid has 16 bytes")
    return uuid_to_string(uuid)


def encode_offset_checkpoint(entries: Mapping[tuple[str, int], int]) -> bytes:
    """Text of an offset checkpoint file (entries sorted by topic, partition)."""
    return format_offset_checkpoint(dict(sorted(entries.items())))


def encode_leader_epoch_checkpoint(entries: list[tuple[int, int]]) -> bytes:
    """Text of ``leader-epoch-checkpoint``: (epoch, start offset) pairs in order."""
    return format_leader_epoch_checkpoint(entries)


def encode_partition_metadata(topic_id: bytes) -> bytes:
    """Text of ``partition.metadata`` (``PartitionMetadata.encode``)."""
    return format_partition_metadata(topic_id)


@dataclass
class PartitionState:
    """A partition of the log dir and the checkpoint values the broker would hold for it."""

    topic: str
    partition: int
    writer: PartitionWriter
    topic_id: bytes | None
    high_watermark: int | None = None
    log_start_offset: int | None = None
    recovery_point: int | None = None
    cleaner_offset: int | None = None
    leader_epochs: list[tuple[int, int]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class LogDirWriter:
    """A broker log dir (one entry of ``log.dirs``).

    >>> d = LogDirWriter(path, node_id=1, cluster_id="...", kraft=True)
    >>> p = d.partition("orders", 0, topic_id=b"\\x01" * 16, segment_bytes=4096)
    >>> p.append(batch) ...
    >>> d.close(written_at_ms=...)
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        node_id: int,
        cluster_id: str | None = None,
        kraft: bool = True,
        directory_id: bytes | None = None,
        broker_epoch: int | None = None,
    ) -> None:
        if kraft and cluster_id is None:
            raise ValueError("KRaft meta.properties needs cluster_id")
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.kraft = kraft
        self.directory_id = directory_id
        self.broker_epoch = broker_epoch
        self.partitions: dict[tuple[str, int], PartitionState] = {}

    def partition(self, topic: str, partition: int, *, topic_id: bytes | None = None,
                  **writer_options: Any) -> PartitionWriter:
        """Create ``<topic>-<partition>/`` and return its writer (options: PartitionWriter's)."""
        key = (topic, partition)
        if key in self.partitions:
            raise ValueError(f"partition {topic}-{partition} already exists")
        writer = PartitionWriter(self.path / f"{topic}-{partition}", **writer_options)
        self.partitions[key] = PartitionState(topic, partition, writer, topic_id)
        return writer

    def state(self, topic: str, partition: int) -> PartitionState:
        """Checkpoint values of a partition (set ``high_watermark`` etc. before ``close``)."""
        return self.partitions[(topic, partition)]

    def _write(self, name: str, data: bytes, mtime_ms: int | None) -> None:
        p = self.path / name
        p.write_bytes(data)
        if mtime_ms is not None:
            os.utime(p, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))

    def close(self, *, written_at_ms: int, clean_shutdown: bool = True, set_mtimes: bool = True) -> None:
        """Write per-partition ``leader-epoch-checkpoint`` / ``partition.metadata`` and the
        log dir's checkpoint files and ``meta.properties``.  Partition writers must be closed
        already.  Defaults: HW = recovery point = LEO; log-start-offset entries only where the
        value is beyond the first segment's base offset (``checkpointLogStartOffsetsInDir``);
        cleaner checkpoint only for partitions given a ``cleaner_offset``."""
        mtime = written_at_ms if set_mtimes else None
        recovery: dict[tuple[str, int], int] = {}
        start: dict[tuple[str, int], int] = {}
        hw: dict[tuple[str, int], int] = {}
        cleaner: dict[tuple[str, int], int] = {}
        for key, st in self.partitions.items():
            w = st.writer
            if not w.closed:
                raise ValueError(f"partition {key} not closed")
            leo = w.log_end_offset
            recovery[key] = leo if st.recovery_point is None else st.recovery_point
            hw[key] = leo if st.high_watermark is None else st.high_watermark
            first_base = w.segments[0].base_offset
            if st.log_start_offset is not None and st.log_start_offset > first_base:
                start[key] = st.log_start_offset
            if st.cleaner_offset is not None:
                cleaner[key] = st.cleaner_offset
            epochs = w.leader_epochs if st.leader_epochs is None else st.leader_epochs
            pdir = w.directory
            for name, data in ((LEADER_EPOCH_CHECKPOINT, encode_leader_epoch_checkpoint(epochs)),
                               *(((PARTITION_METADATA, encode_partition_metadata(st.topic_id)),)
                                 if st.topic_id is not None else ())):
                (pdir / name).write_bytes(data)
                if mtime is not None:
                    os.utime(pdir / name, ns=(mtime * 1_000_000, mtime * 1_000_000))
        self._write(RECOVERY_POINT_CHECKPOINT, encode_offset_checkpoint(recovery), mtime)
        self._write(LOG_START_OFFSET_CHECKPOINT, encode_offset_checkpoint(start), mtime)
        self._write(REPLICATION_OFFSET_CHECKPOINT, encode_offset_checkpoint(hw), mtime)
        self._write(CLEANER_OFFSET_CHECKPOINT, encode_offset_checkpoint(cleaner), mtime)
        meta = format_meta_properties(
            version=1 if self.kraft else 0, node_id=self.node_id, cluster_id=self.cluster_id,
            directory_id=None if self.directory_id is None else uuid_to_base64(self.directory_id),
            timestamp_ms=written_at_ms)
        self._write(META_PROPERTIES, meta, mtime)
        if clean_shutdown:
            self._write(CLEAN_SHUTDOWN, format_clean_shutdown(self.broker_epoch), mtime)
