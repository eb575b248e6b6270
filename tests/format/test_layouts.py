"""Byte layouts and format values are declared once (records/entry.py, records/batch_v2.py,
records/legacy.py, records/record_batch.py, the codec framings in records/compression/, the index
entries, the registry's wire header); the C units' constants must agree with those declarations."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from kafka_format.log.cleaner import plan as cleaner_plan
from kafka_format.records import batch_v2, entry, framing, legacy, record_batch
from kafka_format.records.compression import gzip, lz4, snappy
from kafka_format.registry import columns as typed_columns
from kafka_format.registry import wire
from kafka_format.storage import partition_files
from kafka_format.writer import batches as writer_batches

PACKAGE = Path(__file__).resolve().parents[2] / "kafka_format"
C_SOURCE = PACKAGE / "records" / "_fastformat.h"   # the format's constants


def _c_defines(source: Path = C_SOURCE) -> dict[str, int]:
    """The plain integer ``#define``s of a C unit (a number, optionally in parentheses; u/ull suffixes)."""
    out = {}
    for m in re.finditer(r"^#define\s+([A-Z0-9_]+)\s+\(?(-?(?:0x[0-9A-Fa-f]+|\d+))(?:u|ull)?\)?(?:\s|$)",
                         source.read_text(), re.MULTILINE):
        out[m.group(1)] = int(m.group(2), 0)
    return out


def test_entry_prefix_is_kafkas_records_layout() -> None:
    # Records.java: OFFSET_OFFSET 0, SIZE_OFFSET 8, LOG_OVERHEAD 12, MAGIC_OFFSET 16, HEADER_SIZE_UP_TO_MAGIC 17
    assert (entry.OFFSET_OFFSET, entry.SIZE_OFFSET, entry.LOG_OVERHEAD, entry.MAGIC_OFFSET,
            entry.HEADER_SIZE_UP_TO_MAGIC) == (0, 8, 12, 16, 17)
    assert entry.ENTRY.unpack(struct.pack(">qi", -5, 99)) == (-5, 99)
    # every module that frames entries uses that one declaration
    assert legacy.ENTRY is framing.ENTRY is writer_batches.ENTRY is entry.ENTRY
    assert batch_v2.HEADER.format.startswith(entry.ENTRY.format)
    assert writer_batches.V2_HEADER is batch_v2.HEADER
    # DefaultRecordBatch: crc at 17, attributes (the CRC's start) at 21, RECORD_BATCH_OVERHEAD 61
    assert (batch_v2.CRC_OFFSET, batch_v2.ATTRIBUTES_OFFSET, batch_v2.HEADER_SIZE) == (17, 21, 61)


def test_c_decoder_constants_match_the_declared_layouts() -> None:
    c = _c_defines()
    want = {
        "LOG_OVERHEAD": entry.LOG_OVERHEAD,
        "MAGIC_OFFSET": entry.MAGIC_OFFSET,
        "HEADER_SIZE_UP_TO_MAGIC": entry.HEADER_SIZE_UP_TO_MAGIC,
        "V2_HEADER_SIZE": batch_v2.HEADER_SIZE,
        "MAGIC_V2": record_batch.MAGIC_V2,
        "NO_SEQUENCE": record_batch.NO_SEQUENCE,
        "V2_CODEC_MASK": record_batch.CODEC_MASK,
    }
    optional = {
        "MIN_ENTRY_SIZE": legacy.RECORD_OVERHEAD_V0,
        "V2_CRC_OFFSET": batch_v2.CRC_OFFSET,
        "V2_ATTRIBUTES_OFFSET": batch_v2.ATTRIBUTES_OFFSET,
        "V2_COUNT_OFFSET": batch_v2.HEADER_SIZE - struct.calcsize(">i"),   # recordsCount is the last field
        "MIN_V2_RECORD_SIZE": batch_v2.MIN_RECORD_SIZE,
    }
    missing = sorted(set(want) - set(c))
    assert missing == [], f"_fastformat.h no longer #defines {missing}: declare them or update this test"
    assert {k: c[k] for k in want} == want
    assert {k: c[k] for k in optional if k in c} == {k: v for k, v in optional.items() if k in c}


@pytest.mark.parametrize(("unit", "want"), [
    ("records/_fastcodecs.h", {   # codec ids of the attributes (records/record_batch.py)
        "KF_CODEC_GZIP": record_batch.GZIP, "KF_CODEC_SNAPPY": record_batch.SNAPPY, "KF_CODEC_LZ4": record_batch.LZ4,
        "KF_CODEC_ZSTD": record_batch.ZSTD,
    }),
    ("records/_fastcodecs.c", {   # the framings the C path accepts
        "LZ4_FRAME_MAGIC": lz4.LZ4_FRAME_MAGIC,
        "LZ4_FLG_FIXED": (lz4.LZ4_FLG_VERSION << lz4.LZ4_FLG_VERSION_SHIFT) | lz4.LZ4_FLG_INDEPENDENT,
        "LZ4_FLG_BLOCK_CHECKSUM": lz4.LZ4_FLG_BLOCK_CHECKSUM,
        "LZ4_FLG_CONTENT_SIZE": lz4.LZ4_FLG_CONTENT_SIZE,
        "LZ4_FLG_CONTENT_CHECKSUM": lz4.LZ4_FLG_CONTENT_CHECKSUM,
        "LZ4_STORED": lz4.LZ4_INCOMPRESSIBLE_MASK,
        "XERIAL_HEADER": snappy.XERIAL_HEADER.size,
        "GZIP_HEADER": gzip.GZIP_HEADER.size,
        "GZIP_TRAILER": gzip.GZIP_TRAILER.size,
    }),
    ("records/_fastdir.c", {"NAME_DIGITS": partition_files.OFFSET_DIGITS}),
    ("registry/_columns.h", {"WIRE_HEADER": wire.HEADER_SIZE}),   # the typed column decoders share it
    ("log/cleaner/_kernels.c", {"HASH_SIZE": cleaner_plan.MD5_BYTES,
                                "ENTRY_SIZE": cleaner_plan.MD5_BYTES + cleaner_plan.OFFSET_BYTES}),
], ids=lambda v: v if isinstance(v, str) else "")
def test_other_c_units_constants_match_the_declared_layouts(unit: str, want: dict[str, int]) -> None:
    c = _c_defines(PACKAGE / unit)
    missing = sorted(set(want) - set(c))
    assert missing == [], f"{unit} no longer #defines {missing}: update this test"
    assert {k: c[k] for k in want} == want


def test_c_codec_names_are_the_declared_ones() -> None:
    """``_fastcodecs.c`` names the codecs (``KAFKA_FORMAT_C_CODECS``, ``CODEC_LIBRARIES``) by id as
    ``CompressionType.name`` does."""
    m = re.search(r"CODEC_NAMES\[\]\s*=\s*\{([^}]*)\}", (PACKAGE / "records" / "_fastcodecs.c").read_text())
    assert m is not None, "_fastcodecs.c no longer declares CODEC_NAMES[]: update this test"
    assert tuple(re.findall(r'"([^"]*)"', m.group(1))) == record_batch.CODEC_NAMES


@pytest.mark.parametrize("unit", ["registry/_avrocolumns.c", "registry/_protocolumns.c"])
def test_schema_compilers_stay_below_the_c_nesting_limit(unit: str) -> None:
    """An Avro or Protobuf program compiled to ``registry.columns.MAX_DEPTH`` levels never reaches the
    C loop's limit."""
    assert typed_columns.MAX_DEPTH < _c_defines(PACKAGE / unit)["MAX_DEPTH"]
