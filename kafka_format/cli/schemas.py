"""``klogs schemas LOGDIR...``: the subjects, versions, ids and types the Schema Registry's storage
topic (``_schemas``) holds in the log dirs, replayed as the registry replays it (no Spark).

One line per subject-version (``--format table``, the default, or ``jsonl``:
``{"subject","version","id","schemaType","references","deleted"}``), soft-deleted versions only
with ``--include-deleted``; hard-deleted ones are gone, as in the registry.  Exit 0, or 2 when the
log dirs cannot be read or hold no such topic.
"""

from __future__ import annotations

import argparse
import json
import sys

from kafka_format.common.errors import KafkaFormatError

__all__ = ["add_arguments", "run"]

EXIT_OK = 0
EXIT_USAGE = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``klogs schemas`` flags on ``parser``."""
    parser.add_argument(
        "logdirs",
        nargs="+",
        metavar="LOGDIR",
        help="broker log dirs (or parents of them) holding the registry's storage topic",
    )
    parser.add_argument(
        "--schemas-topic",
        default="_schemas",
        metavar="TOPIC",
        help="the registry's kafkastore.topic (default %(default)s)",
    )
    parser.add_argument("--include-deleted", action="store_true", help="also list soft-deleted versions")
    parser.add_argument(
        "--format", default="table", choices=["table", "jsonl"], help="output format (default %(default)s)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the listing; returns the exit code."""
    from kafka_format.cli.output import table
    from kafka_format.registry.sources import schemas_from_log_dirs
    from kafka_format.storage.logdir import open_log_dirs

    try:
        if args.schemas_topic not in open_log_dirs(list(args.logdirs)).topics():
            print(
                f"klogs schemas: no '{args.schemas_topic}' partition under {', '.join(args.logdirs)}",
                file=sys.stderr,
            )
            return EXIT_USAGE
        store = schemas_from_log_dirs(list(args.logdirs), topic=args.schemas_topic)
    except KafkaFormatError as exc:
        print(f"klogs schemas: {exc}", file=sys.stderr)
        return EXIT_USAGE
    rows = [s for s in store if args.include_deleted or not s.deleted]
    if args.format == "jsonl":
        for s in rows:
            print(json.dumps(s.to_json(), sort_keys=True))
        return EXIT_OK
    lines = table(
        ["subject", "version", "id", "type", "references", "deleted"],
        [
            [
                s.subject,
                s.version,
                s.id,
                s.schema_type,
                ", ".join(f"{r.name}={r.subject}/{r.version}" for r in s.references),
                "yes" if s.deleted else "",
            ]
            for s in rows
        ],
    )
    print("\n".join(lines))
    return EXIT_OK
