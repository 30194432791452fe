"""The decoded records of ``__consumer_offsets``: frozen dataclasses, one per record schema.

Conventions:

* A record flattens its key fields (``group_id``, ``member_id``, ...) and its value fields
  into one object; ``value_version`` is the version the value was written with.
* Values are Kafka's, unconverted: a field absent from the written version holds its schema
  default (``leader_epoch == -1``, ``expire_ts_ms == -1``, ``topic_id == ZERO_UUID``); only
  nullable fields are ``None``. Times are epoch milliseconds, named ``*_ts_ms``; durations
  ``*_ms``.
* UUIDs are strings in Kafka's text form (22-character URL-safe base64, as the Kafka tools
  print them). Lists are tuples, in wire order.
* Tagged fields read as Kafka reads them: an absent tag gives the default; for nullable
  arrays and structs whose schema default is null, Kafka's generated code actually uses the
  empty list / empty struct, and only an explicit null gives ``None``.
* ``unknown_tags`` keeps tagged fields this schema does not define (flexible versions only).
* Where the Python name differs from the snake case of the Kafka schema field, the field's
  metadata names the Kafka field (``metadata["kafka"]``).

Kafka's record types (4.4.0 ``CoordinatorRecordType``) and the classes they decode to::

    0  LegacyOffsetCommit, 1 OffsetCommit   OffsetCommit / OffsetCommitTombstone
    2  GroupMetadata                        GroupMetadata / GroupMetadataTombstone
    3  ConsumerGroupMetadata                ConsumerGroupMetadata
    4  ConsumerGroupPartitionMetadata       ConsumerGroupPartitionMetadata
    5  ConsumerGroupMemberMetadata          ConsumerGroupMemberMetadata
    6  ConsumerGroupTargetAssignmentMetadata ConsumerGroupTargetAssignmentMetadata
    7  ConsumerGroupTargetAssignmentMember  ConsumerGroupTargetAssignmentMember
    8  ConsumerGroupCurrentMemberAssignment ConsumerGroupCurrentMemberAssignment
    10 ShareGroupMemberMetadata ... 15 ShareGroupStatePartitionMetadata
    16 ConsumerGroupRegularExpression       ConsumerGroupRegularExpression
    17 StreamsGroupMetadata, 19 ... 23 StreamsGroupTopology
    3..23 with a null value                 Tombstone(record_type, key)
    anything else (9, 18, 24+, negative)    Unknown
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

__all__ = [
    "MEMBER_STATES",
    "Assignment",
    "ClassicMemberMetadata",
    "ClassicProtocol",
    "ConsumerGroupCurrentMemberAssignment",
    "ConsumerGroupMemberMetadata",
    "ConsumerGroupMetadata",
    "ConsumerGroupPartitionMetadata",
    "ConsumerGroupRegularExpression",
    "ConsumerGroupTargetAssignmentMember",
    "ConsumerGroupTargetAssignmentMetadata",
    "CooperativeStickyUserData",
    "CopartitionGroup",
    "Endpoint",
    "GroupKey",
    "GroupMetadata",
    "GroupMetadataTombstone",
    "KeyValue",
    "MemberKey",
    "MemberMetadata",
    "OffsetCommit",
    "OffsetCommitTombstone",
    "PartitionRacks",
    "Record",
    "RegularExpressionKey",
    "ShareGroupCurrentMemberAssignment",
    "ShareGroupMemberMetadata",
    "ShareGroupMetadata",
    "ShareGroupStatePartitionMetadata",
    "ShareGroupTargetAssignmentMember",
    "ShareGroupTargetAssignmentMetadata",
    "ShareTopic",
    "ShareTopicPartitions",
    "StickyUserData",
    "StreamsGroupCurrentMemberAssignment",
    "StreamsGroupMemberMetadata",
    "StreamsGroupMetadata",
    "StreamsGroupTargetAssignmentMember",
    "StreamsGroupTargetAssignmentMetadata",
    "StreamsGroupTopology",
    "Subscription",
    "Subtopology",
    "TaggedField",
    "TaskIds",
    "Tombstone",
    "TopicIdPartitions",
    "TopicInfo",
    "TopicMetadata",
    "TopicPartitions",
    "Unknown",
    "fast_init",
]

T = TypeVar("T")

MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}
"""``State`` of consumer/share/streams member assignments (Kafka's ``MemberState``)."""


DERIVED = {"kafka": None}
"""Metadata of a dataclass field with no Kafka schema counterpart (``value_version``, the
decoded consumer-protocol payloads)."""


def fast_init(cls: type[T]) -> Callable[..., T]:
    """A positional constructor of a frozen slots dataclass for the decoders' hot paths.

    The generated ``__init__`` of a frozen dataclass sets each field through
    ``object.__setattr__``, a call per field; this sets the slots directly and builds the
    same, equal object. Every field is a required positional
    argument, in declaration order; no validation, no defaults.
    """
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    params = "".join(f", _s_{n}=_cls.{n}.__set__" for n in names)
    body = "".join(f"    _s_{n}(o, {n})\n" for n in names)
    source = (
        f"def new_{cls.__name__}({', '.join(names)}, _new=object.__new__, _cls=_cls{params}):\n"
        f"    o = _new(_cls)\n{body}    return o\n"
    )
    namespace: dict[str, Any] = {"_cls": cls}
    exec(source, namespace)
    factory: Callable[..., T] = namespace[f"new_{cls.__name__}"]
    return factory


_NO_TAGS: tuple[TaggedField, ...] = ()


@dataclass(frozen=True, slots=True)
class TaggedField:
    """A tagged field the schema does not define, kept raw."""

    tag: int
    data: bytes


# -- shared structs --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    """Partitions of one topic, by name (consumer protocol, sticky user data)."""

    topic: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicIdPartitions:
    """Partitions of one topic, by id (KIP-848 and share assignments)."""

    topic_id: str
    partitions: tuple[int, ...]
    assignment_epochs: tuple[int, ...] | None = None
    """Record type 8 only (tag 0): epoch at which each partition was assigned; () when the tag
    is absent (Kafka's reading), None only when written as null. None for types 7, 13, 14."""
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


# -- consumer protocol (embedded in GroupMetadata) ------------------------------------------


@dataclass(frozen=True, slots=True)
class StickyUserData:
    """``sticky`` (eager StickyAssignor) subscription user data.

    ``schema_version`` is 1 (with generation), 0 (without), or -1 when neither schema parses;
    then, as in Java, there are no partitions and the generation is -1.
    """

    schema_version: int
    previous_assignment: tuple[TopicPartitions, ...]
    generation: int | None


@dataclass(frozen=True, slots=True)
class CooperativeStickyUserData:
    """``cooperative-sticky`` subscription user data: one int32 generation.

    ``parsed`` is False when the user data is shorter than 4 bytes; Java then reads -1.
    """

    generation: int
    parsed: bool


@dataclass(frozen=True, slots=True)
class Subscription:
    """ConsumerProtocolSubscription (v0-v3; later versions are read as v3)."""

    version: int = field(metadata=DERIVED)
    """The version as written (may exceed 3)."""
    topics: tuple[str, ...] = field()
    user_data: bytes | None = field()
    owned_partitions: tuple[TopicPartitions, ...] = field()
    generation_id: int = field()
    rack_id: str | None = field()
    assignor_data: StickyUserData | CooperativeStickyUserData | None = field(metadata=DERIVED)
    """The user data decoded for the group's selected protocol (``sticky`` or
    ``cooperative-sticky``); None for other protocols and when the user data is null (or,
    for ``sticky``, empty)."""


@dataclass(frozen=True, slots=True)
class Assignment:
    """ConsumerProtocolAssignment (v0-v3; later versions are read as v3)."""

    version: int = field(metadata=DERIVED)
    assigned_partitions: tuple[TopicPartitions, ...] = field()
    user_data: bytes | None = field()


# -- keys ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupKey:
    """Key of the per-group records (types 3, 4, 6, 11, 12, 15, 17, 20, 23)."""

    group_id: str


@dataclass(frozen=True, slots=True)
class MemberKey:
    """Key of the per-member records (types 5, 7, 8, 10, 13, 14, 19, 21, 22)."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class RegularExpressionKey:
    """Key of type 16."""

    group_id: str
    regular_expression: str


# -- offsets and classic groups (types 0, 1, 2) ---------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """A committed offset (types 0 and 1; transactional commits look the same)."""

    record_type: int = field(metadata=DERIVED)
    group_id: str = field(metadata={"kafka": "group"})
    topic: str = field()
    partition: int = field()
    value_version: int = field(metadata=DERIVED)
    offset: int = field()
    leader_epoch: int = field()
    """-1 when unknown or not in the written version (v0-v2)."""
    metadata: str = field()
    commit_ts_ms: int = field(metadata={"kafka": "commitTimestamp"})
    expire_ts_ms: int = field(metadata={"kafka": "expireTimestamp"})
    """Only written in v1; -1 otherwise."""
    topic_id: str = field()
    """v4 tag 0; ZERO_UUID when absent."""
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class OffsetCommitTombstone:
    """The committed offset of (group, topic, partition) was deleted."""

    record_type: int = field(metadata=DERIVED)
    group_id: str = field(metadata={"kafka": "group"})
    topic: str = field()
    partition: int = field()


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """A classic group member. ``subscription``/``assignment`` hold the decoded consumer
    protocol when the group's protocol type is ``consumer``; ``*_bytes`` hold the raw payload
    otherwise (and when it is empty: members without an assignment store zero bytes)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int = field(metadata={"kafka": "rebalanceTimeout"})
    """-1 in v0 (Kafka then uses the session timeout)."""
    session_timeout_ms: int = field(metadata={"kafka": "sessionTimeout"})
    subscription: Subscription | None = field(metadata=DERIVED)
    assignment: Assignment | None = field(metadata=DERIVED)
    subscription_bytes: bytes | None = field(metadata={"kafka": "subscription"})
    assignment_bytes: bytes | None = field(metadata={"kafka": "assignment"})
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    """A classic group (type 2): generation, protocol, leader and members."""

    record_type: ClassVar[int] = 2
    group_id: str = field(metadata={"kafka": "group"})
    value_version: int = field(metadata=DERIVED)
    protocol_type: str = field()
    generation: int = field()
    protocol: str | None = field()
    leader: str | None = field()
    current_state_ts_ms: int = field(metadata={"kafka": "currentStateTimestamp"})
    """-1 in v0/v1 or when unknown."""
    members: tuple[MemberMetadata, ...] = field()
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class GroupMetadataTombstone:
    """The classic group was removed (deleted, expired or converted to a consumer group)."""

    record_type: ClassVar[int] = 2
    group_id: str = field(metadata={"kafka": "group"})


# -- KIP-848 consumer groups (types 3-8, 16) ------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    record_type: ClassVar[int] = 3
    group_id: str
    value_version: int = field(metadata=DERIVED)
    epoch: int = field()
    metadata_hash: int = field()
    """Tag 0 (KIP-1101, 4.1+); 0 when absent."""
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class PartitionRacks:
    partition: int
    racks: tuple[str, ...]
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    topic_id: str
    topic_name: str
    num_partitions: int
    partition_metadata: tuple[PartitionRacks, ...]
    """Deprecated after 4.0 (written empty)."""
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadata:
    """Type 4, replaced by ``ConsumerGroupMetadata.metadata_hash`` in 4.1 (still decoded)."""

    record_type: ClassVar[int] = 4
    group_id: str
    value_version: int = field(metadata=DERIVED)
    topics: tuple[TopicMetadata, ...] = field()
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class ClassicProtocol:
    name: str
    metadata: bytes
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """A member using the classic JoinGroup protocol inside a consumer group."""

    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...]
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadata:
    record_type: ClassVar[int] = 5
    group_id: str
    member_id: str
    value_version: int = field(metadata=DERIVED)
    instance_id: str | None = field()
    rack_id: str | None = field()
    client_id: str = field()
    client_host: str = field()
    subscribed_topic_names: tuple[str, ...] = field()
    subscribed_topic_regex: str | None = field()
    rebalance_timeout_ms: int = field()
    server_assignor: str | None = field()
    classic_member_metadata: ClassicMemberMetadata | None = field()
    """Tag 0; None (written as an explicit null) for members using the consumer protocol.
    As in Kafka, an absent tag reads as the empty default ``ClassicMemberMetadata(0, ())``."""
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadata:
    record_type: ClassVar[int] = 6
    group_id: str
    value_version: int = field(metadata=DERIVED)
    assignment_epoch: int = field()
    assignment_ts_ms: int = field(metadata={"kafka": "assignmentTimestamp"})
    """Tag 0 (KIP-1263, 4.3+); 0 when absent."""
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMember:
    record_type: ClassVar[int] = 7
    group_id: str
    member_id: str
    value_version: int = field(metadata=DERIVED)
    topic_partitions: tuple[TopicIdPartitions, ...] = field()
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignment:
    record_type: ClassVar[int] = 8
    group_id: str
    member_id: str
    value_version: int = field(metadata=DERIVED)
    member_epoch: int = field()
    previous_member_epoch: int = field()
    state: int = field()
    """See ``MEMBER_STATES``."""
    assigned_partitions: tuple[TopicIdPartitions, ...] = field()
    partitions_pending_revocation: tuple[TopicIdPartitions, ...] = field()
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpression:
    """A resolved subscription regex (type 16)."""

    record_type: ClassVar[int] = 16
    group_id: str
    regular_expression: str
    value_version: int = field(metadata=DERIVED)
    topics: tuple[str, ...] = field()
    metadata_image_version: int = field(metadata={"kafka": "version"})
    """Version of the metadata image the regex was resolved against."""
    resolved_ts_ms: int = field(metadata={"kafka": "timestamp"})
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


# -- share groups (types 10-15) --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadata:
    record_type: ClassVar[int] = 10
    group_id: str
    member_id: str
    value_version: int = field(metadata=DERIVED)
    rack_id: str | None = field()
    client_id: str = field()
    client_host: str = field()
    subscribed_topic_names: tuple[str, ...] = field()
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class ShareGroupMetadata:
    record_type: ClassVar[int] = 11
    group_id: str
    value_version: int = field(metadata=DERIVED)
    epoch: int = field()
    metadata_hash: int = field()
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMetadata:
    record_type: ClassVar[int] = 12
    group_id: str
    value_version: int = field(metadata=DERIVED)
    assignment_epoch: int = field()
    assignment_ts_ms: int = field(metadata={"kafka": "assignmentTimestamp"})
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMember:
    record_type: ClassVar[int] = 13
    group_id: str
    member_id: str
    value_version: int = field(metadata=DERIVED)
    topic_partitions: tuple[TopicIdPartitions, ...] = field()
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignment:
    record_type: ClassVar[int] = 14
    group_id: str
    member_id: str
    value_version: int = field(metadata=DERIVED)
    member_epoch: int = field()
    previous_member_epoch: int = field()
    state: int = field()
    assigned_partitions: tuple[TopicIdPartitions, ...] = field()
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class ShareTopicPartitions:
    topic_id: str
    topic_name: str
    partitions: tuple[int, ...]
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class ShareTopic:
    topic_id: str
    topic_name: str
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadata:
    record_type: ClassVar[int] = 15
    group_id: str
    value_version: int = field(metadata=DERIVED)
    initializing_topics: tuple[ShareTopicPartitions, ...] = field()
    initialized_topics: tuple[ShareTopicPartitions, ...] = field()
    deleting_topics: tuple[ShareTopic, ...] = field()
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


# -- streams groups (types 17, 19-23) -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: str
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class StreamsGroupMetadata:
    record_type: ClassVar[int] = 17
    group_id: str
    value_version: int = field(metadata=DERIVED)
    epoch: int = field()
    metadata_hash: int = field()
    validated_topology_epoch: int = field()
    """Tag 0; -1 when absent."""
    last_assignment_configs: tuple[KeyValue, ...] | None = field()
    """Tag 1; () when absent (Kafka's reading), None when written as null."""
    stored_description_topology_epoch: int = field()
    """Tag 2; -1 when absent."""
    failed_description_topology_epoch: int = field()
    """Tag 3; -1 when absent."""
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class StreamsGroupMemberMetadata:
    record_type: ClassVar[int] = 19
    group_id: str
    member_id: str
    value_version: int = field(metadata=DERIVED)
    instance_id: str | None = field()
    rack_id: str | None = field()
    client_id: str = field()
    client_host: str = field()
    rebalance_timeout_ms: int = field()
    topology_epoch: int = field()
    process_id: str = field()
    user_endpoint: Endpoint | None = field()
    client_tags: tuple[KeyValue, ...] = field()
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class StreamsGroupTargetAssignmentMetadata:
    record_type: ClassVar[int] = 20
    group_id: str
    value_version: int = field(metadata=DERIVED)
    assignment_epoch: int = field()
    assignment_ts_ms: int = field(metadata={"kafka": "assignmentTimestamp"})
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class TaskIds:
    subtopology_id: str
    partitions: tuple[int, ...]
    assignment_epochs: tuple[int, ...] | None = None
    """Record type 22 only (tag 0); () when the tag is absent, None when written as null.
    None for type 21."""
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class StreamsGroupTargetAssignmentMember:
    record_type: ClassVar[int] = 21
    group_id: str
    member_id: str
    value_version: int = field(metadata=DERIVED)
    active_tasks: tuple[TaskIds, ...] = field()
    standby_tasks: tuple[TaskIds, ...] = field()
    warmup_tasks: tuple[TaskIds, ...] = field()
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class StreamsGroupCurrentMemberAssignment:
    record_type: ClassVar[int] = 22
    group_id: str
    member_id: str
    value_version: int = field(metadata=DERIVED)
    member_epoch: int = field()
    previous_member_epoch: int = field()
    state: int = field()
    active_tasks: tuple[TaskIds, ...] = field()
    standby_tasks: tuple[TaskIds, ...] = field()
    warmup_tasks: tuple[TaskIds, ...] = field()
    active_tasks_pending_revocation: tuple[TaskIds, ...] = field()
    standby_tasks_pending_revocation: tuple[TaskIds, ...] = field()
    warmup_tasks_pending_revocation: tuple[TaskIds, ...] = field()
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    partitions: int
    replication_factor: int
    topic_configs: tuple[KeyValue, ...]
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class CopartitionGroup:
    """Indexes into the subtopology's topic lists."""

    source_topics: tuple[int, ...]
    source_topic_regex: tuple[int, ...]
    repartition_source_topics: tuple[int, ...]
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]
    source_topic_regex: tuple[str, ...]
    state_changelog_topics: tuple[TopicInfo, ...]
    repartition_sink_topics: tuple[str, ...]
    repartition_source_topics: tuple[TopicInfo, ...]
    copartition_groups: tuple[CopartitionGroup, ...]
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


@dataclass(frozen=True, slots=True)
class StreamsGroupTopology:
    record_type: ClassVar[int] = 23
    group_id: str
    value_version: int = field(metadata=DERIVED)
    epoch: int = field()
    subtopologies: tuple[Subtopology, ...] = field()
    unknown_tags: tuple[TaggedField, ...] = _NO_TAGS


# -- tombstones and unknown records ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tombstone:
    """A null value for record types 3-23: the keyed entity was removed."""

    record_type: int = field(metadata=DERIVED)
    key: GroupKey | MemberKey | RegularExpressionKey


@dataclass(frozen=True, slots=True)
class Unknown:
    """A record type or value version this codec (like Kafka 4.4.0) does not know; raw bytes.

    ``value_version`` is None for tombstones and when the type itself is unknown.
    """

    record_type: int
    value_version: int | None
    key: bytes
    value: bytes | None
    reason: str


Record = (
    OffsetCommit
    | OffsetCommitTombstone
    | GroupMetadata
    | GroupMetadataTombstone
    | ConsumerGroupMetadata
    | ConsumerGroupPartitionMetadata
    | ConsumerGroupMemberMetadata
    | ConsumerGroupTargetAssignmentMetadata
    | ConsumerGroupTargetAssignmentMember
    | ConsumerGroupCurrentMemberAssignment
    | ConsumerGroupRegularExpression
    | ShareGroupMemberMetadata
    | ShareGroupMetadata
    | ShareGroupTargetAssignmentMetadata
    | ShareGroupTargetAssignmentMember
    | ShareGroupCurrentMemberAssignment
    | ShareGroupStatePartitionMetadata
    | StreamsGroupMetadata
    | StreamsGroupMemberMetadata
    | StreamsGroupTargetAssignmentMetadata
    | StreamsGroupTargetAssignmentMember
    | StreamsGroupCurrentMemberAssignment
    | StreamsGroupTopology
    | Tombstone
    | Unknown
)
"""Everything :func:`streaming.codec.decode_record` returns."""
