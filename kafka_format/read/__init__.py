"""The read path of the ``kafka-log`` data source and the local engine, without Spark.

* :mod:`~kafka_format.read.options` — the source's options, parsed and checked;
* :mod:`~kafka_format.read.planning` — partitions + indexes + bounds -> frozen, picklable splits;
* :mod:`~kafka_format.read.split_reader` — one split read: decode, bounds, ``read_committed``,
  control records, modes and ``_corrupt`` rows.

May import: the layers below (:mod:`kafka_format.log` for ListOffsets and transaction replay).
"""
