"""``klogs groups`` on log dirs whose every expected number is worked out by hand from Kafka's rules.

The cluster (``groups_builders.write_cluster``): ``orders-0`` and ``orders-1``, offsets 0..99, ten
records per batch, one record per second from ``FIRST_TS``, all batches the same size ``B``, five
batches per segment (segments 0..49 and 50..99).  Lag in bytes is counted in whole batches from the
one holding the first unread record to the high watermark; the retention pass is the retention
job's (``retention.ms`` given with ``--config``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "format"))
from groups_builders import (  # noqa: E402
    DAY_MS,
    FIRST_TS,
    CoordinatorLog,
    classic_group,
    commit,
    kip848_group,
    ts_of,
    write_cluster,
)

from kafka_format.cli import main  # noqa: E402
from kafka_format.engine.groups import GroupSelection, groups_local  # noqa: E402
from kafka_format.log.groups import DEFAULT_OFFSETS_RETENTION_MS  # noqa: E402

NOW = ts_of(99) + DAY_MS
RETENTION = DAY_MS + 10_000       # at NOW segment 0..49 breaches it, segment 50..99 does not


def _log(*recs: Any, at: int = FIRST_TS) -> CoordinatorLog:
    log = CoordinatorLog()
    log.records(list(recs), at)
    return log


def _members(*parts: int) -> list[dict[str, Any]]:
    return [{"id": "m1", "client": "c1", "host": "/10.0.0.1", "topics": ["orders"], "assigned": {"orders": list(parts)}}]


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    logs = {
        "behind": _log(classic_group("behind", generation=3, members=_members(0, 1)),
                       commit("behind", 0, 40, FIRST_TS + 1000), commit("behind", 1, 45, FIRST_TS + 1000)),
        "ahead": _log(commit("ahead", 0, 60, FIRST_TS), commit("ahead", 1, 100, FIRST_TS)),
        "kip848": _log(*kip848_group("kip848", "m9", epoch=5, partitions=[0], topics=["orders"])),
    }
    return write_cluster(tmp_path / "broker-1", logs, now_ms=NOW)


def _batch_bytes(cluster: Path) -> int:
    """``B``: every batch of ``orders`` has the same size (fixed-width keys and values)."""
    return (cluster / "orders-0" / "00000000000000000000.log").stat().st_size // 5


def _rows(cluster: Path, **kwargs: Any) -> dict[tuple[str, str | None, int | None], dict[str, Any]]:
    result = groups_local([str(cluster)], NOW, **kwargs)
    assert result.anomalies.num_rows == 0
    return {(r["group"], r["topic"], r["partition"]): r for r in result.rows.to_pylist()}


def _retention_configs() -> Any:
    from kafka_format.log.topicconfig import load_topic_configs

    return load_topic_configs([], overrides=[f"orders:retention.ms={RETENTION}"])


class TestLag:
    def test_lag_in_records_bytes_and_time(self, cluster: Path) -> None:
        rows = _rows(cluster)
        b = _batch_bytes(cluster)
        r = rows[("behind", "orders", 0)]
        assert (r["committedOffset"], r["highWatermark"], r["logEndOffset"], r["logStartOffset"]) == (40, 100, 100, 0)
        assert (r["lag"], r["lagBytes"]) == (60, 6 * b)
        assert (r["firstUnreadTimestamp"], r["timeLagMs"]) == (ts_of(40), NOW - ts_of(40))
        assert (r["commitTimestamp"], r["commitAgeMs"]) == (FIRST_TS + 1000, NOW - FIRST_TS - 1000)
        # inside a batch: the batch holding offset 45 is the first unread one
        r = rows[("behind", "orders", 1)]
        assert (r["lag"], r["lagBytes"], r["firstUnreadTimestamp"]) == (55, 6 * b, ts_of(45))
        # caught up: nothing unread
        r = rows[("ahead", "orders", 1)]
        assert (r["lag"], r["lagBytes"], r["firstUnreadTimestamp"], r["timeLagMs"]) == (0, 0, None, None)

    def test_members_and_group_columns(self, cluster: Path) -> None:
        rows = _rows(cluster)
        r = rows[("behind", "orders", 0)]
        assert (r["consumerId"], r["host"], r["clientId"], r["groupType"], r["state"], r["generation"],
                r["members"], r["protocolType"], r["protocol"]) == \
            ("m1", "/10.0.0.1", "c1", "classic", "Stable", 3, 1, "consumer", "range")
        # a consumer-protocol group assigned orders-0 (by topic id) and nothing committed
        r = rows[("kip848", "orders", 0)]
        assert (r["consumerId"], r["committedOffset"], r["lag"], r["groupType"], r["state"], r["generation"]) \
            == ("m9", None, None, "consumer", "Stable", 5)
        assert r["highWatermark"] == 100
        # a group of commits alone: a simple group, nobody assigned
        r = rows[("ahead", "orders", 0)]
        assert (r["consumerId"], r["state"], r["protocolType"], r["members"]) == (None, "Empty", None, 0)

    def test_the_high_watermark_of_the_topic_bounds_the_lag(self, tmp_path: Path) -> None:
        logs = {"g": _log(commit("g", 0, 40, FIRST_TS))}
        d = write_cluster(tmp_path / "b", logs, now_ms=NOW)
        _set_checkpoint(d / "replication-offset-checkpoint", ("orders", 0), 75)
        r = _rows(d)[("g", "orders", 0)]
        assert (r["highWatermark"], r["logEndOffset"], r["lag"]) == (75, 100, 35)
        # HW 75 is inside batch 70..79: the unread batches are 40..49 up to 70..79
        assert r["lagBytes"] == 4 * _batch_bytes(d)

    def test_records_below_the_log_start_are_lost_already(self, tmp_path: Path) -> None:
        logs = {"g": _log(commit("g", 1, 10, FIRST_TS))}
        d = write_cluster(tmp_path / "b", logs, now_ms=NOW)
        _set_checkpoint(d / "log-start-offset-checkpoint", ("orders", 1), 50)
        r = _rows(d)[("g", "orders", 1)]
        assert (r["logStartOffset"], r["lag"], r["lostRecords"]) == (50, 90, 40)
        assert (r["lagBytes"], r["firstUnreadTimestamp"]) == (5 * _batch_bytes(d), ts_of(50))

    def test_a_commit_above_the_coordinators_high_watermark_is_not_seen(self, tmp_path: Path) -> None:
        from kafka_format.internal.consumer_offsets import group_partition

        # two appends: two batches, at offsets 0 and 1; a high watermark of 1 hides the second
        logs2 = CoordinatorLog()
        logs2.records([commit("g", 0, 10, FIRST_TS)], FIRST_TS)
        logs2.records([commit("g", 0, 90, FIRST_TS)], FIRST_TS)
        d = write_cluster(tmp_path / "c", {"g": logs2}, now_ms=NOW)
        _set_checkpoint(d / "replication-offset-checkpoint", ("__consumer_offsets", group_partition("g", 3)), 1)
        assert _rows(d)[("g", "orders", 0)]["committedOffset"] == 10


class TestExpiry:
    def test_a_simple_groups_offset_expires_a_week_after_its_commit(self, cluster: Path) -> None:
        r = _rows(cluster)[("ahead", "orders", 0)]
        assert r["offsetExpiresAtMs"] == FIRST_TS + DEFAULT_OFFSETS_RETENTION_MS
        assert r["offsetExpired"] is False           # NOW is a day after the data, not a week
        r = _rows(cluster, retention_ms=60_000)[("ahead", "orders", 0)]
        assert (r["offsetExpiresAtMs"], r["offsetExpired"]) == (FIRST_TS + 60_000, True)

    def test_a_stable_group_subscribed_to_the_topic_keeps_its_offsets(self, cluster: Path) -> None:
        r = _rows(cluster, retention_ms=60_000)[("behind", "orders", 0)]
        assert (r["offsetExpiresAtMs"], r["offsetExpired"]) == (None, False)


class TestRetention:
    def test_what_the_pass_at_now_deletes_unread_and_when(self, cluster: Path) -> None:
        rows = _rows(cluster, configs=_retention_configs())
        b = _batch_bytes(cluster)
        # segment 0..49 goes now: "behind" had 40..49 unread there
        r = rows[("behind", "orders", 0)]
        assert (r["retentionLogStartOffset"], r["retentionLossRecords"], r["retentionLossBytes"],
                r["losesRecordsAtMs"]) == (50, 10, b, NOW)
        r = rows[("behind", "orders", 1)]        # 45..49 unread in the deleted segment, half a batch
        assert (r["retentionLossRecords"], r["retentionLossBytes"]) == (5, b)
        # "ahead" read past segment 0: nothing lost now; segment 50..99 goes RETENTION after its newest record
        r = rows[("ahead", "orders", 0)]
        assert (r["retentionLogStartOffset"], r["retentionLossRecords"], r["retentionLossBytes"]) == (50, 0, 0)
        assert r["losesRecordsAtMs"] == ts_of(99) + RETENTION + 1
        # caught up: retention never takes anything unread
        r = rows[("ahead", "orders", 1)]
        assert (r["retentionLossRecords"], r["losesRecordsAtMs"]) == (0, None)

    def test_without_a_breach_nothing_is_lost_and_the_default_week_tells_when(self, cluster: Path) -> None:
        r = _rows(cluster)[("behind", "orders", 0)]
        assert (r["retentionLogStartOffset"], r["retentionLossRecords"]) == (0, 0)
        assert r["losesRecordsAtMs"] == ts_of(49) + 7 * DAY_MS + 1


class TestSelection:
    def test_groups_by_name_and_pattern_and_topics(self, cluster: Path) -> None:
        assert {k[0] for k in _rows(cluster, groups=GroupSelection(("ahead",)))} == {"ahead"}
        assert {k[0] for k in _rows(cluster, groups=GroupSelection(pattern="a.*|kip.*"))} == {"ahead", "kip848"}
        assert _rows(cluster, topics=["payments"]) == {}

    def test_a_group_with_nothing_committed_or_assigned_is_one_row(self, tmp_path: Path) -> None:
        d = write_cluster(tmp_path / "b", {"idle": _log(classic_group("idle", generation=7, members=[], protocol=None))},
                          now_ms=NOW)
        rows = _rows(d)
        assert list(rows) == [("idle", None, None)]
        assert (rows[("idle", None, None)]["state"], rows[("idle", None, None)]["generation"]) == ("Empty", 7)


class TestCli:
    def test_jsonl_lines_and_exit_codes(self, cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["groups", str(cluster), "--now", str(NOW), "--engine", "local"]) == 0
        lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        assert [(x["group"], x["partition"]) for x in lines] == \
            [("ahead", 0), ("ahead", 1), ("behind", 0), ("behind", 1), ("kip848", 0)]
        # retention deletes unread records: exit 1
        assert main(["groups", str(cluster), "--now", str(NOW), "--engine", "local",
                     "--config", f"orders:retention.ms={RETENTION}"]) == 1

    def test_table_and_report(self, cluster: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        out = tmp_path / "report"
        code = main(["groups", str(cluster), "--now", str(NOW), "--engine", "local", "--format", "table",
                     "--out", str(out), "--config", f"orders:retention.ms={RETENTION}"])
        text = capsys.readouterr().out
        assert code == 1
        assert text.splitlines()[0].split()[:3] == ["group", "topic", "partition"]
        assert "deleted unread by retention at --now: 1 group, 15 records" in text
        assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["groups.txt", "report.html",
                                                                                 "summary.json"]
        summary = json.loads((out / "summary.json").read_text())
        assert summary["groups"][0]["group"] == "behind"           # problems first
        assert summary["total"]["retentionLossRecords"] == 15
        assert (summary["inputs"]["offsetsRetentionMinutes"], summary["inputs"]["groups"]) == (10080, [])
        assert "behind" in (out / "report.html").read_text()

    def test_a_users_directory_is_refused_and_bad_flags_are_usage_errors(self, cluster: Path, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
        mine = tmp_path / "mine"
        mine.mkdir()
        (mine / "notes.txt").write_text("keep")
        assert main(["groups", str(cluster), "--out", str(mine), "--engine", "local"]) == 2
        assert (mine / "notes.txt").read_text() == "keep"
        assert main(["groups", str(cluster), "--group-pattern", "(", "--engine", "local"]) == 2
        assert main(["groups", str(cluster), "--offsets-retention-minutes", "0", "--engine", "local"]) == 2
        capsys.readouterr()


def _set_checkpoint(path: Path, tp: tuple[str, int], value: int) -> None:
    """Set one entry of an offset checkpoint file (version 0, count, ``topic partition offset``)."""
    lines = path.read_text().splitlines()
    entries = {(ln.rsplit(" ", 2)[0], int(ln.rsplit(" ", 2)[1])): int(ln.rsplit(" ", 2)[2]) for ln in lines[2:] if ln}
    entries[tp] = value
    path.write_text(f"0\n{len(entries)}\n" + "".join(f"{t} {p} {o}\n" for (t, p), o in sorted(entries.items())))


HEADER = ("GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             "
          "CONSUMER-ID     HOST            CLIENT-ID")


def test_kafka_format_is_kafka_consumer_groups_describe_text(cluster: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Kafka 4.4's ConsumerGroupCommand, offsets view: groups in TreeMap order, a blank line before
    each header, unpadded last column, "-" for what is missing, "no active members" on stderr."""
    assert main(["groups", str(cluster), "--now", str(NOW), "--engine", "local", "--format", "kafka"]) == 0
    out, err = capfd.readouterr()
    assert out == (
        "\n" + HEADER +
        "\nahead           orders          0          60              100             40              -               -               -"
        "\nahead           orders          1          100             100             0               -               -               -"
        "\n"
        "\n" + HEADER +
        "\nbehind          orders          0          40              100             60              m1              /10.0.0.1       c1"
        "\nbehind          orders          1          45              100             55              m1              /10.0.0.1       c1"
        "\n"
        "\n" + HEADER +
        "\nkip848          orders          0          -               100             -               m9              /10.0.0.9       c848"
        "\n")
    assert "\nConsumer group 'ahead' has no active members.\n" in err
    assert "behind" not in err and "kip848" not in err


def test_kafka_format_leaves_out_what_kafka_consumer_groups_does_not_list() -> None:
    """``ListGroupsOptions.forConsumerGroups()``: classic and consumer groups of protocol type
    consumer (or none) only; streams, share and Connect groups are not listed."""
    from kafka_format.log.groups import COLUMNS
    from kafka_format.report.groups_report import format_kafka

    def row(group: str, kind: str, protocol_type: str | None) -> dict[str, Any]:
        return dict(dict.fromkeys(COLUMNS), group=group, groupType=kind, protocolType=protocol_type,
                    state="Stable", members=1, topic="orders", partition=0, committedOffset=5,
                    highWatermark=9, lag=4)
    out, _ = format_kafka([row("app", "streams", None), row("sg", "share", None), row("conn", "classic", "connect"),
                           row("plain", "consumer", None), row("old", "classic", "consumer")])
    assert [line.split()[0] for line in out.splitlines() if line and not line.startswith("GROUP")] == ["old", "plain"]


@pytest.fixture
def share_cluster(tmp_path: Path) -> Path:
    """A log dir with share group ``sg`` (KIP-932): share-partitions ``orders-0`` and ``orders-1``
    initialized, ``orders-0``'s state a snapshot (start 40, 40..44 acknowledged) and an update (45
    available after two deliveries, 47..48 archived, deliveryCompleteCount 7); ``orders-1`` without state."""
    from groups_builders import ORDERS_ID, share_group

    from kafka_format.internal.share_group_state import (
        SHARE_SNAPSHOT,
        SHARE_UPDATE,
        encode_share_snapshot,
        encode_share_state_key,
        encode_share_update,
    )

    state = [
        (encode_share_state_key(SHARE_SNAPSHOT, "sg", ORDERS_ID, 0),
         encode_share_snapshot({"snapshotEpoch": 0, "stateEpoch": 3, "leaderEpoch": 0, "startOffset": 40,
                                "deliveryCompleteCount": 5, "createTimestamp": FIRST_TS, "writeTimestamp": FIRST_TS,
                                "stateBatches": [{"firstOffset": 40, "lastOffset": 44, "deliveryState": 2,
                                                  "deliveryCount": 1}]})),
        (encode_share_state_key(SHARE_UPDATE, "sg", ORDERS_ID, 0),
         encode_share_update({"snapshotEpoch": 0, "leaderEpoch": 0, "startOffset": -1, "deliveryCompleteCount": 7,
                              "stateBatches": [{"firstOffset": 45, "lastOffset": 45, "deliveryState": 0,
                                                "deliveryCount": 2},
                                               {"firstOffset": 47, "lastOffset": 48, "deliveryState": 4,
                                                "deliveryCount": 5}]})),
    ]
    return write_cluster(tmp_path / "broker-1", {"sg": _log(*share_group("sg", epoch=3, initialized=[0, 1]))},
                         now_ms=NOW, share_state=state)


def test_a_share_groups_rows_are_its_share_partitions_state(share_cluster: Path) -> None:
    """KIP-932: the initialized share-partitions (ShareGroupStatePartitionMetadata) with their
    ``__share_group_state`` (readStateSummary): the start offset as committedOffset, Kafka's share lag
    (HW - start - deliveryCompleteCount), the in-flight batches; a share-partition without state
    reads as start offset -1.  Retention at NOW deletes 0..49: of 40..49 only the offsets neither
    acknowledged nor archived are lost (45, 46, 49)."""
    path = share_cluster
    rows = _rows(path, configs=_retention_configs())
    r = rows[("sg", "orders", 0)]
    assert (r["groupType"], r["state"], r["generation"], r["members"]) == ("share", "Empty", 3, 0)
    assert (r["committedOffset"], r["leaderEpoch"], r["shareStateEpoch"], r["deliveryCompleteCount"]) == (40, 0, 3, 7)
    assert (r["highWatermark"], r["lag"]) == (100, 100 - 40 - 7)
    assert r["inFlight"] == [
        {"firstOffset": 40, "lastOffset": 44, "deliveryState": "Acknowledged", "deliveryCount": 1},
        {"firstOffset": 45, "lastOffset": 45, "deliveryState": "Available", "deliveryCount": 2},
        {"firstOffset": 47, "lastOffset": 48, "deliveryState": "Archived", "deliveryCount": 5}]
    assert (r["retentionLogStartOffset"], r["retentionLossRecords"], r["lostRecords"]) == (50, 3, 0)
    # the first record still to deliver is 45 (40..44 acknowledged)
    assert (r["firstUnreadTimestamp"], r["timeLagMs"]) == (ts_of(45), NOW - ts_of(45))
    r = rows[("sg", "orders", 1)]
    assert (r["committedOffset"], r["lag"], r["inFlight"], r["highWatermark"]) == (None, None, None, 100)
    assert set(rows) == {("sg", "orders", 0), ("sg", "orders", 1)}


@pytest.mark.spark
def test_both_engines_give_the_same_rows(cluster: Path, spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    outs = {}
    for engine in ("local", "spark"):
        assert main(["groups", str(cluster), "--now", str(NOW), "--engine", engine,
                     "--config", f"orders:retention.ms={RETENTION}"]) == 1
        outs[engine] = capsys.readouterr().out
    assert outs["local"] == outs["spark"]
    assert len(outs["local"].splitlines()) == 5


def test_a_tiered_partitions_remote_records_are_not_lost(tmp_path: Path) -> None:
    """``orders-0`` of the tiered cluster: offsets 0..49 copied and deleted locally (local log start
    50), the history's log start 0.  A group at 10 has lost nothing; its unread bytes in the remote
    tier are not looked up (null), its lag is Kafka's."""
    from groups_builders import write_coordinator
    from tiered_builders import write_tiered_cluster

    from kafka_format.writer import LogDirWriter

    tiered = write_tiered_cluster(tmp_path / "t")
    log = _log(commit("g", 0, 10, FIRST_TS))
    d = LogDirWriter(tmp_path / "coordinator", node_id=2, cluster_id="tieredTestCluster00000")
    w = d.partition("__consumer_offsets", 0, topic_id=b"\xc0" * 16)
    write_coordinator(w, log)
    w.close()
    d.close(written_at_ms=NOW)
    result = groups_local([str(tiered.log_dir), str(tmp_path / "coordinator")], NOW)
    r = {(x["group"], x["topic"], x["partition"]): x for x in result.rows.to_pylist()}[("g", "orders", 0)]
    assert (r["logStartOffset"], r["lostRecords"], r["lag"]) == (0, 0, r["highWatermark"] - 10)
    assert (r["lagBytes"], r["firstUnreadTimestamp"]) == (None, None)


@pytest.mark.spark
def test_the_dataframe_function_holds_the_jobs_rows(cluster: Path, spark: Any) -> None:
    """``kafka_format.spark.frames.groups``: the job's rows, schema and order, composable in SQL."""
    from kafka_format.spark.frames import groups

    df = groups(spark, [str(cluster)], NOW, configs=_retention_configs())
    expected = groups_local([str(cluster)], NOW, configs=_retention_configs()).rows.to_pylist()
    assert df.columns == list(expected[0])
    assert [r.asDict() for r in df.collect()] == expected
    df.createOrReplaceTempView("kla_groups")
    lost = spark.sql("SELECT `group`, sum(retentionLossRecords) AS lost FROM kla_groups "
                     "GROUP BY `group` HAVING lost > 0").collect()
    assert [(r["group"], r["lost"]) for r in lost] == [("behind", 15)]


@pytest.mark.spark
def test_the_dataframe_function_holds_share_groups_in_flight_batches(share_cluster: Path, spark: Any) -> None:
    from kafka_format.spark.frames import groups

    df = groups(spark, [str(share_cluster)], NOW, configs=_retention_configs())
    expected = groups_local([str(share_cluster)], NOW, configs=_retention_configs()).rows.to_pylist()
    assert [r.asDict(recursive=True) for r in df.collect()] == expected
    df.createOrReplaceTempView("kla_share")
    got = spark.sql("SELECT partition, lag, inFlight[1].deliveryState AS s, size(inFlight) AS n FROM kla_share "
                    "WHERE groupType = 'share' AND inFlight IS NOT NULL").collect()
    assert [tuple(r) for r in got] == [(0, 53, "Available", 3)]


def test_the_retention_report_has_the_groups_problems_first(cluster: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``klogs retention --out``: summary.json -> groups and the page's groups section, the group
    this pass takes unread records from first."""
    out = tmp_path / "retention"
    assert main(["retention", str(cluster), "--now", str(NOW), "--engine", "local", "--out", str(out),
                 "--config", f"orders:retention.ms={RETENTION}"]) == 0
    capsys.readouterr()
    groups = json.loads((out / "summary.json").read_text())["groups"]
    assert [(g["group"], g["retentionLossRecords"], g["lostRecords"]) for g in groups] == \
        [("behind", 15, 0), ("ahead", 0, 0), ("kip848", 0, 0)]
    assert groups[0]["losesRecordsAtMs"] == NOW
    page = (out / "disk-usage.html").read_text()
    assert "Consumer groups: unread records lost and taken by retention" in page
    assert page.index(">behind<") < page.index(">ahead<")


def test_retention_counts_the_bytes_from_the_first_unread_batch_when_the_log_start_is_past_the_commit(
        tmp_path: Path) -> None:
    """Log start 25 (inside batch 20..29 of segment 0..49), commit at 10: 15 records lost already;
    the pass deletes segment 0..49, so 25..49 go unread: the batches 20.., 30.., 40.., not the segment."""
    d = write_cluster(tmp_path / "b", {"g": _log(commit("g", 0, 10, FIRST_TS))}, now_ms=NOW)
    _set_checkpoint(d / "log-start-offset-checkpoint", ("orders", 0), 25)
    r = _rows(d, configs=_retention_configs())[("g", "orders", 0)]
    assert (r["lostRecords"], r["retentionLogStartOffset"], r["retentionLossRecords"]) == (15, 50, 25)
    assert r["retentionLossBytes"] == 3 * _batch_bytes(d)
    assert r["firstUnreadTimestamp"] == ts_of(25)
