"""Typed test topics made by real tools: confluent-kafka's serializers (its mock registry client
hands out the ids) make the wire bytes; the registry's ``_schemas`` records are written in its
storage format (Confluent schema-registry ``SchemaKey``/``SchemaValue``: Jackson JSON, key property
order ``keytype, subject, version, magic``, empty values left out); our writer puts both into a
Kafka log dir.  Protobuf message classes come from ``protoc`` (grpcio-tools) output.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_format.writer.batches import Record, build_v2_batch
from kafka_format.writer.logdir import LogDirWriter

FIRST_TS = 1_700_000_000_000
TOPIC = "orders"
FORMATS = ("avro", "protobuf", "json-schema")

AVRO_MONEY = {
    "type": "record",
    "name": "Money",
    "namespace": "shop",
    "fields": [{"name": "currency", "type": "string"}, {"name": "units", "type": "long"}],
}
AVRO_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "qty", "type": "int"},
        {"name": "total", "type": "shop.Money"},
    ],
}
AVRO_V2 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "qty", "type": "long"},
        {"name": "total", "type": "shop.Money"},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}
PROTO_MONEY = (
    'syntax = "proto3";\npackage shop;\n\nmessage Money {\n  string currency = 1;\n  int64 units = 2;\n}\n'
)
PROTO_V1 = (
    'syntax = "proto3";\npackage shop;\n\nimport "shop/money.proto";\n\nmessage Order {\n  string id = 1;\n'
    "  int64 qty = 2;\n  Money total = 3;\n}\n"
)
PROTO_V2 = (
    'syntax = "proto3";\npackage shop;\n\nimport "shop/money.proto";\n\n'
    "message Order {\n  string id = 1;\n  int64 qty = 2;\n  Money total = 3;\n"
    "  optional string note = 4;\n}\n"
    "message Audit {\n  string who = 1;\n}\n"
)
JSON_V1 = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "qty": {"type": "integer"},
        "total": {
            "type": "object",
            "properties": {"currency": {"type": "string"}, "units": {"type": "integer"}},
        },
    },
}
JSON_V2 = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "qty": {"type": "integer"},
        "total": {
            "type": "object",
            "properties": {"currency": {"type": "string"}, "units": {"type": "integer"}},
        },
        "note": {"type": ["null", "string"]},
    },
}


def orders(first: int, n: int, *, v2: bool) -> list[dict[str, Any]]:
    """The logical values of the test records."""
    out = []
    for i in range(first, first + n):
        o: dict[str, Any] = {"id": f"o{i}", "qty": i, "total": {"currency": "EUR", "units": 100 * i}}
        if v2:
            o["note"] = None if i % 2 else f"note {i}"
        out.append(o)
    return out


@dataclass
class Corpus:
    """A log dir with ``_schemas`` and ``orders`` and what is in them."""

    root: Path
    fmt: str
    values: list[dict[str, Any]]  # logical values, in offset order
    wire: list[bytes]  # the serializer's bytes, in offset order
    schemas: list[dict[str, Any]] = field(default_factory=list)  # SCHEMA values written (registry form)
    ids: dict[str, int] = field(default_factory=dict)  # "v1", "v2", "money" -> schema id


def _protoc_classes(files: dict[str, str]) -> Any:
    import grpc_tools
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from grpc_tools import protoc

    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in files.items():
            p = Path(tmp, name)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        out = os.path.join(tmp, "out.desc")
        assert (
            protoc.main(
                [
                    "protoc",
                    f"-I{tmp}",
                    f"-I{include}",
                    "--include_imports",
                    f"--descriptor_set_out={out}",
                    *files,
                ]
            )
            == 0
        )
        fds = descriptor_pb2.FileDescriptorSet.FromString(Path(out).read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    return lambda name: message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def serialize(
    fmt: str, v1_values: list[dict[str, Any]], v2_values: list[dict[str, Any]], topic: str = TOPIC
) -> tuple[list[bytes], dict[str, int], Any]:
    """Wire bytes of v1 then v2 values made by confluent-kafka's serializer of ``fmt`` with its
    mock registry client; the ids it handed out; the client."""
    from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient.new_client({"url": f"mock://{fmt}-{os.getpid()}-{id(v1_values)}"})
    ctx = SerializationContext(topic, MessageField.VALUE)
    wire: list[bytes] = []
    ids: dict[str, int] = {}
    if fmt == "avro":
        from confluent_kafka.schema_registry.avro import AvroSerializer

        ids["money"] = client.register_schema("shop.Money", Schema(json.dumps(AVRO_MONEY), "AVRO"))
        ref = [SchemaReference("shop.Money", "shop.Money", 1)]
        for key, schema, values in (("v1", AVRO_V1, v1_values), ("v2", AVRO_V2, v2_values)):
            ser = AvroSerializer(client, Schema(json.dumps(schema), "AVRO", ref))
            wire += [ser(v, ctx) for v in values]
            ids[key] = client.get_latest_version(f"{topic}-value").schema_id
    elif fmt == "protobuf":
        from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

        for key, text, values in (("v1", PROTO_V1, v1_values), ("v2", PROTO_V2, v2_values)):
            cls = _protoc_classes({"shop/money.proto": PROTO_MONEY, "shop/order.proto": text})("shop.Order")
            ser = ProtobufSerializer(cls, client, conf={"use.deprecated.format": False})
            for v in values:
                msg = cls(id=v["id"], qty=v["qty"])
                msg.total.currency, msg.total.units = v["total"]["currency"], v["total"]["units"]
                if v.get("note") is not None:
                    msg.note = v["note"]
                wire.append(ser(msg, ctx))
            ids[key] = client.get_latest_version(f"{topic}-value").schema_id
        ids["money"] = client.get_latest_version("shop/money.proto").schema_id
    else:
        from confluent_kafka.schema_registry.json_schema import JSONSerializer

        for key, schema, values in (("v1", JSON_V1, v1_values), ("v2", JSON_V2, v2_values)):
            ser = JSONSerializer(json.dumps(schema), client)
            wire += [ser(v, ctx) for v in values]
            ids[key] = client.get_latest_version(f"{topic}-value").schema_id
    return wire, ids, client


def schema_records(
    fmt: str, ids: dict[str, int], topic: str = TOPIC
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(key, value) of the registry's ``_schemas`` records registering the schemas ``serialize``
    used, as the registry stores them (Protobuf as .proto text)."""
    stype = {"avro": None, "protobuf": "PROTOBUF", "json-schema": "JSON"}[fmt]
    texts = {
        "avro": (json.dumps(AVRO_MONEY), json.dumps(AVRO_V1), json.dumps(AVRO_V2)),
        "protobuf": (PROTO_MONEY, PROTO_V1, PROTO_V2),
        "json-schema": (None, json.dumps(JSON_V1), json.dumps(JSON_V2)),
    }[fmt]
    out = []
    refs: list[dict[str, Any]] = []
    if texts[0] is not None:
        money_subject = "shop.Money" if fmt == "avro" else "shop/money.proto"
        out.append(_schema(money_subject, 1, ids["money"], stype, texts[0], []))
        refs = [{"name": money_subject, "subject": money_subject, "version": 1}]
    out.append(_schema(f"{topic}-value", 1, ids["v1"], stype, texts[1], refs))
    out.append(_schema(f"{topic}-value", 2, ids["v2"], stype, texts[2], refs))
    return out


def _schema(
    subject: str,
    version: int,
    sid: int,
    stype: str | None,
    text: str,
    refs: list[dict[str, Any]],
    deleted: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    key = {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}
    value: dict[str, Any] = {"subject": subject, "version": version, "id": sid}
    if stype is not None:
        value["schemaType"] = stype
    if refs:
        value["references"] = refs
    value["schema"] = text
    value["deleted"] = deleted
    return key, value


def _enc(obj: dict[str, Any] | None) -> bytes | None:
    return None if obj is None else json.dumps(obj, separators=(",", ":")).encode()


def write_log_dir(
    root: Path,
    schema_records: list[tuple[dict[str, Any], dict[str, Any] | None]],
    topics: dict[str, list[tuple[bytes | None, bytes | None]]],
) -> Path:
    """A KRaft broker log dir holding ``_schemas`` (one partition, as the registry creates it) and
    the given topics (partition 0, records in order)."""
    d = LogDirWriter(root, node_id=1, cluster_id="registryTestCluster000", kraft=True)
    w = d.partition("_schemas", 0, topic_id=b"\x05" * 16)
    recs = [
        Record(key=_enc(k), value=_enc(v), timestamp=FIRST_TS + i) for i, (k, v) in enumerate(schema_records)
    ]
    for i in range(0, len(recs), 3):  # the registry produces one record per request
        w.append(build_v2_batch(recs[i : i + 3], base_offset=i))
    w.close()
    for t, (name, rows) in enumerate(topics.items()):
        w = d.partition(name, 0, topic_id=bytes([t + 16]) * 16)
        for i in range(0, len(rows), 4):
            w.append(
                build_v2_batch(
                    [
                        Record(key=k, value=v, timestamp=FIRST_TS + i + j)
                        for j, (k, v) in enumerate(rows[i : i + 4])
                    ],
                    base_offset=i,
                )
            )
        w.close()
    d.close(written_at_ms=FIRST_TS + 100_000)
    return root


AVRO_KEY = {"type": "record", "name": "OrderKey", "namespace": "shop", "fields": [{"name": "id", "type": "string"}]}


def make_corpus(
    root: Path, fmt: str, *, n1: int = 5, n2: int = 6, extra: list[tuple[bytes | None, bytes | None]] = (),
    avro_keys: bool = False,
) -> Corpus:  # type: ignore[assignment]
    """``orders`` with n1 v1 records then n2 v2 records of ``fmt`` (keys: the order id as a plain
    string, or with ``avro_keys`` an ``AVRO_KEY`` record by confluent-kafka's serializer under
    ``orders-key``), ``extra`` rows after them, and ``_schemas`` registering what was used."""
    v1, v2 = orders(0, n1, v2=False), orders(n1, n2, v2=True)
    wire, ids, client = serialize(fmt, v1, v2)
    recs: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
        ({"keytype": "NOOP", "magic": 0}, None),
        ({"keytype": "CONFIG", "subject": None, "magic": 0}, {"compatibilityLevel": "BACKWARD"}),
    ]
    recs += schema_records(fmt, ids)
    keys = [v["id"].encode() for v in v1 + v2]
    if avro_keys:
        from confluent_kafka.schema_registry import Schema
        from confluent_kafka.schema_registry.avro import AvroSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext

        ser = AvroSerializer(client, Schema(json.dumps(AVRO_KEY), "AVRO"))
        keys = [ser({"id": v["id"]}, SerializationContext(TOPIC, MessageField.KEY)) for v in v1 + v2]
        ids["key"] = client.get_latest_version(f"{TOPIC}-key").schema_id
        recs.append(_schema(f"{TOPIC}-key", 1, ids["key"], None, json.dumps(AVRO_KEY), []))
    rows = list(zip(keys, wire)) + list(extra)
    write_log_dir(root, recs, {TOPIC: rows})
    return Corpus(root, fmt, v1 + v2, wire, [v for _, v in recs if v and "schema" in v], ids)
