"""The log's rules, as Kafka's broker and tools apply them to a replica's files, without Spark.

* :mod:`~kafka_format.log.topicconfig` — effective topic configs (``LogConfig``: defaults, broker
  synonyms, KRaft metadata overrides, flags);
* :mod:`~kafka_format.log.list_offsets` — ListOffsets (``UnifiedLog.fetchOffsetByTimestamp``);
* :mod:`~kafka_format.log.retention` — the retention pass (``UnifiedLog.deleteOldSegments``);
* :mod:`kafka_format.log.cleaner` — the log cleaner (``LogCleanerManager``, ``Cleaner``, ``filterTo``;
  its MD5, offset map and record encoder compiled in ``_kernels.c``);
* :mod:`kafka_format.log.audit` — ``DumpLogSegments``' checks and more.
* :mod:`~kafka_format.log.replication` — follower truncation and the history replicas agree on
  (``AbstractFetcherThread``, ``LeaderEpochFileCache.endOffsetFor``).

May import: :mod:`kafka_format.common`, :mod:`kafka_format.records`, :mod:`kafka_format.internal`,
:mod:`kafka_format.storage`, :mod:`kafka_format.writer`, :mod:`kafka_format.output`.
"""
