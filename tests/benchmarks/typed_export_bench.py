"""Typed export (``--value-as avro``) next to the binary export of the same topic and to fastavro alone.

``python tests/benchmarks/typed_export_bench.py [--records 1000000] [--master local[2]]`` prints a
Markdown section.  The topic holds Avro values in the Schema Registry wire format (two writer
schemas: the first half written with v1, the rest with v2, so every v1 record is resolved to the
latest schema), with ``_schemas`` beside it.  Measured (best wall, least CPU of the Spark process
tree after a warm-up, :func:`spark_scan._timed`):

* binary: :func:`kafka_format.spark.export.export` of the topic, key and value as bytes;
* typed: the same export with ``value_as="avro"`` (schemas from ``_schemas`` in the log dir);
* fastavro alone: ``fastavro.schemaless_reader`` over the same payloads in one process (CPU time),
  the floor of any Python Avro decoding.

The target: typed export within 1.5x of the binary export's time.
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_scan import _timed  # noqa: E402

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


def fastavro_alone(payloads: list[bytes]) -> float:
    """CPU seconds of fastavro decoding every payload (v1 ones resolved to v2)."""
    from fastavro import parse_schema, schemaless_reader

    p1, p2 = parse_schema(V1), parse_schema(V2)
    t0 = time.process_time()
    for b in payloads:
        if b[4] == 1:
            schemaless_reader(io.BytesIO(b[5:]), p1, p2)
        else:
            schemaless_reader(io.BytesIO(b[5:]), p2, None)
    return time.process_time() - t0


def run(spark: Any, records: int, data_dir: Path, repeats: int) -> dict[str, float]:
    from kafka_format.registry import schemas_from_log_dirs
    from kafka_format.spark.export import export
    from kafka_format.spark.typed import typed_columns

    cores = spark.sparkContext.defaultParallelism
    root, payloads = make_topic(data_dir / f"typed-{records}", records, 2 * cores)
    out = data_dir / "typed-out"

    def load() -> Any:
        return spark.read.format("kafka-log").option("topics", "events").load(str(root))

    def binary() -> None:
        shutil.rmtree(out, ignore_errors=True)
        export(load(), str(out))

    def typed() -> None:
        shutil.rmtree(out, ignore_errors=True)
        plan = typed_columns(schemas_from_log_dirs([str(root)]), value_as="avro", topic="events")
        result = export(load(), str(out), value_as="avro", typed=plan)
        assert result.typed is not None and result.typed["decodeErrors"] == {"value": 0}

    b_wall, b_cpu = _timed(binary, repeats)
    t_wall, t_cpu = _timed(typed, repeats)
    alone = min(fastavro_alone(payloads) for _ in range(repeats))
    shutil.rmtree(out, ignore_errors=True)
    return {
        "records": records,
        "cores": cores,
        "binary_wall": b_wall,
        "binary_cpu": b_cpu,
        "typed_wall": t_wall,
        "typed_cpu": t_cpu,
        "fastavro_cpu": alone,
        "ratio_wall": t_wall / b_wall,
        "ratio_cpu": t_cpu / b_cpu,
    }


def markdown(r: dict[str, float], master: str) -> list[str]:
    n = r["records"]
    return [
        "## Typed export (`--value-as avro`) vs binary export vs fastavro alone",
        "",
        "| master | records | binary wall s / CPU s | typed wall s / CPU s | typed / binary (wall, CPU) "
        "| typed rows/s (wall) | fastavro alone rows/s (1 core) | within 1.5x (wall) |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
        f"| {master} | {n:,.0f} | {r['binary_wall']:.2f} / {r['binary_cpu']:.2f} "
        f"| {r['typed_wall']:.2f} / {r['typed_cpu']:.2f} | {r['ratio_wall']:.2f}x / {r['ratio_cpu']:.2f}x "
        f"| {n / r['typed_wall']:,.0f} | {n / r['fastavro_cpu']:,.0f} "
        f"| {'yes' if r['ratio_wall'] <= BAR else 'NO'} |",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--data-dir", type=Path, default=Path("build/bench-data"))
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from kafka_format.spark.session import build_session

    spark = build_session(
        master=args.master,
        profile="local",
        app_name="klogs-typed-export-bench",
        extra_conf={"spark.ui.enabled": "false"},
    )
    try:
        result = run(spark, args.records, args.data_dir, args.repeats)
    finally:
        spark.stop()
    print("\n".join(markdown(result, args.master)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
