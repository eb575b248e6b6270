"""What the session's Spark does that the ``kafka-log`` source must work around.

**Filter pushdown planned on the provider** (Spark 4.2.0 to 4.3.0, the releases checked; fixed on master).  When a Python data
source accepts pushed filters, the pushdown worker returns the read it planned with them
(partitions + read function), and the JVM's ``PythonScanBuilder.pushFilters`` stores that read on
``PythonDataSourceV2`` -- the provider of the *relation*, shared by every DataFrame derived from one
``load()`` -- instead of on the scan that pushed the filters.  ``PythonBatch`` then takes whatever
read is stored there when it plans, and a scan that pushes nothing never replaces it.  So after
``df.where("partition = 1").count()`` every later ``df.count()`` reads only partition 1, the two
sides of ``df.where(a).union(df.where(b))`` both read the last side pushed, and two threads swap
each other's reads: silently wrong answers from any source whose plan depends on its filters.
Apache Spark's main branch keeps the read on the builder and hands it to its own ``PythonScan``
(``PythonScanBuilder.readInfo``); no release has that yet.

:func:`read_is_scan_scoped` tells which kind of JVM a session runs, from the class itself (a
field, not a version number: a back-port counts, an unknown layout counts as unsafe).  On an
unsafe JVM the source accepts no filter at all (every filter is returned to Spark and the plan is
the options' alone, identical for every scan of a relation), and ``register`` leaves
``spark.sql.python.filterPushdown.enabled`` as the user set it, so the session's other Python
sources are not exposed either.  A minimal reproduction with a ten-line source is
tests/spark/test_spark_defects.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SCAN_BUILDER_CLASS", "read_is_scan_scoped"]

SCAN_BUILDER_CLASS = "org.apache.spark.sql.execution.datasources.v2.python.PythonScanBuilder"
# The field that holds a pushdown's read on the scan builder once Spark keeps it there.
SCOPED_FIELD = "readInfo"


def read_is_scan_scoped(spark: SparkSession) -> bool:
    """Whether ``spark``'s JVM keeps the read planned by filter pushdown with the scan that pushed
    the filters (True: pushdown may prune) rather than on the shared provider (False, every
    release checked, 4.2.0 to 4.3.0).  False too when the JVM cannot be asked (Spark Connect) or the class
    is not there."""
    jvm = getattr(spark, "_jvm", None) or getattr(getattr(spark, "sparkContext", None), "_jvm", None)
    if jvm is None:
        return False
    try:
        cls = jvm.java.lang.Class.forName(SCAN_BUILDER_CLASS)
        return any(field.getName() == SCOPED_FIELD for field in cls.getDeclaredFields())
    except Exception:  # noqa: BLE001 -- any failure to ask means: not known to be safe
        return False
