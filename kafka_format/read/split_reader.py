"""Reading one planned split: the executor side of the ``kafka-log`` source, without Spark.

:func:`read_split` decodes a :class:`~kafka_format.read.planning.Split` chunk by chunk
(:func:`kafka_format.records.file_records.decode_segment`) and applies what the source's options ask for: the
split's offset and timestamp bounds, ``read_committed`` as Kafka's consumer applies it
(``CompletedFetch``: aborted transactions from ``.txnindex``, ended by their ABORT marker),
``includeControlRecords``, ``granularity=batch`` and the ``mode`` (``_corrupt`` rows for
``PERMISSIVE``, an error for a batch cut inside a closed segment in ``FAILFAST``; a FAILFAST error
of the bytes read ends with :data:`SKIP_HINT`, the modes that would skip them).  The Spark data
source (:mod:`kafka_format.spark.datasource`) calls it on executors; the local engine
(:mod:`kafka_format.engine`) calls it in the CLI's process.  No pyspark here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_format.common.errors import CorruptRecordError, KafkaFormatError
from kafka_format.read.planning import SegmentRange, Split
from kafka_format.records.control import ControlRecordType, parse_control_key
from kafka_format.records.entry import ENTRY  # baseOffset int64, size int32 of every entry (Records)
from kafka_format.records.schema import BATCH_SCHEMA, CORRUPT_TYPE, RECORD_SCHEMA, TIER_FIELD
from kafka_format.storage.fsio import redact

if TYPE_CHECKING:
    from kafka_format.read.options import ReadOptions

__all__ = ["CORRUPT_COLUMN", "SKIP_HINT", "arrow_schema", "read_split"]

CORRUPT_COLUMN = "_corrupt"
# The last part of a FAILFAST error about the bytes of a split (what the other modes do with them).
SKIP_HINT = "read with mode PERMISSIVE or DROPMALFORMED to skip the range and report it"
ZERO_CHECK_CHUNK = 1 << 20


def arrow_schema(opts: ReadOptions) -> pa.Schema:
    """Arrow schema of the rows a read with these options yields."""
    schema = BATCH_SCHEMA if opts.granularity == "batch" else RECORD_SCHEMA
    if opts.granularity == "record" and not opts.include_headers:
        schema = schema.remove(schema.get_field_index("headers"))
    schema = schema.append(TIER_FIELD)
    if opts.mode == "PERMISSIVE":
        schema = schema.append(pa.field(CORRUPT_COLUMN, CORRUPT_TYPE))
    return schema


def _keep_mask(batch: pa.RecordBatch, split: Split, opts: ReadOptions, state: dict[str, Any]) -> Any:
    """Boolean numpy mask of the rows of ``batch`` the split keeps (record granularity)."""
    import numpy as np

    n = batch.num_rows
    offset = batch.column("offset").to_numpy(zero_copy_only=False)
    keep = np.ones(n, dtype=bool)
    if split.start_offset is not None:
        keep &= offset >= split.start_offset
    if split.end_offset is not None:
        keep &= offset < split.end_offset
    position = batch.column("position").to_numpy(zero_copy_only=False)
    segment = batch.column("segment").to_numpy(zero_copy_only=False)
    ts_ms = np.empty(0, np.int64)
    if split.start_timestamp is not None or split.end_timestamp is not None:
        ts_ms = batch.column("timestamp").cast(pa.int64()).to_numpy(zero_copy_only=False) // 1000
    if split.start_timestamp is not None:
        pos, target = split.start_timestamp      # the hit batch opens the split's first range
        sel = np.flatnonzero((position == pos) & (segment == split.ranges[0].segment))
        if sel.size and not state.get("start_found"):
            ok = (ts_ms[sel] >= target) & (offset[sel] >= split.log_start_offset)
            first = int(np.argmax(ok)) if ok.any() else sel.size
            keep[sel[:first]] = False
            if ok.any():
                state["start_found"] = True
    if split.end_timestamp is not None:
        pos, target = split.end_timestamp        # the hit batch closes the split's last range
        sel = np.flatnonzero((position == pos) & (segment == split.ranges[-1].segment))
        if sel.size:
            if state.get("end_found"):
                keep[sel] = False
            else:
                hit = ts_ms[sel] >= target
                if hit.any():
                    keep[sel[int(np.argmax(hit)):]] = False
                    state["end_found"] = True
    is_control = batch.column("isControl").to_numpy(zero_copy_only=False)
    if split.read_committed:
        keep &= _committed_mask(batch, split, state, is_control)
    if not opts.include_control_records:
        keep &= ~is_control
    return keep


def _committed_mask(batch: pa.RecordBatch, split: Split, state: dict[str, Any], is_control: Any) -> Any:
    """read_committed as the consumer does it (``CompletedFetch``): aborted txns from
    ``.txnindex`` enter an aborted-producer set when their first offset <= batch last offset; an
    ABORT marker of such a producer removes it; transactional batches of producers in the set are
    dropped."""
    import numpy as np

    n = batch.num_rows
    keep = np.ones(n, dtype=bool)
    if not split.aborted:
        return keep
    queue: list[tuple[int, int, int]] = state.setdefault("queue", sorted(split.aborted, key=lambda a: a[1]))
    aborting: set[int] = state.setdefault("aborting", set())
    bbase = batch.column("batchBaseOffset").to_numpy(zero_copy_only=False)
    blast = batch.column("batchLastOffset").to_numpy(zero_copy_only=False)
    pid = batch.column("producerId").fill_null(-1).to_numpy(zero_copy_only=False)
    txn = batch.column("isTransactional").to_numpy(zero_copy_only=False)
    keys = batch.column("key")
    starts = np.flatnonzero(np.r_[True, bbase[1:] != bbase[:-1]])
    ends = np.r_[starts[1:], n]
    for s, e in zip(starts.tolist(), ends.tolist()):
        while queue and queue[0][1] <= blast[s]:
            aborting.add(queue.pop(0)[0])
        if not txn[s] or pid[s] not in aborting:
            continue
        if is_control[s]:
            try:
                _, kind = parse_control_key(keys[s].as_py())
            except KafkaFormatError:
                continue
            if kind == ControlRecordType.ABORT:
                aborting.discard(int(pid[s]))          # ABORT marker ends the aborted txn
            continue
        keep[s:e] = False
    return keep


def _corrupt_rows(skips: list[Any], split: Split, schema: pa.Schema, segment: int) -> pa.RecordBatch:
    """One row per skipped byte range: provenance columns + ``_corrupt``, the rest null."""
    n = len(skips)
    cols = []
    for f in schema:
        if f.name == CORRUPT_COLUMN:
            cols.append(pa.array([{"file": redact(s.path), "position": s.position, "length": s.length,
                                   "reason": s.reason} for s in skips], type=CORRUPT_TYPE))
        elif f.name == "topic":
            cols.append(pa.array([split.topic] * n, f.type))
        elif f.name == "partition":
            cols.append(pa.array([split.partition] * n, f.type))
        elif f.name == "segment":
            cols.append(pa.array([segment] * n, f.type))
        elif f.name == "position":
            cols.append(pa.array([s.position for s in skips], f.type))
        elif f.name == "logDir":
            cols.append(pa.array([redact(split.log_dir)] * n, f.type))
        elif f.name == "brokerId":
            cols.append(pa.array([split.broker_id] * n, f.type))
        elif f.name == TIER_FIELD.name:
            cols.append(pa.array([split.tier] * n, f.type))
        elif f.name == "headers":
            cols.append(pa.array([[]] * n, f.type))
        else:
            cols.append(pa.nulls(n, f.type))
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def _conform(batch: pa.RecordBatch, schema: pa.Schema, tier: str) -> pa.RecordBatch:
    """Select/append columns so ``batch`` has exactly ``schema`` (``tier``: the split's)."""
    n = batch.num_rows
    cols = []
    for f in schema:
        idx = batch.schema.get_field_index(f.name)
        if idx >= 0:
            cols.append(batch.column(idx))
        elif f.name == TIER_FIELD.name:
            cols.append(pa.repeat(pa.scalar(tier, f.type), n))
        else:
            cols.append(pa.nulls(n, f.type))
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def read_split(split: Split, opts: ReadOptions) -> Iterator[pa.RecordBatch]:
    """Decode one split (executor side): bounds, isolation and control-record rules applied."""
    import pyarrow.compute as pc

    from kafka_format.read.planning import open_input
    from kafka_format.records.columns import FileContext
    from kafka_format.records.file_records import SkippedRange, decode_segment
    from kafka_format.storage.aiven_rsm import use_keys

    use_keys(opts.remote_storage_keys)                   # encrypted remote segments (a worker's first split)
    schema = arrow_schema(opts)
    state: dict[str, Any] = {}
    record = opts.granularity == "record"
    if split.skipped and opts.mode == "PERMISSIVE":      # planned skips (a tiered partition's)
        for path, position, length, reason, segment in split.skipped:
            yield _corrupt_rows([SkippedRange(path, position, length, reason)], split, schema, segment)
    for r in split.ranges:
        skips: list[Any] = []
        ctx = FileContext(path=redact(r.path), topic=split.topic, partition=split.partition, segment=r.segment,
                          log_dir=redact(split.log_dir), broker_id=split.broker_id)   # provenance: no secret
        try:
            with open_input(r.path) as f:
                last_batch = -1
                for batch in decode_segment(f, start=r.start_position, end=r.end_position, context=ctx,
                                            verify_crc=opts.verify_crc, mode=opts.mode, on_skip=skips.append,
                                            granularity=opts.granularity, include_headers=opts.include_headers):
                    if batch.num_rows:
                        last_batch = max(last_batch, pc.max(batch.column("position")).as_py())
                    if record:
                        mask = _keep_mask(batch, split, opts, state)
                        if not mask.all():
                            batch = batch.filter(pa.array(mask))
                    else:
                        batch = _filter_batch_rows(batch, split, opts)
                    if batch.num_rows:
                        yield _conform(batch, schema, split.tier)
                gap = _unread_tail(f, r, last_batch, skips)
                gap_end = _range_end(f, r)
            if gap is not None and opts.mode == "FAILFAST":
                raise gap
        except KafkaFormatError as exc:
            if opts.mode == "FAILFAST" and exc.hint is None:
                exc.with_hint(SKIP_HINT)        # what the other modes would do with these bytes
            raise
        if gap is not None:
            skips.append(SkippedRange(r.path, gap.position or 0, gap_end - (gap.position or 0), gap.reason))
        if skips and opts.mode == "PERMISSIVE":
            yield _corrupt_rows(skips, split, schema, r.segment)


def _range_end(f: Any, r: SegmentRange) -> int:
    size = f.size()
    return size if r.end_position is None else min(r.end_position, size)


def _unread_tail(f: Any, r: SegmentRange, last_batch: int, skips: list[Any]) -> CorruptRecordError | None:
    """The decoder stops quietly at a batch that runs past the end of the file (a crash tail, as
    Kafka's reader does).  That is only legitimate at the end of the partition's last segment:
    anywhere else (a closed segment, or before an index entry that says a batch starts later)
    the bytes from there to the end of the range are corrupt (a lying length field)."""
    end = _range_end(f, r)
    reached = r.start_position
    if last_batch >= 0:
        head = f.read_at(ENTRY.size, last_batch)
        if len(head) == ENTRY.size:
            reached = max(reached, last_batch + ENTRY.size + ENTRY.unpack(head)[1])
    for s in skips:
        reached = max(reached, s.position + s.length)
    if reached >= end or (r.active and (r.end_position is None or r.end_position >= f.size())):
        return None
    pos = reached
    while pos < end:                    # a zero-filled (preallocated) rest is not data
        chunk = f.read_at(min(ZERO_CHECK_CHUNK, end - pos), pos)
        if not chunk or chunk.count(0) != len(chunk):
            break
        pos += len(chunk)
    else:
        return None
    head = f.read_at(ENTRY.size, reached)
    found = (f"a batch of {ENTRY.unpack(head)[1] + ENTRY.size} bytes" if len(head) == ENTRY.size
             else f"{end - reached} bytes")
    return CorruptRecordError("batch runs past the end of a closed segment or split", path=r.path,
                              position=reached, expected=f"a complete batch ending by byte {end}", found=found)


def _filter_batch_rows(batch: pa.RecordBatch, split: Split, opts: ReadOptions) -> pa.RecordBatch:
    """granularity=batch: keep batches overlapping the offset bounds (and control batches only
    with includeControlRecords=true)."""
    import pyarrow.compute as pc

    last = batch.column("lastOffset")
    first = pc.fill_null(batch.column("baseOffset"), last)
    keep = pc.and_(pc.greater_equal(last, split.start_offset if split.start_offset is not None else -(1 << 62)),
                   pc.less(first, split.end_offset if split.end_offset is not None else (1 << 62)))
    if not opts.include_control_records:
        keep = pc.and_(keep, pc.invert(batch.column("isControl")))
    return batch.filter(keep)
