"""Files written by task attempts and committed once, by the driver.

A job whose tasks write an output's files (an export's Parquet) runs them on an executor that may
start a task more than once: Spark retries a failed attempt, runs a speculative copy beside a slow
one, and keeps the result of one attempt only.  So a task never writes where a reader looks:

* it writes under ``<root>/_attempts/<task>-<attempt>/`` (:meth:`AttemptRoot.open`; ``attempt``
  is the runtime's name for the running attempt, :func:`kafka_format.engine.runtime.attempt`), file
  names of its own (its task index in them), and returns an :class:`AttemptFiles` manifest: the
  directory, the files and their row counts and sizes;
* the driver receives one manifest per task, the one of the attempt the executor kept, and
  :meth:`AttemptRoot.commit` moves exactly those files to ``<root>/<rel>``; whatever other attempts
  wrote is removed with ``_attempts``, before the output is published.

The attempts directory exists only while the tasks run: an attempt creates its own directory in it
without creating parents, so a zombie attempt (a speculative copy still running after the job was
committed) fails at its first write instead of leaving files in a published output.

``root`` is a local staging directory (published by one rename,
:func:`kafka_format.output.publish.staging_dir`) or a store URI (``s3a://...``, an object store's
staging prefix, :func:`kafka_format.output.store.staging_uri`: there the commit is the publish's
copy of each listed file, :func:`kafka_format.output.store.publish_staged` with ``sources``).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pyarrow.fs as pafs

from kafka_format.output.ownership import remove_tree

__all__ = ["ATTEMPTS", "AttemptFiles", "AttemptRoot", "WrittenFile"]

ATTEMPTS = "_attempts"      # hidden from Spark and pyarrow readers (leading '_')


@dataclass(frozen=True)
class WrittenFile:
    """One data file an attempt wrote: its path relative to the output root, rows and bytes."""

    rel: str
    rows: int
    size: int


@dataclass(frozen=True)
class AttemptFiles:
    """A task attempt's manifest: its directory under ``_attempts`` and the files it wrote there."""

    directory: str
    files: tuple[WrittenFile, ...] = ()


@dataclass(frozen=True)
class AttemptRoot:
    """Where the tasks of one output write (picklable: it travels with the tasks)."""

    root: str       # a local directory, or a store URI

    @property
    def is_store(self) -> bool:
        """Whether ``root`` is an object store's URI (no directories, no rename)."""
        from kafka_format.output.store import is_store

        return is_store(self.root)

    def _fs(self) -> tuple[pafs.FileSystem, str]:
        if self.is_store:
            from kafka_format.output.store import target

            t = target(self.root)
            return t.fs, t.path
        return pafs.LocalFileSystem(), os.path.abspath(self.root)

    def prepare(self) -> None:
        """Driver, before the tasks start: the attempts directory (local roots; a store has none)."""
        if not self.is_store:
            os.makedirs(os.path.join(self.root, ATTEMPTS), exist_ok=True)

    @staticmethod
    def directory(task: int, attempt: str) -> str:
        """The directory name of task ``task``'s attempt ``attempt`` (unique within a job)."""
        return f"{task:05d}-{attempt}"

    def open(self, task: int, attempt: str) -> tuple[pafs.FileSystem, str]:
        """Task: the file system and the base path task ``task``'s attempt ``attempt`` writes its
        files under (created here, never its parents: once the attempts are committed, a late
        attempt fails)."""
        fs, base = self._fs()
        name = self.directory(task, attempt)
        path = posixpath.join(base, ATTEMPTS, name) if self.is_store else os.path.join(base, ATTEMPTS, name)
        if not self.is_store:
            os.mkdir(path)          # FileExistsError for a name used twice; FileNotFoundError once committed
        return fs, path

    def commit(self, manifests: Iterable[AttemptFiles]) -> list[WrittenFile]:
        """Driver, once every task returned: the listed files of the kept attempts moved to their
        place under ``root`` (local roots), the attempts directory removed; the files, in task
        order.  A store root keeps its attempts' files where they are: the publish copies them
        (:meth:`sources`)."""
        manifests = list(manifests)
        files = [f for m in manifests for f in m.files]
        if self.is_store:
            return files
        base = os.path.abspath(self.root)
        for m in manifests:
            for f in m.files:
                dest = os.path.join(base, *f.rel.split("/"))
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                if os.path.lexists(dest):
                    raise FileExistsError(f"{dest}: two tasks wrote the same file")
                os.rename(os.path.join(base, ATTEMPTS, m.directory, *f.rel.split("/")), dest)
        remove_tree(os.path.join(base, ATTEMPTS))
        return files

    @staticmethod
    def sources(manifests: Sequence[AttemptFiles]) -> dict[str, str]:
        """For a store root: each output file's path (relative to the output) and where its kept
        attempt wrote it (relative to ``root``)."""
        return {f.rel: f"{ATTEMPTS}/{m.directory}/{f.rel}" for m in manifests for f in m.files}
