"""delta-spark's JVM half: the Maven coordinate matching the installed ``delta-spark`` and ``pyspark``
and the session settings Delta documents.

A session gets them only for a Delta output (``build_session(delta=True)``): the jars resolved once at
set-up (:mod:`kafka_format.spark.jars`, ``make setup``) as files, or the coordinate for Spark to
resolve.  Users of ``spark-submit`` pass the same coordinate with ``--packages``.
"""

from __future__ import annotations

import importlib.metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SQL_CONF", "delta_package", "session_jvm"]

# The settings delta-spark documents for a session that reads and writes Delta tables.
SQL_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
SCALA = "2.13"          # Spark 4's only Scala


def delta_package() -> str | None:
    """``io.delta:delta-spark_<spark major.minor>_2.13:<delta-spark version>`` for the installed
    Python packages (the artifact delta-spark's own ``configure_spark_with_delta_pip`` names), or
    None when the ``delta-spark`` Python package is not installed."""
    try:
        delta_version = importlib.metadata.version("delta-spark")
        spark_version = importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        return None
    major_minor = ".".join(spark_version.split(".")[:2])
    return f"io.delta:delta-spark_{major_minor}_{SCALA}:{delta_version}"


def session_jvm(spark: SparkSession) -> Any:
    """The py4j view of the session's JVM (``jvm.java.lang...``): a classic session has one."""
    jvm = spark.sparkContext._jvm
    if jvm is None:
        raise RuntimeError("the Spark session has no JVM gateway (its SparkContext is not running)")
    return jvm
