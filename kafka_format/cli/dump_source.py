"""Where ``klogs dump``'s files are: local paths as kafka-dump-log names them, and every URI the jobs
open (``file://``, ``s3://``, ``gs://``, ``hdfs://`` and the other ``pyarrow.fs`` schemes, Hadoop's
``s3a://``), read through :mod:`kafka_format.storage.fsio`.

A file is named by the argument string it was given as (``path``); the functions here open it,
find its siblings and show it.  A local path is shown as Kafka's ``new File(path)`` prints it (and
opened as before: a local ``.log`` is mapped, not copied); a URI is shown whole, with the secret of
any ``KEY:SECRET@`` replaced by ``***`` (:func:`kafka_format.common.redaction.redact`): the real
URI is used only to open the store.

A failure of the store itself (unreachable, refused, an unknown scheme) is a :class:`DumpIOError`
(one line, exit 2); a file that does not exist is not (the dump says so as Kafka does).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from typing import Any

from kafka_format.common.errors import KafkaFormatError, LogDirError
from kafka_format.common.redaction import redact
from kafka_format.records import file_records as api
from kafka_format.storage import fsio

__all__ = [
    "DumpIOError",
    "absolute",
    "decode_segment",
    "io_error",
    "is_file",
    "is_io_failure",
    "is_uri",
    "name",
    "read_at",
    "shown",
    "sibling",
    "size",
]


class DumpIOError(Exception):
    """A file's store could not be read (not: the file does not exist); the message is shown as is."""


def is_uri(path: str) -> bool:
    """Whether ``path`` is a URI (``scheme://...``), as :func:`kafka_format.storage.fsio.resolve` decides."""
    return "://" in path


def shown(path: str) -> str:
    """How the dump names ``path``: Kafka's ``new File(path).toString`` (duplicate and trailing separators
    removed) for a local path; the URI with its secret redacted."""
    if is_uri(path):
        return redact(path)
    text = re.sub(r"/+", "/", path)
    return text.rstrip("/") or text


def absolute(path: str) -> str:
    """``File.getAbsolutePath`` (joined to the working directory, '..' kept) for a local path: the key of
    Kafka's end-of-run reports; a URI as :func:`shown`."""
    if is_uri(path):
        return redact(path)
    text = shown(path)
    return text if os.path.isabs(text) else os.path.join(os.getcwd(), text)


def name(path: str) -> str:
    """``File.getName``: the last path component (of a URI: without its ``?options``)."""
    if is_uri(path):
        handle, fs_path = _resolve(path)
        return handle.basename(fs_path)
    return os.path.basename(shown(path))


def sibling(path: str, suffix: str) -> str:
    """The file beside ``path`` named ``<name up to its first '.'><suffix>`` (an index's ``.log``)."""
    stem = name(path).split(".")[0] + suffix
    if is_uri(path):
        handle, fs_path = _resolve(path)
        return handle.location(handle.join(handle.dirname(fs_path), stem))
    return os.path.join(os.path.dirname(os.path.abspath(path)), stem)


def is_file(path: str) -> bool:
    """Whether ``path`` is an existing regular file (object)."""
    if not is_uri(path):
        return os.path.isfile(path)
    handle, fs_path = _resolve(path)
    try:
        stat = handle.stat(fs_path)
    except LogDirError as exc:
        raise io_error(exc) from exc
    return stat is not None and not stat.is_dir


def size(path: str) -> int:
    """The size of the file at ``path`` in bytes."""
    if not is_uri(path):
        return os.path.getsize(path)
    handle, fs_path = _resolve(path)
    try:
        stat = handle.stat(fs_path)
    except LogDirError as exc:
        raise io_error(exc) from exc
    if stat is None or stat.size is None:
        raise DumpIOError(f"{shown(path)}: not a file")
    return stat.size


def read_at(path: str, position: int, length: int) -> bytes:
    """Up to ``length`` bytes of ``path`` from ``position`` (fewer at its end)."""
    if not is_uri(path):
        with open(path, "rb") as fh:
            fh.seek(position)
            return fh.read(length)
    handle, fs_path = _resolve(path)
    try:
        return handle.read_range(fs_path, position, length)
    except LogDirError as exc:
        raise io_error(exc) from exc


def decode_segment(path: str, **options: Any) -> Iterator[Any]:
    """:func:`kafka_format.records.file_records.decode_segment` over the file at ``path`` (a URI opened
    through its store, its errors naming the redacted URI)."""
    if not is_uri(path):
        yield from api.decode_segment(path, **options)
        return
    handle, fs_path = _resolve(path)
    try:
        f = handle.open_input_file(fs_path)
    except LogDirError as exc:
        raise io_error(exc) from exc
    try:
        yield from api.decode_segment(f, context=api.FileContext(path=path), **options)
    except OSError as exc:
        raise DumpIOError(f"{shown(path)}: cannot read file: {redact(str(exc))}") from exc
    finally:
        f.close()


def io_error(exc: BaseException) -> DumpIOError:
    """The :class:`DumpIOError` of a store failure (its message redacted)."""
    return DumpIOError(redact(str(exc)))


def is_io_failure(exc: KafkaFormatError) -> bool:
    """Whether a library error is a failure of the store (not of the bytes read)."""
    return exc.code == fsio.IO_ERROR


@functools.lru_cache(maxsize=64)
def _resolve(path: str) -> tuple[fsio.FileSystemHandle, str]:
    try:
        return fsio.resolve(path)
    except LogDirError as exc:
        raise io_error(exc) from exc
