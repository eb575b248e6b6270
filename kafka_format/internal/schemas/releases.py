"""The KRaft metadata records and the tiered-storage metadata records each Kafka release knows, as
changes to :data:`SCHEMAS` (the newest: 4.4.0).

A release's tools read ``__cluster_metadata`` with that release's own generated classes: a record
type added later is an unknown metadata id to them, a field added later is not printed, and a
record version added later is read as far as those classes go (a record class checks no version
of its own; its nested structs refuse versions they do not know).  ``kafka-dump-log --kafka-version V`` must therefore decode
with V's schemas, not the newest.

Derived from the releases' own definitions, ``metadata/src/main/resources/common/metadata/*.json``
as shipped in ``kafka-metadata-<release>.jar`` for 3.9.1, 4.0.0, 4.1.0, 4.2.0, 4.3.0 and 4.4.0,
compared after the trimming of ``_generate.py`` (no comments, no "about" texts); every other
metadata record is the same in all six:

* 4.0.0 added ``ClearElrRecord`` (api key 28);
* 4.3.0 added ``RegisterBrokerRecord`` v4 and ``BrokerRegistrationChangeRecord`` v3, each with the
  tagged field ``CordonedLogDirs`` (3.9.1 to 4.2.0: ``0-3`` and ``0-2``, no such field);
* 4.4.0 added ``UnregisterControllerRecord`` (api key 29).

The ``__remote_log_metadata`` records (``storage/src/main/resources/message/*.json``, as shipped in
``kafka-storage-<release>.jar`` for 3.9.1, 4.0.0 and 4.4.0): 4.0.0 added the tagged field
``TxnIndexEmpty`` to ``RemoteLogSegmentMetadataRecord`` and ``RemoteLogSegmentMetadataSnapshotRecord``
(KIP-1058; 3.9.1 skips it as an unknown tag), and the producer-state ``ProducerSnapshot`` schema
(KAFKA-17056; not a record of the topic); the other two records are the same in all three.

The two sets share apiKeys (0 to 3) and ``"type": "metadata"``: :func:`area_schemas` keeps them
apart, by the area of Kafka's tree their definitions come from.

Releases before 3.9 decode with 3.9.1's schemas (:data:`OLDEST_RELEASE`; not compared).
``tests/conformance/test_dump_conformance.py`` checks :func:`metadata_schemas` of 3.9 and 4.4
against the JSON inside the conformance suite's ``kafka-metadata`` jars of 3.9.1 and 4.4.0, and
:func:`storage_schemas` against its ``kafka-storage`` jars.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from kafka_format.internal import schemas as _areas
from kafka_format.internal.schemas import SCHEMAS, newer

__all__ = ["METADATA_CHANGES", "OLDEST_RELEASE", "STORAGE_CHANGES", "area_schemas", "metadata_schemas",
           "storage_schemas"]

Release = tuple[int, int]

OLDEST_RELEASE: Release = (3, 9)

#: (release that brought it, record, its validVersions before that release or None when the record
#: itself is new, the fields it brought)
METADATA_CHANGES: tuple[tuple[Release, str, str | None, tuple[str, ...]], ...] = (
    ((4, 0), "ClearElrRecord", None, ()),
    ((4, 3), "RegisterBrokerRecord", "0-3", ("CordonedLogDirs",)),
    ((4, 3), "BrokerRegistrationChangeRecord", "0-2", ("CordonedLogDirs",)),
    ((4, 4), "UnregisterControllerRecord", None, ()),
)
#: the same for the ``__remote_log_metadata`` records (area ``storage``)
STORAGE_CHANGES: tuple[tuple[Release, str, str | None, tuple[str, ...]], ...] = (
    ((4, 0), "ProducerSnapshot", None, ()),
    ((4, 0), "RemoteLogSegmentMetadataRecord", "0", ("TxnIndexEmpty",)),
    ((4, 0), "RemoteLogSegmentMetadataSnapshotRecord", "0", ("TxnIndexEmpty",)),
)


def area_schemas(module: str) -> dict[str, dict[str, Any]]:
    """The newest schemas of one area of Kafka's tree (a module of ``_generate.AREAS``: ``"metadata"``,
    ``"storage"``, ...): name -> the schema of :data:`SCHEMAS`, the newer additions included."""
    newer.apply(SCHEMAS)   # idempotent: the newest set is the generated one plus its newer records
    generated = getattr(_areas, module, None)      # an area newer than the generated set has none
    names = (set(generated.SCHEMAS if generated else ()) | newer.added_to_area(module)) \
        - newer.removed_from_area(module)
    return {name: SCHEMAS[name] for name in sorted(names)}


@functools.lru_cache(maxsize=16)
def metadata_schemas(release: Release) -> dict[str, dict[str, Any]]:
    """The metadata record schemas of Kafka ``release`` (major, minor): name -> schema, as in
    :data:`SCHEMAS` (pre-release variants ``Name@variant`` included; they are read by no release)."""
    return _release_schemas("metadata", METADATA_CHANGES, release)


@functools.lru_cache(maxsize=16)
def storage_schemas(release: Release) -> dict[str, dict[str, Any]]:
    """The ``storage`` area's schemas (``__remote_log_metadata`` records, producer snapshot) of Kafka
    ``release`` (major, minor): name -> schema, as in :data:`SCHEMAS`."""
    return _release_schemas("storage", STORAGE_CHANGES, release)


def _release_schemas(module: str, changes: tuple[tuple[Release, str, str | None, tuple[str, ...]], ...],
                     release: Release) -> dict[str, dict[str, Any]]:
    out = area_schemas(module)
    for since, name, before, fields in changes:
        if max(release, OLDEST_RELEASE) >= since:
            continue
        if before is None:
            out.pop(name, None)
            continue
        doc = copy.deepcopy(out[name])
        doc["validVersions"] = before
        doc["fields"] = [f for f in doc["fields"] if f["name"] not in fields]
        out[name] = doc
    return out
