"""Fixtures of the conformance tests (``make conformance``): a real Kafka broker per version, the
standard workload on it, and the recorder that writes ``CONFORMANCE.md``.

Fixtures (all session-scoped; pytest groups tests by version so one broker JVM runs at a time):

* ``kafka_version`` -- each release of ``kafka_dist.versions()``; skips with one reason when Java or
  Maven is missing, fails when Maven cannot resolve the release.
* ``kafka_broker`` -- a started :class:`broker.KafkaBroker` of that version, shared by every
  comparison (add topics with unique names; restart/kill are allowed, the broker comes back).
* ``standard_workload`` -- :func:`workloads.standard` run once on ``kafka_broker``.
* ``broker_factory`` -- ``make(name, broker_config=None)`` for a dedicated broker of
  ``kafka_version`` (started; stopped at the end of the version's tests).
* ``conformance`` -- the :class:`Recorder`.
* ``tiered_version`` -- each release of ``kafka_dist.tiered_versions()`` (4.3.1: the one whose
  tiered-storage test jars Maven Central serves); skips with the reason when Java, Maven or those
  jars cannot be had, or when ``$KLA_KAFKA_VERSIONS`` names no tiered release.
* ``tiered_capture`` -- :func:`tiered.run` once on a tiered broker of that version (stopped
  when it returns): the copies and ``capture.json`` it leaves, loaded (:class:`tiered.Capture`).

Recorder use::

    def test_x(conformance, kafka_version):
        conformance.compare("offsets", kafka_version, "w-codecs-0 earliest", ours, kafka)
        ...
        conformance.assert_equal("offsets", kafka_version)   # fails listing every difference
        conformance.fixed("offsets", "what differed, the fix, the Kafka file deciding it")
        conformance.note("offsets", "how this comparison runs, when it differs from the others")
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kafka_dist
import pytest
from broker import KafkaBroker

REPO = Path(__file__).resolve().parents[2]
REPORT = Path(os.environ.get("KLA_CONFORMANCE_REPORT", REPO / "CONFORMANCE.md"))


# ------------------------------------------------------------------------------------ recorder

@dataclass
class Case:
    """One compared case: equal, or different with both answers."""

    comparison: str
    version: str
    case: str
    equal: bool
    detail: str = ""


@dataclass
class Recorder:
    """Collects the cases of every comparison; written to CONFORMANCE.md at the end of the run."""

    cases: list[Case] = field(default_factory=list)
    fixed_notes: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)

    def note(self, comparison: str, text: str) -> None:
        """Say how a comparison runs (a broker unlike the others, what it leaves out); listed in
        the report's notes, once per text."""
        if (comparison, text) not in self.notes:
            self.notes.append((comparison, text))

    def fixed(self, comparison: str, text: str) -> None:
        """Note a difference this comparison found earlier and the product now fixes (with the
        Kafka source that decides it); listed in the report, once per text."""
        if (comparison, text) not in self.fixed_notes:
            self.fixed_notes.append((comparison, text))

    def record(self, comparison: str, version: str, case: str, equal: bool, detail: str = "") -> bool:
        """Record one case's outcome; returns ``equal``."""
        self.cases.append(Case(comparison, version, case, bool(equal), detail))
        return bool(equal)

    def compare(self, comparison: str, version: str, case: str, ours: Any, kafka: Any) -> bool:
        """Record whether ``ours == kafka`` (the detail shows both when they differ)."""
        equal = ours == kafka
        detail = "" if equal else f"ours={_short(ours)} kafka={_short(kafka)}"
        return self.record(comparison, version, case, equal, detail)

    def differences(self, comparison: str, version: str) -> list[Case]:
        return [c for c in self.cases if c.comparison == comparison and c.version == version
                and not c.equal]

    def assert_equal(self, comparison: str, version: str, at_least: int = 1) -> None:
        """Fail listing every different case of ``comparison`` on ``version``; also fail when
        fewer than ``at_least`` cases were compared (a comparison that compared nothing)."""
        n = sum(1 for c in self.cases if c.comparison == comparison and c.version == version)
        assert n >= at_least, f"{comparison} on Kafka {version}: only {n} case(s) compared"
        diffs = self.differences(comparison, version)
        assert not diffs, (f"{comparison} on Kafka {version}: {len(diffs)} of {n} cases differ:\n"
                           + "\n".join(f"  {c.case}: {c.detail}" for c in diffs[:40]))

    def markdown(self) -> str:
        """The report: a summary table per comparison and version, then every difference."""
        lines = ["# Conformance against Apache Kafka", "",
                 "Written by `make conformance`: each comparison runs our product and a real Kafka "
                 "broker on the same work; Kafka is the oracle.", "",
                 "| comparison | Kafka version | cases | equal | different |",
                 "|---|---|---:|---:|---:|"]
        keys: list[tuple[str, str]] = []
        for c in self.cases:
            if (c.comparison, c.version) not in keys:
                keys.append((c.comparison, c.version))
        for comp, ver in sorted(keys):
            cs = [c for c in self.cases if c.comparison == comp and c.version == ver]
            eq = sum(c.equal for c in cs)
            lines.append(f"| {comp} | {ver} | {len(cs)} | {eq} | {len(cs) - eq} |")
        diffs = [c for c in self.cases if not c.equal]
        lines += ["", "## Differences", ""]
        if not diffs:
            lines.append("None.")
        for c in diffs:
            lines.append(f"- **{c.comparison}** (Kafka {c.version}) `{c.case}`: {c.detail}")
        if self.notes:
            lines += ["", "## Notes", ""]
            lines += [f"- **{comp}**: {text}" for comp, text in self.notes]
        if self.fixed_notes:
            lines += ["", "## Differences found earlier and fixed in the product", ""]
            lines += [f"- **{comp}**: {text}" for comp, text in self.fixed_notes]
        return "\n".join(lines) + "\n"


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


_RECORDER = Recorder()


@pytest.fixture(scope="session")
def conformance() -> Recorder:
    """The run's :class:`Recorder` (CONFORMANCE.md is written from it at session end)."""
    return _RECORDER


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _RECORDER.cases:
        REPORT.write_text(_RECORDER.markdown())


# ------------------------------------------------------------------------------------ brokers

_MISSING_TOOL = ("java not found", "mvn not found")


@pytest.fixture(scope="session", params=kafka_dist.versions())
def kafka_version(request: pytest.FixtureRequest) -> str:
    """A Kafka release to compare against (its jars resolved); skips only without Java/Maven."""
    version: str = request.param
    if kafka_dist.classpath(version) is None:
        reason = kafka_dist.unavailable_reason(version)
        if reason.startswith(_MISSING_TOOL):
            pytest.skip(f"conformance needs Java 17 and Maven: {reason}")
        pytest.fail(f"Kafka {version} unavailable: {reason}")
    return version


@pytest.fixture(scope="session")
def broker_factory(kafka_version: str, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[Callable[..., KafkaBroker]]:
    """``make(name, broker_config=None)``: a started dedicated broker of ``kafka_version``."""
    started: list[KafkaBroker] = []

    def make(name: str, broker_config: Mapping[str, str] | None = None) -> KafkaBroker:
        workdir = tmp_path_factory.mktemp(f"kafka-{kafka_version}-{name}")
        b = KafkaBroker(kafka_version, workdir, broker_config)
        started.append(b)
        return b.start()

    try:
        yield make
    finally:
        for b in started:
            b.stop()


@pytest.fixture(scope="session", params=kafka_dist.tiered_versions() or [None])
def tiered_version(request: pytest.FixtureRequest) -> str:
    """A release to run a tiered-storage broker on (its tiered classpath resolved), else a skip."""
    version: str | None = request.param
    if version is None:
        pytest.skip(f"KLA_KAFKA_VERSIONS={os.environ.get('KLA_KAFKA_VERSIONS')} names no release with "
                    f"tiered storage's test jars ({', '.join(kafka_dist.TIERED_KAFKA_VERSIONS)})")
    if kafka_dist.classpath(version, tiered=True) is None:
        pytest.skip(f"no tiered-storage broker: {kafka_dist.unavailable_reason(version, tiered=True)}")
    return version


@pytest.fixture(scope="session")
def tiered_capture(tiered_version: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """:func:`tiered.run` on a tiered broker of ``tiered_version``, once per session."""
    import tiered

    work = tmp_path_factory.mktemp(f"tiered-{tiered_version}")
    broker = KafkaBroker.tiered(tiered_version, work / "broker")
    try:
        broker.start()
        return tiered.run(broker, work)
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_broker(broker_factory: Callable[..., KafkaBroker]) -> KafkaBroker:
    """The shared broker of ``kafka_version`` (short retention check so retention can be observed)."""
    return broker_factory("shared", {"log.retention.check.interval.ms": "1000"})


@pytest.fixture(scope="session")
def standard_workload(kafka_broker: KafkaBroker) -> Iterator[Any]:
    """:func:`workloads.standard` run once on the shared broker."""
    import workloads

    wl = workloads.standard(kafka_broker)
    try:
        yield wl
    finally:
        wl.close()
