"""``decode_record``: dispatch on the key's record type, then on the value's version.

Framing (``CoordinatorRecordSerde``): key = ``int16 type`` + key struct; value = ``int16
version`` + value struct, or null for a tombstone. Like Kafka's loader, an unknown type or
value version is not an error (it is skipped there; here it becomes an ``Unknown`` record
with the raw bytes). Anything else that does not parse raises ``DecodeError``; trailing bytes
after a key or value are ignored, as Kafka ignores them.

Where Kafka 4.4.0 reads bytes that are not valid, the codec refuses them: invalid UTF-8
(Kafka substitutes U+FFFD; the sticky assignor's user data excepted, read as Java does),
unsigned varints beyond the int32 range (Java wraps them negative), and known tagged fields
whose payload does not fill its declared size (Java ignores the size). Records written with
an earlier, incompatible shape under the same version number (KIP-848 early access in 3.7;
share/streams records of the preview releases) fail here as they would in Kafka 4.4.0's
loader. No schema is recursive, so nesting
depth is bounded by the schemas themselves (at most four levels, in StreamsGroupTopology).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streaming.codec import group_metadata, kip848, offsets, share, streams
from streaming.codec.errors import DecodeError, TruncatedError
from streaming.codec.keys import (
    OffsetKey,
    decode_group_key,
    decode_group_metadata_key,
    decode_member_key,
    decode_offset_commit_key,
    decode_regular_expression_key,
)
from streaming.codec.model import (
    GroupKey,
    GroupMetadataTombstone,
    MemberKey,
    OffsetCommitTombstone,
    Record,
    RegularExpressionKey,
    Tombstone,
    Unknown,
)
from streaming.codec.reader import I16

__all__ = [
    "RECORD_TYPES",
    "RecordType",
    "decode_record",
    "decode_record_general",
    "record_route",
]


@dataclass(frozen=True, slots=True)
class RecordType:
    """How to decode one record type: its key, its tombstone and each value version."""

    name: str
    decode_key: Callable[[bytes, int], Any]
    tombstone: Callable[[int, Any], Record]
    values: tuple[Callable[[Any, bytes], Record], ...]


def _offset_tombstone(record_type: int, key: OffsetKey) -> Record:
    return OffsetCommitTombstone(*key)


def _group_metadata_tombstone(record_type: int, group_id: str) -> Record:
    return GroupMetadataTombstone(group_id)


def _tombstone(record_type: int, key: GroupKey | MemberKey | RegularExpressionKey) -> Record:
    return Tombstone(record_type, key)


def _group(name: str, *values: Callable[[Any, bytes], Record]) -> RecordType:
    return RecordType(name, decode_group_key, _tombstone, values)


def _member(name: str, *values: Callable[[Any, bytes], Record]) -> RecordType:
    return RecordType(name, decode_member_key, _tombstone, values)


RECORD_TYPES: dict[int, RecordType] = {
    0: RecordType(
        "LegacyOffsetCommit", decode_offset_commit_key, _offset_tombstone, offsets.VALUE_DECODERS
    ),
    1: RecordType(
        "OffsetCommit", decode_offset_commit_key, _offset_tombstone, offsets.VALUE_DECODERS
    ),
    2: RecordType(
        "GroupMetadata",
        decode_group_metadata_key,
        _group_metadata_tombstone,
        group_metadata.VALUE_DECODERS,
    ),
    3: _group("ConsumerGroupMetadata", kip848.decode_consumer_group_metadata_value_v0),
    4: _group(
        "ConsumerGroupPartitionMetadata",
        kip848.decode_consumer_group_partition_metadata_value_v0,
    ),
    5: _member(
        "ConsumerGroupMemberMetadata", kip848.decode_consumer_group_member_metadata_value_v0
    ),
    6: _group(
        "ConsumerGroupTargetAssignmentMetadata",
        kip848.decode_consumer_group_target_assignment_metadata_value_v0,
    ),
    7: _member(
        "ConsumerGroupTargetAssignmentMember",
        kip848.decode_consumer_group_target_assignment_member_value_v0,
    ),
    8: _member(
        "ConsumerGroupCurrentMemberAssignment",
        kip848.decode_consumer_group_current_member_assignment_value_v0,
    ),
    10: _member("ShareGroupMemberMetadata", share.decode_share_group_member_metadata_value_v0),
    11: _group("ShareGroupMetadata", share.decode_share_group_metadata_value_v0),
    12: _group(
        "ShareGroupTargetAssignmentMetadata",
        share.decode_share_group_target_assignment_metadata_value_v0,
    ),
    13: _member(
        "ShareGroupTargetAssignmentMember",
        share.decode_share_group_target_assignment_member_value_v0,
    ),
    14: _member(
        "ShareGroupCurrentMemberAssignment",
        share.decode_share_group_current_member_assignment_value_v0,
    ),
    15: _group(
        "ShareGroupStatePartitionMetadata",
        share.decode_share_group_state_partition_metadata_value_v0,
    ),
    16: RecordType(
        "ConsumerGroupRegularExpression",
        decode_regular_expression_key,
        _tombstone,
        (kip848.decode_consumer_group_regular_expression_value_v0,),
    ),
    17: _group("StreamsGroupMetadata", streams.decode_streams_group_metadata_value_v0),
    19: _member(
        "StreamsGroupMemberMetadata", streams.decode_streams_group_member_metadata_value_v0
    ),
    20: _group(
        "StreamsGroupTargetAssignmentMetadata",
        streams.decode_streams_group_target_assignment_metadata_value_v0,
    ),
    21: _member(
        "StreamsGroupTargetAssignmentMember",
        streams.decode_streams_group_target_assignment_member_value_v0,
    ),
    22: _member(
        "StreamsGroupCurrentMemberAssignment",
        streams.decode_streams_group_current_member_assignment_value_v0,
    ),
    23: _group("StreamsGroupTopology", streams.decode_streams_group_topology_value_v0),
}
"""Kafka 4.4.0's ``CoordinatorRecordType``: every type it defines, and only those."""


def decode_record(key: bytes, value: bytes | None) -> Record:
    """Decode one ``__consumer_offsets`` record (``value`` None = tombstone).

    Accepts ``bytes``, ``bytearray`` or ``memoryview`` (Spark gives ``bytearray``). Raises
    :class:`~streaming.codec.errors.DecodeError` and nothing else.
    """
    if type(key) is not bytes:
        key = bytes(key)
    if value is not None and type(value) is not bytes:
        value = bytes(value)
    if key[:1] == b"\x00" and key[1:2] in (b"\x00", b"\x01"):  # offset commits: the bulk
        record = offsets.decode_offset_commit_fast(key, value)
        if record is not None:
            return record
    return decode_record_general(key, value)


def decode_record_general(key: bytes, value: bytes | None) -> Record:
    """``decode_record`` without the offset-commit fast path (``bytes`` only)."""
    if len(key) < 2:
        raise TruncatedError("key.record_type", 0, f"needs 2 byte(s), {len(key)} left")
    record_type: int = I16.unpack_from(key)[0]
    spec = RECORD_TYPES.get(record_type)
    if spec is None:
        return Unknown(record_type, None, key, value, f"unknown record type {record_type}")
    try:
        decoded_key = spec.decode_key(key, record_type)
    except DecodeError as e:
        raise e.within("key") from None
    if value is None:
        return spec.tombstone(record_type, decoded_key)
    if len(value) < 2:
        raise TruncatedError("value.version", 0, f"needs 2 byte(s), {len(value)} left")
    version: int = I16.unpack_from(value)[0]
    decoders = spec.values
    if version < 0 or version >= len(decoders):
        return Unknown(
            record_type, version, key, value, f"unknown {spec.name} value version {version}"
        )
    try:
        return decoders[version](decoded_key, value)
    except DecodeError as e:
        raise e.within("value") from None


def record_route(key: bytes, value: bytes | None) -> tuple[str, str | None]:
    """A ``__consumer_offsets`` record's type name and group, from its key and its value's
    version alone: what routing the record needs, so that its value is decoded once, where
    it is applied (:func:`decode_record` there). The group is None where
    :func:`decode_record` gives an ``Unknown`` (an unknown type or value version); the name
    is the type's (``GroupMetadata``...), ``Tombstone`` appended for a tombstone. Raises what
    :func:`decode_record` raises for the key, and for a value too short to hold its version.
    """
    if type(key) is not bytes:
        key = bytes(key)
    if len(key) < 2:
        raise TruncatedError("key.record_type", 0, f"needs 2 byte(s), {len(key)} left")
    record_type: int = I16.unpack_from(key)[0]
    spec = RECORD_TYPES.get(record_type)
    if spec is None:
        return Unknown.__name__, None
    try:
        decoded_key = spec.decode_key(key, record_type)
    except DecodeError as e:
        raise e.within("key") from None
    group = _key_group(decoded_key)
    if value is None:
        return spec.name + "Tombstone", group
    if len(value) < 2:
        raise TruncatedError("value.version", 0, f"needs 2 byte(s), {len(value)} left")
    version: int = I16.unpack_from(value)[0]
    if version < 0 or version >= len(spec.values):
        return Unknown.__name__, None
    return spec.name, group


def _key_group(key: OffsetKey | str | GroupKey | MemberKey | RegularExpressionKey) -> str:
    """The group a decoded key names."""
    if isinstance(key, str):
        return key
    if isinstance(key, tuple):
        return key[1]
    return key.group_id
