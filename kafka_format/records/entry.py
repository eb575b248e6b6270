"""The 12-byte prefix every ``.log`` entry starts with, whatever its format.

Source: ``clients/src/main/java/org/apache/kafka/common/record/Records.java``
(``OFFSET_OFFSET``, ``SIZE_OFFSET``, ``LOG_OVERHEAD``, ``MAGIC_OFFSET``,
``HEADER_SIZE_UP_TO_MAGIC``).  A v2 batch calls the two fields ``baseOffset`` and
``length``, a legacy entry ``offset`` and ``size``; they are the same bytes.  This is the
one declaration of that layout: the record formats, the writer, the dump tool and the
header walkers import it.
"""

from __future__ import annotations

import struct

__all__ = ["ENTRY", "HEADER_SIZE_UP_TO_MAGIC", "LOG_OVERHEAD", "MAGIC_OFFSET", "OFFSET_OFFSET", "SIZE_OFFSET"]

ENTRY = struct.Struct(
    ">"
    "q"  # offset (v2: baseOffset)
    "i"  # size (v2: length): bytes that follow these 12
)
OFFSET_OFFSET = 0
SIZE_OFFSET = struct.calcsize(">q")  # 8
LOG_OVERHEAD = ENTRY.size  # 12
MAGIC_OFFSET = LOG_OVERHEAD + struct.calcsize(">I")  # 16: after v2 partitionLeaderEpoch / legacy crc
HEADER_SIZE_UP_TO_MAGIC = MAGIC_OFFSET + 1  # 17
