"""Record formats: the bytes of a Kafka ``.log`` file (Kafka's ``org.apache.kafka.common.record``).

* :mod:`~kafka_format.records.record_batch` — the constants every format shares (magic values, sentinels,
  timestamp types, attribute bits, codec ids), declared once;
* :mod:`~kafka_format.records.framing` — the entry framing every format shares
  and :class:`~kafka_format.records.framing.BatchTable` (batch headers as numpy
  columns);
* :mod:`~kafka_format.records.batch_v2` — magic 2 batches and records;
* :mod:`~kafka_format.records.legacy` — magic 0/1 message sets;
* :mod:`~kafka_format.records.control` — control record keys and values;
* :mod:`~kafka_format.records.columns` — decoded record columns and their
  assembly into Arrow; :mod:`~kafka_format.records.schema` — the Arrow types of the output;
* :mod:`~kafka_format.records.compression` — Kafka's codecs with their exact framing;
* :mod:`~kafka_format.records.decoder` — the reference decoder (plain Python, the spec in code);
  :mod:`~kafka_format.records.fast` — the compiled decoder overriding its hot methods
  (``_fastdecode.c``, ``_fastcodecs.c``); :mod:`~kafka_format.records.implementation` — which of the
  two a process uses;
* :mod:`~kafka_format.records.file_records` — a segment file (or byte range) decoded as Arrow record
  batches, with the modes (``decode_segment``, ``decode_file``, ``decode_bytes``, ``iter_batches``).
  Its parts: :mod:`~kafka_format.records.file_source` (the file's reads: mmap windows or a reused
  buffer), :mod:`~kafka_format.records.walker` (the framing walk with the modes) and
  :mod:`~kafka_format.records.chunk_records` (the records of each walked chunk).

May import: :mod:`kafka_format.common`.
"""

from __future__ import annotations
