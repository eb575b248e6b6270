"""delta-spark's JVM half: the Maven coordinate matching the installed ``delta-spark`` and ``pyspark``,
the session settings that put it on a session's classpath, and a set-up step that resolves the jars.

The jars come through Spark's own package resolution (``spark.jars.packages``, Ivy), cached in
Spark's Ivy directory (``~/.ivy2.5.2`` unless ``spark.jars.ivy`` says otherwise), outside any checkout.
``python -m kafka_format.spark.jars`` (run by ``make setup``) resolves them once, with hadoop-aws's, so
later sessions start without downloading; ``python -m kafka_format.spark.delta`` resolves Delta's alone.  Users of ``spark-submit`` pass the same coordinate with ``--packages``.
"""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SQL_CONF", "delta_package", "with_delta", "session_jvm", "main"]

# The settings delta-spark documents for a session that reads and writes Delta tables.
SQL_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
PACKAGES = "spark.jars.packages"
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


def with_delta(conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` plus delta-spark: its package appended to ``spark.jars.packages`` and its SQL
    extension and catalog, unless ``conf`` already names a Delta package (the user's choice rules)
    or delta-spark is not installed (then ``conf`` unchanged).  A user's own ``spark.sql.extensions``
    is kept, with Delta's appended."""
    out = dict(conf)
    package = delta_package()
    existing = [p.strip() for p in out.get(PACKAGES, "").split(",") if p.strip()]
    if package is None or any(p.startswith("io.delta:") for p in existing):
        return out
    out[PACKAGES] = ",".join([*existing, package])
    extensions = [e.strip() for e in out.get("spark.sql.extensions", "").split(",") if e.strip()]
    if SQL_CONF["spark.sql.extensions"] not in extensions:
        extensions.append(SQL_CONF["spark.sql.extensions"])
    out["spark.sql.extensions"] = ",".join(extensions)
    out.setdefault("spark.sql.catalog.spark_catalog", SQL_CONF["spark.sql.catalog.spark_catalog"])
    return out


def session_jvm(spark: SparkSession) -> Any:
    """The py4j view of the session's JVM (``jvm.java.lang...``): a classic session has one."""
    jvm = spark.sparkContext._jvm
    if jvm is None:
        raise RuntimeError("the Spark session has no JVM gateway (its SparkContext is not running)")
    return jvm


def main(argv: list[str] | None = None) -> int:
    """Resolve delta-spark's jars into Spark's Ivy cache (a local session started and stopped)."""
    from pyspark.sql import SparkSession

    package = delta_package()
    if package is None:
        print("delta-spark is not installed; nothing to fetch", file=sys.stderr)
        return 0
    builder = SparkSession.builder.master("local[1]").appName("klogs delta jars") \
        .config("spark.ui.enabled", "false")
    for key, value in with_delta({}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    try:
        jvm = session_jvm(spark)
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName("io.delta.tables.DeltaTable", False, loader)
    finally:
        spark.stop()
    print(f"delta-spark jars resolved: {package}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
