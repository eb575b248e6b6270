"""Consumer groups offline: ``__consumer_offsets`` replayed as the group coordinator loads it.

Kafka source of record (``apache/kafka``, ``group-coordinator/.../coordinator/group/``):
``OffsetMetadataManager.replay`` / ``replayEndTransactionMarker`` / ``cleanupExpiredOffsets``,
``GroupMetadataManager.replay`` (one per record type) and ``getOrMaybeCreate*Group``,
``classic/ClassicGroup`` (``offsetExpirationCondition``, ``isSubscribedToTopic``,
``computeSubscribedTopics``), ``modern/consumer/ConsumerGroup`` (``maybeUpdateGroupState``,
``offsetExpirationCondition``), ``OffsetExpirationConditionImpl.isOffsetExpired``, and the loader
``CoordinatorLoaderImpl.doLoad`` (``core``).

The rules kept here:

* **Loading.** A ``__consumer_offsets`` partition is replayed record by record in offset order.
  Control batches' COMMIT/ABORT markers end the producer's transaction; data records are decoded
  (:mod:`kafka_format.internal.consumer_offsets`) and replayed.  An unknown record type is skipped
  (Kafka warns "It could be a left over from an aborted upgrade"); a record that does not decode,
  or whose replay Kafka refuses (``IllegalStateException``), stops Kafka's load of the partition:
  here it is an :class:`Anomaly` and the replay goes on, so that nothing is hidden.
  What a reader sees is the state at the partition's high watermark (the coordinator serves its
  last committed snapshot), so the caller passes the records below it.
* **Offsets.** The latest commit per (group, topic, partition) wins; a tombstone deletes it and
  every pending transactional commit of it.  A commit in a transactional batch is pending under
  its producer id until the producer's marker: COMMIT moves it to the committed offsets unless a
  commit already there has a higher record offset, ABORT drops it.
* **Groups.** A commit for a group that does not exist creates a *simple* classic group (Empty, no
  protocol type).  ``GroupMetadataValue`` replaces the group with a classic group (Stable with
  members, else Empty); its tombstone removes the group.  Consumer-protocol (KIP-848) records build
  a consumer group (replacing a simple classic group); their tombstones follow Kafka's checks.
  Streams-group (KIP-1071) records build a streams group the same way (``StreamsGroup``); a
  consumer group's resolved regular expressions (type 16) count as subscribed topics.  Record
  types and layouts are Kafka 4.4.0's (``CoordinatorRecordType``; 9 and 18 are unknown there).
* **Expiry** (:func:`offset_expiry`): an offset expires when the group has an expiration
  condition, the group is not subscribed to the topic, no transactional commit of the partition
  is pending, and ``now - base >= offsets.retention.ms`` (``base``: the commit time, or the time a
  classic consumer group became Empty), or ``now >= expireTimestamp`` for a v1 commit.  Kafka's
  coordinator deletes expired offsets on its next check (``offsets.retention.check.interval.ms``,
  10 minutes by default), and then the group once it is empty and has no offsets left.

Share groups hold no committed offsets (their state is in ``__share_group_state``); their records
are replayed for the group list only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from kafka_format.common.errors import InternalTopicFormatError
from kafka_format.common.topics import CONSUMER_OFFSETS_TOPIC
from kafka_format.internal.consumer_offsets import (
    CONSUMER_PROTOCOL_TYPE,
    UnknownRecordTypeError,
    decode_consumer_offsets_record,
)
from kafka_format.records.record_batch import NO_PRODUCER_ID

__all__ = [
    "ANOMALY_SCHEMA",
    "CLASSIC",
    "COLUMNS",
    "CONSUMER",
    "DEFAULT_OFFSETS_RETENTION_MS",
    "NO_PRODUCER_ID",
    "SCHEMA",
    "SHARE",
    "Anomaly",
    "CommittedOffset",
    "CoordinatorState",
    "Group",
    "Member",
    "offset_expiry",
    "replay_partition",
]

DEFAULT_OFFSETS_RETENTION_MS = 10080 * 60 * 1000     # offsets.retention.minutes = 10080 (7 days)
LEAVE_GROUP_MEMBER_EPOCH = -1                         # ConsumerGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH
MEMBER_STATE_STABLE = 0                               # modern.MemberState.STABLE
STREAMS_MEMBER_STATE_STABLE = 1                       # streams.MemberState.STABLE

# Group.GroupType, as ConsumerGroupListing / GroupListing print it
CLASSIC = "classic"
CONSUMER = "consumer"
SHARE = "share"
STREAMS = "streams"

# ClassicGroupState / ConsumerGroupState names (GroupState.toString)
EMPTY = "Empty"
STABLE = "Stable"
ASSIGNING = "Assigning"
RECONCILING = "Reconciling"
NOT_READY = "NotReady"                                # StreamsGroupState.NOT_READY

# The groups job's output, declared once: one row per group, topic and partition (docs/jobs/groups.md);
# kafka_format.engine.groups computes it.
SCHEMA = pa.schema([
    pa.field("group", pa.string(), nullable=False),
    pa.field("topic", pa.string()),                      # null: a group with no offsets or assignments
    pa.field("partition", pa.int32()),
    pa.field("committedOffset", pa.int64()),             # null: assigned, nothing committed
    pa.field("leaderEpoch", pa.int32()),
    pa.field("metadata", pa.string()),
    pa.field("commitTimestamp", pa.int64()),
    pa.field("commitAgeMs", pa.int64()),                 # now - commitTimestamp
    pa.field("transactional", pa.bool_()),               # committed by a transaction
    pa.field("pendingTransaction", pa.bool_()),          # a transaction holds a newer commit, not ended
    pa.field("offsetExpiresAtMs", pa.int64()),           # null: does not expire in the group's state
    pa.field("offsetExpired", pa.bool_()),               # expired at now: gone at the next expiry check
    pa.field("logStartOffset", pa.int64()),
    pa.field("highWatermark", pa.int64()),               # LOG-END-OFFSET of kafka-consumer-groups
    pa.field("logEndOffset", pa.int64()),
    pa.field("lag", pa.int64()),                         # highWatermark - committedOffset (Kafka's LAG)
    pa.field("lagBytes", pa.int64()),                    # bytes of the batches from the first unread one to HW
    pa.field("firstUnreadTimestamp", pa.int64()),        # timestamp of the record at the committed offset
    pa.field("timeLagMs", pa.int64()),                   # now - firstUnreadTimestamp
    pa.field("lostRecords", pa.int64()),                 # unread records below the log start already
    pa.field("retentionLogStartOffset", pa.int64()),     # the log start the retention pass at now leaves
    pa.field("retentionLossRecords", pa.int64()),        # unread records that pass deletes
    pa.field("retentionLossBytes", pa.int64()),
    pa.field("losesRecordsAtMs", pa.int64()),           # when retention first deletes an unread record
    pa.field("recordsLost", pa.int64()),                 # unread records below the log start after retention at now
    pa.field("consumerId", pa.string()),                 # the member the partition is assigned to
    pa.field("host", pa.string()),
    pa.field("clientId", pa.string()),
    pa.field("groupType", pa.string(), nullable=False),  # classic | consumer | streams | share
    pa.field("state", pa.string(), nullable=False),
    pa.field("protocolType", pa.string()),
    pa.field("protocol", pa.string()),
    pa.field("generation", pa.int32()),                  # classic generation; consumer group epoch
    pa.field("members", pa.int32(), nullable=False),
    pa.field("coordinatorPartition", pa.int32()),        # the __consumer_offsets partition of its records
    # share groups (KIP-932): the share-partition's __share_group_state (committedOffset: its start offset)
    pa.field("shareStateEpoch", pa.int32()),
    pa.field("deliveryCompleteCount", pa.int32()),       # offsets past the start offset acknowledged or archived
    pa.field("inFlight", pa.list_(pa.struct([           # the state batches past the start offset
        pa.field("firstOffset", pa.int64(), nullable=False),
        pa.field("lastOffset", pa.int64(), nullable=False),
        pa.field("deliveryState", pa.string(), nullable=False),   # Available, Acquired, Acknowledged, ...
        pa.field("deliveryCount", pa.int32(), nullable=False),
    ]))),
])
COLUMNS = tuple(SCHEMA.names)
# Records Kafka's loader skips or refuses, one row each (the job's notes).
ANOMALY_SCHEMA = pa.schema([
    pa.field("topic", pa.string(), nullable=False),      # __consumer_offsets or __share_group_state
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("offset", pa.int64(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("message", pa.string(), nullable=False),
])


# record type (key version) -> what it replays (GroupCoordinatorShard.replay)
_OFFSET_COMMIT = (0, 1)
_GROUP_METADATA = 2
_CONSUMER_TYPES = (*range(3, 9), 16)                 # 16: ConsumerGroupRegularExpression
_SHARE_TYPES = range(10, 16)
_STREAMS_TYPES = (17, *range(19, 24))


@dataclass(frozen=True)
class CommittedOffset:
    """``OffsetAndMetadata.fromRecord``: one committed offset and where its record is."""

    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int | None          # None: -1 in the record (or a version without the field)
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None      # only v1 commits carry one
    record_offset: int                # the commit record's offset in __consumer_offsets
    producer_id: int = NO_PRODUCER_ID  # >= 0: committed by that producer's transaction


@dataclass
class Member:
    """A member as its group's records describe it.  ``assignment`` holds (topic, partition) pairs
    for classic members and (topic id, partition) pairs for consumer-protocol members (the records
    name topics by id); ``subscribed`` the topics it subscribes to (None: not known)."""

    member_id: str
    client_id: str = ""
    host: str = ""
    instance_id: str | None = None
    assignment: tuple[tuple[str, int], ...] = ()
    by_topic_id: bool = False
    subscribed: tuple[str, ...] | None = None
    member_epoch: int | None = None
    state: int | None = None


@dataclass
class Group:
    """A group as the coordinator holds it after loading."""

    group_id: str
    type: str                                   # CLASSIC | CONSUMER | SHARE | STREAMS
    protocol_type: str | None = None            # classic: "consumer", "connect", ...; None: simple group
    protocol: str | None = None                 # classic: the chosen assignor
    generation: int = 0                         # classic: generation; consumer/streams/share: group epoch
    leader: str | None = None
    current_state_timestamp: int | None = None
    members: dict[str, Member] = field(default_factory=dict)
    target_assignment: dict[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    target_assignment_epoch: int = -1
    simple: bool = False                        # created by an offset commit alone
    subscribed_topics: frozenset[str] | None = None   # classic: computeSubscribedTopics (None: unknown)
    regex_topics: dict[str, frozenset[str]] = field(default_factory=dict)  # consumer: resolved regexes
    topology_epoch: int | None = None           # streams: its topology's epoch (None: no topology)
    validated_topology_epoch: int = -1          # streams: the epoch whose topics were validated
    source_topics: frozenset[str] = frozenset()  # streams: the topology's source topics
    # share: the initialized share-partitions (ShareGroupStatePartitionMetadata), topic id -> (name, partitions)
    share_partitions: dict[str, tuple[str, tuple[int, ...]]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        """The group's state right after loading: classic groups are Stable with members, else
        Empty (ClassicGroup at load), and so are share groups (``ShareGroup.maybeUpdateGroupState``);
        consumer groups as ``ConsumerGroup.maybeUpdateGroupState``, streams groups as
        ``StreamsGroup.maybeUpdateGroupState`` (NotReady until the topology's epoch is the validated one)."""
        if not self.members:
            return EMPTY
        if self.type in (CLASSIC, SHARE):
            return STABLE
        stable = MEMBER_STATE_STABLE
        if self.type == STREAMS:
            if self.topology_epoch is None or self.topology_epoch != self.validated_topology_epoch:
                return NOT_READY
            stable = STREAMS_MEMBER_STATE_STABLE
        if self.generation > self.target_assignment_epoch:
            return ASSIGNING
        for m in self.members.values():
            if not (m.state == stable and m.member_epoch == self.target_assignment_epoch):
                return RECONCILING
        return STABLE

    @property
    def uses_consumer_protocol(self) -> bool:
        """``ClassicGroup.usesConsumerGroupProtocol``: protocol type "consumer"."""
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def is_subscribed_to(self, topic: str) -> bool:
        """``isSubscribedToTopic``: classic groups by their computed subscription (unknown: true only
        for the consumer protocol); consumer groups by their members' subscribed topic names and
        their resolved regular expressions' topics (``ModernGroup.subscribedTopicNames``); streams
        groups, unless Empty, by their topology's source topics (``StreamsTopology.sourceTopicMap``)."""
        if self.type == CLASSIC:
            if self.subscribed_topics is None:
                return self.uses_consumer_protocol
            return topic in self.subscribed_topics
        if self.type == STREAMS:
            return bool(self.members) and self.topology_epoch is not None and topic in self.source_topics
        return any(m.subscribed is not None and topic in m.subscribed for m in self.members.values()) \
            or any(topic in topics for topics in self.regex_topics.values())

    def expiration_base(self, commit: CommittedOffset) -> int | None:
        """``offsetExpirationCondition``'s base timestamp for ``commit``; None: the group's offsets do
        not expire in its present state."""
        if self.type == SHARE:
            return None
        if self.type in (CONSUMER, STREAMS):
            return commit.commit_timestamp
        if self.protocol_type is None:                 # simple group
            return commit.commit_timestamp
        if not self.members:                           # Empty
            return self.current_state_timestamp if self.current_state_timestamp is not None \
                else commit.commit_timestamp
        if self.uses_consumer_protocol and self.subscribed_topics is not None:     # Stable
            return commit.commit_timestamp
        return None


@dataclass(frozen=True)
class Anomaly:
    """A record Kafka's loader skips (``skipped``) or refuses (``refused``: Kafka's load of the
    partition fails there), with its position."""

    partition: int                   # the coordinator topic's partition
    offset: int
    kind: str                        # "skipped" | "refused"
    message: str
    topic: str = CONSUMER_OFFSETS_TOPIC


@dataclass
class CoordinatorState:
    """What a group coordinator holds after loading one or more ``__consumer_offsets`` partitions."""

    groups: dict[str, Group] = field(default_factory=dict)
    offsets: dict[tuple[str, str, int], CommittedOffset] = field(default_factory=dict)
    pending: dict[int, dict[tuple[str, str, int], CommittedOffset]] = field(default_factory=dict)
    open_transactions: dict[str, set[int]] = field(default_factory=dict)
    anomalies: list[Anomaly] = field(default_factory=list)
    group_partition: dict[str, int] = field(default_factory=dict)   # group -> its __consumer_offsets partition

    # -- the loader -----------------------------------------------------------------------------

    def replay(self, partition: int, offset: int, producer_id: int, key: bytes | None,
               value: bytes | None) -> None:
        """One data record of ``__consumer_offsets-<partition>`` at ``offset``, in a batch of
        ``producer_id`` (:data:`NO_PRODUCER_ID` outside transactions)."""
        if key is None:
            self._anomaly(partition, offset, "refused", "a record without a key (the coordinator's serde "
                                                        "refuses it: \"Key cannot be null\")")
            return
        try:
            k, v = decode_consumer_offsets_record(key, value)
        except UnknownRecordTypeError as exc:
            self._anomaly(partition, offset, "skipped", f"unknown record type {exc.found}: Kafka ignores it "
                                                        "(\"It could be a left over from an aborted upgrade\")")
            return
        except InternalTopicFormatError as exc:
            self._anomaly(partition, offset, "refused", f"the record does not decode: {exc.reason}")
            return
        record_type = int(k["type"])
        data: dict[str, Any] = k["data"]
        body: dict[str, Any] | None = None if v is None else v["data"]
        try:
            if record_type in _OFFSET_COMMIT:
                self._replay_commit(partition, offset, producer_id, data, body)
            elif record_type == _GROUP_METADATA:
                self._replay_group_metadata(partition, data["group"], body)
            elif record_type in _CONSUMER_TYPES:
                self._replay_consumer(partition, record_type, data, body)
            elif record_type in _STREAMS_TYPES:
                self._replay_streams(partition, record_type, data, body)
            else:
                self._replay_share(partition, record_type, data, body)
        except _Refused as exc:
            self._anomaly(partition, offset, "refused", str(exc))

    def end_transaction(self, producer_id: int, commit: bool) -> None:
        """A COMMIT (``commit``) or ABORT marker of ``producer_id`` (``replayEndTransactionMarker``)."""
        pending = self.pending.pop(producer_id, None)
        if pending is None:
            return
        for group in {k[0] for k in pending}:
            txns = self.open_transactions.get(group)
            if txns is not None:
                txns.discard(producer_id)
                if not txns:
                    del self.open_transactions[group]
        if not commit:
            return
        for k, c in pending.items():
            existing = self.offsets.get(k)
            if existing is None or c.record_offset > existing.record_offset:
                self.offsets[k] = c

    # -- record types ---------------------------------------------------------------------------

    def _anomaly(self, partition: int, offset: int, kind: str, message: str) -> None:
        self.anomalies.append(Anomaly(partition, offset, kind, message))

    def _replay_commit(self, partition: int, offset: int, producer_id: int, key: dict[str, Any],
                       value: dict[str, Any] | None) -> None:
        group, topic, part = str(key["group"]), str(key["topic"]), int(key["partition"])
        k = (group, topic, part)
        self.group_partition.setdefault(group, partition)
        if value is None:
            self.offsets.pop(k, None)
            for pid in self.open_transactions.get(group, ()):
                self.pending.get(pid, {}).pop(k, None)
            return
        if group not in self.groups:
            self.groups[group] = Group(group, CLASSIC, simple=True)
        epoch = int(value.get("leaderEpoch", -1))
        expire = int(value.get("expireTimestamp", -1))
        commit = CommittedOffset(group, topic, part, int(value["offset"]), None if epoch == -1 else epoch,
                                 str(value.get("metadata") or ""), int(value["commitTimestamp"]),
                                 None if expire == -1 else expire, offset, producer_id)
        if producer_id == NO_PRODUCER_ID:
            self.offsets[k] = commit
        else:
            self.pending.setdefault(producer_id, {})[k] = commit
            self.open_transactions.setdefault(group, set()).add(producer_id)

    def _replay_group_metadata(self, partition: int, group_id: str, value: dict[str, Any] | None) -> None:
        self.group_partition.setdefault(group_id, partition)
        if value is None:
            self.groups.pop(group_id, None)
            return
        protocol_type = value.get("protocolType") or None
        group = Group(group_id, CLASSIC, protocol_type=protocol_type, protocol=value.get("protocol"),
                      generation=int(value.get("generation", 0)), leader=value.get("leader"),
                      current_state_timestamp=_optional(value.get("currentStateTimestamp", -1)))
        subscribed: set[str] | None = set()
        for m in value.get("members") or ():
            member = Member(str(m["memberId"]), client_id=str(m.get("clientId") or ""),
                            host=str(m.get("clientHost") or ""), instance_id=m.get("groupInstanceId"))
            sub, assignment = m.get("subscription"), m.get("assignment")
            if isinstance(sub, dict):
                member.subscribed = tuple(sub.get("topics") or ())
            if isinstance(assignment, dict):
                member.assignment = tuple((str(t["topic"]), int(p))
                                          for t in assignment.get("assignedPartitions") or ()
                                          for p in t.get("partitions") or ())
            group.members[member.member_id] = member
            if subscribed is not None:
                if member.subscribed is None:
                    subscribed = None                 # a member's metadata does not parse: unknown
                else:
                    subscribed.update(member.subscribed)
        if protocol_type != CONSUMER_PROTOCOL_TYPE or (group.members and group.protocol is None):
            subscribed = None
        group.subscribed_topics = None if subscribed is None else frozenset(subscribed)
        self.groups[group_id] = group

    def _modern(self, group_id: str, kind: str, create: bool) -> Group | None:
        """``getOrMaybeCreatePersisted{Consumer,Streams,Share}Group``: None when it does not exist and
        ``create`` is false (the tombstone is ignored).  A consumer or streams group replaces a
        simple classic group; a share group does not."""
        group = self.groups.get(group_id)
        if group is None or (group.type == CLASSIC and group.simple and kind != SHARE):
            if group is None and not create:
                return None
            group = self.groups[group_id] = Group(group_id, kind)
            return group
        if group.type != kind:
            raise _Refused(_NOT_OF_KIND[kind].format(group_id))
        return group

    def _replay_consumer(self, partition: int, record_type: int, key: dict[str, Any],
                         value: dict[str, Any] | None) -> None:
        group_id = str(key["groupId"])
        self.group_partition.setdefault(group_id, partition)
        group = self._modern(group_id, CONSUMER, value is not None)
        if group is None:
            return
        member_id = str(key.get("memberId", ""))
        if record_type == 16:                                  # ConsumerGroupRegularExpression
            regex = str(key["regularExpression"])
            if value is not None:
                group.regex_topics[regex] = frozenset(str(t) for t in value.get("topics") or ())
            else:
                group.regex_topics.pop(regex, None)
        elif record_type == 3:                                 # ConsumerGroupMetadata
            if value is not None:
                group.generation = int(value["epoch"])
                return
            if group.members:
                raise _Refused(f"Received a tombstone record to delete group {group_id} but the group still "
                               f"has {len(group.members)} members.")
            if group.target_assignment:
                raise _Refused(f"Received a tombstone record to delete group {group_id} but the target "
                               f"assignment still has {len(group.target_assignment)} members.")
            if group.target_assignment_epoch != -1:
                raise _Refused(f"Received a tombstone record to delete group {group_id} but did not receive "
                               "ConsumerGroupTargetAssignmentMetadataValue tombstone.")
            del self.groups[group_id]
        elif record_type == 4:                                 # ConsumerGroupPartitionMetadata: not kept
            return
        elif record_type == 5:                                 # ConsumerGroupMemberMetadata
            if value is not None:
                m = group.members.setdefault(member_id, Member(member_id, by_topic_id=True))
                m.client_id, m.host = str(value.get("clientId") or ""), str(value.get("clientHost") or "")
                m.instance_id = value.get("instanceId")
                m.subscribed = tuple(value.get("subscribedTopicNames") or ())
                return
            _drop_member(group, member_id, "Consumer")
        elif record_type == 6:                                 # ConsumerGroupTargetAssignmentMetadata
            if value is not None:
                group.target_assignment_epoch = int(value["assignmentEpoch"])
                return
            _drop_target_assignment(group)
        elif record_type == 7:                                 # ConsumerGroupTargetAssignmentMember
            if value is not None:
                group.target_assignment[member_id] = _id_partitions(value.get("topicPartitions"))
            else:
                group.target_assignment.pop(member_id, None)
        else:                                                  # 8: ConsumerGroupCurrentMemberAssignment
            if value is not None:
                m = group.members.setdefault(member_id, Member(member_id, by_topic_id=True))
                m.member_epoch, m.state = int(value["memberEpoch"]), int(value.get("state", 0))
                m.assignment = _id_partitions(value.get("assignedPartitions"))
                return
            old = group.members.get(member_id)
            if old is not None:
                old.member_epoch, old.assignment = LEAVE_GROUP_MEMBER_EPOCH, ()

    def _replay_share(self, partition: int, record_type: int, key: dict[str, Any],
                      value: dict[str, Any] | None) -> None:
        group_id = str(key["groupId"])
        self.group_partition.setdefault(group_id, partition)
        group = self._modern(group_id, SHARE, value is not None)
        if group is None:
            return
        member_id = str(key.get("memberId", ""))
        if record_type == 11:                                  # ShareGroupMetadata
            if value is not None:
                group.generation = int(value["epoch"])
            elif not group.members:
                del self.groups[group_id]
        elif record_type == 10:                                # ShareGroupMemberMetadata
            if value is not None:
                m = group.members.setdefault(member_id, Member(member_id, by_topic_id=True))
                m.client_id, m.host = str(value.get("clientId") or ""), str(value.get("clientHost") or "")
                m.subscribed = tuple(value.get("subscribedTopicNames") or ())
            else:
                group.members.pop(member_id, None)
        elif record_type == 14 and value is not None:         # ShareGroupCurrentMemberAssignment
            m = group.members.setdefault(member_id, Member(member_id, by_topic_id=True))
            m.member_epoch, m.state = int(value["memberEpoch"]), int(value.get("state", 0))
            m.assignment = _id_partitions(value.get("assignedPartitions"))
        elif record_type == 12:                                # ShareGroupTargetAssignmentMetadata
            group.target_assignment_epoch = -1 if value is None else int(value["assignmentEpoch"])
        elif record_type == 15:                                # ShareGroupStatePartitionMetadata
            group.share_partitions = {str(t["topicId"]): (str(t.get("topicName") or ""),
                                                          tuple(int(p) for p in t.get("partitions") or ()))
                                      for t in (value or {}).get("initializedTopics") or ()}

    def _replay_streams(self, partition: int, record_type: int, key: dict[str, Any],
                        value: dict[str, Any] | None) -> None:
        """The streams-group records (KIP-1071), as ``GroupMetadataManager.replay`` of 4.4 holds them."""
        group_id = str(key["groupId"])
        self.group_partition.setdefault(group_id, partition)
        group = self._modern(group_id, STREAMS, value is not None)
        if group is None:
            return
        member_id = str(key.get("memberId", ""))
        if record_type == 17:                                  # StreamsGroupMetadata
            if value is not None:
                group.generation = int(value["epoch"])
                group.validated_topology_epoch = int(value.get("validatedTopologyEpoch", -1))
                return
            if group.members:
                raise _Refused(f"Received a tombstone record to delete group {group_id} but the group still "
                               f"has {len(group.members)} members.")
            if group.target_assignment_epoch != -1:
                raise _Refused(f"Received a tombstone record to delete group {group_id} but did not receive "
                               "StreamsGroupTargetAssignmentMetadataValue tombstone.")
            del self.groups[group_id]
        elif record_type == 19:                                # StreamsGroupMemberMetadata
            if value is not None:
                m = group.members.setdefault(member_id, Member(member_id))
                m.client_id, m.host = str(value.get("clientId") or ""), str(value.get("clientHost") or "")
                m.instance_id = value.get("instanceId")
                return
            _drop_member(group, member_id, "Streams")
        elif record_type == 20:                                # StreamsGroupTargetAssignmentMetadata
            if value is not None:
                group.target_assignment_epoch = int(value["assignmentEpoch"])
                return
            _drop_target_assignment(group)
        elif record_type == 21:                                # StreamsGroupTargetAssignmentMember
            if value is not None:
                group.target_assignment[member_id] = ()        # tasks, not partitions: not kept
            else:
                group.target_assignment.pop(member_id, None)
        elif record_type == 22:                                # StreamsGroupCurrentMemberAssignment
            if value is not None:
                m = group.members.setdefault(member_id, Member(member_id))
                m.member_epoch, m.state = int(value["memberEpoch"]), int(value["state"])
                return
            old = group.members.get(member_id)
            if old is not None:
                old.member_epoch = LEAVE_GROUP_MEMBER_EPOCH
        else:                                                  # 23: StreamsGroupTopology
            if value is None:
                group.topology_epoch, group.source_topics = None, frozenset()
                return
            group.topology_epoch = int(value["epoch"])
            group.source_topics = frozenset(
                str(t) for s in value.get("subtopologies") or ()
                for t in (*(s.get("sourceTopics") or ()),
                          *(r["name"] for r in s.get("repartitionSourceTopics") or ())))

    # -- questions ------------------------------------------------------------------------------

    def has_pending(self, group: str, topic: str, partition: int) -> bool:
        """``hasPendingTransactionalOffsets``: a transaction of the group holds a commit of it."""
        return any((group, topic, partition) in self.pending.get(pid, {})
                   for pid in self.open_transactions.get(group, ()))


def _drop_member(group: Group, member_id: str, kind: str) -> None:
    """A member's metadata tombstone (``kind``: "Consumer" or "Streams", the records' prefix): Kafka
    refuses it before the member's current and target assignments are gone."""
    old = group.members.get(member_id)
    if old is None:
        return
    if old.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
        raise _Refused(f"Received a tombstone record to delete member {member_id} but did not receive "
                       f"{kind}GroupCurrentMemberAssignmentValue tombstone.")
    if member_id in group.target_assignment:
        raise _Refused(f"Received a tombstone record to delete member {member_id} but did not receive "
                       f"{kind}GroupTargetAssignmentMetadataValue tombstone.")
    del group.members[member_id]


def _drop_target_assignment(group: Group) -> None:
    """A target-assignment metadata tombstone: refused while members still have a target assignment."""
    if group.target_assignment:
        raise _Refused(f"Received a tombstone record to delete target assignment of {group.group_id} but the "
                       f"assignment still has {len(group.target_assignment)} members.")
    group.target_assignment_epoch = -1


# getOrMaybeCreatePersisted*Group's refusals, Kafka's wording (only the consumer one has no period)
_NOT_OF_KIND = {CONSUMER: "Group {} is not a consumer group", STREAMS: "Group {} is not a streams group.",
                SHARE: "Group {} is not a share group."}


class _Refused(Exception):
    """A record the coordinator's replay refuses (its ``IllegalStateException`` text)."""


def _optional(value: Any) -> int | None:
    v = int(value)
    return None if v == -1 else v


def _id_partitions(topics: Iterable[Mapping[str, Any]] | None) -> tuple[tuple[str, int], ...]:
    return tuple((str(t["topicId"]), int(p)) for t in topics or () for p in t.get("partitions") or ())


def offset_expiry(state: CoordinatorState, commit: CommittedOffset, retention_ms: int) -> int | None:
    """When ``commit`` expires by ``cleanupExpiredOffsets``'s rule (ms since the epoch; the
    coordinator deletes it on its first check at or after that time), or None when it does not
    expire while the group stays as loaded: its group has no expiration condition, the group is
    subscribed to the topic, or a transactional commit of the partition is pending."""
    group = state.groups.get(commit.group)
    if group is None:
        group = Group(commit.group, CLASSIC, simple=True)
    base = group.expiration_base(commit)
    if base is None or group.is_subscribed_to(commit.topic) \
            or state.has_pending(commit.group, commit.topic, commit.partition):
        return None
    if commit.expire_timestamp is not None:
        return commit.expire_timestamp
    return base + retention_ms


def replay_partition(partition: int, records: Iterable[tuple[int, int, bool, bytes | None, bytes | None]],
                     state: CoordinatorState | None = None) -> CoordinatorState:
    """Replay the records of ``__consumer_offsets-<partition>`` (``(offset, producerId, isControl,
    key, value)`` in offset order, below the high watermark) into ``state`` (a new one by default).
    A control record's key gives its type (``ControlRecordType.parse``: version, type; 0 ABORT,
    1 COMMIT; others are ignored)."""
    state = CoordinatorState() if state is None else state
    for offset, producer_id, control, key, value in records:
        if control:
            if key is not None and len(key) >= 4:
                kind = int.from_bytes(key[2:4], "big", signed=True)
                if kind in (0, 1):
                    state.end_transaction(producer_id, commit=kind == 1)
            continue
        state.replay(partition, offset, producer_id, key, value)
    return state
