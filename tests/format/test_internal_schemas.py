"""The generated message schemas: one module per source area of Kafka's tree, merged by name.

``SCHEMAS`` must be exactly the area modules' schemas (plus the few ``newer`` adds at import, less
the few it removes), and
the generated files must be what ``_generate.py`` writes from Kafka's JSON definitions at
``SOURCE_COMMIT``: that check needs a Kafka git checkout or mirror (``$KLA_KAFKA_GIT``) and skips
without one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_format.internal import schemas
from kafka_format.internal.schemas import _generate, newer

AREA_MODULES = [getattr(schemas, module) for _directory, module, _about in _generate.AREAS]


def test_schemas_is_the_union_of_the_area_modules() -> None:
    seen: dict[str, str] = {}
    removed = {name for names in newer._REMOVED_SCHEMAS.values() for name in names}
    for area in AREA_MODULES:
        for name, doc in area.SCHEMAS.items():
            assert name not in seen, f"{name} is in both {seen[name]} and {area.__name__}"
            seen[name] = area.__name__
            if name not in removed:
                assert schemas.SCHEMAS[name] is doc        # the same object: newer.apply edits both
    added = {name for area in newer._ADDED_SCHEMAS.values() for name in area}
    assert not added & set(seen)
    assert removed <= set(seen) and not removed & set(schemas.SCHEMAS)
    assert set(schemas.SCHEMAS) == (set(seen) - removed) | added
    generated = [name for name in schemas.SCHEMAS if name not in added]
    assert generated == sorted(generated)


def test_each_area_holds_its_own_kind_of_message() -> None:
    # the KRaft metadata records carry an apiKey and type "metadata"; the coordinators' records
    # are keys and values ("coordinator-key"/"coordinator-value", or "data" for the older ones)
    by_module = {area.__name__.rpartition(".")[2]: area.SCHEMAS for area in AREA_MODULES}
    assert by_module["metadata"] and all(doc["type"] == "metadata" for doc in by_module["metadata"].values())
    for module in ("group_coordinator", "transaction_coordinator"):
        assert by_module[module]
        assert all(name.endswith(("Key", "Value")) for name in by_module[module]), module
    assert {"ConsumerProtocolSubscription", "ConsumerProtocolAssignment", "LeaderChangeMessage"} <= set(
        by_module["clients"])
    # tiered storage's __remote_log_metadata records are "metadata" records too, with api keys 0 to 3
    # that the KRaft records also use: an area of their own, looked up apart
    remote = {name: doc["apiKey"] for name, doc in by_module["storage"].items() if "apiKey" in doc}
    assert remote == {"RemoteLogSegmentMetadataRecord": 0, "RemoteLogSegmentMetadataUpdateRecord": 1,
                      "RemotePartitionDeleteMetadataRecord": 2, "RemoteLogSegmentMetadataSnapshotRecord": 3}
    assert all(by_module["storage"][name]["type"] == "metadata" for name in remote)
    assert {doc["apiKey"] for doc in by_module["metadata"].values()} >= set(remote.values())


def test_api_keys_are_looked_up_per_area() -> None:
    from kafka_format.internal.cluster_metadata import METADATA_RECORD_TYPES
    from kafka_format.internal.remote_log_metadata import REMOTE_LOG_METADATA_RECORD_TYPES
    from kafka_format.internal.schemas.releases import area_schemas, metadata_schemas, storage_schemas

    assert METADATA_RECORD_TYPES[0] == "RegisterBrokerRecord" and METADATA_RECORD_TYPES[2] == "TopicRecord"
    assert REMOTE_LOG_METADATA_RECORD_TYPES == {0: "RemoteLogSegmentMetadataRecord",
                                                1: "RemoteLogSegmentMetadataUpdateRecord",
                                                2: "RemotePartitionDeleteMetadataRecord",
                                                3: "RemoteLogSegmentMetadataSnapshotRecord"}
    assert not set(metadata_schemas((4, 4))) & set(storage_schemas((4, 4)))
    assert "ClearElrRecord" in area_schemas("metadata") and "ClearElrRecord" not in area_schemas("storage")
    # TxnIndexEmpty (KIP-1058) came with 4.0; 3.9 has no ProducerSnapshot schema either
    fields = {r: [f["name"] for f in storage_schemas(r)["RemoteLogSegmentMetadataRecord"]["fields"]]
              for r in ((3, 9), (4, 0))}
    assert "TxnIndexEmpty" not in fields[(3, 9)] and fields[(4, 0)][-1] == "TxnIndexEmpty"
    assert "ProducerSnapshot" not in storage_schemas((3, 9)) and "ProducerSnapshot" in storage_schemas((4, 0))


def test_generated_modules_equal_a_fresh_generation(tmp_path: Path) -> None:
    kafka_git = os.environ.get("KLA_KAFKA_GIT")
    if not kafka_git:
        pytest.skip("set KLA_KAFKA_GIT to an Apache Kafka git checkout or mirror to regenerate the schemas")
    here = Path(_generate.__file__).parent
    shutil.copy(here / "_generate.py", tmp_path / "_generate.py")
    subprocess.run([sys.executable, str(tmp_path / "_generate.py"), kafka_git, schemas.SOURCE_COMMIT],
                   check=True, capture_output=True, text=True)
    written = sorted(p.name for p in tmp_path.glob("*.py") if p.name != "_generate.py")
    assert written == sorted(["__init__.py", *(f"{m}.py" for _d, m, _a in _generate.AREAS)])
    for name in written:
        assert (tmp_path / name).read_bytes() == (here / name).read_bytes(), name
