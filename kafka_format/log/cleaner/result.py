"""What a cleaning leaves: :class:`CleanResult`, the per-record decisions and the work files
that hold them.

Work files (in the cleaner's work directory, fixed-width numpy rows):

``base``     one row per record of the replica's segments: offset, flags (tombstone, control,
             null key) and the base offset of its source batch;
``round-N``  one row per record round N read: offset, decision, reason, supersededBy.

A later round's row replaces an earlier one (a record a round keeps is read again by the next);
a record no round read keeps its default (``uncleanable``, or ``not-eligible`` when nothing ran).
:func:`decision_chunks` merges them in offset order, ``max_rows`` at a time.
"""

from __future__ import annotations

import os
import shutil
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from kafka_format.common.errors import KafkaFormatError
from kafka_format.log.cleaner.plan import CleanerPlan

__all__ = [
    "BASE_DTYPE",
    "CTRL",
    "DECISIONS",
    "DECISION_SCHEMA",
    "DEC_DTYPE",
    "KEEP",
    "KEEP_REASONS",
    "NULLKEY",
    "REASONS",
    "REMOVE",
    "REMOVE_REASONS",
    "TOMB",
    "Appender",
    "CleanResult",
    "CleanerError",
    "R",
    "Work",
    "decision_chunks",
]

DECISIONS = ("keep", "remove")
KEEP_REASONS = ("latest", "not-in-map", "uncleanable", "null-key-uncleanable", "tombstone-horizon",
                "marker-retained", "not-eligible")
REMOVE_REASONS = ("superseded", "tombstone-expired", "null-key", "aborted", "marker-removed",
                  "below-log-start")
REASONS = KEEP_REASONS + REMOVE_REASONS

DECISION_SCHEMA = pa.schema([
    pa.field("offset", pa.int64()),
    pa.field("decision", pa.string()),
    pa.field("reason", pa.string()),
    pa.field("supersededBy", pa.int64()),
    pa.field("isTombstone", pa.bool_()),
    pa.field("batchBaseOffset", pa.int64()),
])

KEEP, REMOVE = 0, 1
R = {name: i for i, name in enumerate(REASONS)}
TOMB, CTRL, NULLKEY = 1, 2, 4
BASE_DTYPE = np.dtype([("off", "<i8"), ("flags", "u1"), ("bbo", "<i8")])             # one per record
DEC_DTYPE = np.dtype([("off", "<i8"), ("dec", "i1"), ("rsn", "i1"), ("sup", "<i8")])  # one per decided record


class CleanerError(KafkaFormatError):
    """The cleaner would fail here (Kafka marks the partition uncleanable)."""

    code = "CLEANER_ERROR"


class Appender:
    """Fixed-width rows appended to a file, ``flush_rows`` at a time."""

    def __init__(self, path: str, dtype: np.dtype, flush_rows: int) -> None:
        self.path = path
        self.f = open(path, "wb")  # noqa: SIM115  (closed by close())
        self.dtype = dtype
        self.parts: list[np.ndarray] = []
        self.n = 0
        self.flush_rows = flush_rows

    def add(self, rows: np.ndarray) -> None:
        self.parts.append(rows)
        self.n += len(rows)
        if self.n >= self.flush_rows:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            np.concatenate(self.parts).tofile(self.f)
        self.parts, self.n = [], 0

    def close(self) -> None:
        if not self.f.closed:
            self.flush()
            self.f.close()


@dataclass
class Work:
    """The cleaner's work directory: the ``base`` and ``round-N`` files, the cleaned segments, and
    what the final log looks like (``view``: a :class:`kafka_format.log.cleaner.segments.LogView`)."""

    dir: str
    max_rows: int
    view: Any = None
    rounds: list[str] = field(default_factory=list)
    ran: bool = False
    bytes_before: int = 0
    _finalizer: Any = None

    def __post_init__(self) -> None:
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.dir, True)

    @property
    def base_path(self) -> str:
        return os.path.join(self.dir, "base")

    def new_round_file(self) -> Appender:
        out = Appender(os.path.join(self.dir, f"round-{len(self.rounds)}"), DEC_DTYPE, self.max_rows)
        self.rounds.append(out.path)
        return out

    def close(self) -> None:
        self._finalizer()


class _SortedReader:
    """Rows of a work file (sorted by ``off``) taken in order, ``block`` rows read at a time."""

    def __init__(self, path: str, dtype: np.dtype, block: int) -> None:
        self.f = open(path, "rb")  # noqa: SIM115  (closed by close())
        self.dtype = dtype
        self.block = block
        self.buf = np.zeros(0, dtype)

    def upto(self, hi: int) -> np.ndarray:
        """The next rows with ``off <= hi``."""
        out = []
        while True:
            if not len(self.buf):
                self.buf = np.fromfile(self.f, self.dtype, count=self.block)
                if not len(self.buf):
                    break
            k = int(np.searchsorted(self.buf["off"], hi, side="right"))
            out.append(self.buf[:k])
            self.buf = self.buf[k:]
            if len(self.buf):
                break
        return np.concatenate(out) if len(out) > 1 else (out[0] if out else np.zeros(0, self.dtype))

    def close(self) -> None:
        self.f.close()


@dataclass
class Chunk:
    """Final decisions of consecutive records (offset order)."""

    off: np.ndarray
    dec: np.ndarray
    rsn: np.ndarray
    sup: np.ndarray
    flags: np.ndarray
    bbo: np.ndarray


def decision_chunks(work: Work, log_start: int, replica_path: str) -> Iterator[Chunk]:
    """Every record at/after ``log_start`` with its final decision, in offset order: the ``base``
    work file merged with each round's decisions."""
    base = _SortedReader(work.base_path, BASE_DTYPE, work.max_rows)
    readers = [_SortedReader(p, DEC_DTYPE, work.max_rows) for p in work.rounds]
    last = None
    default = R["uncleanable"] if work.ran else R["not-eligible"]
    try:
        while True:
            rows = np.fromfile(base.f, BASE_DTYPE, count=work.max_rows)
            if not len(rows):
                return
            off = rows["off"]
            if (last is not None and off[0] <= last) or (len(off) > 1 and not bool((off[1:] > off[:-1]).all())):
                raise CleanerError("offsets do not increase", path=replica_path,
                                   expected="strictly increasing record offsets", found=f"offset {int(off[0])}")
            last = int(off[-1])
            flags = rows["flags"]
            dec = np.full(len(rows), KEEP, np.int8)
            rsn = np.full(len(rows), default, np.int8)
            if work.ran:
                rsn[(flags & NULLKEY) != 0] = R["null-key-uncleanable"]
            sup = np.full(len(rows), -1, np.int64)
            for r in readers:
                got = r.upto(last)
                if len(got):
                    at = np.searchsorted(off, got["off"])
                    dec[at], rsn[at], sup[at] = got["dec"], got["rsn"], got["sup"]
            sel = off >= log_start
            if not sel.all():
                rows, dec, rsn, sup = rows[sel], dec[sel], rsn[sel], sup[sel]
            if len(rows):
                yield Chunk(rows["off"], dec, rsn, sup, rows["flags"], rows["bbo"])
    finally:
        base.close()
        for r in readers:
            r.close()


_DECISION_STR = pa.array(DECISIONS, pa.string())
_REASON_STR = pa.array(REASONS, pa.string())


def decision_batch(c: Chunk) -> pa.RecordBatch:
    """One :data:`DECISION_SCHEMA` batch of a chunk."""
    return pa.RecordBatch.from_arrays([
        pa.array(c.off, pa.int64()),
        _DECISION_STR.take(pa.array(c.dec.astype(np.int32))),
        _REASON_STR.take(pa.array(c.rsn.astype(np.int32))),
        pa.array(c.sup, pa.int64(), mask=c.sup < 0),
        pa.array((c.flags & TOMB).astype(bool), pa.bool_()),
        pa.array(c.bbo, pa.int64()),
    ], schema=DECISION_SCHEMA)


@dataclass
class CleanResult:
    """Outcome of :func:`kafka_format.log.cleaner.clean_partition`; ``decisions`` follows
    :data:`DECISION_SCHEMA`.

    Counts cover the table's records (offset >= logStartOffset): ``tombstones_removed`` counts
    every removed tombstone (superseded or expired), ``markers_*`` control records.  Bytes cover
    every batch of the partition: ``bytes_after`` sums the batches the cleaner would leave (copied
    batches exactly; rebuilt ones as :mod:`kafka_format.writer` encodes them at the codec's default
    level; empty batches 61).  ``first_dirty_after`` = the new cleaner checkpoint.

    The per-record decisions stay on disk (the cleaner's work files) until asked for:
    :meth:`iter_decisions` streams them in offset order, ``decisions`` builds the whole table
    (small partitions, tests).  :meth:`close` removes the work files (also done when the result
    is garbage-collected).
    """

    plan: CleanerPlan
    rounds: int
    records_before: int
    records_after: int
    bytes_before: int
    bytes_after: int
    tombstones_kept: int
    tombstones_removed: int
    markers_kept: int
    markers_removed: int
    empty_batches_kept: int
    first_dirty_after: int
    _work: Work | None = field(default=None, repr=False, compare=False)
    _decisions: pa.Table | None = field(default=None, repr=False, compare=False)

    def iter_decisions(self, max_rows: int | None = None) -> Iterator[pa.RecordBatch]:
        """The decisions (:data:`DECISION_SCHEMA`) in offset order, ``max_rows`` at most a batch."""
        if self._decisions is not None:
            yield from self._decisions.to_batches(max_chunksize=max_rows)
            return
        if self._work is None:
            raise RuntimeError("the cleaner's work files are gone (result closed)")
        for chunk in decision_chunks(self._work, self.plan.log_start_offset, self._work.view.replica.path):
            batch = decision_batch(chunk)
            if max_rows is None:
                yield batch
            else:
                for lo in range(0, batch.num_rows, max_rows):
                    yield batch.slice(lo, max_rows)

    @property
    def decisions(self) -> pa.Table:
        """Every decision as one table (materialised: use :meth:`iter_decisions` for big partitions)."""
        if self._decisions is not None:
            return self._decisions
        return pa.Table.from_batches(list(self.iter_decisions()), schema=DECISION_SCHEMA)

    def close(self) -> None:
        """Remove the cleaner's work files (the decisions and cleaned segments on disk)."""
        if self._work is not None:
            self._work.close()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if self._decisions is None and self._work is not None:
            state["_decisions"] = self.decisions   # a pickled result carries its decisions, not the work files
        state["_work"] = None
        return state


def result_of(work: Work, plan: CleanerPlan, n_rounds: int, first_dirty_after: int) -> CleanResult:
    """The counts of a finished cleaning, from one pass over the merged decisions."""
    before = after = tk = tr = mk = mr = 0
    for c in decision_chunks(work, plan.log_start_offset, work.view.replica.path):
        kept = c.dec == KEEP
        tomb = (c.flags & TOMB).astype(bool)
        ctrl = (c.flags & CTRL).astype(bool)
        before += len(kept)
        after += int(kept.sum())
        tk += int((kept & tomb).sum())
        tr += int((~kept & tomb).sum())
        mk += int((kept & ctrl).sum())
        mr += int((~kept & ctrl).sum())
    segs = work.view.segments
    return CleanResult(
        plan=plan, rounds=n_rounds, records_before=before, records_after=after,
        bytes_before=work.bytes_before, bytes_after=sum(s.batch_bytes for s in segs),
        tombstones_kept=tk, tombstones_removed=tr, markers_kept=mk, markers_removed=mr,
        empty_batches_kept=sum(s.empty_batches for s in segs), first_dirty_after=first_dirty_after, _work=work)
