"""The JVM packages klogs' sessions load, resolved once at set-up: delta-spark
(:mod:`kafka_format.spark.delta`) and hadoop-aws with the AWS SDK modules S3A needs
(:mod:`kafka_format.spark.s3a`).

``python -m kafka_format.spark.jars`` (run by ``make setup``) starts one local session with both
(Spark's own resolution, ``spark.jars.packages``, into Ivy's cache ``~/.ivy2.5.2`` unless
``spark.jars.ivy`` says otherwise, outside any checkout) and checks that their classes load, so
later sessions start without downloading and a fresh clone needs nothing by hand.
"""

from __future__ import annotations

import sys

from kafka_format.spark.delta import delta_package, session_jvm, with_delta
from kafka_format.spark.s3a import packages as s3a_packages
from kafka_format.spark.s3a import with_s3a

__all__ = ["CHECKED_CLASSES", "main"]

# One class per package that must load from the resolved jars.
CHECKED_CLASSES = ("io.delta.tables.DeltaTable", "org.apache.hadoop.fs.s3a.S3AFileSystem",
                   "software.amazon.awssdk.services.s3.S3Client", "software.amazon.awssdk.transfer.s3.S3TransferManager")


def main(argv: list[str] | None = None) -> int:
    """Resolve delta-spark's and hadoop-aws's jars into Spark's Ivy cache (a local session started
    and stopped) and load one class of each."""
    from pyspark.sql import SparkSession

    conf = with_s3a(with_delta({}))
    builder = SparkSession.builder.master("local[1]").appName("klogs jars").config("spark.ui.enabled", "false")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    try:
        jvm = session_jvm(spark)
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        for name in CHECKED_CLASSES if delta_package() else CHECKED_CLASSES[1:]:
            jvm.java.lang.Class.forName(name, False, loader)
    finally:
        spark.stop()
    print(f"jars resolved: {', '.join(filter(None, [delta_package(), *s3a_packages()]))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
