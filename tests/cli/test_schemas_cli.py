"""klogs schemas LOGDIR...: the subjects, versions, ids and types of the _schemas topic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testhelpers import REPO, load_module

from kafka_format.cli import main

corpus_mod = load_module("registry_corpus", REPO / "tests" / "registry" / "registry_corpus.py")


def test_lists_subjects_versions_ids_and_types(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = corpus_mod.make_corpus(tmp_path / "logs", "protobuf", n1=1, n2=1)
    assert main(["schemas", str(c.root), "--format", "jsonl"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(x["subject"], x["version"], x["id"], x["schemaType"]) for x in lines] == [
        ("orders-value", 1, c.ids["v1"], "PROTOBUF"),
        ("orders-value", 2, c.ids["v2"], "PROTOBUF"),
        ("shop/money.proto", 1, c.ids["money"], "PROTOBUF"),
    ]
    assert lines[0]["references"] == [
        {"name": "shop/money.proto", "subject": "shop/money.proto", "version": 1}
    ]
    assert main(["schemas", str(c.root)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["subject", "version", "id", "type", "references", "deleted"]
    assert table[2].split()[:4] == ["orders-value", "1", str(c.ids["v1"]), "PROTOBUF"]


def test_soft_deleted_versions_only_on_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = {"keytype": "SCHEMA", "subject": "t-value", "version": 1, "magic": 1}
    val = {"subject": "t-value", "version": 1, "id": 3, "schema": '"string"', "deleted": False}
    root = corpus_mod.write_log_dir(tmp_path / "logs", [(key, val), (key, {**val, "deleted": True})], {})
    assert main(["schemas", str(root), "--format", "jsonl"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["schemas", str(root), "--format", "jsonl", "--include-deleted"]) == 0
    assert json.loads(capsys.readouterr().out)["deleted"] is True


def test_no_schemas_topic_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = corpus_mod.write_log_dir(tmp_path / "logs", [], {"orders": [(b"k", b"v")]})
    import shutil

    shutil.rmtree(root / "_schemas-0")
    assert main(["schemas", str(root)]) == 2
    assert "no '_schemas' partition" in capsys.readouterr().err
    assert main(["schemas", str(tmp_path / "missing")]) == 2
