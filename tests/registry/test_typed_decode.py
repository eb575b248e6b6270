"""Wire-format decoding of confluent-kafka serializers' bytes, per format: evolution to the latest
schema, references, message indexes, and rows that must fail with a reason."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pytest
from registry_corpus import AVRO_V1, FORMATS, make_corpus

from kafka_format.registry import (
    RegistryUrlSource,
    SchemaSourceError,
    schemas_from_directory,
    schemas_from_log_dirs,
)
from kafka_format.registry.typed import ColumnDecoder, TypedDecodeError, plan_column


def expected(values: list[dict[str, Any]], fmt: str) -> list[dict[str, Any]]:
    """Values as the latest (v2) table reads them: note null where v1 had none."""
    return [{**v, "note": v.get("note")} for v in values]


@pytest.fixture(scope="module", params=FORMATS)
def corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return make_corpus(tmp_path_factory.mktemp(request.param), request.param)


def decode(corpus: Any, rows: list[bytes | None], **kw: Any) -> tuple[list[Any], list[Any]]:
    store = schemas_from_log_dirs([str(corpus.root)])
    plan = plan_column(store, "value", corpus.fmt, topic="orders", **kw)
    arr, problems = ColumnDecoder(plan).decode(pa.array(rows, pa.binary()))
    return arr.to_pylist(), problems


def test_every_version_decodes_into_the_latest_table_type(corpus: Any) -> None:
    got, problems = decode(corpus, corpus.wire)
    assert problems == []
    assert got == expected(corpus.values, corpus.fmt)


def test_auto_takes_the_subjects_type(corpus: Any) -> None:
    _got, _problems = decode(corpus, corpus.wire[:2])
    store = schemas_from_log_dirs([str(corpus.root)])
    plan = plan_column(store, "value", "auto", topic="orders")
    assert plan is not None and plan.schema_type == store.latest("orders-value").schema_type
    assert plan_column(store, "key", "auto", topic="orders") is None  # no orders-key subject


def test_the_subjects_writers_are_compiled_before_the_first_batch(corpus: Any) -> None:
    """A batch of v1 rows then one of v2 rows: each decoded by one compiled call, the v2 writer
    compiled before it was seen (not learned from its first row and the batch decoded again)."""
    store = schemas_from_log_dirs([str(corpus.root)])
    dec = ColumnDecoder(plan_column(store, "value", corpus.fmt, topic="orders"))
    calls: list[int] = []
    v1 = [w for w, v in zip(corpus.wire, corpus.values, strict=True) if "note" not in v]
    v2 = [w for w, v in zip(corpus.wire, corpus.values, strict=True) if "note" in v]
    assert v1 and v2
    dec.decode(pa.array(v1, pa.binary()))
    real = dec._fast.decode
    dec._fast.decode = lambda *a: calls.append(1) or real(*a)
    got2, problems = dec.decode(pa.array(v2, pa.binary()))
    assert problems == [] and calls == [1]
    assert got2.to_pylist() == expected([v for v in corpus.values if "note" in v], corpus.fmt)
    ids = {s.id for s in store.versions("orders-value", include_deleted=True)}
    assert ids <= set(dec._slots) and len(ids) == 2


@pytest.mark.threads
def test_each_thread_decodes_with_its_own_decoder(corpus: Any) -> None:
    """``for_plan`` keeps one decoder per plan and thread: the local engine's export tasks decode on
    threads, and a decoder's caches and compiled programs change as it decodes.  Threads decoding
    at once each get every row right."""
    store = schemas_from_log_dirs([str(corpus.root)])
    plan = plan_column(store, "value", corpus.fmt, topic="orders")
    assert plan is not None
    mine = ColumnDecoder.for_plan(plan)
    assert ColumnDecoder.for_plan(plan) is mine
    seen: dict[int, tuple[Any, list[Any], list[Any]]] = {}
    start = threading.Barrier(4)

    def work(i: int) -> None:
        start.wait()
        dec = ColumnDecoder.for_plan(plan)
        arr, problems = dec.decode(pa.array(corpus.wire * 50, pa.binary()))
        seen[i] = (dec, arr.to_pylist(), problems)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(d) for d, _, _ in seen.values()} | {id(mine)}) == 5
    assert all(got == expected(corpus.values, corpus.fmt) * 50 and problems == []
               for _, got, problems in seen.values())


def test_a_thread_keeps_the_decoders_of_its_latest_plans_only(corpus: Any) -> None:
    """A reused worker serves run after run, each with plans of its own tokens: a thread keeps the
    decoders of its last ``PLANS_PER_THREAD`` plans, and a plan met again after eviction decodes
    as before (a fresh decoder, the same rows)."""
    from dataclasses import replace

    from kafka_format.registry import typed

    store = schemas_from_log_dirs([str(corpus.root)])
    first = plan_column(store, "value", corpus.fmt, topic="orders")
    assert first is not None
    plans = [first] + [replace(first, token=f"run-{i}") for i in range(typed.PLANS_PER_THREAD + 3)]
    for p in plans:
        ColumnDecoder.for_plan(p)
    kept = typed._DECODERS.by_token
    assert list(kept) == [p.token for p in plans[-typed.PLANS_PER_THREAD:]]
    again, problems = ColumnDecoder.for_plan(first).decode(pa.array(corpus.wire, pa.binary()))
    assert problems == [] and again.to_pylist() == expected(corpus.values, corpus.fmt)


def test_bad_rows_are_reported_with_reasons(corpus: Any) -> None:
    good = corpus.wire[0]
    unknown = b"\x00\x00\x00\x03\xe7" + good[5:]
    truncated = good[:-2] if corpus.fmt != "json-schema" else good[:-1]
    rows = [good, None, b"\x01" + good[1:], b"\x00\x00", unknown, truncated]
    got, problems = decode(corpus, rows)
    assert got[0] == expected(corpus.values[:1], corpus.fmt)[0] and got[1:] == [None] * 5
    reasons = {p.row: p.reason for p in problems}
    assert set(reasons) == {2, 3, 4, 5}
    assert "magic byte 1" in reasons[2] and "5-byte" in reasons[3] and "unknown schema id 999" in reasons[4]
    assert "does not decode" in reasons[5]


def test_avro_reader_schema_resolution(tmp_path: Path) -> None:
    c = make_corpus(tmp_path / "a", "avro", n1=2, n2=2)
    store = schemas_from_log_dirs([str(c.root)])
    money = json.dumps(
        {
            "type": "record",
            "name": "Money",
            "namespace": "shop",
            "fields": [{"name": "currency", "type": "string"}, {"name": "units", "type": "long"}],
        }
    )
    reader = json.dumps(
        {
            **AVRO_V1,
            "fields": [
                {"name": "id", "type": "string"},
                {"name": "total", "type": json.loads(money)},
                {"name": "rush", "type": "boolean", "default": False},
            ],
        }
    )
    plan = plan_column(store, "value", "avro", topic="orders", reader_schema=reader)
    arr, problems = ColumnDecoder(plan).decode(pa.array(c.wire, pa.binary()))
    assert problems == []
    assert arr.to_pylist() == [{"id": v["id"], "total": v["total"], "rush": False} for v in c.values]
    incompatible = json.dumps(
        {
            "type": "record",
            "name": "Order",
            "namespace": "shop",
            "fields": [{"name": "missing", "type": "int"}],
        }
    )
    plan = plan_column(store, "value", "avro", topic="orders", reader_schema=incompatible)
    arr, problems = ColumnDecoder(plan).decode(pa.array(c.wire[:1], pa.binary()))
    assert arr.to_pylist() == [None] and len(problems) == 1


def test_protobuf_message_index_of_another_message_is_an_error(tmp_path: Path) -> None:
    c = make_corpus(tmp_path / "p", "protobuf", n1=1, n2=1)
    v2 = c.wire[1]  # Order is message [0] of v2: the 0 shortcut
    assert v2[5] == 0
    audit = v2[:5] + b"\x02\x02" + v2[6:]  # count 1, index 1 (zigzag varints): Audit
    got, problems = decode(c, [v2, audit])
    assert got[0]["id"] == "o1" and got[1] is None
    assert "shop.Audit" in problems[0].reason


def test_unknown_subject_is_one_clear_error(corpus: Any) -> None:
    store = schemas_from_log_dirs([str(corpus.root)])
    with pytest.raises(TypedDecodeError, match="orders-key"):
        plan_column(store, "key", corpus.fmt, topic="orders")


class _Registry(BaseHTTPRequestHandler):
    answers: ClassVar[dict[str, Any]] = {}
    auth: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:  # noqa: N802
        self.auth.append(self.headers.get("Authorization"))
        if self.path == "/schemas/ids/500":
            self.send_response(500)
            self.end_headers()
            return
        body = self.answers.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.end_headers()
        self.wfile.write(json.dumps(body if body is not None else {"error_code": 40403}).encode())

    def log_message(self, *args: Any) -> None:
        pass


def test_registry_url_source_against_a_local_server(corpus: Any) -> None:
    store = schemas_from_log_dirs([str(corpus.root)])
    answers: dict[str, Any] = {}
    for s in store:
        body = {
            "schema": s.schema,
            "schemaType": s.schema_type,
            "references": [
                {"name": r.name, "subject": r.subject, "version": r.version} for r in s.references
            ],
        }
        answers[f"/schemas/ids/{s.id}"] = body
        answers[f"/subjects/{s.subject.replace('/', '%2F')}/versions/{s.version}"] = {
            **body,
            "subject": s.subject,
            "version": s.version,
            "id": s.id,
        }
    latest = store.latest("orders-value")
    answers["/subjects/orders-value/versions/latest"] = answers[
        f"/subjects/orders-value/versions/{latest.version}"
    ]
    handler = type("H", (_Registry,), {"answers": answers, "auth": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        src = RegistryUrlSource(f"http://reader:s%40cret@127.0.0.1:{server.server_address[1]}")
        plan = plan_column(src, "value", corpus.fmt, topic="orders")
        arr, problems = ColumnDecoder(plan).decode(pa.array(corpus.wire, pa.binary()))
        assert problems == [] and arr.to_pylist() == expected(corpus.values, corpus.fmt)
        assert src.by_id(424242) is None
        assert set(handler.auth) == {"Basic cmVhZGVyOnNAY3JldA=="}  # base64 of reader:s@cret
        with pytest.raises(SchemaSourceError) as info:
            src.by_id(500)
        assert (
            "HTTP 500" in str(info.value)
            and "cret" not in str(info.value)
            and "reader" not in str(info.value)
        )
    finally:
        server.shutdown()
        server.server_close()


def test_directory_source(corpus: Any, tmp_path: Path) -> None:
    store = schemas_from_log_dirs([str(corpus.root)])
    ext = {"AVRO": ".avsc", "PROTOBUF": ".proto", "JSON": ".json"}
    for s in store:
        sub = tmp_path / s.subject
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"{s.version}-{s.id}{ext[s.schema_type]}").write_text(s.schema)
    src = schemas_from_directory(str(tmp_path))
    if corpus.fmt == "avro":  # Avro references are named types: not told by the file
        return
    plan = plan_column(src, "value", corpus.fmt, subject="orders-value")
    arr, problems = ColumnDecoder(plan).decode(pa.array(corpus.wire, pa.binary()))
    assert problems == [] and arr.to_pylist() == expected(corpus.values, corpus.fmt)
