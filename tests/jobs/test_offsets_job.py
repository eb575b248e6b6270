"""``klogs offsets``: the DataFrame function, the job in-process (jsonl, table, --out), the CLI's exit code.

Oracle: the brute-force ListOffsets of ``tests/format/test_offsets.py`` (every record decoded,
spec §6 applied plainly), over the committed data_samples.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from testhelpers import load_module

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
ISO = "2023-11-14T22:14:10Z"          # 1 700 000 050 000 ms: inside most sample partitions
ISO_MS = 1_700_000_050_000


oracle_mod = load_module("_offsets_oracle", REPO / "tests" / "format" / "test_offsets.py")


def _oracles() -> dict[tuple[str, int], object]:
    """Per topic-partition, the oracle of the longest replica (highest decoded log end offset)."""
    from kafka_format.read.planning import open_partitions

    best: dict[tuple[str, int], object] = {}
    for replica in open_partitions(str(SAMPLES)):
        o = oracle_mod.Oracle(replica)
        key = (replica.topic, replica.partition)
        if key not in best or o.leo > best[key].leo:   # type: ignore[attr-defined]
            best[key] = o
    return best


ORACLES = _oracles()


def _expected(specs: list[int], isolation: str = "read_uncommitted", topics: set[str] | None = None
              ) -> list[dict[str, object]]:
    rows = []
    for (topic, partition), o in sorted(ORACLES.items()):
        if topics is not None and topic not in topics:
            continue
        for spec in specs:
            a = o.answer(spec, isolation)   # type: ignore[attr-defined]
            rows.append({"topic": topic, "partition": partition, "timestamp": spec, "offset": a.offset,
                         "recordTimestamp": a.record_timestamp, "leaderEpoch": a.leader_epoch})
    return rows


def test_dataframe_matches_oracle(spark) -> None:  # type: ignore[no-untyped-def]
    from kafka_format.spark.frames import offsets_for_timestamps

    stamps = sorted({t for o in ORACLES.values() for t in o.timestamps()})   # type: ignore[attr-defined]
    specs = [stamps[len(stamps) // 3] + 1, -3, -1, -2, stamps[-1] + 1, 0]
    df = offsets_for_timestamps(spark, [str(SAMPLES)], [str(s) for s in specs[:1]] + specs[1:],
                                isolation_level="read_committed")
    assert df.columns == ["topic", "partition", "timestamp", "offset", "recordTimestamp", "leaderEpoch"]
    assert [f.dataType.simpleString() for f in df.schema.fields] == ["string", "int", "bigint", "bigint",
                                                                   "bigint", "int"]
    assert [r.asDict() for r in df.collect()] == _expected(specs, "read_committed")


def test_job_jsonl_to_out_and_table_to_stdout(spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]  # type: ignore[no-untyped-def]
                                              ) -> None:
    job = importlib.import_module("kafka_format.jobs.offsets")
    out = tmp_path / "answers.jsonl"
    argv = [str(SAMPLES), "--timestamp", ISO, "--timestamp", "latest", "--timestamp", "max-timestamp",
            "--timestamp", "-4", "--topic", "v2-codecs", "--topic", "transactions"]
    assert job.main([*argv, "--out", str(out), "--isolation-level", "read_committed"]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    expected = _expected([ISO_MS, -1, -3, -4], "read_committed", {"v2-codecs", "transactions"})
    assert [json.loads(line) for line in lines] == expected
    assert all(list(json.loads(line)) == ["topic", "partition", "timestamp", "offset", "recordTimestamp",
                                          "leaderEpoch"] for line in lines)
    # no temp leftovers; beside the file only its ownership marker
    assert [p.name for p in tmp_path.iterdir() if p.name != out.name] == [f".{out.name}.klogs-output"]
    capsys.readouterr()
    assert job.main([*argv, "--format", "table"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["topic", "partition", "timestamp", "offset", "recordTimestamp", "leaderEpoch"]
    assert set(table[1].replace(" ", "")) == {"-"}                      # a rule under the headings
    rows = [line.split() for line in table[2:]]
    want = _expected([ISO_MS, -1, -3, -4], "read_uncommitted", {"v2-codecs", "transactions"})
    names = {-1: "latest", -3: "max-timestamp", -4: "earliest-local"}     # a person reads names and UTC dates

    def utc(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")[:-6] + "Z"

    assert rows == [[r["topic"], str(r["partition"]), names.get(r["timestamp"]) or utc(r["timestamp"]),
                     "-" if r["offset"] is None else str(r["offset"]),         # no answer: "-" (null in jsonl)
                     "-" if r["recordTimestamp"] is None else utc(r["recordTimestamp"]),
                     "-" if r["leaderEpoch"] is None else str(r["leaderEpoch"])] for r in want]
    assert any(row[4] != "-" for row in rows) and any(row[2] == "latest" for row in rows)
    for column in ("partition", "offset", "leaderEpoch"):                 # numbers align right, under the heading
        end = table[0].index(column) + len(column)
        assert all(line[end - 1] != " " and line[end:end + 1] in ("", " ") for line in table)


def test_cli_bad_timestamp_exits_2_naming_it() -> None:
    klogs = Path(sys.executable).with_name("klogs")
    cmd = [str(klogs)] if klogs.exists() else [sys.executable, "-c",
                                               "import sys; from kafka_format.cli import main; sys.exit(main())"]
    proc = subprocess.run([*cmd, "offsets", str(SAMPLES), "--timestamp", "yesterday"], capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 2
    assert "yesterday" in proc.stderr and "--timestamp" in proc.stderr
    assert proc.stdout == ""
