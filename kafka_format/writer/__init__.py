"""Kafka-exact writer: batches (v0/v1/v2, every codec), segments with the broker's index rules,
time and transaction indexes, producer snapshots, whole log dirs with their checkpoint files.

Used by ``data_samples/generate.py``, tests and benchmarks to make inputs whose every byte
follows what a broker writes.

May import: :mod:`kafka_format.common`, :mod:`kafka_format.records`, :mod:`kafka_format.storage`
(the index and snapshot layouts it writes).
"""

from __future__ import annotations

from kafka_format.writer.batches import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    CREATE_TIME,
    LOG_APPEND_TIME,
    BuiltBatch,
    Record,
    build_control_batch,
    build_empty_batch,
    build_legacy_messages,
    build_legacy_wrapper,
    build_v2_batch,
)
from kafka_format.writer.logdir import LogDirWriter
from kafka_format.writer.segments import PartitionWriter, SegmentWriter

__all__ = [
    "CODEC_GZIP",
    "CODEC_LZ4",
    "CODEC_NONE",
    "CODEC_SNAPPY",
    "CODEC_ZSTD",
    "CONTROL_ABORT",
    "CONTROL_COMMIT",
    "CREATE_TIME",
    "LOG_APPEND_TIME",
    "BuiltBatch",
    "LogDirWriter",
    "PartitionWriter",
    "Record",
    "SegmentWriter",
    "build_control_batch",
    "build_empty_batch",
    "build_legacy_messages",
    "build_legacy_wrapper",
    "build_v2_batch",
]
