"""The cleaner's entry points: :func:`clean_partition` (plan, load, rounds, counts) and
:func:`write_cleaned_partition` (the cleaned partition in Kafka's format)."""

from __future__ import annotations

import os
import tempfile

from kafka_format.log.cleaner import kernels
from kafka_format.log.cleaner.filter import ActiveProducers
from kafka_format.log.cleaner.plan import PlanInputs, map_capacity, map_slots_for, plan_from, plan_inputs
from kafka_format.log.cleaner.result import BASE_DTYPE, Appender, CleanResult, Work, result_of
from kafka_format.log.cleaner.rounds import clean_round, load, write_base
from kafka_format.log.cleaner.segments import copy_segment_files, write_partition_files
from kafka_format.log.topicconfig import TopicConfig
from kafka_format.storage.logdir import PartitionLog

__all__ = ["DEFAULT_BATCH_ROWS", "clean_partition", "write_cleaned_partition"]

DEFAULT_BATCH_ROWS = 8192    # records decoded at a time (and rows per work-file block)


def clean_partition(replica: PartitionLog, config: TopicConfig, now_ms: int, *, map_slots: int | None = None,
                    rounds: str = "all", force: bool = False, batch_rows: int = DEFAULT_BATCH_ROWS,
                    read_buffer: int | None = None, work_dir: str | None = None,
                    inputs: PlanInputs | None = None) -> CleanResult:
    """What the log cleaner keeps after cleaning everything cleanable at ``now_ms``.

    ``map_slots``: slots of the offset map (default from the broker settings,
    :func:`~kafka_format.log.cleaner.map_slots_for`; it takes ``int(slots * load factor)`` keys,
    :func:`~kafka_format.log.cleaner.map_capacity`); ``rounds``: ``"all"`` repeats rounds (same
    ``now``) while the map fills before firstUncleanable, ``"one"`` stops after the first;
    ``force`` cleans a compacted partition even when the dirty ratio does not qualify.

    Memory is bounded by configuration, not by the partition: the offset map (its capacity, in
    Kafka's 24-byte slots), ``read_buffer`` bytes read at a time (default
    ``log.cleaner.io.buffer.size``; a batch larger than that is read whole), ``batch_rows``
    records decoded at a time (a batch is never cut), and per segment a few numbers.  Decisions
    and cleaned segments go to work files in ``work_dir`` (default: the system temp dir), removed
    when the result is closed or collected.  ``inputs``: the plan's header scan
    (:func:`~kafka_format.log.cleaner.plan_inputs` at the same ``now_ms``) when the caller made it.
    """
    if rounds not in ("all", "one"):
        raise ValueError("rounds must be 'all' or 'one'")
    if batch_rows < 1:
        raise ValueError("batch_rows must be >= 1")
    read_size = int(config.broker("log.cleaner.io.buffer.size")) if read_buffer is None else int(read_buffer)
    inp = plan_inputs(replica, config, now_ms) if inputs is None else inputs
    plan = plan_from(replica, config, now_ms, inp, replica.cleaner_offset_checkpoint)
    capacity = map_capacity(config, map_slots)
    work = Work(tempfile.mkdtemp(prefix="klogs-cleaner-", dir=work_dir), batch_rows)
    try:
        view = work.view = load(replica, work, read_size, inp.seg_stats)
        active = ActiveProducers(inp.active_producers)
        del inp
        n_rounds = 0
        first_dirty = plan.first_dirty_offset
        run = plan.compact and (plan.would_clean_now or (force and plan.first_uncleanable_offset > first_dirty))
        work.ran = bool(run)
        base = Appender(work.base_path, BASE_DTYPE, batch_rows)   # filled by the first round, then the rest
        try:
            if run:
                offset_map = kernels.new_offset_map(map_slots_for(config) if map_slots is None else map_slots)
                uncleanable = plan.first_uncleanable_offset
                while True:
                    end = clean_round(view, work, config, now_ms, first_dirty, uncleanable, offset_map, capacity,
                                      active, plan.log_start_offset, base if n_rounds == 0 else None)
                    if n_rounds == 0:
                        write_base(view, view.segments, base)     # the segments round one did not read
                        base.close()
                    n_rounds += 1
                    progressed = end > first_dirty
                    first_dirty = max(end, first_dirty)
                    if rounds == "one" or end >= uncleanable or not progressed:
                        break
                del offset_map
            else:
                write_base(view, view.segments, base)
        finally:
            base.close()
        return result_of(work, plan, n_rounds, first_dirty if run else plan.first_dirty_offset)
    except BaseException:
        work.close()
        raise


def write_cleaned_partition(replica: PartitionLog, config: TopicConfig, now_ms: int, dest_partition_dir: str, *,
                            result: CleanResult | None = None) -> None:
    """Write the cleaned partition in Kafka's format into ``dest_partition_dir`` (existing, empty).

    Rewritten segments: one per cleaning group, batches copied byte for byte or rebuilt as
    ``filterTo`` does, indexes by the per-batch rule, ``.txnindex`` with the aborted txns whose
    ABORT marker the cleaner kept with data; untouched segments, producer snapshots,
    ``leader-epoch-checkpoint`` and ``partition.metadata`` are copied; mtimes kept.
    """
    own = result is None or result._work is None
    if own:
        result = clean_partition(replica, config, now_ms)
    assert result is not None and result._work is not None
    try:
        if not os.path.isdir(dest_partition_dir):
            raise FileNotFoundError(dest_partition_dir)
        if os.listdir(dest_partition_dir):
            raise FileExistsError(f"{dest_partition_dir} is not empty")
        view = result._work.view
        for seg in view.segments:
            copy_segment_files(view, seg, dest_partition_dir)
        write_partition_files(replica, dest_partition_dir)
    finally:
        if own:
            result.close()
