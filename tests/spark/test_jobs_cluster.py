"""The jobs give the same answers on a real cluster as on local[2] (DESIGN §5 "Scale").

Every job of DESIGN §4 runs over data_samples/ in this process (the run's local[2] session) and in
a driver subprocess against a standalone cluster started from the pyspark installation (executors
in their own JVM with their own Python workers); what they write is compared row for row and, for
the compacted segments, byte for byte.  On the cluster ``export --format delta`` runs too, batch and
incremental: the tables, written by Spark's Delta writer on the executors and read back with
delta-rs from their own log, hold the rows of the local run's export.  ``-m cluster`` adds
local-cluster[2,1,1024].
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from clusters import StandaloneCluster, jobs_digest, run_jobs, run_jobs_driver  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
LOGDIRS = [str(SAMPLES / "broker-1"), str(SAMPLES / "broker-2")]
CONFIG_FILE = str(SAMPLES / "topic-configs.json")


@pytest.fixture(scope="module")
def local_digest(spark, tmp_path_factory: pytest.TempPathFactory) -> dict:  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("jobs-local")
    codes = run_jobs(LOGDIRS, out, CONFIG_FILE)
    assert codes == dict.fromkeys(codes, 0)
    return jobs_digest(out)


def _check(got: dict, local: dict) -> None:
    assert got["codes"] == dict.fromkeys(got["codes"], 0)
    assert got["executors"] >= 1
    for part, rows in local.items():
        assert got["digest"][part] == rows, part
    # the comparison is not vacuous: every job wrote something
    assert all(local[k] for k in ("offsets", "retention", "compaction_records", "compaction_segments",
                                  "audit", "export"))
    # the Delta tables (run on the cluster only; the local Delta writer: tests/jobs/test_export_job.py):
    # every commit made by Spark's Delta writer (its engineInfo, not delta-rs'), the files in the
    # export's partition directories, the rows those of the local run's export; the incremental
    # export's micro-batch committed with its app transaction version
    batch, incremental = got["digest"]["delta"], got["digest"]["delta_incremental"]
    for table in (batch, incremental):
        assert all(info.startswith("Apache-Spark/") and "Delta-Lake/" in info for info, _, _ in table["commits"])
        assert table["layout"] and all(re.fullmatch(r"topic=[^/]+/partition=\d+", d) for d in table["layout"])
        assert sorted(_without_log_dir(r) for r in table["rows"]) == local["export"]
    assert [(op, txn) for _, op, txn in batch["commits"]] == [("WRITE", [])]
    assert [txn for _, _, txn in incremental["commits"]] == [[0]]


def _without_log_dir(row: str) -> str:
    return json.dumps({k: v for k, v in json.loads(row).items() if k != "logDir"}, sort_keys=True)


def test_jobs_on_a_standalone_cluster_equal_local(standalone: StandaloneCluster, local_digest: dict,
                                                   tmp_path: Path) -> None:
    _check(run_jobs_driver(standalone.url or "", LOGDIRS, tmp_path / "out", CONFIG_FILE), local_digest)


@pytest.mark.cluster
def test_jobs_on_local_cluster_equal_local(local_digest: dict, tmp_path: Path) -> None:
    _check(run_jobs_driver("local-cluster[2,1,1024]", LOGDIRS, tmp_path / "out", CONFIG_FILE), local_digest)
