"""Fixtures of the Spark tests: one standalone cluster per run (started only when a test asks)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from clusters import StandaloneCluster


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A standalone master + worker started from the pyspark installation, stopped at the end."""
    cluster = StandaloneCluster(tmp_path_factory.mktemp("standalone"))
    try:
        yield cluster.start()
    finally:
        cluster.stop()
