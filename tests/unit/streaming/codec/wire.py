"""A tiny test-side encoder of Kafka's wire primitives, to build records by hand.

Each function returns bytes; concatenate them. Mirrors the generated-message encoding (see
``streaming.codec.reader``); not part of the product.
"""

from __future__ import annotations

import struct
from base64 import urlsafe_b64decode
from collections.abc import Iterable


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def u16(v: int) -> bytes:
    return struct.pack(">H", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def varint(v: int) -> bytes:
    return uvarint(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)


def uuid(text: str) -> bytes:
    """Kafka's text form (22 chars of URL-safe base64) back to 16 bytes."""
    return urlsafe_b64decode(text + "==")


def string(s: str | None) -> bytes:
    if s is None:
        return i16(-1)
    b = s.encode()
    return i16(len(b)) + b


def cstring(s: str | None) -> bytes:
    if s is None:
        return uvarint(0)
    b = s.encode()
    return uvarint(len(b) + 1) + b


def bytes_(b: bytes | None) -> bytes:
    return i32(-1) if b is None else i32(len(b)) + b


def cbytes(b: bytes | None) -> bytes:
    return uvarint(0) if b is None else uvarint(len(b) + 1) + b


def array(items: Iterable[bytes] | None) -> bytes:
    if items is None:
        return i32(-1)
    items = list(items)
    return i32(len(items)) + b"".join(items)


def carray(items: Iterable[bytes] | None) -> bytes:
    if items is None:
        return uvarint(0)
    items = list(items)
    return uvarint(len(items) + 1) + b"".join(items)


def tags(fields: dict[int, bytes] | None = None) -> bytes:
    """A tagged-field section (tags in ascending order)."""
    fields = fields or {}
    out = uvarint(len(fields))
    for tag in sorted(fields):
        out += uvarint(tag) + uvarint(len(fields[tag])) + fields[tag]
    return out


# -- consumer protocol ---------------------------------------------------------------------


def topic_partitions(topic: str, partitions: Iterable[int]) -> bytes:
    return string(topic) + array(i32(p) for p in partitions)


def subscription(
    version: int,
    topics: Iterable[str],
    user_data: bytes | None = None,
    owned: Iterable[tuple[str, Iterable[int]]] = (),
    generation_id: int = -1,
    rack_id: str | None = None,
) -> bytes:
    out = i16(version) + array(string(t) for t in topics) + bytes_(user_data)
    if version >= 1:
        out += array(topic_partitions(t, ps) for t, ps in owned)
    if version >= 2:
        out += i32(generation_id)
    if version >= 3:
        out += string(rack_id)
    return out


def assignment(
    version: int, partitions: Iterable[tuple[str, Iterable[int]]], user_data: bytes | None = None
) -> bytes:
    return i16(version) + array(topic_partitions(t, ps) for t, ps in partitions) + bytes_(user_data)


def sticky_user_data(
    previous: Iterable[tuple[str, Iterable[int]]], generation: int | None = None
) -> bytes:
    out = array(topic_partitions(t, ps) for t, ps in previous)
    return out if generation is None else out + i32(generation)


# -- records -------------------------------------------------------------------------------


def offset_key(group: str, topic: str, partition: int, record_type: int = 1) -> bytes:
    return i16(record_type) + string(group) + string(topic) + i32(partition)


def offset_value_v3(offset: int, leader_epoch: int, metadata: str, commit_ts: int) -> bytes:
    return i16(3) + i64(offset) + i32(leader_epoch) + string(metadata) + i64(commit_ts)


def group_key(group: str, record_type: int = 2) -> bytes:
    return i16(record_type) + string(group)


def member_key(group: str, member: str, record_type: int) -> bytes:
    return i16(record_type) + string(group) + string(member)


def group_member_v3(
    member_id: str,
    subscription_bytes: bytes,
    assignment_bytes: bytes,
    *,
    instance_id: str | None = None,
    client_id: str = "client",
    client_host: str = "/10.0.0.1",
    rebalance_timeout: int = 300000,
    session_timeout: int = 45000,
) -> bytes:
    return (
        string(member_id)
        + string(instance_id)
        + string(client_id)
        + string(client_host)
        + i32(rebalance_timeout)
        + i32(session_timeout)
        + bytes_(subscription_bytes)
        + bytes_(assignment_bytes)
    )


def group_metadata_value_v3(
    protocol_type: str,
    generation: int,
    protocol: str | None,
    leader: str | None,
    state_ts: int,
    members: Iterable[bytes],
) -> bytes:
    return (
        i16(3)
        + string(protocol_type)
        + i32(generation)
        + string(protocol)
        + string(leader)
        + i64(state_ts)
        + array(members)
    )
