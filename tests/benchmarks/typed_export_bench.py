"""Typed export (``--value-as avro|protobuf|json-schema``) next to the binary export of the same
topic, on both engines, and the decoding alone (the reference decoders, the compiled column decoders).

``python tests/benchmarks/typed_export_bench.py [--records 1000000] [--formats avro,protobuf,json-schema]
[--shapes event,order] [--master local[2]] [--rounds 3] [--out FILE]`` prints (or writes) a Markdown
section.  Per shape and format, a topic holds the same logical values in the Schema Registry wire
format, written with two writer schemas (the first half with v1, the rest with v2, which adds a
nullable string; Avro's v1 records are resolved to v2), with ``_schemas`` beside it.  Protobuf
values carry Confluent's message index (the single ``0`` byte).  Shapes (:data:`SHAPES`): ``event``,
five small fields (string, long, double, enum, list of strings); ``order``, sixteen fields as an
orders topic holds (a nested record, a list, a map, nullable strings, enums).  The binary export writes one value column whatever the
shape; the typed export one column per leaf of the value's type, so the ratio grows with the leaves.

Measured as CPU seconds of this process and all its descendants (the Spark JVM and its Python
workers, the local engine's pool), the least of ``--rounds`` interleaved rounds after a warm-up
(binary, typed, binary, typed, ...: a shared machine's load falls on both alike).  The local engine
is timed by ``getrusage`` (a process and its reaped pool workers, to the microsecond); Spark's
JVM outlives a job, so its tree is read from ``/proc`` (10 ms ticks per process):

* local engine: :func:`kafka_format.engine.export.export_local`, binary and typed, and typed with
  the reference decoders alone (``KAFKA_FORMAT_DECODER=reference``: fastavro, upb, ``json.loads``),
  each export in a new process and timed inside it, CPU and wall time (:func:`fresh_export`);
* Spark: :func:`kafka_format.spark.export.export` of the topic, binary; typed as ``klogs export``
  runs it (decoded in the source's reader); typed through the Arrow UDF (``decode_typed``'s way,
  for any DataFrame);
* decoding alone, one core: the reference per payload (Avro: ``fastavro.schemaless_reader`` alone;
  Protobuf and JSON Schema: :class:`kafka_format.registry.typed.ColumnDecoder` without its compiled
  path, conversion to Arrow included), and ``ColumnDecoder`` over Arrow batches of 10,000 values;
* on both engines, the typed export's own files read and written again (Parquet to Parquet, the
  engine's writer and settings): the writing of those typed columns, which every typed exporter
  does, plus a Parquet read; "/ rewrite" is the typed export against it.

The target: typed export within 1.5x of the binary export's time (CPU, and wall on the local engine).
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_scan import _tree_cpu  # noqa: E402

BAR = 1.5
# The typed rows read from the typed export's files and written again: the cost of writing those
# Parquet columns, plus a Parquet read, set beside the typed export.
REWRITE = "typed rows rewritten (Parquet → Parquet)"
# The export's own finished tables (read before the rounds) written again by the engine's writer:
# the Parquet writing alone, which the floor of a typed export sets beside its log decode.
BINARY_WRITE, TYPED_WRITE = "binary rows written alone (Arrow → Parquet)", "typed rows written alone (Arrow → Parquet)"
FORMATS = ("avro", "protobuf", "json-schema")
EVENT_V1 = {
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
EVENT_PROTO = """syntax = "proto3";
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
EVENT_JSON = {
    "type": "object",
    "properties": {
        "id": {"type": "string"}, "user": {"type": "integer"}, "amount": {"type": "number"},
        "kind": {"type": "string", "enum": ["A", "B", "C"]}, "tags": {"type": "array", "items": {"type": "string"}},
    },
}
STATUS = ["NEW", "PAID", "SHIPPED", "DONE", "CANCELLED"]
COUNTRY = ["DE", "FR", "US", "JP", "BR"]
ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "bench",
    "fields": [
        {"name": "order_id", "type": "string"},
        {"name": "customer_id", "type": "long"},
        {"name": "created_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": STATUS}},
        {"name": "currency", "type": "string"},
        {"name": "total", "type": "double"},
        {"name": "tax", "type": "double"},
        {"name": "items", "type": "int"},
        {"name": "channel", "type": "string"},
        {"name": "email", "type": ["null", "string"], "default": None},
        {"name": "shipping", "type": {"type": "record", "name": "Address", "fields": [
            {"name": "street", "type": "string"}, {"name": "city", "type": "string"},
            {"name": "zip", "type": "string"},
            {"name": "country", "type": {"type": "enum", "name": "Country", "symbols": COUNTRY}}]}},
        {"name": "coupon", "type": ["null", "string"], "default": None},
        {"name": "skus", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "string"}},
        {"name": "priority", "type": "boolean"},
        {"name": "weight_g", "type": "int"},
    ],
}
ORDER_PROTO = f"""syntax = "proto3";
package bench;

message Order {{
  string order_id = 1;
  int64 customer_id = 2;
  int64 created_at = 3;
  Status status = 4;
  string currency = 5;
  double total = 6;
  double tax = 7;
  int32 items = 8;
  string channel = 9;
  optional string email = 10;
  Address shipping = 11;
  optional string coupon = 12;
  repeated string skus = 13;
  map<string, string> attrs = 14;
  bool priority = 15;
  int32 weight_g = 16;
  enum Status {{ {" ".join(f"{s} = {i};" for i, s in enumerate(STATUS))} }}
  enum Country {{ {" ".join(f"{s} = {i};" for i, s in enumerate(COUNTRY))} }}
  message Address {{ string street = 1; string city = 2; string zip = 3; Country country = 4; }}
}}
"""
_STRING, _NULLABLE = {"type": "string"}, {"type": ["null", "string"]}
ORDER_JSON = {
    "type": "object",
    "properties": {
        "order_id": _STRING, "customer_id": {"type": "integer"}, "created_at": {"type": "integer"},
        "status": {"type": "string", "enum": STATUS}, "currency": _STRING, "total": {"type": "number"},
        "tax": {"type": "number"}, "items": {"type": "integer"}, "channel": _STRING, "email": _NULLABLE,
        "shipping": {"type": "object", "properties": {"street": _STRING, "city": _STRING, "zip": _STRING,
                                                      "country": {"type": "string", "enum": COUNTRY}}},
        "coupon": _NULLABLE, "skus": {"type": "array", "items": _STRING},
        "attrs": {"type": "object", "additionalProperties": _STRING},
        "priority": {"type": "boolean"}, "weight_g": {"type": "integer"},
    },
}


def event_of(i: int) -> dict[str, Any]:
    """The ``event`` shape's record ``i``."""
    return {"id": f"e{i}", "user": i % 977, "amount": i * 0.25, "kind": "ABC"[i % 3], "tags": ["x", "y"][: i % 3]}


def order_of(i: int) -> dict[str, Any]:
    """The ``order`` shape's record ``i``."""
    return {
        "order_id": f"ord-{i:012d}", "customer_id": 10_000_000 + (i * 7919) % 5_000_000,
        "created_at": 1_700_000_000_000 + i * 13, "status": STATUS[i % 5], "currency": ("EUR", "USD", "JPY")[i % 3],
        "total": (i % 10_000) * 1.37, "tax": (i % 10_000) * 0.19, "items": 1 + i % 9,
        "channel": ("web", "app", "store")[i % 3], "email": None if i % 4 == 0 else f"user{i % 50_000}@example.com",
        "shipping": {"street": f"{i % 900} Main Street", "city": ("Berlin", "Paris", "Austin", "Osaka")[i % 4],
                     "zip": f"{10_000 + i % 89_999}", "country": COUNTRY[i % 5]},
        "coupon": None if i % 7 else "SPRING24", "skus": [f"sku-{(i + k) % 2000:05d}" for k in range(i % 4)],
        "attrs": {"src": "batch", "ab": "b" if i % 2 else "a"}, "priority": i % 11 == 0, "weight_g": 100 + i % 5000,
    }


def event_proto(value: dict[str, Any]) -> dict[str, Any]:
    return {**value, "kind": "ABC".index(value["kind"])}


def order_proto(value: dict[str, Any]) -> dict[str, Any]:
    shipping = value["shipping"]
    return {**value, "status": STATUS.index(value["status"]),
            "shipping": {**shipping, "country": COUNTRY.index(shipping["country"])}}


@dataclass(frozen=True)
class Shape:
    """A topic's values: the same logical value of record ``i`` in every format (``value_of``),
    written with two writer schemas: v1, then v2 for the second half of the records, which adds
    a nullable string ``note`` (Avro's v1 records are resolved to v2)."""

    name: str
    about: str
    message: str                              # the Protobuf message's full name
    avro: dict[str, Any]                      # v1
    proto: str                                # v1
    json_schema: dict[str, Any]               # v1
    value_of: Callable[[int], dict[str, Any]]
    to_proto: Callable[[dict[str, Any]], dict[str, Any]]  # enum symbols to numbers

    def v2(self, fmt: str) -> Any:
        """Schema v2 of ``fmt``: v1 and a nullable string ``note``."""
        if fmt == "avro":
            return {**self.avro, "fields": self.avro["fields"] + [{"name": "note", "type": ["null", "string"],
                                                                   "default": None}]}
        if fmt == "protobuf":
            last = max(int(n) for n in re.findall(r"= (\d+);\n", self.proto))
            return self.proto.replace("\n  enum ", f"\n  optional string note = {last + 1};\n  enum ", 1)
        return {**self.json_schema, "properties": {**self.json_schema["properties"], "note": _NULLABLE}}

    def schemas(self, fmt: str) -> tuple[str | None, str, str]:
        """The registry's ``schemaType`` and the text of v1 and v2 of ``fmt``."""
        v1 = {"avro": self.avro, "protobuf": self.proto, "json-schema": self.json_schema}[fmt]
        text = (lambda s: s) if fmt == "protobuf" else json.dumps
        return {"avro": None, "protobuf": "PROTOBUF", "json-schema": "JSON"}[fmt], text(v1), text(self.v2(fmt))

    def record(self, i: int, records: int) -> tuple[dict[str, Any], bool]:
        """The logical value of record ``i`` and whether it is written with v2."""
        v2 = i >= records // 2
        value = self.value_of(i)
        if v2:
            value["note"] = None if i % 2 else "n"
        return value, v2


SHAPES = {
    "event": Shape("event", "5 fields, 6 Parquet leaves, values of ~20 bytes: an id, a long, a double, an enum, "
                   "0-2 one-letter tags", "bench.Event", EVENT_V1, EVENT_PROTO, EVENT_JSON, event_of, event_proto),
    "order": Shape("order", "16 fields, 21 Parquet leaves, values of ~150 bytes, as an orders topic holds: "
                   "ids, amounts, a timestamp, enums, nullable strings, a nested address, 0-3 SKUs, a map of "
                   "two attributes", "bench.Order", ORDER_V1, ORDER_PROTO, ORDER_JSON, order_of, order_proto),
}


def encoder(fmt: str, shape: Shape) -> Callable[[dict[str, Any], bool], bytes]:
    """The payload (after the 5-byte header) of a value written with v1 or v2 of ``fmt``."""
    if fmt == "avro":
        from fastavro import parse_schema, schemaless_writer

        p1, p2 = parse_schema(shape.avro), parse_schema(shape.v2("avro"))

        def avro(value: dict[str, Any], v2: bool) -> bytes:
            buf = io.BytesIO()
            schemaless_writer(buf, p2 if v2 else p1, value)
            return buf.getvalue()

        return avro
    if fmt == "protobuf":
        from kafka_format.registry.protobuf import ProtoSchema, compile_proto

        classes = [ProtoSchema(*compile_proto(t)).message_class(shape.message)
                   for t in shape.schemas("protobuf")[1:]]

        def proto(value: dict[str, Any], v2: bool) -> bytes:
            fields = {k: v for k, v in shape.to_proto(value).items() if v is not None}
            return b"\x00" + classes[v2](**fields).SerializeToString()  # message index [0]

        return proto
    return lambda value, v2: json.dumps(value, separators=(",", ":")).encode()


def make_topic(root: Path, records: int, partitions: int, fmt: str, shape: Shape) -> tuple[Path, list[bytes]]:
    """A log dir with ``_schemas`` (v1 id 1, v2 id 2) and ``events`` (wire-format values of ``fmt``
    and ``shape``)."""
    from kafka_format.writer.batches import Record, build_v2_batch
    from kafka_format.writer.logdir import LogDirWriter

    shutil.rmtree(root, ignore_errors=True)
    encode = encoder(fmt, shape)
    payloads = []
    for i in range(records):
        value, v2 = shape.record(i, records)
        payloads.append(b"\x00" + struct.pack(">i", 2 if v2 else 1) + encode(value, v2))
    stype, *texts = shape.schemas(fmt)
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


Timed = tuple[float, float] | None   # (CPU s, wall s) a job measured itself, or None: time it here


def interleaved(jobs: dict[str, Callable[[], Timed]], rounds: int,
                clock: Callable[[], float] = tree_cpu, walls: dict[str, float] | None = None) -> dict[str, float]:
    """Least CPU seconds (``clock``, or what the job returns) of each job over ``rounds`` rounds,
    jobs interleaved within a round, after one warm-up run of each; the garbage of the job before
    collected first (untimed).  ``walls``, when given, gets each job's least wall-clock seconds."""
    for job in jobs.values():
        job()
    best = {name: float("inf") for name in jobs}
    wall = dict(best)
    for _ in range(rounds):
        for name, job in jobs.items():
            gc.collect()
            c0, w0 = clock(), time.perf_counter()
            own = job()
            cpu, took = own if own is not None else (clock() - c0, time.perf_counter() - w0)
            best[name] = min(best[name], cpu)
            wall[name] = min(wall[name], took)
    if walls is not None:
        walls.update(wall)
    return best


def decoding_alone(fmt: str, payloads: list[bytes], rounds: int, shape: Shape) -> dict[str, float]:
    """CPU seconds per row (this thread) of the reference decoder (Avro: fastavro alone, per
    payload) and of the compiled column decoder, over ``payloads`` (the reference over a sample of
    at most 100,000)."""
    import pyarrow as pa

    from kafka_format.registry.store import RegisteredSchema, SchemaStore
    from kafka_format.registry.typed import TYPED_FORMATS, ColumnDecoder, plan_column

    _stype, *texts = shape.schemas(fmt)
    store = SchemaStore.from_schemas(
        [RegisteredSchema("events-value", v, v, t, TYPED_FORMATS[fmt]) for v, t in ((1, texts[0]), (2, texts[1]))]
    )
    plan = plan_column(store, "value", fmt, topic="events")
    chunks = [pa.array(payloads[i : i + 10_000], pa.binary()) for i in range(0, len(payloads), 10_000)]
    sample = payloads[:100_000]

    def reference() -> None:
        if fmt == "avro":
            from fastavro import parse_schema, schemaless_reader

            p1, p2 = parse_schema(shape.avro), parse_schema(shape.v2("avro"))
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


def fresh_dir_beside(out: Path) -> Path:
    """An empty path beside ``out`` for the rewrite of its files (what an earlier round left removed)."""
    again = out.with_name(out.name + "-again")
    shutil.rmtree(again, ignore_errors=True)
    return again


def fresh_export(root: Path, out: Path, fmt: str | None, *, reference: bool = False) -> tuple[float, float]:
    """One local export of ``root``'s ``events`` topic (typed as ``fmt`` when given) in a new process
    started as ``klogs export`` starts (one OpenBLAS thread, no pandas): (CPU s of the export, its
    pool workers included; wall s), timed inside that process around the export alone (plan
    included, the interpreter's start not).  A new process each time because the engine
    forks its pool from the exporting process, and a fork costs more the larger that process's heap
    is: in this one (every payload held for the decoding runs) it would add to both exports alike.
    The export runs twice there and the second is timed: its modules imported, as in the previous
    in-process measurements (with the reference decoders, tens of seconds, once: the imports are
    noise there)."""
    env = {"OPENBLAS_NUM_THREADS": "1", **os.environ}      # as one_blas_thread: unless the user chose
    if reference:
        env["KAFKA_FORMAT_DECODER"] = "reference"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one-export", str(root), str(out)]
    cmd += ([] if fmt is None else ["--value-as", fmt]) + (["--cold"] if reference else [])
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr[-2000:]}")
    got = json.loads(done.stdout.splitlines()[-1])
    return got["cpu"], got["wall"]


def one_export(root: Path, out: Path, fmt: str | None, *, cold: bool = False) -> dict[str, float]:
    """The export :func:`fresh_export` runs, in this process: its CPU and wall seconds (``cold``:
    without the untimed run first)."""
    from kafka_format.engine import without_pandas

    without_pandas()
    from kafka_format.engine.export import export_local
    from kafka_format.registry import schemas_from_log_dirs
    from kafka_format.registry.typed import plan_columns

    def export() -> None:
        shutil.rmtree(out, ignore_errors=True)
        if fmt is None:
            export_local([str(root)], str(out), options={"topics": "events"})
            return
        plan = plan_columns(schemas_from_log_dirs([str(root)]), value_as=fmt, topic="events")
        result = export_local([str(root)], str(out), options={"topics": "events"}, value_as=fmt, typed=plan)
        assert result.typed is not None and result.typed["decodeErrors"] == {"value": 0}

    if not cold:
        export()        # untimed: the modules an export imports on its way, as in a warm process
        gc.collect()
    c0, w0 = reaped_cpu(), time.perf_counter()
    export()
    return {"cpu": reaped_cpu() - c0, "wall": time.perf_counter() - w0}


def run_local(root: Path, out: Path, rounds: int, fmt: str,
              walls: dict[str, float] | None = None) -> dict[str, float]:
    def binary() -> Timed:
        return fresh_export(root, out, None)

    def typed(reference: bool = False) -> Callable[[], Timed]:
        return lambda: fresh_export(root, out, fmt, reference=reference)

    def rewrite() -> None:
        """The typed export's own files read and written again as the local engine writes them."""
        import pyarrow.parquet as pq

        from kafka_format.output.parquet import write_options, write_row_groups

        again = fresh_dir_beside(out)
        for src in sorted(out.rglob("*.parquet")):
            table = pq.ParquetFile(src).read()
            dst = again / src.relative_to(out)
            dst.parent.mkdir(parents=True, exist_ok=True)
            write_row_groups(dst, table.schema, table.to_batches(), write_options(table))
        shutil.rmtree(again)

    def tables_of(export: Callable[[], Timed]) -> list[tuple[Path, Any]]:
        """The files ``export`` writes, read back into memory (untimed)."""
        import pyarrow.parquet as pq

        export()
        return [(src.relative_to(out), pq.ParquetFile(src).read()) for src in sorted(out.rglob("*.parquet"))]

    def write_alone(tables: list[tuple[Path, Any]]) -> Callable[[], None]:
        def run() -> None:
            """Finished tables written as the local engine writes an export's files."""
            from kafka_format.output.parquet import write_options, write_row_groups

            again = fresh_dir_beside(out)
            for rel, table in tables:
                dst = again / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                write_row_groups(dst, table.schema, table.to_batches(), write_options(table))
            shutil.rmtree(again)

        return run

    # The rewrite reads the typed export's files, so it runs after it in every round; the export
    # with the reference decoders (tens of seconds) is timed apart, in fewer rounds.
    times = interleaved({"binary": binary, "typed": typed(), REWRITE: rewrite}, rounds, clock=reaped_cpu,
                        walls=walls)
    written = {BINARY_WRITE: write_alone(tables_of(binary)), TYPED_WRITE: write_alone(tables_of(typed()))}
    times |= interleaved(written, rounds, clock=reaped_cpu)
    del written
    return times | interleaved({"typed (reference decoder)": typed(True)}, min(rounds, 2), clock=reaped_cpu)


def run_spark(spark: Any, root: Path, out: Path, rounds: int, fmt: str) -> dict[str, float]:
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

    def rewrite() -> None:
        """The typed export's own files read and written again by Spark."""
        again = fresh_dir_beside(out)
        spark.read.parquet(str(out)).write.partitionBy("topic", "partition").parquet(str(again))
        shutil.rmtree(again)

    # The rewrite reads the files of the export before it: the typed one of the source's reader.
    return interleaved({"binary": binary, "typed (Arrow UDF)": typed(False), "typed": typed(True),
                        REWRITE: rewrite}, rounds)


Times = dict[tuple[str, str], dict[str, float]]  # (shape, format) -> seconds by job


def markdown(records: int, master: str, local: Times, spark: Times, alone: Times,
             local_wall: Times | None = None) -> list[str]:
    def rows(engine: str, shape: str, fmt: str, times: dict[str, float]) -> list[str]:
        b, again = times["binary"], times.get(REWRITE)
        return [
            f"| {engine} | {shape} | {fmt} | {name} | {t:.3f} | {t / b:.2f}x | "
            f"{f'{t / again:.2f}x' if again and name.startswith('typed') and name not in (REWRITE, TYPED_WRITE) else ''} | "
            f"{records / t:,.0f} | {'' if name != 'typed' else ('yes' if t / b <= BAR else 'NO')} |"
            for name, t in times.items()
        ]

    out = [
        "## Typed export (`--value-as avro|protobuf|json-schema`) vs binary export vs decoding alone",
        "",
        f"{records:,} records per shape and format, values of two writer schemas (half of them v1, the",
        "second adds a nullable string). Shapes:",
        *(f"- `{s.name}`: {s.about} (`{s.message}`)." for s in SHAPES.values() if any(k[0] == s.name for k in local)),
        "",
        "CPU seconds of the whole process tree (JVM and Python workers included; the local engine's to the",
        "microsecond, Spark's in 10 ms ticks), least of interleaved rounds; a shared machine, so CPU time,",
        "not wall time, is compared.",
        "",
        "| engine | shape | format | export | CPU s | / binary | / rewrite | rows per CPU s | within 1.5x |",
        "|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    for (shape, fmt), times in local.items():
        out += rows("local", shape, fmt, times)
    for (shape, fmt), times in spark.items():
        out += rows(f"Spark {master}", shape, fmt, times)
    if local_wall:
        out += [
            "",
            "The local engine's exports by wall-clock time (least of the same rounds; the engine runs an export",
            "on one thread per core (a pool of processes with the reference decoders), so wall time is what a",
            "user waits):",
            "",
            "| shape | format | binary wall s | typed wall s | / binary | within 1.5x |",
            "|---|---|---:|---:|---:|---|",
        ]
        for (shape, fmt), w in local_wall.items():
            ratio = w["typed"] / w["binary"]
            out.append(f"| {shape} | {fmt} | {w['binary']:.3f} | {w['typed']:.3f} | {ratio:.2f}x | "
                       f"{'yes' if ratio <= BAR else 'NO'} |")
    out += [
        "",
        "| decoding alone (one core) | shape | reference µs/row | compiled µs/row | speed-up |",
        "|---|---|---:|---:|---:|",
    ]
    for (shape, fmt), t in alone.items():
        ref = "fastavro `schemaless_reader`" if fmt == "avro" else "`ColumnDecoder` without the compiled path"
        out.append(f"| {fmt} ({ref}) | {shape} | {t['reference'] * 1e6:.2f} | {t['compiled'] * 1e6:.3f} | "
                   f"{t['reference'] / t['compiled']:.0f}x |")
    return out + floor(records, local, alone) + [""]


def floor(records: int, local: Times, alone: Times) -> list[str]:
    """The least a typed export of the local engine can cost with its Parquet writer, from parts
    measured alone, against the target."""
    measured = [(key, t) for key, t in local.items() if BINARY_WRITE in t and TYPED_WRITE in t]
    if not measured:
        return []
    out = [
        "",
        "The floor of a typed export on the local engine, from its parts measured alone: the log decoded into",
        "the same Arrow columns as the binary export (the binary export less its own Parquet writing), the",
        "payloads decoded by the compiled column decoder alone, and the typed columns written by the engine's",
        "Parquet writer (pyarrow's, with the export's settings) from finished tables.  Where the floor passes",
        f"{BAR}x the binary export, no typed export writing those columns with this writer meets the target:",
        "",
        "| shape | format | binary export s | of which writing | typed columns written alone s | compiled decoding s "
        "| floor s | floor / binary | typed export / floor | target reachable |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for (shape, fmt), t in measured:
        b, bw, tw = t["binary"], t[BINARY_WRITE], t[TYPED_WRITE]
        decode = alone[(shape, fmt)]["compiled"] * records
        least = max(b - bw, 0.0) + tw + decode
        out.append(f"| {shape} | {fmt} | {b:.3f} | {bw:.3f} | {tw:.3f} | {decode:.3f} | {least:.3f} | "
                   f"{least / b:.2f}x | {t['typed'] / least:.2f}x | "
                   f"{'yes' if least / b <= BAR else 'no: the floor passes it'} |")
    return out


def run(data_dir: Path, *, records: int = 1_000_000, formats: tuple[str, ...] = FORMATS,
        shapes: tuple[str, ...] = tuple(SHAPES), rounds: int = 3, spark: bool = True,
        master: str = "local[2]") -> list[str]:
    """Every shape and format on the local engine (and on Spark when ``spark``): the Markdown section."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    cores = 2
    roots: dict[tuple[str, str], Path] = {}
    alone: Times = {}
    local: Times = {}
    local_wall: Times = {}
    out = data_dir / "typed-out"
    for shape in shapes:
        for fmt in formats:
            key = (shape, fmt)
            name = f"typed-{fmt}-{records}" if shape == "event" else f"typed-{shape}-{fmt}-{records}"
            roots[key], payloads = make_topic(data_dir / name, records, 2 * cores, fmt, SHAPES[shape])
            alone[key] = decoding_alone(fmt, payloads, rounds, SHAPES[shape])
            del payloads
            local_wall[key] = {}
            local[key] = run_local(roots[key], out, rounds, fmt, walls=local_wall[key])
    on_spark: Times = {}
    if spark:
        from kafka_format.spark.session import build_session

        session = build_session(master=master, profile="local", app_name="klogs-typed-export-bench",
                                extra_conf={"spark.ui.enabled": "false"})
        try:
            for key, root in roots.items():
                on_spark[key] = run_spark(session, root, out, rounds, key[1])
        finally:
            session.stop()
    shutil.rmtree(out, ignore_errors=True)
    return markdown(records, master, local, on_spark, alone, local_wall)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--data-dir", type=Path, default=Path("build/bench-data"))
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-spark", action="store_true", help="the local engine and the decoding only")
    parser.add_argument("--out", type=Path, help="write the Markdown section to this file (default: print it)")
    parser.add_argument("--one-export", nargs=2, type=Path, metavar=("ROOT", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--value-as", help=argparse.SUPPRESS)
    parser.add_argument("--cold", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one_export:
        print(json.dumps(one_export(*args.one_export, args.value_as, cold=args.cold)))
        return 0
    formats = tuple(f.strip() for f in args.formats.split(",") if f.strip())
    shapes = tuple(s.strip() for s in args.shapes.split(",") if s.strip())
    for given, known, what in ((formats, FORMATS, "formats"), (shapes, tuple(SHAPES), "shapes")):
        unknown = set(given) - set(known)
        if unknown:
            parser.error(f"unknown {what} {sorted(unknown)} (expected some of {list(known)})")
    section = "\n".join(run(args.data_dir, records=args.records, formats=formats, shapes=shapes, rounds=args.rounds,
                            spark=not args.no_spark, master=args.master))
    if args.out:
        args.out.write_text(section + "\n", encoding="utf-8")
    else:
        print(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
