"""Hand-built records of every type: the reference's examples, tombstones, unknown types and
versions, and errors that name the field and byte offset."""

from __future__ import annotations

import dataclasses

import pytest

from streaming.codec import RECORD_TYPES, DecodeError, decode_record
from streaming.codec.decode import decode_record_general
from streaming.codec.errors import MalformedError, TruncatedError
from streaming.codec.model import (
    Assignment,
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupRegularExpression,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    CooperativeStickyUserData,
    CopartitionGroup,
    Endpoint,
    GroupKey,
    GroupMetadata,
    GroupMetadataTombstone,
    KeyValue,
    MemberKey,
    MemberMetadata,
    OffsetCommit,
    OffsetCommitTombstone,
    PartitionRacks,
    RegularExpressionKey,
    ShareGroupCurrentMemberAssignment,
    ShareGroupMemberMetadata,
    ShareGroupMetadata,
    ShareGroupStatePartitionMetadata,
    ShareGroupTargetAssignmentMember,
    ShareGroupTargetAssignmentMetadata,
    ShareTopic,
    ShareTopicPartitions,
    StickyUserData,
    StreamsGroupCurrentMemberAssignment,
    StreamsGroupMemberMetadata,
    StreamsGroupMetadata,
    StreamsGroupTargetAssignmentMember,
    StreamsGroupTargetAssignmentMetadata,
    StreamsGroupTopology,
    Subscription,
    Subtopology,
    TaggedField,
    TaskIds,
    Tombstone,
    TopicIdPartitions,
    TopicInfo,
    TopicMetadata,
    TopicPartitions,
    Unknown,
)
from streaming.codec.reader import ZERO_UUID
from tests.unit.streaming.codec import wire as w

pytestmark = pytest.mark.unit

H = bytes.fromhex
T1 = "Vq7z8kQbT1mQvE3pU5cG6A"
T2 = "AAAAAAAAAAAAAAAAAAAAAQ"


def decode_error(key: bytes, value: bytes | None) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        decode_record(key, value)
    return info.value


# -- record type table --------------------------------------------------------------------


def test_record_types_are_kafka_4_4_0s() -> None:
    # CoordinatorRecordType of kafka-group-coordinator 4.4.0: 9 and 18 were removed.
    assert sorted(RECORD_TYPES) == [*range(0, 9), *range(10, 18), *range(19, 24)]
    versions = {t: len(spec.values) for t, spec in RECORD_TYPES.items()}
    assert versions[0] == versions[1] == versions[2] == 5
    assert all(n == 1 for t, n in versions.items() if t > 2)


# -- offset commits (types 0, 1) ----------------------------------------------------------


def test_offset_commit_docstring_example() -> None:
    key = H("0001 0002 6731 0002 7430 00000003")
    value = H("0003 000000000000002a 00000005 0000 00000190f1b2c3d4")
    assert decode_record(key, value) == OffsetCommit(
        1, "g1", "t0", 3, 3, 42, 5, "", 0x190F1B2C3D4, -1, ZERO_UUID
    )


@pytest.mark.parametrize("record_type", [0, 1])
def test_offset_commit_every_version(record_type: int) -> None:
    key = w.offset_key("grp", "orders", 7, record_type)
    common = w.i64(100)
    values = {
        0: w.i16(0) + common + w.string("m") + w.i64(1000),
        1: w.i16(1) + common + w.string("m") + w.i64(1000) + w.i64(2000),
        2: w.i16(2) + common + w.string("m") + w.i64(1000),
        3: w.i16(3) + common + w.i32(4) + w.string("m") + w.i64(1000),
        4: w.i16(4) + common + w.i32(4) + w.cstring("m") + w.i64(1000) + w.tags({0: w.uuid(T1)}),
    }
    expected = {
        0: (0, -1, -1, ZERO_UUID),
        1: (1, -1, 2000, ZERO_UUID),
        2: (2, -1, -1, ZERO_UUID),
        3: (3, 4, -1, ZERO_UUID),
        4: (4, 4, -1, T1),
    }
    for version, value in values.items():
        v, epoch, expire, topic_id = expected[version]
        record = decode_record(key, value)
        assert record == OffsetCommit(
            record_type, "grp", "orders", 7, v, 100, epoch, "m", 1000, expire, topic_id
        )
        assert decode_record_general(key, value) == record  # fast path == per-version path


def test_offset_commit_v4_keeps_unknown_tags() -> None:
    value = w.i16(4) + w.i64(1) + w.i32(-1) + w.cstring("") + w.i64(2) + w.tags({3: b"\x09"})
    record = decode_record(w.offset_key("g", "t", 0), value)
    assert isinstance(record, OffsetCommit)
    assert (record.topic_id, record.unknown_tags) == (ZERO_UUID, (TaggedField(3, b"\x09"),))


def test_offset_commit_v4_topic_id_must_fill_its_tag() -> None:
    value = w.i16(4) + w.i64(1) + w.i32(-1) + w.cstring("") + w.i64(2)
    e = decode_error(w.offset_key("g", "t", 0), value + w.tags({0: w.uuid(T1) + b"\x00"}))
    assert isinstance(e, MalformedError)
    assert (e.field, e.offset) == ("value.topic_id", 42)


def test_offset_commit_tombstone() -> None:
    assert decode_record(w.offset_key("g", "t", 2, 0), None) == OffsetCommitTombstone(
        0, "g", "t", 2
    )


def test_offset_commit_errors_name_field_and_offset() -> None:
    key = w.offset_key("g1", "t0", 3)
    e = decode_error(key[:12], None)
    assert (e.field, e.offset, type(e)) == ("key.partition", 10, TruncatedError)
    e = decode_error(key[:9], None)
    assert (e.field, e.offset, e.reason) == (
        "key.topic",
        6,
        "string of 2 byte(s), only 1 byte(s) left",
    )
    e = decode_error(key, w.i16(3) + w.i64(1) + w.i32(0) + w.string("") + b"\x00\x00")
    assert (e.field, e.offset, type(e)) == ("value.commit_ts_ms", 16, TruncatedError)
    e = decode_error(w.i16(1) + w.i16(-1) + w.string("t") + w.i32(0), None)
    assert (e.field, e.offset, type(e)) == ("key.group", 2, MalformedError)
    e = decode_error(key, b"")
    assert (e.field, e.offset) == ("value.version", 0)
    e = decode_error(b"\x00", None)
    assert (e.field, e.offset) == ("key.record_type", 0)


def test_offset_commit_invalid_utf8_metadata_takes_the_precise_path() -> None:
    value = w.i16(3) + w.i64(1) + w.i32(0) + w.i16(1) + b"\xff" + w.i64(5)
    e = decode_error(w.offset_key("g", "t", 0), value)
    assert (e.field, e.offset, e.reason) == (
        "value.metadata",
        16,
        "invalid UTF-8 (invalid start byte)",
    )


def test_accepts_bytearray_and_memoryview() -> None:
    key = w.offset_key("g", "t", 0)
    value = w.offset_value_v3(1, 2, "", 3)
    expected = decode_record(key, value)
    assert decode_record(bytearray(key), bytearray(value)) == expected
    assert decode_record(memoryview(key), memoryview(value)) == expected


# -- classic group metadata (type 2) ------------------------------------------------------


def test_new_empty_group_record() -> None:
    # GroupCoordinatorRecordHelpers.newEmptyGroupMetadataRecord: "" / 0 / null / null / []
    value = w.i16(3) + w.string("") + w.i32(0) + w.string(None) + w.string(None)
    value += w.i64(1700000000000) + w.array([])
    assert decode_record(w.group_key("g"), value) == GroupMetadata(
        "g", 3, "", 0, None, None, 1700000000000, ()
    )


def test_group_became_empty_record_keeps_protocol_type() -> None:
    value = w.group_metadata_value_v3("consumer", 8, None, None, 5, [])
    record = decode_record(w.group_key("g"), value)
    assert isinstance(record, GroupMetadata)
    assert (record.protocol_type, record.generation, record.protocol, record.leader) == (
        "consumer",
        8,
        None,
        None,
    )


def test_consumer_group_members_are_decoded() -> None:
    sub = w.subscription(3, ["t0", "t1"], w.i32(4), [("t0", [0])], 4, "r1")
    asg = w.assignment(3, [("t1", [1]), ("t0", [0])])
    members = [
        w.group_member_v3("m1", sub, asg, instance_id="i1"),
        w.group_member_v3("m2", sub, b""),  # no assignment yet: zero bytes
    ]
    value = w.group_metadata_value_v3("consumer", 5, "cooperative-sticky", "m1", 9, members)
    record = decode_record(w.group_key("g"), value)
    subscription = Subscription(
        3,
        ("t0", "t1"),
        w.i32(4),
        (TopicPartitions("t0", (0,)),),
        4,
        "r1",
        CooperativeStickyUserData(4, True),
    )
    assignment = Assignment(3, (TopicPartitions("t1", (1,)), TopicPartitions("t0", (0,))), None)
    assert record == GroupMetadata(
        "g",
        3,
        "consumer",
        5,
        "cooperative-sticky",
        "m1",
        9,
        (
            MemberMetadata(
                "m1",
                "i1",
                "client",
                "/10.0.0.1",
                300000,
                45000,
                subscription,
                assignment,
                None,
                None,
            ),
            MemberMetadata(
                "m2", None, "client", "/10.0.0.1", 300000, 45000, subscription, None, None, b""
            ),
        ),
    )


def test_sticky_members_get_their_previous_assignment() -> None:
    user_data = w.sticky_user_data([("t", [2, 0])], generation=3)
    member = w.group_member_v3("m", w.subscription(3, ["t"], user_data), b"")
    value = w.group_metadata_value_v3("consumer", 4, "sticky", "m", 0, [member])
    record = decode_record(w.group_key("g"), value)
    assert isinstance(record, GroupMetadata)
    sub = record.members[0].subscription
    assert sub is not None
    assert sub.assignor_data == StickyUserData(1, (TopicPartitions("t", (2, 0)),), 3)


def test_other_protocol_types_keep_raw_bytes() -> None:
    member = w.group_member_v3("w1", b"\x00\x01connect-metadata", b"\x00\x01assignment")
    value = w.group_metadata_value_v3("connect", 2, "sessioned", "w1", 0, [member])
    record = decode_record(w.group_key("connect-cluster"), value)
    assert isinstance(record, GroupMetadata)
    m = record.members[0]
    assert (m.subscription, m.assignment) == (None, None)
    assert (m.subscription_bytes, m.assignment_bytes) == (
        b"\x00\x01connect-metadata",
        b"\x00\x01assignment",
    )


def test_group_metadata_v0_v1_v2_and_v4_layouts() -> None:
    sub = w.subscription(0, ["t"])
    v0_member = w.string("m") + w.string("c") + w.string("h") + w.i32(10)
    v0_member += w.bytes_(sub) + w.bytes_(b"")
    head = w.string("consumer") + w.i32(1) + w.string("range") + w.string("m")
    v0 = w.i16(0) + head + w.array([v0_member])
    v1_member = w.string("m") + w.string("c") + w.string("h") + w.i32(20) + w.i32(10)
    v1_member += w.bytes_(sub) + w.bytes_(b"")
    v1 = w.i16(1) + head + w.array([v1_member])
    v2 = w.i16(2) + head + w.i64(77) + w.array([v1_member])
    v4_member = w.cstring("m") + w.cstring(None) + w.cstring("c") + w.cstring("h")
    v4_member += w.i32(20) + w.i32(10) + w.cbytes(sub) + w.cbytes(b"") + w.tags({5: b"\x01"})
    v4_head = w.cstring("consumer") + w.i32(1) + w.cstring("range") + w.cstring("m")
    v4 = w.i16(4) + v4_head + w.i64(77) + w.carray([v4_member]) + w.tags({9: b""})
    parsed = Subscription(0, ("t",), None, (), -1, None, None)
    for version, value, rebalance, state_ts in [
        (0, v0, -1, -1),
        (1, v1, 20, -1),
        (2, v2, 20, 77),
        (4, v4, 20, 77),
    ]:
        record = decode_record(w.group_key("g"), value)
        assert isinstance(record, GroupMetadata)
        assert (record.value_version, record.current_state_ts_ms) == (version, state_ts)
        (m,) = record.members
        assert (m.member_id, m.group_instance_id, m.rebalance_timeout_ms) == ("m", None, rebalance)
        assert (m.session_timeout_ms, m.subscription, m.assignment_bytes) == (10, parsed, b"")
    record = decode_record(w.group_key("g"), v4)
    assert isinstance(record, GroupMetadata)
    assert record.unknown_tags == (TaggedField(9, b""),)
    assert record.members[0].unknown_tags == (TaggedField(5, b"\x01"),)


def test_malformed_member_payload_names_the_member_and_field() -> None:
    bad = w.i16(3) + w.i32(1) + w.i16(-1)  # one topic, null name
    members = [
        w.group_member_v3("m1", w.subscription(0, ["t"]), b""),
        w.group_member_v3("m2", bad, b""),
    ]
    value = w.group_metadata_value_v3("consumer", 1, "range", "m1", 0, members)
    e = decode_error(w.group_key("g"), value)
    assert e.field == "value.members[1].subscription.topics"
    assert isinstance(e, MalformedError)
    assert value[e.offset : e.offset + 2] == b"\xff\xff"


def test_group_metadata_tombstone() -> None:
    assert decode_record(w.group_key("g"), None) == GroupMetadataTombstone("g")


# -- KIP-848 consumer groups (types 3-8, 16) ----------------------------------------------


def test_consumer_group_metadata_with_and_without_metadata_hash() -> None:
    key = w.group_key("cg", 3)
    assert decode_record(key, w.i16(0) + w.i32(7) + w.tags()) == ConsumerGroupMetadata(
        "cg", 0, 7, 0
    )
    value = w.i16(0) + w.i32(7) + w.tags({0: w.i64(-5)})
    assert decode_record(key, value) == ConsumerGroupMetadata("cg", 0, 7, -5)


def test_consumer_group_partition_metadata() -> None:
    racks = w.carray([w.i32(0) + w.carray([w.cstring("r1")]) + w.tags()])
    topic = w.uuid(T1) + w.cstring("orders") + w.i32(3) + racks + w.tags()
    value = w.i16(0) + w.carray([topic]) + w.tags()
    assert decode_record(w.group_key("cg", 4), value) == ConsumerGroupPartitionMetadata(
        "cg", 0, (TopicMetadata(T1, "orders", 3, (PartitionRacks(0, ("r1",)),)),)
    )


def member_metadata_value(classic_tag: bytes | None) -> bytes:
    value = w.i16(0) + w.cstring(None) + w.cstring("rack") + w.cstring("cli") + w.cstring("/h")
    value += w.carray([w.cstring("a"), w.cstring("b")]) + w.cstring("^x.*") + w.i32(30000)
    value += w.cstring("uniform")
    return value + w.tags({} if classic_tag is None else {0: classic_tag})


def test_consumer_group_member_metadata_classic_member_states() -> None:
    key = w.member_key("cg", "m1", 5)
    present = w.uvarint(1) + w.i32(45000)
    present += w.carray([w.cstring("range") + w.cbytes(b"\x00\x03") + w.tags()]) + w.tags()
    base = ConsumerGroupMemberMetadata(
        "cg", "m1", 0, None, "rack", "cli", "/h", ("a", "b"), "^x.*", 30000, "uniform", None
    )
    assert decode_record(key, member_metadata_value(w.uvarint(0))) == base
    classic = ClassicMemberMetadata(45000, (ClassicProtocol("range", b"\x00\x03"),))
    assert decode_record(key, member_metadata_value(present)) == dataclasses.replace(
        base, classic_member_metadata=classic
    )
    # An absent tag reads as Kafka's generated default: the empty struct, not null.
    absent = decode_record(key, member_metadata_value(None))
    assert isinstance(absent, ConsumerGroupMemberMetadata)
    assert absent.classic_member_metadata == ClassicMemberMetadata(0, ())


def test_consumer_group_target_assignment_records() -> None:
    # the kip848 module docstring example
    assert decode_record(H("0006 0002 6731"), H("0000 00000007 00")) == (
        ConsumerGroupTargetAssignmentMetadata("g1", 0, 7, 0)
    )
    value = w.i16(0) + w.i32(7) + w.tags({0: w.i64(1234)})
    assert decode_record(w.group_key("g1", 6), value) == ConsumerGroupTargetAssignmentMetadata(
        "g1", 0, 7, 1234
    )
    tps = w.carray([w.uuid(T1) + w.carray([w.i32(2), w.i32(0)]) + w.tags()])
    assert decode_record(w.member_key("g1", "m", 7), w.i16(0) + tps + w.tags()) == (
        ConsumerGroupTargetAssignmentMember("g1", "m", 0, (TopicIdPartitions(T1, (2, 0)),))
    )


def test_consumer_group_current_member_assignment_with_assignment_epochs() -> None:
    with_epochs = w.uuid(T1) + w.carray([w.i32(0), w.i32(1)])
    with_epochs += w.tags({0: w.carray([w.i32(5), w.i32(6)])})
    explicit_null = w.uuid(T2) + w.carray([w.i32(4)]) + w.tags({0: w.uvarint(0)})
    absent = w.uuid(T2) + w.carray([]) + w.tags()
    value = w.i16(0) + w.i32(10) + w.i32(9) + w.i8(1)
    value += w.carray([with_epochs, explicit_null]) + w.carray([absent]) + w.tags()
    assert decode_record(w.member_key("g", "m", 8), value) == ConsumerGroupCurrentMemberAssignment(
        "g",
        "m",
        0,
        10,
        9,
        1,
        (TopicIdPartitions(T1, (0, 1), (5, 6)), TopicIdPartitions(T2, (4,), None)),
        (TopicIdPartitions(T2, (), ()),),
    )


def test_consumer_group_regular_expression() -> None:
    key = w.i16(16) + w.string("g") + w.string("orders-.*")
    value = w.i16(0) + w.carray([w.cstring("orders-1")]) + w.i64(42) + w.i64(1700) + w.tags()
    assert decode_record(key, value) == ConsumerGroupRegularExpression(
        "g", "orders-.*", 0, ("orders-1",), 42, 1700
    )
    assert decode_record(key, None) == Tombstone(16, RegularExpressionKey("g", "orders-.*"))


# -- share groups (types 10-15) -----------------------------------------------------------


def test_share_group_records() -> None:
    # the share module docstring example
    assert decode_record(H("000b 0002 7331"), H("0000 00000003 0000000000000000 00")) == (
        ShareGroupMetadata("s1", 0, 3, 0)
    )
    member = w.i16(0) + w.cstring(None) + w.cstring("c") + w.cstring("h")
    member += w.carray([w.cstring("t")]) + w.tags()
    assert decode_record(w.member_key("s", "m", 10), member) == ShareGroupMemberMetadata(
        "s", "m", 0, None, "c", "h", ("t",)
    )
    target = w.i16(0) + w.i32(2) + w.tags({0: w.i64(9)})
    assert decode_record(w.group_key("s", 12), target) == ShareGroupTargetAssignmentMetadata(
        "s", 0, 2, 9
    )
    tps = w.carray([w.uuid(T1) + w.carray([w.i32(1)]) + w.tags()])
    assert decode_record(w.member_key("s", "m", 13), w.i16(0) + tps + w.tags()) == (
        ShareGroupTargetAssignmentMember("s", "m", 0, (TopicIdPartitions(T1, (1,)),))
    )
    current = w.i16(0) + w.i32(3) + w.i32(2) + w.i8(0) + tps + w.tags()
    assert decode_record(w.member_key("s", "m", 14), current) == (
        ShareGroupCurrentMemberAssignment("s", "m", 0, 3, 2, 0, (TopicIdPartitions(T1, (1,)),))
    )
    info = w.uuid(T1) + w.cstring("t") + w.carray([w.i32(0)]) + w.tags()
    state = (
        w.i16(0)
        + w.carray([])
        + w.carray([info])
        + w.carray([w.uuid(T2) + w.cstring("old") + w.tags()])
    )
    assert decode_record(
        w.group_key("s", 15), state + w.tags()
    ) == ShareGroupStatePartitionMetadata(
        "s", 0, (), (ShareTopicPartitions(T1, "t", (0,)),), (ShareTopic(T2, "old"),)
    )


# -- streams groups (types 17, 19-23) -----------------------------------------------------


def test_streams_group_metadata_tags() -> None:
    key = w.group_key("app", 17)
    bare = w.i16(0) + w.i32(4) + w.i64(99) + w.tags()
    assert decode_record(key, bare) == StreamsGroupMetadata("app", 0, 4, 99, -1, (), -1, -1)
    configs = w.carray([w.cstring("num.standby.replicas") + w.cstring("1") + w.tags()])
    tagged = w.i16(0) + w.i32(4) + w.i64(99)
    tagged += w.tags({0: w.i32(3), 1: configs, 2: w.i32(-2), 3: w.i32(2), 8: b"?"})
    assert decode_record(key, tagged) == StreamsGroupMetadata(
        "app",
        0,
        4,
        99,
        3,
        (KeyValue("num.standby.replicas", "1"),),
        -2,
        2,
        (TaggedField(8, b"?"),),
    )
    null_configs = w.i16(0) + w.i32(4) + w.i64(99) + w.tags({1: w.uvarint(0)})
    record = decode_record(key, null_configs)
    assert isinstance(record, StreamsGroupMetadata)
    assert record.last_assignment_configs is None


def test_streams_group_member_metadata_endpoint() -> None:
    def value(endpoint: bytes) -> bytes:
        v = w.i16(0) + w.cstring("inst") + w.cstring(None) + w.cstring("c") + w.cstring("h")
        v += w.i32(1000) + w.i32(2) + w.cstring("proc-1") + endpoint
        return v + w.carray([w.cstring("zone") + w.cstring("a") + w.tags()]) + w.tags()

    key = w.member_key("app", "m", 19)
    present = decode_record(key, value(w.i8(1) + w.cstring("host") + w.u16(65535) + w.tags()))
    assert present == StreamsGroupMemberMetadata(
        "app",
        "m",
        0,
        "inst",
        None,
        "c",
        "h",
        1000,
        2,
        "proc-1",
        Endpoint("host", 65535),
        (KeyValue("zone", "a"),),
    )
    absent = decode_record(key, value(w.i8(-1)))
    assert isinstance(absent, StreamsGroupMemberMetadata)
    assert absent.user_endpoint is None


def test_streams_group_assignment_records() -> None:
    # the streams module docstring example
    assert decode_record(
        H("0014 0002 7331"), H("0000 00000002 01 00 08 0000000000000005")
    ) == StreamsGroupTargetAssignmentMetadata("s1", 0, 2, 5)
    task = w.cstring("0") + w.carray([w.i32(1)]) + w.tags()
    value = w.i16(0) + w.carray([task]) + w.carray([]) + w.carray([]) + w.tags()
    assert decode_record(w.member_key("app", "m", 21), value) == (
        StreamsGroupTargetAssignmentMember("app", "m", 0, (TaskIds("0", (1,)),), (), ())
    )
    with_epochs = w.cstring("1") + w.carray([w.i32(0)]) + w.tags({0: w.carray([w.i32(7)])})
    current = w.i16(0) + w.i32(5) + w.i32(4) + w.i8(2) + w.carray([with_epochs, task])
    current += w.carray([]) * 5 + w.tags()
    assert decode_record(w.member_key("app", "m", 22), current) == (
        StreamsGroupCurrentMemberAssignment(
            "app",
            "m",
            0,
            5,
            4,
            2,
            (TaskIds("1", (0,), (7,)), TaskIds("0", (1,), ())),
            (),
            (),
            (),
            (),
            (),
        )
    )


def test_streams_group_topology() -> None:
    changelog = w.cstring("app-store-changelog") + w.i32(0) + w.i16(3)
    changelog += (
        w.carray([w.cstring("cleanup.policy") + w.cstring("compact") + w.tags()]) + w.tags()
    )
    group = w.carray([w.i16(0), w.i16(1)]) + w.carray([]) + w.carray([w.i16(0)]) + w.tags()
    sub = w.cstring("0") + w.carray([w.cstring("in")]) + w.carray([w.cstring("in-.*")])
    sub += (
        w.carray([changelog]) + w.carray([w.cstring("app-rep")]) + w.carray([]) + w.carray([group])
    )
    sub += w.tags()
    value = w.i16(0) + w.i32(1) + w.carray([sub]) + w.tags()
    assert decode_record(w.group_key("app", 23), value) == StreamsGroupTopology(
        "app",
        0,
        1,
        (
            Subtopology(
                "0",
                ("in",),
                ("in-.*",),
                (TopicInfo("app-store-changelog", 0, 3, (KeyValue("cleanup.policy", "compact"),)),),
                ("app-rep",),
                (),
                (CopartitionGroup((0, 1), (), (0,)),),
            ),
        ),
    )


# -- tombstones, unknown types and versions ------------------------------------------------

GROUP_TYPES = (3, 4, 6, 11, 12, 15, 17, 20, 23)
MEMBER_TYPES = (5, 7, 8, 10, 13, 14, 19, 21, 22)


@pytest.mark.parametrize("record_type", GROUP_TYPES)
def test_group_tombstones(record_type: int) -> None:
    assert decode_record(w.group_key("g", record_type), None) == Tombstone(
        record_type, GroupKey("g")
    )


@pytest.mark.parametrize("record_type", MEMBER_TYPES)
def test_member_tombstones(record_type: int) -> None:
    assert decode_record(w.member_key("g", "m", record_type), None) == Tombstone(
        record_type, MemberKey("g", "m")
    )


@pytest.mark.parametrize("record_type", [9, 18, 24, 25, 1000, -1, -32768])
def test_unknown_record_types_keep_raw_bytes(record_type: int) -> None:
    key = w.i16(record_type) + b"anything"
    value = w.i16(0) + b"\x01\x02"
    assert decode_record(key, value) == Unknown(
        record_type, None, key, value, f"unknown record type {record_type}"
    )
    assert decode_record(key, None) == Unknown(
        record_type, None, key, None, f"unknown record type {record_type}"
    )


@pytest.mark.parametrize(("record_type", "version"), [(1, 5), (1, -1), (2, 5), (3, 1), (23, 32767)])
def test_unknown_value_versions_keep_raw_bytes(record_type: int, version: int) -> None:
    key = w.group_key("g", record_type) if record_type >= 2 else w.offset_key("g", "t", 0)
    value = w.i16(version) + b"\x00" * 4
    record = decode_record(key, value)
    assert isinstance(record, Unknown)
    assert (record.record_type, record.value_version, record.key, record.value) == (
        record_type,
        version,
        key,
        value,
    )


def test_a_known_type_with_a_bad_key_is_an_error_even_for_an_unknown_version() -> None:
    e = decode_error(w.i16(3) + w.i16(5) + b"ab", w.i16(9))
    assert (e.field, e.offset) == ("key.group_id", 2)
