"""The Spark side of kafka-log-analytics: the ``kafka-log`` data source and the session builder.

``register(spark)`` makes ``spark.read.format("kafka-log")`` available in a session built
elsewhere; :func:`kafka_format.spark.session.build_session` does it automatically.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["register", "FORMAT"]

FORMAT = "kafka-log"


def register(spark: SparkSession) -> None:
    """Register the ``kafka-log`` Python data source with ``spark`` (idempotent)."""
    from kafka_format.spark.datasource import KafkaLogDataSource

    spark.dataSource.register(KafkaLogDataSource)
