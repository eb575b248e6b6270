"""Aborted-transaction index ``NNN.txnindex``.

Layout (storage/.../log/AbortedTxn.java, TransactionIndex.java): fixed 34-byte entries,
big-endian, no header, no padding::

    version            int16   0 (``AbortedTxn.version()`` reads only the FIRST byte, signed)
    producer_id        int64
    first_offset       int64   first offset of the aborted transaction (may be in an earlier segment)
    last_offset        int64   offset of the ABORT marker (inclusive)
    last_stable_offset int64   LSO right after the transaction completed

The broker's iterator stops when fewer than 34 bytes remain (trailing bytes ignored) and throws
for an entry whose version byte is > 0.  Entries are appended in increasing ``last_offset`` to
the segment holding the marker; the file exists only once the segment has an aborted txn.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kafka_format.common.errors import IndexFormatError, KafkaFormatError
from kafka_format.storage import fsio
from kafka_format.storage.index import SanityCheckResult, base_offset_from_name

__all__ = [
    "ABORTED_TXN",
    "ABORTED_TXN_SIZE",
    "CURRENT_VERSION",
    "AbortedTxn",
    "TransactionIndex",
    "TxnIndexAnomaly",
    "TxnIndexSearchResult",
    "collect_aborted_txns",
    "encode_aborted_txn",
    "parse_transaction_index",
    "read_transaction_index",
]

ABORTED_TXN = struct.Struct(
    ">"
    "h"  # version (only the first byte is read by the broker)
    "q"  # producerId
    "q"  # firstOffset
    "q"  # lastOffset
    "q"  # lastStableOffset
)
ABORTED_TXN_SIZE = ABORTED_TXN.size  # AbortedTxn.TOTAL_SIZE
CURRENT_VERSION = 0
MAX_TXN_INDEX_BYTES = 1 << 31

_DTYPE = np.dtype([
    ("version", "i1"),  # AbortedTxn.version(): buffer.get(VERSION_OFFSET), one signed byte
    ("version_low", "u1"),
    ("producer_id", ">i8"),
    ("first_offset", ">i8"),
    ("last_offset", ">i8"),
    ("last_stable_offset", ">i8"),
])
assert _DTYPE.itemsize == ABORTED_TXN_SIZE


@dataclass(frozen=True)
class AbortedTxn:
    """One aborted transaction; ``position`` = byte offset of the entry in its file (None if built)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION
    position: int | None = None

    def __str__(self) -> str:  # AbortedTxn.toString
        return (f"AbortedTxn(version={self.version}, producerId={self.producer_id}, "
                f"firstOffset={self.first_offset}, lastOffset={self.last_offset}, "
                f"lastStableOffset={self.last_stable_offset})")

    def dump_line(self) -> str:
        """kafka-dump-log's line for this entry."""
        return (f"version: {self.version} producerId: {self.producer_id} firstOffset: {self.first_offset} "
                f"lastOffset: {self.last_offset} lastStableOffset: {self.last_stable_offset}")


@dataclass(frozen=True)
class TxnIndexAnomaly:
    position: int
    what: str
    expected: str
    found: str


@dataclass(frozen=True)
class TransactionIndex:
    """Entries of one segment's ``.txnindex`` (empty when the file is absent)."""

    base_offset: int
    entries: tuple[AbortedTxn, ...] = ()
    path: str | None = None
    file_size: int = 0
    anomalies: tuple[TxnIndexAnomaly, ...] = ()

    @property
    def trailing_bytes(self) -> int:
        return self.file_size % ABORTED_TXN_SIZE

    def __len__(self) -> int:
        return len(self.entries)

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """``TransactionIndex.collectAbortedTxns``: (matching entries, search complete)."""
        found: list[AbortedTxn] = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    def sanity_check(self) -> SanityCheckResult:
        """``TransactionIndex.sanityCheck``: every entry's lastOffset >= the segment base offset."""
        f = self.path if self.path is None or "://" in self.path else os.path.abspath(self.path)
        for txn in self.entries:
            if txn.last_offset < self.base_offset:
                return SanityCheckResult(False, (
                    f"Last offset of aborted transaction {txn} in index {f} is less than start offset "
                    f"{self.base_offset}"))
        return SanityCheckResult(True)


def encode_aborted_txn(txn: AbortedTxn) -> bytes:
    """34 bytes of one entry, as ``AbortedTxn.toByteBuffer`` writes it."""
    return ABORTED_TXN.pack(txn.version, txn.producer_id, txn.first_offset, txn.last_offset,
                            txn.last_stable_offset)


def parse_transaction_index(data: bytes | bytearray | memoryview, base_offset: int, *,
                            path: str | None = None) -> TransactionIndex:
    """Parse ``.txnindex`` bytes; IndexFormatError for an entry whose version byte is > 0."""
    view = memoryview(data).cast("B") if memoryview(data).c_contiguous else memoryview(bytes(data))
    size = view.nbytes
    n = size // ABORTED_TXN_SIZE
    raw = np.frombuffer(view, dtype=_DTYPE, count=n)
    bad = np.flatnonzero(raw["version"] > CURRENT_VERSION)
    if bad.size:
        i = int(bad[0])
        raise IndexFormatError(
            f"Unexpected aborted transaction version {int(raw['version'][i])} in transaction index, "
            f"current version is {CURRENT_VERSION}",
            path=path, position=i * ABORTED_TXN_SIZE, expected=f"version <= {CURRENT_VERSION}",
            found=f"version {int(raw['version'][i])}", base_offset=base_offset)
    pids = raw["producer_id"].astype(np.int64).tolist()
    firsts = raw["first_offset"].astype(np.int64).tolist()
    lasts = raw["last_offset"].astype(np.int64).tolist()
    lsos = raw["last_stable_offset"].astype(np.int64).tolist()
    versions = raw["version"].astype(np.int64).tolist()
    entries = tuple(
        AbortedTxn(pids[i], firsts[i], lasts[i], lsos[i], versions[i], i * ABORTED_TXN_SIZE)
        for i in range(n))
    anomalies: list[TxnIndexAnomaly] = []
    if size % ABORTED_TXN_SIZE:
        anomalies.append(TxnIndexAnomaly(n * ABORTED_TXN_SIZE, "partial_entry",
                                         f"file length a multiple of {ABORTED_TXN_SIZE}",
                                         f"{size % ABORTED_TXN_SIZE} trailing bytes (ignored)"))
    for i in range(1, n):
        if lasts[i] <= lasts[i - 1]:
            anomalies.append(TxnIndexAnomaly(i * ABORTED_TXN_SIZE, "last_offset_not_increasing",
                                             f"lastOffset > {lasts[i - 1]}", f"lastOffset {lasts[i]}"))
    for i in range(n):
        if firsts[i] > lasts[i]:
            anomalies.append(TxnIndexAnomaly(i * ABORTED_TXN_SIZE, "first_offset_after_last",
                                             f"firstOffset <= {lasts[i]}", f"firstOffset {firsts[i]}"))
    return TransactionIndex(base_offset=base_offset, entries=entries, path=path, file_size=size,
                            anomalies=tuple(anomalies))


def read_transaction_index(source: str | os.PathLike[str], base_offset: int | None = None, *,
                           filesystem: Any = None, max_bytes: int = MAX_TXN_INDEX_BYTES) -> TransactionIndex:
    """Read a ``.txnindex`` (path or URI); base offset from the file name when None."""
    handle, fs_path = fsio.resolve(source, filesystem)
    location = handle.location(fs_path)
    base = base_offset if base_offset is not None else base_offset_from_name(fs_path)
    try:
        data = handle.read_bytes(fs_path, max_bytes=max_bytes)
    except KafkaFormatError as err:
        raise IndexFormatError(err.reason, path=location, expected=err.expected, found=err.found,
                               code=err.code) from err
    return parse_transaction_index(data, base, path=location)


@dataclass(frozen=True)
class TxnIndexSearchResult:
    aborted: tuple[AbortedTxn, ...]
    complete: bool


def collect_aborted_txns(segments: Sequence[TransactionIndex] | Iterable[TransactionIndex],
                         from_offset: int, to_offset: int) -> TxnIndexSearchResult:
    """Aborted transactions overlapping ``[from_offset, to_offset)``.

    As ``LocalLog.collectAbortedTransactions`` + ``TransactionIndex.collectAbortedTxns``.

    ``segments``: one :class:`TransactionIndex` per segment of the partition (empty ones for
    segments without a ``.txnindex``), any order.  The scan starts at the segment containing
    ``from_offset`` (greatest base <= from_offset; the first segment when from_offset is below all
    bases), takes entries with ``lastOffset >= from && firstOffset < to`` and stops after the first
    entry with ``lastStableOffset >= to`` (``complete=True``).
    """
    ordered = sorted(segments, key=lambda s: s.base_offset)
    if not ordered:
        return TxnIndexSearchResult((), False)
    start = 0
    for i, seg in enumerate(ordered):
        if seg.base_offset <= from_offset:
            start = i
    found: list[AbortedTxn] = []
    for seg in ordered[start:]:
        part, complete = seg.collect(from_offset, to_offset)
        found.extend(part)
        if complete:
            return TxnIndexSearchResult(tuple(found), True)
    return TxnIndexSearchResult(tuple(found), False)
