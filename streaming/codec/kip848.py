"""KIP-848 consumer-group records (types 3-8 and 16), value version 0, flexible encoding.

Shapes as Kafka 4.4.0 defines them (``group-coordinator`` message JSON)::

    3  ConsumerGroupMetadataValue            Epoch i32; tag 0 MetadataHash i64 (default 0)
    4  ConsumerGroupPartitionMetadataValue   Topics []{TopicId uuid, TopicName str,
                                             NumPartitions i32, PartitionMetadata []{
                                             Partition i32, Racks []str}}
    5  ConsumerGroupMemberMetadataValue      InstanceId str?, RackId str?, ClientId str,
                                             ClientHost str, SubscribedTopicNames []str,
                                             SubscribedTopicRegex str?, RebalanceTimeoutMs i32,
                                             ServerAssignor str?; tag 0 ClassicMemberMetadata?
                                             {SessionTimeoutMs i32, SupportedProtocols []{
                                             Name str, Metadata bytes}}
    6  ConsumerGroupTargetAssignmentMetadataValue  AssignmentEpoch i32;
                                             tag 0 AssignmentTimestamp i64 (default 0)
    7  ConsumerGroupTargetAssignmentMemberValue    TopicPartitions []{TopicId, Partitions []i32}
    8  ConsumerGroupCurrentMemberAssignmentValue   MemberEpoch i32, PreviousMemberEpoch i32,
                                             State i8, AssignedPartitions []TopicPartitions,
                                             PartitionsPendingRevocation []TopicPartitions;
                                             TopicPartitions = {TopicId, Partitions []i32;
                                             tag 0 AssignmentEpochs []i32? (default null)}
    16 ConsumerGroupRegularExpressionValue   Topics []str, Version i64, Timestamp i64

A tagged nullable struct's payload starts with a uvarint marker (0 = null). As in Kafka, an
absent ClassicMemberMetadata / AssignmentEpochs tag reads as the empty struct / list (the
generated code's default), not null; the coordinator writes an explicit null. A known tag's
payload must be exactly its declared size (Kafka does not check; we refuse the mismatch).
Kafka 3.7 (KIP-848 early access) wrote different shapes under the same version 0; such
records fail to decode here, as they do in Kafka 3.8+.

Example, type 6 with AssignmentEpoch 7 and no tagged fields::

    key   0006 0002 6731          value 0000 00000007 00
"""

from __future__ import annotations

from streaming.codec.model import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupRegularExpression,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    GroupKey,
    MemberKey,
    PartitionRacks,
    RegularExpressionKey,
    TaggedField,
    TopicIdPartitions,
    TopicMetadata,
)
from streaming.codec.reader import Reader

__all__ = [
    "decode_consumer_group_current_member_assignment_value_v0",
    "decode_consumer_group_member_metadata_value_v0",
    "decode_consumer_group_metadata_value_v0",
    "decode_consumer_group_partition_metadata_value_v0",
    "decode_consumer_group_regular_expression_value_v0",
    "decode_consumer_group_target_assignment_member_value_v0",
    "decode_consumer_group_target_assignment_metadata_value_v0",
    "read_epoch_and_timestamp",
    "read_topic_id_partitions",
]


# -- shared structs ---------------------------------------------------------------------------


def read_topic_id_partitions(r: Reader) -> TopicIdPartitions:
    """{TopicId uuid, Partitions []int32} with no tags defined (types 7, 13, 14)."""
    topic_id = r.uuid("topic_id")
    partitions = r.compact_int32_array("partitions")
    return TopicIdPartitions(topic_id, partitions, None, r.unknown_tags())


def _topic_partitions_with_epochs(r: Reader) -> TopicIdPartitions:
    """Type 8's TopicPartitions: tag 0 is AssignmentEpochs (nullable []int32, absent = [])."""
    topic_id = r.uuid("topic_id")
    partitions = r.compact_int32_array("partitions")
    epochs: tuple[int, ...] | None = ()
    unknown: list[TaggedField] = []
    for tag, start, stop in r.tagged_fields():
        if tag == 0:
            sub = r.sub(start, stop)
            epochs = sub.compact_nullable_int32_array("assignment_epochs")
            sub.done("assignment_epochs")
        else:
            unknown.append(TaggedField(tag, r.buf[start:stop]))
    return TopicIdPartitions(topic_id, partitions, epochs, tuple(unknown))


def read_epoch_and_timestamp(r: Reader) -> tuple[int, int, tuple[TaggedField, ...]]:
    """AssignmentEpoch i32; tag 0 AssignmentTimestamp i64 (types 6, 12, 20)."""
    epoch = r.int32("assignment_epoch")
    timestamp = 0
    unknown: list[TaggedField] = []
    for tag, start, stop in r.tagged_fields():
        if tag == 0:
            sub = r.sub(start, stop)
            timestamp = sub.int64("assignment_ts_ms")
            sub.done("assignment_ts_ms")
        else:
            unknown.append(TaggedField(tag, r.buf[start:stop]))
    return epoch, timestamp, tuple(unknown)


def _partition_racks(r: Reader) -> PartitionRacks:
    partition = r.int32("partition")
    racks = r.compact_string_array("racks")
    return PartitionRacks(partition, racks, r.unknown_tags())


def _topic_metadata(r: Reader) -> TopicMetadata:
    topic_id = r.uuid("topic_id")
    topic_name = r.compact_string("topic_name")
    num_partitions = r.int32("num_partitions")
    partition_metadata = r.compact_structs("partition_metadata", _partition_racks)
    return TopicMetadata(topic_id, topic_name, num_partitions, partition_metadata, r.unknown_tags())


def _classic_protocol(r: Reader) -> ClassicProtocol:
    name = r.compact_string("name")
    metadata = r.compact_bytes("metadata")
    return ClassicProtocol(name, metadata, r.unknown_tags())


def _classic_member_metadata(r: Reader) -> ClassicMemberMetadata | None:
    """Tagged nullable struct: uvarint marker (0 = null), then the struct."""
    if r.uvarint("classic_member_metadata") == 0:
        return None
    session_timeout = r.int32("session_timeout_ms")
    protocols = r.compact_structs("supported_protocols", _classic_protocol)
    return ClassicMemberMetadata(session_timeout, protocols, r.unknown_tags())


_EMPTY_CLASSIC_MEMBER_METADATA = ClassicMemberMetadata(0, ())
"""What Kafka reads when tag 0 is absent (its generated default, not null)."""


# -- values -----------------------------------------------------------------------------------


def decode_consumer_group_metadata_value_v0(key: GroupKey, buf: bytes) -> ConsumerGroupMetadata:
    r = Reader(buf, 2)
    epoch = r.int32("epoch")
    metadata_hash = 0
    unknown: list[TaggedField] = []
    for tag, start, stop in r.tagged_fields():
        if tag == 0:
            sub = r.sub(start, stop)
            metadata_hash = sub.int64("metadata_hash")
            sub.done("metadata_hash")
        else:
            unknown.append(TaggedField(tag, buf[start:stop]))
    return ConsumerGroupMetadata(key.group_id, 0, epoch, metadata_hash, tuple(unknown))


def decode_consumer_group_partition_metadata_value_v0(
    key: GroupKey, buf: bytes
) -> ConsumerGroupPartitionMetadata:
    r = Reader(buf, 2)
    topics = r.compact_structs("topics", _topic_metadata)
    return ConsumerGroupPartitionMetadata(key.group_id, 0, topics, r.unknown_tags())


def decode_consumer_group_member_metadata_value_v0(
    key: MemberKey, buf: bytes
) -> ConsumerGroupMemberMetadata:
    r = Reader(buf, 2)
    instance_id = r.compact_nullable_string("instance_id")
    rack_id = r.compact_nullable_string("rack_id")
    client_id = r.compact_string("client_id")
    client_host = r.compact_string("client_host")
    topic_names = r.compact_string_array("subscribed_topic_names")
    topic_regex = r.compact_nullable_string("subscribed_topic_regex")
    rebalance_timeout = r.int32("rebalance_timeout_ms")
    server_assignor = r.compact_nullable_string("server_assignor")
    classic: ClassicMemberMetadata | None = _EMPTY_CLASSIC_MEMBER_METADATA
    unknown: list[TaggedField] = []
    for tag, start, stop in r.tagged_fields():
        if tag == 0:
            sub = r.sub(start, stop)
            classic = _classic_member_metadata(sub)
            sub.done("classic_member_metadata")
        else:
            unknown.append(TaggedField(tag, buf[start:stop]))
    return ConsumerGroupMemberMetadata(
        key.group_id,
        key.member_id,
        0,
        instance_id,
        rack_id,
        client_id,
        client_host,
        topic_names,
        topic_regex,
        rebalance_timeout,
        server_assignor,
        classic,
        tuple(unknown),
    )


def decode_consumer_group_target_assignment_metadata_value_v0(
    key: GroupKey, buf: bytes
) -> ConsumerGroupTargetAssignmentMetadata:
    epoch, timestamp, unknown = read_epoch_and_timestamp(Reader(buf, 2))
    return ConsumerGroupTargetAssignmentMetadata(key.group_id, 0, epoch, timestamp, unknown)


def decode_consumer_group_target_assignment_member_value_v0(
    key: MemberKey, buf: bytes
) -> ConsumerGroupTargetAssignmentMember:
    r = Reader(buf, 2)
    topic_partitions = r.compact_structs("topic_partitions", read_topic_id_partitions)
    return ConsumerGroupTargetAssignmentMember(
        key.group_id, key.member_id, 0, topic_partitions, r.unknown_tags()
    )


def decode_consumer_group_current_member_assignment_value_v0(
    key: MemberKey, buf: bytes
) -> ConsumerGroupCurrentMemberAssignment:
    r = Reader(buf, 2)
    member_epoch = r.int32("member_epoch")
    previous_epoch = r.int32("previous_member_epoch")
    state = r.int8("state")
    assigned = r.compact_structs("assigned_partitions", _topic_partitions_with_epochs)
    pending = r.compact_structs("partitions_pending_revocation", _topic_partitions_with_epochs)
    return ConsumerGroupCurrentMemberAssignment(
        key.group_id,
        key.member_id,
        0,
        member_epoch,
        previous_epoch,
        state,
        assigned,
        pending,
        r.unknown_tags(),
    )


def decode_consumer_group_regular_expression_value_v0(
    key: RegularExpressionKey, buf: bytes
) -> ConsumerGroupRegularExpression:
    r = Reader(buf, 2)
    topics = r.compact_string_array("topics")
    version = r.int64("metadata_image_version")
    timestamp = r.int64("resolved_ts_ms")
    return ConsumerGroupRegularExpression(
        key.group_id, key.regular_expression, 0, topics, version, timestamp, r.unknown_tags()
    )
