"""Which paths klogs may write, replace or delete: the ownership marker and the target rules.

Every output klogs publishes carries a marker, a small JSON file named :data:`MARKER` inside
the output directory (for a single-file output: a hidden sidecar ``.NAME.klogs-output`` beside
it), naming the job, the kind of output, its format version and the run that wrote it.  The
marker is the only thing that makes a path klogs' own; names and layouts are never trusted.

The rules (:func:`check_target`), for every output of every job:

* a path that does not exist, or an empty directory: written;
* a previous output of the same job and kind (by its marker; a format version this klogs
  knows): replaced;
* anything else -- a directory klogs did not write, another job's output, a file where a
  directory is expected, a symbolic link, a Kafka log dir, a path inside an input log dir or
  inside another output, a path holding an input log dir -- is refused with
  :class:`OutputRefused` naming the path and what was found, before anything is touched.

Deleting (:func:`remove_tree`) never follows a symbolic link: a link inside an output is
unlinked, its target left alone.  Temporaries of crashed runs are removed only when they carry
a marker (or are empty: removing them deletes nothing), see :func:`is_klogs_temp`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_format.common.errors import KafkaFormatError
from kafka_format.storage import checkpoints as ckpt
from kafka_format.storage.fsio import local_path

__all__ = [
    "MARKER",
    "MARKER_TAG",
    "MAX_MARKER_BYTES",
    "Marker",
    "OutputRefused",
    "Owner",
    "TargetState",
    "check_inputs",
    "check_target",
    "describe_path",
    "dir_marker",
    "file_digest",
    "is_klogs_temp",
    "marker_bytes",
    "new_run_id",
    "parse_marker",
    "read_marker",
    "read_sidecar",
    "remove_tree",
    "sidecar_path",
    "write_marker",
    "write_sidecar",
]

MARKER = ".klogs-output"
MARKER_TAG = "klogs-output"
MAX_MARKER_BYTES = 1 << 16          # a longer marker is not klogs' (a local or a store output's)
_KAFKA_LOGDIR_FILES = (ckpt.META_PROPERTIES, ckpt.RECOVERY_POINT_CHECKPOINT, ckpt.REPLICATION_OFFSET_CHECKPOINT,
                       ckpt.LOG_START_OFFSET_CHECKPOINT, ckpt.CLEANER_OFFSET_CHECKPOINT)
_SEGMENT = re.compile(r"^\d{20}\.log$")
_PARTITION_DIR = re.compile(r"^.+-\d+$")


@dataclass(frozen=True)
class Owner:
    """The job and kind of output a marker names; ``version``: the output's format version."""

    job: str
    kind: str
    version: int = 1

    def describe(self) -> str:
        """``"klogs retention report"`` (for messages)."""
        return f"klogs {self.job} {self.kind}"


GENERIC = Owner("library", "output")      # outputs written through the library without a job
DEMO = Owner("demo", "results")           # klogs demo's DIR: it holds the jobs' own outputs
CONTAINERS = frozenset({(DEMO.job, DEMO.kind)})   # outputs other outputs may sit inside


@dataclass(frozen=True)
class Marker:
    """A parsed marker: who wrote the output, in which run, when."""

    owner: Owner
    run: str
    created: str
    extra: dict[str, Any] = field(default_factory=dict)


class OutputRefused(KafkaFormatError):
    """The output path holds something klogs must not replace (exit code 2)."""

    code = "OUTPUT_REFUSED"


TargetState = str          # "absent" | "empty" | "own" (what check_target found)


def new_run_id() -> str:
    """A fresh run id (hex)."""
    return uuid.uuid4().hex


def marker_bytes(owner: Owner, run: str, *, created: float | None = None, **extra: Any) -> bytes:
    """The marker file's content; ``created``: seconds since the epoch (default now), for an output
    that must be byte-identical each time it is made (``data_samples/``)."""
    doc = {"marker": MARKER_TAG, "job": owner.job, "kind": owner.kind, "formatVersion": owner.version,
           "run": run, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created)), **extra}
    return (json.dumps(doc, sort_keys=False) + "\n").encode("utf-8")


def parse_marker(data: bytes) -> Marker | None:
    """The marker a file's bytes hold, or None when they are not one."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("marker") != MARKER_TAG:
        return None
    job, kind, version = doc.get("job"), doc.get("kind"), doc.get("formatVersion")
    if not isinstance(job, str) or not isinstance(kind, str) or type(version) is not int:
        return None
    extra = {k: v for k, v in doc.items() if k not in ("marker", "job", "kind", "formatVersion", "run", "created")}
    return Marker(Owner(job, kind, version), str(doc.get("run")), str(doc.get("created")), extra)


def read_marker(path: str) -> Marker | None:
    """The marker in file ``path`` (a regular file, not a link), or None when it is not one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_MARKER_BYTES + 1)
    finally:
        os.close(fd)
    return None if len(data) > MAX_MARKER_BYTES else parse_marker(data)


def dir_marker(path: str) -> Marker | None:
    """The marker of directory ``path`` (not followed when ``path`` is a link), or None."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return None
    except OSError:
        return None
    return read_marker(os.path.join(path, MARKER))


def write_marker(directory: str, owner: Owner, run: str) -> None:
    """Create ``directory/.klogs-output`` (it must not exist yet) and sync it."""
    fd = os.open(os.path.join(directory, MARKER), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, marker_bytes(owner, run))
        os.fsync(fd)
    finally:
        os.close(fd)


# --- single-file outputs: a sidecar marker ------------------------------------------------------------
def sidecar_path(target: str) -> str:
    """The marker of single-file output ``target``: ``.NAME.klogs-output`` beside it."""
    parent, name = os.path.split(target)
    return os.path.join(parent, f".{name}{MARKER}")


def file_digest(path: str) -> str | None:
    """SHA-256 (hex) of regular file ``path`` (not followed), None when it is not one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    h = hashlib.sha256()
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
    finally:
        os.close(fd)
    return h.hexdigest()


def read_sidecar(target: str) -> Marker | None:
    """The sidecar marker of single-file output ``target`` (with ``sha256`` and ``pending`` lists)."""
    m = read_marker(sidecar_path(target))
    if m is None or not isinstance(m.extra.get("sha256"), list) or not isinstance(m.extra.get("pending"), list):
        return None
    return m


def write_sidecar(target: str, owner: Owner, run: str, digests: Sequence[str], pending: Sequence[str]) -> None:
    """Replace the sidecar of ``target`` atomically: the file's accepted SHA-256 digests and the
    temporaries (names beside it) this run may leave.  Its own temporary carries the marker too."""
    side = sidecar_path(target)
    tmp = os.path.join(os.path.dirname(side), f"{os.path.basename(side)}.tmp-{uuid.uuid4().hex}")
    data = marker_bytes(owner, run, sha256=list(digests), pending=list(pending))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, side)


# --- what a path holds -----------------------------------------------------------------------------
def _kafka_kind(path: str, names: Sequence[str]) -> str | None:
    for name in _KAFKA_LOGDIR_FILES:
        if name in names:
            return f"a Kafka log dir ({name})"
    if any(_SEGMENT.match(n) for n in names):
        return "a Kafka partition dir (.log segments)"
    for n in names:
        if _PARTITION_DIR.match(n):
            try:
                if any(_SEGMENT.match(s) for s in os.listdir(os.path.join(path, n))):
                    return f"a Kafka log dir (partition {n})"
            except OSError:
                continue
    return None


def describe_path(path: str) -> str:
    """What is at ``path``, for an error message (never follows a link)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "nothing"
    if stat.S_ISLNK(st.st_mode):
        return f"a symbolic link to {os.readlink(path)}"
    if not stat.S_ISDIR(st.st_mode):
        return "a file" if stat.S_ISREG(st.st_mode) else "a special file"
    names = sorted(os.listdir(path))
    marker = dir_marker(path)
    if marker is not None:
        return f"the output of {marker.owner.describe()} (format {marker.owner.version})"
    kafka = _kafka_kind(path, names)
    if kafka is not None:
        return kafka
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"a directory klogs did not write (holding {shown})"


def _real(path: str) -> str:
    return os.path.realpath(path)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def check_inputs(target: str, inputs: Iterable[str]) -> None:
    """Refuse ``target`` when it is an input log dir, lies inside one or holds one (local inputs;
    URIs of other file systems cannot overlap a local path)."""
    real = _real(target)
    for given in inputs:
        try:
            inp = _real(os.path.abspath(local_path(given)))
        except ValueError:
            continue
        if real == inp:
            found = "an input log dir of this run"
        elif _within(real, inp):
            found = f"a path inside input log dir {given}"
        elif _within(inp, real):
            found = f"a directory holding input log dir {given}"
        else:
            continue
        raise OutputRefused("refusing to write the output here", path=target,
                            expected="a path outside the input log dirs", found=found)


def _check_ancestors(target: str) -> None:
    parent = os.path.dirname(target)
    while True:
        marker = dir_marker(parent)
        if marker is not None and (marker.owner.job, marker.owner.kind) not in CONTAINERS:
            raise OutputRefused("refusing to write the output here", path=target,
                                expected="a path outside other outputs",
                                found=f"a path inside {parent}, the output of {marker.owner.describe()}")
        if os.path.isfile(os.path.join(parent, "meta.properties")):
            raise OutputRefused("refusing to write the output here", path=target,
                                expected="a path outside Kafka log dirs",
                                found=f"a path inside Kafka log dir {parent}")
        up = os.path.dirname(parent)
        if up == parent:
            return
        parent = up


def _refuse(target: str, owner: Owner, found: str) -> OutputRefused:
    return OutputRefused("refusing to replace it (klogs replaces only its own previous output)", path=target,
                         expected=f"a path that does not exist, an empty directory or a previous {owner.describe()}",
                         found=found)


def check_target(target: str, owner: Owner, *, inputs: Iterable[str] = (), file: bool = False,
                 top_level: bool = True) -> TargetState:
    """Whether ``target`` (an absolute local path) may receive ``owner``'s output: ``"absent"``,
    ``"empty"`` (an empty directory) or ``"own"`` (a previous output of the same job and kind);
    otherwise :class:`OutputRefused`.  ``file``: a single-file output (replaced only when its
    sidecar names ``owner`` and holds the file's SHA-256).  ``top_level``: also refuse a path
    inside another klogs output or a Kafka log dir (False for parts staged inside an output klogs
    holds).  Reads only; touches nothing."""
    check_inputs(target, inputs)
    if top_level:
        _check_ancestors(target)
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        side_path = sidecar_path(target)
        if file and os.path.lexists(side_path) and read_sidecar(target) is None:
            raise OutputRefused("refusing to write the output's marker there", path=side_path,
                                expected="no file there, or klogs' marker", found=describe_path(side_path)) from None
        return "absent"
    except OSError as exc:           # e.g. a parent that is a file: name the user's path and the reason
        raise OutputRefused("cannot create the output here", path=target,
                            expected="a path whose parent directory exists and is writable",
                            found=exc.strerror or str(exc)) from None
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(target, owner, describe_path(target))
    if file:
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(target, owner, describe_path(target))
        side = read_sidecar(target)
        if side is None:
            raise _refuse(target, owner, "a file klogs did not write (no .klogs-output marker beside it)")
        if side.owner.job != owner.job or side.owner.kind != owner.kind:
            raise _refuse(target, owner, f"the output of {side.owner.describe()}")
        if side.owner.version > owner.version:
            raise _refuse(target, owner, f"a {owner.describe()} of format {side.owner.version}, newer than "
                                         f"this klogs ({owner.version})")
        if file_digest(target) not in side.extra["sha256"]:
            raise _refuse(target, owner, "a file changed since klogs wrote it")
        return "own"
    if not stat.S_ISDIR(st.st_mode):
        raise _refuse(target, owner, describe_path(target))
    names = os.listdir(target)
    if not names:
        return "empty"
    marker = dir_marker(target)
    if marker is None:
        raise _refuse(target, owner, describe_path(target))
    if marker.owner.job != owner.job or marker.owner.kind != owner.kind:
        raise _refuse(target, owner, f"the output of {marker.owner.describe()}")
    if marker.owner.version > owner.version:
        raise _refuse(target, owner, f"a {owner.describe()} of format {marker.owner.version}, newer than "
                                     f"this klogs ({owner.version})")
    return "own"


def is_klogs_temp(path: str) -> bool:
    """True when ``path`` (a temporary name) is klogs' own to delete: a directory carrying a marker,
    an empty directory, or a directory holding nothing but a (partly written) marker file -- a
    run killed between creating it and writing the marker leaves that."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if dir_marker(path) is not None:
        return True
    names = os.listdir(path)
    return not names or (names == [MARKER] and stat.S_ISREG(os.lstat(os.path.join(path, MARKER)).st_mode))


def remove_tree(path: str) -> None:
    """Delete ``path`` without following links: a link (anywhere in the tree) is unlinked, never
    its target; a directory is removed with everything under it."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        if not shutil.rmtree.avoids_symlink_attacks:  # pragma: no cover - every Linux/macOS Python has it
            raise OSError(f"{path}: this platform cannot delete a tree without following links")
        shutil.rmtree(path)
    else:
        os.unlink(path)
