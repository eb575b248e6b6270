"""The typed key/value flags of ``klogs export`` (Schema Registry wire format), pyspark-free.

``--key-as``/``--value-as`` ``avro|protobuf|json-schema|auto`` decode one topic's keys/values with
the schemas of a source (``--schemas``: a registry URL, a directory of schema files or a log dir;
default: the registry's ``_schemas`` topic found in the LOGDIRs).  The table schema is the latest
version of ``<topic>-key``/``<topic>-value`` (``--key-subject``/``--value-subject`` name another
subject) or the reader schema in ``--key-schema``/``--value-schema``; ``--key-message``/
``--value-message`` pick the Protobuf message of the table (default: the schema's first message).
Rows that do not decode follow the data source's ``mode`` (``--option mode=PERMISSIVE``).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_format.registry.typed import TypedPlan

__all__ = ["TYPED_AS", "add_typed_arguments", "typed_from_args", "wants_typed"]

TYPED_AS = ("avro", "protobuf", "json-schema", "auto")


def add_typed_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the typed-decoding flags."""
    parser.add_argument(
        "--schemas",
        metavar="SOURCE",
        help="where typed --key-as/--value-as find schemas: a registry URL (http://...), a "
        "directory of schema files or a log dir (default: the _schemas topic in the LOGDIRs)",
    )
    for col in ("key", "value"):
        parser.add_argument(
            f"--{col}-subject",
            metavar="SUBJECT",
            help=f"subject of the {col} table schema (default <topic>-{col})",
        )
        parser.add_argument(
            f"--{col}-schema",
            metavar="FILE",
            help=f"reader schema of the {col} column (default: the subject's latest version)",
        )
        parser.add_argument(
            f"--{col}-message",
            metavar="NAME",
            help=f"Protobuf message of the {col} column (default: the schema's first message)",
        )


def wants_typed(args: argparse.Namespace) -> bool:
    """True when a column is to be decoded with schemas."""
    return args.key_as in TYPED_AS or args.value_as in TYPED_AS


def _read(path: str | None, flag: str) -> str | None:
    from kafka_format.jobs.jobargs import UsageError

    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise UsageError(f"{flag} {path}: {exc.strerror or exc}") from None


def typed_from_args(
    args: argparse.Namespace,
    logdirs: Sequence[str],
    topics: Sequence[str],
    topic_pattern: str | None,
    options: Mapping[str, str],
) -> TypedPlan | None:
    """The planned typed columns (:class:`kafka_format.registry.typed.TypedPlan`) of the flags, or
    None when no column is typed.  Bad flags and missing subjects raise ``UsageError``/``KafkaFormatError``
    (exit 2) before any engine starts; no pyspark is imported (the local engine decodes them too)."""
    from kafka_format.jobs.jobargs import UsageError
    if not wants_typed(args):
        return None
    from kafka_format.registry.sources import SCHEMAS_TOPIC, open_schema_source
    from kafka_format.registry.typed import plan_columns

    selected = _topics_of(logdirs, topics, topic_pattern)
    topic = None
    needs_topic = (args.key_as in TYPED_AS and not (args.key_subject or args.key_schema)) or (
        args.value_as in TYPED_AS and not (args.value_subject or args.value_schema)
    )
    if needs_topic:
        if len(selected) != 1:
            listed = ", ".join(selected[:6]) + (" ..." if len(selected) > 6 else "") or "none"
            raise UsageError(
                "typed --key-as/--value-as read the subject of one topic: select it with --topic "
                f"(or name --key-subject/--value-subject); selected: {listed}"
            )
        topic = selected[0]
    if topic == SCHEMAS_TOPIC:
        raise UsageError(f"--topic {SCHEMAS_TOPIC} is the registry's storage topic, not schema-encoded data")
    granularity = next((v for k, v in options.items() if k.lower() == "granularity"), "record")
    if granularity.strip().lower() != "record":
        raise UsageError(f"typed --key-as/--value-as decode record keys and values: not with granularity={granularity}")
    mode = next((v for k, v in options.items() if k.lower() == "mode"), "FAILFAST")
    source = open_schema_source(args.schemas, logdirs)
    return plan_columns(
        source,
        key_as=args.key_as,
        value_as=args.value_as,
        topic=topic,
        key_subject=args.key_subject,
        value_subject=args.value_subject,
        key_schema=_read(args.key_schema, "--key-schema"),
        value_schema=_read(args.value_schema, "--value-schema"),
        key_message=args.key_message,
        value_message=args.value_message,
        mode=mode,
    )


def _topics_of(logdirs: Sequence[str], topics: Sequence[str] = (), pattern: str | None = None) -> list[str]:
    """Topics under ``logdirs`` a job's ``--topic``/``--topic-pattern`` select (all when neither)."""
    import re

    from kafka_format.storage.logdir import open_log_dirs

    found = open_log_dirs(list(logdirs)).topics()
    if not topics and pattern is None:
        return found
    rx = re.compile(pattern) if pattern is not None else None
    return [t for t in found if t in topics or (rx is not None and rx.fullmatch(t))]
