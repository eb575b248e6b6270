"""Workloads driven through real clients (kafka-python) against a :class:`broker.KafkaBroker`.

Each helper creates its topic(s) (small segments, see ``broker.DEFAULT_TOPIC_CONFIG``), produces
with real client batching and compression, waits for every send, and returns what it did so a
comparison knows what to look at.  :func:`standard` runs them all on one broker, restarting it
cleanly once and killing it (-9) once in between so partitions carry several leader epochs.

Record contents are deterministic (a seed per topic) except timestamps and producer ids, which
belong to the broker and the clients, as in production.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from broker import KafkaBroker, wait_until

__all__ = [
    "CODECS",
    "Workload",
    "codecs",
    "compacted",
    "confluent",
    "consumer_groups",
    "idempotent",
    "log_append_time",
    "open_transaction",
    "produce",
    "producer",
    "records",
    "retention",
    "stale_open_transaction",
    "standard",
    "transactions",
]

log = logging.getLogger("conformance")

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@dataclass
class Workload:
    """What a workload did on a broker: topics (name -> partitions), consumer groups and their
    committed offsets, transactional ids and the state each was driven to, and live objects
    (open transactional producers) kept until :meth:`close`."""

    topics: dict[str, int] = field(default_factory=dict)
    groups: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    transactions: dict[str, str] = field(default_factory=dict)  # transactional id -> state driven
    open_producers: list[Any] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)

    def merge(self, other: Workload) -> Workload:
        self.topics.update(other.topics)
        self.groups.update(other.groups)
        self.transactions.update(other.transactions)
        self.open_producers.extend(other.open_producers)
        self.notes.update(other.notes)
        return self

    def close(self) -> None:
        """Close the producers of open transactions (without committing or aborting)."""
        for p in self.open_producers:
            try:
                p.close(timeout=1)
            except Exception:  # noqa: BLE001 - closing an abandoned producer may fail; nothing to keep
                pass
        self.open_producers.clear()


def abandon_producer(p: Any) -> None:
    """Close a kafka-python producer whose broker is gone.  Its ``close`` raises while sends are
    pending (the flush times out before it marks itself closed), and ``__del__`` would raise the same
    later, from the garbage collector, into another test; so its sender is stopped by force and the
    producer marked closed."""
    try:
        p.close(timeout=1)
    except Exception:  # noqa: BLE001 - the broker is gone: the pending sends cannot complete
        sender = getattr(p, "_sender", None)
        if sender is not None:
            sender.force_close()
        p._closed = True


def producer(broker: KafkaBroker, **config: Any) -> Any:
    """A kafka-python ``KafkaProducer`` to ``broker`` (small batches so many batches per segment)."""
    from kafka import KafkaProducer

    base: dict[str, Any] = {"bootstrap_servers": broker.bootstrap, "linger_ms": 5, "batch_size": 2048,
                            "request_timeout_ms": 30000, "max_block_ms": 60000}
    base.update(config)
    return KafkaProducer(**base)


def records(seed: str, n: int) -> Iterator[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]]:
    """``n`` (key, value, headers): every 7th key null, every 11th value null, headers on every
    3rd record (an empty header value on each; kafka-python cannot send a null header value),
    values of varying length (hex filler: compresses about half)."""
    for i in range(n):
        key = None if i % 7 == 3 else f"{seed}-k{i % 13}".encode()
        filler = hashlib.sha256(f"{seed}/{i}".encode()).hexdigest()[: 8 + i % 56]
        value = None if i % 11 == 5 else f"{seed}-v{i}-{filler}".encode()
        headers: list[tuple[str, bytes]] = []
        if i % 3 == 0:
            headers = [("h1", f"{i}".encode()), ("empty", b"")]
        yield key, value, headers


def produce(prod: Any, topic: str, seed: str, n: int, partition: int | None = None,
            timestamp_ms: int | None = None, flush: bool = True) -> list[Any]:
    """Send ``records(seed, n)`` to ``topic`` and wait for every acknowledgement (metadata list)."""
    futures = []
    for key, value, headers in records(seed, n):
        if key is None and value is None:
            value = b""  # keep at least one of the two for readability of dumps
        futures.append(prod.send(topic, key=key, value=value, headers=headers, partition=partition,
                                 timestamp_ms=timestamp_ms))
    if flush:
        prod.flush(timeout=60)
    return [f.get(timeout=60) for f in futures]


def codecs(broker: KafkaBroker, topic: str = "w-codecs", partitions: int = 3, n: int = 150) -> Workload:
    """One topic, every codec (a producer per codec), keys/null keys/null values/headers."""
    broker.create_topic(topic, partitions)
    for codec in CODECS:
        p = producer(broker, compression_type=None if codec == "none" else codec)
        try:
            produce(p, topic, f"{codec}", n)
        finally:
            p.close(timeout=10)
    return Workload(topics={topic: partitions})


def confluent(broker: KafkaBroker, topic: str = "w-confluent", partitions: int = 2, n: int = 60
              ) -> Workload:
    """librdkafka (confluent-kafka) as the producer: idempotent, lz4 and zstd, null header values
    (which kafka-python cannot send), null keys and values.  Skipped (empty workload) when
    confluent-kafka is not installed."""
    try:
        from confluent_kafka import Producer
    except ImportError:
        return Workload()
    broker.create_topic(topic, partitions)
    for codec in ("lz4", "zstd"):
        errors: list[Any] = []
        p = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": codec,
                      "enable.idempotence": True, "linger.ms": 5, "batch.size": 4096})
        for i, (key, value, headers) in enumerate(records(f"rdk-{codec}", n)):
            hdrs: list[tuple[str, bytes | None]] = list(headers)
            if i % 4 == 1:
                hdrs.append(("nullh", None))
            p.produce(topic, key=key, value=value, headers=hdrs,
                      on_delivery=lambda err, msg: errors.append(err) if err is not None else None)  # noqa: B023
            p.poll(0)
        left = p.flush(60)
        assert left == 0 and not errors, (left, errors[:3])
    return Workload(topics={topic: partitions})


def log_append_time(broker: KafkaBroker, topic: str = "w-logappend", partitions: int = 2,
                    n: int = 40) -> Workload:
    """A LogAppendTime topic (the broker stamps the batches), gzip and uncompressed batches."""
    broker.create_topic(topic, partitions, {"message.timestamp.type": "LogAppendTime"})
    for codec in (None, "gzip"):
        p = producer(broker, compression_type=codec)
        try:
            produce(p, topic, f"lat-{codec}", n)
        finally:
            p.close(timeout=10)
    return Workload(topics={topic: partitions})


def create_time_explicit(broker: KafkaBroker, topic: str = "w-createtime", n: int = 50,
                         base_ms: int | None = None, step_ms: int = 1000) -> Workload:
    """One partition with explicit CreateTime timestamps ``base + i*step`` (out of order every 5th
    record, so max-timestamp is not the last record); gaps give 'between records' lookups."""
    broker.create_topic(topic, 1)
    base = base_ms if base_ms is not None else int(time.time() * 1000) - 3_600_000
    p = producer(broker, linger_ms=0)
    try:
        futures = []
        for i, (key, value, headers) in enumerate(records("ct", n)):
            ts = base + i * step_ms + (5 * step_ms if i % 5 == 4 else 0)
            futures.append(p.send(topic, key=key, value=value or b"", headers=headers, timestamp_ms=ts))
        p.flush(timeout=60)
        for f in futures:
            f.get(timeout=60)
    finally:
        p.close(timeout=10)
    return Workload(topics={topic: 1}, notes={"createtime_base_ms": base, "createtime_step_ms": step_ms})


def idempotent(broker: KafkaBroker, topic: str = "w-idempotent", partitions: int = 2,
               n: int = 60) -> Workload:
    """An idempotent producer (producer id and sequences in every batch), lz4."""
    broker.create_topic(topic, partitions)
    p = producer(broker, enable_idempotence=True, acks="all", compression_type="lz4")
    try:
        produce(p, topic, "idem", n)
    finally:
        p.close(timeout=10)
    return Workload(topics={topic: partitions})


def transactions(broker: KafkaBroker, topic: str = "w-txn", partitions: int = 2, n: int = 20,
                 prefix: str = "w-txn") -> Workload:
    """Transactions committed and aborted interleaved with non-transactional records on the same
    partitions, one committed transaction that also commits consumer offsets
    (``send_offsets_to_transaction``), zstd and uncompressed."""
    broker.create_topic(topic, partitions)
    wl = Workload(topics={topic: partitions})
    plain = producer(broker)
    try:
        for round_, (codec, outcome) in enumerate([(None, "commit"), ("zstd", "abort"),
                                                   ("zstd", "commit"), (None, "abort")]):
            tid = f"{prefix}-{round_}"
            p = producer(broker, transactional_id=tid, compression_type=codec,
                         transaction_timeout_ms=60000)
            try:
                p.init_transactions()
                p.begin_transaction()
                produce(p, topic, f"{tid}-{outcome}", n)
                if round_ == 2:
                    from kafka import TopicPartition
                    from kafka.consumer.fetcher import OffsetAndMetadata

                    p.send_offsets_to_transaction(
                        {TopicPartition(topic, 0): OffsetAndMetadata(3, "txn-meta", -1)}, f"{prefix}-group")
                    wl.groups[f"{prefix}-group"] = {(topic, 0): 3}
                if outcome == "commit":
                    p.commit_transaction()
                    wl.transactions[tid] = "CompleteCommit"
                else:
                    p.abort_transaction()
                    wl.transactions[tid] = "CompleteAbort"
            finally:
                p.close(timeout=10)
            produce(plain, topic, f"plain-{round_}", 5)
    finally:
        plain.close(timeout=10)
    return wl


def open_transaction(broker: KafkaBroker, topic: str = "w-txn", tid: str = "w-txn-open",
                     n: int = 10) -> Workload:
    """Leave a transaction open (records sent, no commit/abort; 15 min timeout) on ``topic``
    partition 0: read_committed stops at it (the last stable offset)."""
    p = producer(broker, transactional_id=tid, transaction_timeout_ms=900000)
    p.init_transactions()
    p.begin_transaction()
    produce(p, topic, f"{tid}", n, partition=0)
    return Workload(transactions={tid: "Ongoing"}, open_producers=[p])


def stale_open_transaction(broker: KafkaBroker, topic: str = "w-txn", partition: int = 1,
                           tid: str = "w-txn-stale", age_ms: int = 1_200_000, n: int = 5) -> Workload:
    """An open transaction (15 min timeout, never ended) whose records carry CreateTime
    timestamps ``age_ms`` in the past: older than transaction.max.timeout.ms by its producer's
    last timestamp, yet still Ongoing at the coordinator (kafka-transactions find-hanging: not
    hanging)."""
    p = producer(broker, transactional_id=tid, transaction_timeout_ms=900000)
    p.init_transactions()
    p.begin_transaction()
    produce(p, topic, tid, n, partition=partition, timestamp_ms=int(time.time() * 1000) - age_ms)
    return Workload(transactions={tid: "Ongoing"}, open_producers=[p])


def consumer_groups(broker: KafkaBroker, topic: str, partitions: int, group: str = "w-group",
                    rounds: int = 3) -> Workload:
    """A consumer group committing offsets (with metadata) several times per partition, and a
    second group that commits once then is deleted-offset for one partition."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.consumer.fetcher import OffsetAndMetadata

    wl = Workload()
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False,
                      request_timeout_ms=30000)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        last: dict[tuple[str, int], int] = {}
        for r in range(rounds):
            offsets = {tp: OffsetAndMetadata(r * 5 + tp.partition, f"round-{r}", -1) for tp in tps}
            c.commit(offsets)
            last = {(tp.topic, tp.partition): om.offset for tp, om in offsets.items()}
        wl.groups[group] = last
    finally:
        c.close()
    return wl


def compacted(broker: KafkaBroker, topic: str = "w-compact", partitions: int = 2, keys: int = 20,
              rounds: int = 5, config: dict[str, str] | None = None) -> Workload:
    """A compacted topic: ``rounds`` updates of ``keys`` keys, then tombstones for every 4th key."""
    broker.create_topic(topic, partitions, {"cleanup.policy": "compact", **(config or {})})
    p = producer(broker, compression_type="gzip")
    try:
        futures = []
        for r in range(rounds):
            for k in range(keys):
                futures.append(p.send(topic, key=f"key-{k}".encode(), value=f"r{r}-{k}".encode()))
        for k in range(0, keys, 4):
            futures.append(p.send(topic, key=f"key-{k}".encode(), value=None))
        p.flush(timeout=60)
        for f in futures:
            f.get(timeout=60)
    finally:
        p.close(timeout=10)
    return Workload(topics={topic: partitions})


def retention(broker: KafkaBroker, topic: str = "w-retention", n: int = 200,
              config: dict[str, str] | None = None) -> Workload:
    """A topic with time and size retention configured (the defaults here delete nothing by
    themselves: ``retention.ms`` one week, ``retention.bytes`` large) and many segments."""
    broker.create_topic(topic, 1, {"retention.ms": "604800000", "retention.bytes": "10000000",
                                   **(config or {})})
    p = producer(broker)
    try:
        produce(p, topic, "ret", n)
    finally:
        p.close(timeout=10)
    return Workload(topics={topic: 1})


def end_offsets(broker: KafkaBroker, topic: str, partitions: int) -> dict[int, int]:
    """The latest offsets of ``topic``'s partitions (read_uncommitted), from the broker."""
    from kafka import TopicPartition
    from kafka.admin import OffsetSpec

    res = broker.admin().list_partition_offsets(
        {TopicPartition(topic, p): OffsetSpec.LATEST for p in range(partitions)})
    return {tp.partition: info.offset for tp, info in res.items()}


def standard(broker: KafkaBroker) -> Workload:
    """Every workload on one broker: some before a clean restart, some after, then a kill -9 and
    more after recovery (several leader epochs, a recovered unclean shutdown), ending with an
    open transaction.  Metadata, __consumer_offsets and __transaction_state fill as a side effect."""
    wl = Workload()
    t0 = time.monotonic()

    def step(name: str) -> None:
        log.info("standard workload: %s done at %.1fs", name, time.monotonic() - t0)

    wl.merge(codecs(broker))
    step("codecs")
    wl.merge(create_time_explicit(broker))
    step("create time")
    wl.merge(transactions(broker))
    step("transactions")
    wl.merge(consumer_groups(broker, "w-codecs", 3))
    step("groups")
    broker.restart()
    step("restart")
    wl.merge(log_append_time(broker))
    wl.merge(idempotent(broker))
    wl.merge(confluent(broker))
    step("log append time, idempotent, confluent")
    p = producer(broker, compression_type="snappy")
    try:
        produce(p, "w-codecs", "after-restart", 30)
    finally:
        p.close(timeout=10)
    broker.kill()
    broker.start()
    step("kill -9 and start")
    wl.merge(compacted(broker))
    wl.merge(retention(broker))
    p = producer(broker, compression_type="zstd")
    try:
        produce(p, "w-codecs", "after-kill", 30)
        produce(p, "w-txn", "after-kill", 10)
    finally:
        p.close(timeout=10)
    wl.merge(consumer_groups(broker, "w-txn", 2, group="w-group-2", rounds=2))
    wl.merge(open_transaction(broker))
    wl.merge(stale_open_transaction(broker))
    step("the rest")
    wait_until(lambda: broker.pid is not None, 5, "broker alive after workloads")
    return wl
