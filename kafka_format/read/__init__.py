"""The read path of the ``kafka-log`` data source and the local engine, without Spark.

* :mod:`~kafka_format.read.options` — the source's options, parsed and checked;
* :mod:`~kafka_format.read.planning` — partitions + indexes + bounds -> frozen, picklable splits;
* :mod:`~kafka_format.read.split_reader` — one split read: decode, bounds, ``read_committed``,
  control records, modes and ``_corrupt`` rows;
* :mod:`~kafka_format.read.remote_log_metadata` — tiered storage's ``__remote_log_metadata`` read as
  the remote log metadata manager's consumer reads it, and replayed.

May import: the layers below (:mod:`kafka_format.log` for ListOffsets and transaction replay).
"""
