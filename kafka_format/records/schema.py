"""Arrow schemas of decoded output (docs/datasource.md): the one place they are declared.

``RECORD_SCHEMA``: one row per record.  The first eight columns are the Spark
Kafka source's, with the same names and types (Spark ``timestamp`` maps to an
Arrow ``timestamp[us, UTC]``); the rest is Kafka provenance.

Value conventions (Kafka's own values are kept, not re-interpreted):

* ``timestamp``: record timestamp in ms as Kafka computes it (LogAppendTime
  batches: the batch ``maxTimestamp``); ``-1`` (no timestamp: v0) is kept as
  ``-1`` ms, as Spark's Kafka source does.  ``timestampType`` tells: 0
  CreateTime, 1 LogAppendTime, -1 none.
* ``headers``: empty list when a record has none (always for v0/v1).
* ``leaderEpoch``, ``producerId``, ``producerEpoch``, ``sequence``: the raw v2
  values (``-1`` = none, as stored); null for v0/v1 messages, which have no
  such fields.
* ``batchBaseOffset``/``batchLastOffset``: the v2 batch header's range; for a
  legacy compressed wrapper the first/last inner offset; for a plain legacy
  message its own offset.
* ``segment``: base offset of the segment file; ``position``: byte position
  of the batch (legacy: of the shallow message) in that ``.log`` file.
* ``topic``/``partition``/``logDir``: from the partition directory when the
  file sits in one named ``<topic>-<partition>``, else null; ``brokerId``:
  from ``meta.properties`` when the caller knows it, else null.

The ``kafka-log`` source's rows add ``tier`` (:data:`TIER_FIELD`): ``remote`` for rows read from a
tiered partition's remote segments (then ``segment``/``position``/``logDir`` name the remote
segment's file and the remote storage's root), ``local`` for rows from a broker log dir.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = [
    "BATCH_SCHEMA",
    "CORRUPT_TYPE",
    "HEADER_TYPE",
    "KAFKA_SOURCE_COLUMNS",
    "RECORD_SCHEMA",
    "TIER_FIELD",
    "TIMESTAMP_TYPE",
]

TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
HEADER_TYPE = pa.list_(
    pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
)

KAFKA_SOURCE_COLUMNS = (
    "key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers",
)

RECORD_SCHEMA = pa.schema(
    [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", TIMESTAMP_TYPE),
        pa.field("timestampType", pa.int32()),
        pa.field("headers", HEADER_TYPE),
        pa.field("leaderEpoch", pa.int32()),
        pa.field("producerId", pa.int64()),
        pa.field("producerEpoch", pa.int16()),
        pa.field("sequence", pa.int32()),
        pa.field("isTransactional", pa.bool_()),
        pa.field("isControl", pa.bool_()),
        pa.field("magic", pa.int8()),
        pa.field("compression", pa.string()),
        pa.field("batchBaseOffset", pa.int64()),
        pa.field("batchLastOffset", pa.int64()),
        pa.field("segment", pa.int64()),
        pa.field("position", pa.int64()),
        pa.field("logDir", pa.string()),
        pa.field("brokerId", pa.int32()),
    ]
)

# One row per batch (``granularity=batch``, ``iter_batches``): header fields,
# sizes and counts; nothing here needs decompression except where noted.
BATCH_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("segment", pa.int64()),
        pa.field("position", pa.int64()),
        pa.field("size", pa.int32()),            # 12 + length field: bytes of the batch in the file
        pa.field("magic", pa.int8()),
        pa.field("baseOffset", pa.int64()),      # legacy compressed wrapper: null (needs decompression)
        pa.field("lastOffset", pa.int64()),
        pa.field("count", pa.int32()),           # v2 recordsCount; legacy: 1 plain, null for wrappers
        pa.field("compression", pa.string()),
        pa.field("attributes", pa.int16()),
        pa.field("timestampType", pa.int32()),
        pa.field("baseTimestamp", pa.int64()),   # v2 only
        pa.field("maxTimestamp", pa.int64()),
        pa.field("deleteHorizonMs", pa.int64()), # v2 with the delete-horizon bit, else null
        pa.field("isTransactional", pa.bool_()),
        pa.field("isControl", pa.bool_()),
        pa.field("producerId", pa.int64()),
        pa.field("producerEpoch", pa.int16()),
        pa.field("baseSequence", pa.int32()),
        pa.field("lastSequence", pa.int32()),
        pa.field("partitionLeaderEpoch", pa.int32()),
        pa.field("crc", pa.int64()),             # stored CRC (uint32)
        pa.field("crcValid", pa.bool_()),
        pa.field("logDir", pa.string()),
        pa.field("brokerId", pa.int32()),
    ]
)

# The source's provenance column after ``brokerId``: which tier served the row ('local' | 'remote').
TIER_FIELD = pa.field("tier", pa.string())

# PERMISSIVE mode: one row per skipped byte range.
CORRUPT_TYPE = pa.struct(
    [
        pa.field("file", pa.string()),
        pa.field("position", pa.int64()),
        pa.field("length", pa.int64()),
        pa.field("reason", pa.string()),
    ]
)
