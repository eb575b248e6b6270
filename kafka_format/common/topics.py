"""The names of Kafka's own topics (``org.apache.kafka.common.internals.Topic``,
``TopicBasedRemoteLogMetadataManagerConfig``): the log rules, the audit and the jobs treat them apart."""

from __future__ import annotations

__all__ = [
           "CONSUMER_OFFSETS_TOPIC",
           "METADATA_TOPIC",
           "REMOTE_LOG_METADATA_TOPIC",
           "SHARE_GROUP_STATE_TOPIC",
           "TRANSACTION_STATE_TOPIC",
]

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"        # Topic.GROUP_METADATA_TOPIC_NAME
TRANSACTION_STATE_TOPIC = "__transaction_state"      # Topic.TRANSACTION_STATE_TOPIC_NAME
SHARE_GROUP_STATE_TOPIC = "__share_group_state"      # Topic.SHARE_GROUP_STATE_TOPIC_NAME
METADATA_TOPIC = "__cluster_metadata"                # Topic.CLUSTER_METADATA_TOPIC_NAME: KRaft's metadata log
REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"  # REMOTE_LOG_METADATA_TOPIC_NAME
