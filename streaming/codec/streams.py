"""Streams-group records (KIP-1071, types 17 and 19-23), value version 0, flexible encoding.

Shapes as Kafka 4.4.0 defines them; type 18 (StreamsGroupPartitionMetadata, early trunk) is
not defined and decodes to :class:`~streaming.codec.model.Unknown`::

    17 StreamsGroupMetadataValue      Epoch i32, MetadataHash i64; tag 0 ValidatedTopologyEpoch
                                      i32 (-1), tag 1 LastAssignmentConfigs []{Key, Value}?
                                      (absent = []), tag 2 StoredDescriptionTopologyEpoch i32 (-1),
                                      tag 3 FailedDescriptionTopologyEpoch i32 (-1)
    19 StreamsGroupMemberMetadataValue  InstanceId str?, RackId str?, ClientId str,
                                      ClientHost str, RebalanceTimeoutMs i32, TopologyEpoch i32,
                                      ProcessId str, UserEndpoint {Host str, Port u16}? (int8
                                      marker, -1 = null), ClientTags []{Key str, Value str}
    20 StreamsGroupTargetAssignmentMetadataValue  AssignmentEpoch i32;
                                      tag 0 AssignmentTimestamp i64 (default 0)
    21 StreamsGroupTargetAssignmentMemberValue  ActiveTasks, StandbyTasks, WarmupTasks
                                      []{SubtopologyId str, Partitions []i32}
    22 StreamsGroupCurrentMemberAssignmentValue  MemberEpoch i32, PreviousMemberEpoch i32,
                                      State i8, then six []TaskIds: Active, Standby, Warmup and
                                      their PendingRevocation lists; TaskIds = {SubtopologyId,
                                      Partitions []i32; tag 0 AssignmentEpochs []i32? (absent = [])}
    23 StreamsGroupTopologyValue      Epoch i32, Subtopologies []{SubtopologyId str,
                                      SourceTopics []str, SourceTopicRegex []str,
                                      StateChangelogTopics []TopicInfo, RepartitionSinkTopics
                                      []str, RepartitionSourceTopics []TopicInfo,
                                      CopartitionGroups []{SourceTopics []i16, SourceTopicRegex
                                      []i16, RepartitionSourceTopics []i16}}; TopicInfo = {Name
                                      str, Partitions i32, ReplicationFactor i16, TopicConfigs
                                      []{key str, value str}}

Example, type 20 with AssignmentEpoch 2 and AssignmentTimestamp 5 (tag 0, 8 bytes)::

    key   0014 0002 7331          value 0000 00000002 01 00 08 0000000000000005
"""

from __future__ import annotations

from streaming.codec.errors import DecodeError
from streaming.codec.kip848 import read_epoch_and_timestamp
from streaming.codec.model import (
    CopartitionGroup,
    Endpoint,
    GroupKey,
    KeyValue,
    MemberKey,
    StreamsGroupCurrentMemberAssignment,
    StreamsGroupMemberMetadata,
    StreamsGroupMetadata,
    StreamsGroupTargetAssignmentMember,
    StreamsGroupTargetAssignmentMetadata,
    StreamsGroupTopology,
    Subtopology,
    TaggedField,
    TaskIds,
    TopicInfo,
)
from streaming.codec.reader import Reader

__all__ = [
    "decode_streams_group_current_member_assignment_value_v0",
    "decode_streams_group_member_metadata_value_v0",
    "decode_streams_group_metadata_value_v0",
    "decode_streams_group_target_assignment_member_value_v0",
    "decode_streams_group_target_assignment_metadata_value_v0",
    "decode_streams_group_topology_value_v0",
]


def _key_value(r: Reader) -> KeyValue:
    key = r.compact_string("key")
    value = r.compact_string("value")
    return KeyValue(key, value, r.unknown_tags())


def _endpoint(r: Reader) -> Endpoint:
    host = r.compact_string("host")
    port = r.uint16("port")
    return Endpoint(host, port, r.unknown_tags())


def _task_ids(r: Reader) -> TaskIds:
    """Type 21's TaskIds: no tags defined."""
    subtopology_id = r.compact_string("subtopology_id")
    partitions = r.compact_int32_array("partitions")
    return TaskIds(subtopology_id, partitions, None, r.unknown_tags())


def _task_ids_with_epochs(r: Reader) -> TaskIds:
    """Type 22's TaskIds: tag 0 is AssignmentEpochs (nullable []int32)."""
    subtopology_id = r.compact_string("subtopology_id")
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
    return TaskIds(subtopology_id, partitions, epochs, tuple(unknown))


def _topic_info(r: Reader) -> TopicInfo:
    name = r.compact_string("name")
    partitions = r.int32("partitions")
    replication_factor = r.int16("replication_factor")
    configs = r.compact_structs("topic_configs", _key_value)
    return TopicInfo(name, partitions, replication_factor, configs, r.unknown_tags())


def _copartition_group(r: Reader) -> CopartitionGroup:
    source_topics = r.compact_int16_array("source_topics")
    source_topic_regex = r.compact_int16_array("source_topic_regex")
    repartition_source_topics = r.compact_int16_array("repartition_source_topics")
    return CopartitionGroup(
        source_topics, source_topic_regex, repartition_source_topics, r.unknown_tags()
    )


def _subtopology(r: Reader) -> Subtopology:
    subtopology_id = r.compact_string("subtopology_id")
    source_topics = r.compact_string_array("source_topics")
    source_topic_regex = r.compact_string_array("source_topic_regex")
    changelogs = r.compact_structs("state_changelog_topics", _topic_info)
    sink_topics = r.compact_string_array("repartition_sink_topics")
    repartition_sources = r.compact_structs("repartition_source_topics", _topic_info)
    copartition_groups = r.compact_structs("copartition_groups", _copartition_group)
    return Subtopology(
        subtopology_id,
        source_topics,
        source_topic_regex,
        changelogs,
        sink_topics,
        repartition_sources,
        copartition_groups,
        r.unknown_tags(),
    )


def decode_streams_group_metadata_value_v0(key: GroupKey, buf: bytes) -> StreamsGroupMetadata:
    r = Reader(buf, 2)
    epoch = r.int32("epoch")
    metadata_hash = r.int64("metadata_hash")
    validated_epoch = -1
    configs: tuple[KeyValue, ...] | None = ()
    stored_epoch = -1
    failed_epoch = -1
    unknown: list[TaggedField] = []
    for tag, start, stop in r.tagged_fields():
        sub = r.sub(start, stop)
        if tag == 0:
            validated_epoch = sub.int32("validated_topology_epoch")
            sub.done("validated_topology_epoch")
        elif tag == 1:
            configs = sub.compact_nullable_structs("last_assignment_configs", _key_value)
            sub.done("last_assignment_configs")
        elif tag == 2:
            stored_epoch = sub.int32("stored_description_topology_epoch")
            sub.done("stored_description_topology_epoch")
        elif tag == 3:
            failed_epoch = sub.int32("failed_description_topology_epoch")
            sub.done("failed_description_topology_epoch")
        else:
            unknown.append(TaggedField(tag, buf[start:stop]))
    return StreamsGroupMetadata(
        key.group_id,
        0,
        epoch,
        metadata_hash,
        validated_epoch,
        configs,
        stored_epoch,
        failed_epoch,
        tuple(unknown),
    )


def decode_streams_group_member_metadata_value_v0(
    key: MemberKey, buf: bytes
) -> StreamsGroupMemberMetadata:
    r = Reader(buf, 2)
    instance_id = r.compact_nullable_string("instance_id")
    rack_id = r.compact_nullable_string("rack_id")
    client_id = r.compact_string("client_id")
    client_host = r.compact_string("client_host")
    rebalance_timeout = r.int32("rebalance_timeout_ms")
    topology_epoch = r.int32("topology_epoch")
    process_id = r.compact_string("process_id")
    endpoint: Endpoint | None = None
    if r.int8("user_endpoint") >= 0:
        try:
            endpoint = _endpoint(r)
        except DecodeError as e:
            raise e.within("user_endpoint") from None
    client_tags = r.compact_structs("client_tags", _key_value)
    return StreamsGroupMemberMetadata(
        key.group_id,
        key.member_id,
        0,
        instance_id,
        rack_id,
        client_id,
        client_host,
        rebalance_timeout,
        topology_epoch,
        process_id,
        endpoint,
        client_tags,
        r.unknown_tags(),
    )


def decode_streams_group_target_assignment_metadata_value_v0(
    key: GroupKey, buf: bytes
) -> StreamsGroupTargetAssignmentMetadata:
    epoch, timestamp, unknown = read_epoch_and_timestamp(Reader(buf, 2))
    return StreamsGroupTargetAssignmentMetadata(key.group_id, 0, epoch, timestamp, unknown)


def decode_streams_group_target_assignment_member_value_v0(
    key: MemberKey, buf: bytes
) -> StreamsGroupTargetAssignmentMember:
    r = Reader(buf, 2)
    active = r.compact_structs("active_tasks", _task_ids)
    standby = r.compact_structs("standby_tasks", _task_ids)
    warmup = r.compact_structs("warmup_tasks", _task_ids)
    return StreamsGroupTargetAssignmentMember(
        key.group_id, key.member_id, 0, active, standby, warmup, r.unknown_tags()
    )


def decode_streams_group_current_member_assignment_value_v0(
    key: MemberKey, buf: bytes
) -> StreamsGroupCurrentMemberAssignment:
    r = Reader(buf, 2)
    member_epoch = r.int32("member_epoch")
    previous_epoch = r.int32("previous_member_epoch")
    state = r.int8("state")
    active = r.compact_structs("active_tasks", _task_ids_with_epochs)
    standby = r.compact_structs("standby_tasks", _task_ids_with_epochs)
    warmup = r.compact_structs("warmup_tasks", _task_ids_with_epochs)
    active_pending = r.compact_structs("active_tasks_pending_revocation", _task_ids_with_epochs)
    standby_pending = r.compact_structs("standby_tasks_pending_revocation", _task_ids_with_epochs)
    warmup_pending = r.compact_structs("warmup_tasks_pending_revocation", _task_ids_with_epochs)
    return StreamsGroupCurrentMemberAssignment(
        key.group_id,
        key.member_id,
        0,
        member_epoch,
        previous_epoch,
        state,
        active,
        standby,
        warmup,
        active_pending,
        standby_pending,
        warmup_pending,
        r.unknown_tags(),
    )


def decode_streams_group_topology_value_v0(key: GroupKey, buf: bytes) -> StreamsGroupTopology:
    r = Reader(buf, 2)
    epoch = r.int32("epoch")
    subtopologies = r.compact_structs("subtopologies", _subtopology)
    return StreamsGroupTopology(key.group_id, 0, epoch, subtopologies, r.unknown_tags())
