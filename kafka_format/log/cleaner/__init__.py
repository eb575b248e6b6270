"""Offline log cleaner: what Kafka's cleaner keeps, record by record.  No Spark.

The model follows Kafka's sources (1eb7644): ``LogCleanerManager.cleanableOffsets`` /
``calculateCleanableBytes`` / ``maxCompactionDelay`` / ``grabFilthiestCompactedLog`` (plan,
:mod:`.plan`), ``LogToClean`` (clean/cleanable bytes, ratio), ``Cleaner.doClean`` /
``buildOffsetMap`` / ``buildOffsetMapForSegment`` / ``groupSegmentsBySize`` / ``cleanSegments``
(:mod:`.rounds`), ``cleanInto`` / ``shouldRetainRecord`` and ``MemoryRecords.filterTo`` /
``buildRetainedRecordsInto`` (copy, rebuild, delete-horizon stamping, RETAIN_EMPTY headers;
:mod:`.filter`), ``CleanedTransactionMetadata`` (:mod:`.transactions`), ``SkimpyOffsetMap``
(:mod:`.kernels`, compiled in ``_kernels.c``), ``UnifiedLog.lastRecordsOfActiveProducers`` and
``ProducerStateManager`` (:class:`kafka_format.storage.partition_state.ProducerReplay`).

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
key, as in Kafka.  The map holds ``int(slots * log.cleaner.io.buffer.load.factor)`` keys,
``slots = min(dedupe.buffer.size / log.cleaner.threads, Int.MAX) // 24`` (``LogCleaner``: one map
per cleaner thread).

A round maps keys from firstDirty; the map is full when it already holds its capacity before a
put (checked for every keyed record, even a key it holds), and its latestOffset is the last record
put or the last offset of a completed batch, so a round can end inside a batch.  Then every
segment below endOffset is rewritten in ``groupSegmentsBySize`` groups.  ``rounds="all"`` repeats
rounds at the same ``now`` while endOffset < firstUncleanable.  Rewritten segments get indexes by
the per-batch rule (KAFKA-806, as :mod:`kafka_format.writer`), the mtime of the group's last
segment, and a ``.txnindex`` of the aborted transactions whose ABORT marker was kept while their
data was still seen (``cleanedIndex``).

Memory is bounded by configuration, not by the partition: per segment a few numbers, the offset
map (its capacity), one read buffer (``log.cleaner.io.buffer.size``) and the records decoded from
it, the index entries of the segment being written.  Records stay on disk: every round reads the
segments chunk by chunk and writes its cleaned segments into a work directory, as Kafka writes a
cleaned segment and swaps it in; each round appends its records' decisions to a work file, and
:meth:`CleanResult.iter_decisions` merges them in offset order.

Offline inputs: LEO = next offset of the last segment (batch scan); HW = replication checkpoint
capped at LEO (LEO when absent); LSO as every job computes it
(:func:`kafka_format.storage.partition_state.last_stable_offset`); the producer replay from the
latest usable snapshot gives ``lastRecordsOfActiveProducers`` (producers expired at ``now`` per
``producer.id.expiration.ms`` dropped, as ``removeExpiredProducers`` would).

May import: what :mod:`kafka_format.log` may, and :mod:`kafka_format.log.topicconfig`.
"""

from __future__ import annotations

from kafka_format.log.cleaner.clean import DEFAULT_BATCH_ROWS, clean_partition, write_cleaned_partition
from kafka_format.log.cleaner.plan import (
    CleanerPlan,
    PlanInputs,
    map_capacity,
    map_slots_for,
    plan_cleaning,
    plan_from,
    plan_inputs,
)
from kafka_format.log.cleaner.result import (
    DECISION_SCHEMA,
    DECISIONS,
    KEEP_REASONS,
    REASONS,
    REMOVE_REASONS,
    CleanerError,
    CleanResult,
)
from kafka_format.log.cleaner.rounds import group_segments_by_size

__all__ = [
    "DECISIONS",
    "DECISION_SCHEMA",
    "DEFAULT_BATCH_ROWS",
    "KEEP_REASONS",
    "REASONS",
    "REMOVE_REASONS",
    "CleanResult",
    "CleanerError",
    "CleanerPlan",
    "PlanInputs",
    "clean_partition",
    "group_segments_by_size",
    "map_capacity",
    "map_slots_for",
    "plan_cleaning",
    "plan_from",
    "plan_inputs",
    "write_cleaned_partition",
]
