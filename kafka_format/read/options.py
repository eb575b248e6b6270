"""Typed, case-insensitive parsing of the ``kafka-log`` data source options (docs/datasource.md).

Rules follow Spark's Kafka source (``KafkaSourceProvider`` / ``KafkaOffsetRangeLimit``)
wherever the idea exists there:

* ``startingOffsets`` defaults to ``earliest``; ``latest`` (or ``-1`` in JSON) is rejected
  for batch reads.  ``endingOffsets`` defaults to ``latest``; ``earliest`` (or ``-2``) is
  rejected.  JSON form: ``{"topic": {"0": 23, "1": -2}}``; such JSON must name every
  selected partition (checked at planning time, when the partitions are known).
* precedence: ``startingTimestamp`` > ``startingOffsetsByTimestamp`` > ``startingOffsets``
  (same for ending); a lower-precedence option given with a higher one is ignored, as in Spark.
* an ending timestamp with no answer means ``latest``; a starting timestamp with no answer
  follows ``startingOffsetsByTimestampStrategy`` (``error`` default, or ``latest``).
* ``topics`` / ``topicPattern`` / ``assign``: at most one (Spark requires exactly one of its
  ``subscribe``/``subscribePattern``/``assign``; here none means every topic).

Unknown options and contradictory values raise :class:`KafkaLogOptionError` naming the option.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from kafka_format.common.errors import KafkaLogOptionError
from kafka_format.read.planning import DEFAULT_MAX_BYTES_PER_PARTITION, Bounds, PlanOptions
from kafka_format.storage.tiered_history import LOCAL_TIER, REMOTE_TIER

__all__ = ["ALL_TIERS", "KNOWN_OPTIONS", "REMOTE_STORAGE_FORMATS", "TIERS", "KafkaLogOptionError", "ReadOptions",
           "parse_options"]

EARLIEST = -2
LATEST = -1
_BYTES = re.compile(r"^\s*(\d+)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}

ALL_TIERS = "all"
#: values of the ``tier`` option (kafka_format.read.tiers)
TIERS = (ALL_TIERS, LOCAL_TIER, REMOTE_TIER)
#: values of the ``remoteStorageFormat`` option
REMOTE_STORAGE_FORMATS = ("auto", "local-tiered", "aiven")

# canonical spelling -> lower-case key used for lookup
KNOWN_OPTIONS = {name.lower(): name for name in (
    "path", "paths",
    "topics", "topicPattern", "assign",
    "startingOffsets", "endingOffsets",
    "startingTimestamp", "endingTimestamp",
    "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy",
    "isolationLevel", "includeControlRecords", "includeHeaders", "granularity",
    "maxBytesPerPartition", "minPartitions", "replicas", "mode", "upTo", "verifyCrc",
    "maxOffsetsPerTrigger", "maxBytesPerTrigger",
    "remoteStorage", "remoteStorageFormat", "remoteStorageKey", "tier",
)}


@dataclass(frozen=True)
class ReadOptions:
    """All options of one read, parsed and validated."""

    paths: tuple[str, ...]
    plan: PlanOptions
    bounds: Bounds
    include_control_records: bool = False
    include_headers: bool = True
    granularity: str = "record"
    mode: str = "FAILFAST"
    verify_crc: bool = True
    start_latest: bool = False         # streaming only: startingOffsets=latest
    max_offsets_per_trigger: int | None = None   # streaming only (ignored by batch reads, as Spark)
    max_bytes_per_trigger: int | None = None     # streaming only: bytes of log per micro-batch
    tier: str = ALL_TIERS              # all | local | remote (kafka_format.read.tiers)
    remote_storage: str | None = None  # the remote tier's root (tiered partitions)
    remote_storage_format: str = "auto"
    #: ``[<key id>=]<PEM path>`` specs of the private keys of encrypted remote segments (Aiven's)
    remote_storage_keys: tuple[str, ...] = ()

    @property
    def read_committed(self) -> bool:
        """True for ``isolationLevel=read_committed``."""
        return self.plan.read_committed


def _bool(name: str, raw: str | None, default: bool) -> bool:
    if raw is None:
        return default
    v = str(raw).strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise KafkaLogOptionError(name, f"expected true or false, got {raw!r}")


def _choice(name: str, raw: str | None, choices: tuple[str, ...], default: str, *, upper: bool = False) -> str:
    if raw is None:
        return default
    for c in choices:
        if str(raw).strip().lower() == c.lower():
            return c.upper() if upper else c
    raise KafkaLogOptionError(name, f"expected one of {', '.join(choices)}, got {raw!r}")


def _positive_int(name: str, raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        v = int(str(raw).strip())
    except ValueError:
        raise KafkaLogOptionError(name, f"expected a positive integer, got {raw!r}") from None
    if v <= 0:
        raise KafkaLogOptionError(name, f"must be positive, got {v}")
    return v


def _bytes(name: str, raw: str | None, default: int) -> int:
    if raw is None:
        return default
    m = _BYTES.match(str(raw))
    if m is None:
        raise KafkaLogOptionError(name, f"expected a byte size such as 134217728 or 128m, got {raw!r}")
    unit = (m.group(2) or "").lower()[:1]
    v = int(m.group(1)) * _UNITS[unit]
    if v <= 0:
        raise KafkaLogOptionError(name, "must be positive")
    return v


def _timestamp(name: str, raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        v = int(str(raw).strip())
    except ValueError:
        raise KafkaLogOptionError(name, f"expected a timestamp in ms since the epoch, got {raw!r}") from None
    if v < 0:
        raise KafkaLogOptionError(name, f"timestamp must be >= 0, got {v}")
    return v


def _json_obj(name: str, raw: str) -> dict:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as e:
        raise KafkaLogOptionError(name, f"not valid JSON ({e.msg} at char {e.pos}): {raw!r}") from None
    if not isinstance(obj, dict):
        raise KafkaLogOptionError(name, f"expected a JSON object, got {raw!r}")
    return obj


def _per_partition(name: str, raw: str) -> dict[tuple[str, int], int]:
    """``{"topic": {"0": n, ...}, ...}`` -> {(topic, partition): n}."""
    out: dict[tuple[str, int], int] = {}
    for topic, parts in _json_obj(name, raw).items():
        if not isinstance(parts, dict):
            raise KafkaLogOptionError(name, f"expected {{partition: value}} for topic {topic!r}")
        for p, v in parts.items():
            try:
                part = int(p)
            except ValueError:
                raise KafkaLogOptionError(name, f"partition {p!r} of topic {topic!r} is not an integer") from None
            if isinstance(v, bool) or not isinstance(v, int):
                raise KafkaLogOptionError(name, f"value for {topic}-{p} must be an integer, got {v!r}")
            out[(topic, part)] = v
    return out


def _offsets(name: str, raw: str | None, *, starting: bool, streaming: bool = False) -> dict[tuple[str, int], int]:
    if raw is None:
        return {}
    keyword = str(raw).strip().lower()
    if streaming and keyword == "latest":
        return {}                       # parse_options sets ReadOptions.start_latest
    if keyword == "earliest":
        if not starting:
            raise KafkaLogOptionError(name, "ending offset can't be earliest for batch queries")
        return {}
    if keyword == "latest":
        if starting:
            raise KafkaLogOptionError(name, "starting offset can't be latest for batch queries")
        return {}
    out = _per_partition(name, raw)
    for (t, p), v in out.items():
        if starting and v == LATEST and not streaming:
            raise KafkaLogOptionError(name, f"starting offset for {t}-{p} can't be latest for batch queries")
        if not starting and v == EARLIEST:
            raise KafkaLogOptionError(name, f"ending offset for {t}-{p} can't be earliest for batch queries")
        if v < EARLIEST:
            raise KafkaLogOptionError(name, f"offset for {t}-{p} must be >= 0, -2 (earliest) or -1 (latest)")
    return out


def _paths(opts: Mapping[str, str]) -> tuple[str, ...]:
    paths: list[str] = []
    if opts.get("paths"):
        raw = opts["paths"]
        try:
            val = json.loads(raw)
        except json.JSONDecodeError:
            val = [p for p in raw.split(",") if p]
        if isinstance(val, str):
            val = [val]
        if not isinstance(val, list) or not all(isinstance(p, str) for p in val):
            raise KafkaLogOptionError("paths", f"expected a JSON list of paths, got {raw!r}")
        paths.extend(val)
    if opts.get("path"):
        paths.insert(0, opts["path"])
    if not paths:
        raise KafkaLogOptionError("path", "no log dir given: use .load(path) or .option('path', ...)")
    return tuple(dict.fromkeys(paths))


def parse_options(options: Mapping[str, str], *, streaming: bool = False) -> ReadOptions:
    """Validate every option (keys case-insensitive) and return the typed :class:`ReadOptions`.

    ``streaming=True`` (``readStream``): ``startingOffsets`` may be ``latest`` (then
    ``start_latest``) or hold ``-1``; ending options are rejected, as in Spark.
    """
    opts: dict[str, str] = {}
    for k, v in options.items():
        key = str(k).lower()
        if key not in KNOWN_OPTIONS:
            raise KafkaLogOptionError(str(k), "unknown option; known: " + ", ".join(sorted(KNOWN_OPTIONS.values())))
        opts[key] = v

    def get(name: str) -> str | None:
        v = opts.get(name.lower())
        return None if v is None else str(v)

    chosen = [n for n in ("topics", "topicPattern", "assign") if get(n) is not None]
    if len(chosen) > 1:
        raise KafkaLogOptionError(chosen[1], f"only one of topics, topicPattern, assign may be given (got {chosen})")
    topics = None
    if get("topics") is not None:
        topics = tuple(t.strip() for t in get("topics").split(",") if t.strip())  # type: ignore[union-attr]
        if not topics:
            raise KafkaLogOptionError("topics", "no topic given")
    pattern = get("topicPattern")
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as e:
            raise KafkaLogOptionError("topicPattern", f"invalid regex: {e}") from None
    assign = None
    if get("assign") is not None:
        obj = _json_obj("assign", get("assign"))  # type: ignore[arg-type]
        assign = {}
        for t, parts in obj.items():
            if not isinstance(parts, list) or not all(isinstance(p, int) and not isinstance(p, bool) for p in parts):
                raise KafkaLogOptionError("assign", f'expected {{"topic": [0, 1]}}, got {t!r}: {parts!r}')
            assign[t] = tuple(parts)

    strategy = _choice("startingOffsetsByTimestampStrategy", get("startingOffsetsByTimestampStrategy"),
                       ("error", "latest"), "error")
    start_ts_all = _timestamp("startingTimestamp", get("startingTimestamp"))
    end_ts_all = _timestamp("endingTimestamp", get("endingTimestamp"))
    start_by_ts: dict[tuple[str, int], int] = {}
    end_by_ts: dict[tuple[str, int], int] = {}
    start: dict[tuple[str, int], int] = {}
    end: dict[tuple[str, int], int] = {}
    # precedence as Spark: timestamp > offsetsByTimestamp > offsets (lower ones still validated)
    if get("startingOffsetsByTimestamp") is not None:
        start_by_ts = _per_partition("startingOffsetsByTimestamp", get("startingOffsetsByTimestamp"))  # type: ignore[arg-type]
    if get("endingOffsetsByTimestamp") is not None:
        end_by_ts = _per_partition("endingOffsetsByTimestamp", get("endingOffsetsByTimestamp"))  # type: ignore[arg-type]
    if streaming:
        for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
            if get(name) is not None:
                raise KafkaLogOptionError(name, "ending offsets are not valid for streaming queries")
    start = _offsets("startingOffsets", get("startingOffsets"), starting=True, streaming=streaming)
    end = _offsets("endingOffsets", get("endingOffsets"), starting=False)
    if start_ts_all is not None:
        start_by_ts, start = {}, {}
    elif start_by_ts:
        start = {}
    if end_ts_all is not None:
        end_by_ts, end = {}, {}
    elif end_by_ts:
        end = {}
    for label, by_ts in (("startingOffsetsByTimestamp", start_by_ts), ("endingOffsetsByTimestamp", end_by_ts)):
        for (topic, partition), ts in by_ts.items():
            if ts < 0:
                raise KafkaLogOptionError(label, f"timestamp for {topic}-{partition} must be >= 0, got {ts}")

    isolation = _choice("isolationLevel", get("isolationLevel"), ("read_uncommitted", "read_committed"),
                        "read_uncommitted")
    granularity = _choice("granularity", get("granularity"), ("record", "batch"), "record")
    mode = _choice("mode", get("mode"), ("FAILFAST", "PERMISSIVE", "DROPMALFORMED"), "FAILFAST", upper=True)
    if granularity == "batch" and isolation == "read_committed":
        raise KafkaLogOptionError("isolationLevel", "read_committed needs granularity=record (it filters records)")
    plan = PlanOptions(
        topics=topics, topic_pattern=pattern, assign=assign,
        max_bytes_per_partition=_bytes("maxBytesPerPartition", get("maxBytesPerPartition"),
                                       DEFAULT_MAX_BYTES_PER_PARTITION),
        min_partitions=_positive_int("minPartitions", get("minPartitions")),
        replicas=_choice("replicas", get("replicas"), ("longest", "all"), "longest"),
        up_to=_choice("upTo", get("upTo"), ("logEnd", "highWatermark"), "logEnd"),
        read_committed=isolation == "read_committed",
    )
    bounds = Bounds(start=start, end=end, start_timestamp=start_by_ts, end_timestamp=end_by_ts,
                    start_timestamp_all=start_ts_all, end_timestamp_all=end_ts_all,
                    starting_timestamp_strategy=strategy)
    return ReadOptions(
        paths=_paths(opts), plan=plan, bounds=bounds,
        include_control_records=_bool("includeControlRecords", get("includeControlRecords"), False),
        include_headers=_bool("includeHeaders", get("includeHeaders"), True),
        granularity=granularity, mode=mode,
        verify_crc=_bool("verifyCrc", get("verifyCrc"), True),
        start_latest=streaming and str(get("startingOffsets") or "").strip().lower() == "latest",
        max_offsets_per_trigger=_positive_int("maxOffsetsPerTrigger", get("maxOffsetsPerTrigger")),
        max_bytes_per_trigger=(None if get("maxBytesPerTrigger") is None
                               else _bytes("maxBytesPerTrigger", get("maxBytesPerTrigger"), 0)),
        tier=_choice("tier", get("tier"), TIERS, ALL_TIERS),
        remote_storage=_remote_storage(get("remoteStorage")),
        remote_storage_format=_choice("remoteStorageFormat", get("remoteStorageFormat"), REMOTE_STORAGE_FORMATS,
                                      "auto"),
        remote_storage_keys=_remote_storage_keys(get("remoteStorageKey")),
    )


def _remote_storage_keys(raw: str | None) -> tuple[str, ...]:
    """``remoteStorageKey``: comma-separated ``[<key id>=]<PEM path>`` (the private keys of Aiven's
    ``encryption.key.pairs``; a key without an id is tried for every id)."""
    from kafka_format.storage.aiven_rsm import parse_key_specs

    if raw is None:
        return ()
    specs = parse_key_specs(str(raw))
    if not specs:
        raise KafkaLogOptionError("remoteStorageKey", "empty: give [<key id>=]<PEM path>, comma-separated")
    for spec in specs:
        key_id, sep, path = spec.partition("=")
        if (sep and not key_id.strip()) or not (path if sep else spec).strip():
            raise KafkaLogOptionError("remoteStorageKey", f"{spec!r}: expected [<key id>=]<PEM path>")
    return specs


def _remote_storage(raw: str | None) -> str | None:
    if raw is None:
        return None
    if not str(raw).strip():
        raise KafkaLogOptionError("remoteStorage", "empty: give the remote storage's root (a path or URI)")
    return str(raw).strip()
