"""Audit checks of a replica's state: offset checkpoints, ``leader-epoch-checkpoint``, producer
``.snapshot`` files against a replay of the log, ``.txnindex`` against the ABORT markers, and open
or hanging transactions."""

from __future__ import annotations

from typing import Any

import numpy as np

from kafka_format.common.errors import KafkaFormatError
from kafka_format.common.units import human_duration
from kafka_format.log.audit.model import (
    _V2,
    ERROR,
    INFO,
    TRANSACTION_MAX_TIMEOUT_MS,
    WARNING,
    Marker,
    PartitionChecks,
)
from kafka_format.storage import checkpoints as ckpt
from kafka_format.storage.logdir import Segment


class StateChecks(PartitionChecks):
    """The checkpoint, leader-epoch and transaction checks of a replica's audit."""

    # -- checkpoints -------------------------------------------------------------------------------
    def _checkpoints(self, leo: int) -> None:
        r = self.r
        hw = r.high_watermark_checkpoint
        start = r.log_start_offset
        if hw is not None and hw > leo:
            self.add(ERROR, "checkpoint-hw-above-leo", "high watermark above the log end offset",
                     file=self._state_file(ckpt.REPLICATION_OFFSET_CHECKPOINT), offset=hw,
                     expected=f"<= {leo}", actual=hw)
        if start > leo:
            self.add(ERROR, "log-start-above-leo", "log start offset above the log end offset",
                     file=self._state_file(ckpt.LOG_START_OFFSET_CHECKPOINT), offset=start,
                     expected=f"<= {leo}", actual=start)
        elif hw is not None and start > hw:
            # the two checkpoints are written at different times; on load the broker raises the
            # high watermark to the log start offset (UnifiedLog.updateHighWatermark)
            self.add(WARNING, "log-start-above-hw", "log start offset above the checkpointed high watermark "
                     "(a stale checkpoint: the broker lifts the high watermark to the log start on load)",
                     file=self._state_file(ckpt.LOG_START_OFFSET_CHECKPOINT), offset=start,
                     expected=f"<= {hw}", actual=start)
        if r.recovery_point is not None and r.recovery_point > leo:
            self.add(ERROR, "recovery-point-above-leo", "recovery point above the log end offset",
                     file=self._state_file(ckpt.RECOVERY_POINT_CHECKPOINT), offset=r.recovery_point,
                     expected=f"<= {leo}", actual=r.recovery_point)
        dirty = r.cleaner_offset_checkpoint
        if dirty is not None and not start <= dirty <= leo:
            self.add(WARNING, "cleaner-checkpoint-out-of-range",
                     "cleaner checkpoint outside [logStartOffset, "
                     "LEO]: the cleaner resets it to the log start offset",
                     file=self._state_file(ckpt.CLEANER_OFFSET_CHECKPOINT), offset=dirty,
                     expected=f"[{start}, {leo}]", actual=dirty)

    # -- leader epochs -----------------------------------------------------------------------------
    def _leader_epochs(self, leo: int) -> None:
        r = self.r
        b, files, which = self._all_batches()
        keep = (b.magic == _V2) & (b.leader_epoch >= 0) & (b.last_offset >= r.log_start_offset)
        idx = np.flatnonzero(keep)
        cp = r.leader_epochs
        cp_path = self.handle.join(r.path, ckpt.LEADER_EPOCH_CHECKPOINT)
        epochs = b.leader_epoch[idx]
        for k in (np.flatnonzero(epochs[1:] < epochs[:-1]) + 1)[:10].tolist():
            j = int(idx[k])
            self.add(ERROR, "leader-epoch-decreasing", "batch leader epoch below an earlier batch's",
                     file=files[int(which[j])], position=int(b.position[j]), offset=int(b.base_offset[j]),
                     expected=f">= {int(epochs[k - 1])}", actual=int(epochs[k]))
        if cp is None:
            return
        entries = list(cp.entries)
        for k in range(1, len(entries)):
            prev = entries[k - 1]
            if entries[k].epoch <= prev.epoch or entries[k].start_offset < prev.start_offset:
                self.add(ERROR, "leader-epoch-checkpoint-order",
                         "entries must increase in epoch and start offset",
                         file=cp_path, offset=entries[k].start_offset,
                         expected=f"epoch > {entries[k - 1].epoch}, start >= {entries[k - 1].start_offset}",
                         actual=f"epoch {entries[k].epoch}, start {entries[k].start_offset}")
        for e in entries:
            if e.start_offset > leo:
                self.add(ERROR, "leader-epoch-beyond-log-end", f"epoch {e.epoch} starts after the log end",
                         file=cp_path, offset=e.start_offset, expected=f"<= {leo}", actual=e.start_offset)
        starts = {e.epoch: e.start_offset for e in entries}
        _epochs, first_rows = np.unique(epochs, return_index=True)   # first batch of each epoch
        for k in sorted(first_rows.tolist()):
            j = int(idx[k])
            epoch = int(b.leader_epoch[j])
            first = int(b.base_offset[j])
            f, pos = files[int(which[j])], int(b.position[j])
            if epoch not in starts:
                self.add(WARNING, "leader-epoch-missing",
                         f"batches of leader epoch {epoch} but no checkpoint entry",
                         file=f, position=pos, offset=first, expected=f"an entry for epoch {epoch}",
                         actual="none")
                continue
            s = starts[epoch]
            if s > max(first, r.log_start_offset):
                self.add(ERROR, "leader-epoch-start-mismatch",
                         f"a batch of epoch {epoch} precedes the epoch's "
                         "start offset", file=f, position=pos, offset=first, expected=f">= {s}", actual=first)
            elif s < first:
                # batches in [s, first) must not exist with another epoch (compaction may leave a gap)
                between = np.flatnonzero(keep & (b.base_offset >= s) & (b.base_offset < first))
                if between.size:
                    q = int(between[0])
                    self.add(ERROR, "leader-epoch-start-mismatch", f"epoch {epoch} starts at {s} in the "
                             f"checkpoint but the batch at {int(b.base_offset[q])} has epoch "
                             f"{int(b.leader_epoch[q])}", file=files[int(which[q])],
                             position=int(b.position[q]),
                             offset=int(b.base_offset[q]), expected=f"epoch {epoch}",
                             actual=int(b.leader_epoch[q]))

    # -- producer state, transactions, snapshots ---------------------------------------------------
    def _transactions(self, leo: int) -> None:
        r = self.r
        b, files, which = self._all_batches()
        markers = {(m.offset): (m, k) for k, (_, scan) in enumerate(self.scans) for m in scan.markers}
        log_start = r.log_start_offset
        snapshots: list[tuple[Any, Any]] = []
        for s in sorted(r.snapshots, key=lambda s: s.offset):
            try:
                snap = r.read_snapshot(s)
            except KafkaFormatError as err:
                self.add(ERROR, "snapshot-corrupt", err.reason, file=s.path, position=err.position,
                         expected=err.expected, actual=err.found)
                continue
            if s.offset > leo:
                self.add(WARNING, "snapshot-beyond-log-end", "snapshot above the log end offset (the broker "
                         "deletes it on load)", file=s.path, offset=s.offset, expected=f"<= {leo}",
                         actual=s.offset)
                continue
            snapshots.append((s, snap))
        state: dict[int, dict[str, int]] = {}
        ongoing: dict[int, int] = {}   # producer -> first offset of its open transaction (in order)
        expected_aborts: list[tuple[int, int, int, int, int]] = []  # pid, first, last, lso, scan index
        si = 0
        pid_col = b.producer_id
        producer_rows = np.flatnonzero((pid_col >= 0) & (b.magic == _V2))
        # the last offsets of the producers' batches (increasing, as the log) and whose they are
        ends = (b.last_offset[producer_rows], pid_col[producer_rows])
        # producer state changes only at batches with a producer id: visit those alone
        for j in producer_rows.tolist():
            pid = int(pid_col[j])
            base = int(b.base_offset[j])
            while si < len(snapshots) and snapshots[si][0].offset <= base:
                self._compare_snapshot(*snapshots[si], state, log_start, leo, ends)
                si += 1
            st = state.setdefault(pid, {"epoch": -1, "last_seq": -1, "last_offset": -1, "txn_first": -1,
                                        "coord": -1, "ts": -1, "marker": 0})
            epoch = int(b.producer_epoch[j])
            if bool(b.is_control[j]):
                m = markers.get(base)
                if m is None:  # empty control batch: the transaction was cleaned away
                    continue
                marker, k = m
                if st["txn_first"] >= 0:
                    if marker.abort:
                        others = [o for p, o in ongoing.items() if p != pid]
                        lso = min(others) if others else marker.offset + 1
                        expected_aborts.append((pid, st["txn_first"], marker.offset, lso, k))
                    ongoing.pop(pid, None)
                st.update(epoch=max(st["epoch"], epoch), coord=marker.coordinator_epoch, txn_first=-1,
                          ts=marker.timestamp, marker=1)
                continue
            transactional = bool(b.is_transactional[j])
            if st["txn_first"] >= 0 and (epoch > st["epoch"] or not transactional):
                self.add(ERROR, "hanging-transaction",
                         f"producer {pid} transaction from offset {st['txn_first']} "
                         f"has no marker before the producer's next {'epoch' if transactional else 'batch'}",
                         file=files[int(which[j])], position=int(b.position[j]), offset=st["txn_first"],
                         expected="a COMMIT/ABORT marker", actual=f"data at {base} (epoch {epoch})")
                ongoing.pop(pid, None)
                st["txn_first"] = -1
            if transactional and st["txn_first"] < 0:
                st["txn_first"] = base
                ongoing[pid] = base
            st.update(epoch=epoch, last_seq=int(b.last_sequence[j]), last_offset=int(b.last_offset[j]),
                      ts=int(b.max_timestamp[j]))
        for sfile, parsed in snapshots[si:]:
            self._compare_snapshot(sfile, parsed, state, log_start, leo, ends)
        self._open_transactions(state, leo)
        self._txn_indexes(expected_aborts, markers, log_start)

    def _compare_snapshot(self, sfile: Any, snap: Any, state: dict[int, dict[str, int]], log_start: int,
                          leo: int, ends: tuple[np.ndarray, np.ndarray]) -> None:
        """A snapshot's producers against the replay so far; ``ends``: the last offsets of the log's
        batches with a producer id (increasing) and their producer ids."""
        if sfile.offset <= log_start:
            return
        if self.compacted and sfile.offset < leo:
            return  # the cleaner drops batches that state at this offset was built from
        for e in snap.entries:
            st = state.get(e.producer_id)
            if st is None or st["last_offset"] < 0 or e.last_offset < log_start:
                continue  # producer history below the log start offset (or expired): not replayable
            if self.compacted and not _holds_batch_ending_at(ends, e.producer_id, e.last_offset):
                # the cleaner keeps the last batch of active producers only (lastRecordsOfActiveProducers:
                # an expired producer's goes like any other) and never rewrites snapshot files
                continue
            diffs = []
            if e.last_offset != st["last_offset"]:
                diffs.append(("lastOffset", st["last_offset"], e.last_offset))
            elif e.last_sequence != st["last_seq"]:
                diffs.append(("lastSequence", st["last_seq"], e.last_sequence))
            if e.epoch != st["epoch"]:
                diffs.append(("producerEpoch", st["epoch"], e.epoch))
            if (e.current_txn_first_offset >= log_start or st["txn_first"] >= 0) \
                    and e.current_txn_first_offset != st["txn_first"]:
                diffs.append(("currentTxnFirstOffset", st["txn_first"], e.current_txn_first_offset))
            if st["marker"] and e.coordinator_epoch != st["coord"]:
                diffs.append(("coordinatorEpoch", st["coord"], e.coordinator_epoch))
            for name, want, got in diffs:
                self.add(ERROR, "snapshot-producer-mismatch",
                         f"producer {e.producer_id}: {name} differs from a "
                         "replay of the log", file=sfile.path, offset=sfile.offset, expected=f"{name} {want}",
                         actual=f"{name} {got}")

    def _open_transactions(self, state: dict[int, dict[str, int]], leo: int) -> None:
        """kafka-transactions find-hanging's rule (``TransactionsCommand.FindHangingTransactionsCommand``):
        a transaction still open whose producer last wrote more than transaction.max.timeout.ms
        before --now is a candidate; it is hanging unless the coordinator (when its
        ``__transaction_state`` is known) still lists this partition in that producer's transaction."""
        tp = (self.r.topic, self.r.partition)
        for pid, st in sorted(state.items()):
            first = st["txn_first"]
            if first < 0:
                continue
            age = self.now_ms - st["ts"] if st["ts"] >= 0 else None
            expected = self.coordinator is not None and tp in self.coordinator.get(pid, frozenset())
            if age is not None and age > TRANSACTION_MAX_TIMEOUT_MS and not expected:
                self.add(WARNING, "hanging-transaction",
                         f"producer {pid} has a transaction open since offset {first} and last wrote "
                         f"{human_duration(age)} ({age} ms) before --now, more than "
                         f"transaction.max.timeout.ms ({human_duration(TRANSACTION_MAX_TIMEOUT_MS)}): "
                         f"it holds the last stable offset back",
                         offset=first, expected=f"a marker within {human_duration(TRANSACTION_MAX_TIMEOUT_MS)} "
                                                       f"({TRANSACTION_MAX_TIMEOUT_MS} ms)",
                         actual=f"open for {human_duration(age)} ({age} ms)")
            else:
                self.add(INFO, "open-transaction",
                         f"producer {pid} has a transaction open since offset {first}", offset=first)

    def _txn_indexes(self, expected: list[tuple[int, int, int, int, int]],
                     markers: dict[int, tuple[Marker, int]], log_start: int) -> None:
        indexes: list[tuple[Segment, Any]] = []
        for seg, _scan in self.scans:
            if seg.txnindex_path is None:
                indexes.append((seg, None))
                continue
            try:
                tx = self.r.txn_index(seg)
            except KafkaFormatError as err:
                self.add(ERROR, "txnindex-corrupt", err.reason, file=seg.txnindex_path, position=err.position,
                         expected=err.expected, actual=err.found)
                indexes.append((seg, None))
                continue
            indexes.append((seg, tx))
            if not tx.sanity_check().ok:
                self.add(ERROR, "txnindex-order", str(tx.sanity_check().message), file=seg.txnindex_path)
            for a in tx.anomalies:
                if a.what != "partial_entry":
                    self.add(ERROR, "txnindex-order", a.what.replace("_", " "), file=seg.txnindex_path,
                             position=a.position, expected=a.expected, actual=a.found)
        where: dict[tuple[int, int], tuple[int, Any]] = {}
        for k, (_seg, tx) in enumerate(indexes):
            for e in (tx.entries if tx is not None else ()):
                where[(e.producer_id, e.last_offset)] = (k, e)
        for pid, first, last, lso, k in expected:
            seg, scan = self.scans[k]
            marker, _ = markers[last]
            hit = where.get((pid, last))
            if hit is None:
                self.add(ERROR, "txnindex-missing-entry",
                         f"ABORT marker of producer {pid} at offset {last} has no "
                         ".txnindex entry", file=scan.path, position=marker.position, offset=last,
                         expected=f"AbortedTxn(producerId={pid}, firstOffset={first}, lastOffset={last})",
                         actual="no entry")
                continue
            hk, entry = hit
            if hk != k:
                self.add(ERROR, "txnindex-wrong-segment",
                         "aborted transaction indexed in another segment than "
                         "its ABORT marker", file=indexes[hk][0].txnindex_path, position=entry.position,
                         offset=last, expected=self.scans[k][0].name, actual=indexes[hk][0].name)
            if self.compacted:
                continue
            if entry.first_offset >= log_start and entry.first_offset != first:
                self.add(ERROR, "txnindex-entry-mismatch",
                         "firstOffset differs from the transaction's first batch",
                         file=indexes[hk][0].txnindex_path, position=entry.position, offset=last,
                         expected=f"firstOffset {first}", actual=f"firstOffset {entry.first_offset}")
            elif entry.first_offset >= log_start and entry.last_stable_offset != lso:
                self.add(ERROR, "txnindex-entry-mismatch",
                         "lastStableOffset differs from a replay of the log",
                         file=indexes[hk][0].txnindex_path, position=entry.position, offset=last,
                         expected=f"lastStableOffset {lso}",
                         actual=f"lastStableOffset {entry.last_stable_offset}")
        for (pid, last), (hk, entry) in sorted(where.items(), key=lambda kv: kv[0][1]):
            m = markers.get(last)
            if m is not None and m[0].abort and m[0].producer_id == pid:
                continue
            if last < log_start:
                continue
            self.add(ERROR, "txnindex-entry-without-marker", f"aborted transaction of producer {pid} ends at "
                     f"{last}, where the log has no ABORT marker of that producer",
                     file=indexes[hk][0].txnindex_path, position=entry.position, offset=last,
                     expected=f"ABORT marker of producer {pid} at {last}", actual="none")


def _holds_batch_ending_at(ends: tuple[np.ndarray, np.ndarray], producer_id: int, last_offset: int) -> bool:
    """Whether the log still holds ``producer_id``'s batch whose last offset is ``last_offset``
    (``ends``: see :meth:`StateChecks._compare_snapshot`)."""
    offsets, pids = ends
    k = int(np.searchsorted(offsets, last_offset))
    return k < offsets.size and int(offsets[k]) == last_offset and int(pids[k]) == producer_id
