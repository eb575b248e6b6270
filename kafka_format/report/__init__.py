"""Reports a person reads: human units and self-contained HTML pages.

Owns the look of every report (retention's ``disk-usage.html``, audit's ``report.html``,
compaction's ``report.html``); the rules that compute their content live in the library's
modules and hand plain rows in.  Imports only the standard library and the format library's
own constants: never pyspark.

May import: every layer below it (the rules' rows and constants, :mod:`kafka_format.output` to
publish report directories); never :mod:`kafka_format.engine`, :mod:`kafka_format.spark` or
:mod:`kafka_format.cli`.
"""

from kafka_format.report.units import human_bytes, human_count, human_duration, utc_text, utc_text_ms

__all__ = ["human_bytes", "human_count", "human_duration", "utc_text", "utc_text_ms"]
