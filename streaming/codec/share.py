"""Share-group records (KIP-932, types 10-15), value version 0, flexible encoding.

Shapes as Kafka 4.4.0 defines them; type 9 (ShareGroupPartitionMetadata, 4.0) is no longer
defined and decodes to :class:`~streaming.codec.model.Unknown`, as Kafka 4.4.0 skips it::

    10 ShareGroupMemberMetadataValue          RackId str?, ClientId str, ClientHost str,
                                              SubscribedTopicNames []str
    11 ShareGroupMetadataValue                Epoch i32, MetadataHash i64
    12 ShareGroupTargetAssignmentMetadataValue  AssignmentEpoch i32;
                                              tag 0 AssignmentTimestamp i64 (default 0)
    13 ShareGroupTargetAssignmentMemberValue  TopicPartitions []{TopicId uuid, Partitions []i32}
    14 ShareGroupCurrentMemberAssignmentValue MemberEpoch i32, PreviousMemberEpoch i32,
                                              State i8, AssignedPartitions []{TopicId, Partitions}
    15 ShareGroupStatePartitionMetadataValue  InitializingTopics []TopicPartitionsInfo,
                                              InitializedTopics []TopicPartitionsInfo,
                                              DeletingTopics []{TopicId, TopicName};
                                              TopicPartitionsInfo = {TopicId uuid,
                                              TopicName str, Partitions []i32}

Example, type 11 with Epoch 3 and MetadataHash 0::

    key   000b 0002 7331          value 0000 00000003 0000000000000000 00
"""

from __future__ import annotations

from streaming.codec.kip848 import read_epoch_and_timestamp, read_topic_id_partitions
from streaming.codec.model import (
    GroupKey,
    MemberKey,
    ShareGroupCurrentMemberAssignment,
    ShareGroupMemberMetadata,
    ShareGroupMetadata,
    ShareGroupStatePartitionMetadata,
    ShareGroupTargetAssignmentMember,
    ShareGroupTargetAssignmentMetadata,
    ShareTopic,
    ShareTopicPartitions,
)
from streaming.codec.reader import Reader

__all__ = [
    "decode_share_group_current_member_assignment_value_v0",
    "decode_share_group_member_metadata_value_v0",
    "decode_share_group_metadata_value_v0",
    "decode_share_group_state_partition_metadata_value_v0",
    "decode_share_group_target_assignment_member_value_v0",
    "decode_share_group_target_assignment_metadata_value_v0",
]


def _share_topic_partitions(r: Reader) -> ShareTopicPartitions:
    topic_id = r.uuid("topic_id")
    topic_name = r.compact_string("topic_name")
    partitions = r.compact_int32_array("partitions")
    return ShareTopicPartitions(topic_id, topic_name, partitions, r.unknown_tags())


def _share_topic(r: Reader) -> ShareTopic:
    topic_id = r.uuid("topic_id")
    topic_name = r.compact_string("topic_name")
    return ShareTopic(topic_id, topic_name, r.unknown_tags())


def decode_share_group_member_metadata_value_v0(
    key: MemberKey, buf: bytes
) -> ShareGroupMemberMetadata:
    r = Reader(buf, 2)
    rack_id = r.compact_nullable_string("rack_id")
    client_id = r.compact_string("client_id")
    client_host = r.compact_string("client_host")
    topic_names = r.compact_string_array("subscribed_topic_names")
    return ShareGroupMemberMetadata(
        key.group_id,
        key.member_id,
        0,
        rack_id,
        client_id,
        client_host,
        topic_names,
        r.unknown_tags(),
    )


def decode_share_group_metadata_value_v0(key: GroupKey, buf: bytes) -> ShareGroupMetadata:
    r = Reader(buf, 2)
    epoch = r.int32("epoch")
    metadata_hash = r.int64("metadata_hash")
    return ShareGroupMetadata(key.group_id, 0, epoch, metadata_hash, r.unknown_tags())


def decode_share_group_target_assignment_metadata_value_v0(
    key: GroupKey, buf: bytes
) -> ShareGroupTargetAssignmentMetadata:
    epoch, timestamp, unknown = read_epoch_and_timestamp(Reader(buf, 2))
    return ShareGroupTargetAssignmentMetadata(key.group_id, 0, epoch, timestamp, unknown)


def decode_share_group_target_assignment_member_value_v0(
    key: MemberKey, buf: bytes
) -> ShareGroupTargetAssignmentMember:
    r = Reader(buf, 2)
    topic_partitions = r.compact_structs("topic_partitions", read_topic_id_partitions)
    return ShareGroupTargetAssignmentMember(
        key.group_id, key.member_id, 0, topic_partitions, r.unknown_tags()
    )


def decode_share_group_current_member_assignment_value_v0(
    key: MemberKey, buf: bytes
) -> ShareGroupCurrentMemberAssignment:
    r = Reader(buf, 2)
    member_epoch = r.int32("member_epoch")
    previous_epoch = r.int32("previous_member_epoch")
    state = r.int8("state")
    assigned = r.compact_structs("assigned_partitions", read_topic_id_partitions)
    return ShareGroupCurrentMemberAssignment(
        key.group_id,
        key.member_id,
        0,
        member_epoch,
        previous_epoch,
        state,
        assigned,
        r.unknown_tags(),
    )


def decode_share_group_state_partition_metadata_value_v0(
    key: GroupKey, buf: bytes
) -> ShareGroupStatePartitionMetadata:
    r = Reader(buf, 2)
    initializing = r.compact_structs("initializing_topics", _share_topic_partitions)
    initialized = r.compact_structs("initialized_topics", _share_topic_partitions)
    deleting = r.compact_structs("deleting_topics", _share_topic)
    return ShareGroupStatePartitionMetadata(
        key.group_id, 0, initializing, initialized, deleting, r.unknown_tags()
    )
