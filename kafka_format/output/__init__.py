"""Where klogs writes: which paths it may replace, one run per output, crash-safe publishing.

* :mod:`~kafka_format.output.ownership` — the ``.klogs-output`` marker and ``check_target``: a job
  replaces only its own previous output, never a foreign file or a Kafka log dir;
* :mod:`~kafka_format.output.runlock` — an ``flock`` per output or checkpoint;
* :mod:`~kafka_format.output.publish` — temporary sibling, fsync, one rename; crash leftovers
  cleaned; the ``KLA_CRASH_AT`` fault-injection points;
* :mod:`~kafka_format.output.store` — the same rules for outputs on an object store (``s3a://``), and
  the publish a store without rename allows (files first, ``_SUCCESS`` and the marker last).

May import: :mod:`kafka_format.common`, :mod:`kafka_format.storage` (file access).
"""
