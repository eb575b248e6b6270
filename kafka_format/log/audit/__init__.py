"""The audit: every ``kafka-dump-log`` check plus checkpoint, leader-epoch, producer-snapshot,
``.txnindex``, hanging-transaction and cross-replica checks, as :class:`Finding` rows, and per-file
byte accounting.

* :mod:`~kafka_format.log.audit.auditor` — the entry points (one replica, coordinator state);
* :mod:`~kafka_format.log.audit.model` — rows and the replica state the checks share;
* :mod:`~kafka_format.log.audit.scan` — one ``.log`` read and accounted (valid + skipped + zero tail
  + cut = size);
* :mod:`~kafka_format.log.audit.segments` — ``.log``, batches, ``.index``, ``.timeindex``;
* :mod:`~kafka_format.log.audit.state` — checkpoints, leader epochs, producer snapshots,
  ``.txnindex``, hanging transactions;
* :mod:`~kafka_format.log.audit.replicas` — a log dir's own files and replicas across brokers.

May import: what :mod:`kafka_format.log` may, and the rest of :mod:`kafka_format.log`.
"""
