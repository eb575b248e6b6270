"""The log as the cleaner sees it, segment by segment, and the segments it writes.

A :class:`LogView` is a list of :class:`CleanerSegment`: the replica's own segments until a round
rewrites them, then the cleaned segments that round wrote into the work directory (as
``Cleaner.cleanSegments`` swaps a cleaned segment in with ``replaceSegments``).  Only per-segment
facts are held (sizes, mtime, next offset, the aborted transactions of its ``.txnindex``); batches
and records are read from the files chunk by chunk when a round needs them.

:class:`CleanedSegmentWriter` streams one cleaned segment to disk with the broker's index rule
(``LogSegment.append`` per batch, as :class:`kafka_format.writer.segments.SegmentWriter`): an
offset-index entry when more than ``index.interval.bytes`` were appended since the last one, a
time-index entry with it when the largest timestamp grew, and a last one on close.
:func:`write_cleaned_partition` puts the final segments, snapshots, ``leader-epoch-checkpoint`` and
``partition.metadata`` into a partition directory.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kafka_format.common.errors import KafkaFormatError
from kafka_format.records.file_records import DecodedChunk, decoded_chunks
from kafka_format.storage.index import OFFSET_DTYPE, OFFSET_ENTRY, TIME_ENTRY
from kafka_format.storage.logdir import PartitionLog, Segment
from kafka_format.storage.txnindex import AbortedTxn, encode_aborted_txn
from kafka_format.writer.segments import segment_file_name

__all__ = ["CleanedSegmentWriter", "CleanerSegment", "LogView", "copy_segment_files", "write_partition_files"]


@dataclass
class CleanerSegment:
    """One segment of the log being cleaned."""

    base: int
    location: str                  # its .log: a location on the replica's filesystem, or a local path (written)
    written: bool                  # a round wrote it into the work directory
    size: int                      # bytes of the .log (groupSegmentsBySize)
    index_size: int
    timeindex_size: int
    mtime: int                     # lastModified, ms (0: unknown)
    next_offset: int               # LogSegment.readNextOffset
    txns: list[AbortedTxn] = field(default_factory=list)
    batch_bytes: int = 0           # bytes of its complete batches
    empty_batches: int = 0         # batches with no record
    original: Segment | None = None   # the replica's segment, while untouched


class LogView:
    """The segments of ``replica`` as the cleaner sees them between rounds (see the module doc)."""

    def __init__(self, replica: PartitionLog, work_dir: str, read_size: int, max_rows: int) -> None:
        self.replica = replica
        self.work_dir = work_dir
        self.read_size = read_size
        self.max_rows = max_rows
        self.segments: list[CleanerSegment] = []

    @property
    def bases(self) -> list[int]:
        return [s.base for s in self.segments]

    def open(self, seg: CleanerSegment) -> Any:
        """The segment's ``.log`` opened for reading (a context manager)."""
        if seg.written:
            return open(seg.location, "rb")  # noqa: SIM115  (the caller's with-block closes it)
        fs = self.replica.filesystem
        return fs.opened(fs.fs_path(seg.location))

    def chunks(self, seg: CleanerSegment, start: int = 0) -> Iterator[DecodedChunk]:
        """Batches of ``seg`` from byte ``start`` with their records decoded, chunk by chunk
        (``read_size`` bytes read, ``max_rows`` records decoded at a time, one batch never cut).
        A corrupt batch raises, naming the file."""
        with self.open(seg) as f:
            try:
                yield from decoded_chunks(f, start=start, path=seg.location, read_size=self.read_size,
                                          max_rows=self.max_rows)
            except KafkaFormatError as exc:
                raise named(exc, seg.location) from None

    def index_position(self, seg: CleanerSegment, target: int) -> int:
        """Position of ``OffsetIndex.lookup(target)`` in ``seg`` (0 without a lower entry)."""
        if seg.written:
            entries = np.fromfile(_index_path(seg), OFFSET_DTYPE)
            offsets = entries["relative_offset"].astype(np.int64) + seg.base
            positions = entries["position"].astype(np.int64)
        else:
            assert seg.original is not None
            index = self.replica.offset_index(seg.original)
            if index is None:
                return 0
            offsets = np.asarray(index.offsets, np.int64)
            positions = np.asarray(index.positions, np.int64)
        k = int(np.searchsorted(offsets, target, side="right"))
        return int(positions[k - 1]) if k else 0

    def discard(self, segs: Sequence[CleanerSegment]) -> None:
        """Delete the work files of written segments a round replaced."""
        for s in segs:
            if s.written:
                for path in _files(s.location):
                    if os.path.exists(path):
                        os.unlink(path)


def named(exc: KafkaFormatError, path: str) -> KafkaFormatError:
    """``exc`` naming ``path`` when it was raised over an open file."""
    if exc.path is None or exc.path == "<bytes>":
        exc.path = path
        exc.args = (exc._render(),)
    return exc


def _index_path(seg: CleanerSegment) -> str:
    return seg.location[: -len(".log")] + ".index"


def _files(log_path: str) -> list[str]:
    stem = log_path[: -len(".log")]
    return [stem + s for s in (".log", ".index", ".timeindex", ".txnindex")]


class CleanedSegmentWriter:
    """One cleaned segment written into ``directory`` (named by its base offset), batch by batch.

    Index entries are kept until :meth:`close` (at most ``segment.index.bytes`` of them, as the
    broker's index files); batch bytes go straight to the ``.log``."""

    def __init__(self, directory: str, base: int, *, index_interval_bytes: int) -> None:
        self.base = base
        self.log_path = os.path.join(directory, segment_file_name(base, ".log"))
        self._log = open(self.log_path, "wb")  # noqa: SIM115  (closed by close())
        self.interval = index_interval_bytes
        self.size = 0
        self.batches = 0
        self.empty_batches = 0
        self.next_offset = base
        self._since = 0
        self._max_ts = -1
        self._max_ts_offset = base
        self._offsets: list[int] = []
        self._positions: list[int] = []
        self._times: list[tuple[int, int]] = []
        self.txns: list[AbortedTxn] = []

    def append(self, data: bytes | memoryview, sizes: Sequence[int], last_offsets: Sequence[int],
               max_timestamps: Sequence[int], empty: int = 0) -> None:
        """Batches whose bytes are ``data`` (consecutive), one ``LogSegment.append`` rule step per
        batch; ``empty`` of them hold no record."""
        self._log.write(data)
        pos = self.size
        since, interval = self._since, self.interval
        for size, last, ts in zip(sizes, last_offsets, max_timestamps, strict=True):
            if ts > self._max_ts:
                self._max_ts, self._max_ts_offset = ts, last
            if since > interval:
                if self._offsets and last <= self._offsets[-1]:
                    raise ValueError(f"offset index entry {last} not above the last one")
                self._offsets.append(last)
                self._positions.append(pos)
                self._time_entry()
                since = 0
            pos += size
            since += size
            self.next_offset = last + 1
        self._since = since
        self.size = pos
        self.batches += len(sizes)
        self.empty_batches += empty

    def _time_entry(self) -> None:
        # TimeIndex.maybeAppend(maxTimestampSoFar, its offset): only a larger timestamp
        if self._max_ts > (self._times[-1][0] if self._times else -1):
            self._times.append((self._max_ts, self._max_ts_offset))

    @property
    def index_size(self) -> int:
        return len(self._offsets) * OFFSET_ENTRY.size

    def close(self, mtime_ms: int) -> CleanerSegment:
        """Finish the files (final time-index entry, indexes trimmed to their entries, the
        ``.txnindex`` when a transaction was kept) and stamp ``mtime_ms``."""
        self._log.close()
        self._time_entry()
        stem = self.log_path[: -len(".log")]
        with open(stem + ".index", "wb") as f:
            f.write(b"".join(OFFSET_ENTRY.pack(o - self.base, p) for o, p in zip(self._offsets, self._positions)))
        with open(stem + ".timeindex", "wb") as f:
            f.write(b"".join(TIME_ENTRY.pack(t, o - self.base) for t, o in self._times))
        if self.txns:
            with open(stem + ".txnindex", "wb") as f:
                f.write(b"".join(encode_aborted_txn(t) for t in self.txns))
        if mtime_ms:
            for path in _files(self.log_path):
                if os.path.exists(path):
                    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
        return CleanerSegment(base=self.base, location=self.log_path, written=True, size=self.size,
                              index_size=self.index_size, timeindex_size=len(self._times) * TIME_ENTRY.size,
                              mtime=mtime_ms, next_offset=self.next_offset, txns=list(self.txns),
                              batch_bytes=self.size, empty_batches=self.empty_batches)

    def abort(self) -> None:
        """Close and remove what was written (a failed round)."""
        self._log.close()
        for path in _files(self.log_path):
            if os.path.exists(path):
                os.unlink(path)


def copy_segment_files(view: LogView, seg: CleanerSegment, dest_dir: str) -> None:
    """The files of one final segment into ``dest_dir``: a written one's work files (linked when
    the filesystem allows, else copied), or the replica's own files, mtimes kept."""
    name = segment_file_name(seg.base, "")
    if seg.written:
        for path in _files(seg.location):
            if os.path.exists(path):
                target = os.path.join(dest_dir, name + os.path.splitext(path)[1])
                try:
                    os.link(path, target)
                except OSError:
                    shutil.copy2(path, target)
        return
    original = seg.original
    assert original is not None
    for attr, suffix in (("log_path", ".log"), ("index_path", ".index"), ("timeindex_path", ".timeindex"),
                         ("txnindex_path", ".txnindex")):
        loc = getattr(original, attr)
        if loc is not None:
            copy_file(view.replica.filesystem, loc, os.path.join(dest_dir, name + suffix), original.log_mtime_ms)


def write_partition_files(replica: PartitionLog, dest_dir: str) -> None:
    """Producer snapshots, ``leader-epoch-checkpoint`` and ``partition.metadata`` copied as they are."""
    fs = replica.filesystem
    for snap in replica.snapshots:
        copy_file(fs, snap.path, os.path.join(dest_dir, os.path.basename(fs.fs_path(snap.path))), None)
    for name in ("leader-epoch-checkpoint", "partition.metadata"):
        loc = replica.path.rstrip("/") + "/" + name
        try:
            copy_file(fs, loc, os.path.join(dest_dir, name), None)
        except (OSError, KafkaFormatError):
            pass


def copy_file(fs: Any, location: str, target: str, mtime_ms: int | None) -> None:
    """One file of the replica's filesystem to a local ``target`` (streamed), ``mtime_ms`` set."""
    src = fs.fs_path(location)
    if os.path.exists(src) and "://" not in location:
        shutil.copy2(src, target)
    else:
        with fs.opened(src) as f, open(target, "wb") as out:
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                out.write(chunk)
    if mtime_ms:
        os.utime(target, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
