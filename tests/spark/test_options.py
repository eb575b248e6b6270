"""Option parsing of the kafka-log source: Spark Kafka source rules (peers.md §1a), no Spark needed."""

from __future__ import annotations

import pytest

from kafka_format.spark.options import KafkaLogOptionError, parse_options

P = {"path": "/logs"}


def opts(**kw: str) -> dict[str, str]:
    return {**P, **kw}


class TestDefaults:
    def test_defaults_are_the_documented_ones(self) -> None:
        o = parse_options(P)
        assert o.paths == ("/logs",)
        assert (o.include_headers, o.include_control_records, o.granularity, o.mode) == (True, False, "record", "FAILFAST")
        assert (o.plan.replicas, o.plan.up_to, o.plan.read_committed) == ("longest", "logEnd", False)
        assert o.plan.max_bytes_per_partition == 128 * 1024 * 1024
        assert (o.bounds.start, o.bounds.end, o.bounds.start_timestamp_all) == ({}, {}, None)

    def test_keys_are_case_insensitive(self) -> None:
        o = parse_options({"PATH": "/x", "includeheaders": "FALSE", "MODE": "permissive", "UPTO": "highwatermark"})
        assert (o.include_headers, o.mode, o.plan.up_to) == (False, "PERMISSIVE", "highWatermark")

    def test_paths_json_list(self) -> None:
        assert parse_options({"paths": '["/a", "/b"]'}).paths == ("/a", "/b")


class TestOffsets:
    def test_json_per_partition_with_earliest(self) -> None:
        o = parse_options(opts(startingOffsets='{"t": {"0": 23, "1": -2}}', endingOffsets='{"t": {"0": 50, "1": -1}}'))
        assert o.bounds.start == {("t", 0): 23, ("t", 1): -2}
        assert o.bounds.end == {("t", 0): 50, ("t", 1): -1}

    @pytest.mark.parametrize("kw,needle", [
        ({"startingOffsets": "latest"}, "can't be latest"),
        ({"startingOffsets": '{"t": {"0": -1}}'}, "can't be latest"),
        ({"endingOffsets": "earliest"}, "can't be earliest"),
        ({"endingOffsets": '{"t": {"0": -2}}'}, "can't be earliest"),
        ({"startingOffsets": '{"t": {"0": -3}}'}, ">= 0"),
        ({"startingOffsets": '{"t": [0]}'}, "partition"),
        ({"startingOffsets": "{not json"}, "not valid JSON"),
        ({"startingOffsets": '{"t": {"x": 1}}'}, "not an integer"),
    ])
    def test_rejected_like_spark(self, kw: dict[str, str], needle: str) -> None:
        with pytest.raises(KafkaLogOptionError, match=needle):
            parse_options(opts(**kw))


class TestTimestampPrecedence:
    def test_starting_timestamp_beats_by_timestamp_beats_offsets(self) -> None:
        o = parse_options(opts(startingTimestamp="1000", startingOffsetsByTimestamp='{"t": {"0": 5}}',
                               startingOffsets='{"t": {"0": 3}}'))
        assert (o.bounds.start_timestamp_all, o.bounds.start_timestamp, o.bounds.start) == (1000, {}, {})
        o = parse_options(opts(startingOffsetsByTimestamp='{"t": {"0": 5}}', startingOffsets='{"t": {"0": 3}}'))
        assert (o.bounds.start_timestamp_all, o.bounds.start_timestamp, o.bounds.start) == (None, {("t", 0): 5}, {})

    def test_ending_precedence(self) -> None:
        o = parse_options(opts(endingTimestamp="9", endingOffsetsByTimestamp='{"t": {"0": 5}}'))
        assert (o.bounds.end_timestamp_all, o.bounds.end_timestamp) == (9, {})

    def test_strategy(self) -> None:
        assert parse_options(P).bounds.starting_timestamp_strategy == "error"
        o = parse_options(opts(startingOffsetsByTimestampStrategy="LATEST"))
        assert o.bounds.starting_timestamp_strategy == "latest"
        with pytest.raises(KafkaLogOptionError, match="error, latest"):
            parse_options(opts(startingOffsetsByTimestampStrategy="skip"))

    @pytest.mark.parametrize("kw", [{"startingTimestamp": "yesterday"}, {"endingTimestamp": "-5"},
                                    {"startingOffsetsByTimestamp": '{"t": {"0": -1}}'}])
    def test_bad_timestamps(self, kw: dict[str, str]) -> None:
        with pytest.raises(KafkaLogOptionError):
            parse_options(opts(**kw))


class TestOtherOptions:
    def test_topic_selection(self) -> None:
        assert parse_options(opts(topics="a, b")).plan.topics == ("a", "b")
        assert parse_options(opts(assign='{"a": [0, 2]}')).plan.assign == {"a": (0, 2)}
        assert parse_options(opts(topicPattern="or.*")).plan.selects("orders", 1)
        assert not parse_options(opts(topicPattern="or.*")).plan.selects("x-orders", 1)

    @pytest.mark.parametrize("kw,name", [
        ({"topics": "a", "assign": '{"a": [0]}'}, "assign"),
        ({"topicPattern": "("}, "topicPattern"),
        ({"assign": '{"a": 0}'}, "assign"),
        ({"isolationLevel": "serializable"}, "isolationLevel"),
        ({"granularity": "row"}, "granularity"),
        ({"mode": "lenient"}, "mode"),
        ({"replicas": "first"}, "replicas"),
        ({"upTo": "lso"}, "upTo"),
        ({"minPartitions": "0"}, "minPartitions"),
        ({"maxBytesPerPartition": "lots"}, "maxBytesPerPartition"),
        ({"includeHeaders": "maybe"}, "includeHeaders"),
        ({"granularity": "batch", "isolationLevel": "read_committed"}, "isolationLevel"),
        ({"subscribe": "a"}, "subscribe"),
        ({"kafka.bootstrap.servers": "x:9092"}, "kafka.bootstrap.servers"),
    ])
    def test_errors_name_the_option(self, kw: dict[str, str], name: str) -> None:
        with pytest.raises(KafkaLogOptionError) as e:
            parse_options(opts(**kw))
        assert e.value.option == name

    def test_no_path(self) -> None:
        with pytest.raises(KafkaLogOptionError, match="no log dir"):
            parse_options({})

    @pytest.mark.parametrize("raw,want", [("1048576", 1 << 20), ("64m", 64 << 20), ("2g", 2 << 30), ("512KiB", 512 << 10)])
    def test_byte_sizes(self, raw: str, want: int) -> None:
        assert parse_options(opts(maxBytesPerPartition=raw)).plan.max_bytes_per_partition == want


class TestStreaming:
    def test_latest_start_allowed_for_streams_only(self) -> None:
        assert parse_options(opts(startingOffsets="latest"), streaming=True).start_latest
        assert parse_options(opts(startingOffsets='{"t": {"0": -1}}'), streaming=True).bounds.start == {("t", 0): -1}
        assert not parse_options(P, streaming=True).start_latest

    @pytest.mark.parametrize("name", ["endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"])
    def test_ending_options_rejected_for_streams(self, name: str) -> None:
        value = {"endingOffsets": "latest", "endingTimestamp": "5", "endingOffsetsByTimestamp": '{"t": {"0": 5}}'}[name]
        with pytest.raises(KafkaLogOptionError, match="not valid for streaming") as e:
            parse_options(opts(**{name: value}), streaming=True)
        assert e.value.option == name
