"""A single-node Apache Kafka broker (KRaft, combined broker+controller) for the conformance tests.

The broker runs from the jars :mod:`kafka_dist` resolves, on 127.0.0.1 with ports picked free at
construction (kept across restarts so the bootstrap address stays valid), storage formatted by
Kafka's own storage tool, ``log.dirs`` under a directory the caller gives, and Kafka's log4j output
in ``<workdir>/broker.log`` (``<workdir>/format.log`` for the storage tool).

Life cycle::

    b = KafkaBroker("4.4.0", tmp_path, broker_config={"log.retention.check.interval.ms": "500"})
    b.start()                 # formats storage on first start, then waits until a client connects
    b.create_topic("t", partitions=3, config={"cleanup.policy": "compact"})
    ...
    b.restart()               # SIGTERM + start: a new leader epoch for every partition it leads
    b.kill()                  # SIGKILL (unclean shutdown); b.start() recovers
    b.stop()                  # SIGTERM, waits (bounded) for the pid to exit

Segment sizes: Kafka 4.x rejects ``segment.bytes`` below 1 MiB and takes small segments only from
the internal topic config ``internal.segment.bytes`` (``LogConfig`` in ``storage/``), so
:meth:`KafkaBroker.create_topic` turns a small ``segment.bytes`` into that key on 4.x.
``__consumer_offsets`` and ``__transaction_state`` take ``offsets.topic.segment.bytes`` and
``transaction.state.log.segment.bytes`` (8 KiB on 3.9; on 4.x they become the topics'
``segment.bytes`` and so take the 1 MiB floor).  The KRaft metadata log keeps Kafka's
default segment size (its floor is 8 MiB).

Tiered storage (KIP-405)::

    b = KafkaBroker.tiered("4.3.1", tmp_path)    # same as KafkaBroker(..., remote_storage=True)
    b.start()
    b.create_topic("t", 3, {"remote.storage.enable": "true", "local.retention.bytes": "16384"})
    b.remote_storage_dir      # <workdir>/rsm/kafka-tiered-storage: <topic>-<partition>-<topic id>/...

A ``remote_storage`` broker runs with the classpath ``kafka_dist.classpath(version, tiered=True)``
(Kafka's reference remote storage manager ``LocalTieredStorage``, from kafka-storage's test jar)
and :data:`TIERED_BROKER_CONFIG` over the defaults: the remote log manager's tasks every 500 ms,
``LocalTieredStorage`` writing under ``<workdir>/rsm`` (its ``rsm.config.dir``; it adds the
``kafka-tiered-storage`` directory itself), the topic-based remote log metadata manager on the
PLAINTEXT listener with a one-replica, two-partition ``__remote_log_metadata``.  Segments are
copied to remote storage once they are rolled and wholly below the last stable offset; the local
copies go once uploaded and past ``local.retention.bytes`` / ``local.retention.ms``.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import kafka_dist

__all__ = [
    "DEFAULT_BROKER_CONFIG",
    "DEFAULT_TOPIC_CONFIG",
    "TIERED_BROKER_CONFIG",
    "BrokerError",
    "KafkaBroker",
    "consume_from_start",
    "free_port",
    "wait_until",
]

T = TypeVar("T")

#: Topic config applied by :meth:`KafkaBroker.create_topic` unless the caller overrides a key:
#: small segments and dense indexes, so every topic has several segments and many index entries.
DEFAULT_TOPIC_CONFIG: dict[str, str] = {
    "segment.bytes": "4096",
    "segment.index.bytes": "4096",
    "index.interval.bytes": "256",
}

#: Broker settings beyond the listeners/roles/dirs the harness always sets; callers override any.
DEFAULT_BROKER_CONFIG: dict[str, str] = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "auto.create.topics.enable": "false",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "2",
    "offsets.topic.segment.bytes": "8192",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "2",
    "transaction.state.log.segment.bytes": "8192",
    "group.initial.rebalance.delay.ms": "0",
    "log.index.interval.bytes": "256",
    "log.index.size.max.bytes": "4096",
    "transaction.max.timeout.ms": "900000",
    "replica.high.watermark.checkpoint.interval.ms": "1000",
    "log.flush.offset.checkpoint.interval.ms": "1000",
    "log.flush.start.offset.checkpoint.interval.ms": "1000",
    "log.flush.recovery.point.checkpoint.interval.ms": "1000",
    "log.cleaner.threads": "1",
    "log.cleaner.dedupe.buffer.size": "4194304",
    "log.cleaner.io.buffer.size": "65536",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "background.threads": "2",
}

#: What a ``remote_storage`` broker adds to DEFAULT_BROKER_CONFIG (``rsm.config.dir`` is added
#: per broker).  ``rsm.config.`` / ``rlmm.config.`` are the default prefixes under which the remote
#: storage manager and the remote log metadata manager take their own keys
#: (``remote.log.storage.manager.impl.prefix`` / ``remote.log.metadata.manager.impl.prefix``).
TIERED_BROKER_CONFIG: dict[str, str] = {
    "remote.log.storage.system.enable": "true",
    "remote.log.storage.manager.class.name":
        "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
    "rsm.config.delete.on.close": "false",
    "remote.log.metadata.manager.listener.name": "PLAINTEXT",
    "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
    "rlmm.config.remote.log.metadata.topic.num.partitions": "2",
    # the RLMM creates __remote_log_metadata with min.insync.replicas 2 by default, whatever its
    # replication factor
    "rlmm.config.remote.log.metadata.topic.min.isr": "1",
    "remote.log.manager.task.interval.ms": "500",
    "remote.log.manager.thread.pool.size": "2",
    "remote.log.manager.copier.thread.pool.size": "2",
    "remote.log.manager.expiration.thread.pool.size": "2",
    "remote.log.reader.threads": "2",
    "log.retention.check.interval.ms": "500",
    # the log manager's retention (local deletion) runs first this long after start (default 30 s)
    "log.initial.task.delay.ms": "1000",
}

JVM_OPTS = ["-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true"]


class BrokerError(RuntimeError):
    """The broker could not be formatted, started or stopped; the message carries its log tail."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(check: Callable[[], T | None], timeout: float, what: str, interval: float = 0.2) -> T:
    """Poll ``check`` until it returns something truthy (returned) or ``timeout`` seconds pass
    (:class:`TimeoutError` naming ``what`` and the last exception ``check`` raised)."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = check()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - the last failure is reported on timeout
            last = exc
        if time.monotonic() >= deadline:
            detail = f" (last error: {last!r})" if last is not None else ""
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(interval)


def consume_from_start(broker: KafkaBroker, partitions: list[tuple[str, int]], isolation: str,
                       row: Callable[[Any], T], timeout: float = 120.0
                       ) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], list[T]]]:
    """A kafka-python consumer's read of each partition from its beginning to its end offset
    (``end_offsets``: the high watermark, the last stable offset for read_committed): the end
    offsets, and ``row(message)`` of every record below them, per partition in offset order."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, isolation_level=isolation,
                             enable_auto_commit=False, group_id=None, auto_offset_reset="earliest",
                             request_timeout_ms=30000, fetch_max_wait_ms=100)
    try:
        tps = [TopicPartition(t, p) for t, p in partitions]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = {(tp.topic, tp.partition): o for tp, o in consumer.end_offsets(tps).items()}
        rows: dict[tuple[str, int], list[T]] = {k: [] for k in ends}

        def done() -> bool:
            for batch in consumer.poll(timeout_ms=500, max_records=5000).values():
                for m in batch:
                    if m.offset < ends[(m.topic, m.partition)]:
                        rows[(m.topic, m.partition)].append(row(m))
            return all(consumer.position(tp) >= ends[(tp.topic, tp.partition)] for tp in tps)

        wait_until(done, timeout, f"the consumer to reach the end offsets ({isolation})", interval=0)
        return ends, rows
    finally:
        consumer.close()


def _tail(path: Path, lines: int = 30) -> str:
    if not path.exists():
        return f"<{path} missing>"
    text = path.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])


def _copy_live_tree(src: Path, dest: Path) -> Path:
    """Copy ``src`` to ``dest`` file by file, skipping files that vanish mid-copy (a broker deleting
    segments); returns ``dest``."""
    def copy(a: str, b: str) -> None:
        try:
            shutil.copy2(a, b)
        except FileNotFoundError:
            pass

    shutil.copytree(src, dest, copy_function=copy, ignore_dangling_symlinks=True, dirs_exist_ok=True)
    return dest


def _write_properties(path: Path, props: Mapping[str, str]) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


def major(version: str) -> int:
    """The major number of a Kafka release string ("4.4.0" -> 4)."""
    return int(version.split(".", 1)[0])


class KafkaBroker:
    """One Kafka broker process (node id 1, combined roles) in ``workdir``; see the module doc."""

    def __init__(self, version: str, workdir: Path, broker_config: Mapping[str, str] | None = None,
                 node_id: int = 1, remote_storage: bool = False) -> None:
        cp = kafka_dist.classpath(version, tiered=remote_storage)
        if cp is None:
            reason = kafka_dist.unavailable_reason(version, tiered=remote_storage)
            raise BrokerError(f"Kafka {version} unavailable: {reason}")
        java = kafka_dist.java()
        assert java is not None  # classpath() is None without java
        self.version = version
        self.java = java
        self.classpath = cp
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.node_id = node_id
        self.port = free_port()
        self.controller_port = free_port()
        self.log_dir = self.workdir / "kafka-logs"
        self.remote_storage = remote_storage
        self.cluster_id = ""
        self.overrides: dict[str, str] = dict(broker_config or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self._formatted = False
        self._admin: Any = None

    # ----------------------------------------------------------------------------- properties

    @classmethod
    def tiered(cls, version: str, workdir: Path, broker_config: Mapping[str, str] | None = None
               ) -> KafkaBroker:
        """A broker with tiered storage (``LocalTieredStorage``); see the module doc."""
        return cls(version, workdir, broker_config, remote_storage=True)

    @classmethod
    def on_log_dir(cls, version: str, workdir: Path, log_dir: Path,
                   broker_config: Mapping[str, str] | None = None) -> KafkaBroker:
        """A broker that starts on an existing log dir (say a copy of another harness broker's, whose
        ``meta.properties`` names node 1 and the metadata log) instead of formatting a new one."""
        b = cls(version, workdir, broker_config)
        b.log_dir = Path(log_dir)
        meta = dict(line.split("=", 1) for line in (b.log_dir / "meta.properties").read_text().splitlines()
                    if "=" in line and not line.startswith("#"))
        if int(meta.get("node.id", "-1")) != b.node_id:
            raise BrokerError(f"{log_dir} belongs to node {meta.get('node.id')}, not {b.node_id}")
        b.cluster_id = meta["cluster.id"]
        b._formatted = True
        return b

    @property
    def bootstrap(self) -> str:
        """``host:port`` of the PLAINTEXT listener."""
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        """The broker JVM's pid while it runs, else None."""
        if self.process is not None and self.process.poll() is None:
            return self.process.pid
        return None

    @property
    def log_dirs(self) -> list[Path]:
        """The broker's ``log.dirs`` (one directory; the metadata log lives there too)."""
        return [self.log_dir]

    @property
    def rsm_dir(self) -> Path:
        """``LocalTieredStorage``'s ``dir`` (``rsm.config.dir``) on a ``remote_storage`` broker."""
        return self.workdir / "rsm"

    @property
    def remote_storage_dir(self) -> Path:
        """The remote storage's root, ``<rsm_dir>/kafka-tiered-storage``: a directory per partition,
        ``<topic>-<partition>-<topic id>``, holding each uploaded segment's files
        ``<base offset, 20 digits>-<segment uuid>.{log,index,timeindex,snapshot,leader_epoch_checkpoint}``
        (and ``.txnindex`` when the segment has aborted transactions)."""
        if not self.remote_storage:
            raise BrokerError("not a remote_storage broker")
        return self.rsm_dir / "kafka-tiered-storage"

    @property
    def broker_log(self) -> Path:
        """Kafka's own log4j output for this broker."""
        return self.workdir / "broker.log"

    @property
    def server_properties(self) -> Path:
        return self.workdir / "server.properties"

    def config(self) -> dict[str, str]:
        """The full server.properties the broker runs with."""
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": f"{self.node_id}@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dir),
        }
        props.update(DEFAULT_BROKER_CONFIG)
        if major(self.version) >= 4:
            # 4.x creates the internal topics with these as segment.bytes, whose floor is 1 MiB.
            for key in ("offsets.topic.segment.bytes", "transaction.state.log.segment.bytes"):
                props[key] = str(max(int(props[key]), 1 << 20))
        if self.remote_storage:
            props.update(TIERED_BROKER_CONFIG)
            props["rsm.config.dir"] = str(self.rsm_dir)
        props.update(self.overrides)
        return props

    # ----------------------------------------------------------------------------- process control

    def _log4j_args(self) -> list[str]:
        """Kafka 3.x logs through log4j 1 (reload4j), 4.x through log4j 2: write both configs."""
        log = self.broker_log
        l1 = self.workdir / "log4j.properties"
        l1.write_text(
            "log4j.rootLogger=INFO, F\n"
            "log4j.appender.F=org.apache.log4j.FileAppender\n"
            f"log4j.appender.F.File={log}\n"
            "log4j.appender.F.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.F.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
            "log4j.logger.kafka.request.logger=WARN\n"
            "log4j.logger.org.apache.kafka.clients=WARN\n")
        l2 = self.workdir / "log4j2.properties"
        l2.write_text(
            "status = warn\n"
            "appender.f.type = File\n"
            "appender.f.name = F\n"
            f"appender.f.fileName = {log}\n"
            "appender.f.layout.type = PatternLayout\n"
            "appender.f.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\n"
            "rootLogger.appenderRef.f.ref = F\n"
            "logger.req.name = kafka.request.logger\n"
            "logger.req.level = WARN\n"
            "logger.clients.name = org.apache.kafka.clients\n"
            "logger.clients.level = WARN\n")
        return [f"-Dlog4j.configuration=file:{l1}", f"-Dlog4j2.configurationFile={l2}",
                f"-Dkafka.logs.dir={self.workdir}"]

    def _java(self, main: str, *args: str) -> list[str]:
        return [self.java, *JVM_OPTS, *self._log4j_args(), "-cp", self.classpath, main, *args]

    def format(self) -> None:
        """Format ``log.dirs`` with Kafka's storage tool (a new cluster id); done once, by start()."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        _write_properties(self.server_properties, self.config())
        self.cluster_id = self._random_cluster_id()
        out = self.workdir / "format.log"
        cmd = self._java("kafka.tools.StorageTool", "format", "-t", self.cluster_id,
                         "-c", str(self.server_properties))
        with out.open("wb") as fh:
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, timeout=180)
        if proc.returncode != 0:
            raise BrokerError(f"Kafka {self.version} storage format failed (exit {proc.returncode}):\n"
                              f"{_tail(out)}")
        self._formatted = True

    @staticmethod
    def _random_cluster_id() -> str:
        """A cluster id as Kafka's ``Uuid.randomUuid().toString()`` prints it (22 chars base64url)."""
        import base64

        while True:
            raw = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            if not raw.startswith("-"):
                return raw

    def start(self, timeout: float = 120.0) -> KafkaBroker:
        """Start the broker (formatting storage on first start) and wait until a client gets
        cluster metadata from it; BrokerError with the log tail if it exits or times out."""
        if self.pid is not None:
            raise BrokerError(f"broker already running (pid {self.pid})")
        if not self._formatted:
            self.format()
        _write_properties(self.server_properties, self.config())
        with self.broker_log.open("ab") as fh:
            fh.write(f"\n===== harness: start #{self.starts + 1} =====\n".encode())
        stdout = (self.workdir / "broker.stdout").open("ab")
        try:
            self.process = subprocess.Popen(
                self._java("kafka.Kafka", str(self.server_properties)),
                stdout=stdout, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        finally:
            stdout.close()
        self.starts += 1
        try:
            wait_until(self._ready, timeout, f"Kafka {self.version} broker on {self.bootstrap}",
                       interval=0.5)
        except TimeoutError as exc:
            self.kill()
            raise BrokerError(f"{exc}\n{_tail(self.broker_log)}") from None
        return self

    def _ready(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            code = None if self.process is None else self.process.returncode
            raise BrokerError(f"Kafka {self.version} broker exited (code {code}) while starting:\n"
                              f"{_tail(self.workdir / 'broker.stdout')}\n{_tail(self.broker_log)}")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(1.0)
            if s.connect_ex(("127.0.0.1", self.port)) != 0:
                return False
        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=5000,
                                 client_id="conformance-ready")
        try:
            cluster = admin.describe_cluster()
            return bool(cluster.get("brokers"))
        finally:
            admin.close()

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM the broker's pid and wait (bounded) for a clean exit; SIGKILL past the deadline
        (BrokerError then, since the shutdown was not clean)."""
        self._close_admin()
        proc = self.process
        if proc is None or proc.poll() is not None:
            self.process = None
            return
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            self.process = None
            raise BrokerError(f"broker pid {proc.pid} ignored SIGTERM for {timeout:.0f}s; killed\n"
                              f"{_tail(self.broker_log)}") from None
        self.process = None

    def kill(self) -> None:
        """SIGKILL the broker's pid (an unclean shutdown: no clean-shutdown marker, recovery on
        the next start)."""
        self._close_admin()
        proc = self.process
        if proc is None:
            return
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        self.process = None

    def restart(self, clean: bool = True, timeout: float = 120.0) -> KafkaBroker:
        """Stop (SIGTERM, or SIGKILL when ``clean`` is False) and start again."""
        if clean:
            self.stop()
        else:
            self.kill()
        return self.start(timeout=timeout)

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----------------------------------------------------------------------------- files

    def partition_dir(self, topic: str, partition: int) -> Path:
        """``<log.dir>/<topic>-<partition>``."""
        return self.log_dir / f"{topic}-{partition}"

    def copy_log_dirs(self, dest: Path) -> Path:
        """Copy the log dir to ``dest`` (created) as a user would with the broker running:
        file by file, skipping files that vanish mid-copy (deleted segments); returns ``dest``.
        Call :meth:`flush_checkpoints`-style waits or stop() first when the copy must be stable."""
        return _copy_live_tree(self.log_dir, Path(dest) / self.log_dir.name)

    def copy_remote_storage(self, dest: Path) -> Path:
        """Copy :attr:`remote_storage_dir` to ``dest/kafka-tiered-storage`` (created), as
        :meth:`copy_log_dirs` copies the log dir; returns the copy."""
        return _copy_live_tree(self.remote_storage_dir, Path(dest) / self.remote_storage_dir.name)

    def read_checkpoint(self, name: str) -> dict[tuple[str, int], int]:
        """An offset checkpoint file of the log dir (``replication-offset-checkpoint``,
        ``log-start-offset-checkpoint``, ``recovery-point-offset-checkpoint``,
        ``cleaner-offset-checkpoint``) as {(topic, partition): offset}; {} when absent."""
        path = self.log_dir / name
        try:
            lines = path.read_text().splitlines()
        except FileNotFoundError:
            return {}
        out: dict[tuple[str, int], int] = {}
        for line in lines[2:]:
            parts = line.split()
            if len(parts) == 3:
                out[(parts[0], int(parts[1]))] = int(parts[2])
        return out

    def wait_high_watermarks_checkpointed(self, partitions: list[tuple[str, int]],
                                          timeout: float = 30.0) -> dict[tuple[str, int], int]:
        """Poll until ``replication-offset-checkpoint`` holds, for every partition, the high
        watermark the broker answers now (ListOffsets LATEST, read_uncommitted); returns them.
        With no writes in flight, a copy taken afterwards has the broker's HW on disk."""
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec

        def settled() -> dict[tuple[str, int], int] | None:
            live = self.admin().list_partition_offsets(
                {TopicPartition(t, p): OffsetSpec.LATEST for t, p in partitions})
            hw = {(tp.topic, tp.partition): v.offset for tp, v in live.items()}
            disk = self.read_checkpoint("replication-offset-checkpoint")
            return hw if all(disk.get(k) == v for k, v in hw.items()) else None

        return wait_until(settled, timeout, "high watermarks in replication-offset-checkpoint")

    # ----------------------------------------------------------------------------- clients

    def admin(self) -> Any:
        """A kafka-python ``KafkaAdminClient`` to this broker (one, reused until stop/kill)."""
        if self._admin is None:
            from kafka import KafkaAdminClient

            self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=30000,
                                           client_id="conformance-admin")
        return self._admin

    def _close_admin(self) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            finally:
                self._admin = None

    def topic_config(self, config: Mapping[str, str] | None = None) -> dict[str, str]:
        """DEFAULT_TOPIC_CONFIG with ``config`` over it, with a small ``segment.bytes`` renamed to
        ``internal.segment.bytes`` on Kafka 4.x (see the module doc)."""
        merged = {**DEFAULT_TOPIC_CONFIG, **(config or {})}
        if major(self.version) >= 4 and "segment.bytes" in merged:
            size = int(merged["segment.bytes"])
            if size < 1024 * 1024:
                del merged["segment.bytes"]
                merged["internal.segment.bytes"] = str(size)
        return merged

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None,
                     timeout: float = 60.0) -> None:
        """Create ``name`` with ``partitions`` (replication 1) and the topic config (see
        :meth:`topic_config`), then wait until every partition has a leader."""
        spec = {name: {"num_partitions": partitions, "replication_factor": 1,
                       "configs": self.topic_config(config)}}
        self.admin().create_topics(spec, timeout_ms=int(timeout * 1000))
        self.admin().wait_for_topics([name], timeout_ms=int(timeout * 1000))

    def alter_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        """Set topic config entries incrementally (other entries are kept); a small
        ``segment.bytes`` is renamed as in :meth:`topic_config`."""
        from kafka.admin import ConfigResource, ConfigResourceType

        out = dict(config)
        if major(self.version) >= 4 and "segment.bytes" in out and int(out["segment.bytes"]) < 1 << 20:
            out["internal.segment.bytes"] = out.pop("segment.bytes")
        self.admin().alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=out)],
                                   incremental=True)

    def describe_topic_config(self, topic: str) -> dict[str, str]:
        """The topic's per-topic (dynamic) config entries, as the broker reports them."""
        from kafka.admin import ConfigResource, ConfigResourceType

        resp = self.admin().describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        entries = resp.get("topic", {}).get(topic, {})
        return {k: v["value"] for k, v in entries.items()
                if v.get("config_source") == "DYNAMIC_TOPIC_CONFIG" and v.get("value") is not None}
