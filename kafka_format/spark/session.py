"""SparkSession builder for the profiles in ``spark_conf/`` (local, test, cluster).

Only module besides the data source that imports pyspark at module level.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from kafka_format.spark.delta import with_delta

__all__ = ["build_session", "read_profile", "conf_dir", "ALWAYS"]

# Settings the product relies on, applied over any profile.
ALWAYS = {"spark.sql.python.filterPushdown.enabled": "true"}


def conf_dir() -> Path:
    """Directory of profile files: ``$KLOGS_SPARK_CONF_DIR`` or ``spark_conf/`` of the checkout."""
    env = os.environ.get("KLOGS_SPARK_CONF_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "spark_conf"


def read_profile(profile: str) -> dict[str, str]:
    """Settings of ``spark_conf/<profile>.conf`` (spark-defaults format); {} if the file is absent
    (an installed wheel has no ``spark_conf/``: Spark's own defaults then apply)."""
    path = conf_dir() / f"{profile}.conf"
    if not path.is_file():
        if profile not in ("local", "test", "cluster"):
            raise ValueError(f"unknown Spark profile {profile!r}: no {path}")
        return {}
    conf: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        conf[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return conf


def build_session(master: str | None = None, profile: str = "local", app_name: str = "klogs",
                  extra_conf: Mapping[str, str] | None = None) -> SparkSession:
    """Get or create a SparkSession from a profile, with the ``kafka-log`` source registered.

    Precedence (lowest first): ``spark_conf/<profile>.conf``, ``extra_conf``, ``master``.
    Workers use this interpreter unless ``PYSPARK_PYTHON`` is already set.  When this call starts
    the JVM, delta-spark's package is added (:func:`kafka_format.spark.delta.with_delta`) so
    ``--format delta`` writes through Spark's Delta writer.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    conf = read_profile(profile)
    conf.update(extra_conf or {})
    conf.update(ALWAYS)
    if master is not None:
        conf["spark.master"] = master
    if not _jvm_running():
        conf = with_delta(conf)
    builder = SparkSession.builder.appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    for key, value in ALWAYS.items():           # runtime SQL conf also on a pre-existing session
        spark.conf.set(key, value)
    from kafka_format.spark import register

    register(spark)
    return spark


def _jvm_running() -> bool:
    """Whether a JVM is already up (a live SparkContext, or spark-submit launched this process):
    its classpath is fixed, so packages set now would not apply."""
    return SparkContext._active_spark_context is not None or bool(os.environ.get("PYSPARK_GATEWAY_PORT"))
