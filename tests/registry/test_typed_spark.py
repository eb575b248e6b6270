"""decode_typed over the kafka-log DataFrame: typed struct columns, the read modes for rows that do
not decode (counted, never dropped silently), per format."""

from __future__ import annotations

from typing import Any

import pytest
from registry_corpus import FORMATS, make_corpus

from kafka_format.registry import schemas_from_log_dirs
from kafka_format.registry.typed import TypedDecodeError
from kafka_format.spark.typed import decode_typed

pytestmark = pytest.mark.spark


def make_bad_corpus(tmp_path_factory: pytest.TempPathFactory, fmt: str) -> Any:
    """orders: 3 v1 + 4 v2 records, then a record with magic 1, one with an unknown id, a tombstone."""
    probe = make_corpus(tmp_path_factory.mktemp("probe"), fmt, n1=1, n2=1)
    bad = [
        (b"bad-magic", b"\x01" + probe.wire[0][1:]),
        (b"unknown-id", b"\x00\x00\x01\x00\x00" + probe.wire[0][5:]),
        (b"tombstone", None),
    ]
    return make_corpus(tmp_path_factory.mktemp(fmt), fmt, n1=3, n2=4, extra=bad)


@pytest.fixture(scope="module", params=FORMATS)
def corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return make_bad_corpus(tmp_path_factory, request.param)


@pytest.fixture(scope="module")
def proto_corpus(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The modes are format-independent (decoding per format: test_typed_decode.py): one is enough."""
    return make_bad_corpus(tmp_path_factory, "protobuf")


def read(spark: Any, corpus: Any, mode: str) -> tuple[list[Any], Any]:
    df = spark.read.format("kafka-log").option("topics", "orders").option("mode", mode).load(str(corpus.root))
    store = schemas_from_log_dirs([str(corpus.root)])
    out, typed = decode_typed(df, store, value_as=corpus.fmt, topic="orders", mode=mode)
    return sorted(out.collect(), key=lambda r: r["offset"]), typed


def expected(corpus: Any) -> list[dict[str, Any]]:
    return [{**v, "note": v.get("note")} for v in corpus.values]


def as_dict(row: Any) -> Any:
    return None if row is None else row.asDict(recursive=True)


def test_permissive_keeps_every_row_and_says_why(spark: Any, corpus: Any) -> None:
    rows, typed = read(spark, corpus, "PERMISSIVE")
    fields = {k: v for k, v in rows[0]["value"].asDict().items()}
    assert list(fields) == ["id", "qty", "total", "note"]  # the latest (v2) schema's fields
    n = len(corpus.values)
    assert len(rows) == n + 3
    assert [as_dict(r["value"]) for r in rows[:n]] == expected(corpus)
    assert all(r["_valueDecodeError"] is None for r in rows[:n])
    bad_magic, unknown, tombstone = rows[n:]
    assert bad_magic["value"] is None and "magic byte 1" in bad_magic["_valueDecodeError"]["reason"]
    assert bytes(bad_magic["_valueDecodeError"]["bytes"])[:1] == b"\x01"
    assert unknown["_valueDecodeError"]["schemaId"] == 65536
    assert tombstone["value"] is None and tombstone["_valueDecodeError"] is None
    assert typed.error_counts() == {"value": 2}
    assert rows[0]["key"] == b"o0"  # keys stay binary


def test_dropmalformed_drops_and_counts(spark: Any, proto_corpus: Any) -> None:
    corpus = proto_corpus
    rows, typed = read(spark, corpus, "DROPMALFORMED")
    assert [r["key"] for r in rows][-1] == b"tombstone" and len(rows) == len(corpus.values) + 1
    assert "_valueDecodeError" not in rows[0].asDict()
    assert typed.error_counts() == {"value": 2}


def test_failfast_names_file_position_and_offset(spark: Any, proto_corpus: Any) -> None:
    from kafka_format.spark.typed import typed_error

    corpus = proto_corpus
    with pytest.raises(Exception) as info:
        read(spark, corpus, "FAILFAST")
    err = typed_error(info.value)
    assert isinstance(err, TypedDecodeError)
    n = len(corpus.values)
    assert err.path.endswith("orders-0/00000000000000000000.log") and f"offset {n}" in str(err)
    assert err.position is not None and "magic byte 1" in str(err)
