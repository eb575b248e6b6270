"""Record formats of a Kafka ``.log`` file: framing, v2 batches, legacy message sets.

* :mod:`~kafka_format.records.framing` — the entry framing every format shares
  and :class:`~kafka_format.records.framing.BatchTable` (batch headers as numpy
  columns);
* :mod:`~kafka_format.records.batch_v2` — magic 2 batches and records;
* :mod:`~kafka_format.records.legacy` — magic 0/1 message sets;
* :mod:`~kafka_format.records.control` — control record keys and values;
* :mod:`~kafka_format.records.columns` — decoded record columns and their
  assembly into Arrow.
"""

from __future__ import annotations
