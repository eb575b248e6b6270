"""CPU of a command's whole process tree: the command, its JVM, Spark's Python workers, and every
process they leave behind.

A timer that waits for its child only misses the processes the child never waits for (a Spark
driver's JVM outlives the Python driver by a moment).  Reaping as a child subreaper is not enough
either: PySpark's worker daemon sets ``SIGCHLD`` to ``SIG_IGN`` (``pyspark/daemon.py``), so the
kernel reaps the Python workers it forks at once and their CPU is added to nobody's
``RUSAGE_CHILDREN`` -- a Spark job's decoding and writing vanish from such a timer (measured here:
17 of 43 CPU seconds of an export).  So the command runs in a cgroup of its own (v1 ``cpuacct`` or
v2, when this process may create one: root on Linux) and its CPU is the cgroup's ``usage``, every
process of the tree included however it ended.  Without a writable cgroup the timer falls back to
the subreaper's ``RUSAGE_CHILDREN`` and says so (``exact=False``).

``python tests/benchmarks/treecpu.py -- CMD ...`` prints one JSON line: cpu_s, wall_s, rc, exact.
:func:`measure` does the same in-process.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
CGROUP_V1 = Path("/sys/fs/cgroup/cpuacct")
CGROUP_V2 = (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"))
_names = itertools.count()


@dataclass(frozen=True)
class TreeCpu:
    """One run: the CPU seconds of its whole tree, the wall seconds until its last process ended."""

    cpu_s: float
    wall_s: float
    rc: int
    exact: bool                 # measured by a cgroup (every process); else RUSAGE_CHILDREN


class _Group:
    """A cgroup of its own for one command: join it in the child, read its CPU, remove it."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.v2 = False
        name = f"treecpu-{os.getpid()}-{next(_names)}"
        for root, v2 in ((CGROUP_V1, False), *((r, True) for r in CGROUP_V2)):
            probe = root / ("cgroup.procs" if v2 else "cpuacct.usage")
            if not probe.exists():
                continue
            try:
                (root / name).mkdir()
            except OSError:
                continue
            self.path, self.v2 = root / name, v2
            break

    def join(self) -> None:
        """In the child before exec: move this process into the group."""
        if self.path is not None:
            (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def wait_empty(self) -> None:
        """Until no process is left in the group (the tree's last ones may be exiting)."""
        while self.path is not None and (self.path / "cgroup.procs").read_text().strip():
            time.sleep(0.01)

    def cpu_s(self) -> float:
        assert self.path is not None
        if self.v2:
            stat = dict(line.split() for line in (self.path / "cpu.stat").read_text().splitlines())
            return int(stat["usage_usec"]) / 1e6
        return int((self.path / "cpuacct.usage").read_text()) / 1e9

    def remove(self) -> None:
        if self.path is not None:
            self.path.rmdir()


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
    group = _Group()
    before = _children_cpu()
    t0 = time.perf_counter()
    out = subprocess.DEVNULL if quiet else None
    proc = subprocess.Popen(list(cmd), env=None if env is None else dict(env), cwd=cwd, stdout=out, stderr=out,
                            preexec_fn=group.join)
    rc = proc.wait()
    while True:                     # the orphans re-parented here: reap until none is left
        try:
            os.wait()
        except ChildProcessError:
            break
    group.wait_empty()
    wall = time.perf_counter() - t0
    try:
        if group.path is not None:
            return TreeCpu(cpu_s=group.cpu_s(), wall_s=wall, rc=rc, exact=True)
        return TreeCpu(cpu_s=_children_cpu() - before, wall_s=wall, rc=rc, exact=False)
    finally:
        group.remove()


def main(argv: Sequence[str]) -> int:
    """``treecpu.py [-v] -- CMD ...``: one JSON line on stdout."""
    args = list(argv)
    quiet = "-v" not in args[: args.index("--")] if "--" in args else True
    cmd = args[args.index("--") + 1:] if "--" in args else args
    if not cmd:
        print("usage: treecpu.py [-v] -- CMD ...", file=sys.stderr)
        return 2
    r = measure(cmd, quiet=quiet)
    print(json.dumps({"cpu_s": round(r.cpu_s, 3), "wall_s": round(r.wall_s, 3), "rc": r.rc, "exact": r.exact}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
