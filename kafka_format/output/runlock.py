"""One run per output: an exclusive lock on a file beside the output (or checkpoint).

``hold(target)`` takes ``fcntl.flock`` on ``.NAME.klogs-lock`` beside ``target`` without
waiting.  The kernel releases a flock when its process dies, so a crashed (even SIGKILLed) run
never leaves the lock stuck; the file it leaves is taken over by the next run.  The holder writes
who it is into the file (pid, host, start time, command with URI credentials masked), and a
second run gets :class:`OutputBusy` naming that run.  The lock file is removed on release
(unlinked while still locked; a run that opened the old file notices the swap and retries).

Holding is re-entrant within a process: a library function that locks the output a job already
holds does not deadlock on itself.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import socket
import stat
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from kafka_format.common.errors import KafkaFormatError
from kafka_format.output.ownership import OutputRefused

__all__ = ["LOCK_SUFFIX", "OutputBusy", "hold", "lock_path", "mask_credentials"]

LOCK_SUFFIX = ".klogs-lock"
_HOLDER_WAIT_S = 2.0          # a holder writes its identity right after locking; wait this long to read it
_held: dict[str, int] = {}
_held_guard = threading.Lock()


class OutputBusy(KafkaFormatError):
    """Another run holds the output or checkpoint (exit code 2)."""

    code = "OUTPUT_BUSY"


def lock_path(target: str) -> str:
    """``.NAME.klogs-lock`` beside ``target``."""
    parent, name = os.path.split(os.path.abspath(target).rstrip(os.sep))
    return os.path.join(parent, f".{name}{LOCK_SUFFIX}")


def mask_credentials(text: str) -> str:
    """``scheme://user:secret@host`` -> ``scheme://***@host``."""
    return re.sub(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@", r"\1***@", text)


def _identity() -> bytes:
    argv = list(sys.argv) or ["python"]
    argv[0] = "klogs" if argv[0] in ("", "-c") else os.path.basename(argv[0])
    command = mask_credentials(shlex.join(argv))
    doc = {"pid": os.getpid(), "host": socket.gethostname(),
           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "command": " ".join(command.split())}
    return (json.dumps(doc) + "\n").encode("utf-8")


def _ours(fd: int) -> bool:
    """The lock file is empty (a run killed right after creating it) or names a klogs run."""
    data = os.pread(fd, 1 << 16, 0)
    if not data:
        return True
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(doc, dict) and {"pid", "host", "started", "command"} <= doc.keys()


def _holder(fd: int) -> str:
    deadline = time.monotonic() + _HOLDER_WAIT_S
    while True:
        os.lseek(fd, 0, os.SEEK_SET)
        data = os.read(fd, 1 << 16)
        try:
            doc = json.loads(data.decode("utf-8"))
            return (f"another klogs run (pid {doc['pid']} on {doc['host']}, started {doc['started']}: "
                    f"{doc['command']})")
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            if time.monotonic() >= deadline:
                return "another klogs run (which has not written its identity)"
        time.sleep(0.01)


def _acquire(path: str, what: str, target: str) -> int:
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{path}: lock file is not a regular file")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise OutputBusy(f"the {what} is in use", path=target, expected="no other run on it",
                                 found=_holder(fd) + "; wait for it to finish or use another path") from None
            mine = os.fstat(fd)
            try:
                now = os.lstat(path)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
                if not _ours(fd):
                    raise OutputRefused("refusing to use this lock file", path=path,
                                        expected="no file there, or a klogs lock file",
                                        found="a file klogs did not write")
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)          # the holder released and removed this file meanwhile: take the new one


@contextmanager
def hold(target: str, *, what: str = "output") -> Iterator[str]:
    """Hold the lock of ``target`` for the block (``OutputBusy`` at once if another run does);
    yields the lock file's path."""
    path = lock_path(target)
    with _held_guard:
        if path in _held:
            _held[path] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield path
        finally:
            with _held_guard:
                _held[path] -= 1
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = _acquire(path, what, target)
    except (OutputBusy, OutputRefused):
        raise
    except OSError as exc:             # name the user's path and the reason, not our lock file
        raise OutputRefused(f"cannot create the {what} here", path=target,
                            expected="a path whose parent directory exists and is writable",
                            found=exc.strerror or str(exc)) from None
    try:
        os.ftruncate(fd, 0)
        os.write(fd, _identity())
        with _held_guard:
            _held[path] = 1
        try:
            yield path
        finally:
            with _held_guard:
                del _held[path]
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
    finally:
        os.close(fd)
