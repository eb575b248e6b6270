"""Building many small objects at once: the cyclic garbage collector paused meanwhile.

Discovery and planning of a large cluster make hundreds of thousands of small objects (segment
ranges, splits, partition values) that hold no reference cycles.  Python's cyclic collector runs
after every ~700 allocations and its older generations re-walk every live object, so its cost
grows with the square of what is built: at 200,000 segments it was half of the planning time.
:func:`no_cyclic_gc` pauses it for such a build (reference counting frees everything as usual)
and restores the previous state.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["no_cyclic_gc"]


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector inside the block (a no-op when it is already paused)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
