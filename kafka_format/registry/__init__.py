"""Schema Registry support: schema sources and wire-format decoding of keys and values (no Spark).

* :mod:`~kafka_format.registry.store` -- the registry's state replayed from its ``_schemas`` records;
* :mod:`~kafka_format.registry.sources` -- ``_schemas`` in log dirs, a registry URL, a directory of files;
* :mod:`~kafka_format.registry.wire` -- magic byte and schema id of a binary column, vectorised;
* :mod:`~kafka_format.registry.avro`, :mod:`~kafka_format.registry.protobuf`,
  :mod:`~kafka_format.registry.jsonschema` -- payload decoding and table types per format;
* :mod:`~kafka_format.registry.columns` (+ ``_columns.c``) -- the Arrow column layout, buffers and row
  loop the compiled decoders share;
* :mod:`~kafka_format.registry.avro_columns` (+ ``_avrocolumns.c``),
  :mod:`~kafka_format.registry.proto_columns` (+ ``_protocolumns.c``),
  :mod:`~kafka_format.registry.json_columns` (+ ``_jsoncolumns.c``) -- payloads compiled straight into
  Arrow columns (fastavro, upb and ``json.loads`` stay the references and take what they do not);
* :mod:`~kafka_format.registry.typed` -- column plans and the column decoder;
* :mod:`~kafka_format.registry.batches` -- a batch of ``kafka-log`` rows decoded, the read mode
  applied (the Spark source's reader and the local engine's export).

May import: every layer below it (``_schemas`` is read from log dirs through :mod:`kafka_format.read`);
never :mod:`kafka_format.spark`.
"""

from kafka_format.registry.sources import (
    RegistryUrlSource,
    SchemaSource,
    SchemaSourceError,
    open_schema_source,
    schemas_from_directory,
    schemas_from_log_dirs,
)
from kafka_format.registry.store import RegisteredSchema, SchemaReference, SchemaStore

__all__ = [
    "RegisteredSchema",
    "RegistryUrlSource",
    "SchemaReference",
    "SchemaSource",
    "SchemaSourceError",
    "SchemaStore",
    "open_schema_source",
    "schemas_from_directory",
    "schemas_from_log_dirs",
]
