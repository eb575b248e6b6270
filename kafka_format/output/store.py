"""Outputs on an object store (``s3a://``): klogs' ownership rules, and the publish protocol a
store without a rename allows.

An object store has no directories and no rename: a "directory" ``OUT`` is the objects whose keys
start with ``OUT/``, and the only atomic step is writing one object.  So, for every output klogs
writes there:

Ownership (as :mod:`kafka_format.output.ownership` for local paths)
    ``OUT`` receives an output only when no object lies under it, or when ``OUT/.klogs-output``
    names the same job and kind; anything else (objects klogs did not write, another job's output,
    an object named ``OUT``, a Kafka log dir, a path inside an input log dir or inside another
    klogs output) is refused with :class:`~kafka_format.output.ownership.OutputRefused` before anything
    is written.  There is no lock: one run per output at a time is the user's to ensure (as for
    Delta's own ``S3SingleDriverLogStore``).

Publishing (:func:`publish_local`, :func:`publish_staged`)
    The output is built elsewhere first -- in a local directory, or (Spark's Parquet) under the
    hidden ``OUT/_klogs_staging/<run>/`` -- then: the marker is written with ``"state":
    "publishing"``, the files are uploaded (copied, server-side, from the staging prefix) over
    their names, objects of the previous output that the new one does not have are deleted,
    ``_SUCCESS`` (when the output has one) is written last among the files, and the marker is
    rewritten with ``"state": "complete"``.  A crash before the first upload leaves the previous
    output; a crash during the uploads leaves an output whose marker says ``publishing``: readers
    must not take it (``_SUCCESS``, Spark's completion flag, is absent or stale), and the next run
    replaces it.  That window -- between the first upload and the last -- is what a store without
    rename cannot close; a table format with its own commit log (``--format delta``) does.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

from kafka_format.common.errors import LogDirError
from kafka_format.common.redaction import redact
from kafka_format.output.ownership import (
    MARKER,
    MAX_MARKER_BYTES,
    Marker,
    OutputRefused,
    Owner,
    marker_bytes,
    new_run_id,
    parse_marker,
)
from kafka_format.output.publish import crash_point, staging_dir
from kafka_format.storage import checkpoints as ckpt
from kafka_format.storage import s3a
from kafka_format.storage.fsio import IO_ERROR

__all__ = [
    "FIRST_FILE_PUBLISHED",
    "STAGING",
    "SUCCESS",
    "StoreTarget",
    "claim",
    "cleanup",
    "ensure",
    "ensure_publishing",
    "is_store",
    "output_dir",
    "publish_local",
    "publish_staged",
    "read_marker",
    "remove_prefix",
    "staged_locally",
    "staging_uri",
    "target",
    "write_marker",
]

STAGING = "_klogs_staging"          # hidden from Spark and pyarrow readers (leading '_')
SUCCESS = "_SUCCESS"
PUBLISHING, COMPLETE = "publishing", "complete"
FIRST_FILE_PUBLISHED = "store:first-file-published"      # crash point: the publish window is open
_KAFKA_LOGDIR_FILES = (ckpt.META_PROPERTIES, ckpt.RECOVERY_POINT_CHECKPOINT, ckpt.REPLICATION_OFFSET_CHECKPOINT)


def is_store(location: object) -> bool:
    """Whether ``location`` names an object-store output (``s3a://``)."""
    return s3a.is_s3a(location)


@dataclass(frozen=True)
class StoreTarget:
    """An output location on a store: the URI as given, its filesystem and ``bucket/key`` path."""

    uri: str
    fs: pafs.FileSystem
    path: str

    def join(self, *names: str) -> str:
        return posixpath.join(self.path, *names)

    def shown(self) -> str:
        """The location for messages (credentials redacted)."""
        return redact(self.uri)


def target(uri: str) -> StoreTarget:
    """Open ``uri``'s store (:func:`kafka_format.storage.s3a.filesystem`)."""
    try:
        fs, path = s3a.filesystem(uri.rstrip("/"))
    except ValueError as exc:
        raise LogDirError(str(exc), path=uri, code=IO_ERROR) from None
    return StoreTarget(uri.rstrip("/"), fs, path.rstrip("/"))


def _io(t: StoreTarget, action: str, exc: BaseException) -> LogDirError:
    err = LogDirError(f"cannot {action}: {exc}", path=t.uri, code=IO_ERROR)
    err.__cause__ = exc
    return err


def _list(t: StoreTarget, path: str, recursive: bool = False) -> list[pafs.FileInfo]:
    try:
        return t.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=recursive))
    except (OSError, pa.ArrowException) as exc:
        raise _io(t, "list", exc) from exc


def _info(t: StoreTarget, path: str) -> pafs.FileInfo:
    try:
        return t.fs.get_file_info(path)
    except (OSError, pa.ArrowException) as exc:
        raise _io(t, "stat", exc) from exc


def read_marker(t: StoreTarget, path: str | None = None) -> Marker | None:
    """The marker of the output at ``path`` (default ``t``), or None."""
    key = posixpath.join(path or t.path, MARKER)
    info = _info(t, key)
    if info.type != pafs.FileType.File or (info.size or 0) > MAX_MARKER_BYTES:
        return None
    try:
        with t.fs.open_input_stream(key) as f:
            return parse_marker(f.read())
    except (OSError, pa.ArrowException) as exc:
        raise _io(t, "read the marker", exc) from exc


def write_marker(t: StoreTarget, owner: Owner, run: str, state: str) -> None:
    """``OUT/.klogs-output`` with ``state`` (one PUT: readers see the old marker or the new)."""
    _put(t, t.join(MARKER), marker_bytes(owner, run, state=state))


def _put(t: StoreTarget, key: str, data: bytes) -> None:
    try:
        with t.fs.open_output_stream(key) as f:
            f.write(data)
    except (OSError, pa.ArrowException) as exc:
        raise _io(t, "write", exc) from exc


def _describe(t: StoreTarget, entries: list[pafs.FileInfo]) -> str:
    names = sorted(e.base_name for e in entries)
    if any(n in names for n in _KAFKA_LOGDIR_FILES) or any(n.endswith(".log") and n[:-4].isdigit() for n in names):
        return "a Kafka log dir"
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"objects klogs did not write (holding {shown})"


def _refuse(t: StoreTarget, owner: Owner, found: str) -> OutputRefused:
    return OutputRefused("refusing to replace it (klogs replaces only its own previous output)", path=t.uri,
                         expected=f"a path holding no object, or a previous {owner.describe()}", found=found)


def _check_inputs(t: StoreTarget, inputs: Iterable[str]) -> None:
    for given in inputs:
        if not s3a.is_s3a(given):
            continue
        try:
            path = s3a.parse(given.rstrip("/")).path
        except ValueError:
            continue
        if path == t.path:
            found = "an input log dir of this run"
        elif t.path.startswith(path + "/"):
            found = f"a path inside input log dir {redact(given)}"
        elif path.startswith(t.path + "/"):
            found = f"a path holding input log dir {redact(given)}"
        else:
            continue
        raise OutputRefused("refusing to write the output here", path=t.uri,
                            expected="a path outside the input log dirs", found=found)


def _check_ancestors(t: StoreTarget) -> None:
    parent = posixpath.dirname(t.path)
    while "/" in parent:            # the bucket itself holds no marker
        marker = read_marker(t, parent)
        if marker is not None:
            raise OutputRefused("refusing to write the output here", path=t.uri,
                                expected="a path outside other outputs",
                                found=f"a path inside the output of {marker.owner.describe()}")
        if _info(t, posixpath.join(parent, "meta.properties")).type == pafs.FileType.File:
            raise OutputRefused("refusing to write the output here", path=t.uri,
                                expected="a path outside Kafka log dirs", found="a path inside a Kafka log dir")
        parent = posixpath.dirname(parent)


def claim(uri: str, owner: Owner, *, inputs: Iterable[str] = ()) -> str:
    """Whether ``uri`` may receive ``owner``'s output: ``"absent"`` (no object under it) or
    ``"own"`` (its marker names ``owner``); otherwise :class:`OutputRefused`.  Reads only."""
    t = target(uri)
    _check_inputs(t, inputs)
    _check_ancestors(t)
    if _info(t, t.path).type == pafs.FileType.File:
        raise _refuse(t, owner, "an object (a file) where a directory of outputs is expected")
    entries = _list(t, t.path)
    if not entries:
        return "absent"
    marker = read_marker(t)
    if marker is None:
        raise _refuse(t, owner, _describe(t, entries))
    if marker.owner.job != owner.job or marker.owner.kind != owner.kind:
        raise _refuse(t, owner, f"the output of {marker.owner.describe()}")
    if marker.owner.version > owner.version:
        raise _refuse(t, owner, f"a {owner.describe()} of format {marker.owner.version}, newer than "
                                f"this klogs ({owner.version})")
    return "own"


def ensure(uri: str, owner: Owner, *, inputs: Iterable[str] = ()) -> StoreTarget:
    """For outputs written in place over many runs (Delta tables, checkpoints): ``uri`` claimed
    and, when it held nothing, given ``owner``'s marker (state ``complete``)."""
    if claim(uri, owner, inputs=inputs) == "absent":
        write_marker(target(uri), owner, new_run_id(), COMPLETE)
    return target(uri)


def ensure_publishing(uri: str, owner: Owner) -> None:
    """Before staging under ``OUT/_klogs_staging/``: an ``OUT`` that held nothing gets ``owner``'s
    marker in state ``publishing`` (so the staging, and a crash's leftovers, lie in klogs' own output)."""
    if claim(uri, owner) == "absent":
        write_marker(target(uri), owner, new_run_id(), PUBLISHING)


def staging_uri(uri: str, run: str) -> str:
    """Where Spark writes a run's files before :func:`publish_staged`: ``OUT/_klogs_staging/<run>``."""
    return f"{uri.rstrip('/')}/{STAGING}/{run}"


def remove_prefix(t: StoreTarget, path: str) -> None:
    """Delete every object under ``path`` (nothing when there is none)."""
    try:
        if _info(t, path).type == pafs.FileType.Directory:
            t.fs.delete_dir(path)
    except (OSError, pa.ArrowException) as exc:
        raise _io(t, "delete", exc) from exc


def cleanup(uri: str) -> None:
    """Remove a crashed run's staging (``OUT/_klogs_staging/``) of an output klogs holds."""
    t = target(uri)
    remove_prefix(t, t.join(STAGING))


def _files(t: StoreTarget, root: str) -> dict[str, int]:
    """``relative key -> size`` of the objects under ``root`` (staging and marker left out)."""
    out = {}
    for info in _list(t, root, recursive=True):
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(root.rstrip("/")) + 1:]
        if rel == MARKER or rel.split("/", 1)[0] == STAGING:
            continue
        out[rel] = int(info.size or 0)
    return out


def _success_last(names: Iterable[str]) -> list[str]:
    return sorted(names, key=lambda n: (n == SUCCESS, n))


def _publish(t: StoreTarget, owner: Owner, new: Iterable[str], put: Callable[[str], None]) -> str:
    """The common steps: marker ``publishing``, ``put(rel)`` each new file (``_SUCCESS`` last),
    objects of the previous output not in ``new`` deleted, marker ``complete``."""
    run = new_run_id()
    names = _success_last(new)
    old = _files(t, t.path)
    write_marker(t, owner, run, PUBLISHING)
    if SUCCESS in old:                  # a reader taking _SUCCESS as "complete" must not see a stale one
        _delete(t, t.join(SUCCESS))
    for rel in names:
        put(rel)
    gone = sorted(set(old) - set(names))
    for rel in gone:
        _delete(t, t.join(rel))
    _prune_dirs(t, {posixpath.dirname(r) for r in gone} - {posixpath.dirname(r) for r in names} - {""})
    write_marker(t, owner, run, COMPLETE)
    return run


def _delete(t: StoreTarget, key: str) -> None:
    try:
        t.fs.delete_file(key)
    except FileNotFoundError:
        pass
    except (OSError, pa.ArrowException) as exc:
        raise _io(t, "delete", exc) from exc


def _prune_dirs(t: StoreTarget, dirs: set[str]) -> None:
    """The directories (relative) the previous output had and the new one has not: pyarrow keeps an
    empty directory's placeholder object when its last file goes, which readers would list."""
    every = set(dirs)
    for d in dirs:
        while "/" in d:
            d = posixpath.dirname(d)
            every.add(d)
    for rel in sorted(every, key=lambda d: -d.count("/")):
        path = t.join(rel)
        if _info(t, path).type == pafs.FileType.Directory and not _list(t, path):
            try:
                t.fs.delete_dir(path)
            except (OSError, pa.ArrowException):
                pass


def publish_local(local_dir: str | Path, uri: str, owner: Owner) -> None:
    """Publish the finished local directory ``local_dir`` as ``uri`` (see the module doc)."""
    root = Path(local_dir)
    files = {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*"))
             if p.is_file() and not p.is_symlink() and p.name != MARKER}
    t = target(uri)
    uploaded = [0]

    def put(rel: str) -> None:
        try:
            pafs.copy_files(str(files[rel]), t.join(rel), source_filesystem=pafs.LocalFileSystem(),
                            destination_filesystem=t.fs)
        except (OSError, pa.ArrowException) as exc:
            raise _io(t, "upload", exc) from exc
        uploaded[0] += 1
        if uploaded[0] == 1:
            crash_point(FIRST_FILE_PUBLISHED)

    _publish(t, owner, files, put)


def publish_staged(staged_uri: str, uri: str, owner: Owner, sources: Mapping[str, str] | None = None) -> None:
    """Publish what was written under ``staged_uri`` (in the same store, normally
    :func:`staging_uri`) as ``uri``: server-side copies, then the staging removed.  ``sources``:
    only these files, each output path (relative to ``uri``) copied from its path relative to
    ``staged_uri`` (a job's kept task attempts: :class:`kafka_format.output.attempts.AttemptRoot`);
    default: every file under ``staged_uri``, at the same relative path."""
    t, s = target(uri), target(staged_uri)
    files: Mapping[str, object] = _files(s, s.path) if sources is None else sources
    copied = [0]

    def put(rel: str) -> None:
        try:
            t.fs.copy_file(s.join(rel if sources is None else sources[rel]), t.join(rel))
        except (OSError, pa.ArrowException) as exc:
            raise _io(t, "copy", exc) from exc
        copied[0] += 1
        if copied[0] == 1:
            crash_point(FIRST_FILE_PUBLISHED)

    _publish(t, owner, files, put)
    remove_prefix(s, s.path)
    if s.path.startswith(t.join(STAGING) + "/"):
        remove_prefix(t, t.join(STAGING))       # and the placeholder of the staging root


@contextlib.contextmanager
def staged_locally(uri: str, owner: Owner) -> Iterator[str]:
    """A local temporary directory for an output bound for ``uri``, published there when the block
    ends normally (removed either way)."""
    import shutil
    import tempfile

    claim(uri, owner)
    tmp = tempfile.mkdtemp(prefix="klogs-out-")
    try:
        yield tmp
        publish_local(tmp, uri, owner)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)



def output_dir(uri: str, owner: Owner) -> contextlib.AbstractContextManager[str]:
    """The directory a job builds a whole output in: for a local path, the staging directory
    :func:`kafka_format.output.publish.staging_dir` renames into place; for ``s3a://``, a local temporary
    directory :func:`publish_local` uploads (:func:`staged_locally`)."""
    return staged_locally(uri, owner) if is_store(uri) else staging_dir(uri, owner)
