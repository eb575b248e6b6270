"""Type stub of the cleaner's compiled kernels (kafka_format/log/cleaner/_kernels.c); used through
kafka_format.log.cleaner.kernels.

Keys are Arrow-style columns: ``key_offsets`` int32[n+1] into ``key_data`` bytes; ``rows`` int64[k]
selects records, in order.  Every argument but the ints is read through the buffer protocol.
"""

from typing import final

from kafka_format.common._buffers import BufferLike as _BufferLike

def md5(data: _BufferLike, /) -> bytes:
    """The 16-byte MD5 digest of data (RFC 1321)."""

def digest_keys(key_offsets: _BufferLike, key_data: _BufferLike, rows: _BufferLike, /) -> bytes:
    """The MD5 of each selected key, 16 bytes each, concatenated."""

def encode_v2_records(rows: _BufferLike, offset: _BufferLike, timestamp: _BufferLike, key_offsets: _BufferLike,
                      key_data: _BufferLike, key_valid: _BufferLike, value_offsets: _BufferLike,
                      value_data: _BufferLike, value_valid: _BufferLike, header_offsets: _BufferLike,
                      header_key_offsets: _BufferLike, header_key_data: _BufferLike,
                      header_value_offsets: _BufferLike, header_value_data: _BufferLike,
                      header_value_valid: _BufferLike, base_offset: int, base_timestamp: int, /) -> bytes:
    """The selected records as a v2 records region (DefaultRecord.writeTo), deltas from base_offset
    and base_timestamp (the columns of RecordColumns; validity as uint8)."""

@final
class OffsetMap:
    """Kafka's SkimpyOffsetMap: the 16-byte MD5 of a key -> its latest offset (a table growing up to
    ``slots`` entries of 24 bytes)."""

    latest_offset: int
    """Offset of the last put, or as updateLatestOffset set it."""

    def __init__(self, slots: int) -> None: ...
    @property
    def size(self) -> int:
        """Keys held (SkimpyOffsetMap.size)."""
    @property
    def slots(self) -> int:
        """The most slots the table takes."""
    @property
    def table_bytes(self) -> int:
        """Bytes of the table now."""
    def put_keys(self, key_offsets: _BufferLike, key_data: _BufferLike, rows: _BufferLike, offsets: _BufferLike,
                 capacity: int, /) -> int:
        """Put the selected keys in order (offsets: int64, one per row), stopping before a put when
        the map holds capacity keys; returns how many were put."""
    def get_keys(self, key_offsets: _BufferLike, key_data: _BufferLike, rows: _BufferLike, out: _BufferLike,
                 /) -> None:
        """out[j] = offset of selected key j (int64, writable), -1 when absent."""
    def clear(self) -> None:
        """Forget every key; latest_offset = -1."""
