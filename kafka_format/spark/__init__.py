"""The Spark side of kafka-log-analytics: the ``kafka-log`` data source and the session builder.

``register(spark)`` makes ``spark.read.format("kafka-log")`` available in a session built
elsewhere; :func:`kafka_format.spark.session.build_session` does it automatically.

A thin adapter: the rules live below it (:mod:`kafka_format.read`, :mod:`kafka_format.engine`,
:mod:`kafka_format.log`); this folder turns them into data sources, DataFrames and executor tasks.
May import: every layer below it; never :mod:`kafka_format.jobs` or :mod:`kafka_format.cli`.
The only folder (with :mod:`kafka_format.jobs`) that imports pyspark.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_format.common.redaction import URI_CREDENTIALS_REGEX

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafka_format.spark.datasource import KafkaLogDataSource

__all__ = ["ALWAYS", "FORMAT", "PUSHDOWN_CONF", "register", "register_derived"]

FORMAT = "kafka-log"
# Set on every session the product builds or registers with: Spark's own plan/UI texts redact URI
# credentials as klogs' outputs do.
ALWAYS = {"spark.sql.redaction.string.regex": URI_CREDENTIALS_REGEX}
# Set by ``register`` only where the session's Spark keeps a pushdown's read with its scan
# (:mod:`kafka_format.spark.compat`): elsewhere pushdown would let one query change another's rows.
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession) -> None:
    """Register the ``kafka-log`` Python data source with ``spark`` (idempotent).

    The source's splits are sized as Spark's file sources size theirs, from the session's
    ``defaultParallelism`` and ``spark.sql.files.openCostInBytes`` read here (the planner runs in
    a worker with no session to ask): a single large partition still spreads over every core.

    Sets :data:`ALWAYS` on the session, and ``spark.sql.python.filterPushdown.enabled=true`` only
    where the session's Spark keeps the read that pushed filters planned with that scan
    (:func:`kafka_format.spark.compat.read_is_scan_scoped`; no release from 4.2.0 to 4.3.0 does: there
    the source prunes by its options only and every filter is left to Spark).  The interpreter Spark's Python workers would run is checked first
    (:func:`kafka_format.spark.workers.source_python`): in local mode one that cannot import the
    source's packages is replaced, for this source only, by the driver's (one warning line);
    on a cluster :class:`~kafka_format.spark.workers.WorkerPythonError` names it and the fix.
    The session's S3A settings (``fs.s3a.*``) go with the source to its workers, so ``s3a://``
    log dirs open as Hadoop's S3A would open them (:func:`kafka_format.spark.s3a.share_settings`)."""
    register_derived(spark, None)


def register_derived(spark: SparkSession,
                     derive: Callable[[type[KafkaLogDataSource]], type[KafkaLogDataSource]] | None) -> str:
    """:func:`register` with the session-sized source class passed through ``derive`` first (a
    subclass with its own ``name()``, e.g. the typed source of an export); returns the name."""
    from kafka_format.read.planning import DEFAULT_OPEN_COST_BYTES
    from kafka_format.spark.compat import read_is_scan_scoped
    from kafka_format.spark.datasource import bind_session_sizing
    from kafka_format.spark.s3a import share_settings
    from kafka_format.spark.workers import source_python

    sc = spark.sparkContext
    parallelism = sc.defaultParallelism
    try:
        open_cost = _bytes(spark.conf.get("spark.sql.files.openCostInBytes", str(DEFAULT_OPEN_COST_BYTES)))
    except ValueError:
        open_cost = DEFAULT_OPEN_COST_BYTES

    for key, value in ALWAYS.items():
        spark.conf.set(key, value)
    pushdown = read_is_scan_scoped(spark)
    if pushdown:
        spark.conf.set(PUSHDOWN_CONF, "true")
    share_settings(spark)           # before the source is wrapped: its workers get SparkContext.environment
    python = source_python(spark)
    saved = sc.pythonExec
    if python is not None:          # the registered source carries the interpreter its workers start
        sc.pythonExec = python
    cls = bind_session_sizing(parallelism, open_cost, pushdown=pushdown)
    if derive is not None:
        cls = derive(cls)
    try:
        spark.dataSource.register(cls)
    finally:
        sc.pythonExec = saved
    return cls.name()


from kafka_format.spark.workers import quiet_closed_sockets  # noqa: E402  (a worker's import of the package)

quiet_closed_sockets()      # a no-op except in a Python worker of pyspark's daemon


def _bytes(text: str | None) -> int:
    """Spark's byte-size conf text (``4194304``, ``4m``, ``4MB``) in bytes."""
    raw = (text or "").strip().lower().removesuffix("b")
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    if raw and raw[-1] in units:
        return int(float(raw[:-1]) * units[raw[-1]])
    return int(raw)
