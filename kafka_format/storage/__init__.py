"""The files of a log dir and the state a replica's files hold (Kafka's ``storage.internals.log``
and ``storage.internals.checkpoint``).

* :mod:`~kafka_format.storage.fsio` — local paths and ``pyarrow.fs`` URIs: list, stat, read;
* :mod:`~kafka_format.storage.s3a` — Hadoop's ``s3a://`` opened with ``pyarrow.fs`` as S3A would, from
  its ``fs.s3a.*`` settings;
* :mod:`~kafka_format.storage.index` — ``.index`` / ``.timeindex`` (``OffsetIndex``, ``TimeIndex``);
* :mod:`~kafka_format.storage.txnindex` — ``.txnindex`` (``TransactionIndex``);
* :mod:`~kafka_format.storage.snapshot` — producer ``.snapshot`` (``ProducerStateManager``);
* :mod:`~kafka_format.storage.checkpoints` — offset checkpoints, ``leader-epoch-checkpoint``,
  ``partition.metadata``, ``meta.properties``, ``.kafka_cleanshutdown``, ``quorum-state``;
* :mod:`~kafka_format.storage.partition_files` — the files of one partition dir (``Segment``,
  ``SegmentTable``, snapshots) and how ``LogLoader`` classifies them;
* :mod:`~kafka_format.storage.partition_log` — ``PartitionLog``: one replica's files as a frozen value;
* :mod:`~kafka_format.storage.log_loader` — one partition dir read as ``LogLoader`` reads it (swap,
  cleaned and deleted files reconciled);
* :mod:`~kafka_format.storage.logdir` — ``open_log_dirs``: log dirs, partitions, segments, replicas
  (``LocalLog``);
* :mod:`~kafka_format.storage.watermarks` — the high-watermark-on-load and last-stable-offset rules as
  arithmetic; :mod:`~kafka_format.storage.batch_heads` — the one batch-header walker
  (``FileLogInputStream.nextBatch``, header bytes only); :mod:`~kafka_format.storage.partition_state`
  — a replica's LEO, HW, LSO, transaction replay and its segments' headers (``UnifiedLog``,
  ``ProducerStateManager``);
* :mod:`~kafka_format.storage.remote_tier` — the remote tier's files as Kafka's ``LocalTieredStorage``
  lays them out (partition dirs, segment filesets), and filesets as a partition log;
  :mod:`~kafka_format.storage.aiven_rsm`, :mod:`~kafka_format.storage.aiven_view` and
  :mod:`~kafka_format.storage.aiven_tier` — Aiven's ``RemoteStorageManager`` objects (manifest, chunks,
  keys), the segment files inside them as a filesystem, and its layout read as a remote storage;
  :mod:`~kafka_format.storage.tiered_history` — one history per tiered partition: which remote or
  local segment serves each offset (``RemoteLogManager``, ``RemoteLogMetadataCache``), and the
  findings where the tiers disagree.

May import: :mod:`kafka_format.common`, :mod:`kafka_format.records`, :mod:`kafka_format.internal` (the
remote log metadata values).
"""
