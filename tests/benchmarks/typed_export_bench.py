"""Typed export (``--value-as avro|protobuf|json-schema``) next to the binary export of the same
topic, on both engines, and the decoding alone (the reference decoders, the compiled column decoders).

``python tests/benchmarks/typed_export_bench.py [--records 1000000] [--formats avro,protobuf,json-schema]
[--master local[2]] [--rounds 3]`` prints a Markdown section.  Per format, a topic holds the same
logical values (an ``Event``: string, long, double, enum, list of strings, then a nullable string)
in the Schema Registry wire format, written with two writer schemas (the first half with v1, the
rest with v2, which adds the nullable string; Avro's v1 records are resolved to v2), with
``_schemas`` beside it.  Protobuf values carry Confluent's message index (the single ``0`` byte).

Measured as CPU seconds of this process and all its descendants (the Spark JVM and its Python
workers, the local engine's pool), the least of ``--rounds`` interleaved rounds after a warm-up
(binary, typed, binary, typed, ...: a shared machine's load falls on both alike).  The local engine
is timed by ``getrusage`` (this process and its reaped pool workers, to the microsecond); Spark's
JVM outlives a job, so its tree is read from ``/proc`` (10 ms ticks per process):

* local engine: :func:`kafka_format.engine.export.export_local`, binary and typed (before any JVM
  exists, so nothing else is counted), and typed with the reference decoders alone
  (``KAFKA_FORMAT_DECODER=reference``: fastavro, upb, ``json.loads``);
* Spark: :func:`kafka_format.spark.export.export` of the topic, binary; typed as ``klogs export``
  runs it (decoded in the source's reader); typed through the Arrow UDF (``decode_typed``'s way,
  for any DataFrame);
* decoding alone, one core: the reference per payload (Avro: ``fastavro.schemaless_reader`` alone;
  Protobuf and JSON Schema: :class:`kafka_format.registry.typed.ColumnDecoder` without its compiled
  path, conversion to Arrow included), and ``ColumnDecoder`` over Arrow batches of 10,000 values.

The target: typed export within 1.5x of the binary export's CPU time.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import resource
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
FORMATS = ("avro", "protobuf", "json-schema")
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
PROTO_V1 = """syntax = "proto3";
package bench;

message Event {
  string id = 1;
  int64 user = 2;
  double amount = 3;
  Kind kind = 4;
  repeated string tags = 5;
  enum Kind { A = 0; B = 1; C = 2; }
}
"""
PROTO_V2 = PROTO_V1.replace("  repeated string tags = 5;\n", "  repeated string tags = 5;\n  optional string note = 6;\n")
JSON_V1 = {
    "type": "object",
    "properties": {
        "id": {"type": "string"}, "user": {"type": "integer"}, "amount": {"type": "number"},
        "kind": {"type": "string", "enum": ["A", "B", "C"]}, "tags": {"type": "array", "items": {"type": "string"}},
    },
}
JSON_V2 = {**JSON_V1, "properties": {**JSON_V1["properties"], "note": {"type": ["null", "string"]}}}
# the registry's schemaType and text of v1 and v2 per format
SCHEMAS = {
    "avro": (None, json.dumps(V1), json.dumps(V2)),
    "protobuf": ("PROTOBUF", PROTO_V1, PROTO_V2),
    "json-schema": ("JSON", json.dumps(JSON_V1), json.dumps(JSON_V2)),
}


def value_of(i: int, records: int) -> tuple[dict[str, Any], bool]:
    """The logical value of record ``i`` and whether it is written with v2."""
    v2 = i >= records // 2
    value: dict[str, Any] = {"id": f"e{i}", "user": i % 977, "amount": i * 0.25, "kind": "ABC"[i % 3],
                             "tags": ["x", "y"][: i % 3]}
    if v2:
        value["note"] = None if i % 2 else "n"
    return value, v2


def encoder(fmt: str) -> Callable[[dict[str, Any], bool], bytes]:
    """The payload (after the 5-byte header) of a value written with v1 or v2 of ``fmt``."""
    if fmt == "avro":
        from fastavro import parse_schema, schemaless_writer

        p1, p2 = parse_schema(V1), parse_schema(V2)

        def avro(value: dict[str, Any], v2: bool) -> bytes:
            buf = io.BytesIO()
            schemaless_writer(buf, p2 if v2 else p1, value)
            return buf.getvalue()

        return avro
    if fmt == "protobuf":
        from kafka_format.registry.protobuf import ProtoSchema, compile_proto

        classes = [ProtoSchema(*compile_proto(t)).message_class("bench.Event") for t in (PROTO_V1, PROTO_V2)]

        def proto(value: dict[str, Any], v2: bool) -> bytes:
            fields = {**value, "kind": "ABC".index(value["kind"])}
            if fields.get("note", 0) is None:
                del fields["note"]
            return b"\x00" + classes[v2](**fields).SerializeToString()  # message index [0]

        return proto
    return lambda value, v2: json.dumps(value, separators=(",", ":")).encode()


def make_topic(root: Path, records: int, partitions: int, fmt: str = "avro") -> tuple[Path, list[bytes]]:
    """A log dir with ``_schemas`` (v1 id 1, v2 id 2) and ``events`` (wire-format values of ``fmt``)."""
    from kafka_format.writer.batches import Record, build_v2_batch
    from kafka_format.writer.logdir import LogDirWriter

    shutil.rmtree(root, ignore_errors=True)
    encode = encoder(fmt)
    payloads = []
    for i in range(records):
        value, v2 = value_of(i, records)
        payloads.append(b"\x00" + struct.pack(">i", 2 if v2 else 1) + encode(value, v2))
    stype, *texts = SCHEMAS[fmt]
    schemas = [
        (
            {"keytype": "SCHEMA", "subject": "events-value", "version": v, "magic": 1},
            {"subject": "events-value", "version": v, "id": v, **({"schemaType": stype} if stype else {}),
             "schema": text, "deleted": False},
        )
        for v, text in ((1, texts[0]), (2, texts[1]))
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


def tree_cpu() -> float:
    """CPU seconds of this process tree, live descendants included (the Spark JVM), in ticks."""
    return _tree_cpu(os.getpid())


def reaped_cpu() -> float:
    """CPU seconds of this process and its reaped children (the local engine's pool workers, joined
    when an export ends), to the microsecond."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def interleaved(jobs: dict[str, Callable[[], None]], rounds: int,
                clock: Callable[[], float] = tree_cpu) -> dict[str, float]:
    """Least CPU seconds (``clock``) of each job over ``rounds`` rounds, jobs interleaved within a
    round, after one warm-up run of each; the garbage of the job before collected first (untimed)."""
    for job in jobs.values():
        job()
    best = {name: float("inf") for name in jobs}
    for _ in range(rounds):
        for name, job in jobs.items():
            gc.collect()
            c0 = clock()
            job()
            best[name] = min(best[name], clock() - c0)
    return best


def decoding_alone(fmt: str, payloads: list[bytes], rounds: int) -> dict[str, float]:
    """CPU seconds per row (this thread) of the reference decoder (Avro: fastavro alone, per
    payload) and of the compiled column decoder, over ``payloads`` (the reference over a sample of
    at most 100,000)."""
    import pyarrow as pa

    from kafka_format.registry.store import RegisteredSchema, SchemaStore
    from kafka_format.registry.typed import TYPED_FORMATS, ColumnDecoder, plan_column

    stype, *texts = SCHEMAS[fmt]
    store = SchemaStore.from_schemas(
        [RegisteredSchema("events-value", v, v, t, TYPED_FORMATS[fmt]) for v, t in ((1, texts[0]), (2, texts[1]))]
    )
    plan = plan_column(store, "value", fmt, topic="events")
    chunks = [pa.array(payloads[i : i + 10_000], pa.binary()) for i in range(0, len(payloads), 10_000)]
    sample = payloads[:100_000]

    def reference() -> None:
        if fmt == "avro":
            from fastavro import parse_schema, schemaless_reader

            p1, p2 = parse_schema(V1), parse_schema(V2)
            for b in sample:
                if b[4] == 1:
                    schemaless_reader(io.BytesIO(b[5:]), p1, p2)
                else:
                    schemaless_reader(io.BytesIO(b[5:]), p2, None)
            return
        dec = ColumnDecoder(plan, compiled=False)
        for i in range(0, len(sample), 10_000):
            dec.decode(pa.array(sample[i : i + 10_000], pa.binary()))

    def compiled() -> None:
        dec = ColumnDecoder(plan)
        for c in chunks:
            _, problems = dec.decode(c)
            assert not problems
        assert dec.rows["reference"] == 0, dec.rows

    best = {"reference": float("inf"), "compiled": float("inf")}
    for _ in range(rounds):
        for name, job, n in (("reference", reference, len(sample)), ("compiled", compiled, len(payloads))):
            t0 = time.thread_time()
            job()
            best[name] = min(best[name], (time.thread_time() - t0) / n)
    return best


def run_local(root: Path, out: Path, rounds: int, fmt: str = "avro") -> dict[str, float]:
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
                plan = plan_columns(schemas_from_log_dirs([str(root)]), value_as=fmt, topic="events")
                result = export_local([str(root)], str(out), options=opts, value_as=fmt, typed=plan)
            finally:
                os.environ.pop("KAFKA_FORMAT_DECODER", None)
            assert result.typed is not None and result.typed["decodeErrors"] == {"value": 0}

        return run

    # The reference decoders leave millions of objects' worth of heap behind: timed apart, so the two
    # exports compared are interleaved with each other only.
    times = interleaved({"binary": binary, "typed": typed()}, rounds, clock=reaped_cpu)
    return times | interleaved({"typed (reference decoder)": typed(True)}, min(rounds, 2), clock=reaped_cpu)


def run_spark(spark: Any, root: Path, out: Path, rounds: int, fmt: str = "avro") -> dict[str, float]:
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
            plan = typed_columns(schemas_from_log_dirs([str(root)]), value_as=fmt, topic="events")
            df = read_source(spark, [str(root)], opts, typed=plan if in_source else None)
            result = export(df, str(out), value_as=fmt, typed=plan)
            assert result.typed is not None and result.typed["decodeErrors"] == {"value": 0}

        return run

    return interleaved({"binary": binary, "typed": typed(True), "typed (Arrow UDF)": typed(False)}, rounds)


def markdown(records: int, master: str, local: dict[str, dict[str, float]], spark: dict[str, dict[str, float]],
             alone: dict[str, dict[str, float]]) -> list[str]:
    def rows(engine: str, fmt: str, times: dict[str, float]) -> list[str]:
        b = times["binary"]
        return [
            f"| {engine} | {fmt} | {name} | {t:.3f} | {t / b:.2f}x | {records / t:,.0f} | "
            f"{'' if name != 'typed' else ('yes' if t / b <= BAR else 'NO')} |"
            for name, t in times.items()
        ]

    out = [
        "## Typed export (`--value-as avro|protobuf|json-schema`) vs binary export vs decoding alone",
        "",
        f"{records:,} records per format, values of two writer schemas (half of them v1); CPU seconds of the",
        "whole process tree (JVM and Python workers included; the local engine's to the microsecond,",
        "Spark's in 10 ms ticks), least of interleaved rounds; a shared machine, so CPU time, not wall",
        "time, is compared.",
        "",
        "| engine | format | export | CPU s | / binary | rows per CPU s | within 1.5x |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for fmt in local:
        out += rows("local", fmt, local[fmt])
    for fmt in spark:
        out += rows(f"Spark {master}", fmt, spark[fmt])
    out += [
        "",
        "| decoding alone (one core) | reference µs/row | compiled µs/row | speed-up |",
        "|---|---:|---:|---:|",
    ]
    for fmt, t in alone.items():
        ref = "fastavro `schemaless_reader`" if fmt == "avro" else "`ColumnDecoder` without the compiled path"
        out.append(f"| {fmt} ({ref}) | {t['reference'] * 1e6:.2f} | {t['compiled'] * 1e6:.3f} | "
                   f"{t['reference'] / t['compiled']:.0f}x |")
    return out + [""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--data-dir", type=Path, default=Path("build/bench-data"))
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-spark", action="store_true", help="the local engine and the decoding only")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    unknown = set(formats) - set(FORMATS)
    if unknown:
        parser.error(f"unknown formats {sorted(unknown)} (expected some of {list(FORMATS)})")
    cores = 2
    roots: dict[str, Path] = {}
    alone: dict[str, dict[str, float]] = {}
    local: dict[str, dict[str, float]] = {}
    out = args.data_dir / "typed-out"
    for fmt in formats:
        roots[fmt], payloads = make_topic(args.data_dir / f"typed-{fmt}-{args.records}", args.records, 2 * cores, fmt)
        alone[fmt] = decoding_alone(fmt, payloads, args.rounds)
        del payloads
        local[fmt] = run_local(roots[fmt], out, args.rounds, fmt)
    on_spark: dict[str, dict[str, float]] = {}
    if not args.no_spark:
        from kafka_format.spark.session import build_session

        spark = build_session(master=args.master, profile="local", app_name="klogs-typed-export-bench",
                              extra_conf={"spark.ui.enabled": "false"})
        try:
            for fmt in formats:
                on_spark[fmt] = run_spark(spark, roots[fmt], out, args.rounds, fmt)
        finally:
            spark.stop()
    shutil.rmtree(out, ignore_errors=True)
    print("\n".join(markdown(args.records, args.master, local, on_spark, alone)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
