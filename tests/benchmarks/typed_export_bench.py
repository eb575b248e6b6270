"""Typed export (``--value-as avro``) next to the binary export of the same topic, on both engines,
and the Avro decoding alone (fastavro, the compiled column decoder).

``python tests/benchmarks/typed_export_bench.py [--records 1000000] [--master local[2]] [--rounds 3]``
prints a Markdown section.  The topic holds Avro values in the Schema Registry wire format (two
writer schemas: the first half written with v1, the rest with v2, so every v1 record is resolved
to the latest schema), with ``_schemas`` beside it.

Measured as CPU seconds of this process and all its descendants (the Spark JVM and its Python
workers, the local engine's pool), the least of ``--rounds`` interleaved rounds after a warm-up
(binary, typed, binary, typed, ...: a shared machine's load falls on both alike):

* local engine: :func:`kafka_format.engine.export.export_local`, binary and typed (before any JVM
  exists, so nothing else is counted), and typed with fastavro alone (``KAFKA_FORMAT_DECODER=reference``);
* Spark: :func:`kafka_format.spark.export.export` of the topic, binary; typed as ``klogs export``
  runs it (decoded in the source's reader); typed through the Arrow UDF (``decode_typed``'s way,
  for any DataFrame);
* decoding alone, one core: ``fastavro.schemaless_reader`` per payload, and
  :class:`kafka_format.registry.typed.ColumnDecoder` over Arrow batches of 10,000 values.

The target: typed export within 1.5x of the binary export's CPU time.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_scan import _tree_cpu  # noqa: E402

BAR = 1.5
V1 = {
    "type": "record",
    "name": "Event",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "user", "type": "long"},
        {"name": "amount", "type": "double"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
V2 = {**V1, "fields": V1["fields"] + [{"name": "note", "type": ["null", "string"], "default": None}]}


def make_topic(root: Path, records: int, partitions: int) -> tuple[Path, list[bytes]]:
    """A log dir with ``_schemas`` (v1 id 1, v2 id 2) and ``events`` (wire-format Avro values)."""
    from fastavro import parse_schema, schemaless_writer

    from kafka_format.writer.batches import Record, build_v2_batch
    from kafka_format.writer.logdir import LogDirWriter

    shutil.rmtree(root, ignore_errors=True)
    p1, p2 = parse_schema(V1), parse_schema(V2)
    payloads = []
    for i in range(records):
        v2 = i >= records // 2
        buf = io.BytesIO()
        value = {
            "id": f"e{i}",
            "user": i % 977,
            "amount": i * 0.25,
            "kind": "ABC"[i % 3],
            "tags": ["x", "y"][: i % 3],
        }
        if v2:
            value["note"] = None if i % 2 else "n"
        schemaless_writer(buf, p2 if v2 else p1, value)
        payloads.append(b"\x00" + struct.pack(">i", 2 if v2 else 1) + buf.getvalue())
    schemas = [
        (
            {"keytype": "SCHEMA", "subject": "events-value", "version": v, "magic": 1},
            {"subject": "events-value", "version": v, "id": v, "schema": json.dumps(s), "deleted": False},
        )
        for v, s in ((1, V1), (2, V2))
    ]
    d = LogDirWriter(root, node_id=1, cluster_id="registryTestCluster000", kraft=True)
    w = d.partition("_schemas", 0, topic_id=b"\x05" * 16)
    w.append(
        build_v2_batch(
            [
                Record(key=json.dumps(k).encode(), value=json.dumps(v).encode(), timestamp=1_700_000_000_000)
                for k, v in schemas
            ],
            base_offset=0,
        )
    )
    w.close()
    per = (records + partitions - 1) // partitions
    for p in range(partitions):
        w = d.partition("events", p, topic_id=b"\x09" * 16, segment_bytes=1 << 30)
        chunk = payloads[p * per : (p + 1) * per]
        for b in range(0, len(chunk), 500):
            w.append(
                build_v2_batch(
                    [Record(key=None, value=v, timestamp=1_700_000_000_000) for v in chunk[b : b + 500]],
                    base_offset=b,
                )
            )
        w.close()
    d.close(written_at_ms=1_700_000_100_000)
    return root, payloads


def interleaved(jobs: dict[str, Callable[[], None]], rounds: int) -> dict[str, float]:
    """Least CPU seconds (this process tree) of each job over ``rounds`` rounds, jobs interleaved
    within a round, after one warm-up run of each."""
    me = os.getpid()
    for job in jobs.values():
        job()
    best = {name: float("inf") for name in jobs}
    for _ in range(rounds):
        for name, job in jobs.items():
            c0 = _tree_cpu(me)
            job()
            best[name] = min(best[name], _tree_cpu(me) - c0)
    return best


def decoding_alone(payloads: list[bytes], rounds: int) -> dict[str, float]:
    """CPU seconds (this thread) of fastavro per payload and of the compiled column decoder."""
    import pyarrow as pa
    from fastavro import parse_schema, schemaless_reader

    from kafka_format.registry.store import RegisteredSchema, SchemaStore
    from kafka_format.registry.typed import ColumnDecoder, plan_column

    p1, p2 = parse_schema(V1), parse_schema(V2)

    def fastavro_all() -> None:
        for b in payloads:
            if b[4] == 1:
                schemaless_reader(io.BytesIO(b[5:]), p1, p2)
            else:
                schemaless_reader(io.BytesIO(b[5:]), p2, None)

    store = SchemaStore.from_schemas(
        [RegisteredSchema("events-value", v, v, json.dumps(s), "AVRO") for v, s in ((1, V1), (2, V2))]
    )
    plan = plan_column(store, "value", "avro", topic="events")
    chunks = [pa.array(payloads[i : i + 10_000], pa.binary()) for i in range(0, len(payloads), 10_000)]

    def compiled_all() -> None:
        dec = ColumnDecoder(plan)
        for c in chunks:
            dec.decode(c)

    best = {"fastavro": float("inf"), "compiled": float("inf")}
    for _ in range(rounds):
        for name, job in (("fastavro", fastavro_all), ("compiled", compiled_all)):
            t0 = time.thread_time()
            job()
            best[name] = min(best[name], time.thread_time() - t0)
    return best


def run_local(root: Path, out: Path, rounds: int) -> dict[str, float]:
    from kafka_format.engine.export import export_local
    from kafka_format.registry import schemas_from_log_dirs
    from kafka_format.registry.typed import plan_columns

    opts = {"topics": "events"}

    def binary() -> None:
        shutil.rmtree(out, ignore_errors=True)
        export_local([str(root)], str(out), options=opts)

    def typed(reference: bool = False) -> Callable[[], None]:
        def run() -> None:
            shutil.rmtree(out, ignore_errors=True)
            if reference:
                os.environ["KAFKA_FORMAT_DECODER"] = "reference"
            try:
                plan = plan_columns(schemas_from_log_dirs([str(root)]), value_as="avro", topic="events")
                result = export_local([str(root)], str(out), options=opts, value_as="avro", typed=plan)
            finally:
                os.environ.pop("KAFKA_FORMAT_DECODER", None)
            assert result.typed is not None and result.typed["decodeErrors"] == {"value": 0}

        return run

    return interleaved({"binary": binary, "typed": typed(), "typed (fastavro)": typed(True)}, rounds)


def run_spark(spark: Any, root: Path, out: Path, rounds: int) -> dict[str, float]:
    from kafka_format.registry import schemas_from_log_dirs
    from kafka_format.spark.export import export, read_source
    from kafka_format.spark.typed import typed_columns

    opts = {"topics": "events"}

    def binary() -> None:
        shutil.rmtree(out, ignore_errors=True)
        export(read_source(spark, [str(root)], opts), str(out))

    def typed(in_source: bool) -> Callable[[], None]:
        def run() -> None:
            shutil.rmtree(out, ignore_errors=True)
            plan = typed_columns(schemas_from_log_dirs([str(root)]), value_as="avro", topic="events")
            df = read_source(spark, [str(root)], opts, typed=plan if in_source else None)
            result = export(df, str(out), value_as="avro", typed=plan)
            assert result.typed is not None and result.typed["decodeErrors"] == {"value": 0}

        return run

    return interleaved({"binary": binary, "typed": typed(True), "typed (Arrow UDF)": typed(False)}, rounds)


def markdown(records: int, master: str, local: dict[str, float], spark: dict[str, float],
             alone: dict[str, float]) -> list[str]:
    def row(engine: str, times: dict[str, float]) -> list[str]:
        b = times["binary"]
        return [
            f"| {engine} | {name} | {t:.2f} | {t / b:.2f}x | {records / t:,.0f} | "
            f"{'' if name != 'typed' else ('yes' if t / b <= BAR else 'NO')} |"
            for name, t in times.items()
        ]

    return [
        "## Typed export (`--value-as avro`) vs binary export vs Avro decoding alone",
        "",
        f"{records:,} records, Avro values of two writer schemas (half resolved to the latest); CPU seconds of",
        "the whole process tree (JVM and Python workers included), least of interleaved rounds; a shared",
        "machine (other engineers' jobs running), so CPU time, not wall time, is compared.",
        "",
        "| engine | export | CPU s | / binary | rows per CPU s | within 1.5x |",
        "|---|---|---:|---:|---:|---|",
        *row("local", local),
        *row(f"Spark {master}", spark),
        "",
        "| decoding alone (one core) | CPU s | rows/s |",
        "|---|---:|---:|",
        f"| fastavro `schemaless_reader` per payload | {alone['fastavro']:.2f} | {records / alone['fastavro']:,.0f} |",
        f"| compiled column decoder (`ColumnDecoder`, Arrow batches of 10,000) | {alone['compiled']:.2f} "
        f"| {records / alone['compiled']:,.0f} |",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--data-dir", type=Path, default=Path("build/bench-data"))
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    cores = 2
    root, payloads = make_topic(args.data_dir / f"typed-{args.records}", args.records, 2 * cores)
    out = args.data_dir / "typed-out"
    alone = decoding_alone(payloads, args.rounds)
    del payloads
    local = run_local(root, out, args.rounds)
    from kafka_format.spark.session import build_session

    spark = build_session(master=args.master, profile="local", app_name="klogs-typed-export-bench",
                          extra_conf={"spark.ui.enabled": "false"})
    try:
        on_spark = run_spark(spark, root, out, args.rounds)
    finally:
        spark.stop()
    shutil.rmtree(out, ignore_errors=True)
    print("\n".join(markdown(args.records, args.master, local, on_spark, alone)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
