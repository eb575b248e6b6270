"""CPU of a command's whole process tree: the command, its JVM, Spark's Python workers, and every
process they leave behind.

A timer that waits for its child only misses the processes the child never waits for (a Spark
driver's JVM outlives the Python driver by a moment; PySpark's worker daemon forks workers the
driver never reaps).  Here this process becomes a child subreaper (``PR_SET_CHILD_SUBREAPER``):
every orphaned descendant is re-parented to it, and it reaps them all before it reads
``RUSAGE_CHILDREN`` -- the user + system CPU of every descendant it waited for, transitively.

``python tests/benchmarks/treecpu.py -- CMD ...`` prints one JSON line: cpu_s, wall_s, rc.
:func:`measure` does the same in-process; call it from a process that runs nothing else at once
(the children's rusage of the caller is read before and after).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class TreeCpu:
    """One run: the CPU seconds of its whole tree, the wall seconds until its last process ended."""

    cpu_s: float
    wall_s: float
    rc: int


def become_subreaper() -> None:
    """Orphaned descendants of this process are re-parented to it (Linux)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(cmd: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
            quiet: bool = True) -> TreeCpu:
    """Run ``cmd`` and every process it starts to the end; their CPU and the wall time."""
    become_subreaper()
    before = _children_cpu()
    t0 = time.perf_counter()
    out = subprocess.DEVNULL if quiet else None
    proc = subprocess.Popen(list(cmd), env=None if env is None else dict(env), cwd=cwd, stdout=out, stderr=out)
    rc = proc.wait()
    while True:                     # the orphans re-parented here: reap until none is left
        try:
            os.wait()
        except ChildProcessError:
            break
    wall = time.perf_counter() - t0
    return TreeCpu(cpu_s=_children_cpu() - before, wall_s=wall, rc=rc)


def main(argv: Sequence[str]) -> int:
    """``treecpu.py [-v] -- CMD ...``: one JSON line on stdout."""
    args = list(argv)
    quiet = "-v" not in args[: args.index("--")] if "--" in args else True
    cmd = args[args.index("--") + 1:] if "--" in args else args
    if not cmd:
        print("usage: treecpu.py [-v] -- CMD ...", file=sys.stderr)
        return 2
    r = measure(cmd, quiet=quiet)
    print(json.dumps({"cpu_s": round(r.cpu_s, 3), "wall_s": round(r.wall_s, 3), "rc": r.rc}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
