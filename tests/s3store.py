"""One local S3-compatible server (moto, on loopback) for the whole test run, and the ways tests
reach it: boto3 (the independent side: uploads and what a bucket holds), ``s3://`` URIs with
pyarrow's options, and ``s3a://`` through Hadoop's settings on a Spark session.

The server checks every request's signature against its IAM users (moto's IAM authentication),
and knows one access key, :data:`KEY` / :data:`SECRET`: a request signed with anything else is
refused, so a test that reaches the store proves which credentials were used.  The secret holds
'/', '+' and '=' (AWS secrets do), which a URI must percent-encode.

The fixture ``moto_s3`` (tests/conftest.py) starts it once per run; each test module takes its own
bucket (:meth:`MotoS3.bucket`), so modules share the server without seeing each other's objects.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REGION = "us-east-1"
KEY = "AKIAKLOGSTESTKEY2026"            # 20 characters, as AWS access key ids (moto parses them so)
SECRET = "kl0gs/S3cret+Value=x"
SECRET_IN_URI = "kl0gs%2FS3cret%2BValue%3Dx"


@dataclass
class MotoS3:
    """The running server (moto accepts any credentials; tests still pass real-looking ones)."""

    host: str
    port: int
    server: Any = field(repr=False)

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def client(self, key: str = KEY, secret: str = SECRET) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=key, aws_secret_access_key=secret)

    def bucket(self, name: str, uploads: Mapping[str, Path] | None = None) -> str:
        """Create bucket ``name`` and upload each local tree under its prefix; returns ``name``."""
        self.client().create_bucket(Bucket=name)
        for prefix, local in (uploads or {}).items():
            self.upload(name, prefix, local)
        return name

    def upload(self, bucket: str, prefix: str, local: Path) -> None:
        """Every file under ``local`` to ``prefix/`` (existing objects overwritten)."""
        client = self.client()
        for f in sorted(local.rglob("*")):
            if f.is_file():
                client.upload_file(str(f), bucket, f"{prefix}/{f.relative_to(local).as_posix()}")

    @property
    def query(self) -> str:
        """pyarrow's ``s3://`` URI options that reach this server."""
        return f"endpoint_override={self.host}:{self.port}&scheme=http&region={REGION}"

    def hadoop_settings(self, bucket: str, *, credentials: bool = True) -> dict[str, str]:
        """S3A's settings for ``bucket`` on this server, with :data:`KEY`/:data:`SECRET` unless
        ``credentials`` is False (then they must come from elsewhere)."""
        base = f"fs.s3a.bucket.{bucket}."
        out = {base + "endpoint": self.endpoint, base + "path.style.access": "true",
               base + "endpoint.region": REGION, base + "connection.ssl.enabled": "false"}
        if credentials:
            out.update({base + "access.key": KEY, base + "secret.key": SECRET})
        return out

    def objects(self, bucket: str, prefix: str = "") -> dict[str, bytes]:
        """Every object under ``prefix``: key -> bytes (read with boto3)."""
        client = self.client()
        out: dict[str, bytes] = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                out[item["Key"]] = client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
        return out

    def download(self, bucket: str, prefix: str, dest: Path) -> Path:
        """The objects under ``prefix/`` as files under ``dest`` (to read them with local tools)."""
        for key, data in self.objects(bucket, prefix.rstrip("/") + "/").items():
            if key.endswith("/"):
                continue
            path = dest / key[len(prefix.rstrip("/")) + 1:]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return dest


def start() -> Iterator[MotoS3]:
    """Run a moto server until the generator is closed."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)     # not a line per request on stderr
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        store = MotoS3(host, port, server)
        _require_signatures(store)
        yield store
    finally:
        server.stop()


def _require_signatures(store: MotoS3) -> None:
    """One IAM user allowed everything, whose access key is :data:`KEY`/:data:`SECRET`; then moto
    authenticates every request (its ``reset-auth`` endpoint)."""
    import json
    import urllib.request

    import boto3
    from moto.iam.models import iam_backends

    iam = boto3.client("iam", endpoint_url=store.endpoint, region_name=REGION,
                       aws_access_key_id="setup", aws_secret_access_key="setup")
    iam.create_user(UserName="klogs-tests")
    iam.put_user_policy(UserName="klogs-tests", PolicyName="everything", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    iam.create_access_key(UserName="klogs-tests")
    for backend in iam_backends.values():          # the server runs in this process: set the key we want
        user = backend["global"].users.get("klogs-tests")
        if user is not None:
            user.access_keys[0].access_key_id, user.access_keys[0].secret_access_key = KEY, SECRET
    request = urllib.request.Request(f"{store.endpoint}/moto-api/reset-auth", data=b"0", method="POST",
                                     headers={"Content-Type": "text/plain"})
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


def use_s3a(spark: Any, settings: Mapping[str, str]) -> None:
    """Set S3A ``settings`` on a running session's Hadoop configuration and hand them to klogs'
    Python side (as ``spark.hadoop.fs.s3a.*`` at start-up would)."""
    from kafka_format.spark import register

    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in settings.items():
        conf.set(key, value)
    register(spark)
