"""Crash-safe outputs: write under a temporary name, publish with one rename -- only where klogs may.

Every output a job writes (Parquet directories, JSON summaries, compacted log dirs, reports)
goes through here so that a reader never sees half of it: a crash (kill -9, OOM, a lost
executor) leaves at most a temporary sibling (``.NAME.tmp-<hex>``, or a previous output renamed
aside as ``.NAME.old-<hex>``) that :func:`cleanup_stale` removes (or puts back) on the next run.

Ownership (:mod:`kafka_format.output.ownership`): every staged directory gets the ``.klogs-output``
marker the moment it is created, so it is published with it; a target is replaced only when it
is absent, an empty directory or the same job's previous output (by its marker), and clean-up
removes only temporaries that carry a marker (or are empty).  :func:`claim_output` is what a job
wraps its run in: the target checked before anything is written, a lock held against a second
run (:mod:`kafka_format.output.runlock`), a crashed run's own leftovers cleaned.

A rename is atomic on local file systems (POSIX ``rename(2)``) and HDFS; object stores have no
atomic rename, so callers writing there publish through a table format with atomic commits
(Delta) instead.  Replacing an existing directory takes two renames (old aside, new in place):
a reader in between sees no output rather than a partial one.

``crash_point(name)`` is the fault-injection hook the crash-consistency tests use: when the
environment variable ``KLA_CRASH_AT`` equals ``name`` the process kills itself with SIGKILL
right there (with ``session=True``, every process of its session: a Spark job's driver, JVM and
workers), so a test can stop a job at an exact step without timing; ``KLA_STOP_AT`` stops it
there (SIGSTOP) for a test to signal it (the interrupt tests: a Ctrl-C at an exact step).
"""

from __future__ import annotations

import os
import re
import signal
import stat
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kafka_format.output.ownership import (
    GENERIC,
    MARKER,
    OutputRefused,
    Owner,
    check_target,
    dir_marker,
    file_digest,
    is_klogs_temp,
    new_run_id,
    read_marker,
    read_sidecar,
    remove_tree,
    write_marker,
    write_sidecar,
)
from kafka_format.output.runlock import hold
from kafka_format.storage.fsio import local_path

__all__ = [
    "CRASH_ENV",
    "STOP_ENV",
    "Claim",
    "OutputRefused",
    "Owner",
    "atomic_write_bytes",
    "atomic_write_text",
    "claim_output",
    "cleanup_stale",
    "crash_point",
    "ensure_output_dir",
    "is_temp_name",
    "local_path",
    "publish_dir",
    "publish_file",
    "read_point",
    "staging_dir",
]

CRASH_ENV = "KLA_CRASH_AT"
STOP_ENV = "KLA_STOP_AT"
_TEMP = re.compile(r"^\..+\.(tmp|old)-[0-9a-f]{32}$")


def crash_point(name: str, *, session: bool = False, jvm: bool = False) -> None:
    """SIGKILL this process if ``$KLA_CRASH_AT == name`` (test hook; a no-op otherwise).
    ``session``: every process of this process's session first -- a job a test started in a
    session of its own (the driver, its JVM, Spark's Python workers, which run in a process group
    of their own) dies at once, as when its machine goes down.  ``jvm``: instead, the JVM this
    Python worker serves (its nearest ``java`` ancestor), as the kernel's OOM killer ends a JVM that
    outgrew its machine; nothing when no JVM is an ancestor (the local engine).
    ``$KLA_STOP_AT == name``: this process stops itself (SIGSTOP) right there instead, so a test can
    send it a signal of its own (SIGINT: a Ctrl-C) at that exact step and then SIGCONT."""
    if os.environ.get(STOP_ENV) == name:
        os.kill(os.getpid(), signal.SIGSTOP)
        return
    if os.environ.get(CRASH_ENV) != name:
        return
    if jvm:
        _kill_jvm_ancestor()
        return
    if session:
        _kill_session()
    os.kill(os.getpid(), signal.SIGKILL)


def read_point(topic: str, partition: int) -> None:
    """Test hook at the start of a task reading one partition (the ``kafka-log`` source's Spark
    tasks and every executor's export tasks): ``read:<topic>-<partition>`` kills the whole job --
    driver, JVM, workers -- e.g. mid-write after other tasks wrote their files, or stops there
    (:func:`crash_point`).  Armed only with ``$KLA_CRASH_AT`` set."""
    if CRASH_ENV in os.environ:
        crash_point(f"read:{topic}-{partition}", session=True)


def _kill_jvm_ancestor() -> None:
    pid = os.getppid()
    for _ in range(4):              # the worker's ancestors: the PySpark daemon, then the JVM
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{pid}/stat", "rb") as f:
                parent = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return
        if b"java" in cmd.split(b"\0", 1)[0]:
            os.kill(pid, signal.SIGKILL)
            return
        pid = parent


def _kill_session() -> None:
    sid, me = os.getsid(0), os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()     # state, ppid, pgrp, session, ...
            if int(fields[3]) == sid:
                os.kill(int(entry), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue


def _temp_sibling(path: str, kind: str) -> str:
    parent, name = os.path.split(os.path.abspath(path))
    return os.path.join(parent, f".{name}.{kind}-{uuid.uuid4().hex}")


def is_temp_name(name: str) -> bool:
    """True for the temporary names this module creates (``.<name>.tmp-<hex>``, ``.<name>.old-<hex>``).
    A name alone never licenses deleting: see :func:`cleanup_stale`."""
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
    """Write ``data`` to ``path`` so that readers see the old content or all of the new.

    The primitive, for files inside an output klogs owns (a staging directory); a job's
    single-file output goes through :func:`publish_file`, which checks and marks the target."""
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
                fd = os.open(os.path.join(dirpath, name), os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(dirpath)


@contextmanager
def staging_dir(target: str | os.PathLike[str], owner: Owner = GENERIC) -> Iterator[str]:
    """A fresh directory beside ``target`` carrying ``owner``'s marker; published as ``target`` when
    the block ends normally.

    ``target`` must be absent, an empty directory or ``owner``'s previous output (checked before
    anything is created, and again right before the rename): anything else raises
    :class:`OutputRefused` and is left as it was.  On an exception the staging directory is
    removed and ``target`` is left as it was.
    """
    final = os.path.abspath(local_path(target))
    check_target(final, owner, top_level=False)
    os.makedirs(os.path.dirname(final), exist_ok=True)
    tmp = _temp_sibling(final, "tmp")
    os.mkdir(tmp)
    try:
        write_marker(tmp, owner, new_run_id())
        yield tmp
        _fsync_tree(tmp)
        publish_dir(tmp, final, owner)
    except BaseException:
        remove_tree(tmp)
        raise


def publish_dir(staged: str, target: str, owner: Owner | None = None) -> None:
    """Rename the finished directory ``staged`` to ``target``.  An empty directory at ``target`` is
    removed first; a previous output is renamed aside, the new one renamed in, the old one deleted
    (links in it unlinked, never followed) -- only when its marker names ``owner`` (any klogs
    marker when ``owner`` is None).  Anything else at ``target``: :class:`OutputRefused`."""
    old = None
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISDIR(st.st_mode) and not os.listdir(target):
            os.rmdir(target)                      # fails (and stops us) if something appeared meanwhile
        elif owner is not None:
            check_target(target, owner, top_level=False)
            old = _temp_sibling(target, "old")
        elif stat.S_ISDIR(st.st_mode) and dir_marker(target) is not None:
            old = _temp_sibling(target, "old")
        else:
            raise OutputRefused("refusing to replace it (not a klogs output)", path=target,
                                expected="a previous klogs output", found="something klogs did not write")
        if old is not None:
            os.rename(target, old)
            crash_point("publish:old-aside")
    os.rename(staged, target)
    _fsync_dir(os.path.dirname(target))
    if old is not None:
        crash_point("publish:new-in-place")
        remove_tree(old)


def cleanup_stale(parent: str | os.PathLike[str], name: str | None = None) -> list[str]:
    """Remove leftovers of crashed runs directly inside ``parent``; returns their names.

    Only klogs' own are touched: a temporary name that is a directory carrying the marker (or an
    empty one, see :func:`kafka_format.output.ownership.is_klogs_temp`), or a temporary a single-file
    output's marker lists.  A previous output renamed aside by a publish that died before its
    second rename is put back instead of removed.  ``name``: only the leftovers of that output
    (another job may be publishing beside it right now).  Call it holding the output's lock."""
    root = local_path(parent)
    removed: list[str] = []
    if not os.path.isdir(root):
        return removed
    entries = sorted(os.listdir(root))
    for entry in entries:
        m = _TEMP.match(entry)
        if m:
            original_name = entry[1:entry.rindex(f".{m.group(1)}-")]
            if name is not None and original_name != name:
                continue
            path = os.path.join(root, entry)
            if not is_klogs_temp(path):
                continue                  # not provably ours: left alone
            original = os.path.join(root, original_name)
            if m.group(1) == "old" and dir_marker(path) is not None and not os.path.lexists(original):
                os.rename(path, original)      # crashed between the two renames of publish_dir: restore
            else:
                remove_tree(path)
            removed.append(entry)
        elif entry.endswith(MARKER) and entry.startswith("."):
            removed += _cleanup_file_output(root, entry, name)
    return removed


def _cleanup_file_output(root: str, sidecar_name: str, name: str | None) -> list[str]:
    """Leftovers of a single-file output whose sidecar is ``sidecar_name``: the temporaries the
    sidecar lists and the sidecar's own temporaries (recognised by the marker they hold)."""
    target_name = sidecar_name[1:-len(MARKER)]
    if not target_name or (name is not None and target_name != name):
        return []
    removed = []
    side = read_sidecar(os.path.join(root, target_name))
    for pending in side.extra["pending"] if side is not None else []:
        path = os.path.join(root, str(pending))
        if os.path.basename(path) == pending and is_temp_name(pending) and os.path.isfile(path) \
                and not os.path.islink(path):
            os.unlink(path)
            removed.append(str(pending))
    prefix = f"{sidecar_name}.tmp-"
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        if entry.startswith(prefix) and (read_marker(path) is not None or _empty_file(path)):
            os.unlink(path)
            removed.append(entry)
    return removed


def _empty_file(path: str) -> bool:
    st = os.lstat(path)
    return stat.S_ISREG(st.st_mode) and st.st_size == 0


def publish_file(target: str | os.PathLike[str], data: bytes, owner: Owner) -> None:
    """Publish a single-file output atomically: ``target`` must be absent or ``owner``'s previous
    file unchanged since (its sidecar marker ``.NAME.klogs-output`` holds the SHA-256 of what klogs
    wrote).  The sidecar lists the temporary before it exists and both digests while the rename is
    pending, so a crash at any step leaves a state the next run recognises."""
    import hashlib

    final = os.path.abspath(local_path(target))
    state = check_target(final, owner, file=True)
    os.makedirs(os.path.dirname(final), exist_ok=True)
    run = new_run_id()
    tmp = _temp_sibling(final, "tmp")
    new = hashlib.sha256(data).hexdigest()
    old = [d for d in [file_digest(final)] if d is not None] if state == "own" else []
    write_sidecar(final, owner, run, [*old, new], [os.path.basename(tmp)])
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        crash_point("publish:file-staged")
        os.replace(tmp, final)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(os.path.dirname(final))
    write_sidecar(final, owner, run, [new], [])
    _fsync_dir(os.path.dirname(final))


def ensure_output_dir(target: str | os.PathLike[str], owner: Owner) -> str:
    """For outputs written in place over many runs (incremental exports, Delta tables, streaming
    checkpoints): ``target`` becomes a directory carrying ``owner``'s marker (created by one rename
    when absent or empty; kept when it already is ``owner``'s).  Returns its absolute path."""
    final = os.path.abspath(local_path(target))
    if check_target(final, owner) != "own":
        with staging_dir(final, owner):
            pass
    return final


@dataclass(frozen=True)
class Claim:
    """An output a run holds: its absolute path, the job that owns it, what was there."""

    path: str
    owner: Owner
    state: str                      # "absent" | "empty" | "own"


@contextmanager
def claim_output(target: str | os.PathLike[str], owner: Owner, *, inputs: Iterable[str] = (),
                 file: bool = False, what: str = "output") -> Iterator[Claim]:
    """Hold ``target`` for a run: checked (:func:`kafka_format.output.ownership.check_target`, with the
    input log dirs) before anything is created, locked against a second run, checked again under
    the lock, and a crashed run's own leftovers cleaned.  Raises OutputRefused / OutputBusy
    (both one-line KafkaFormatErrors: exit 2 through ``run_job``) touching nothing."""
    final = os.path.abspath(local_path(target))
    inputs = list(inputs)
    check_target(final, owner, inputs=inputs, file=file)
    with hold(final, what=what):
        cleanup_stale(os.path.dirname(final), os.path.basename(final))
        state = check_target(final, owner, inputs=inputs, file=file)
        yield Claim(final, owner, state)
