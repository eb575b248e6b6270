"""The registry's state replayed from _schemas records: the rules of Confluent's
KafkaStoreReaderThread / KafkaStoreMessageHandler / InMemoryCache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from registry_corpus import FORMATS, make_corpus, write_log_dir

from kafka_format.registry import SchemaStore, schemas_from_log_dirs


def k(subject: str, version: int, magic: int = 1) -> bytes:
    return json.dumps({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": magic}).encode()


def v(subject: str, version: int, sid: int, schema: str = '"string"', **extra: Any) -> bytes:
    return json.dumps({"subject": subject, "version": version, "id": sid, "schema": schema, **extra}).encode()


def test_versions_ids_types_and_latest() -> None:
    s = SchemaStore()
    s.apply(k("a-value", 1), v("a-value", 1, 1))
    s.apply(k("a-value", 2), v("a-value", 2, 2, '"long"'))
    s.apply(k("p-value", 1), v("p-value", 1, 3, 'syntax = "proto3";', schemaType="PROTOBUF"))
    assert s.subjects() == ["a-value", "p-value"]
    assert [x.version for x in s.versions("a-value")] == [1, 2]
    assert s.latest("a-value").id == 2
    assert s.by_id(1).schema_type == "AVRO"  # schemaType absent means AVRO
    assert s.by_id(3).schema_type == "PROTOBUF"
    assert s.ids() == [1, 2, 3]


def test_references_keep_their_versions_and_the_schema_its_own() -> None:
    # a reference's version is the referenced subject's, never the registering schema's; one without
    # an integer version is dropped
    s = SchemaStore()
    s.apply(k("money", 1), v("money", 1, 1))
    refs = [{"name": "money.avsc", "subject": "money", "version": 1},
            {"name": "bad.avsc", "subject": "bad", "version": "1"}]
    s.apply(k("orders-value", 3), v("orders-value", 3, 7, references=refs))
    latest = s.latest("orders-value")
    assert latest is not None and latest.version == 3 and latest.id == 7
    assert [(r.name, r.subject, r.version) for r in latest.references] == [("money.avsc", "money", 1)]


def test_soft_delete_keeps_the_id_resolving_but_not_latest() -> None:
    s = SchemaStore()
    s.apply(k("a-value", 1), v("a-value", 1, 1))
    s.apply(k("a-value", 2), v("a-value", 2, 2, '"long"'))
    s.apply(k("a-value", 2), v("a-value", 2, 2, '"long"', deleted=True))
    assert s.latest("a-value").version == 1
    assert s.by_id(2) is not None and s.by_id(2).deleted
    assert s.subjects() == ["a-value"] and [
        x.version for x in s.versions("a-value", include_deleted=True)
    ] == [1, 2]


def test_tombstone_is_a_hard_delete_and_the_id_goes_with_its_last_holder() -> None:
    s = SchemaStore()
    s.apply(k("a-value", 1), v("a-value", 1, 7))
    s.apply(k("b-value", 1), v("b-value", 1, 7))  # same schema under another subject: same id
    s.apply(k("a-value", 1), None)
    assert s.version("a-value", 1) is None and s.by_id(7).subject == "b-value"
    s.apply(k("b-value", 1), None)
    assert s.by_id(7) is None and s.subjects(include_deleted=True) == []


def test_delete_subject_and_clear_subject() -> None:
    s = SchemaStore()
    for ver in (1, 2, 3):
        s.apply(k("a-value", ver), v("a-value", ver, ver, f'{{"type":"fixed","name":"F","size":{ver}}}'))
    s.apply(
        json.dumps({"keytype": "DELETE_SUBJECT", "subject": "a-value", "magic": 0}).encode(),
        json.dumps({"subject": "a-value", "version": 2}).encode(),
    )
    assert [x.version for x in s.versions("a-value")] == [3]
    assert s.by_id(1).deleted and s.by_id(2).deleted
    s.apply(
        json.dumps({"keytype": "CLEAR_SUBJECT", "subject": "a-value", "magic": 0}).encode(),
        json.dumps({"subject": "a-value"}).encode(),
    )
    assert s.by_id(1) is None and s.by_id(2) is None and s.by_id(3).version == 3


def test_clear_subject_of_a_context_and_of_the_global_context() -> None:
    s = SchemaStore()
    for subject, sid in ((":.a:x-value", 1), (":.a:y-value", 2), (":.b:x-value", 3), ("x-value", 4)):
        s.apply(k(subject, 1), v(subject, 1, sid, deleted=True))
    s.apply(json.dumps({"keytype": "CLEAR_SUBJECT", "subject": ":.a:", "magic": 0}).encode(),
            json.dumps({"subject": ":.a:"}).encode())
    assert s.subjects(include_deleted=True) == [":.b:x-value", "x-value"]
    s.apply(json.dumps({"keytype": "CLEAR_SUBJECT", "subject": ":.__GLOBAL:", "magic": 0}).encode(),
            json.dumps({"subject": ":.__GLOBAL:"}).encode())
    assert s.subjects(include_deleted=True) == []


def test_a_version_registered_again_under_another_id_keeps_the_old_id_pointing_at_it() -> None:
    """InMemoryCache.schemaRegistered maps the new id and never unmaps the old one."""
    s = SchemaStore()
    s.apply(k("a-value", 1), v("a-value", 1, 5, '"string"'))
    s.apply(k("a-value", 1), v("a-value", 1, 6, '"long"'))
    assert s.by_id(6).schema == '"long"' and s.by_id(5).schema == '"long"'
    s.apply(k("a-value", 1), None)
    assert s.by_id(5) is None and s.by_id(6) is None


def test_duplicate_id_with_another_schema_is_ignored_and_bad_keys_skipped() -> None:
    s = SchemaStore()
    s.apply(k("a-value", 1), v("a-value", 1, 1, '"string"'))
    s.apply(k("b-value", 1), v("b-value", 1, 1, '"long"'), offset=5)
    assert s.version("b-value", 1) is None and s.by_id(1).schema == '"string"'
    s.apply(k("c-value", 1, magic=2), v("c-value", 1, 9), offset=6)  # magic must be 0 or 1
    s.apply(b"not json", b"{}", offset=7)
    s.apply(
        json.dumps({"keytype": "CONFIG", "subject": None, "magic": 0}).encode(), None
    )  # tombstone ignored
    assert s.version("c-value", 1) is None
    assert [e.offset for e in s.skipped] == [5, 6, 7]


def test_config_and_mode_values_are_kept() -> None:
    s = SchemaStore()
    s.apply(
        json.dumps({"keytype": "CONFIG", "subject": "a-value", "magic": 0}).encode(),
        json.dumps({"compatibilityLevel": "FULL"}).encode(),
    )
    s.apply(
        json.dumps({"keytype": "MODE", "subject": None, "magic": 0}).encode(),
        json.dumps({"mode": "READONLY"}).encode(),
    )
    assert s.configs == {"a-value": {"compatibilityLevel": "FULL"}} and s.modes == {
        None: {"mode": "READONLY"}
    }


@pytest.mark.parametrize("fmt", FORMATS)
def test_schemas_topic_read_from_a_log_dir(tmp_path: Path, fmt: str) -> None:
    c = make_corpus(tmp_path / "logs", fmt, n1=1, n2=1)
    s = schemas_from_log_dirs([str(c.root)])
    latest = s.latest("orders-value")
    assert latest is not None and latest.version == 2 and latest.id == c.ids["v2"]
    expected_type = {"avro": "AVRO", "protobuf": "PROTOBUF", "json-schema": "JSON"}[fmt]
    assert latest.schema_type == expected_type
    if fmt != "json-schema":
        assert [r.subject for r in latest.references] == [c.schemas[0]["subject"]]
    assert s.configs[None] == {"compatibilityLevel": "BACKWARD"}


def test_log_dir_replay_honours_tombstones_in_offset_order(tmp_path: Path) -> None:
    key = {"keytype": "SCHEMA", "subject": "x-value", "version": 1, "magic": 1}
    val = {"subject": "x-value", "version": 1, "id": 4, "schema": '"string"', "deleted": False}
    root = write_log_dir(tmp_path / "logs", [(key, val), (key, {**val, "deleted": True}), (key, None)], {})
    s = schemas_from_log_dirs([str(root)])
    assert s.by_id(4) is None and s.subjects(include_deleted=True) == []
    assert s.records == 3
