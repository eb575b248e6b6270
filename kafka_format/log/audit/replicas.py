"""Audit checks across files of a broker and across brokers: a log dir's own files, and the
replicas of one partition found in several log dirs (divergence, lag, high watermarks)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kafka_format.storage import checkpoints as ckpt
from kafka_format.storage.logdir import LogDir, PartitionLog

if TYPE_CHECKING:
    from kafka_format.log.topicconfig import TopicConfig

from kafka_format.log.audit.model import (
    ERROR,
    INFO,
    MAX_DIVERGENCES,
    WARNING,
    BatchColumns,
    Finding,
    _is_compacted,
    _text,
)
from kafka_format.log.audit.scan import header_pass

# ---------------------------------------------------------------------------------------------
# log dir and replicas


def audit_log_dir(log_dir: LogDir) -> list[Finding]:
    """Checks of a broker log dir's own files (meta.properties, checkpoints, clean shutdown)."""
    out: list[Finding] = []
    h = log_dir.filesystem

    def add(severity: str, check: str, message: str, file: str | None, **kw: Any) -> None:
        out.append(Finding(severity, check, None, None, file, kw.get("position"), None,
                           _text(kw.get("expected")), _text(kw.get("actual")), message))

    for err in log_dir.problems:
        add(ERROR, "state-file-corrupt", err.reason, err.path, position=err.position, expected=err.expected,
            actual=err.found)
    unreadable_meta = any(e.path and e.path.endswith(ckpt.META_PROPERTIES) for e in log_dir.problems)
    if log_dir.meta is None and not unreadable_meta:
        add(WARNING, "meta-properties-missing", "log dir has no meta.properties (broker id unknown)",
            h.join(log_dir.path, ckpt.META_PROPERTIES))
    if log_dir.clean_shutdown is None:
        add(INFO, "unclean-shutdown", "no .kafka_cleanshutdown: taken as a running broker's log dir (or a copy "
            "of one) or one that did not shut down cleanly; the broker recovers every log from its recovery point "
            "on start, rebuilding the indexes of the segments it recovers (LogLoader.recoverLog)", log_dir.path)
    return out


@dataclass(frozen=True)
class _ReplicaBatches:
    replica: PartitionLog
    base: np.ndarray
    last: np.ndarray
    crc: np.ndarray
    position: np.ndarray
    file: np.ndarray            # index into files
    files: tuple[str, ...]
    leo: int


def _replica_batches(replica: PartitionLog) -> _ReplicaBatches:
    parts: list[BatchColumns] = []
    files: list[str] = []
    for seg in replica.segments:
        parts.append(header_pass(seg.log_path or "", replica.filesystem, mode="PERMISSIVE", intact_only=True))
        files.append(seg.log_path or "")
    b = BatchColumns.concat(parts)
    which = np.concatenate([np.full(len(p), k, np.int64) for k, p in enumerate(parts)]) if parts \
        else np.empty(0, np.int64)
    if len(b):
        leo = int(b.last_offset[-1]) + 1
    else:
        leo = replica.segments[-1].base_offset if replica.segments else 0
    base = np.where(b.base_offset < 0, b.last_offset, b.base_offset)  # legacy wrappers: null base
    return _ReplicaBatches(replica, base, b.last_offset, b.crc, b.position, which, tuple(files), leo)


SENTINEL_TOPIC_IDS = ("AAAAAAAAAAAAAAAAAAAAAQ",)  # Topic.METADATA_TOPIC_ID (__cluster_metadata)


def replica_groups(log_dirs: Iterable[LogDir]) -> list[list[PartitionLog]]:
    """Replicas of the same partition of the same cluster, groups of two or more.

    Replicas are the same partition only when their log dirs name the same ``cluster.id``, or,
    where a cluster id is unknown, when both carry the same (random, non-sentinel) topic id;
    copies from unrelated clusters that share a topic name are never compared.
    """
    groups: dict[tuple[Any, ...], list[PartitionLog]] = {}
    for d in log_dirs:
        for p in d.partitions:
            if p.kind != "live":
                continue
            if d.cluster_id is not None:
                key: tuple[Any, ...] = ("cluster", d.cluster_id, p.topic, p.partition)
            elif p.topic_id is not None and p.topic_id not in SENTINEL_TOPIC_IDS:
                key = ("topic-id", p.topic_id, p.topic, p.partition)
            else:
                continue
            groups.setdefault(key, []).append(p)
    out: list[list[PartitionLog]] = []
    for members in groups.values():
        by_id: dict[str | None, list[PartitionLog]] = {}
        for p in members:  # a different topic id is a different topic (deleted and re-created)
            by_id.setdefault(p.topic_id, []).append(p)
        out.extend(g for g in by_id.values() if len(g) > 1)
    return sorted(out, key=lambda g: (g[0].topic, g[0].partition, g[0].log_dir))


def audit_replicas(replicas: Sequence[PartitionLog], *, config: TopicConfig | None = None) -> list[Finding]:
    """Compare the replicas of one topic-partition (from several log dirs).

    The leader is taken to be the replica with the highest latest leader epoch, then the highest
    log end offset.  Every other replica must hold byte-identical batches (same base and last
    offset, same CRC) for the offsets both hold (compacted topics: above both first dirty offsets),
    must not end beyond the leader, and is reported as lagging when its LEO is below the leader's
    high watermark.
    """
    if len(replicas) < 2:
        return []
    data = [_replica_batches(r) for r in replicas]
    compacted = any(_is_compacted(r, config) for r in replicas)
    def rank(d: _ReplicaBatches) -> tuple[int, int]:
        epoch = d.replica.leader_epoch
        return (epoch if epoch is not None else -1, d.leo)

    leader = max(data, key=rank)
    out: list[Finding] = []
    lr = leader.replica

    def add(severity: str, check: str, message: str, d: _ReplicaBatches, **kw: Any) -> None:
        out.append(Finding(severity, check, d.replica.topic, d.replica.partition,
                           kw.get("file", d.replica.path), kw.get("position"), kw.get("offset"),
                           _text(kw.get("expected")), _text(kw.get("actual")), message))

    leader_hw = lr.high_watermark_checkpoint
    for d in data:
        if d is leader:
            continue
        fr = d.replica
        if d.leo > leader.leo:
            add(WARNING, "replica-ahead-of-leader", f"replica ends at {d.leo}, beyond the leader's log end "
                f"({lr.log_dir}): it will be truncated", d, offset=leader.leo, expected=f"<= {leader.leo}",
                actual=d.leo)
        elif leader_hw is not None and d.leo < min(leader_hw, leader.leo):
            add(WARNING, "replica-lagging", f"replica log end {d.leo} is below the leader's high watermark "
                f"{leader_hw} ({lr.log_dir}): it is out of sync", d, offset=d.leo,
                expected=f">= {leader_hw}", actual=d.leo)
        if fr.high_watermark_checkpoint is not None and leader_hw is not None \
                and fr.high_watermark_checkpoint > leader_hw:
            add(WARNING, "replica-hw-above-leader", "replica high watermark above the leader's", d,
                offset=fr.high_watermark_checkpoint, expected=f"<= {leader_hw}",
                actual=fr.high_watermark_checkpoint)
        lo = max(fr.log_start_offset, lr.log_start_offset)
        if compacted:
            lo = max(lo, fr.first_dirty_offset(d.leo), lr.first_dirty_offset(leader.leo))
        hi = min(d.leo, leader.leo)
        ours = np.flatnonzero((d.base >= lo) & (d.last < hi))
        theirs = np.flatnonzero((leader.base >= lo) & (leader.last < hi))
        # vectorised join on base offset (both logs are in offset order); loop over mismatches only
        lb, ll, lc = leader.base[theirs], leader.last[theirs], leader.crc[theirs]
        j = np.minimum(np.searchsorted(lb, d.base[ours]), max(lb.size - 1, 0))
        same = (lb.size > 0) & (lb[j] == d.base[ours]) & (ll[j] == d.last[ours]) & (lc[j] == d.crc[ours]) \
            if lb.size else np.zeros(ours.size, bool)
        for m in np.flatnonzero(~same)[:MAX_DIVERGENCES].tolist():
            i = int(ours[m])
            k = (int(d.base[i]), int(d.last[i]))
            bounds_match = bool(lb.size) and int(lb[j[m]]) == k[0] and int(ll[j[m]]) == k[1]
            if bounds_match:
                expected = f"crc {int(lc[j[m]])}"
            elif _covered(leader, k):
                expected = "a batch with other offset bounds"
            else:
                expected = "no batch with these offsets"
            add(ERROR, "replica-divergence",
                f"batch {k[0]}..{k[1]} differs from the leader's copy ({lr.log_dir})",
                d, file=d.files[int(d.file[i])], position=int(d.position[i]), offset=k[0],
                expected=expected, actual=f"crc {int(d.crc[i])}")
    return out


def _covered(d: _ReplicaBatches, key: tuple[int, int]) -> bool:
    return bool(((d.base <= key[1]) & (d.last >= key[0])).any())
