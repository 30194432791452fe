"""GroupMetadataValue (record type 2, classic groups), value versions 0-4.

====  ====================================================================================
v     fields, in wire order
====  ====================================================================================
0     protocolType str, generation i32, protocol str?, leader str?, members[
      memberId, clientId, clientHost, sessionTimeout i32, subscription bytes, assignment bytes]
1     member + rebalanceTimeout i32 (between clientHost and sessionTimeout)
2     + currentStateTimestamp i64 (between leader and members)
3     member + groupInstanceId str? (right after memberId)
4     v3 in the flexible encoding (compact strings/bytes/arrays, tagged fields after each
      member and after the value); no tags defined
====  ====================================================================================

``subscription`` is the member's metadata for the *selected* protocol. When ``protocolType``
is ``consumer`` both payloads are decoded (:mod:`streaming.codec.consumer_protocol`, the
user data for the group's ``protocol`` when it is ``sticky``/``cooperative-sticky``); for any
other protocol type (``connect``, ...) and for empty payloads (members without an assignment
store zero bytes) the raw bytes are kept. A malformed consumer payload fails the record.
"""

from __future__ import annotations

from streaming.codec.consumer_protocol import read_assignment, read_subscription
from streaming.codec.errors import DecodeError
from streaming.codec.model import (
    Assignment,
    GroupMetadata,
    MemberMetadata,
    Subscription,
    TaggedField,
    fast_init,
)
from streaming.codec.reader import Reader

__all__ = [
    "decode_group_metadata_value_v0",
    "decode_group_metadata_value_v1",
    "decode_group_metadata_value_v2",
    "decode_group_metadata_value_v3",
    "decode_group_metadata_value_v4",
]

CONSUMER_PROTOCOL_TYPE = "consumer"

_new_member = fast_init(MemberMetadata)
_new_group = fast_init(GroupMetadata)
_NO_TAGS: tuple[TaggedField, ...] = ()


class _Group:
    """What a member's payload decoding needs to know about its group."""

    __slots__ = ("assignor", "consumer")

    def __init__(self, protocol_type: str, protocol: str | None) -> None:
        self.consumer = protocol_type == CONSUMER_PROTOCOL_TYPE
        self.assignor = protocol


def _member(
    r: Reader,
    group: _Group,
    member_id: str,
    instance_id: str | None,
    client_id: str,
    client_host: str,
    rebalance_timeout: int,
    session_timeout: int,
    compact: bool,
) -> MemberMetadata:
    if compact:
        sub_start, sub_stop = r.compact_bytes_span("subscription")
        asg_start, asg_stop = r.compact_bytes_span("assignment")
        tags = r.unknown_tags()
    else:
        sub_start, sub_stop = r.bytes_span("subscription")
        asg_start, asg_stop = r.bytes_span("assignment")
        tags = _NO_TAGS
    buf = r.buf
    subscription: Subscription | None = None
    assignment: Assignment | None = None
    sub_bytes: bytes | None = None
    asg_bytes: bytes | None = None
    if group.consumer and sub_stop > sub_start:
        try:
            subscription = read_subscription(buf, sub_start, sub_stop, group.assignor)
        except DecodeError as e:
            raise e.within("subscription") from None
    else:
        sub_bytes = buf[sub_start:sub_stop]
    if group.consumer and asg_stop > asg_start:
        try:
            assignment = read_assignment(buf, asg_start, asg_stop)
        except DecodeError as e:
            raise e.within("assignment") from None
    else:
        asg_bytes = buf[asg_start:asg_stop]
    return _new_member(
        member_id,
        instance_id,
        client_id,
        client_host,
        rebalance_timeout,
        session_timeout,
        subscription,
        assignment,
        sub_bytes,
        asg_bytes,
        tags,
    )


def _member_v0(r: Reader, group: _Group) -> MemberMetadata:
    member_id = r.string("member_id")
    client_id = r.string("client_id")
    client_host = r.string("client_host")
    session_timeout = r.int32("session_timeout_ms")
    return _member(r, group, member_id, None, client_id, client_host, -1, session_timeout, False)


def _member_v1(r: Reader, group: _Group) -> MemberMetadata:
    member_id = r.string("member_id")
    client_id = r.string("client_id")
    client_host = r.string("client_host")
    rebalance_timeout = r.int32("rebalance_timeout_ms")
    session_timeout = r.int32("session_timeout_ms")
    return _member(
        r, group, member_id, None, client_id, client_host, rebalance_timeout, session_timeout, False
    )


def _member_v3(r: Reader, group: _Group) -> MemberMetadata:
    member_id = r.string("member_id")
    instance_id = r.nullable_string("group_instance_id")
    client_id = r.string("client_id")
    client_host = r.string("client_host")
    rebalance_timeout = r.int32("rebalance_timeout_ms")
    session_timeout = r.int32("session_timeout_ms")
    return _member(
        r,
        group,
        member_id,
        instance_id,
        client_id,
        client_host,
        rebalance_timeout,
        session_timeout,
        False,
    )


def _member_v4(r: Reader, group: _Group) -> MemberMetadata:
    member_id = r.compact_string("member_id")
    instance_id = r.compact_nullable_string("group_instance_id")
    client_id = r.compact_string("client_id")
    client_host = r.compact_string("client_host")
    rebalance_timeout = r.int32("rebalance_timeout_ms")
    session_timeout = r.int32("session_timeout_ms")
    return _member(
        r,
        group,
        member_id,
        instance_id,
        client_id,
        client_host,
        rebalance_timeout,
        session_timeout,
        True,
    )


def decode_group_metadata_value_v0(group_id: str, buf: bytes) -> GroupMetadata:
    r = Reader(buf, 2)
    protocol_type = r.string("protocol_type")
    generation = r.int32("generation")
    protocol = r.nullable_string("protocol")
    leader = r.nullable_string("leader")
    group = _Group(protocol_type, protocol)
    members = r.structs("members", lambda m: _member_v0(m, group))
    return _new_group(
        group_id, 0, protocol_type, generation, protocol, leader, -1, members, _NO_TAGS
    )


def decode_group_metadata_value_v1(group_id: str, buf: bytes) -> GroupMetadata:
    r = Reader(buf, 2)
    protocol_type = r.string("protocol_type")
    generation = r.int32("generation")
    protocol = r.nullable_string("protocol")
    leader = r.nullable_string("leader")
    group = _Group(protocol_type, protocol)
    members = r.structs("members", lambda m: _member_v1(m, group))
    return _new_group(
        group_id, 1, protocol_type, generation, protocol, leader, -1, members, _NO_TAGS
    )


def decode_group_metadata_value_v2(group_id: str, buf: bytes) -> GroupMetadata:
    r = Reader(buf, 2)
    protocol_type = r.string("protocol_type")
    generation = r.int32("generation")
    protocol = r.nullable_string("protocol")
    leader = r.nullable_string("leader")
    state_ts = r.int64("current_state_ts_ms")
    group = _Group(protocol_type, protocol)
    members = r.structs("members", lambda m: _member_v1(m, group))
    return _new_group(
        group_id, 2, protocol_type, generation, protocol, leader, state_ts, members, _NO_TAGS
    )


def decode_group_metadata_value_v3(group_id: str, buf: bytes) -> GroupMetadata:
    r = Reader(buf, 2)
    protocol_type = r.string("protocol_type")
    generation = r.int32("generation")
    protocol = r.nullable_string("protocol")
    leader = r.nullable_string("leader")
    state_ts = r.int64("current_state_ts_ms")
    group = _Group(protocol_type, protocol)
    members = r.structs("members", lambda m: _member_v3(m, group))
    return _new_group(
        group_id, 3, protocol_type, generation, protocol, leader, state_ts, members, _NO_TAGS
    )


def decode_group_metadata_value_v4(group_id: str, buf: bytes) -> GroupMetadata:
    r = Reader(buf, 2)
    protocol_type = r.compact_string("protocol_type")
    generation = r.int32("generation")
    protocol = r.compact_nullable_string("protocol")
    leader = r.compact_nullable_string("leader")
    state_ts = r.int64("current_state_ts_ms")
    group = _Group(protocol_type, protocol)
    members = r.compact_structs("members", lambda m: _member_v4(m, group))
    tags = r.unknown_tags()
    return _new_group(
        group_id, 4, protocol_type, generation, protocol, leader, state_ts, members, tags
    )


VALUE_DECODERS = (
    decode_group_metadata_value_v0,
    decode_group_metadata_value_v1,
    decode_group_metadata_value_v2,
    decode_group_metadata_value_v3,
    decode_group_metadata_value_v4,
)
