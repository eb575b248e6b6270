"""Topic config resolution: Kafka's defaults, broker synonyms, KRaft metadata, file and flags."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from kafka_format.internal.cluster_metadata import (
    RESOURCE_TYPE_BROKER,
    RESOURCE_TYPE_TOPIC,
    encode_config_record,
    encode_topic_record,
)
from kafka_format.log.topicconfig import ConfigError, load_topic_configs, parse_time, read_config_file
from kafka_format.writer.batches import Record, build_v2_batch

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples" / "logdirs"

#: The value of the RegisterBrokerRecord (apiKey 0, version 4) a Kafka 4.4.0 broker wrote to its
#: __cluster_metadata log (conformance run, tests/conformance/test_cleaning.py).
REGISTER_BROKER_V4_FROM_KAFKA_4_4 = bytes.fromhex(
    "010004000000010073b41ddef4ab4f8387c0861dbedb95eb0000000000000010020a504c41494e544558540a3132372e"
    "302e302e31d4af000000080e6b726166742e76657273696f6e00000001000e67726f75702e76657273696f6e00000001"
    "001073747265616d732e76657273696f6e0000000100147472616e73616374696f6e2e76657273696f6e000000020021"
    "656c696769626c652e6c65616465722e7265706c696361732e76657273696f6e0000000100116d657461646174612e76"
    "657273696f6e00070021000e73686172652e76657273696f6e0000000200000100010011023cce3382aeeede99fc8829"
    "532642d032")


def _metadata_log_dir(tmp_path: Path, records: list[bytes]) -> Path:
    """A log dir holding a ``__cluster_metadata-0`` with ``records`` as one batch."""
    part = tmp_path / "logdir" / "__cluster_metadata-0"
    part.mkdir(parents=True)
    batch = build_v2_batch([Record(key=None, value=v, timestamp=1) for v in records], base_offset=0)
    (part / "00000000000000000000.log").write_bytes(batch.data)
    return part.parent


class TestDefaults:
    def test_kafka_defaults_for_an_unknown_topic(self) -> None:
        cfg = load_topic_configs()["anything"]
        # LogConfig defaults: 7 days, unlimited size, delete policy, 1 GiB segments, 1 day tombstones.
        assert cfg.retention_ms == 7 * 24 * 3_600_000
        assert cfg.retention_bytes == -1
        assert cfg.cleanup_policy == frozenset({"delete"}) and cfg.delete and not cfg.compact
        assert cfg.segment_bytes == 1 << 30
        assert cfg.delete_retention_ms == 86_400_000
        assert cfg.min_cleanable_dirty_ratio == 0.5
        assert cfg.max_compaction_lag_ms == 2 ** 63 - 1
        assert cfg.local_retention_ms == cfg.retention_ms     # -2 means retention.ms
        assert cfg.broker("log.cleaner.dedupe.buffer.size") == str(128 * 1024 * 1024)
        assert set(cfg.sources.values()) == {"default"}


class TestLayers:
    def test_config_file_json_and_flags(self) -> None:
        cfgs = load_topic_configs(overrides=["compacted:delete.retention.ms=5", "*:retention.bytes=100"],
                                  config_file=str(SAMPLES / "topic-configs.json"))
        c = cfgs["compacted"]
        assert c.compact and c.segment_bytes == 8192 and c.sources["segment.bytes"] == "file"
        assert c.delete_retention_ms == 5 and c.sources["delete.retention.ms"] == "flag"
        assert cfgs["v2-codecs"].retention_bytes == 100 and cfgs["nope"].retention_bytes == 100

    def test_properties_file_with_dotted_topic_names(self, tmp_path: Path) -> None:
        f = tmp_path / "t.properties"
        f.write_text("# comment\nmy.topic.retention.ms=42\nother.cleanup.policy=compact, delete\n")
        assert read_config_file(f) == {"my.topic": {"retention.ms": "42"},
                                       "other": {"cleanup.policy": "compact, delete"}}
        cfgs = load_topic_configs(config_file=str(f))
        assert cfgs["my.topic"].retention_ms == 42
        assert cfgs["other"].cleanup_policy == frozenset({"compact", "delete"})

    def test_broker_synonyms_first_set_wins(self) -> None:
        # ServerTopicConfigSynonyms: log.retention.ms before .minutes before .hours.
        cfgs = load_topic_configs(overrides=["*:log.retention.hours=2", "*:log.retention.minutes=3"])
        assert cfgs["t"].retention_ms == 3 * 60_000
        assert load_topic_configs(overrides=["*:log.retention.hours=-5"])["t"].retention_ms == -1
        assert load_topic_configs(overrides=["*:log.roll.hours=1"])["t"].segment_ms == 3_600_000

    def test_topic_override_beats_broker_flag(self, tmp_path: Path) -> None:
        logdir = _metadata_log_dir(tmp_path, [
            encode_topic_record("orders", "AAAAAAAAAAAAAAAAAAAAAA"),
            encode_config_record(RESOURCE_TYPE_TOPIC, "orders", "retention.ms", "1000"),
            encode_config_record(RESOURCE_TYPE_BROKER, "", "log.retention.hours", "5"),
        ])
        cfgs = load_topic_configs(str(logdir), overrides=["*:log.retention.hours=1"])
        assert cfgs["orders"].retention_ms == 1000 and cfgs["orders"].sources["retention.ms"] == "metadata"
        assert cfgs["other"].retention_ms == 3_600_000 and cfgs["other"].sources["retention.ms"] == "flag"
        no_flag = load_topic_configs(str(logdir))
        assert no_flag["other"].retention_ms == 5 * 3_600_000
        assert no_flag["other"].sources["retention.ms"] == "broker-metadata"
        assert load_topic_configs(str(logdir), overrides=["orders:retention.ms=7"])["orders"].retention_ms == 7

    def test_deleted_config_falls_back(self, tmp_path: Path) -> None:
        logdir = _metadata_log_dir(tmp_path, [
            encode_config_record(RESOURCE_TYPE_TOPIC, "t", "cleanup.policy", "compact"),
            encode_config_record(RESOURCE_TYPE_TOPIC, "t", "cleanup.policy", None),
        ])
        assert load_topic_configs(str(logdir))["t"].cleanup_policy == frozenset({"delete"})

    def test_kafka_4x_internal_segment_bytes_is_the_segment_size(self, tmp_path: Path) -> None:
        # Kafka 4.x LogConfig.segmentSize(): internal.segment.bytes when set, else segment.bytes
        # (how a 4.x broker takes segments below segment.bytes' 1 MiB floor; the cleaner groups by it).
        logdir = _metadata_log_dir(tmp_path, [
            encode_topic_record("small", "AAAAAAAAAAAAAAAAAAAAAA"),
            encode_config_record(RESOURCE_TYPE_TOPIC, "small", "segment.bytes", "2097152"),
            encode_config_record(RESOURCE_TYPE_TOPIC, "small", "internal.segment.bytes", "4096"),
        ])
        assert load_topic_configs(str(logdir))["small"].segment_bytes == 4096
        assert load_topic_configs(overrides=["t:internal.segment.bytes=8192"])["t"].segment_bytes == 8192

    def test_metadata_records_of_unread_types_in_newer_versions(self, tmp_path: Path) -> None:
        # A Kafka 4.4 broker's RegisterBrokerRecord is version 4 (our schemas stop at 3): configs
        # only need topic and config records, so the replay does not read it.
        logdir = _metadata_log_dir(tmp_path, [
            REGISTER_BROKER_V4_FROM_KAFKA_4_4,
            encode_topic_record("orders", "AAAAAAAAAAAAAAAAAAAAAA"),
            encode_config_record(RESOURCE_TYPE_TOPIC, "orders", "cleanup.policy", "compact"),
        ])
        assert load_topic_configs(str(logdir))["orders"].compact

    def test_pickles_for_executors(self) -> None:
        cfgs = load_topic_configs(overrides=["a:retention.ms=9"], config_file=str(SAMPLES / "topic-configs.json"))
        back = pickle.loads(pickle.dumps(cfgs))
        assert back["a"].retention_ms == 9 and back["compacted"].segment_bytes == 8192
        one = pickle.loads(pickle.dumps(cfgs["compacted"]))      # a single topic's config too
        assert one.compact and one.segment_bytes == 8192 and one.sources["segment.bytes"] == "file"

    def test_to_json_lists_non_defaults_with_sources(self) -> None:
        out = load_topic_configs(overrides=["a:retention.ms=9"]).to_json()
        assert out == {"a": {"retention.ms": {"value": "9", "source": "flag"}}}
        json.dumps(out)


class TestRealMetadata:
    def test_realdata_topic_configs_come_from_the_metadata_log(self, realdata: Path) -> None:
        logdirs = sorted({p.parent for p in realdata.rglob("__cluster_metadata-0")
                          if (p.parent / "meta.properties").is_file()})
        found = 0
        for logdir in logdirs:
            cfgs = load_topic_configs(str(logdir))
            for topic in cfgs.topics_with_overrides():
                # Every broker creates __consumer_offsets compacted with 100 MiB segments
                # (GroupCoordinatorConfig offsets topic defaults).
                if topic == "__consumer_offsets":
                    assert cfgs[topic].compact and cfgs[topic].segment_bytes == 100 * 1024 * 1024
                    found += 1
        assert found >= 1


class TestErrors:
    @pytest.mark.parametrize("flag, needle", [
        ("t:retention.ms=abc", "retention.ms"),
        ("t:no.such.key=1", "no.such.key"),
        ("t:cleanup.policy=compact,shred", "cleanup.policy"),
        ("t:min.cleanable.dirty.ratio=1.5", "min.cleanable.dirty.ratio"),
        ("t:segment.bytes=99999999999", "segment.bytes"),
        ("t:log.retention.hours=1", "broker setting"),
        ("no-colon", "TOPIC:KEY=VALUE"),
    ])
    def test_bad_flags_name_the_key(self, flag: str, needle: str) -> None:
        with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
            load_topic_configs(overrides=[flag])

    def test_bad_file_names_the_line(self, tmp_path: Path) -> None:
        f = tmp_path / "c.properties"
        f.write_text("t.retention.ms=1\njunk line\n")
        with pytest.raises(ConfigError, match=r"c\.properties:2"):
            load_topic_configs(config_file=str(f))


class TestParseTime:
    @pytest.mark.parametrize("text, ms", [
        ("1700000000000", 1_700_000_000_000),
        ("2023-11-14T22:13:20Z", 1_700_000_000_000),
        ("2023-11-14T22:13:20.123Z", 1_700_000_000_123),
        ("2023-11-15T00:13:20+02:00", 1_700_000_000_000),
        ("2023-11-14T22:13:20", 1_700_000_000_000),     # naive = UTC
        ("1969-12-31T23:59:59Z", -1000),
    ])
    def test_values(self, text: str, ms: int) -> None:
        assert parse_time(text) == ms

    def test_rejects_garbage(self) -> None:
        with pytest.raises(ValueError, match="ISO-8601"):
            parse_time("yesterday")

    @pytest.mark.parametrize("text, ms", [("9223372036854775807", (1 << 63) - 1),
                                          ("-9223372036854775808", -(1 << 63)), ("+5", 5)])
    def test_every_java_long_is_a_time(self, text: str, ms: int) -> None:
        assert parse_time(text) == ms

    @pytest.mark.parametrize("text", ["9223372036854775808", "99999999999999999999", "-9223372036854775809"])
    def test_a_time_outside_javas_long_is_refused(self, text: str) -> None:
        with pytest.raises(ValueError, match="outside Java's long range"):
            parse_time(text)
        with pytest.raises(ValueError, match="outside Java's long range"):
            parse_time(int(text))
