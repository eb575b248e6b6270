"""``s3a://`` without Spark: how a location and Hadoop's ``fs.s3a.*`` settings become the store
pyarrow opens (:mod:`kafka_format.storage.s3a`), and klogs' outputs on a store (:mod:`kafka_format.output.store`):
the ownership rules, the publish, and a publish killed half-way.

The store is the run's moto server (tests/s3store.py), which refuses any request not signed with
its one key: reaching it proves the settings carried the credentials.  Oracle for the published
objects: boto3's listing and bytes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from s3store import KEY, SECRET, SECRET_IN_URI

from kafka_format.output.ownership import OutputRefused, Owner
from kafka_format.storage import s3a

BUCKET = "store-outputs"
OWNER = Owner("retention", "report")
OTHER = Owner("audit", "report")


def options(uri: str, settings: dict[str, str] | None = None) -> dict[str, object]:
    """The options pyarrow's S3FileSystem was built with for ``uri`` under ``settings``."""
    s3a.use_settings(settings or {})
    try:
        fs, _ = s3a.filesystem(uri)
    finally:
        s3a.use_settings(None)
    return fs.__reduce__()[1][0]


# --- settings -> pyarrow ---------------------------------------------------------------------------
CASES = {
    "endpoint URL, path style": ({"fs.s3a.endpoint": "http://minio:9000", "fs.s3a.path.style.access": "true"},
                                 {"scheme": "http", "endpoint_override": "minio:9000", "force_virtual_addressing": False}),
    "host only, TLS off": ({"fs.s3a.endpoint": "minio:9000", "fs.s3a.connection.ssl.enabled": "false"},
                           {"scheme": "http", "endpoint_override": "minio:9000", "force_virtual_addressing": True}),
    "AWS regional endpoint": ({"fs.s3a.endpoint": "s3.eu-west-1.amazonaws.com"},
                              {"scheme": "https", "region": "eu-west-1", "force_virtual_addressing": True}),
    "explicit region wins": ({"fs.s3a.endpoint": "s3.eu-west-1.amazonaws.com", "fs.s3a.endpoint.region": "us-east-2"},
                             {"region": "us-east-2"}),
    "keys from the settings": ({"fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK", "fs.s3a.session.token": "T"},
                               {"access_key": "AK", "secret_key": "SK", "session_token": "T"}),
    "bucket settings win": ({"fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK",
                             "fs.s3a.bucket.b.access.key": "BK", "fs.s3a.bucket.b.secret.key": "BS",
                             "fs.s3a.bucket.other.endpoint": "http://elsewhere:1"},
                            {"access_key": "BK", "secret_key": "BS", "endpoint_override": ""}),
    "anonymous provider": ({"fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"},
                           {"anonymous": True}),
    "nothing set: the SDK's chain": ({}, {"access_key": None, "anonymous": False, "endpoint_override": ""}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_hadoop_settings_become_pyarrow_options(case: str) -> None:
    settings, expected = CASES[case]
    got = options("s3a://b/k", settings)
    assert {k: got[k] for k in expected} == expected


def test_uri_credentials_win_and_are_percent_decoded() -> None:
    got = options(f"s3a://{KEY}:{SECRET_IN_URI}@b/k", {"fs.s3a.bucket.b.access.key": "BK",
                                                       "fs.s3a.bucket.b.secret.key": "BS"})
    assert (got["access_key"], got["secret_key"]) == (KEY, SECRET)
    assert s3a.for_hadoop(f"s3a://{KEY}:{SECRET_IN_URI}@b/k/x") == (
        "s3a://b/k/x", {"fs.s3a.bucket.b.access.key": KEY, "fs.s3a.bucket.b.secret.key": SECRET})


def test_workers_take_the_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(s3a.CONF_ENV, json.dumps({"fs.s3a.endpoint": "http://h:1", "fs.s3a.path.style.access": "true"}))
    s3a.use_settings(None)
    fs, path = s3a.filesystem("s3a://b/k/")
    assert path == "b/k" and fs.__reduce__()[1][0]["endpoint_override"] == "h:1"


@pytest.mark.parametrize("uri", ["s3a://b/k?endpoint_override=h:1", "s3://b/k", "s3a:///k"])
def test_what_is_not_an_s3a_location(uri: str) -> None:
    with pytest.raises(ValueError):
        s3a.parse(uri)


# --- outputs on the store --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def store(moto_s3):  # type: ignore[no-untyped-def]
    """The bucket, S3A's settings for it set in this process (credentials included)."""
    moto_s3.bucket(BUCKET, {"logs": Path(__file__).resolve().parents[2] / "data_samples" / "logdirs" / "broker-1"})
    settings = moto_s3.hadoop_settings(BUCKET)
    s3a.use_settings(settings)
    yield moto_s3, settings
    s3a.use_settings(None)


def keys(moto_s3, prefix: str) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
    """The objects under ``prefix/`` by relative key (a placeholder of ``prefix/`` itself left out:
    pyarrow keeps one for a directory it emptied; any deeper one is kept, and fails the tests)."""
    return {k[len(prefix) + 1:]: v for k, v in moto_s3.objects(BUCKET, prefix + "/").items() if k != prefix + "/"}


def tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def marker(objects: dict[str, bytes]) -> dict[str, object]:
    return json.loads(objects[".klogs-output"])


def test_publish_replaces_only_its_own_output(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from kafka_format.output import store as store_output

    moto_s3, _ = store
    uri = f"s3a://{BUCKET}/reports/r1"
    first = {"summary.json": b"{}", "part/a.parquet": b"A", "gone/b.parquet": b"B", "_SUCCESS": b""}
    assert store_output.claim(uri, OWNER) == "absent"
    store_output.publish_local(tree(tmp_path / "one", first), uri, OWNER)
    got = keys(moto_s3, "reports/r1")
    assert {k: v for k, v in got.items() if k != ".klogs-output"} == first
    assert (marker(got)["job"], marker(got)["kind"], marker(got)["state"]) == ("retention", "report", "complete")
    second = {"summary.json": b"{\"v\": 2}", "part/a.parquet": b"A2"}
    assert store_output.claim(uri, OWNER) == "own"
    store_output.publish_local(tree(tmp_path / "two", second), uri, OWNER)
    got = keys(moto_s3, "reports/r1")
    assert sorted(got) == [".klogs-output", "part/a.parquet", "summary.json"]     # no stale file, no empty dir
    assert got["summary.json"] == second["summary.json"]
    with pytest.raises(OutputRefused, match="klogs audit report"):
        store_output.claim(uri, OTHER)


def test_keys_from_the_environment_open_the_store(store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """S3A's settings name only the bucket's endpoint: the keys come from ``AWS_ACCESS_KEY_ID`` /
    ``AWS_SECRET_ACCESS_KEY`` through the AWS SDK's chain (no profile file to fall back on), as
    S3A's own chain takes them on the JVM side; the server refuses any other key."""
    import pyarrow.fs as pafs

    moto_s3, settings = store
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    for name in ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"):
        monkeypatch.setenv(name, str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s3a.use_settings(moto_s3.hadoop_settings(BUCKET, credentials=False))
    try:
        fs, path = s3a.filesystem(f"s3a://{BUCKET}/logs")
        assert fs.__reduce__()[1][0]["access_key"] is None            # no key from the settings
        listed = {info.base_name for info in fs.get_file_info(pafs.FileSelector(path))}
    finally:
        s3a.use_settings(settings)
    assert {"meta.properties", "compacted-0"} <= listed


@pytest.mark.parametrize("case", ["foreign objects", "an object", "inside an output", "an input log dir",
                                  "inside an input", "holding an input", "a Kafka log dir"])
def test_claim_refuses_what_klogs_did_not_write(store, case: str) -> None:  # type: ignore[no-untyped-def]
    from kafka_format.output import store as store_output

    moto_s3, _ = store
    client = moto_s3.client()
    uri, inputs = f"s3a://{BUCKET}/refuse/{case.replace(' ', '-')}", []
    key = uri.split(f"{BUCKET}/", 1)[1]
    if case == "foreign objects":
        client.put_object(Bucket=BUCKET, Key=f"{key}/notes.txt", Body=b"mine")
    elif case == "an object":
        client.put_object(Bucket=BUCKET, Key=key, Body=b"a file")
    elif case == "inside an output":
        store_output.write_marker(store_output.target(uri), OWNER, "r", "complete")
        uri += "/nested"
    elif case == "a Kafka log dir":
        uri = f"s3a://{BUCKET}/logs"
    else:
        logs = f"s3a://{BUCKET}/logs"
        uri, inputs = {"an input log dir": (logs, [logs]), "inside an input": (logs + "/x", [logs]),
                       "holding an input": (f"s3a://{BUCKET}", [logs])}[case]
    before = moto_s3.objects(BUCKET)
    with pytest.raises(OutputRefused) as err:
        store_output.claim(uri, OWNER, inputs=inputs)
    assert moto_s3.objects(BUCKET) == before
    assert str(err.value).startswith(uri)


def test_a_publish_killed_half_way_is_marked_and_replaced(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Killed after its first upload: the output's marker says ``publishing`` and no ``_SUCCESS``
    shows it complete; the next run takes it as its own and publishes the whole output."""
    from kafka_format.output import store as store_output

    moto_s3, settings = store
    uri = f"s3a://{BUCKET}/reports/crashed"
    files = {"_SUCCESS": b"", "a.json": b"1", "b.json": b"2", "c.json": b"3"}
    src = tree(tmp_path / "src", files)
    code = ("import sys; from kafka_format.output.store import publish_local; from kafka_format.output.ownership import Owner;"
            "publish_local(sys.argv[1], sys.argv[2], Owner('retention', 'report'))")
    env = {**os.environ, "KLA_CRASH_AT": store_output.FIRST_FILE_PUBLISHED, s3a.CONF_ENV: json.dumps(settings)}
    proc = subprocess.run([sys.executable, "-c", code, str(src), uri], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    got = keys(moto_s3, "reports/crashed")
    assert marker(got)["state"] == "publishing" and "_SUCCESS" not in got and len(got) == 2   # marker + one file
    assert store_output.claim(uri, OWNER) == "own"
    store_output.publish_local(src, uri, OWNER)
    got = keys(moto_s3, "reports/crashed")
    assert marker(got)["state"] == "complete"
    assert {k: v for k, v in got.items() if k != ".klogs-output"} == files
