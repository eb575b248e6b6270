"""A process's peak resident set, as benchmarks report it.

``getrusage(RUSAGE_SELF).ru_maxrss`` is no measure of a process started by another: Linux keeps it
across ``execve``, so a fresh ``klogs`` started from a benchmark that once held 650 MB reports
650 MB whatever it used itself.  ``VmHWM`` in ``/proc/self/status`` belongs to the process's own
memory map (new at ``execve``), and writing ``5`` to ``/proc/self/clear_refs`` sets it back to
the current resident set, so a step's own peak can be measured inside a long-lived process.
"""

from __future__ import annotations

import resource

__all__ = ["peak_rss_bytes", "reset_peak_rss"]


def peak_rss_bytes() -> int:
    """This process's peak resident set in bytes (``VmHWM``; ``ru_maxrss`` where there is no /proc)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_peak_rss() -> bool:
    """Set this process's peak resident set back to its current one (Linux 4.0+); False where the
    kernel does not allow it (then :func:`peak_rss_bytes` keeps the earlier peak)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False
