"""The tracker's input: one typed envelope per observation, and the collector's events.

An :class:`Observation` is one Kafka record the Spark job read, from one of two sources:

* ``offsets``: a record of ``__consumer_offsets``, decoded by :mod:`streaming.codec`
  (``payload`` is a codec :data:`~streaming.codec.model.Record`);
* ``membership``: a record of the collector's membership topic, parsed by
  :func:`streaming.tracking.membership.parse_membership_event` (``payload`` is a
  :class:`GroupSnapshot`, a :class:`TopicsSnapshot` or an :class:`UnsupportedEvent`).

``partition``/``offset`` locate the record in its topic (they make re-applied records
recognisable); ``timestamp_ms`` is the Kafka record timestamp (for ``__consumer_offsets``
the broker's append time). The collector's events are frozen dataclasses mirroring
``docs/events.md`` field by field (schema version 1); lists are tuples, partitions are
:class:`~assign_core.model.TopicPartition`.

Routing (what the Spark adapter keys observations by): :func:`routing_keys` gives the group
ids an observation belongs to: the record's group for ``__consumer_offsets`` records and
``group`` and ``heartbeat`` events, and every group it names (``group_ids``) for the
cluster-wide ``topics``, ``end_offsets`` and ``poll`` events (:data:`FAN_OUT`), which reach
each of them (see ``docs/tracking.md``, *The adapter's contract*).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple, get_args

from assign_core.model import TopicPartition
from streaming.codec.model import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupRegularExpression,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    GroupMetadata,
    GroupMetadataTombstone,
    MemberKey,
    OffsetCommit,
    OffsetCommitTombstone,
    Record,
    RegularExpressionKey,
    Tombstone,
    Unknown,
)
from streaming.tracking.errors import ObservationError

__all__ = [
    "FAN_OUT",
    "KIP848_RECORDS",
    "KIP848_TOMBSTONE_TYPES",
    "CollectorIssue",
    "CommitRun",
    "CommitRuns",
    "EndOffsetsSnapshot",
    "GroupHeartbeat",
    "GroupSeen",
    "GroupSnapshot",
    "GroupsPolled",
    "MembershipPayload",
    "Observation",
    "Payload",
    "SnapshotBroker",
    "SnapshotMember",
    "SnapshotOffset",
    "SnapshotPartition",
    "SnapshotTopic",
    "Source",
    "TopicsSnapshot",
    "UnsupportedEvent",
    "group_id_of",
    "routing_keys",
]

Source = Literal["offsets", "membership"]


# -- the collector's events (docs/events.md, schema version 1) ------------------------------


@dataclass(frozen=True, slots=True)
class CollectorIssue:
    """An admin call that failed (the events' ``errors`` entries)."""

    stage: str
    message: str
    group_id: str | None
    topic: str | None


@dataclass(frozen=True, slots=True)
class SnapshotMember:
    """A classic-protocol member as DescribeGroups reported it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topics: tuple[str, ...] | None
    owned_partitions: tuple[TopicPartition, ...] | None
    subscription_generation_id: int | None
    assignment: tuple[TopicPartition, ...] | None
    assigned_partition_count: int | None


@dataclass(frozen=True, slots=True)
class SnapshotOffset:
    """A committed offset as OffsetFetch reported it, with the snapshot's end offset."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int | None
    metadata: str | None
    end_offset: int | None
    lag: int | None


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """A ``group`` event: one group as one collector snapshot saw it."""

    cluster: str
    kafka_cluster_id: str | None
    snapshot_id: str
    snapshot_ts_ms: int
    errors: tuple[CollectorIssue, ...]
    group_id: str
    group_type: str | None
    protocol_type: str | None
    state: str | None
    protocol_name: str | None
    membership_source: str
    member_count: int | None
    members: tuple[SnapshotMember, ...] | None
    topics: tuple[str, ...]
    committed_offsets: tuple[SnapshotOffset, ...] | None
    schema_version: int = 1
    session_timeout_ms: int | None = None
    """KIP-848 groups: the group's effective ``consumer.session.timeout.ms`` (DescribeConfigs
    of the group; the broker's ``group.consumer.session.timeout.ms`` unless the group sets
    it); None when the collector could not tell."""
    digest: str | None = None
    """Schema version 2: the hash of the content, which the group's heartbeats name."""
    previous_poll_ts_ms: int | None = None
    """Schema version 2: the poll before this one, which found the group with content
    ``previous_digest`` (None: new to the collector)."""
    previous_digest: str | None = None


@dataclass(frozen=True, slots=True)
class GroupHeartbeat:
    """A ``heartbeat`` event (schema version 2): the group was polled at ``snapshot_ts_ms``
    and looked as its ``group`` event with ``digest`` said."""

    cluster: str
    kafka_cluster_id: str | None
    snapshot_id: str
    snapshot_ts_ms: int
    group_id: str
    state: str | None
    digest: str
    errors: tuple[CollectorIssue, ...] = ()
    schema_version: int = 2


@dataclass(frozen=True, slots=True)
class GroupsPolled:
    """A ``poll`` event (schema version 2): at ``snapshot_ts_ms`` the collector found these
    groups as their newest ``group`` event described them. The tracker applies it to each
    as version 1's snapshot of the same content would be."""

    cluster: str
    kafka_cluster_id: str | None
    snapshot_id: str
    snapshot_ts_ms: int
    group_ids: tuple[str, ...]
    errors: tuple[CollectorIssue, ...] = ()
    schema_version: int = 2


@dataclass(frozen=True, slots=True)
class GroupSeen:
    """One collector poll that found the group unchanged (a heartbeat, or a ``poll`` event
    naming it), as the reducer applies it: as version 1's snapshot of the same content at
    ``ts_ms`` would be. ``digest`` None: the content the tracker holds."""

    group_id: str
    ts_ms: int
    state: str | None
    digest: str | None


@dataclass(frozen=True, slots=True)
class EndOffsetsSnapshot:
    """An ``end_offsets`` event (schema version 2): ``offsets`` ``(topic, partition, end
    offset)`` read at ``end_offsets_ts_ms``, and ``moves`` ``(topic, partition, change)``:
    the end offset less the one as of ``previous_end_offsets_ts_ms`` (the collector's
    previous event); unless ``full``, every other partition the tracker knows kept its end
    offset, except on the topics named by ``errors``. A chunk of the event
    (``covered_topics`` not None) is about its covered topics only: the other partitions
    are another chunk's."""

    cluster: str
    kafka_cluster_id: str | None
    snapshot_id: str
    snapshot_ts_ms: int
    errors: tuple[CollectorIssue, ...]
    group_ids: tuple[str, ...]
    end_offsets_ts_ms: int
    full: bool
    offsets: tuple[tuple[str, int, int], ...]
    schema_version: int = 2
    covered_topics: frozenset[str] | None = None
    moves: tuple[tuple[str, int, int], ...] = ()
    previous_end_offsets_ts_ms: int | None = None


@dataclass(frozen=True, slots=True)
class SnapshotBroker:
    broker_id: int
    host: str
    port: int
    rack: str | None
    is_fenced: bool | None


@dataclass(frozen=True, slots=True)
class SnapshotPartition:
    partition: int
    leader_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    replica_racks: tuple[str | None, ...]
    end_offset: int | None


@dataclass(frozen=True, slots=True)
class SnapshotTopic:
    topic: str
    topic_id: str | None
    is_internal: bool | None
    partition_count: int | None
    error: str | None
    partitions: tuple[SnapshotPartition, ...]


@dataclass(frozen=True, slots=True)
class TopicsSnapshot:
    """A ``topics`` event: the topics the snapshot's groups touch, with end offsets."""

    cluster: str
    kafka_cluster_id: str | None
    snapshot_id: str
    snapshot_ts_ms: int
    errors: tuple[CollectorIssue, ...]
    group_ids: tuple[str, ...]
    controller_id: int | None
    brokers: tuple[SnapshotBroker, ...]
    end_offsets_ts_ms: int | None
    topics: tuple[SnapshotTopic, ...]
    schema_version: int = 1


@dataclass(frozen=True, slots=True)
class UnsupportedEvent:
    """A membership event the tracker skips: unknown ``schema_version`` or ``event_type``."""

    schema_version: int | None
    event_type: str | None
    reason: str


MembershipPayload = (
    GroupSnapshot
    | GroupHeartbeat
    | GroupsPolled
    | TopicsSnapshot
    | EndOffsetsSnapshot
    | UnsupportedEvent
)


@dataclass(frozen=True, slots=True)
class CommitRun:
    """Consecutive offset commits of one partition of one group, as the commit lane hands
    them to the tracker (:mod:`streaming.spark.decode`): applying the run equals applying
    its commits one by one. The observation carrying it is located at the run's last record
    (source partition, offset, timestamp).

    ``history``: the last commits of the run, ``(commit_ts_ms, offset)``, oldest first (at
    most the tracker's ``commit_history``); ``count``: how many commits the run had;
    ``topic_id``: the last commit's (value v4, tag 0; the zero id when absent);
    ``metadata``, ``expire_ts_ms``: the last commit's (the ``offset_commits`` row the tracker
    keeps of it, -1: no expire time)."""

    group_id: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    commit_ts_ms: int
    count: int
    history: tuple[tuple[int, int], ...]
    topic_id: str = "AAAAAAAAAAAAAAAAAAAAAA"
    metadata: str | None = None
    expire_ts_ms: int = -1


Payload = Record | CommitRun | MembershipPayload

#: CommitRun first: most observations carry one (``isinstance`` tries the types in order).
_RECORD_TYPES: tuple[type, ...] = (CommitRun, *get_args(Record))

#: The records of a KIP-848 consumer group (types 3-8, 16), tombstones aside.
KIP848_RECORDS: tuple[type, ...] = (
    ConsumerGroupMetadata,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupMemberMetadata,
    ConsumerGroupTargetAssignmentMetadata,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupRegularExpression,
)
#: Tombstone record types of a KIP-848 consumer group.
KIP848_TOMBSTONE_TYPES = frozenset({3, 4, 5, 6, 7, 8, 16})
_MEMBERSHIP_TYPES: tuple[type, ...] = get_args(MembershipPayload)


# -- the envelope ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Observation:
    """One record read by the job: where it was read, when, and what it says."""

    source: Source
    partition: int
    offset: int
    timestamp_ms: int
    payload: Payload

    def __post_init__(self) -> None:
        if self.source == "offsets":
            if not isinstance(self.payload, _RECORD_TYPES):
                raise ObservationError(
                    f"an 'offsets' observation carries a codec record, "
                    f"got {type(self.payload).__name__}"
                )
        elif self.source == "membership":
            if not isinstance(self.payload, _MEMBERSHIP_TYPES):
                raise ObservationError(
                    f"a 'membership' observation carries a parsed membership event, "
                    f"got {type(self.payload).__name__}"
                )
        else:
            raise ObservationError(
                f"source: expected 'offsets' or 'membership', got {self.source!r}"
            )

    @property
    def logical_ts_ms(self) -> int:
        """The time the observation describes: the snapshot time of a collector event (taken
        before it was published), else the record timestamp."""
        if self.source == "offsets":  # a codec record: its time is the record's
            return self.timestamp_ms
        p = self.payload
        if isinstance(
            p, GroupSnapshot | TopicsSnapshot | GroupHeartbeat | GroupsPolled | EndOffsetsSnapshot
        ):
            return p.snapshot_ts_ms
        return self.timestamp_ms


class CommitRuns(NamedTuple):
    """The runs of one group in one ``CommitRun`` row of the decode stage
    (:func:`streaming.spark.decode.decode_batch`), as columns: an element per run, located
    at ``source_offset`` and ``timestamp_ms`` of ``__consumer_offsets`` partition
    ``source_partition``. The stateful step keeps a group's runs so until it knows the group
    must go to the reducer (:meth:`observations`); a group whose runs are all quiet is
    folded from the columns (:func:`streaming.tracking.fold.fold_encoded`), with no object
    per run."""

    group_id: str
    source_partition: int
    topic: list[str]
    partition: list[int]
    offset: list[int]
    leader_epoch: list[int]
    commit_ts_ms: list[int]
    commit_count: list[int]
    history_ts_ms: list[list[int]]
    history_offsets: list[list[int]]
    topic_id: list[str]
    metadata: list[str | None]
    expire_ts_ms: list[int]
    source_offset: list[int]
    timestamp_ms: list[int]

    def observations(self) -> list[Observation]:
        """A :class:`CommitRun` observation per run."""
        group, at = self.group_id, self.source_partition
        return [
            Observation(
                "offsets",
                at,
                at_offset,
                at_ts,
                CommitRun(group, t, p, o, e, c, n, tuple(zip(hts, hos, strict=True)), i, m, x),
            )
            for t, p, o, e, c, n, hts, hos, i, m, x, at_offset, at_ts in zip(*self[2:], strict=True)
        ]


def group_id_of(payload: Payload) -> str | None:
    """The group a record or group event is about; None for ``topics`` events, unknown
    records and unsupported events."""
    if isinstance(
        payload,
        OffsetCommit | OffsetCommitTombstone | CommitRun | GroupMetadata | GroupMetadataTombstone,
    ):
        return payload.group_id
    if isinstance(payload, Tombstone):
        key = payload.key
        return key.group_id
    if isinstance(payload, GroupSnapshot | GroupHeartbeat):
        return payload.group_id
    if isinstance(
        payload, Unknown | TopicsSnapshot | EndOffsetsSnapshot | GroupsPolled | UnsupportedEvent
    ):
        return None
    group_id: str = payload.group_id
    return group_id


#: The collector's cluster-wide events: each names many groups (``group_ids``) and reaches
#: each of them (:func:`routing_keys`).
FAN_OUT = (TopicsSnapshot, EndOffsetsSnapshot, GroupsPolled)


def routing_keys(payload: Payload) -> tuple[str, ...]:
    """The group ids whose state an observation must reach (see the module docstring)."""
    if isinstance(payload, FAN_OUT):
        return payload.group_ids
    group_id = group_id_of(payload)
    return () if group_id is None else (group_id,)


def member_id_of(payload: Payload) -> str | None:
    """The member a KIP-848 member record (or its tombstone) is about."""
    if isinstance(payload, Tombstone):
        key = payload.key
        if isinstance(key, MemberKey):
            return key.member_id
        return None
    member_id = getattr(payload, "member_id", None)
    return member_id if isinstance(member_id, str) else None


def regex_of(payload: Payload) -> str | None:
    """The regular expression of a type-16 tombstone."""
    if isinstance(payload, Tombstone) and isinstance(payload.key, RegularExpressionKey):
        return payload.key.regular_expression
    return None
