"""Credentials never shown: :func:`redact` takes the secret out of every ``scheme://user:secret@``
in a location or a message.  Every location klogs displays or records (outputs, reports, log
lines, error messages) goes through it; the real URI is kept only where a filesystem is opened.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "URI_CREDENTIALS_REGEX", "redact"]

REDACTED = "***"
# ``scheme://user:secret@``: the secret runs to the last '@' of the authority.  A secret that
# (wrongly, unencoded) holds a '/' still ends at an '@' later in the same word, unless the text
# after ':' is a port number (``hdfs://namenode:8020/a@b`` has no secret).
_USERINFO = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^/?#@\s:]*):(?!\d*(?:[/?#\s]|$))[^?#\s\"'<>,\\]*@")


def redact(text: str) -> str:
    """``text`` (a location, or any message naming locations) with the secret of every
    ``scheme://user:secret@`` replaced by ``***`` (``s3://KEY:***@bucket/...``).

    The one function every displayed or recorded location goes through; the unredacted location
    is kept only where a filesystem is opened."""
    if "@" not in text:
        return text
    return _USERINFO.sub(lambda m: f"{m.group('head')}:{REDACTED}@", text)


# The same secret as a Java regex, for Spark's ``spark.sql.redaction.string.regex`` (plans, UI).
URI_CREDENTIALS_REGEX = r"(?<=://)[^/?#@\s:]*:[^?#@\s]*(?=@)"
