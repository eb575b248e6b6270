"""The batch-header table: headers of a buffer's complete entries as numpy columns.

What :func:`kafka_format.records.framing.scan_entries` and the decoders' ``scan`` return and the
record decoders read; it depends on no record format, so every format module may name it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import ClassVar

import numpy as np

__all__ = ["BatchTable"]


@dataclass
class BatchTable:
    """Headers of the complete entries (batches / shallow messages) of a buffer.

    One element per entry, numpy columns:

    ``position`` int64 (byte position; relative to the scanned buffer as returned by
    ``scan``, absolute in the file after :meth:`shifted`), ``size`` int32 (12 + length:
    bytes of the entry), ``magic`` int8, ``base_offset`` int64 (legacy compressed
    wrapper: -1 until decoded), ``last_offset`` int64, ``count`` int32 (v2
    recordsCount; legacy: 1 plain, -1 wrapper until decoded), ``attributes`` int16
    (v2 as stored; legacy the attribute byte), ``base_timestamp`` int64 (v2; legacy -1),
    ``max_timestamp`` int64 (v2; v1 the message timestamp; v0 -1), ``producer_id``
    int64, ``producer_epoch`` int16, ``base_sequence`` int32, ``leader_epoch`` int32
    (v2 partitionLeaderEpoch; legacy -1), ``crc`` int64 (stored, unsigned),
    ``crc_valid`` bool (True when not verified).

    ``end``: where the walk stopped (first byte not covered by a complete entry);
    ``zero_tail``: it stopped at an all-zero remainder.
    """

    position: np.ndarray
    size: np.ndarray
    magic: np.ndarray
    base_offset: np.ndarray
    last_offset: np.ndarray
    count: np.ndarray
    attributes: np.ndarray
    base_timestamp: np.ndarray
    max_timestamp: np.ndarray
    producer_id: np.ndarray
    producer_epoch: np.ndarray
    base_sequence: np.ndarray
    leader_epoch: np.ndarray
    crc: np.ndarray
    crc_valid: np.ndarray
    end: int = 0
    zero_tail: bool = False

    DTYPES: ClassVar[dict[str, type]] = {
        "position": np.int64, "size": np.int32, "magic": np.int8, "base_offset": np.int64,
        "last_offset": np.int64, "count": np.int32, "attributes": np.int16,
        "base_timestamp": np.int64, "max_timestamp": np.int64, "producer_id": np.int64,
        "producer_epoch": np.int16, "base_sequence": np.int32, "leader_epoch": np.int32,
        "crc": np.int64, "crc_valid": np.bool_,
    }

    def __len__(self) -> int:
        return len(self.position)

    @classmethod
    def column_names(cls) -> list[str]:
        """Names of the per-entry columns, in declaration order."""
        return [f.name for f in fields(cls) if f.name in cls.DTYPES]

    @classmethod
    def from_columns(cls, columns: Mapping[str, Sequence[int] | np.ndarray], *, end: int,
                     zero_tail: bool = False) -> BatchTable:
        """Build from per-column sequences (converted to the declared dtypes)."""
        arrays: dict[str, np.ndarray] = {name: np.asarray(columns[name], dtype=dtype) for name, dtype in cls.DTYPES.items()}
        return cls(**arrays, end=end, zero_tail=zero_tail)

    @classmethod
    def empty(cls, end: int = 0) -> BatchTable:
        """A table with no entries."""
        return cls.from_columns({name: [] for name in cls.DTYPES}, end=end)

    def take(self, rows: np.ndarray | list[int] | slice) -> BatchTable:
        """The entries ``rows`` (``end``/``zero_tail`` kept)."""
        return replace(self, **{name: getattr(self, name)[rows] for name in self.DTYPES})

    def shifted(self, base: int) -> BatchTable:
        """The same table with positions and ``end`` moved by ``base`` bytes."""
        return replace(self, position=self.position + np.int64(base), end=self.end + base)
