"""``Cleaner.cleanInto`` and ``MemoryRecords.filterTo`` over a decoded chunk, as numpy columns.

For the batches of a chunk (:class:`kafka_format.records.file_records.DecodedChunk`):
``checkBatchRetention`` (the transaction state walked in order, ``lastRecordsOfActiveProducers``,
the round's upper bound), then ``shouldRetainRecord`` for every record at once (offset map
lookups in one call), then each batch's outcome: copied as it is, rebuilt around its retained
records (``buildRetainedRecordsInto``, stamping a delete horizon where ``filterTo`` does), kept as
an empty header (``RETAIN_EMPTY``: ``writeEmptyHeader``), or dropped.  The conditions keep
``shouldRetainRecord``'s order: each record takes the first that applies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kafka_format.common.errors import KafkaFormatError
from kafka_format.log.cleaner import kernels
from kafka_format.log.cleaner.result import DEC_DTYPE, KEEP, REMOVE, CleanerError, R
from kafka_format.log.cleaner.transactions import TxnState
from kafka_format.records.compression import compress
from kafka_format.records.control import parse_control_key
from kafka_format.records.decoder import locate
from kafka_format.records.file_records import DecodedChunk
from kafka_format.records.record_batch import (
    CODEC_MASK,
    CONTROL_MASK,
    CREATE_TIME,
    DELETE_HORIZON_MASK,
    LOG_APPEND_TIME,
    MAGIC_V1,
    MAGIC_V2,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)
from kafka_format.storage.partition_state import ProducerEntry
from kafka_format.writer.batches import build_empty_batch, frame_v2_batch, legacy_entry

__all__ = [
    "COPY",
    "DROP",
    "EMPTY",
    "REBUILD",
    "ActiveProducers",
    "Outcome",
    "RoundRules",
    "batch_flags",
    "control_types",
    "filter_chunk",
]

COPY, REBUILD, EMPTY, DROP = 0, 1, 2, 3


class ActiveProducers:
    """``lastRecordsOfActiveProducers`` as sorted numpy columns (one lookup per chunk)."""

    def __init__(self, active: dict[int, ProducerEntry]) -> None:
        pids = sorted(active)
        self.pids = np.array(pids, np.int64)
        self.last_data = np.array([active[p].last_data_offset for p in pids], np.int64)
        self.epoch = np.array([active[p].epoch for p in pids], np.int64)

    def last_of_producer(self, pid: np.ndarray, last: np.ndarray, control: np.ndarray,
                         epoch: np.ndarray) -> np.ndarray:
        """``isBatchLastRecordOfProducer`` per batch."""
        if not len(self.pids):
            return np.zeros(len(pid), bool)
        k = np.minimum(np.searchsorted(self.pids, pid), len(self.pids) - 1)
        known = (self.pids[k] == pid) & (pid >= 0)
        data = self.last_data[k]
        return known & np.where(data >= 0, last == data, control & (epoch == self.epoch[k]))


@dataclass
class RoundRules:
    """What the filter needs of a round: ``now``, the map and its latestOffset, the round's upper
    bound (firstUncleanable), ``delete.retention.ms`` and the active producers."""

    now_ms: int
    offset_map: kernels.OffsetMap
    latest: int
    first_uncleanable: int
    delete_retention_ms: int
    active: ActiveProducers


@dataclass
class Outcome:
    """A chunk's batches after filtering: ``kind`` per batch (COPY, REBUILD, EMPTY, DROP), the
    rebuilt bytes of the REBUILD/EMPTY ones (with their last offset and max timestamp), the
    records' decisions."""

    kind: np.ndarray
    built: dict[int, tuple[bytes, int, int]]
    decisions: np.ndarray


def batch_flags(chunk: DecodedChunk) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(control, transactional, has delete horizon) of the chunk's batches ``lo..hi``."""
    t = chunk.table
    sl = slice(chunk.lo, chunk.hi)
    v2 = t.magic[sl] == MAGIC_V2
    attrs = t.attributes[sl].astype(np.int64)
    return (v2 & ((attrs & CONTROL_MASK) != 0), v2 & ((attrs & TRANSACTIONAL_MASK) != 0),
            v2 & ((attrs & DELETE_HORIZON_MASK) != 0))


def control_types(chunk: DecodedChunk, control: np.ndarray, counts: np.ndarray, first: np.ndarray,
                  path: str) -> dict[int, int]:
    """Control type (``ControlRecordType.parse`` of the first record's key) per control batch with
    records, by batch index in the chunk."""
    out: dict[int, int] = {}
    c = chunk.columns
    for b in np.flatnonzero(control & (counts > 0)).tolist():
        r = int(first[b])
        key = c.key_data[c.key_offsets[r]:c.key_offsets[r + 1]].tobytes() if c.key_valid[r] else None
        try:
            out[b] = int(parse_control_key(key)[1])
        except KafkaFormatError as exc:             # placed at its batch
            raise locate(exc, path=path, position=chunk.base + int(chunk.table.position[chunk.lo + b])) from None
    return out


def _retention(chunk: DecodedChunk, txn: TxnState, rules: RoundRules, counts: np.ndarray, first: np.ndarray,
               path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``checkBatchRetention`` per batch: (discard its records, RETAIN_EMPTY, containsMarkerForEmptyTxn);
    a batch is deleted outright (``BatchRetention.DELETE``) when discarded and not RETAIN_EMPTY."""
    t = chunk.table
    sl = slice(chunk.lo, chunk.hi)
    control, transactional, has_horizon = batch_flags(chunk)
    pid, last = t.producer_id[sl], t.last_offset[sl]
    can = np.zeros(len(pid), bool)
    special = np.flatnonzero(control | transactional)
    if len(special):
        ctypes = control_types(chunk, control, counts, first, path)
        pids, lasts = pid.tolist(), last.tolist()
        for b in special.tolist():
            if control[b]:
                can[b] = txn.on_control(pids[b], lasts[b], ctypes.get(b))
            else:
                can[b] = txn.on_data(pids[b], lasts[b], True)
    horizon = t.base_timestamp[sl]
    discard = np.where(control, can & has_horizon & (horizon <= rules.now_ms), can)
    retain_empty = (rules.active.last_of_producer(pid, last, control, t.producer_epoch[sl].astype(np.int64))
                    | (last + 1 == rules.first_uncleanable))
    return discard, retain_empty, can & control


def filter_chunk(chunk: DecodedChunk, txn: TxnState, rules: RoundRules, retain_legacy: bool,
                 path: str) -> Outcome:
    """Decide the records and batches of ``chunk`` (see the module doc)."""
    t, c = chunk.table, chunk.columns
    lo, nb = chunk.lo, chunk.hi - chunk.lo
    sl = slice(lo, chunk.hi)
    rb = c.batch_row.astype(np.intp) - lo
    counts = np.bincount(rb, minlength=nb)
    first = np.searchsorted(rb, np.arange(nb))
    discard, retain_empty, marker_empty_txn = _retention(chunk, txn, rules, counts, first, path)
    control, _, has_horizon = batch_flags(chunk)
    v2 = t.magic[sl] == MAGIC_V2
    horizon = t.base_timestamp[sl]

    off = c.offset
    n = len(off)
    null = ~c.key_valid
    ctrl_r = control[rb]
    tomb = ~c.value_valid & ~ctrl_r
    keep = np.zeros(n, bool)
    reason = np.zeros(n, np.int8)
    found = np.full(n, -1, np.int64)
    discard_r = discard[rb]
    reason[discard_r] = np.where(ctrl_r[discard_r], R["marker-removed"], R["aborted"])
    marker = ctrl_r & ~discard_r
    keep[marker] = True
    reason[marker] = R["marker-retained"]
    rest = ~discard_r & ~ctrl_r
    above = rest & (off > rules.latest)           # beyond the map: kept without looking at the key
    keep[above] = True
    reason[above] = np.where(null[above], R["null-key-uncleanable"], R["uncleanable"])
    rest &= ~above
    look = np.flatnonzero(rest & ~null)
    if len(look):
        got = np.empty(len(look), np.int64)
        rules.offset_map.get_keys(c.key_offsets, c.key_data, look.astype(np.int64), got)
        found[look] = got
    reason[rest & null] = R["null-key"]
    rest &= ~null
    superseded = rest & (off < found)
    reason[superseded] = R["superseded"]
    rest &= ~superseded
    live = rest & ~tomb
    keep[live] = True
    reason[live] = np.where(found[live] >= 0, R["latest"], R["not-in-map"])
    tombs = rest & tomb
    if tombs.any():
        retain = np.where(v2, ~has_horizon | (rules.now_ms < horizon), retain_legacy)[rb]
        keep[tombs] = retain[tombs]
        reason[tombs] = np.where(retain[tombs], R["tombstone-horizon"], R["tombstone-expired"])
    found[~superseded] = -1
    dec = np.empty(n, DEC_DTYPE)
    dec["off"] = off
    dec["dec"] = np.where(keep, KEEP, REMOVE)
    dec["rsn"] = reason
    dec["sup"] = found

    kept = np.bincount(rb[keep], minlength=nb)
    tomb_kept = np.bincount(rb[keep & tomb], minlength=nb)
    delete = ~retain_empty & discard
    need_horizon = v2 & ((tomb_kept > 0) | marker_empty_txn) & ~has_horizon
    kind = np.full(nb, DROP, np.int8)
    kind[~delete & (kept > 0)] = REBUILD
    kind[~delete & (kept > 0) & (kept == counts) & ~need_horizon] = COPY
    kind[~delete & (kept == 0) & retain_empty] = EMPTY
    built: dict[int, tuple[bytes, int, int]] = {}
    for b in np.flatnonzero(kind == EMPTY).tolist():
        if not v2[b]:
            raise CleanerError("Empty batches are only supported for magic v2 and above", path=path,
                               position=chunk.base + int(t.position[lo + b]),
                               expected="magic >= 2 for a batch the cleaner keeps empty",
                               found=f"magic {int(t.magic[lo + b])}", base_offset=int(t.base_offset[lo + b]))
        built[b] = _empty(chunk, lo + b)
    for b in np.flatnonzero(kind == REBUILD).tolist():
        rows = np.flatnonzero(keep[first[b]:first[b] + counts[b]]) + first[b]
        stamp = rules.now_ms + rules.delete_retention_ms if need_horizon[b] else (
            int(horizon[b]) if has_horizon[b] else None)
        built[b] = _rebuild(chunk, lo + b, rows, stamp) if v2[b] else _rebuild_legacy(chunk, lo + b, rows)
    return Outcome(kind, built, dec)


def _empty(chunk: DecodedChunk, row: int) -> tuple[bytes, int, int]:
    """``DefaultRecordBatch.writeEmptyHeader`` for batch ``row`` (RETAIN_EMPTY, no record left)."""
    t = chunk.table
    attrs = int(t.attributes[row])
    base = int(t.base_offset[row])
    ts = int(t.max_timestamp[row])
    built = build_empty_batch(base_offset=base, last_offset_delta=int(t.last_offset[row]) - base, max_timestamp=ts,
                              timestamp_type=LOG_APPEND_TIME if attrs & TIMESTAMP_TYPE_MASK else CREATE_TIME,
                              partition_leader_epoch=int(t.leader_epoch[row]), producer_id=int(t.producer_id[row]),
                              producer_epoch=int(t.producer_epoch[row]), base_sequence=int(t.base_sequence[row]),
                              transactional=bool(attrs & TRANSACTIONAL_MASK), control=bool(attrs & CONTROL_MASK))
    return built.data, built.last_offset, ts


def _rebuild(chunk: DecodedChunk, row: int, rows: np.ndarray, horizon: int | None) -> tuple[bytes, int, int]:
    """``buildRetainedRecordsInto`` for v2 batch ``row`` around its records ``rows``."""
    t, c = chunk.table, chunk.columns
    attrs = int(t.attributes[row])
    base = int(t.base_offset[row])
    ts = c.timestamp[rows]
    base_ts = int(ts[0]) if horizon is None else horizon
    lat = bool(attrs & TIMESTAMP_TYPE_MASK)
    max_ts = int(t.max_timestamp[row]) if lat else int(ts.max())
    raw = kernels.encode_v2_records(c, rows, base, base_ts)
    data = frame_v2_batch(raw, base_offset=base, last_offset_delta=int(t.last_offset[row]) - base,
                          count=len(rows), base_timestamp=base_ts, max_timestamp=max_ts, codec=attrs & CODEC_MASK,
                          timestamp_type=LOG_APPEND_TIME if lat else CREATE_TIME,
                          transactional=bool(attrs & TRANSACTIONAL_MASK), control=bool(attrs & CONTROL_MASK),
                          delete_horizon=horizon is not None, partition_leader_epoch=int(t.leader_epoch[row]),
                          producer_id=int(t.producer_id[row]), producer_epoch=int(t.producer_epoch[row]),
                          base_sequence=int(t.base_sequence[row]))
    return data, int(t.last_offset[row]), max_ts


def _rebuild_legacy(chunk: DecodedChunk, row: int, rows: np.ndarray) -> tuple[bytes, int, int]:
    """A magic 0/1 wrapper rebuilt from its first retained record (``MemoryRecordsBuilder``: v1
    inner offsets relative to it, v0 absolute; inner messages carry the wrapper's timestamp type;
    the wrapper's offset is the last retained one)."""
    t, c = chunk.table, chunk.columns
    magic = int(t.magic[row])
    codec = int(t.attributes[row]) & CODEC_MASK
    lat = magic == MAGIC_V1 and bool(int(t.attributes[row]) & TIMESTAMP_TYPE_MASK)
    wrapper_max = int(t.max_timestamp[row])

    def blob(offsets: np.ndarray, data: np.ndarray, valid: np.ndarray, i: int) -> bytes | None:
        return data[offsets[i]:offsets[i + 1]].tobytes() if valid[i] else None

    offsets = c.offset[rows].tolist()
    first = offsets[0]
    inner, max_ts = [], -1
    for r, o in zip(rows.tolist(), offsets, strict=True):
        ts = wrapper_max if lat else (int(c.timestamp[r]) if magic == MAGIC_V1 else -1)
        max_ts = max(max_ts, ts)
        inner.append(legacy_entry(magic, TIMESTAMP_TYPE_MASK if lat else 0, ts,
                                  blob(c.key_offsets, c.key_data, c.key_valid, r),
                                  blob(c.value_offsets, c.value_data, c.value_valid, r),
                                  o - first if magic == MAGIC_V1 else o))
    value = compress(codec, b"".join(inner), magic=magic)
    wrapper_ts = wrapper_max if lat else max_ts
    attributes = codec | (TIMESTAMP_TYPE_MASK if lat else 0)
    data = legacy_entry(magic, attributes, wrapper_ts, None, value, offsets[-1])
    return data, offsets[-1], (wrapper_ts if magic == MAGIC_V1 else -1)


def write_outcome(chunk: DecodedChunk, out: Outcome, writer: object) -> None:
    """The kept batches of ``chunk`` appended to ``writer`` (a
    :class:`kafka_format.log.cleaner.segments.CleanedSegmentWriter`) in order: runs of copied
    batches as one slice of the chunk's bytes."""
    t = chunk.table
    lo = chunk.lo
    kinds = out.kind.tolist()
    i, nb = 0, len(kinds)
    data = memoryview(chunk.data)
    while i < nb:
        k = kinds[i]
        if k == DROP:
            i += 1
            continue
        if k == COPY:
            j = i
            while j < nb and kinds[j] == COPY:
                j += 1
            a, z = lo + i, lo + j
            start = int(t.position[a])
            end = int(t.position[z - 1]) + int(t.size[z - 1])
            writer.append(data[start:end], t.size[a:z].tolist(), t.last_offset[a:z].tolist(),  # type: ignore[attr-defined]
                          t.max_timestamp[a:z].tolist())
            i = j
            continue
        raw, last, max_ts = out.built[i]
        writer.append(raw, [len(raw)], [last], [max_ts],  # type: ignore[attr-defined]
                      empty=1 if k == EMPTY else 0)
        i += 1
