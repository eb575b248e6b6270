"""``--engine``: which engine a run uses, the line ``auto`` prints, and the local engine's promise of
no JVM (pyspark never imported).  The outputs of both engines are compared in
tests/jobs/test_engine_parity.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from kafka_format.engine import LOCAL_MAX_BYTES, choose_engine, input_bytes, run_tasks

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
RUN = "import sys; from kafka_format.cli import main; sys.exit(main(sys.argv[1:]))"


def _klogs(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env={**os.environ, "KLOGS_LOG_DIR": str(tmp_path / "logs"), **env})


def test_auto_picks_local_for_small_inputs_without_master() -> None:
    choice = choose_engine("auto", master=None, logdirs=[str(SAMPLES)])
    size = sum(p.stat().st_size for p in SAMPLES.rglob("*.log"))
    assert input_bytes([str(SAMPLES)]) == size < LOCAL_MAX_BYTES
    assert choice.engine == "local" and "1.0 GiB" in choice.reason and "no --master" in choice.reason


@pytest.mark.parametrize(("kwargs", "env", "reason"), [
    ({"master": "local[2]"}, {}, "--master local[2]"),
    ({"master": None, "needs_spark": "Delta output (delta-spark)"}, {}, "Delta output (delta-spark)"),
    ({"master": None}, {"KLOGS_LOCAL_MAX_BYTES": "1000"}, "of segments > 1000 B"),
], ids=["master", "needs-spark", "over-threshold"])
def test_auto_picks_spark(kwargs: dict, env: dict[str, str], reason: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    choice = choose_engine("auto", logdirs=[str(SAMPLES)], **kwargs)
    assert choice.engine == "spark" and reason in choice.reason


def test_local_is_refused_where_spark_is_needed() -> None:
    with pytest.raises(ValueError, match="drop --master"):
        choose_engine("local", master="local[2]", logdirs=[str(SAMPLES)])
    with pytest.raises(ValueError, match="Delta output"):
        choose_engine("local", master=None, logdirs=[str(SAMPLES)], needs_spark="Delta output (delta-spark)")
    assert choose_engine("spark", master=None, logdirs=[str(SAMPLES)]).engine == "spark"


def _square(x: int) -> int:
    return x * x


def test_run_tasks_keeps_order_serial_and_over_a_pool() -> None:
    tasks = list(range(20))
    serial = run_tasks(_square, tasks, weights=[1] * 20)                 # little work: in this process
    pooled = run_tasks(_square, tasks, weights=[1 << 30] * 20, max_workers=2)
    threaded = run_tasks(_square, tasks, weights=[1 << 30] * 20, gil_free=[1 << 30] * 20, max_workers=2)
    assert serial == pooled == threaded == [x * x for x in tasks]


def _where(_: int) -> tuple[int, str]:
    return os.getpid(), threading.current_thread().name


def test_tasks_whose_work_mostly_releases_the_gil_run_on_threads() -> None:
    """Threads when at least THREADS_SHARE of the work runs without the GIL (and there is
    THREADS_MIN_BYTES of it), processes when per-file Python weighs more, this thread below the
    thresholds."""
    from kafka_format.engine import PARALLEL_MIN_BYTES, THREADS_MIN_BYTES, THREADS_SHARE

    me = os.getpid()
    n = 8
    big = [PARALLEL_MIN_BYTES] * n
    threaded = run_tasks(_where, list(range(n)), weights=big, gil_free=big, max_workers=2)
    assert {pid for pid, _ in threaded} == {me} and all(name.startswith("klogs-task") for _, name in threaded)
    mostly_python = [int(w * THREADS_SHARE) - 1 for w in big]
    pooled = run_tasks(_where, list(range(n)), weights=big, gil_free=mostly_python, max_workers=2)
    assert me not in {pid for pid, _ in pooled}
    little = [THREADS_MIN_BYTES // n - 1] * n
    here = run_tasks(_where, list(range(n)), weights=little, gil_free=little, max_workers=2)
    assert set(here) == {(me, threading.current_thread().name)}


def _fails_on_three(started: list[int], x: int) -> int:
    started.append(x)
    if x == 3:
        raise ValueError("task 3 failed")
    return x


def test_a_failed_task_on_threads_raises_and_the_tasks_not_started_never_run() -> None:
    import functools

    from kafka_format.engine import MAX_CHUNK_TASKS

    started: list[int] = []
    n = 10 * MAX_CHUNK_TASKS
    with pytest.raises(ValueError, match="task 3 failed"):
        run_tasks(functools.partial(_fails_on_three, started), list(range(n)), weights=[1 << 30] * n,
                  gil_free=[1 << 30] * n, max_workers=2)
    assert 3 in started and len(started) <= 4 + MAX_CHUNK_TASKS      # submitted ahead at most


def _computed_twice(_: int) -> bool:
    """Whether two run_memo calls under one key each compute (no run memo in this process)."""
    from kafka_format.storage import fsio

    calls: list[int] = []
    for _ in range(2):
        fsio.run_memo(("test key",), lambda: calls.append(1))
    return len(calls) == 2


def test_pool_workers_start_without_the_run_memo() -> None:
    """A job runs inside listing_cache (its inputs listed and read once); a pool worker forked inside
    it starts without that memo, which would keep every partition its tasks re-open for the rest of
    the run (500 MB a worker on the 50-broker tree), and so does a task thread.  The thread that
    started the run keeps it."""
    from kafka_format.storage.fsio import listing_cache

    with listing_cache():
        assert run_tasks(_computed_twice, list(range(8)), weights=[1 << 30] * 8, max_workers=2) == [True] * 8
        assert run_tasks(_computed_twice, list(range(8)), weights=[1 << 30] * 8, gil_free=[1 << 30] * 8,
                         max_workers=2) == [True] * 8
        assert not _computed_twice(0)


def test_the_local_engine_never_imports_pyspark(tmp_path: Path) -> None:
    """Every job on data_samples with the default engine, in one fresh process: the choice is local,
    said once per run on stderr, and neither pyspark nor py4j (nor pandas) is ever imported."""
    script = f"""
import contextlib, io, sys
from kafka_format.cli import main
out = {str(tmp_path)!r}
runs = [["offsets", {str(SAMPLES)!r}, "--timestamp", "latest"],
        ["retention", {str(SAMPLES)!r}],
        ["compaction", {str(SAMPLES)!r}, "--out", out + "/c", "--config", "*:cleanup.policy=compact", "--force"],
        ["audit", {str(SAMPLES)!r}, "--out", out + "/a", "--fail-on", "never"],
        ["export", {str(SAMPLES)!r}, "--out", out + "/e", "--key-as", "string"]]
for argv in runs:
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0, argv
print(sorted(m for m in ("pyspark", "py4j", "pandas") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO,
                          env={**os.environ, "KLOGS_LOG_DIR": str(tmp_path / "logs")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    lines = [line for line in done.stderr.splitlines() if not line.endswith(f"; report: {tmp_path}/a/report.html")]
    assert len(lines) == 5 and all(line.startswith("klogs: engine: local (") for line in lines), lines
    assert not (tmp_path / "logs").exists()                  # no JVM log: no Spark session


def test_local_with_what_needs_spark_is_one_line_exit_2(tmp_path: Path) -> None:
    done = _klogs(["export", str(SAMPLES), "--out", str(tmp_path / "e"), "--format", "delta", "--engine", "local"],
                  tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["klogs export: --engine local cannot run this: Delta output "
                                        "(delta-spark); use --engine spark"]
    assert not (tmp_path / "e").exists() or not any((tmp_path / "e").iterdir())


def test_a_failed_local_cleaner_task_names_its_partition(tmp_path: Path) -> None:
    from test_spark_failures import write_garbled_partition

    write_garbled_partition(tmp_path / "broker")
    out = tmp_path / "out"
    done = _klogs(["compaction", str(tmp_path / "broker"), "--config", "*:cleanup.policy=compact", "--force",
                   "--out", str(out), "--engine", "local"], tmp_path)
    assert done.returncode == 2 and not out.exists()
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"klogs compaction: failed in partition t-3 ({tmp_path / 'broker'})")
    assert "00000000000000000000.log" in line


def _small_segments(root: Path, segments: int, value: bytes = b"v") -> Path:
    """One partition of ``segments`` segments of one 2-record batch each (~150 B a segment with
    the default ``value``)."""
    from kafka_format.writer.batches import Record, build_v2_batch
    from kafka_format.writer.logdir import LogDirWriter

    d = LogDirWriter(root, node_id=1, cluster_id="engineWeightTest000000", kraft=True)
    w = d.partition("small", 0, topic_id=b"\x05" * 16, segment_bytes=100)
    for base in range(0, 2 * segments, 2):
        w.append(build_v2_batch([Record(key=b"k", value=value, timestamp=1_700_000_000_000 + o)
                                 for o in (base, base + 1)], base_offset=base))
    w.close()
    d.close(written_at_ms=1_700_000_100_000)
    return root


class _Spied(list[int]):
    """The total weight each run_tasks / iter_tasks call was given; ``threads``: whether each
    would have run on threads (engine.on_threads); ``processes``: whether it allowed a pool."""

    threads: list[bool]
    processes: list[bool]


def _weights(monkeypatch: pytest.MonkeyPatch) -> _Spied:
    """Spy on the local engine's run_tasks / iter_tasks calls (they still run, in this process)."""
    import kafka_format.engine as engine

    seen = _Spied()
    seen.threads, seen.processes = [], []
    real = engine.iter_tasks

    def spy(fn, tasks, *, weights=None, max_workers=None, gil_free=None, processes=True):  # type: ignore[no-untyped-def]
        weights = list(weights or ())
        seen.append(sum(weights))
        seen.threads.append(engine.on_threads(weights, gil_free))
        seen.processes.append(processes)
        return real(fn, tasks, weights=weights, max_workers=1)

    monkeypatch.setattr(engine, "iter_tasks", spy)
    return seen


def test_many_small_segments_weigh_enough_for_the_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A segment's fixed cost counts as work: 200 segments of ~150 B (an audit of ~0.3 s in one
    process) reach the pool's threshold for the audit and an export, as their bytes alone (~30 KB)
    never would; offsets, which look up indexes only, weigh by partitions and segments, not by the
    segments' bytes; ``read_table`` decodes in this process whatever it reads (here in one thread)."""
    from kafka_format.engine import PARALLEL_MIN_BYTES
    from kafka_format.engine.audit import audit_local
    from kafka_format.engine.export import export_local
    from kafka_format.engine.offsets import list_offsets_local
    from kafka_format.engine.read import read_table

    tree = _small_segments(tmp_path / "many", 200)
    assert len(list((tree / "small-0").glob("*.log"))) == 200
    seen = _weights(monkeypatch)
    _findings, files = audit_local([str(tree)], now_ms=1_700_000_200_000)
    assert len([f for f in files.to_pylist() if f["file"].endswith(".log")]) == 200
    assert seen[-1] >= PARALLEL_MIN_BYTES
    few = _small_segments(tmp_path / "few", 3)
    audit_local([str(few)], now_ms=1_700_000_200_000)
    assert seen[-1] < PARALLEL_MIN_BYTES            # three segments: in this process
    rows = list_offsets_local(str(tree), ["latest"])
    assert [r["offset"] for r in rows] == [400]
    small_values = seen[-1]
    big = _small_segments(tmp_path / "big", 200, value=bytes(50_000))     # 500x the bytes, same segments
    assert [r["offset"] for r in list_offsets_local(str(big), ["latest"])] == [400]
    assert seen[-1] == small_values
    list_offsets_local(str(few), ["latest"])
    assert small_values > 10 * seen[-1] > 0
    # reads: a split's segments count too (one split per partition here), and their Python makes
    # the export's tasks processes, not threads
    export_local([str(tree)], str(tmp_path / "export"))
    assert seen[-1] >= PARALLEL_MIN_BYTES and not seen.threads[-1]
    table = read_table({"paths": json.dumps([str(tree)])})
    assert table.num_rows == 400 and not seen.processes[-1]   # read_table: never over the process pool
    assert seen[-1] >= PARALLEL_MIN_BYTES and not seen.threads[-1]     # and its many small files: one thread


def test_bytes_written_again_weigh_more_than_bytes_scanned(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Three segments holding 18 MB of values: an audit (a checking scan) runs in this process,
    while an export, the cleaner and the table view, which decode every record and write it again,
    weigh its bytes REWRITE_BYTE_COST times and reach the pool's threshold."""
    import pyarrow.parquet as pq

    from kafka_format.engine import PARALLEL_MIN_BYTES, REWRITE_BYTE_COST
    from kafka_format.engine.audit import audit_local
    from kafka_format.engine.compaction import cleaner_pass_local
    from kafka_format.engine.export import export_local
    from kafka_format.engine.table_view import full_local
    from kafka_format.log.topicconfig import load_topic_configs

    wide = _small_segments(tmp_path / "wide", 3, value=bytes(3_000_000))
    size = sum(p.stat().st_size for p in wide.rglob("*.log"))
    assert size * REWRITE_BYTE_COST >= PARALLEL_MIN_BYTES > size + 8 * (1 << 20)
    seen = _weights(monkeypatch)
    audit_local([str(wide)], now_ms=1_700_000_200_000)
    assert seen[-1] < PARALLEL_MIN_BYTES
    export_local([str(wide)], str(tmp_path / "export"))
    assert seen[-1] >= PARALLEL_MIN_BYTES and seen.threads[-1]          # its bytes: threads
    assert pq.read_table(tmp_path / "export").sort_by("offset")["offset"].to_pylist() == list(range(6))
    configs = load_topic_configs([str(wide)], overrides=["*:cleanup.policy=compact"])
    rows = cleaner_pass_local(str(wide), configs, 1_700_000_200_000, records_dir=str(tmp_path / "cleaner"),
                              force=True)
    assert seen[-1] >= PARALLEL_MIN_BYTES and len(rows) == 1 and not seen.threads[-1]
    summary = full_local(str(wide), str(tmp_path / "full"))
    assert seen[-1] >= PARALLEL_MIN_BYTES and not seen.threads[-1]
    decided = pq.read_table(tmp_path / "full").sort_by("offset")
    assert decided["decision"].to_pylist() == ["remove"] * 5 + ["keep"]      # one key: its last record
    assert [(r["recordsBefore"], r["recordsAfter"]) for r in summary] == [(6, 1)]


def test_an_export_with_the_reference_decoders_stays_off_threads(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference decoders are Python: an export that uses them (``KAFKA_FORMAT_DECODER=reference``,
    no compiled build, or typed columns whose table type does not lay out) keeps the pool, where
    threads would take turns on the GIL, and ``read_table`` one thread."""
    from testhelpers import load_module

    import kafka_format.engine as engine
    from kafka_format.engine.export import export_local
    from kafka_format.engine.read import read_table
    from kafka_format.records import implementation
    from kafka_format.registry import schemas_from_log_dirs
    from kafka_format.registry.typed import ColumnDecoder, plan_columns

    wide = _small_segments(tmp_path / "wide", 3, value=bytes(3_000_000))
    seen = _weights(monkeypatch)
    export_local([str(wide)], str(tmp_path / "fast"))
    assert seen.threads[-1]
    assert implementation.IMPLEMENTATION == "fast"
    read_table({"paths": json.dumps([str(wide)])})
    assert seen.threads[-1]
    monkeypatch.setattr(implementation, "_implementation", "reference")
    export_local([str(wide)], str(tmp_path / "reference"))
    assert not seen.threads[-1]
    read_table({"paths": json.dumps([str(wide)])})
    assert not seen.threads[-1]
    monkeypatch.undo()
    corpus = load_module("registry_corpus", REPO / "tests" / "registry" / "registry_corpus.py")
    c = corpus.make_corpus(tmp_path / "logs", "avro", n1=1500, n2=1500)
    plan = plan_columns(schemas_from_log_dirs([str(c.root)]), value_as="avro", topic="orders")
    seen = _weights(monkeypatch)
    monkeypatch.setattr(engine, "THREADS_SHARE", 0.0)    # a small topic: its bytes weigh little
    monkeypatch.setattr(engine, "THREADS_MIN_BYTES", 0)
    export_local([str(c.root)], str(tmp_path / "typed"), options={"topics": "orders", "maxBytesPerPartition": "16k"},
                 value_as="avro", typed=plan)
    assert seen.threads[-1]
    monkeypatch.setattr(ColumnDecoder, "compiled_columns", property(lambda self: False))
    export_local([str(c.root)], str(tmp_path / "typed-reference"),
                 options={"topics": "orders", "maxBytesPerPartition": "16k"}, value_as="avro", typed=plan)
    assert not seen.threads[-1]


@pytest.mark.threads
def test_read_table_decodes_large_segments_on_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``read_table`` over segments whose bytes are its work: its splits decoded on this process's
    threads (never sent back from a pool), the rows those of one thread, in split order."""
    import kafka_format.engine as engine
    import kafka_format.engine.read as read

    tree = _small_segments(tmp_path / "wide", 6, value=bytes(range(256)) * 20_000)   # 6 segments of ~10 MB
    options = {"paths": json.dumps([str(tree)])}
    names: list[str] = []
    real = read._split_table

    def task(*args: Any) -> Any:
        names.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(read, "_split_table", task)
    threaded = read.read_table(options)
    assert len(names) >= 2 and all(n.startswith("klogs-task") for n in names)
    monkeypatch.setattr(engine, "THREADS_MIN_BYTES", 1 << 60)
    del names[:]
    alone = read.read_table(options)
    assert names and not any(n.startswith("klogs-task") for n in names)
    assert threaded.num_rows == 12 and threaded.equals(alone)
    assert threaded["offset"].to_pylist() == list(range(12))
    assert threaded["value"].to_pylist() == [bytes(range(256)) * 20_000] * 12


@pytest.mark.threads
def test_a_typed_export_on_threads_writes_what_one_thread_writes(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Several splits of an Avro topic of two writer schemas exported by task threads (the
    thresholds lowered to reach them with a small topic) and by this thread alone: the same rows,
    every value as the serializer wrote it, no row failed."""
    import pyarrow.dataset as ds
    from testhelpers import load_module

    import kafka_format.engine as engine
    import kafka_format.engine.export as export
    from kafka_format.registry import schemas_from_log_dirs
    from kafka_format.registry.typed import plan_columns

    corpus = load_module("registry_corpus", REPO / "tests" / "registry" / "registry_corpus.py")
    c = corpus.make_corpus(tmp_path / "logs", "avro", n1=1500, n2=1500)
    plan = plan_columns(schemas_from_log_dirs([str(c.root)]), value_as="avro", topic="orders")
    options = {"topics": "orders", "maxBytesPerPartition": "16k"}
    names: list[str] = []
    real = export.export_split

    def task(t: Any) -> Any:
        names.append(threading.current_thread().name)
        return real(t)

    monkeypatch.setattr(export, "export_split", task)
    tables = {}
    for how, least, share in (("threads", 0, 0.0), ("one thread", 1 << 60, 2.0)):
        monkeypatch.setattr(engine, "THREADS_MIN_BYTES", least)
        monkeypatch.setattr(engine, "THREADS_SHARE", share)
        monkeypatch.setattr(engine, "PARALLEL_MIN_BYTES", 1 << 60)
        del names[:]
        result = export.export_local([str(c.root)], str(tmp_path / how), options=options, value_as="avro",
                                     typed=plan)
        assert result.rows == 3000 and result.typed is not None and result.typed["decodeErrors"] == {"value": 0}
        threaded = [n.startswith("klogs-task") for n in names]
        assert len(names) > 4 and all(threaded) == (how == "threads") and any(threaded) == (how == "threads")
        tables[how] = ds.dataset(str(tmp_path / how), format="parquet", partitioning="hive").to_table()
    assert tables["threads"].sort_by("offset").equals(tables["one thread"].sort_by("offset"))
    assert tables["threads"].sort_by("offset")["value"].to_pylist() == [{**v, "note": v.get("note")}
                                                                          for v in c.values]
