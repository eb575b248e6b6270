"""The JVM packages klogs' sessions may load, resolved once at set-up and then used as jar files:
delta-spark (:mod:`kafka_format.spark.delta`, only for a Delta output) and hadoop-aws with the AWS
SDK modules S3A needs (:mod:`kafka_format.spark.s3a`, only for ``s3a://`` locations).

``python -m kafka_format.spark.jars`` (run by ``make setup``) starts one local session per group
with its Maven coordinates (Spark's own resolution, ``spark.jars.packages``, into Ivy's cache
``~/.ivy2.5.2`` unless ``spark.jars.ivy`` says otherwise, outside any checkout), checks that a class
of each package loads, and records the jar files Spark resolved (its ``spark.jars``) in
``~/.cache/kafka-log-analytics/jars/`` under a name derived from the coordinates.  A session that
needs a group then gets those files as ``spark.jars`` (:func:`with_jars`): no Ivy resolution at
every start (about 2 s of CPU and a lock-free read-modify-write of Ivy's cache files, which two
jobs starting at once could break for each other), and nothing loaded that the job does not use.
Where the record is missing or a file in it is gone, the coordinates are passed as
``spark.jars.packages`` as before (Spark resolves them, downloading if it must).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

__all__ = ["GROUPS", "JarGroup", "cache_dir", "group", "main", "resolved", "with_jars"]

PACKAGES, EXCLUDES, JARS = "spark.jars.packages", "spark.jars.excludes", "spark.jars"


@dataclass(frozen=True)
class JarGroup:
    """A set of Maven packages one kind of job needs, with the session settings that go with them."""

    name: str
    packages: tuple[str, ...]
    excludes: tuple[str, ...] = ()
    sql_conf: tuple[tuple[str, str], ...] = ()    # set with the jars (Delta's extension and catalog)
    check_classes: tuple[str, ...] = ()            # loaded once resolved, to prove the jars work

    def key(self) -> str:
        """A file name for this group's record: the coordinates and the Spark version decide it."""
        import pyspark

        text = json.dumps([pyspark.__version__, self.packages, self.excludes])
        return f"{self.name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"


def _delta() -> JarGroup | None:
    from kafka_format.spark.delta import SQL_CONF, delta_package

    package = delta_package()
    if package is None:
        return None
    return JarGroup("delta", (package,), sql_conf=tuple(SQL_CONF.items()), check_classes=("io.delta.tables.DeltaTable",))


def _s3a() -> JarGroup:
    from kafka_format.spark.s3a import EXCLUDES as S3A_EXCLUDES
    from kafka_format.spark.s3a import packages

    return JarGroup("s3a", tuple(packages()), tuple(S3A_EXCLUDES), check_classes=(
        "org.apache.hadoop.fs.s3a.S3AFileSystem", "software.amazon.awssdk.services.s3.S3Client",
        "software.amazon.awssdk.transfer.s3.S3TransferManager"))


GROUPS = ("delta", "s3a")


def group(name: str) -> JarGroup | None:
    """The group ``delta`` (None when the delta-spark Python package is not installed) or ``s3a``."""
    if name == "delta":
        return _delta()
    if name == "s3a":
        return _s3a()
    raise ValueError(f"unknown jar group {name!r}: one of {', '.join(GROUPS)}")


def cache_dir() -> Path:
    """``$KLA_CACHE_DIR/jars`` (default ``~/.cache/kafka-log-analytics/jars``)."""
    root = Path(os.environ.get("KLA_CACHE_DIR", Path.home() / ".cache" / "kafka-log-analytics"))
    return root / "jars"


def resolved(g: JarGroup) -> list[str] | None:
    """The jar files recorded for ``g`` at set-up, when every one of them is still there."""
    try:
        doc = json.loads((cache_dir() / g.key()).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    jars = doc.get("jars") if isinstance(doc, dict) else None
    if not isinstance(jars, list) or not jars or not all(isinstance(j, str) and os.path.isfile(j) for j in jars):
        return None
    return jars


def _merged(existing: str | None, added: Sequence[str]) -> str:
    items = [p.strip() for p in (existing or "").split(",") if p.strip()]
    return ",".join([*items, *(a for a in added if a not in items)])


def with_jars(conf: Mapping[str, str], names: Sequence[str]) -> dict[str, str]:
    """``conf`` plus the groups ``names``: their recorded jar files as ``spark.jars``, or their
    coordinates as ``spark.jars.packages`` when not recorded; each group's SQL settings (a user's own
    ``spark.sql.extensions`` kept, Delta's appended).  A group whose package ``conf`` already names
    (the user's choice) is left as the user put it."""
    out = dict(conf)
    for name in names:
        g = group(name)
        if g is None:
            continue
        given = [p.strip() for p in out.get(PACKAGES, "").split(",") if p.strip()]
        if any(p.rsplit(":", 1)[0] == c.rsplit(":", 1)[0] for p in given for c in g.packages):
            continue
        jars = resolved(g)
        if jars is not None:
            out[JARS] = _merged(out.get(JARS), jars)
        else:
            out[PACKAGES] = _merged(out.get(PACKAGES), list(g.packages))
            if g.excludes:
                out[EXCLUDES] = _merged(out.get(EXCLUDES), list(g.excludes))
        for key, value in g.sql_conf:
            if key == "spark.sql.extensions":
                out[key] = _merged(out.get(key), [value])
            else:
                out.setdefault(key, value)
    return out


def _local_files(spark_jars: str) -> list[str]:
    out = []
    for item in (j.strip() for j in spark_jars.split(",") if j.strip()):
        parsed = urlparse(item)
        out.append(unquote(parsed.path) if parsed.scheme == "file" else item)
    return out


def resolve(g: JarGroup) -> list[str]:
    """Resolve ``g`` with Spark's own package resolution (a local session started and stopped),
    load its check classes, and record the jar files Spark resolved."""
    from pyspark.sql import SparkSession

    from kafka_format.spark.delta import session_jvm

    builder = SparkSession.builder.master("local[1]").appName(f"klogs jars: {g.name}").config("spark.ui.enabled", "false")
    conf = {PACKAGES: ",".join(g.packages), **({EXCLUDES: ",".join(g.excludes)} if g.excludes else {}), **dict(g.sql_conf)}
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    try:
        jars = _local_files(spark.sparkContext.getConf().get(JARS, ""))
        jvm = session_jvm(spark)
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        for name in g.check_classes:
            jvm.java.lang.Class.forName(name, False, loader)
    finally:
        spark.stop()
    missing = [j for j in jars if not os.path.isfile(j)]
    if not jars or missing:
        raise RuntimeError(f"jars of {g.name}: Spark resolved {jars or 'nothing'} (missing: {missing})")
    target = cache_dir() / g.key()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps({"packages": list(g.packages), "excludes": list(g.excludes), "jars": jars}, indent=1),
                   encoding="utf-8")
    os.replace(tmp, target)
    return jars


def main(argv: list[str] | None = None) -> int:
    """Resolve every group that is not recorded yet (``--force``: all of them again) in its own JVM
    (one SparkContext per process: a child process per group)."""
    import subprocess

    args = list(argv or [])
    if args[:1] == ["--group"]:
        g = group(args[1])
        if g is not None:
            jars = resolve(g)
            print(f"jars resolved: {g.name}: {', '.join(g.packages)} ({len(jars)} jar files)")
        return 0
    force = "--force" in args
    for name in GROUPS:
        g = group(name)
        if g is None:
            print(f"jars: {name}: its Python package is not installed; nothing to fetch", file=sys.stderr)
            continue
        if not force and resolved(g) is not None:
            print(f"jars recorded: {g.name}: {', '.join(g.packages)}")
            continue
        rc = subprocess.call([sys.executable, "-m", "kafka_format.spark.jars", "--group", name])
        if rc != 0:
            return rc
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
