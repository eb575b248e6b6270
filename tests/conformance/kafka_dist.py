"""Apache Kafka's jars for the conformance tests, resolved by Maven from ``pom.xml`` beside this file.

The jars live in Maven's local repository (``~/.m2/repository``, or ``$KLA_MAVEN_REPO``), never in
this repo; the resolved classpath of each version is cached under ``$KLA_CACHE_DIR`` (default
``~/.cache/kafka-log-analytics``) so later runs start no Maven at all.

``KAFKA_VERSIONS`` lists the releases compared, newest first; ``$KLA_KAFKA_VERSIONS`` (comma list)
narrows it.  :func:`classpath` returns ``None`` with the reason in :func:`unavailable_reason` when
Java or Maven is missing, or when Maven cannot resolve the release.

Tiered storage (KIP-405): ``classpath(version, tiered=True)`` adds the jars of the pom's ``tiered``
profile (Kafka's reference remote storage manager ``LocalTieredStorage``, which ships only in
kafka-storage's test jar, and kafka-clients' test jar it refers to), cached apart from the plain
classpath.  Maven Central serves those test jars for 4.3.1 but not for 4.4.0, so
``TIERED_KAFKA_VERSIONS`` is 4.3.1; :func:`tiered_versions` is the tiered releases to run
(``$KLA_KAFKA_VERSIONS``, when set, narrows them too: a list without 4.3.1 runs no tiered broker).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

__all__ = ["KAFKA_VERSIONS", "TIERED_KAFKA_VERSIONS", "cache_dir", "classpath", "jar_definitions", "java",
           "tags_as_text", "tiered_versions", "unavailable_reason", "versions"]

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
KAFKA_VERSIONS = ("4.4.0", "3.9.1")
#: releases whose tiered-storage test jars Maven Central serves (see the module doc)
TIERED_KAFKA_VERSIONS = ("4.3.1",)

_reasons: dict[str, str] = {}


def versions() -> list[str]:
    """The Kafka releases to compare against (``$KLA_KAFKA_VERSIONS`` narrows the default)."""
    wanted = os.environ.get("KLA_KAFKA_VERSIONS")
    if not wanted:
        return list(KAFKA_VERSIONS)
    return [v.strip() for v in wanted.split(",") if v.strip()]


def tiered_versions() -> list[str]:
    """The releases a tiered-storage broker runs on: ``TIERED_KAFKA_VERSIONS``, narrowed by
    ``$KLA_KAFKA_VERSIONS`` when it is set."""
    if not os.environ.get("KLA_KAFKA_VERSIONS"):
        return list(TIERED_KAFKA_VERSIONS)
    return [v for v in versions() if v in TIERED_KAFKA_VERSIONS]


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


#: the pom's profiles a classpath may add, each switched on by ``-Dkafka.<name>=true``
PROFILES = {"tiered": "tiered storage's test jars", "streams": "Kafka Streams"}


def _key(version: str, profile: str | None) -> str:
    return f"{version}-{profile}" if profile else version


def unavailable_reason(version: str, tiered: bool = False, profile: str | None = None) -> str:
    """Why :func:`classpath` gave None for ``version`` (empty when it did not)."""
    return _reasons.get(_key(version, "tiered" if tiered else profile), "")


def classpath(version: str, tiered: bool = False, profile: str | None = None) -> str | None:
    """The runtime classpath of Kafka ``version`` (broker, storage tool, DumpLogSegments), fetching the
    jars with Maven on first use; None when Java or Maven is missing or the release cannot be had.
    ``tiered``: with the pom's ``tiered`` profile (LocalTieredStorage and the test jars it needs);
    ``profile``: with another of :data:`PROFILES` (``streams``: Kafka Streams, for a driver)."""
    profile = "tiered" if tiered else profile
    key = _key(version, profile)
    if java() is None:
        _reasons[key] = "java not found (JAVA_HOME unset and no java on PATH)"
        return None
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]  # a changed pom resolves again
    cached = cache_dir() / f"kafka-{key}-{digest}.classpath"
    if cached.exists():
        text = cached.read_text().strip()
        if text and all(Path(p).exists() for p in text.split(os.pathsep)):
            return text
    mvn = shutil.which("mvn")
    if mvn is None:
        _reasons[key] = "mvn not found on PATH (Maven fetches Kafka's jars)"
        return None
    out = cached.with_suffix(".tmp")
    cmd = [mvn, "-q", "-B", "-f", str(POM), f"-Dkafka.version={version}",
           "dependency:build-classpath", f"-Dmdep.outputFile={out}"]
    if profile:
        cmd.insert(-2, f"-Dkafka.{profile}=true")
    repo = os.environ.get("KLA_MAVEN_REPO")
    if repo:
        cmd.insert(1, f"-Dmaven.repo.local={repo}")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 or not out.exists():
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        what = f"Kafka {version} with {PROFILES[profile]}" if profile else f"Kafka {version}"
        _reasons[key] = f"Maven could not resolve {what}: {' | '.join(tail)}"
        return None
    os.replace(out, cached)
    return cached.read_text().strip()


def jar_definitions(version: str, artifact: str, folder: str) -> dict[str, Any]:
    """The message definitions inside ``<artifact>-<version>.jar`` of the release's classpath under
    ``folder`` (e.g. ``common/message/``), by name, trimmed as the package's ``_generate.py`` trims."""
    from kafka_format.internal.schemas._generate import _trim

    cp = classpath(version)
    assert cp is not None, unavailable_reason(version)
    jar = next(p for p in cp.split(os.pathsep) if Path(p).name == f"{artifact}-{version}.jar")
    theirs: dict[str, Any] = {}
    with zipfile.ZipFile(jar) as z:
        for entry in z.namelist():
            if entry.startswith(folder) and entry.endswith(".json"):
                text = "\n".join(line for line in z.read(entry).decode("utf-8").splitlines()
                                 if not line.lstrip().startswith("//"))
                doc: dict[str, Any] = _trim(json.loads(text))
                theirs[doc["name"]] = doc
    return theirs


def tags_as_text(o: Any) -> Any:
    """``o`` with every ``tag`` as text: some definitions quote tags (``"tag": "2"``), some do not."""
    if isinstance(o, dict):
        return {k: str(v) if k == "tag" else tags_as_text(v) for k, v in o.items()}
    return [tags_as_text(x) for x in o] if isinstance(o, list) else o
