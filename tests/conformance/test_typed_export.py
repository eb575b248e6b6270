"""Comparison (typed export): Avro, Protobuf and JSON Schema values sent through a real broker,
exported offline from a copy of its log dirs with ``--value-as``, against what confluent-kafka's
own deserializers return for the records a real consumer reads from the live broker.

The wire bytes are made by confluent-kafka's serializers (its mock registry client hands out the
ids); the registry's ``_schemas`` records (its storage format, ``tests/registry/registry_corpus.py``)
are produced to a compacted storage topic on the same broker, as a Schema Registry would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from broker import KafkaBroker, wait_until
from testhelpers import REPO, load_module

pytestmark = pytest.mark.conformance

COMPARISON = "typed-export"
corpus_mod = load_module("registry_corpus", REPO / "tests" / "registry" / "registry_corpus.py")


def _produce(broker: KafkaBroker, topic: str, rows: list[tuple[bytes | None, bytes | None]]) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for k, v in rows:
        p.produce(topic, key=k, value=v)
    assert p.flush(60) == 0


def _consume_decoded(broker: KafkaBroker, topic: str, n: int, deserialize: Any) -> list[Any]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"typed-{topic}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got: list[Any] = []

        def done() -> bool:
            for m in c.consume(num_messages=500, timeout=0.5):
                if m.error() is None:
                    got.append((m.offset(), deserialize(m.value(), topic)))
            return len(got) >= n

        wait_until(done, 120, f"{n} records of {topic}", interval=0)
        return [v for _, v in sorted(got, key=lambda x: x[0])]
    finally:
        c.close()


def _deserializer(fmt: str, client: Any) -> Any:
    from confluent_kafka.serialization import MessageField, SerializationContext

    if fmt == "avro":
        from confluent_kafka.schema_registry.avro import AvroDeserializer

        d = AvroDeserializer(client)
        return lambda b, t: d(b, SerializationContext(t, MessageField.VALUE))
    if fmt == "json-schema":
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer

        d = JSONDeserializer(None, schema_registry_client=client)
        return lambda b, t: d(b, SerializationContext(t, MessageField.VALUE))
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    from google.protobuf.json_format import MessageToDict

    cls = corpus_mod._protoc_classes(
        {"shop/money.proto": corpus_mod.PROTO_MONEY, "shop/order.proto": corpus_mod.PROTO_V2}
    )("shop.Order")
    d = ProtobufDeserializer(cls, {"use.deprecated.format": False}, schema_registry_client=client)

    def proto(b: bytes, t: str) -> Any:
        msg = d(b, SerializationContext(t, MessageField.VALUE))
        out = MessageToDict(msg, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
        out["qty"] = int(out["qty"])
        out["total"]["units"] = int(out["total"]["units"])
        out.setdefault("note", None)
        return out

    return proto


@pytest.mark.parametrize("fmt", corpus_mod.FORMATS)
def test_typed_export_equals_the_deserializers(
    kafka_broker: KafkaBroker, spark, conformance, kafka_version: str, tmp_path: Path, fmt: str
) -> None:
    from kafka_format.registry import schemas_from_log_dirs
    from kafka_format.spark.typed import decode_typed, typed_columns

    topic = f"ty-{fmt}"
    v1, v2 = corpus_mod.orders(0, 20, v2=False), corpus_mod.orders(20, 20, v2=True)
    wire, ids, client = corpus_mod.serialize(fmt, v1, v2, topic=topic)
    # One registry per format (each mock client starts its ids at 1): its own storage topic
    # (the registry's kafkastore.topic), so ids of one format never collide with another's.
    store_topic = f"_schemas-{fmt}"
    schemas = corpus_mod.schema_records(fmt, ids, topic=topic)
    kafka_broker.create_topic(store_topic, config={"cleanup.policy": "compact"})
    kafka_broker.create_topic(topic)
    _produce(
        kafka_broker, store_topic, [(json.dumps(k).encode(), json.dumps(v).encode()) for k, v in schemas]
    )
    _produce(kafka_broker, topic, [(v["id"].encode(), b) for v, b in zip(v1 + v2, wire)])
    kafka_broker.wait_high_watermarks_checkpointed([(topic, 0), (store_topic, 0)])
    copy = kafka_broker.copy_log_dirs(tmp_path / "copy")
    theirs = _consume_decoded(kafka_broker, topic, len(wire), _deserializer(fmt, client))
    df = spark.read.format("kafka-log").option("topics", topic).load(str(copy))
    out, typed = decode_typed(
        df, schemas_from_log_dirs([str(copy)], topic=store_topic), value_as=fmt, topic=topic
    )
    ours = [r["value"].asDict(recursive=True) for r in out.orderBy("offset").collect()]
    conformance.compare(
        COMPARISON,
        kafka_version,
        f"{fmt}: {len(theirs)} values (two schema versions)",
        ours,
        [{**v, "note": v.get("note")} for v in theirs],
    )
    conformance.compare(
        COMPARISON, kafka_version, f"{fmt}: rows that did not decode", typed.error_counts(), {"value": 0}
    )
    # klogs export's way: the values decoded inside the kafka-log source's reader
    plan = typed_columns(schemas_from_log_dirs([str(copy)], topic=store_topic), value_as=fmt, topic=topic)
    in_source = plan.read(spark, [str(copy)], {"topics": topic}).orderBy("offset").collect()
    conformance.compare(
        COMPARISON,
        kafka_version,
        f"{fmt}: {len(theirs)} values decoded in the source's reader (klogs export)",
        [r["value"].asDict(recursive=True) for r in in_source],
        [{**v, "note": v.get("note")} for v in theirs],
    )
    conformance.assert_equal(COMPARISON, kafka_version)
