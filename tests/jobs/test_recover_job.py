"""``klogs recover``: the CLI's lines, exit codes, report and ``--write-segments`` on the local
engine, and the same rows from Spark's executors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_format.jobs.recover import main
from kafka_format.writer import LogDirWriter, Record, build_v2_batch

NOW = 1_700_000_000_000
HOSTILE = "a<b>&c"


def _broker(tmp_path: Path) -> Path:
    """Two partitions after a crash, recovery point 0: ``ok-0`` intact, HOSTILE-0 with a flipped
    byte in its second batch (offsets 5-9) -- four batches of five records, one per segment
    (segments 0, 5, 10, 15)."""
    root = tmp_path / "broker"
    d = LogDirWriter(root, node_id=1, cluster_id="recoveryTestCluster000")
    size = 0
    for topic in ("ok", HOSTILE):
        w = d.partition(topic, 0, topic_id=b"\x05" * 16, segment_bytes=1, index_interval_bytes=100)
        for i in range(4):
            b = build_v2_batch([Record(value=b"v" * 50, timestamp=NOW + i)] * 5, base_offset=5 * i,
                               partition_leader_epoch=0)
            size = b.size
            w.append(b)
        w.close(clean_shutdown=False)
        d.state(topic, 0).recovery_point = 0
    d.close(written_at_ms=NOW, clean_shutdown=False)
    log = root / f"{HOSTILE}-0" / f"{5:020d}.log"
    data = bytearray(log.read_bytes())
    assert len(data) == size
    data[100] ^= 1
    log.write_bytes(bytes(data))
    return root


def test_cli_lines_exit_code_report_and_segments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _broker(tmp_path)
    (root / "ok-0" / f"{15:020d}.index").unlink()
    out = tmp_path / "out"
    code = main([str(root), "--out", str(out), "--engine", "local", "--write-segments"])
    assert code == 1                                        # records would be dropped
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [json.loads(x) for x in (out / "partitions.jsonl").read_text().splitlines()] == lines
    by_topic = {r["topic"]: r for r in lines}
    bad, ok = by_topic[HOSTILE], by_topic["ok"]
    assert (bad["logEndOffset"], bad["truncatedAt"], bad["recordsDropped"]) == (5, 5, 15)   # offsets 5..19
    assert bad["deletedSegments"] == [10, 15] and bad["highWatermark"] == 5
    assert ok["recordsDropped"] == 0 and ok["truncatedAt"] is None and ok["logEndOffset"] == 20
    assert ok["rebuiltIndexes"] == [0, 5, 10, 15]
    html = (out / "report.html").read_text()
    assert HOSTILE not in html and "a&lt;b&gt;&amp;c" in html
    assert html.index("What will be lost") < html.index("Every partition")
    seg_dir = out / "segments" / "logdir-0" / "ok-0"
    assert sorted(p.name for p in seg_dir.iterdir()) == sorted(
        f"{b:020d}{s}" for b in (0, 5, 10, 15) for s in (".log", ".index", ".timeindex"))
    assert (seg_dir / f"{0:020d}.log").read_bytes() == (root / "ok-0" / f"{0:020d}.log").read_bytes()


def test_nothing_lost_exits_0_and_out_never_overwrites_a_users_dir(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    root = _broker(tmp_path)
    assert main([str(root), "--topic", "ok", "--out", str(tmp_path / "o"), "--engine", "local"]) == 0
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    assert main([str(root), "--out", str(mine), "--engine", "local"]) == 2
    assert (mine / "notes.txt").read_text() == "keep" and not (mine / "partitions.jsonl").exists()
    capsys.readouterr()


@pytest.mark.spark
def test_spark_executor_gives_the_local_rows(tmp_path: Path, spark: object) -> None:
    from kafka_format.engine.recover import recover_rows, recover_tasks
    from kafka_format.engine.runtime import LocalExecutor
    from kafka_format.log.topicconfig import TopicConfigs
    from kafka_format.spark.executor import SparkExecutor
    from kafka_format.storage.logdir import open_log_dirs

    tasks = recover_tasks(open_log_dirs(_broker(tmp_path), include_special=True), TopicConfigs())
    local = recover_rows(LocalExecutor(), tasks)
    assert any(r["recordsDropped"] for r in local)
    assert recover_rows(SparkExecutor(spark), tasks) == local  # type: ignore[arg-type]
