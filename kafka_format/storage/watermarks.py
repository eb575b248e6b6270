"""Kafka's rules for a replica's offsets as a broker loads them: pure arithmetic, no I/O.

The one place these rules are written; :mod:`kafka_format.storage.partition_state` applies them to a
replica's files, and :mod:`kafka_format.storage.logdir` uses the high-watermark rule for
:attr:`~kafka_format.storage.logdir.PartitionLog.high_watermark`.

Kafka source of record (``apache/kafka`` at 1eb7644, 2024-10-25):

* high watermark on load: ``Partition.createLog`` reads the ``replication-offset-checkpoint``
  entry (**0 when the partition has none**) and calls ``UnifiedLog.updateHighWatermark(hw)``
  (``core/src/main/scala/kafka/cluster/Partition.scala``), which is *lower bounded by the log
  start offset and upper bounded by the log end offset*
  (``core/src/main/scala/kafka/log/UnifiedLog.scala``)::

      if hw < logStartOffset: logStartOffset
      elif hw >= logEndOffset: logEndOffset
      else: hw

  ``LogLoader`` guarantees ``logEndOffset >= logStartOffset`` on load (it deletes every segment
  otherwise, ``deleteSegmentsIfLogStartGreaterThanLogEnd``); offline a damaged replica can break
  that, and the chain above is then applied as written (the cap wins).
* last stable offset: ``UnifiedLog.maybeIncrementFirstUnstableOffset`` raises the first unstable
  offset to the log start offset; ``UnifiedLog.lastStableOffset`` is that offset when it is below
  the high watermark, else the high watermark.
"""

from __future__ import annotations

__all__ = ["MISSING_HIGH_WATERMARK", "high_watermark_on_load", "last_stable_offset_from"]

MISSING_HIGH_WATERMARK = 0
"""What ``Partition.createLog`` loads when the checkpoint has no entry for the partition."""


def high_watermark_on_load(checkpoint: int, *, log_start_offset: int, log_end_offset: int | None) -> int:
    """``UnifiedLog.updateHighWatermark(checkpoint)``: floored at the log start offset, capped at the
    log end offset (when the log end offset is unknown, only the floor applies)."""
    if checkpoint < log_start_offset:
        return log_start_offset
    if log_end_offset is not None and checkpoint >= log_end_offset:
        return log_end_offset
    return checkpoint


def last_stable_offset_from(first_unstable_offset: int | None, *, high_watermark: int,
                            log_start_offset: int) -> int:
    """``UnifiedLog.lastStableOffset``: the first unstable offset (raised to the log start offset,
    ``maybeIncrementFirstUnstableOffset``) when it is below the high watermark, else the high
    watermark."""
    if first_unstable_offset is not None:
        first = max(first_unstable_offset, log_start_offset)
        if first < high_watermark:
            return first
    return high_watermark
