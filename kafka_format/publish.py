"""Crash-safe outputs: write under a temporary name, publish with one rename.

Every output a job writes (Parquet directories, JSON summaries, compacted log dirs, reports)
goes through here so that a reader never sees half of it: a crash (kill -9, OOM, a lost
executor) leaves at most a temporary sibling whose name :func:`is_temp_name` recognises and
:func:`cleanup_stale` removes on the next run.

A rename is atomic on local file systems (POSIX ``rename(2)``) and HDFS; object stores have no
atomic rename, so callers writing there publish through a table format with atomic commits
(Delta) instead.  Replacing an existing directory takes two renames (old aside, new in place):
a reader in between sees no output rather than a partial one.

``crash_point(name)`` is the fault-injection hook the crash-consistency tests use: when the
environment variable ``KLA_CRASH_AT`` equals ``name`` the process kills itself with SIGKILL
right there, so a test can stop a job at an exact step without timing.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlparse

__all__ = ["crash_point", "atomic_write_bytes", "atomic_write_text", "staging_dir", "publish_dir", "is_temp_name",
           "cleanup_stale", "local_path", "CRASH_ENV"]

CRASH_ENV = "KLA_CRASH_AT"
_TEMP = re.compile(r"^\..+\.(tmp|old)-[0-9a-f]{32}$")


def crash_point(name: str) -> None:
    """SIGKILL this process if ``$KLA_CRASH_AT == name`` (test hook; a no-op otherwise)."""
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def local_path(target: str | os.PathLike[str]) -> str:
    """The local file-system path of ``target`` (a path or a ``file://`` URI).

    Raises ValueError for other URIs: they have no atomic rename.
    """
    text = os.fspath(target)
    parsed = urlparse(text)
    if parsed.scheme in ("", "file") or (len(parsed.scheme) == 1 and text[1:3] in (":\\", ":/")):
        return parsed.path if parsed.scheme == "file" else text
    raise ValueError(f"{text}: atomic publishing needs a local path or file:// URI "
                     f"(object stores have no atomic rename; use --format delta there)")


def _temp_sibling(path: str, kind: str) -> str:
    parent, name = os.path.split(os.path.abspath(path))
    return os.path.join(parent, f".{name}.{kind}-{uuid.uuid4().hex}")


def is_temp_name(name: str) -> bool:
    """True for the temporary names this module creates (``.<name>.tmp-<hex>``, ``.<name>.old-<hex>``)."""
    return bool(_TEMP.match(os.path.basename(name)))


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old content or all of the new."""
    target = os.path.abspath(local_path(path))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = _temp_sibling(target, "tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(os.path.dirname(target))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """:func:`atomic_write_bytes` of UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _fsync_tree(root: str) -> None:
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(dirpath)


@contextmanager
def staging_dir(target: str | os.PathLike[str]) -> Iterator[str]:
    """A fresh directory beside ``target``; published as ``target`` when the block ends normally.

    On an exception the staging directory is removed and ``target`` is left as it was.  An
    existing ``target`` is replaced: renamed aside, the new one renamed in, the old one removed.
    """
    final = os.path.abspath(local_path(target))
    os.makedirs(os.path.dirname(final), exist_ok=True)
    tmp = _temp_sibling(final, "tmp")
    os.mkdir(tmp)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync_tree(tmp)
    publish_dir(tmp, final)


def publish_dir(staged: str, target: str) -> None:
    """Rename the finished directory ``staged`` to ``target`` (replacing an existing one)."""
    old = None
    if os.path.lexists(target):
        old = _temp_sibling(target, "old")
        os.rename(target, old)
    os.rename(staged, target)
    _fsync_dir(os.path.dirname(target))
    if old is not None:
        if os.path.isdir(old) and not os.path.islink(old):
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.unlink(old)


def cleanup_stale(parent: str | os.PathLike[str], name: str | None = None) -> list[str]:
    """Remove leftovers of crashed runs (temporary names) directly inside ``parent``; returns their
    names.  A previous output renamed aside by a publish that died before its second rename is
    put back instead of removed.  ``name``: only the leftovers of that output (another job may be
    publishing beside it right now)."""
    root = local_path(parent)
    removed: list[str] = []
    if not os.path.isdir(root):
        return removed
    for entry in sorted(os.listdir(root)):
        m = _TEMP.match(entry)
        if not m:
            continue
        path = os.path.join(root, entry)
        original_name = entry[1:entry.rindex(f".{m.group(1)}-")]
        if name is not None and original_name != name:
            continue
        original = os.path.join(root, original_name)
        if m.group(1) == "old" and not os.path.lexists(original):
            os.rename(path, original)      # crashed between the two renames of publish_dir: restore
            removed.append(entry)
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
        removed.append(entry)
    return removed
