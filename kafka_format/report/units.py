"""Human units for reports: :mod:`kafka_format.common.units` (one module below the rules that write
messages with them and the pages that show them), re-exported here."""

from kafka_format.common.units import human_bytes, human_count, human_duration, utc_text, utc_text_ms

__all__ = ["human_bytes", "human_count", "human_duration", "utc_text", "utc_text_ms"]
