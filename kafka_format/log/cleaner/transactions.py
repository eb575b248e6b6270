"""Transactions as the cleaner walks them: ``CleanedTransactionMetadata`` and
``LocalLog.collectAbortedTransactions``.

Batches are fed in offset order; only transactional and control batches need to be shown (a plain
data batch only consumes aborted transactions up to its last offset, which the next transactional
or control batch does as well: nothing reads the state in between).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kafka_format.records.control import CONTROL_ABORT, CONTROL_COMMIT
from kafka_format.storage.txnindex import AbortedTxn

__all__ = ["CONTROL_ABORT", "CONTROL_COMMIT", "TxnState", "collect_aborted"]


@dataclass
class _Aborted:
    txn: AbortedTxn
    last_observed: int | None = None     # AbortedTransactionMetadata.lastObservedBatchOffset


class TxnState:
    """``CleanedTransactionMetadata``: aborted transactions still to be met (a min-heap by first
    offset, ties in the order added), the ongoing aborted and committed ones, and the cleaned
    segment's ``.txnindex`` entries (``cleaned_index``, None while building the offset map)."""

    def __init__(self) -> None:
        self._pending: list[tuple[int, int, AbortedTxn]] = []
        self._added = 0
        self.committed: set[int] = set()
        self.aborted: dict[int, _Aborted] = {}
        self.cleaned_index: list[AbortedTxn] | None = None

    def add(self, txns: Iterable[AbortedTxn]) -> None:
        """``addAbortedTransactions``."""
        for t in txns:
            heapq.heappush(self._pending, (t.first_offset, self._added, t))
            self._added += 1

    def consume(self, offset: int) -> None:
        """``consumeAbortedTxnsUpTo``: the aborted transactions starting at or below ``offset``
        become ongoing (call it at the end of each segment: it stands for the plain batches)."""
        while self._pending and self._pending[0][0] <= offset:
            t = heapq.heappop(self._pending)[2]
            self.aborted.setdefault(t.producer_id, _Aborted(t))

    def on_control(self, producer_id: int, last_offset: int, control_type: int | None) -> bool:
        """``onControlBatchRead``: whether the marker may go (``control_type`` None: the batch is
        empty, already cleaned)."""
        self.consume(last_offset)
        if control_type is None:
            return True
        if control_type == CONTROL_ABORT:
            meta = self.aborted.pop(producer_id, None)
            if meta is not None and meta.last_observed is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(meta.txn)
                return False
            return True
        if control_type == CONTROL_COMMIT:
            if producer_id in self.committed:
                self.committed.discard(producer_id)
                return False
            return True
        return False

    def on_data(self, producer_id: int, last_offset: int, transactional: bool) -> bool:
        """``onBatchRead``: whether the data batch belongs to an aborted transaction."""
        self.consume(last_offset)
        if not transactional:
            return False
        meta = self.aborted.get(producer_id)
        if meta is not None:
            meta.last_observed = last_offset
            return True
        self.committed.add(producer_id)
        return False


def collect_aborted(segment_bases: Sequence[int], segment_txns: Sequence[Iterable[AbortedTxn]], log_start: int,
                    base: int, upper: int) -> list[AbortedTxn]:
    """``LocalLog.collectAbortedTransactions(base, upper)``: the aborted transactions of the
    ``.txnindex`` files from the segment holding ``base`` on, those overlapping ``[logStart,
    upper)``, up to the first whose last stable offset reaches ``upper``."""
    if not segment_bases or segment_bases[0] > base:
        return []
    first = 0
    for i, b in enumerate(segment_bases):
        if b <= base:
            first = i
    out: list[AbortedTxn] = []
    for txns in segment_txns[first:]:
        for t in txns:
            if t.last_offset >= log_start and t.first_offset < upper:
                out.append(t)
            if t.last_stable_offset >= upper:
                return out
    return out
