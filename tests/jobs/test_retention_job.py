"""``klogs retention``: the DataFrame functions, the job in-process with ``--out``, the CLI's exit code.

Oracle: the plain §5 walk of ``tests/format/test_retention.py`` over independently gathered
segment facts (``os.stat`` sizes, decoded record timestamps, hand-parsed checkpoints).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from testhelpers import load_module

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"


oracle_mod = load_module("_retention_oracle", REPO / "tests" / "format" / "test_retention.py")
T0, DAY, Part = oracle_mod.T0, oracle_mod.DAY, oracle_mod.Part


def _expected(logdir: Path, topic: str, partition: int, now: int, **policy: Any) -> dict[int, str]:
    facts = oracle_mod.gather(logdir, topic, partition)
    return oracle_mod.oracle(facts, now=now, **policy)


@pytest.mark.spark
def test_dataframe_types_replicas_and_oracle(spark: Any, tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql.types import BooleanType, IntegerType, LongType, StringType

    from kafka_format.log.topicconfig import load_topic_configs
    from kafka_format.spark.frames import retention_candidates, retention_summary

    logdirs = tmp_path / "logdirs"
    shutil.copytree(SAMPLES, logdirs)
    configs = load_topic_configs(logdirs, config_file=str(logdirs / "topic-configs.json"))
    now = T0 + 7 * DAY + 100_000
    df = retention_candidates(spark, [str(logdirs)], configs, now, topic_pattern="v2-codecs|compacted").cache()
    assert [(f.name, type(f.dataType)) for f in df.schema.fields] == [
        ("topic", StringType), ("partition", IntegerType), ("baseOffset", LongType), ("sizeBytes", LongType),
        ("largestTimestamp", LongType), ("deletable", BooleanType), ("reason", StringType),
        ("deletableAtMs", LongType), ("tier", StringType)]
    rows = [r.asDict() for r in df.collect()]
    assert {r["topic"] for r in rows} == {"v2-codecs", "compacted"}
    # v2-codecs-0 lives on both brokers: the replica with the higher log end offset is reported
    leo = {b: oracle_mod.gather(logdirs / b, "v2-codecs", 0).leo for b in ("broker-1", "broker-2")}
    longest = max(leo, key=lambda b: leo[b])
    assert leo[longest] != min(leo.values())
    for (topic, partition) in sorted({(r["topic"], r["partition"]) for r in rows}):
        broker = longest if (topic, partition) == ("v2-codecs", 0) else next(
            b for b in ("broker-1", "broker-2") if (logdirs / b / f"{topic}-{partition}").is_dir())
        cfg = configs[topic]
        expected = _expected(logdirs / broker, topic, partition, now,
                             policy=",".join(sorted(cfg.cleanup_policy)), retention_ms=cfg.retention_ms,
                             retention_bytes=cfg.retention_bytes)
        facts = oracle_mod.gather(logdirs / broker, topic, partition)
        mine = [r for r in rows if (r["topic"], r["partition"]) == (topic, partition)]
        assert [r["baseOffset"] for r in mine] == [s.base for s in facts.segs]
        assert {r["baseOffset"]: r["reason"] for r in mine if r["deletable"]} == expected
    summary = {(s["topic"], s["partition"]): s.asDict() for s in retention_summary(df).collect()}
    for key, s in summary.items():
        mine = [r for r in rows if (r["topic"], r["partition"]) == key]
        assert s["segments"] == len(mine)
        assert s["bytes"] == sum(r["sizeBytes"] for r in mine)
        assert s["deletableBytes"] == sum(r["sizeBytes"] for r in mine if r["deletable"])
        later = [r["deletableAtMs"] for r in mine if not r["deletable"] and r["deletableAtMs"] is not None]
        assert s["nextDeletionMs"] == (min(later) if later else None)
    df.unpersist()


@pytest.mark.spark
def test_job_in_process_with_out(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyspark")
    job = importlib.import_module("kafka_format.jobs.retention")
    now = T0 + 3 * DAY
    logdir = oracle_mod.write_logdir(tmp_path / "broker", [
        Part("a", [[T0], [T0 + DAY], [T0 + 2 * DAY + 1]]),
        Part("a", [[T0], [now + DAY], [T0]], partition=1),
        Part("b", [[T0, T0], [T0]], hw=1),
    ])
    out = tmp_path / "report"
    code = job.main([str(logdir), "--now", str(now), "--config", f"a:retention.ms={DAY}", "--out", str(out)])
    assert code == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for topic, partition, ms in (("a", 0, DAY), ("a", 1, DAY), ("b", 0, 7 * DAY)):
        mine = {r["baseOffset"]: r["reason"] for r in printed
                if (r["topic"], r["partition"]) == (topic, partition) and r["deletable"]}
        assert mine == _expected(logdir, topic, partition, now, policy="delete", retention_ms=ms, retention_bytes=-1)
    assert sorted(os.listdir(out)) == [".klogs-output", "disk-usage.html", "disk-usage.png", "segments.jsonl",
                                       "summary.json"]
    assert [json.loads(x) for x in (out / "segments.jsonl").read_text().splitlines()] == printed
    assert (out / "disk-usage.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (out / "disk-usage.html").read_text()
    for name in ("a-0", "a-1", "b-0"):
        assert f">{name}</td>" in html
    summary = json.loads((out / "summary.json").read_text())
    assert summary["nowMs"] == now
    for s in summary["partitions"]:
        mine = [r for r in printed if (r["topic"], r["partition"]) == (s["topic"], s["partition"])]
        assert s["segments"] == len(mine)
        assert s["bytes"] == sum(r["sizeBytes"] for r in mine)
        assert s["deletableSegments"] == sum(1 for r in mine if r["deletable"])
        assert s["deletableBytes"] == sum(r["sizeBytes"] for r in mine if r["deletable"])
        assert s["bytesRemaining"] == s["bytes"] - s["deletableBytes"]
    assert summary["total"]["bytes"] == sum(r["sizeBytes"] for r in printed)
    usage = summary["diskUsage"]
    assert usage[0] == {"fromMs": now, "bytes": sum(r["sizeBytes"] for r in printed)}
    assert usage[-1]["bytes"] == sum(r["sizeBytes"] for r in printed if r["deletableAtMs"] is None)
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".")]      # no staging leftovers


@pytest.mark.parametrize("argv,message", [
    (["--config", "t:retention.msx=5"], "retention.msx"),
    (["--now", "yesterday"], "--now"),
], ids=["bad-config-key", "bad-now"])
def test_cli_exit_code_2(tmp_path: Path, argv: list[str], message: str) -> None:
    logdir = oracle_mod.write_logdir(tmp_path / "broker", [Part("t", [[T0]])])
    klogs = Path(sys.executable).with_name("klogs")
    cmd = [str(klogs)] if klogs.exists() else [sys.executable, "-c",
                                                "import sys; from kafka_format.cli import main; sys.exit(main())"]
    proc = subprocess.run([*cmd, "retention", str(logdir), *argv], capture_output=True, text=True, timeout=120,
                          cwd=REPO)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_report_crash_keeps_previous_output(tmp_path: Path) -> None:
    """SIGKILL between staging and publishing: the previous report stays whole and the only leftover
    is a temporary name that ``cleanup_stale`` removes."""
    from kafka_format.log.retention import plan_retention, run_task, segment_rows, summarize
    from kafka_format.log.topicconfig import load_topic_configs
    from kafka_format.output.publish import cleanup_stale, is_temp_name
    from kafka_format.report.retention_report import write_report

    logdir = oracle_mod.write_logdir(tmp_path / "broker", [Part("t", [[T0], [T0 + DAY]])])
    out = tmp_path / "report"
    now = T0 + 8 * DAY
    rows = [r for t in plan_retention(str(logdir), load_topic_configs(), now) for r in segment_rows(*run_task(t))]
    write_report(str(out), rows, summarize(rows), now)
    before = {n: (out / n).read_bytes() for n in os.listdir(out)}
    assert sorted(before) == [".klogs-output", "disk-usage.html", "disk-usage.png", "segments.jsonl", "summary.json"]
    script = (
        "import sys\n"
        "from kafka_format.report.retention_report import write_report\n"
        "from kafka_format.log.retention import plan_retention, run_task, segment_rows, summarize\n"
        "from kafka_format.log.topicconfig import load_topic_configs\n"
        "logdir, out, now = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
        "rows = [r for t in plan_retention(logdir, load_topic_configs(), now) for r in segment_rows(*run_task(t))]\n"
        "write_report(out, rows, summarize(rows), now)\n")
    proc = subprocess.run([sys.executable, "-c", script, str(logdir), str(out), str(now + DAY)],
                          env={**os.environ, "KLA_CRASH_AT": "retention:staged"}, capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert proc.returncode == -9, proc.stderr
    assert {n: (out / n).read_bytes() for n in os.listdir(out)} == before
    leftovers = [n for n in os.listdir(tmp_path) if n not in ("broker", "report")]
    assert leftovers and all(is_temp_name(n) for n in leftovers)
    assert sorted(cleanup_stale(str(tmp_path))) == sorted(leftovers)
