"""Decoded records as numpy columns.

Both decoders (reference and compiled) produce :class:`RecordColumns`;
:mod:`kafka_format.records.assembly` turns them plus the
:class:`~kafka_format.records.framing.BatchTable` of their batches into ``pyarrow.RecordBatch``es
of ``RECORD_SCHEMA``.

Layout (n records, h headers; offsets are Arrow-style int32 with a leading 0)::

    batch_row int32[n]  offset int64[n]  timestamp int64[n] (ms, LogAppendTime applied)
    timestamp_type int8[n]  sequence int32[n]
    key_offsets int32[n+1]  key_data uint8[]  key_valid bool[n]     (same for value_*)
    header_offsets int32[n+1]   record i owns headers [header_offsets[i], header_offsets[i+1])
    header_key_offsets int32[h+1]  header_key_data uint8[]
    header_value_offsets int32[h+1]  header_value_data uint8[]  header_value_valid bool[h]
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from kafka_format.records.record_batch import CODEC_NAMES

__all__ = [
    "FileContext",
    "RecordColumns",
    "RecordColumnsBuilder",
    "codec_name",
]

def codec_name(codec: int) -> str:
    """Kafka's name of a codec id (``CompressionType.name``); ``unknown(N)`` for 5-7."""
    return CODEC_NAMES[codec] if 0 <= codec < len(CODEC_NAMES) else f"unknown({codec})"


@dataclass(frozen=True)
class FileContext:
    """Where decoded bytes come from: fills the provenance columns."""

    path: str | None = None
    topic: str | None = None
    partition: int | None = None
    segment: int | None = None
    log_dir: str | None = None
    broker_id: int | None = None


@dataclass
class RecordColumns:
    """Decoded records of some batches of one :class:`BatchTable` (see module doc)."""

    batch_row: np.ndarray
    offset: np.ndarray
    timestamp: np.ndarray
    timestamp_type: np.ndarray
    sequence: np.ndarray
    key_offsets: np.ndarray
    key_data: np.ndarray
    key_valid: np.ndarray
    value_offsets: np.ndarray
    value_data: np.ndarray
    value_valid: np.ndarray
    header_offsets: np.ndarray
    header_key_offsets: np.ndarray
    header_key_data: np.ndarray
    header_value_offsets: np.ndarray
    header_value_data: np.ndarray
    header_value_valid: np.ndarray

    def __len__(self) -> int:
        return len(self.offset)

    @classmethod
    def empty(cls) -> RecordColumns:
        """No records."""
        return RecordColumnsBuilder().build()

    def take(self, lo: int, hi: int) -> RecordColumns:
        """Records ``lo..hi`` as a view sharing this object's data: the per-record columns sliced,
        the ``*_offsets`` columns sliced without rebasing (they start where record ``lo``'s bytes
        and headers start), the data and header columns whole."""
        per_record = {"batch_row", "offset", "timestamp", "timestamp_type", "sequence", "key_valid", "value_valid"}
        cut: dict[str, np.ndarray] = {}
        for f in fields(self):
            arr = getattr(self, f.name)
            if f.name in per_record:
                cut[f.name] = arr[lo:hi]
            elif f.name in ("key_offsets", "value_offsets", "header_offsets"):
                cut[f.name] = arr[lo:hi + 1]
            else:
                cut[f.name] = arr
        return RecordColumns(**cut)

    @classmethod
    def concat(cls, parts: list[RecordColumns]) -> RecordColumns:
        """Records of ``parts`` in order (offset arrays are rebased)."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty()
        if len(parts) == 1:
            return parts[0]
        cat: dict[str, np.ndarray] = {}
        for f in fields(cls):
            arrays = [getattr(p, f.name) for p in parts]
            if f.name.endswith("_offsets"):
                pieces = [arrays[0]]
                base = int(arrays[0][-1])
                for arr in arrays[1:]:
                    pieces.append(arr[1:].astype(np.int64) + base)
                    base += int(arr[-1])
                cat[f.name] = _as_int32_offsets(np.concatenate(pieces).astype(np.int64))
            else:
                cat[f.name] = np.concatenate(arrays)
        return cls(**cat)


def _as_int32_offsets(offsets: np.ndarray) -> np.ndarray:
    if len(offsets) and int(offsets[-1]) > np.iinfo(np.int32).max:
        from kafka_format.common.errors import KafkaFormatError

        raise KafkaFormatError("decoded data exceed 2 GiB in one Arrow batch",
                               expected="< 2 GiB per column", found=str(int(offsets[-1])))
    return offsets.astype(np.int32)


class RecordColumnsBuilder:
    """Append-only accumulator used by the reference decoders."""

    def __init__(self) -> None:
        self.batch_row: list[int] = []
        self.offset: list[int] = []
        self.timestamp: list[int] = []
        self.timestamp_type: list[int] = []
        self.sequence: list[int] = []
        self.key_offsets = [0]
        self.key_data = bytearray()
        self.key_valid: list[bool] = []
        self.value_offsets = [0]
        self.value_data = bytearray()
        self.value_valid: list[bool] = []
        self.header_offsets = [0]
        self.header_key_offsets = [0]
        self.header_key_data = bytearray()
        self.header_value_offsets = [0]
        self.header_value_data = bytearray()
        self.header_value_valid: list[bool] = []

    @property
    def rows(self) -> int:
        return len(self.offset)

    @property
    def headers(self) -> int:
        return len(self.header_value_valid)

    def add_header(self, key: bytes, value: bytes | None) -> None:
        """Add a header of the record that the next :meth:`add_record` adds."""
        self.header_key_data += key
        self.header_key_offsets.append(len(self.header_key_data))
        if value is not None:
            self.header_value_data += value
        self.header_value_offsets.append(len(self.header_value_data))
        self.header_value_valid.append(value is not None)

    def add_record(self, *, batch_row: int, offset: int, timestamp: int, timestamp_type: int,
                   sequence: int, key: bytes | None, value: bytes | None) -> None:
        """Add one record (its headers were added just before)."""
        self.batch_row.append(batch_row)
        self.offset.append(offset)
        self.timestamp.append(timestamp)
        self.timestamp_type.append(timestamp_type)
        self.sequence.append(sequence)
        if key is not None:
            self.key_data += key
        self.key_offsets.append(len(self.key_data))
        self.key_valid.append(key is not None)
        if value is not None:
            self.value_data += value
        self.value_offsets.append(len(self.value_data))
        self.value_valid.append(value is not None)
        self.header_offsets.append(len(self.header_value_valid))

    def truncate(self, rows: int, headers: int) -> None:
        """Drop everything after the first ``rows`` records and ``headers`` headers."""
        for name in ("batch_row", "offset", "timestamp", "timestamp_type", "sequence",
                     "key_valid", "value_valid"):
            del getattr(self, name)[rows:]
        del self.key_offsets[rows + 1:]
        del self.value_offsets[rows + 1:]
        del self.header_offsets[rows + 1:]
        del self.key_data[self.key_offsets[-1]:]
        del self.value_data[self.value_offsets[-1]:]
        del self.header_value_valid[headers:]
        del self.header_key_offsets[headers + 1:]
        del self.header_value_offsets[headers + 1:]
        del self.header_key_data[self.header_key_offsets[-1]:]
        del self.header_value_data[self.header_value_offsets[-1]:]

    def build(self) -> RecordColumns:
        """Freeze into numpy columns."""
        return RecordColumns(
            batch_row=np.array(self.batch_row, dtype=np.int32),
            offset=np.array(self.offset, dtype=np.int64),
            timestamp=np.array(self.timestamp, dtype=np.int64),
            timestamp_type=np.array(self.timestamp_type, dtype=np.int8),
            sequence=np.array(self.sequence, dtype=np.int32),
            key_offsets=_as_int32_offsets(np.array(self.key_offsets, dtype=np.int64)),
            key_data=np.frombuffer(bytes(self.key_data), dtype=np.uint8),
            key_valid=np.array(self.key_valid, dtype=np.bool_),
            value_offsets=_as_int32_offsets(np.array(self.value_offsets, dtype=np.int64)),
            value_data=np.frombuffer(bytes(self.value_data), dtype=np.uint8),
            value_valid=np.array(self.value_valid, dtype=np.bool_),
            header_offsets=_as_int32_offsets(np.array(self.header_offsets, dtype=np.int64)),
            header_key_offsets=_as_int32_offsets(np.array(self.header_key_offsets, dtype=np.int64)),
            header_key_data=np.frombuffer(bytes(self.header_key_data), dtype=np.uint8),
            header_value_offsets=_as_int32_offsets(np.array(self.header_value_offsets, dtype=np.int64)),
            header_value_data=np.frombuffer(bytes(self.header_value_data), dtype=np.uint8),
            header_value_valid=np.array(self.header_value_valid, dtype=np.bool_),
        )
