"""Error types of the format library.

Every failure that bad input can cause is raised as a :class:`KafkaFormatError`
subclass.  The error carries *where* (``path``, ``position`` = byte offset in
that file), *what was expected* and *what was found*, so that a user can open
the file at that byte and see the problem.  A stable ``code`` names the kind of
failure for machine consumers (PySpark's ``errorClass`` idea).

No other exception type may escape the public decoding functions for any
input bytes; the fuzz tests hold the library to that.

Credentials inside a URI never reach an error: ``path`` and the rendered message pass through
:func:`kafka_format.common.redaction.redact` (``s3://KEY:***@bucket/...``).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CheckpointFormatError",
    "ChecksumError",
    "CompressionError",
    "CorruptRecordError",
    "DecompressionLimitError",
    "IndexFormatError",
    "InternalTopicFormatError",
    "KafkaFormatError",
    "KafkaLogOptionError",
    "LogDirError",
    "SnapshotFormatError",
    "UnsupportedFormatError",
]


class KafkaFormatError(Exception):
    """Base of all errors raised for bad or unreadable Kafka log-dir bytes.

    Attributes:
        path: file the bytes came from (``None`` for in-memory buffers).
        position: byte offset in that file where the bad structure starts.
        expected: what the format requires there (human readable).
        found: what the bytes actually say.
        base_offset: Kafka offset of the batch involved, when known.
        code: stable machine-readable error kind (class default if not given).
        hint: what the user can do about it (rendered last; :meth:`with_hint`), or None.
    """

    code = "KAFKA_FORMAT_ERROR"
    hint: str | None = None
    _path: str | None = None

    @property
    def path(self) -> str | None:
        """The file, with any URI credentials redacted."""
        return self._path

    @path.setter
    def path(self, value: str | None) -> None:
        self._path = _redact(value) if value is not None else None

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        position: int | None = None,
        expected: str | None = None,
        found: str | None = None,
        base_offset: int | None = None,
        code: str | None = None,
    ) -> None:
        self.reason = message
        self.path = path
        self.position = position
        self.expected = expected
        self.found = found
        self.base_offset = base_offset
        if code is not None:
            self.code = code
        super().__init__(self._render())

    def with_hint(self, hint: str | None) -> KafkaFormatError:
        """This error with ``hint`` (what would get past it) as the last part of its message."""
        self.hint = hint
        self.args = (self._render() if hint is None else _redact(f"{self._render()}; {hint}"),)
        return self

    def _render(self) -> str:
        where = self.path if self.path is not None else "<bytes>"
        if self.position is not None:
            where += f" at byte {self.position}"
        parts = [f"{where}: {self.reason}"]
        if self.expected is not None:
            parts.append(f"expected {self.expected}")
        if self.found is not None:
            parts.append(f"found {self.found}")
        if self.base_offset is not None:
            parts.append(f"batch base offset {self.base_offset}")
        return _redact("; ".join(parts))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:  # picklable across Spark workers
        return (
            _rebuild,
            (type(self), self.reason, self.path, self.position, self.expected,
             self.found, self.base_offset, self.code, self.hint),
        )


def _redact(text: str) -> str:
    """:func:`kafka_format.common.redaction.redact` (imported only when a text could hold credentials)."""
    if "@" not in text:
        return text
    from kafka_format.common.redaction import redact

    return redact(text)


def _rebuild(cls: type[KafkaFormatError], reason: str, path: str | None, position: int | None,
             expected: str | None, found: str | None, base_offset: int | None, code: str,
             hint: str | None = None) -> KafkaFormatError:
    err = cls(reason, path=path, position=position, expected=expected, found=found,
              base_offset=base_offset, code=code)
    return err if hint is None else err.with_hint(hint)


class CorruptRecordError(KafkaFormatError):
    """A batch, message or record violates the record format."""

    code = "CORRUPT_RECORD"


class ChecksumError(CorruptRecordError):
    """A stored CRC does not match the bytes it covers."""

    code = "CRC_MISMATCH"


class CompressionError(CorruptRecordError):
    """A compressed payload cannot be decompressed (bad framing or stream)."""

    code = "DECOMPRESSION_FAILED"


class DecompressionLimitError(CompressionError):
    """Decompressed output would exceed the configured cap (a 'bomb')."""

    code = "DECOMPRESSION_LIMIT"


class UnsupportedFormatError(KafkaFormatError):
    """Bytes use a format feature Kafka itself rejects (bad magic, codec id)."""

    code = "UNSUPPORTED_FORMAT"


class IndexFormatError(KafkaFormatError):
    """An ``.index``, ``.timeindex`` or ``.txnindex`` file is malformed."""

    code = "INDEX_CORRUPT"


class CheckpointFormatError(KafkaFormatError):
    """A text checkpoint or properties file is malformed."""

    code = "CHECKPOINT_CORRUPT"


class SnapshotFormatError(KafkaFormatError):
    """A producer-state ``.snapshot`` file is malformed."""

    code = "SNAPSHOT_CORRUPT"


class LogDirError(KafkaFormatError):
    """A log directory or partition directory cannot be interpreted."""

    code = "LOG_DIR_INVALID"


class InternalTopicFormatError(KafkaFormatError):
    """A record of an internal topic (__consumer_offsets, ...) is malformed."""

    code = "INTERNAL_RECORD_CORRUPT"


class KafkaLogOptionError(ValueError):
    """An option of the ``kafka-log`` source is unknown, malformed or contradicts another (or the
    files read need one it lacks): ``option`` names it."""

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        super().__init__(f"kafka-log option {option!r}: {message}")
