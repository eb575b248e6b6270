"""Apache Kafka's jars for the conformance tests, resolved by Maven from ``pom.xml`` beside this file.

The jars live in Maven's local repository (``~/.m2/repository``, or ``$KLA_MAVEN_REPO``), never in
this repo; the resolved classpath of each version is cached under ``$KLA_CACHE_DIR`` (default
``~/.cache/kafka-log-analytics``) so later runs start no Maven at all.

``KAFKA_VERSIONS`` lists the releases compared, newest first; ``$KLA_KAFKA_VERSIONS`` (comma list)
narrows it.  :func:`classpath` returns ``None`` with the reason in :func:`unavailable_reason` when
Java or Maven is missing, or when Maven cannot resolve the release.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["KAFKA_VERSIONS", "cache_dir", "classpath", "java", "unavailable_reason", "versions"]

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
KAFKA_VERSIONS = ("4.4.0", "3.9.1")

_reasons: dict[str, str] = {}


def versions() -> list[str]:
    """The Kafka releases to compare against (``$KLA_KAFKA_VERSIONS`` narrows the default)."""
    wanted = os.environ.get("KLA_KAFKA_VERSIONS")
    if not wanted:
        return list(KAFKA_VERSIONS)
    return [v.strip() for v in wanted.split(",") if v.strip()]


def cache_dir() -> Path:
    """Where classpaths (and other conformance scratch that outlives a run) are cached."""
    root = Path(os.environ.get("KLA_CACHE_DIR", Path.home() / ".cache" / "kafka-log-analytics"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def java() -> str | None:
    """The ``java`` executable (``$JAVA_HOME/bin/java`` first), or None."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def unavailable_reason(version: str) -> str:
    """Why :func:`classpath` gave None for ``version`` (empty when it did not)."""
    return _reasons.get(version, "")


def classpath(version: str) -> str | None:
    """The runtime classpath of Kafka ``version`` (broker, storage tool, DumpLogSegments), fetching the
    jars with Maven on first use; None when Java or Maven is missing or the release cannot be had."""
    if java() is None:
        _reasons[version] = "java not found (JAVA_HOME unset and no java on PATH)"
        return None
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]  # a changed pom resolves again
    cached = cache_dir() / f"kafka-{version}-{digest}.classpath"
    if cached.exists():
        text = cached.read_text().strip()
        if text and all(Path(p).exists() for p in text.split(os.pathsep)):
            return text
    mvn = shutil.which("mvn")
    if mvn is None:
        _reasons[version] = "mvn not found on PATH (Maven fetches Kafka's jars)"
        return None
    out = cached.with_suffix(".tmp")
    cmd = [mvn, "-q", "-B", "-f", str(POM), f"-Dkafka.version={version}",
           "dependency:build-classpath", f"-Dmdep.outputFile={out}"]
    repo = os.environ.get("KLA_MAVEN_REPO")
    if repo:
        cmd.insert(1, f"-Dmaven.repo.local={repo}")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 or not out.exists():
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        _reasons[version] = f"Maven could not resolve Kafka {version}: {' | '.join(tail)}"
        return None
    os.replace(out, cached)
    return cached.read_text().strip()
