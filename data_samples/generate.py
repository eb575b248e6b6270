"""Regenerate ``data_samples/logdirs/`` with the Kafka-exact writer (``make samples``).

Everything is deterministic: fixed seeds, fixed timestamps, fixed file mtimes.  Two log dirs:

* ``broker-1/``  KRaft node 1, clean shutdown: every codec in v2, v0 and v1 topics (plain and
  compressed wrappers, lz4 with magic 0's broken header checksum), headers, null keys/values,
  LogAppendTime, a compacted topic as the cleaner leaves it, transactions, ``__consumer_offsets``.
* ``broker-2/``  KRaft node 2, crashed: a shorter follower replica of ``v2-codecs-0`` (indexes
  per fetch append, active indexes preallocated, a partial batch at the end, no clean-shutdown file).

Usage: ``python data_samples/generate.py [OUT_DIR]`` (default: ``logdirs/`` beside this file).

``OUT_DIR`` follows klogs' output rule (:mod:`kafka_format.output.ownership`): it is written only when
it does not exist, is an empty directory or is this generator's previous output (its ``.klogs-output``
marker, committed in ``logdirs/`` too); anything else is refused with exit code 2 and left untouched.
The new samples are staged beside ``OUT_DIR`` and replace it with one rename.  The marker names a
fixed run and time, so a regeneration is byte-identical to the committed samples.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
from collections.abc import Sequence
from pathlib import Path

from kafka_format.common.errors import KafkaFormatError
from kafka_format.internal.consumer_offsets import (
    encode_offset_commit_key,
    encode_offset_commit_value,
    group_partition,
)
from kafka_format.output.ownership import MARKER, Owner, marker_bytes
from kafka_format.output.publish import atomic_write_bytes, claim_output, staging_dir
from kafka_format.writer.batches import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    LOG_APPEND_TIME,
    BuiltBatch,
    Record,
    build_control_batch,
    build_empty_batch,
    build_legacy_messages,
    build_legacy_wrapper,
    build_v2_batch,
)
from kafka_format.writer.logdir import LogDirWriter
from kafka_format.writer.segments import PartitionWriter

SEED = 20240601
T0 = 1_700_000_000_000            # 2023-11-14T22:13:20Z, first record time
CLEAN_TIME = T0 + 3_600_000       # when the cleaner ran over `compacted`
DELETE_RETENTION_MS = 86_400_000  # delete.retention.ms default
SHUTDOWN_TIME = T0 + 7_200_000    # when broker 1 wrote its checkpoints
CLUSTER_ID = "S2xhU2FtcGxlc0NsdXN0ZQ"  # Kafka Uuid form (22 chars base64url) of b"KlaSamplesCluste"
NUM_OFFSETS_PARTITIONS = 50
OWNER = Owner("samples", "logdirs")  # the marker of a generated OUT_DIR: only such a dir is replaced
MARKER_RUN = hashlib.md5(f"samples:{SEED}".encode()).hexdigest()  # fixed, so the marker's bytes are too
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
         "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango")
CODECS = (CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)

TOPIC_CONFIGS = {
    "v2-codecs": {"segment.bytes": "16384"},
    "legacy-v0": {"segment.bytes": "8192", "message.format.version": "0.9.0"},
    "legacy-v1": {"segment.bytes": "8192", "message.format.version": "0.10.2",
                  "message.timestamp.type": "CreateTime"},
    "compacted": {"segment.bytes": "8192", "cleanup.policy": "compact"},
    "transactions": {"segment.bytes": "8192"},
    "__consumer_offsets": {"segment.bytes": "104857600", "cleanup.policy": "compact",
                           "compression.type": "producer"},
}


def topic_id(topic: str) -> bytes:
    """Deterministic 16-byte topic id."""
    return hashlib.md5(f"topic-id:{topic}".encode()).digest()


def _value(rng: random.Random, n_words: int) -> bytes:
    return " ".join(rng.choice(WORDS) for _ in range(n_words)).encode()


class Appender:
    """Assigns offsets and feeds built batches to a partition writer."""

    def __init__(self, writer: PartitionWriter) -> None:
        self.writer = writer
        self.next_offset = writer.log_end_offset
        self.appended: list[BuiltBatch] = []

    def add(self, batch: BuiltBatch | Sequence[BuiltBatch]) -> None:
        group = [batch] if isinstance(batch, BuiltBatch) else list(batch)
        self.writer.append(group)
        self.appended += group
        self.next_offset = group[-1].last_offset + 1


def segment_mtimes(writer: PartitionWriter, fallback: int) -> dict[int, int]:
    """mtime of each segment = its max timestamp (the broker's last write), else ``fallback``."""
    out = {}
    for seg in writer.segments:
        ts = seg.max_timestamp_so_far
        out[seg.base_offset] = ts if ts >= 0 else fallback
    return out


# --- topics ----------------------------------------------------------------------------------
def write_v2_codecs(ld: LogDirWriter, partition: int, rng: random.Random) -> list[BuiltBatch]:
    codec = CODECS[partition]
    w = ld.partition("v2-codecs", partition, topic_id=topic_id("v2-codecs"), segment_bytes=16384)
    app = Appender(w)
    ts = T0 + partition * 1000
    producer_seq = 0
    for i in range(90):
        n = rng.randint(1, 8)
        records = []
        for j in range(n):
            ts += rng.randint(1, 400)
            key = None if (i + j) % 11 == 3 else f"user-{rng.randint(0, 40)}".encode()
            value = None if (i + j) % 17 == 5 else _value(rng, rng.randint(4, 30))
            headers: tuple[tuple[str, bytes | None], ...] = ()
            if i % 3 == 0:
                headers = (("trace-id", f"{i:04d}-{j}".encode()), ("source", b"generator"))
                if j % 2:
                    headers += (("empty", b""), ("null-value", None), ("source", b"repeated-key"))
            records.append(Record(key, value, ts, headers))
        epoch = 0 if i < 45 else 1
        options: dict[str, int | bool] = {}
        if i % 4 == 1:  # an idempotent producer
            options = {"producer_id": 100 + partition, "producer_epoch": 0, "base_sequence": producer_seq}
            producer_seq += n
        if i % 7 == 6:
            app.add(build_v2_batch(records, base_offset=app.next_offset, codec=codec,
                                   timestamp_type=LOG_APPEND_TIME, log_append_time=ts + 5,
                                   partition_leader_epoch=epoch, **options))  # type: ignore[arg-type]
        else:
            app.add(build_v2_batch(records, base_offset=app.next_offset, codec=codec,
                                   partition_leader_epoch=epoch, **options))  # type: ignore[arg-type]
    w.close(mtimes=segment_mtimes(w, T0))
    st = ld.state("v2-codecs", partition)
    if partition == 1:  # high watermark below the log end (followers behind)
        st.high_watermark = app.appended[-3].base_offset
    if partition == 2:  # DeleteRecords moved the log start offset into the second segment
        st.log_start_offset = w.segments[1].base_offset + 3
    return app.appended


def write_legacy(ld: LogDirWriter, magic: int, rng: random.Random) -> None:
    topic = f"legacy-v{magic}"
    w = ld.partition(topic, 0, topic_id=topic_id(topic), segment_bytes=8192)
    app = Appender(w)
    ts = T0 + 50_000
    codecs = (CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4)
    for i in range(48):
        n = rng.randint(1, 6)
        records = []
        for j in range(n):
            ts += rng.randint(1, 300)
            key = None if (i + j) % 9 == 4 else f"k{rng.randint(0, 20)}".encode()
            value = None if (i + j) % 13 == 7 else _value(rng, rng.randint(3, 25))
            records.append(Record(key, value, ts))
        codec = codecs[i % len(codecs)]
        log_append = magic == 1 and i % 5 == 4
        kwargs: dict[str, int] = {}
        if log_append:
            kwargs = {"timestamp_type": LOG_APPEND_TIME, "log_append_time": ts + 7}
        if codec == CODEC_NONE:
            app.add(build_legacy_messages(records, magic=magic, base_offset=app.next_offset, **kwargs))
        else:
            app.add(build_legacy_wrapper(records, magic=magic, base_offset=app.next_offset, codec=codec,
                                         **kwargs))
    w.close(mtimes=segment_mtimes(w, T0 + 100_000))


def _clean(batches: list[BuiltBatch], end: int, last_batch_of_producer: dict[int, int]) -> list[BuiltBatch]:
    """What one cleaning round over [0, end) keeps (no transactions here)."""
    latest: dict[bytes, int] = {}
    for b in batches:
        for k, r in enumerate(b.records):
            offset = b.base_offset + (r.offset_delta if r.offset_delta is not None else k)
            if r.key is not None and offset < end:
                latest[r.key] = offset
    out = []
    for b in batches:
        if b.base_offset >= end:
            break
        kept = []
        for k, r in enumerate(b.records):
            delta = r.offset_delta if r.offset_delta is not None else k
            if r.key is not None and latest.get(r.key) == b.base_offset + delta:
                kept.append(Record(r.key, r.value, r.timestamp, r.headers, delta))
        has_tombstone = any(r.value is None for r in kept)
        if kept and len(kept) == b.record_count and not has_tombstone:
            out.append(b)  # untouched batch: bytes copied as they were
        elif kept:
            out.append(build_v2_batch(
                kept, base_offset=b.base_offset, codec=b.codec, producer_id=b.producer_id,
                producer_epoch=b.producer_epoch, base_sequence=b.base_sequence,
                last_offset_delta=b.last_offset - b.base_offset,
                partition_leader_epoch=b.partition_leader_epoch,
                delete_horizon=CLEAN_TIME + DELETE_RETENTION_MS if has_tombstone else None))
        elif (b.producer_id >= 0 and last_batch_of_producer.get(b.producer_id) == b.last_offset) \
                or b.last_offset + 1 == end:
            out.append(build_empty_batch(
                base_offset=b.base_offset, last_offset_delta=b.last_offset - b.base_offset,
                max_timestamp=b.max_timestamp, producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                base_sequence=b.base_sequence, partition_leader_epoch=b.partition_leader_epoch))
    return out


def write_compacted(ld: LogDirWriter, rng: random.Random) -> None:
    """A compacted topic: a cleaned prefix (gaps, empty batches, a delete-horizon batch) then a
    dirty tail with repeated keys and tombstones."""
    keys = [f"account-{i:03d}".encode() for i in range(150)]
    history: list[BuiltBatch] = []
    offset, ts, seq = 0, T0 + 100_000, 0
    for i in range(110):
        n = rng.randint(2, 6)
        records = []
        for _ in range(n):
            ts += rng.randint(10, 900)
            key = rng.choice(keys[:3] if i in (20, 40) else keys)  # batch 20 is superseded by 40
            value = None if rng.random() < 0.15 else _value(rng, rng.randint(3, 12))
            records.append(Record(key, value, ts))
        if i == 20:  # a one-off idempotent producer whose only batch is superseded later
            b = build_v2_batch(records, base_offset=offset, codec=CODEC_NONE, producer_id=901,
                               producer_epoch=0, base_sequence=0, partition_leader_epoch=0)
        else:
            b = build_v2_batch(records, base_offset=offset, codec=(CODEC_NONE, CODEC_LZ4)[i % 2],
                               producer_id=900, producer_epoch=0, base_sequence=seq, partition_leader_epoch=0)
            seq += n
        history.append(b)
        offset = b.last_offset + 1
    cleaned_end = history[74].last_offset + 1  # first dirty offset after the cleaning round
    last_of_producer: dict[int, int] = {}
    for b in history:
        last_of_producer[b.producer_id] = b.last_offset
    cleaned = _clean(history, cleaned_end, last_of_producer)
    w = ld.partition("compacted", 0, topic_id=topic_id("compacted"), segment_bytes=8192)
    app = Appender(w)
    for b in cleaned:
        app.add(b)
    w.roll(cleaned_end)  # the cleaned section ends on a segment boundary
    for b in history:
        if b.base_offset >= cleaned_end:
            app.add(b)
    w.close(mtimes=segment_mtimes(w, T0))
    ld.state("compacted", 0).cleaner_offset = cleaned_end


def write_transactions(ld: LogDirWriter, rng: random.Random) -> None:
    """Committed and aborted transactions of several producers, an aborted transaction whose
    data and ABORT marker are in different segments, an empty transaction, an open one at the end."""
    w = ld.partition("transactions", 0, topic_id=topic_id("transactions"), segment_bytes=8192)
    app = Appender(w)
    ts = T0 + 200_000
    seqs: dict[int, int] = {}

    def data(pid: int, n: int, *, txn: bool = True, codec: int = CODEC_NONE) -> None:
        nonlocal ts
        records = []
        for _ in range(n):
            ts += rng.randint(5, 200)
            records.append(Record(f"order-{rng.randint(0, 99)}".encode(), _value(rng, rng.randint(5, 20)), ts,
                                  (("txn", str(pid).encode()),)))
        seq = seqs.get(pid, 0)
        app.add(build_v2_batch(records, base_offset=app.next_offset, codec=codec, producer_id=pid,
                               producer_epoch=1, base_sequence=seq, transactional=txn,
                               partition_leader_epoch=2))
        seqs[pid] = seq + n

    def marker(pid: int, kind: int) -> None:
        nonlocal ts
        ts += 3
        app.add(build_control_batch(kind, base_offset=app.next_offset, timestamp=ts, producer_id=pid,
                                    producer_epoch=1, coordinator_epoch=7, partition_leader_epoch=2))

    for round_ in range(6):
        data(3000, 4)
        data(3001, 3, codec=CODEC_ZSTD)
        data(3002, 2, txn=False)          # idempotent, not transactional
        data(3000, 2, codec=CODEC_GZIP)
        marker(3000, CONTROL_COMMIT)
        marker(3001, CONTROL_ABORT if round_ % 2 else CONTROL_COMMIT)
    marker(3004, CONTROL_COMMIT)          # empty transaction: no data, no .txnindex entry
    # aborted transaction spanning two segments
    data(3001, 5)
    segment_before = w.active.base_offset
    while w.active.base_offset == segment_before:
        data(3000, 6)
        marker(3000, CONTROL_COMMIT)
    marker(3001, CONTROL_ABORT)
    data(3000, 3)
    data(3003, 4)                         # open transaction: never decided
    marker(3000, CONTROL_ABORT)           # its lastStableOffset = first offset of 3003's open txn
    data(3002, 2, txn=False)
    data(3003, 2)
    w.close(mtimes=segment_mtimes(w, T0))


def write_consumer_offsets(ld: LogDirWriter) -> None:
    """OffsetCommit records (key v1 = record type 1; value v1 with expireTimestamp and v3 with
    leaderEpoch) and a tombstone, in each group's partition."""
    groups = {"analytics-app": 3, "billing-service": 1}
    by_partition: dict[int, list[str]] = {}
    for g in groups:
        by_partition.setdefault(group_partition(g, NUM_OFFSETS_PARTITIONS), []).append(g)
    for p, members in sorted(by_partition.items()):
        w = ld.partition("__consumer_offsets", p, topic_id=topic_id("__consumer_offsets"),
                         segment_bytes=104857600)
        app = Appender(w)
        ts = T0 + 300_000
        for commit in range(12):
            for g in members:
                records = []
                for tp in range(groups[g]):
                    ts += 250
                    key = encode_offset_commit_key(g, "v2-codecs", tp)
                    if commit < 4:
                        value = encode_offset_commit_value(commit * 10 + tp, "", ts, version=1,
                                                           expire_timestamp=ts + 604_800_000)
                    else:
                        value = encode_offset_commit_value(commit * 10 + tp, f"meta-{commit}", ts, version=3,
                                                           leader_epoch=commit // 6)
                    records.append(Record(key, value, ts))
                app.add(build_v2_batch(records, base_offset=app.next_offset, partition_leader_epoch=0))
        ts += 250
        app.add(build_v2_batch([Record(encode_offset_commit_key(members[0], "v2-codecs", 0), None, ts)],
                               base_offset=app.next_offset, partition_leader_epoch=0))
        w.close(mtimes=segment_mtimes(w, T0))


def write_replica(path: Path, leader_batches: list[BuiltBatch]) -> None:
    """Broker 2: a follower copy of v2-codecs-0 that fell behind and then crashed."""
    ld = LogDirWriter(path, node_id=2, cluster_id=CLUSTER_ID, kraft=True,
                      directory_id=hashlib.md5(b"dir:broker-2").digest())
    w = ld.partition("v2-codecs", 0, topic_id=topic_id("v2-codecs"), segment_bytes=16384,
                     index_rule="per-append", segment_index_bytes=1024)
    copied = leader_batches[: len(leader_batches) * 2 // 3]
    app = Appender(w)
    i = 0
    while i < len(copied):  # fetch responses carry a few batches each
        n = 1 + (i % 4)
        app.add(copied[i:i + n])
        i += n
    nxt = leader_batches[len(copied)].data
    w.close(clean_shutdown=False, preallocate_index_bytes=1024, partial_tail=nxt[: len(nxt) // 2],
            mtimes=segment_mtimes(w, T0))
    st = ld.state("v2-codecs", 0)
    st.high_watermark = copied[-4].last_offset + 1
    st.recovery_point = w.segments[-1].base_offset
    ld.close(written_at_ms=SHUTDOWN_TIME, clean_shutdown=False)


def generate(out: Path) -> None:
    """Write both log dirs under ``out``: only when it is absent, an empty directory or this
    generator's previous output (:class:`kafka_format.output.ownership.OutputRefused` otherwise,
    ``out`` untouched); staged beside it and published with one rename."""
    final = os.path.abspath(out)
    with claim_output(final, OWNER), staging_dir(final, OWNER) as staged:
        _write_samples(Path(staged))
        # the marker staging_dir wrote names this run; the samples' names a fixed one (byte-identical)
        atomic_write_bytes(os.path.join(staged, MARKER),
                           marker_bytes(OWNER, MARKER_RUN, created=SHUTDOWN_TIME / 1000))


def _write_samples(out: Path) -> None:
    """Write both log dirs and the topic configs into the (empty) directory ``out``."""
    rng = random.Random(SEED)
    ld = LogDirWriter(out / "broker-1", node_id=1, cluster_id=CLUSTER_ID, kraft=True,
                      directory_id=hashlib.md5(b"dir:broker-1").digest(), broker_epoch=42)
    leader_p0: list[BuiltBatch] = []
    for p in range(len(CODECS)):
        batches = write_v2_codecs(ld, p, rng)
        if p == 0:
            leader_p0 = batches
    write_legacy(ld, 0, rng)
    write_legacy(ld, 1, rng)
    write_compacted(ld, rng)
    write_transactions(ld, rng)
    write_consumer_offsets(ld)
    ld.close(written_at_ms=SHUTDOWN_TIME)
    write_replica(out / "broker-2", leader_p0)
    (out / "topic-configs.json").write_text(json.dumps(TOPIC_CONFIGS, indent=2, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``make samples``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0].startswith("-")):
        print("usage: python data_samples/generate.py [OUT_DIR]", file=sys.stderr)
        return 2
    out = Path(args[0]) if args else Path(__file__).resolve().parent / "logdirs"
    try:
        generate(out)
    except KafkaFormatError as exc:       # OUT_DIR refused (or another run holds it): untouched
        print(f"generate.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
