"""``s3a://`` locations: Hadoop's S3A connector names, opened here with ``pyarrow.fs`` as S3A would.

Spark users name S3 objects ``s3a://bucket/key`` and configure the connector with Hadoop's
``fs.s3a.*`` settings (``spark.hadoop.fs.s3a.*`` in Spark, ``core-site.xml``).  The JVM side of a
job (Spark's Parquet and Delta writers) opens them through hadoop-aws; everything klogs does in
Python (reading log dirs in the source's workers, listing, markers, reports) opens the same bucket
with :class:`pyarrow.fs.S3FileSystem` built from the same settings, so both sides reach one store
with one set of credentials.

Settings, highest first (as S3A reads them):

* credentials inside the URI, ``s3a://KEY:SECRET@bucket/...`` (percent-encoded; Hadoop no longer
  takes them there, so :func:`for_hadoop` moves them into the bucket's own settings);
* ``fs.s3a.bucket.<bucket>.<name>``, then ``fs.s3a.<name>`` (:data:`SETTINGS` lists the names
  used), from :func:`hadoop_settings`: what :func:`use_settings` set in this process, else the
  JSON in ``$KLOGS_S3A_CONF`` (how Spark's Python workers receive the driver's settings);
* the AWS SDK's own chain for what is still missing: ``AWS_ACCESS_KEY_ID`` /
  ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, the profile files (``AWS_PROFILE``,
  ``~/.aws/credentials``), the EC2 instance metadata.

No setting is ever shown: locations are displayed through :func:`kafka_format.common.redaction.redact`.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = [
    "CONF_ENV",
    "SCHEME",
    "SETTINGS",
    "S3aUri",
    "filesystem",
    "for_hadoop",
    "hadoop_settings",
    "is_s3a",
    "parse",
    "setting",
    "store_uri",
    "use_settings",
]

SCHEME = "s3a"
CONF_ENV = "KLOGS_S3A_CONF"
# The fs.s3a.* names this module reads (global, or per bucket as fs.s3a.bucket.<bucket>.<name>).
SETTINGS = ("access.key", "secret.key", "session.token", "endpoint", "endpoint.region", "path.style.access",
            "connection.ssl.enabled", "aws.credentials.provider")
_PREFIX = "fs.s3a."
_ANONYMOUS = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
_AWS_ENDPOINT = re.compile(r"^(?:[a-z0-9-]+\.)?s3[.-](?P<region>[a-z]{2}(?:-[a-z]+)+-\d)\.amazonaws\.com$")
# KEY:SECRET@ ends at the last '@' (an unencoded '/' in the secret is common: AWS secrets hold them),
# as kafka_format.common.redaction reads it, so what is hidden is what is used as the secret.
_URI = re.compile(r"^s3a://(?:(?P<user>[^/?#@:]*)(?::(?P<secret>[^?#]*))?@)?(?P<bucket>[^/?#@:]+)(?P<key>/[^?#]*)?$")

_settings: dict[str, str] | None = None


@dataclass(frozen=True)
class S3aUri:
    """The parts of an ``s3a://`` URI (``user``/``secret`` percent-decoded; None when absent)."""

    bucket: str
    key: str                    # without the leading '/'; "" for the bucket itself
    user: str | None = None
    secret: str | None = None

    @property
    def path(self) -> str:
        """The pyarrow path: ``bucket/key``."""
        return f"{self.bucket}/{self.key}".rstrip("/") if self.key else self.bucket


def is_s3a(location: object) -> bool:
    """Whether ``location`` is an ``s3a://`` URI."""
    return isinstance(location, str) and location[:6].lower() == "s3a://"


def parse(uri: str) -> S3aUri:
    """Split an ``s3a://[KEY[:SECRET]@]bucket[/key]`` URI; ValueError for anything else (URI
    options such as ``?endpoint_override=`` are pyarrow's ``s3://`` form: S3A takes its settings
    from Hadoop's configuration)."""
    m = _URI.match(uri)
    if m is None:
        if is_s3a(uri) and "?" in uri:
            raise ValueError("s3a:// locations take no URI options: S3A's settings come from Hadoop's "
                             "fs.s3a.* configuration (spark.hadoop.fs.s3a.* in Spark)")
        raise ValueError("not an s3a://bucket/key location")
    user, secret = m.group("user"), m.group("secret")
    return S3aUri(m.group("bucket"), (m.group("key") or "").lstrip("/"),
                  None if user is None else unquote(user), None if secret is None else unquote(secret))


def hadoop_settings() -> dict[str, str]:
    """The ``fs.s3a.*`` settings of this process (:func:`use_settings`, else ``$KLOGS_S3A_CONF``)."""
    if _settings is not None:
        return dict(_settings)
    raw = os.environ.get(CONF_ENV)
    if not raw:
        return {}
    try:
        doc = json.loads(raw)
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in doc.items()} if isinstance(doc, dict) else {}


def use_settings(settings: Mapping[str, str] | None) -> None:
    """Make ``settings`` (``fs.s3a.*`` keys) this process's S3A settings; None: back to the
    environment's.  Filesystems opened before keep theirs."""
    global _settings
    _settings = None if settings is None else {k: v for k, v in settings.items() if k.startswith(_PREFIX)}


def setting(settings: Mapping[str, str], bucket: str, name: str) -> str | None:
    """``fs.s3a.bucket.<bucket>.<name>``, else ``fs.s3a.<name>``, else None (blank counts as unset)."""
    for key in (f"{_PREFIX}bucket.{bucket}.{name}", f"{_PREFIX}{name}"):
        value = settings.get(key)
        if value is not None and value.strip():
            return value.strip()
    return None


def _flag(value: str | None, default: bool) -> bool:
    return default if value is None else value.strip().lower() == "true"


def filesystem(uri: str) -> tuple[pafs.S3FileSystem, str]:
    """``(pyarrow.fs.S3FileSystem, "bucket/key")`` for an ``s3a://`` URI, configured as S3A would
    be for that bucket (see the module doc)."""
    loc = parse(uri)
    settings = hadoop_settings()
    options = {name: setting(settings, loc.bucket, name) for name in SETTINGS}
    if loc.user is not None:
        options["access.key"], options["secret.key"], options["session.token"] = loc.user, loc.secret or "", None
    return _open(tuple(sorted((k, v) for k, v in options.items() if v is not None))), loc.path


@functools.lru_cache(maxsize=64)
def _open(options: tuple[tuple[str, str], ...]) -> pafs.S3FileSystem:
    import pyarrow.fs as pafs

    o = dict(options)
    kwargs: dict[str, object] = {}
    if o.get("access.key") and o.get("secret.key") is not None:
        kwargs.update(access_key=o["access.key"], secret_key=o["secret.key"])
        if o.get("session.token"):
            kwargs["session_token"] = o["session.token"]
    elif _ANONYMOUS in o.get("aws.credentials.provider", ""):
        kwargs["anonymous"] = True
    endpoint = o.get("endpoint")
    region = o.get("endpoint.region")
    if endpoint:
        scheme, sep, host = endpoint.partition("://")
        if not sep:
            scheme, host = ("https" if _flag(o.get("connection.ssl.enabled"), True) else "http"), endpoint
        host = host.rstrip("/")
        kwargs.update(scheme=scheme.lower(), endpoint_override=host,
                      force_virtual_addressing=not _flag(o.get("path.style.access"), False))
        aws = _AWS_ENDPOINT.match(host.split(":")[0])
        if region is None and aws is not None:
            region = aws.group("region")
    if region:
        kwargs["region"] = region
    return pafs.S3FileSystem(**kwargs)


def for_hadoop(uri: str) -> tuple[str, dict[str, str]]:
    """What Hadoop's S3A gets for ``uri``: the URI without credentials, and the bucket settings
    that carry them (``fs.s3a.bucket.<bucket>.access.key``/``secret.key``; {} without any)."""
    loc = parse(uri)
    clean = f"{SCHEME}://{loc.bucket}" + (f"/{loc.key}" if loc.key else "")
    if loc.user is None:
        return clean, {}
    base = f"{_PREFIX}bucket.{loc.bucket}."
    return clean, {base + "access.key": loc.user, base + "secret.key": loc.secret or ""}


def store_uri(uri: str) -> str:
    """``uri`` as the JVM names it (:func:`for_hadoop`'s first half); other locations unchanged."""
    return for_hadoop(uri)[0] if is_s3a(uri) else uri
