"""Decoders and encoders of Kafka's internal-topic records.

* :mod:`.protocol`: schema-driven reader/writer of Kafka protocol messages
  (flexible and non-flexible versions, tagged fields) over the JSON schemas
  in :mod:`.schemas`; ``to_json`` renders decoded dicts as Kafka's JSON converters do.
* :mod:`.consumer_offsets`: ``__consumer_offsets`` keys/values (``--offsets-decoder``).
* :mod:`.transaction_log`: ``__transaction_state`` keys/values (``--transaction-log-decoder``).
* :mod:`.cluster_metadata`: KRaft ``__cluster_metadata`` records,
  ``replay_cluster_metadata`` / ``replay_record_batches`` / ``load_cluster_metadata``
  (topics, partitions, topic and broker configs).
* :mod:`.kraft_control`: values of KRaft control records (LeaderChange, snapshot
  header/footer, KRaftVersion, Voters).
* :mod:`.api_message`: the ``AbstractApiMessageSerde`` framing (frame version, api key,
  version) the KRaft records and the remote log metadata records share, read and written once.
* :mod:`.remote_log_metadata`: tiered storage's ``__remote_log_metadata`` records as values
  (``--remote-log-metadata-decoder``); :mod:`.remote_log_metadata_cache`: their replay as
  ``RemoteLogMetadataCache`` / ``RemotePartitionMetadataStore`` build it.

Every malformed input raises :class:`kafka_format.common.errors.InternalTopicFormatError`
(position = byte offset inside the key or value).

May import: :mod:`kafka_format.common`, :mod:`kafka_format.records` (records inside the
KRaft metadata log).
"""

from __future__ import annotations

from kafka_format.internal.cluster_metadata import (
    ClusterMetadataView,
    PartitionState,
    decode_metadata_record,
    encode_config_record,
    encode_metadata_record,
    encode_partition_record,
    encode_topic_record,
    format_metadata_record,
    load_cluster_metadata,
    replay_cluster_metadata,
    replay_record_batches,
)
from kafka_format.internal.consumer_offsets import (
    UnknownRecordTypeError,
    decode_consumer_offsets_key,
    decode_consumer_offsets_record,
    decode_consumer_offsets_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
    format_offsets_record,
    group_partition,
)
from kafka_format.internal.kraft_control import decode_kraft_control_value, format_kraft_control
from kafka_format.internal.protocol import partition_for, to_json
from kafka_format.internal.remote_log_metadata import (
    decode_remote_log_metadata,
    encode_remote_log_metadata,
    format_remote_log_metadata,
)
from kafka_format.internal.remote_log_metadata_cache import RemoteLogMetadataView, replay_remote_log_metadata
from kafka_format.internal.transaction_log import (
    decode_transaction_log_key,
    decode_transaction_log_value,
    encode_transaction_log_key,
    encode_transaction_log_value,
    format_transaction_log_record,
    transactional_id_partition,
)

__all__ = [
    "ClusterMetadataView",
    "PartitionState",
    "RemoteLogMetadataView",
    "UnknownRecordTypeError",
    "decode_consumer_offsets_key",
    "decode_consumer_offsets_record",
    "decode_consumer_offsets_value",
    "decode_kraft_control_value",
    "decode_metadata_record",
    "decode_remote_log_metadata",
    "decode_transaction_log_key",
    "decode_transaction_log_value",
    "encode_config_record",
    "encode_group_metadata_key",
    "encode_group_metadata_value",
    "encode_metadata_record",
    "encode_offset_commit_key",
    "encode_offset_commit_value",
    "encode_partition_record",
    "encode_remote_log_metadata",
    "encode_topic_record",
    "encode_transaction_log_key",
    "encode_transaction_log_value",
    "format_kraft_control",
    "format_metadata_record",
    "format_offsets_record",
    "format_remote_log_metadata",
    "format_transaction_log_record",
    "group_partition",
    "load_cluster_metadata",
    "partition_for",
    "replay_cluster_metadata",
    "replay_record_batches",
    "replay_remote_log_metadata",
    "to_json",
    "transactional_id_partition",
]
