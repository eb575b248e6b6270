"""Workloads and file comparisons for the compaction (3) and retention (4) conformance comparisons.

Topics are filled by real clients (kafka-python: idempotent producers in every codec, a
transactional producer with committed and aborted transactions, explicit CreateTime timestamps).
Timestamps the rules compare are placed far (hours or days) from every horizon, so the outcome does
not depend on the few seconds between our prediction's ``--now`` and the broker's wall clock at
cleaning or retention time; the one rule tested at a known instant (``deletableAtMs``) gets its
own timestamps relative to a chosen time.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DAY_MS = 86_400_000
HOUR_MS = 3_600_000
TEN_YEARS_MS = 10 * 365 * DAY_MS

#: cleanup settings every compacted topic gets (segment.ms far away: old CreateTime timestamps
#: must not roll a segment per batch).
_COMPACT = {"cleanup.policy": "compact", "segment.ms": str(TEN_YEARS_MS)}

#: topic -> topic config (on top of the harness's small segments and dense indexes).
COMPACTED_TOPICS: dict[str, dict[str, str]] = {
    # updates, superseded and kept tombstones, every codec, idempotent producers
    "cc-basic": dict(_COMPACT),
    # committed and aborted transactions, tombstones inside transactions
    "cc-txn": dict(_COMPACT),
    # min.compaction.lag.ms: old segments cleanable, recent ones not
    "cc-lag": {**_COMPACT, "min.compaction.lag.ms": str(HOUR_MS)},
    # compact,delete (retention off, so the cleaner's deletion pass removes nothing)
    "cc-compact-delete": {**_COMPACT, "cleanup.policy": "compact,delete", "retention.ms": "-1"},
    # delete.retention.ms=0: tombstones and aborted-txn markers stamped by the first pass, removed
    # by the second
    "cc-expire": {**_COMPACT, "delete.retention.ms": "0"},
}

RETENTION_MS = 2 * DAY_MS
#: retention topics: time retention (deletableAtMs tested at a known instant) and size retention.
RETENTION_TOPICS: dict[str, dict[str, str]] = {
    "rt-time": {"cleanup.policy": "delete", "retention.ms": str(RETENTION_MS), "segment.ms": str(TEN_YEARS_MS)},
    "rt-size": {"cleanup.policy": "delete", "retention.bytes": "12000", "retention.ms": "-1",
                "segment.ms": str(TEN_YEARS_MS)},
}

CODECS = (None, "gzip", "snappy", "lz4", "zstd")


def _producer(bootstrap: str, **extra: Any) -> Any:
    from kafka import KafkaProducer

    conf: dict[str, Any] = {"bootstrap_servers": bootstrap, "acks": "all", "linger_ms": 5,
                            "enable_idempotence": True, "request_timeout_ms": 30000}
    conf.update(extra)
    return KafkaProducer(**conf)


def _send_all(producer: Any, topic: str, rows: Iterable[tuple[bytes, bytes | None, int | None]],
              flush_every: int = 7, headers: bool = False) -> None:
    """Send (key, value, timestamp_ms) rows, flushing every ``flush_every`` records (batches of a
    few records) and waiting for each acknowledgement."""
    futures = []
    for i, (key, value, ts) in enumerate(rows):
        hdrs = [("h", b"%d" % i)] if headers and i % 3 == 0 else None
        futures.append(producer.send(topic, key=key, value=value, timestamp_ms=ts, headers=hdrs))
        if (i + 1) % flush_every == 0:
            producer.flush()
    producer.flush()
    for f in futures:
        f.get(timeout=30)


def _value(i: int, width: int = 90) -> bytes:
    """A value that compresses little (so codecs still leave several segments per topic)."""
    import hashlib

    body = b"".join(hashlib.sha256(b"%d-%d" % (i, j)).digest() for j in range(width // 32 + 1))
    return (b"value-%06d-" % i + body)[:width]


def fill_compacted(bootstrap: str, now_ms: int) -> None:
    """Phase A: fill the compacted topics (the cleaner is held back)."""
    # cc-basic: 30 keys updated in rounds, each round by a producer with another codec;
    # tombstones for k00-k04 early (superseded later) and k25-k29 late (kept, horizon stamped)
    for round_no, codec in enumerate(CODECS):
        p = _producer(bootstrap, compression_type=codec)
        rows: list[tuple[bytes, bytes | None, int | None]] = []
        for k in range(30):
            key = b"k%02d" % k
            if round_no == 1 and k < 5:
                rows.append((key, None, None))
            elif round_no == len(CODECS) - 1 and k >= 25:
                rows.append((key, None, None))
            else:
                rows.append((key, _value(round_no * 100 + k), None))
        _send_all(p, "cc-basic", rows, flush_every=3 + round_no, headers=True)
        p.close()

    # cc-txn: committed, aborted, committed-with-tombstones, aborted; then plain updates to roll
    tp = _producer(bootstrap, transactional_id="cc-txn-producer", compression_type="lz4")
    tp.init_transactions()
    for t, commit in enumerate((True, False, True, False, True)):
        tp.begin_transaction()
        for k in range(12):
            key = b"t%02d" % k
            value = None if (t == 2 and k % 4 == 0) else _value(t * 100 + k)
            tp.send("cc-txn", key=key, value=value)
            if k % 5 == 4:
                tp.flush()
        tp.flush()
        if commit:
            tp.commit_transaction()
        else:
            tp.abort_transaction()
    tp.close()
    p = _producer(bootstrap)
    _send_all(p, "cc-txn", [(b"t%02d" % (k % 12), _value(900 + k), None) for k in range(80)], flush_every=5)
    p.close()

    # cc-lag: four days-old rounds of updates (cleanable), then recent ones (within the lag)
    old = now_ms - 10 * DAY_MS
    p = _producer(bootstrap, compression_type="gzip")
    _send_all(p, "cc-lag", [(b"c%02d" % (i % 10), _value(i), old + i) for i in range(150)], flush_every=6)
    _send_all(p, "cc-lag", [(b"c%02d" % (i % 10), _value(500 + i), now_ms - 60_000 + i) for i in range(120)],
              flush_every=6)
    p.close()

    # cc-compact-delete: 60 keys written once (what the cleaner keeps spans several segment.bytes,
    # so its groups are bounded by the segment size), then updates and tombstones, zstd
    p = _producer(bootstrap, compression_type="zstd")
    _send_all(p, "cc-compact-delete", [(b"u%03d" % i, _value(2000 + i), None) for i in range(60)], flush_every=4)
    rows = [(b"d%02d" % (i % 15), None if i % 17 == 0 else _value(i), None) for i in range(220)]
    _send_all(p, "cc-compact-delete", rows, flush_every=4)
    p.close()

    # cc-expire: updates; keys g0-g3 written once then tombstoned (each tombstone its own batch,
    # never superseded: the first pass stamps them, the second removes them); an aborted txn
    p = _producer(bootstrap)
    _send_all(p, "cc-expire", [(b"g%d" % k, _value(50 + k), None) for k in range(4)], flush_every=4)
    _send_all(p, "cc-expire", [(b"e%02d" % (i % 10), _value(i), None) for i in range(120)], flush_every=5)
    for k in range(4):
        _send_all(p, "cc-expire", [(b"g%d" % k, None, None)], flush_every=1)
    p.close()
    tp = _producer(bootstrap, transactional_id="cc-expire-txn")
    tp.init_transactions()
    tp.begin_transaction()
    for k in range(6):
        tp.send("cc-expire", key=b"x%02d" % k, value=_value(k))
    tp.flush()
    tp.abort_transaction()
    tp.close()
    p = _producer(bootstrap)
    _send_all(p, "cc-expire", [(b"e%02d" % (i % 10), _value(300 + i), None) for i in range(90)], flush_every=5)
    p.close()


def refill_expire(bootstrap: str) -> None:
    """Phase C: new updates to cc-expire (so the second pass has dirty segments to clean)."""
    p = _producer(bootstrap, compression_type="snappy")
    _send_all(p, "cc-expire", [(b"e%02d" % (i % 10), _value(700 + i), None) for i in range(150)], flush_every=5)
    p.close()


@dataclass(frozen=True)
class RetentionPlan:
    """Timestamps of the retention workload, relative to ``t0`` (when it was produced)."""

    t0: int
    boundary_delay_ms: int

    @property
    def old_ts(self) -> int:
        """Expired long ago: deletable at any ``now`` the test can take."""
        return self.t0 - 5 * DAY_MS

    @property
    def boundary_ts(self) -> int:
        """The boundary segment's timestamps: it expires ``boundary_delay_ms`` after ``t0``
        (``deletableAtMs`` = ``boundary_ts + retention.ms + 1``)."""
        return self.t0 - RETENTION_MS + self.boundary_delay_ms

    @property
    def recent_ts(self) -> int:
        return self.t0 - HOUR_MS


def fill_retention(bootstrap: str, plan: RetentionPlan) -> None:
    """Phase C: rt-time gets expired segments, one segment-sized run at the boundary, then recent
    ones; rt-size gets ~30 KB (retention.bytes 12000)."""
    p = _producer(bootstrap)
    _send_all(p, "rt-time", [(b"r%03d" % i, _value(i), plan.old_ts + i) for i in range(120)], flush_every=6)
    _send_all(p, "rt-time", [(b"b%03d" % i, _value(i), plan.boundary_ts - 60 + i) for i in range(45)],
              flush_every=6)
    _send_all(p, "rt-time", [(b"n%03d" % i, _value(i), plan.recent_ts + i) for i in range(90)], flush_every=6)
    _send_all(p, "rt-size", [(b"s%03d" % i, _value(i), None) for i in range(300)], flush_every=8)
    p.close()


# ---------------------------------------------------------------------------------------------
# files


def read_offset_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """A broker offset checkpoint file (version, count, ``topic partition offset`` lines)."""
    if not path.is_file():
        return {}
    lines = path.read_text().splitlines()
    out: dict[tuple[str, int], int] = {}
    if len(lines) < 2:   # the broker writes a temporary file and renames it; an empty file has no entries
        return out
    for line in lines[2:2 + int(lines[1])]:
        topic, partition, offset = line.rsplit(" ", 2)
        out[(topic, int(partition))] = int(offset)
    return out


def segment_bases(pdir: Path) -> list[int]:
    """Base offsets of the live ``.log`` files of a partition dir (``.deleted``/``.cleaned`` excluded)."""
    return sorted(int(p.name[:-4]) for p in pdir.glob("*.log") if p.name[:-4].isdigit())


def segment_records(log: Path) -> list[tuple[Any, ...]]:
    """(batch base offset, offset, timestamp, key, value, headers, control) of every record in a
    ``.log`` file, decoded by kafka_format."""
    from kafka_format.records.file_records import decode_segment

    out: list[tuple[Any, ...]] = []
    for rb in decode_segment(str(log)):
        d = rb.to_pydict()
        for i in range(rb.num_rows):
            hs = d["headers"][i]
            out.append((d["batchBaseOffset"][i], d["offset"][i], d["timestamp"][i], d["key"][i], d["value"][i],
                        None if hs is None else tuple((h["key"], h["value"]) for h in hs), d["isControl"][i]))
    return out


def compare_partition(broker_dir: Path, ours_dir: Path, *, compare_bytes: bool = True
                      ) -> list[tuple[str, bool, str]]:
    """Cases ``(name, equal, detail)`` comparing the broker's cleaned partition with ours: the
    segment list, the records of each segment, and (``compare_bytes``) the bytes of ``.log``,
    ``.index``, ``.timeindex`` and ``.txnindex`` of each segment."""
    cases: list[tuple[str, bool, str]] = []
    theirs, mine = segment_bases(broker_dir), segment_bases(ours_dir)
    cases.append((f"{broker_dir.name} segments", theirs == mine, f"broker {theirs} ours {mine}"))
    for base in sorted(set(theirs) & set(mine)):
        name = f"{base:020d}"
        a, b = segment_records(broker_dir / f"{name}.log"), segment_records(ours_dir / f"{name}.log")
        only_a = [r[1] for r in a if r not in b][:8]
        only_b = [r[1] for r in b if r not in a][:8]
        cases.append((f"{broker_dir.name}/{name} records", a == b,
                      f"{len(a)} broker, {len(b)} ours; offsets only broker {only_a}, only ours {only_b}"))
        if a != b or not compare_bytes:
            continue
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            fa, fb = broker_dir / f"{name}{suffix}", ours_dir / f"{name}{suffix}"
            da = fa.read_bytes() if fa.exists() else b""
            db = fb.read_bytes() if fb.exists() else b""
            first = next((i for i in range(min(len(da), len(db))) if da[i] != db[i]), min(len(da), len(db)))
            cases.append((f"{broker_dir.name}/{name}{suffix} bytes", da == db,
                          f"{len(da)} broker, {len(db)} ours, first difference at byte {first}"))
    return cases


def stamped_clean_time(pdir: Path, delete_retention_ms: int) -> int | None:
    """The broker's wall clock at its latest cleaning of ``pdir``, read back from the delete
    horizons it stamped (``horizon = currentTime + delete.retention.ms``, ``MemoryRecords.filterTo``);
    None when no batch carries one."""
    from kafka_format.records.file_records import iter_batches

    best: int | None = None
    for log in sorted(pdir.glob("*.log")):
        with open(log, "rb") as f:
            for h in iter_batches(f):
                if h.delete_horizon_ms is not None:
                    t = int(h.delete_horizon_ms) - delete_retention_ms
                    best = t if best is None else max(best, t)
    return best


def wait_for(check: Any, timeout_s: float, what: str, interval_s: float = 0.2) -> Any:
    """Poll ``check`` until truthy (returned) or ``timeout_s`` passes (TimeoutError naming ``what``)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(interval_s)


def topic_flags(configs: Mapping[str, Mapping[str, str]]) -> list[str]:
    """``--config TOPIC:KEY=VALUE`` flags for topic configs (the log dirs' KRaft metadata has them
    too; giving them keeps the prediction independent of that replay)."""
    return [f"{t}:{k}={v}" for t, cfg in configs.items() for k, v in cfg.items()]
