"""Foundation: what every layer may use, importing nothing else of the package.

* :mod:`~kafka_format.common.errors` — :class:`KafkaFormatError` and its subclasses (file, byte
  position, expected, found): every error for bad bytes is one of them;
* :mod:`~kafka_format.common.crc` — CRC-32C and CRC-32 (Kafka's ``Crc32C`` / ``Crc32``);
* :mod:`~kafka_format.common.units` — human units (sizes, durations, instants) for messages and reports;
* :mod:`~kafka_format.common.redaction` — credentials removed from every location shown or recorded;
* :mod:`~kafka_format.common.bulk` — the cyclic garbage collector paused while many small objects are built;
* :mod:`~kafka_format.common.limits` — Java's integer limits; :mod:`~kafka_format.common.topics` — Kafka's own
  topic names; :mod:`~kafka_format.common.kafka_uuid` — Kafka's ``Uuid`` as text;
* :mod:`~kafka_format.common.extensions` — which compiled extension modules a process uses (the one reader of
  ``KAFKA_FORMAT_DECODER`` and importer of the C modules, by name: they live in higher layers).

May import: nothing of ``kafka_format`` but this folder.
"""
