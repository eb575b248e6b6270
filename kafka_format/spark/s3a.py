"""``s3a://`` in Spark: hadoop-aws at the version of Spark's own Hadoop, the few AWS SDK v2 modules
it needs instead of the SDK's ``bundle``, and the session settings that let the JVM and klogs'
Python side reach the same store.

Jars
    hadoop-aws must match the Hadoop Spark was built with (``hadoop-client-api-<version>.jar`` in
    pyspark's ``jars/``).  It depends on ``software.amazon.awssdk:bundle`` (every AWS service, about
    690 MB for 2.35.4); S3A needs only the S3 client, its transfer manager and what they pull in, about 12 MB
    (:data:`SDK_MODULES`), so the bundle and what Spark already has (Netty, Apache HttpClient,
    SLF4J, commons-logging/codec) are excluded (:data:`EXCLUDES`).  ``make setup`` resolves
    them once with Spark's own package resolution (Ivy's cache, outside any checkout), and the
    sessions that open ``s3a://`` locations load the resolved files (:mod:`kafka_format.spark.jars`).

Settings
    The JVM reads Hadoop's ``fs.s3a.*`` (``spark.hadoop.fs.s3a.*``); :func:`share_settings` hands
    the ones :mod:`kafka_format.storage.s3a` uses to this process and to the Python workers Spark starts
    afterwards (``$KLOGS_S3A_CONF`` through ``SparkContext.environment``).  :func:`prepare` moves
    the credentials of a ``s3a://KEY:SECRET@bucket`` URI into that bucket's own settings (Hadoop
    no longer reads them from URIs; Spark redacts ``*.secret.key`` wherever it shows settings) and
    adds AWS profiles to S3A's default credential chain.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_format.storage import s3a

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "EXCLUDES",
    "HADOOP_AWS_SDK",
    "SDK_MODULES",
    "hadoop_version",
    "packages",
    "prepare",
    "share_settings",
    "spark_path",
]

# hadoop-aws version -> the AWS SDK v2 version its pom names (hadoop-project's aws-java-sdk-v2.version);
# tests/spark/test_s3a_jars.py checks it against the resolved pom.
HADOOP_AWS_SDK = {"3.4.1": "2.24.6", "3.4.2": "2.29.52", "3.4.3": "2.35.4", "3.5.0": "2.35.4"}
# What S3A loads: the S3 client and the transfer manager (their own dependencies come with them).
SDK_MODULES = ("s3", "s3-transfer-manager")
# Left out of the resolution: the SDK's bundle (S3A needs none of it beyond SDK_MODULES) and what
# Spark's jars/ already hold, newer (duplicates would shadow Spark's own classes).
EXCLUDES = ("software.amazon.awssdk:bundle", "io.netty:*", "org.apache.httpcomponents:*", "org.slf4j:*",
            "commons-logging:*", "commons-codec:*", "org.wildfly.openssl:*", "software.amazon.eventstream:*",
            "software.amazon.awssdk:http-auth-aws-eventstream")
_PROVIDERS = "fs.s3a.aws.credentials.provider"
# The SDK's own (Hadoop's ProfileAWSCredentialsProvider fails the whole chain where no profile file
# exists; this one fails only its own turn, and the chain goes on).
_PROFILE_PROVIDER = "software.amazon.awssdk.auth.credentials.ProfileCredentialsProvider"
_INSTANCE_PROVIDER = "org.apache.hadoop.fs.s3a.auth.IAMInstanceCredentialsProvider"
_HADOOP_JAR = re.compile(r"^hadoop-client-api-(\d+\.\d+\.\d+)\.jar$")


def hadoop_version() -> str:
    """The Hadoop version of the installed pyspark (its ``jars/hadoop-client-api-*.jar``)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    for jar in sorted(jars.glob("hadoop-client-api-*.jar")):
        m = _HADOOP_JAR.match(jar.name)
        if m:
            return m.group(1)
    raise RuntimeError(f"no hadoop-client-api jar in {jars}: cannot tell which hadoop-aws matches this Spark")


def packages(version: str | None = None) -> list[str]:
    """Maven coordinates for ``s3a://``: hadoop-aws at ``version`` (default: Spark's Hadoop) and
    the AWS SDK modules S3A loads, at the SDK version that hadoop-aws names."""
    version = version or hadoop_version()
    sdk = HADOOP_AWS_SDK.get(version)
    if sdk is None:
        raise RuntimeError(f"hadoop-aws {version}: its AWS SDK version is not known to klogs "
                           f"(kafka_format/spark/s3a.py HADOOP_AWS_SDK: add it from hadoop-project's pom)")
    return [f"org.apache.hadoop:hadoop-aws:{version}", *(f"software.amazon.awssdk:{m}:{sdk}" for m in SDK_MODULES)]


def _hadoop_conf(spark: SparkSession) -> Any:
    return spark.sparkContext._jsc.hadoopConfiguration()


def _settings(conf: Any) -> dict[str, str]:
    """The ``fs.s3a.*`` settings :mod:`kafka_format.storage.s3a` uses, global and per bucket."""
    props = conf.getPropsWithPrefix("fs.s3a.")
    out = {}
    for suffix in props.keySet().toArray():
        suffix = str(suffix)
        name = suffix
        if suffix.startswith("bucket."):
            name = next((n for n in s3a.SETTINGS if suffix.endswith("." + n)), "")
        if name in s3a.SETTINGS:
            value = props.get(suffix)
            if value is not None:
                out["fs.s3a." + suffix] = str(value)
    return out


def share_settings(spark: SparkSession) -> None:
    """Hand the session's S3A settings to this process and to the Python workers of functions
    defined from now on (``SparkContext.environment``; :func:`kafka_format.spark.register` calls
    this before it registers the source)."""
    settings = _settings(_hadoop_conf(spark))
    s3a.use_settings(settings)
    text = json.dumps(settings, sort_keys=True)
    spark.sparkContext.environment[s3a.CONF_ENV] = text
    os.environ[s3a.CONF_ENV] = text


def prepare(spark: SparkSession, locations: Iterable[str | None]) -> None:
    """Before a job opens ``locations`` on ``spark``: the credentials of every ``s3a://KEY:SECRET@``
    among them set as their bucket's S3A settings, AWS profiles added to S3A's default credential
    chain; then the settings shared with klogs' Python side and the Python workers of the jobs'
    tasks and the source (:func:`share_settings`)."""
    conf = _hadoop_conf(spark)
    for location in locations:
        if location is None or not s3a.is_s3a(location):
            continue
        for key, value in s3a.for_hadoop(location)[1].items():
            conf.set(key, value)
    sources = conf.getPropertySources(_PROVIDERS)
    current = conf.get(_PROVIDERS) or ""
    if sources is not None and list(sources) == ["core-default.xml"] and _PROFILE_PROVIDER not in current:
        providers = [p.strip() for p in current.split(",") if p.strip()]
        at = providers.index(_INSTANCE_PROVIDER) if _INSTANCE_PROVIDER in providers else len(providers)
        providers.insert(at, _PROFILE_PROVIDER)      # ~/.aws profiles before the instance metadata
        conf.set(_PROVIDERS, ",".join(providers))
    share_settings(spark)


def spark_path(location: str) -> str:
    """``location`` as handed to Spark's JVM: an ``s3a://`` URI without its credentials (they are
    in the bucket's settings after :func:`prepare`); anything else unchanged."""
    return s3a.store_uri(location)
