"""Topic configs for offline jobs: Kafka's defaults, broker synonyms, KRaft metadata, flags.

The jobs of docs/jobs/ need each topic's effective log config (``retention.ms``,
``cleanup.policy``, ``segment.bytes``, ...).  A broker resolves it as: the topic's own override
(``ConfigRecord`` of resource type TOPIC), else the broker's setting under its *synonym*
(``log.retention.hours`` for ``retention.ms``, ...; ``ServerTopicConfigSynonyms``, first synonym
set wins, hours/minutes converted), else Kafka's default (``LogConfig``).  Offline we add two
higher layers given by the user (highest first)::

    --config TOPIC:KEY=VALUE   (TOPIC "*" = every topic; KEY may also be a broker synonym)
    --config-file F            (JSON {"topic": {"key": "value"}} or properties "topic.key=value")
    topic configs from a KRaft __cluster_metadata log found in the log dirs
    cluster-wide broker configs from that log (resource BROKER, name "")
    Kafka's defaults

Sources: clients/.../config/TopicConfig.java, storage/.../log/LogConfig.java,
server-common/.../config/ServerTopicConfigSynonyms.java, ServerLogConfigs.java,
KafkaConfig.logRetentionTimeMillis (negative retention => -1, unlimited).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from kafka_format.common.limits import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from kafka_format.common.topics import METADATA_TOPIC

__all__ = [
    "BROKER_DEFAULTS",
    "BROKER_SYNONYMS",
    "KAFKA_DEFAULTS",
    "ConfigError",
    "TopicConfig",
    "TopicConfigs",
    "load_topic_configs",
    "metadata_configs",
    "parse_config_flag",
    "parse_time",
    "read_config_file",
]

# Kafka's topic-level defaults (LogConfig / ServerLogConfigs), as the strings a user would write.
KAFKA_DEFAULTS: Mapping[str, str] = MappingProxyType({
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "compression.gzip.level": "-1",
    "compression.lz4.level": "9",
    "compression.zstd.level": "3",
    "delete.retention.ms": "86400000",
    "file.delete.delay.ms": "60000",
    "flush.messages": str(INT64_MAX),
    "flush.ms": str(INT64_MAX),
    "index.interval.bytes": "4096",
    "local.retention.bytes": "-2",
    "local.retention.ms": "-2",
    "max.compaction.lag.ms": str(INT64_MAX),
    "max.message.bytes": "1048588",
    "message.downconversion.enable": "true",
    "message.format.version": "3.0-IV1",
    "message.timestamp.after.max.ms": "3600000",
    "message.timestamp.before.max.ms": str(INT64_MAX),
    "message.timestamp.difference.max.ms": str(INT64_MAX),
    "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": "0.5",
    "min.compaction.lag.ms": "0",
    "min.insync.replicas": "1",
    "preallocate": "false",
    "remote.log.copy.disable": "false",
    "remote.log.delete.on.disable": "false",
    "remote.storage.enable": "false",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "segment.index.bytes": "10485760",
    "segment.jitter.ms": "0",
    "segment.ms": "604800000",
    "unclean.leader.election.enable": "false",
})

# Broker-only settings the offline jobs model (CleanerConfig, ProducerStateManagerConfig, ...).
BROKER_DEFAULTS: Mapping[str, str] = MappingProxyType({
    "log.cleaner.backoff.ms": "15000",
    "log.cleaner.dedupe.buffer.size": str(128 * 1024 * 1024),
    "log.cleaner.enable": "true",
    "log.cleaner.io.buffer.load.factor": "0.9",
    "log.cleaner.io.buffer.size": str(512 * 1024),
    "log.cleaner.threads": "1",
    "log.retention.check.interval.ms": "300000",
    "producer.id.expiration.ms": "86400000",
    "transactional.id.expiration.ms": "604800000",
})

_HOURS = 3_600_000
_MINUTES = 60_000
# topic config -> broker synonyms in priority order, with the factor to milliseconds
# (ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS).
BROKER_SYNONYMS: Mapping[str, tuple[tuple[str, int], ...]] = MappingProxyType({
    "segment.bytes": (("log.segment.bytes", 1),),
    "segment.ms": (("log.roll.ms", 1), ("log.roll.hours", _HOURS)),
    "segment.jitter.ms": (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", _HOURS)),
    "segment.index.bytes": (("log.index.size.max.bytes", 1),),
    "flush.messages": (("log.flush.interval.messages", 1),),
    "flush.ms": (("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1)),
    "retention.bytes": (("log.retention.bytes", 1),),
    "retention.ms": (("log.retention.ms", 1), ("log.retention.minutes", _MINUTES), ("log.retention.hours", _HOURS)),
    "max.message.bytes": (("message.max.bytes", 1),),
    "index.interval.bytes": (("log.index.interval.bytes", 1),),
    "delete.retention.ms": (("log.cleaner.delete.retention.ms", 1),),
    "min.compaction.lag.ms": (("log.cleaner.min.compaction.lag.ms", 1),),
    "max.compaction.lag.ms": (("log.cleaner.max.compaction.lag.ms", 1),),
    "file.delete.delay.ms": (("log.segment.delete.delay.ms", 1),),
    "min.cleanable.dirty.ratio": (("log.cleaner.min.cleanable.ratio", 1),),
    "cleanup.policy": (("log.cleanup.policy", 1),),
    "unclean.leader.election.enable": (("unclean.leader.election.enable", 1),),
    "min.insync.replicas": (("min.insync.replicas", 1),),
    "compression.type": (("compression.type", 1),),
    "compression.gzip.level": (("compression.gzip.level", 1),),
    "compression.lz4.level": (("compression.lz4.level", 1),),
    "compression.zstd.level": (("compression.zstd.level", 1),),
    "preallocate": (("log.preallocate", 1),),
    "message.format.version": (("log.message.format.version", 1),),
    "message.timestamp.type": (("log.message.timestamp.type", 1),),
    "message.timestamp.difference.max.ms": (("log.message.timestamp.difference.max.ms", 1),),
    "message.timestamp.before.max.ms": (("log.message.timestamp.before.max.ms", 1),),
    "message.timestamp.after.max.ms": (("log.message.timestamp.after.max.ms", 1),),
    "message.downconversion.enable": (("log.message.downconversion.enable", 1),),
    "local.retention.ms": (("log.local.retention.ms", 1),),
    "local.retention.bytes": (("log.local.retention.bytes", 1),),
})
_SYNONYM_OF: dict[str, tuple[str, int]] = {b: (t, f) for t, syns in BROKER_SYNONYMS.items() for b, f in syns}

_LONG_KEYS = frozenset({
    "retention.ms", "retention.bytes", "local.retention.ms", "local.retention.bytes", "segment.ms",
    "segment.jitter.ms", "delete.retention.ms", "min.compaction.lag.ms", "max.compaction.lag.ms",
    "file.delete.delay.ms", "flush.messages", "flush.ms", "message.timestamp.difference.max.ms",
    "message.timestamp.before.max.ms", "message.timestamp.after.max.ms",
})
_INT_KEYS = frozenset({
    "segment.bytes", "segment.index.bytes", "index.interval.bytes", "max.message.bytes", "min.insync.replicas",
    "compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
})
_BOOL_KEYS = frozenset({
    "preallocate", "remote.storage.enable", "remote.log.copy.disable", "remote.log.delete.on.disable",
    "unclean.leader.election.enable", "message.downconversion.enable", "log.cleaner.enable",
})
_BROKER_LONG_KEYS = frozenset(BROKER_DEFAULTS) - {"log.cleaner.io.buffer.load.factor", "log.cleaner.enable"}


class ConfigError(ValueError):
    """A config key or value that Kafka would reject, naming where it came from."""


def parse_time(text: str | int) -> int:
    """Milliseconds since the epoch from an integer (ms) or an ISO-8601 timestamp (naive = UTC):
    the one parser of every time flag (``--now``, ``--timestamp``).  ValueError for anything else,
    and for a time outside Java's long (Kafka's timestamps are longs: a broker could never hold it)."""
    if isinstance(text, int):
        ms = text
    else:
        s = str(text).strip()
        if re.fullmatch(r"[+-]?\d+", s):
            ms = int(s)
        else:
            ms = _iso_ms(text, s)
    if not INT64_MIN <= ms <= INT64_MAX:
        raise ValueError(f"not a time: {text!r} is outside Java's long range, as every Kafka timestamp "
                         f"is ({INT64_MIN}..{INT64_MAX} ms)")
    return ms


def _iso_ms(text: str | int, s: str) -> int:
    iso = s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s
    try:
        when = datetime.fromisoformat(iso)
    except ValueError:
        raise ValueError(f"not a time: {text!r} (expected milliseconds since the epoch or ISO-8601, "
                         "e.g. 2023-11-14T22:13:20Z)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    delta = when - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def _kind(key: str) -> str:
    """Value type of a topic config, broker synonym or broker-only setting."""
    if key in ("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio"):
        return "ratio"
    if key == "log.cleaner.io.buffer.load.factor":
        return "double"
    if key in ("cleanup.policy", "log.cleanup.policy"):
        return "policy"
    if key in ("message.timestamp.type", "log.message.timestamp.type"):
        return "timestamp-type"
    topic_key = _SYNONYM_OF.get(key, (key, 1))[0]
    if key in _BOOL_KEYS or topic_key in _BOOL_KEYS:
        return "bool"
    if key.endswith((".hours", ".minutes")) or key in _INT_KEYS or topic_key in _INT_KEYS:
        return "int"
    if key in _LONG_KEYS or topic_key in _LONG_KEYS or key in _BROKER_LONG_KEYS:
        return "long"
    return "string"


def _check_value(key: str, value: str, source: str) -> str:
    """Validate ``value`` for ``key`` as Kafka's ConfigDef types would; returns it normalised."""
    v = value.strip()
    kind = _kind(key)

    def bad(expected: str) -> ConfigError:
        return ConfigError(f"{source}: invalid value {value!r} for {key} (expected {expected})")

    if kind in ("int", "long"):
        try:
            n = int(v)
        except ValueError:
            raise bad("an integer") from None
        lo, hi = (INT32_MIN, INT32_MAX) if kind == "int" else (INT64_MIN, INT64_MAX)
        if not lo <= n <= hi:
            raise bad(f"a {'32' if kind == 'int' else '64'}-bit integer")
        return str(n)
    if kind in ("ratio", "double"):
        try:
            f = float(v)
        except ValueError:
            raise bad("a number") from None
        if kind == "ratio" and not 0.0 <= f <= 1.0:
            raise bad("a ratio between 0 and 1")
        return v
    if kind == "policy":
        parts = [p.strip() for p in v.split(",") if p.strip()]
        if any(p not in ("delete", "compact") for p in parts):
            raise bad("a list of 'delete' and 'compact'")
        return ",".join(parts)
    if kind == "timestamp-type":
        if v not in ("CreateTime", "LogAppendTime"):
            raise bad("CreateTime or LogAppendTime")
        return v
    if kind == "bool":
        if v.lower() not in ("true", "false"):
            raise bad("true or false")
        return v.lower()
    return v


def _normalise(key: str, value: str, source: str) -> tuple[str, str, str]:
    """``(layer, key, value)``: layer "topic" for topic-config names, "broker" for synonyms and
    broker-only settings.  Unknown keys raise :class:`ConfigError`."""
    key = key.strip()
    if key == INTERNAL_SEGMENT_BYTES:   # LogConfig.segmentSize(): the internal size wins
        key = "segment.bytes"
    if key in KAFKA_DEFAULTS:
        return "topic", key, _check_value(key, value, source)
    if key in _SYNONYM_OF or key in BROKER_DEFAULTS:
        return "broker", key, _check_value(key, value, source)
    raise ConfigError(f"{source}: unknown config {key!r} (expected a topic config such as retention.ms, "
                      "a broker synonym such as log.retention.hours, or a cleaner setting such as "
                      "log.cleaner.dedupe.buffer.size)")


def parse_config_flag(flag: str) -> tuple[str, str, str]:
    """``TOPIC:KEY=VALUE`` → ``(topic, key, value)``; TOPIC ``*`` means every topic."""
    topic, sep, rest = flag.partition(":")
    key, sep2, value = rest.partition("=")
    if not sep or not sep2 or not topic or not key.strip():
        raise ConfigError(f"--config {flag!r}: expected TOPIC:KEY=VALUE (TOPIC may be '*')")
    return topic, key.strip(), value


def read_config_file(path: str | os.PathLike[str]) -> dict[str, dict[str, str]]:
    """``--config-file``: JSON ``{"topic": {"key": "value"}}`` or properties ``topic.key=value``.

    In the properties form the key is the longest known config name the line's name ends with
    (topic names may contain dots).
    """
    text = open(path, encoding="utf-8").read()   # noqa: SIM115 - small file
    out: dict[str, dict[str, str]] = {}
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--config-file {path}: not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ConfigError(f"--config-file {path}: expected a JSON object of topics")
        for topic, cfg in data.items():
            if not isinstance(cfg, dict):
                raise ConfigError(f"--config-file {path}: topic {topic!r} must map to an object of configs")
            out[str(topic)] = {str(k): _as_text(v) for k, v in cfg.items()}
        return out
    known = sorted([*KAFKA_DEFAULTS, *_SYNONYM_OF, *BROKER_DEFAULTS], key=len, reverse=True)
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        name, sep, value = line.partition("=")
        if not sep:
            raise ConfigError(f"--config-file {path}:{lineno}: expected topic.key=value, found {raw!r}")
        name = name.strip()
        for key in known:
            if name.endswith("." + key) and len(name) > len(key) + 1:
                out.setdefault(name[: -len(key) - 1], {})[key] = value.strip()
                break
        else:
            raise ConfigError(f"--config-file {path}:{lineno}: {name!r} does not end with a known config name")
    return out


def _as_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ",".join(str(x) for x in v)
    return str(v)


@dataclass(frozen=True)
class TopicConfig:
    """One topic's effective config; ``sources`` says where each value came from."""

    topic: str
    values: Mapping[str, str]
    sources: Mapping[str, str]
    broker_values: Mapping[str, str] = field(default_factory=dict)

    def get(self, key: str) -> str:
        """The effective value of a topic config ``key``."""
        if key not in self.values:
            raise KeyError(f"unknown topic config {key!r}")
        return self.values[key]

    def broker(self, key: str) -> str:
        """A broker-only setting (``log.cleaner.dedupe.buffer.size``, ...)."""
        return self.broker_values.get(key, BROKER_DEFAULTS[key])

    def _long(self, key: str) -> int:
        return int(self.values[key])

    @property
    def cleanup_policy(self) -> frozenset[str]:
        return frozenset(p for p in self.values["cleanup.policy"].split(",") if p)

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def retention_ms(self) -> int:
        """``retention.ms``; any negative value means unlimited (-1)."""
        v = self._long("retention.ms")
        return -1 if v < 0 else v

    @property
    def retention_bytes(self) -> int:
        return self._long("retention.bytes")

    @property
    def remote_storage_enable(self) -> bool:
        return self.values["remote.storage.enable"] == "true"

    @property
    def local_retention_ms(self) -> int:
        """``local.retention.ms``; -2 means ``retention.ms`` (``LogConfig.localRetentionMs``)."""
        v = self._long("local.retention.ms")
        return self.retention_ms if v == -2 else v

    @property
    def local_retention_bytes(self) -> int:
        v = self._long("local.retention.bytes")
        return self.retention_bytes if v == -2 else v

    @property
    def segment_bytes(self) -> int:
        return self._long("segment.bytes")

    @property
    def segment_ms(self) -> int:
        return self._long("segment.ms")

    @property
    def segment_index_bytes(self) -> int:
        return self._long("segment.index.bytes")

    @property
    def index_interval_bytes(self) -> int:
        return self._long("index.interval.bytes")

    @property
    def delete_retention_ms(self) -> int:
        return self._long("delete.retention.ms")

    @property
    def min_compaction_lag_ms(self) -> int:
        return self._long("min.compaction.lag.ms")

    @property
    def max_compaction_lag_ms(self) -> int:
        return self._long("max.compaction.lag.ms")

    @property
    def min_cleanable_dirty_ratio(self) -> float:
        return float(self.values["min.cleanable.dirty.ratio"])

    @property
    def file_delete_delay_ms(self) -> int:
        return self._long("file.delete.delay.ms")

    @property
    def max_message_bytes(self) -> int:
        return self._long("max.message.bytes")

    @property
    def message_timestamp_type(self) -> str:
        return self.values["message.timestamp.type"]

    def to_json(self) -> dict[str, Any]:
        """``{"values": {...}, "sources": {...}}`` of the non-default settings and the defaults used."""
        return {"topic": self.topic, "values": dict(self.values), "sources": dict(self.sources)}


@dataclass(frozen=True)
class _Layer:
    name: str
    all_topics: Mapping[str, str]                 # topic-config key -> value for every topic
    per_topic: Mapping[str, Mapping[str, str]]   # topic -> key -> value
    broker: Mapping[str, str]                     # broker synonyms and broker-only settings


def _resolve_broker(broker_layers: Sequence[tuple[str, Mapping[str, str]]]) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Topic defaults derived from broker settings (first synonym that is set wins, within the
    highest layer that sets any synonym of the key) → (values, sources, broker-only settings)."""
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    for topic_key, synonyms in BROKER_SYNONYMS.items():
        for source, settings in broker_layers:       # highest layer first
            hit = next(((b, f) for b, f in synonyms if b in settings), None)
            if hit is None:
                continue
            broker_key, factor = hit
            raw = settings[broker_key]
            if factor != 1:
                raw = str(int(raw) * factor)
            if topic_key == "retention.ms" and int(raw) < 0:
                raw = "-1"                           # KafkaConfig.logRetentionTimeMillis
            values[topic_key], sources[topic_key] = raw, source
            break
    broker_only: dict[str, str] = {}
    for _source, settings in reversed(broker_layers):
        broker_only.update({k: v for k, v in settings.items() if k in BROKER_DEFAULTS})
    return values, sources, broker_only


class TopicConfigs:
    """Effective configs of every topic (picklable; any topic name resolves)."""

    def __init__(self, layers: Sequence[_Layer] = ()) -> None:
        self._layers = tuple(layers)      # highest precedence first
        broker_layers = [(layer.name, layer.broker) for layer in self._layers if layer.broker]
        self._broker_values, self._broker_sources, self._broker_only = _resolve_broker(broker_layers)
        self._cache: dict[str, TopicConfig] = {}

    def __getitem__(self, topic: str) -> TopicConfig:
        hit = self._cache.get(topic)
        if hit is not None:
            return hit
        values = dict(KAFKA_DEFAULTS)
        sources = dict.fromkeys(KAFKA_DEFAULTS, "default")
        values.update(self._broker_values)
        sources.update(self._broker_sources)
        for layer in reversed(self._layers):   # lowest first, so higher layers overwrite
            for key, value in layer.all_topics.items():
                values[key], sources[key] = value, layer.name
            for key, value in layer.per_topic.get(topic, {}).items():
                values[key], sources[key] = value, layer.name
        cfg = TopicConfig(topic, values, sources, dict(self._broker_only))   # plain dicts: picklable
        self._cache[topic] = cfg
        return cfg

    def __getstate__(self) -> dict[str, Any]:
        return {"layers": self._layers}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["layers"])  # type: ignore[misc]

    def topics_with_overrides(self) -> list[str]:
        """Topics named by some layer (flags, file, metadata)."""
        return sorted({t for layer in self._layers for t in layer.per_topic})

    def to_json(self, topics: Iterable[str] | None = None) -> dict[str, Any]:
        """Effective settings that differ from Kafka's defaults, per topic, with their sources."""
        out: dict[str, Any] = {}
        for topic in (self.topics_with_overrides() if topics is None else topics):
            cfg = self[topic]
            out[topic] = {k: {"value": v, "source": cfg.sources[k]}
                          for k, v in sorted(cfg.values.items()) if cfg.sources[k] != "default"}
        return out


def _layer_from(name: str, per_topic_raw: Mapping[str, Mapping[str, str]], source: str) -> _Layer:
    all_topics: dict[str, str] = {}
    per_topic: dict[str, dict[str, str]] = {}
    broker: dict[str, str] = {}
    for topic, cfg in per_topic_raw.items():
        for key, value in cfg.items():
            layer, k, v = _normalise(key, value, f"{source} (topic {topic!r})")
            if layer == "broker":
                if topic != "*":
                    raise ConfigError(f"{source}: {k} is a broker setting; give it for every topic as '*:{k}=...'")
                broker[k] = v
            elif topic == "*":
                all_topics[k] = v
            else:
                per_topic.setdefault(topic, {})[k] = v
    return _Layer(name, all_topics, per_topic, broker)


def metadata_configs(log_dirs: Any) -> tuple[dict[str, dict[str, str]], dict[str, str]] | None:
    """(topic configs, cluster-wide broker configs) replayed from the most advanced
    ``__cluster_metadata-0`` replica in ``log_dirs`` (a :class:`~kafka_format.storage.logdir.LogDirSet`);
    None when there is none.  Snapshot first, then the log records at or after its end offset."""
    from kafka_format.internal.cluster_metadata import (
        RESOURCE_TYPE_BROKER,
        RESOURCE_TYPE_TOPIC,
        ClusterMetadataView,
        replay_record_batches,
    )
    from kafka_format.records.file_records import decode_segment

    replicas = [p for p in log_dirs.all_partitions() if p.topic == METADATA_TOPIC and p.kind == "live"]
    best: ClusterMetadataView | None = None
    for part in replicas:
        view = ClusterMetadataView()
        h = part.filesystem
        start = 0
        if part.metadata_snapshots:
            snap = max(part.metadata_snapshots, key=lambda s: s.end_offset)
            start = snap.end_offset
            with h.opened(h.fs_path(snap.path)) as f:
                replay_record_batches(decode_segment(f), view)
            view.last_offset = start - 1
        for seg in part.segments:
            if seg.log_path is None:
                continue
            with h.opened(h.fs_path(seg.log_path)) as f:
                replay_record_batches(decode_segment(f), view, min_offset=start)
        if best is None or view.last_offset > best.last_offset:
            best = view
    if best is None:
        return None
    topics = {name: dict(cfg) for (rtype, name), cfg in best.configs.items() if rtype == RESOURCE_TYPE_TOPIC}
    broker = dict(best.configs.get((RESOURCE_TYPE_BROKER, ""), {}))
    return topics, broker


#: Kafka 4.x's internal topic config: when set, ``LogConfig.segmentSize()`` returns it instead of
#: ``segment.bytes`` (the way tests and tools get segments below segment.bytes' 1 MiB floor).
INTERNAL_SEGMENT_BYTES = "internal.segment.bytes"


def _effective_topic_config(cfg: Mapping[str, str]) -> dict[str, str]:
    """The known keys of a topic's stored config, ``internal.segment.bytes`` taking the place of
    ``segment.bytes`` as ``LogConfig.segmentSize()`` does."""
    out = {k: v for k, v in cfg.items() if k in KAFKA_DEFAULTS}
    if cfg.get(INTERNAL_SEGMENT_BYTES) is not None:
        out["segment.bytes"] = cfg[INTERNAL_SEGMENT_BYTES]
    return out


def load_topic_configs(log_dirs: Any = None, *, overrides: Sequence[str] = (), config_file: str | None = None,
                       use_metadata: bool = True) -> TopicConfigs:
    """Effective topic configs from flags, a config file, KRaft metadata in ``log_dirs`` and Kafka's
    defaults (precedence in that order).  ``log_dirs``: a LogDirSet, path(s), or None."""
    layers: list[_Layer] = []
    flags: dict[str, dict[str, str]] = {}
    for flag in overrides:
        topic, key, value = parse_config_flag(flag)
        flags.setdefault(topic, {})[key] = value
    if flags:
        layers.append(_layer_from("flag", flags, "--config"))
    if config_file is not None:
        layers.append(_layer_from("file", read_config_file(config_file), f"--config-file {config_file}"))
    if use_metadata and log_dirs is not None:
        from kafka_format.storage.logdir import LogDirSet, open_log_dirs

        dirs = log_dirs if isinstance(log_dirs, LogDirSet) else open_log_dirs(log_dirs)
        found = metadata_configs(dirs)
        if found is not None:
            topic_cfgs, broker_cfgs = found
            known = {t: _effective_topic_config(cfg) for t, cfg in topic_cfgs.items()}
            layers.append(_layer_from("metadata", known, "KRaft metadata"))
            broker = {k: v for k, v in broker_cfgs.items() if k in _SYNONYM_OF or k in BROKER_DEFAULTS}
            if broker:
                checked = _layer_from("broker-metadata", {"*": broker}, "KRaft metadata (cluster broker config)")
                layers.append(checked)
    return TopicConfigs(layers)
