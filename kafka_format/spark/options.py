"""The ``kafka-log`` source's options: kept at :mod:`kafka_format.read.options` (no pyspark there, so
the local engine parses the same options); re-exported here for existing imports."""

from kafka_format.read.options import *  # noqa: F403
from kafka_format.read.options import KNOWN_OPTIONS, KafkaLogOptionError, ReadOptions, parse_options

__all__ = ["KNOWN_OPTIONS", "KafkaLogOptionError", "ReadOptions", "parse_options"]
