"""The KRaft metadata records each Kafka release knows, as changes to :data:`SCHEMAS` (the newest: 4.4.0).

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

Releases before 3.9 decode with 3.9.1's schemas (:data:`OLDEST_RELEASE`; not compared).
``tests/conformance/test_dump_conformance.py`` checks :func:`metadata_schemas` of 3.9 and 4.4
against the JSON inside the conformance suite's ``kafka-metadata`` jars of 3.9.1 and 4.4.0.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from kafka_format.internal.schemas import SCHEMAS, newer

__all__ = ["METADATA_CHANGES", "OLDEST_RELEASE", "metadata_schemas"]

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


@functools.lru_cache(maxsize=16)
def metadata_schemas(release: Release) -> dict[str, dict[str, Any]]:
    """The metadata record schemas of Kafka ``release`` (major, minor): name -> schema, as in
    :data:`SCHEMAS` (pre-release variants ``Name@variant`` included; they are read by no release)."""
    newer.apply(SCHEMAS)   # idempotent: the newest set is the generated one plus its newer records
    out = {name: doc for name, doc in SCHEMAS.items() if doc.get("type") == "metadata"}
    for since, name, before, fields in METADATA_CHANGES:
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
