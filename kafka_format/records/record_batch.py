"""The constants every record format shares, declared once: magic values, sentinels, timestamp
types, the attribute bits and the codec ids.

Sources (``clients/src/main/java/org/apache/kafka/common/record/``): ``RecordBatch.java``
(``MAGIC_VALUE_V0..V2``, ``NO_TIMESTAMP``, ``NO_PRODUCER_ID``, ``NO_PRODUCER_EPOCH``,
``NO_SEQUENCE``, ``NO_PARTITION_LEADER_EPOCH``), ``TimestampType.java`` (``NO_TIMESTAMP_TYPE``,
``CREATE_TIME``, ``LOG_APPEND_TIME``), ``DefaultRecordBatch.java`` and ``LegacyRecord.java`` (the
attribute masks: bits 0-2 and 3 mean the same in both formats, bits 4-6 are v2's),
``common/compress/CompressionType.java`` (the codec ids of bits 0-2).  The formats
(:mod:`~kafka_format.records.batch_v2`, :mod:`~kafka_format.records.legacy`), the codecs
(:mod:`~kafka_format.records.compression`), the decoders, the header walkers, the writer and the
log rules import them from here; this module imports nothing, so the lowest of them can.
"""

from __future__ import annotations

__all__ = [
    "CODEC_MASK",
    "CODEC_NAMES",
    "CONTROL_MASK",
    "CREATE_TIME",
    "DELETE_HORIZON_MASK",
    "GZIP",
    "LOG_APPEND_TIME",
    "LZ4",
    "MAGICS",
    "MAGIC_V0",
    "MAGIC_V1",
    "MAGIC_V2",
    "MAX_CODEC",
    "NONE",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "NO_TIMESTAMP_TYPE",
    "SNAPPY",
    "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_MASK",
    "ZSTD",
]

# magic values (RecordBatch.MAGIC_VALUE_V*)
MAGIC_V0 = 0
MAGIC_V1 = 1
MAGIC_V2 = 2
MAGICS = (MAGIC_V0, MAGIC_V1, MAGIC_V2)

# sentinels of the batch header fields (RecordBatch)
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

# timestamp types (TimestampType.id)
NO_TIMESTAMP_TYPE = -1      # a magic 0 message
CREATE_TIME = 0
LOG_APPEND_TIME = 1

# attribute bits (DefaultRecordBatch; LegacyRecord has the first two)
CODEC_MASK = 0x07           # COMPRESSION_CODEC_MASK: the codec id
TIMESTAMP_TYPE_MASK = 0x08  # set: LogAppendTime (magic 1 and 2)
TRANSACTIONAL_MASK = 0x10   # TRANSACTIONAL_FLAG_MASK
CONTROL_MASK = 0x20         # CONTROL_FLAG_MASK
DELETE_HORIZON_MASK = 0x40  # DELETE_HORIZON_FLAG_MASK: baseTimestamp holds the delete horizon

# codec ids (CompressionType.id); ids 5-7 are rejected
NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4
CODEC_NAMES: tuple[str, ...] = ("none", "gzip", "snappy", "lz4", "zstd")   # CompressionType.name, by id
MAX_CODEC = ZSTD
