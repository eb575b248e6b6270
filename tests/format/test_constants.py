"""Kafka's constants are declared once, in the lowest layer that owns them, and imported everywhere else
(the C units' copies are checked in test_layouts.py).  A module-level assignment of one of these names
(or of a private ``_NAME`` copy) anywhere but its home fails here; so does the return of a name that
was a copy under another name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kafka_format"

# name -> the one module that assigns it
HOMES: dict[str, str] = {
    **dict.fromkeys((
        "MAGIC_V0", "MAGIC_V1", "MAGIC_V2", "MAGICS",
        "NO_TIMESTAMP", "NO_PRODUCER_ID", "NO_PRODUCER_EPOCH", "NO_SEQUENCE", "NO_PARTITION_LEADER_EPOCH",
        "NO_TIMESTAMP_TYPE", "CREATE_TIME", "LOG_APPEND_TIME",
        "CODEC_MASK", "TIMESTAMP_TYPE_MASK", "TRANSACTIONAL_MASK", "CONTROL_MASK", "DELETE_HORIZON_MASK",
        "GZIP", "SNAPPY", "LZ4", "ZSTD", "CODEC_NAMES", "MAX_CODEC",
    ), "records/record_batch.py"),
    **dict.fromkeys(("ENTRY", "OFFSET_OFFSET", "SIZE_OFFSET", "LOG_OVERHEAD", "MAGIC_OFFSET",
                     "HEADER_SIZE_UP_TO_MAGIC"), "records/entry.py"),
    **dict.fromkeys(("MESSAGE_V0", "MESSAGE_V1", "LENGTH", "RECORD_OVERHEAD_V0", "RECORD_OVERHEAD_V1"),
                    "records/legacy.py"),
    **dict.fromkeys(("ATTRIBUTES_OFFSET", "RECORDS_OFFSET", "MIN_RECORD_SIZE"), "records/batch_v2.py"),
    **dict.fromkeys(("MIN_ENTRY_SIZE", "MIN_V2_BATCH_SIZE", "NO_VALUE"), "records/framing.py"),
    **dict.fromkeys(("CONTROL_KEY", "END_TXN_VALUE", "CONTROL_ABORT", "CONTROL_COMMIT", "CONTROL_TYPE_NAMES"),
                    "records/control.py"),
    "MODES": "records/file_records.py",
    **dict.fromkeys(("INT32_MIN", "INT32_MAX", "INT64_MIN", "INT64_MAX"), "common/limits.py"),
    **dict.fromkeys(("ENV_VAR", "REFERENCE"), "common/extensions.py"),
    "ZERO_UUID": "common/kafka_uuid.py",
    **dict.fromkeys(("CONSUMER_OFFSETS_TOPIC", "TRANSACTION_STATE_TOPIC", "SHARE_GROUP_STATE_TOPIC",
                     "METADATA_TOPIC", "REMOTE_LOG_METADATA_TOPIC"), "common/topics.py"),
    **dict.fromkeys((
        "RECOVERY_POINT_CHECKPOINT", "LOG_START_OFFSET_CHECKPOINT", "REPLICATION_OFFSET_CHECKPOINT",
        "CLEANER_OFFSET_CHECKPOINT", "LEADER_EPOCH_CHECKPOINT", "PARTITION_METADATA", "META_PROPERTIES",
        "CLEAN_SHUTDOWN", "QUORUM_STATE", "OFFSET_CHECKPOINT_VERSION", "PARTITION_METADATA_VERSION", "UUID_BYTES",
    ), "storage/checkpoints.py"),
    "NO_TXN_OFFSET": "storage/snapshot.py",
    "OFFSET_DIGITS": "storage/partition_files.py",
    "DELETE_TEXT": "internal/protocol.py",
    "MAX_DEPTH": "registry/columns.py",
    "MAX_MARKER_BYTES": "output/ownership.py",
}

# copies that were declared under another name: they are imported under it now, or gone
RETIRED = ("LONG_MAX", "LONG_MIN", "INT_MAX", "INT_MIN", "NO_TIMESTAMP_MS", "MAX_VALID_CODEC", "CODEC_ZSTD",
           "CODEC_NONE", "CODEC_GZIP", "CODEC_SNAPPY", "CODEC_LZ4", "LEGACY_TIMESTAMP_TYPE_MASK", "FILENAME_DIGITS",
           "CHECKPOINT_VERSION", "DECODER_ENV", "V2_HEADER", "V2_HEADER_SIZE", "V2_CRC_OFFSET",
           "V2_ATTRIBUTES_OFFSET", "V2_LENGTH_END", "TXN_MARKER_VALUE", "LEGACY_LENGTH", "LOG_ENTRY_PREFIX", "FRAME")


def _module_assignments() -> dict[str, list[str]]:
    """Every name assigned at module level (also inside a module-level ``if``/``try``), its leading
    underscores dropped, with the modules (relative paths) assigning it."""
    found: dict[str, list[str]] = {}

    def targets(node: ast.AST) -> list[ast.expr]:
        if isinstance(node, ast.Assign):
            out: list[ast.expr] = []
            for t in node.targets:
                out += list(t.elts) if isinstance(t, ast.Tuple) else [t]
            return out
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            return [node.target]
        return []

    def visit(body: list[ast.stmt], where: str) -> None:
        for node in body:
            for t in targets(node):
                if isinstance(t, ast.Name):
                    found.setdefault(t.id.lstrip("_"), []).append(where)
            if isinstance(node, ast.If):
                visit(node.body + node.orelse, where)
            elif isinstance(node, ast.Try):
                visit(node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body], where)

    for path in sorted(PACKAGE.rglob("*.py")):
        visit(ast.parse(path.read_text(encoding="utf-8")).body, path.relative_to(PACKAGE).as_posix())
    return found


ASSIGNED = _module_assignments()


@pytest.mark.parametrize("name", sorted(HOMES))
def test_declared_once_in_its_home(name: str) -> None:
    assert ASSIGNED.get(name, []) == [HOMES[name]], \
        f"{name} is declared in {ASSIGNED.get(name)}: declare it in {HOMES[name]} only and import it elsewhere"


def test_retired_copies_stay_retired() -> None:
    back = {n: ASSIGNED[n] for n in RETIRED if n in ASSIGNED}
    assert back == {}, "import the constant from its home (see HOMES) instead of declaring a copy"


def test_the_public_names_that_moved_are_still_there() -> None:
    """Modules that exported a constant before it had one home still do (the same object)."""
    from kafka_format import writer
    from kafka_format.cli import dump_read
    from kafka_format.common import extensions, kafka_uuid, limits, topics
    from kafka_format.engine import compaction as engine_compaction
    from kafka_format.internal import kraft_control, protocol
    from kafka_format.log.cleaner import plan, transactions
    from kafka_format.records import (
        batch_v2,
        compression,
        control,
        decoder,
        entry,
        file_records,
        implementation,
        legacy,
        record_batch,
    )
    from kafka_format.registry import typed
    from kafka_format.storage import batch_heads, checkpoints, index, partition_state
    from kafka_format.writer import batches, logdir

    rb = record_batch
    assert batch_v2.CODEC_MASK is legacy.CODEC_MASK is compression.CODEC_MASK is rb.CODEC_MASK
    assert (batch_v2.TIMESTAMP_TYPE_MASK, batch_v2.TRANSACTIONAL_MASK, batch_v2.CONTROL_MASK,
            batch_v2.DELETE_HORIZON_MASK, batch_v2.NO_SEQUENCE) == (0x08, 0x10, 0x20, 0x40, -1)
    assert (compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD) == \
        (rb.NONE, rb.GZIP, rb.SNAPPY, rb.LZ4, rb.ZSTD) == (0, 1, 2, 3, 4)
    assert compression.CODEC_NAMES is batches.CODEC_NAMES is rb.CODEC_NAMES
    assert (writer.CODEC_NONE, writer.CODEC_GZIP, writer.CODEC_SNAPPY, writer.CODEC_LZ4, writer.CODEC_ZSTD) == (0, 1, 2, 3, 4)
    assert (writer.CREATE_TIME, writer.LOG_APPEND_TIME, batches.NO_TIMESTAMP, batches.NO_PRODUCER_ID,
            batches.NO_PRODUCER_EPOCH, batches.NO_SEQUENCE, batches.NO_PARTITION_LEADER_EPOCH) == (0, 1, -1, -1, -1, -1, -1)
    assert (batches.MAGIC_V0, batches.MAGIC_V1, batches.MAGIC_V2) == rb.MAGICS == (0, 1, 2)
    assert batches.V2_HEADER is batch_v2.HEADER and batches.V2_HEADER_SIZE == batch_v2.HEADER_SIZE == 61
    assert (writer.CONTROL_ABORT, writer.CONTROL_COMMIT) == (transactions.CONTROL_ABORT, transactions.CONTROL_COMMIT) \
        == (control.CONTROL_ABORT, control.CONTROL_COMMIT) == (0, 1)
    assert kraft_control.CONTROL_TYPE_NAMES is control.CONTROL_TYPE_NAMES
    assert control.CONTROL_TYPE_NAMES[6] == "KRAFT_VOTERS" and -1 not in control.CONTROL_TYPE_NAMES
    assert index.NO_TIMESTAMP == batch_heads.NO_TIMESTAMP == partition_state.NO_TIMESTAMP == rb.NO_TIMESTAMP
    assert batch_heads.NO_PRODUCER_ID == batch_heads.NO_PARTITION_LEADER_EPOCH == -1
    assert index.MAX_INDEX_FILE_BYTES == plan.INT32_MAX == limits.INT32_MAX == (1 << 31) - 1
    assert limits.INT64_MAX == (1 << 63) - 1 and limits.INT64_MIN == -(1 << 63) and limits.INT32_MIN == -(1 << 31)
    assert checkpoints.ZERO_UUID is protocol.ZERO_UUID is kafka_uuid.ZERO_UUID
    assert protocol.uuid_to_str is checkpoints.uuid_to_string is kafka_uuid.uuid_to_string
    assert protocol.uuid_to_str(bytes(16)) == kafka_uuid.ZERO_UUID
    assert logdir.RECOVERY_POINT_CHECKPOINT is checkpoints.RECOVERY_POINT_CHECKPOINT
    assert logdir.CHECKPOINT_VERSION == checkpoints.OFFSET_CHECKPOINT_VERSION == 0
    assert engine_compaction.METADATA_TOPIC is topics.METADATA_TOPIC == "__cluster_metadata"
    assert typed.MODES is file_records.MODES
    assert implementation.ENV_VAR is extensions.ENV_VAR and decoder.REFERENCE is extensions.REFERENCE
    assert dump_read.RECORD_OVERHEAD_V0 == legacy.RECORD_OVERHEAD_V0 and dump_read.ENTRY is entry.ENTRY
