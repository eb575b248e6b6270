"""Byte layouts are declared once (records/entry.py, records/batch_v2.py, records/legacy.py); the
compiled decoder's C constants must agree with those declarations."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from kafka_format.records import batch_v2, entry, framing, legacy
from kafka_format.writer import batches as writer_batches

C_SOURCE = Path(__file__).resolve().parents[2] / "kafka_format" / "records" / "_fastdecode.h"   # the format's constants


def _c_defines() -> dict[str, int]:
    out = {}
    for m in re.finditer(r"^#define\s+([A-Z0-9_]+)\s+\(?(-?(?:0x[0-9A-Fa-f]+|\d+))u?\)?", C_SOURCE.read_text(),
                         re.MULTILINE):
        out[m.group(1)] = int(m.group(2), 0)
    return out


def test_entry_prefix_is_kafkas_records_layout() -> None:
    # Records.java: OFFSET_OFFSET 0, SIZE_OFFSET 8, LOG_OVERHEAD 12, MAGIC_OFFSET 16, HEADER_SIZE_UP_TO_MAGIC 17
    assert (entry.OFFSET_OFFSET, entry.SIZE_OFFSET, entry.LOG_OVERHEAD, entry.MAGIC_OFFSET,
            entry.HEADER_SIZE_UP_TO_MAGIC) == (0, 8, 12, 16, 17)
    assert entry.ENTRY.unpack(struct.pack(">qi", -5, 99)) == (-5, 99)
    # every module that frames entries uses that one declaration
    assert legacy.ENTRY is framing.ENTRY is writer_batches.LOG_ENTRY_PREFIX is entry.ENTRY
    assert batch_v2.HEADER.format.startswith(entry.ENTRY.format)
    assert writer_batches.V2_HEADER.format == batch_v2.HEADER.format
    # DefaultRecordBatch: crc at 17, attributes (the CRC's start) at 21, RECORD_BATCH_OVERHEAD 61
    assert (batch_v2.CRC_OFFSET, batch_v2.ATTRIBUTES_OFFSET, batch_v2.HEADER_SIZE) == (17, 21, 61)


def test_c_decoder_constants_match_the_declared_layouts() -> None:
    c = _c_defines()
    want = {
        "LOG_OVERHEAD": entry.LOG_OVERHEAD,
        "MAGIC_OFFSET": entry.MAGIC_OFFSET,
        "HEADER_SIZE_UP_TO_MAGIC": entry.HEADER_SIZE_UP_TO_MAGIC,
        "V2_HEADER_SIZE": batch_v2.HEADER_SIZE,
    }
    optional = {
        "MIN_ENTRY_SIZE": legacy.RECORD_OVERHEAD_V0,
        "V2_CRC_OFFSET": batch_v2.CRC_OFFSET,
        "V2_ATTRIBUTES_OFFSET": batch_v2.ATTRIBUTES_OFFSET,
        "V2_COUNT_OFFSET": batch_v2.HEADER_SIZE - struct.calcsize(">i"),   # recordsCount is the last field
        "V2_CODEC_MASK": batch_v2.CODEC_MASK,
        "MIN_V2_RECORD_SIZE": batch_v2.MIN_RECORD_SIZE,
    }
    missing = sorted(set(want) - set(c))
    assert missing == [], f"_fastdecode.h no longer #defines {missing}: declare them or update this test"
    assert {k: c[k] for k in want} == want
    assert {k: c[k] for k in optional if k in c} == {k: v for k, v in optional.items() if k in c}
