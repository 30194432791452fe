"""Record keys: ``int16 record type`` then a non-flexible key struct (strings int16-length).

The type is read by :func:`streaming.codec.decode.decode_record`; these functions read the
struct that follows it, from byte 2. Every key field exists in every key version, so old
(``validVersions = type``) and new (``coordinator-key``, version 0) keys are the same bytes.
Trailing bytes are ignored, as Kafka's deserializer does.

============  ==========================================  =====================
record type   key schema                                  decoder
============  ==========================================  =====================
0, 1          (Legacy)OffsetCommitKey: group, topic,      decode_offset_commit_key
              partition
2             GroupMetadataKey: group                     decode_group_metadata_key
3,4,6,11,12,  ...Key: GroupId                             decode_group_key
15,17,20,23
5,7,8,10,13,  ...Key: GroupId, MemberId                   decode_member_key
14,19,21,22
16            ConsumerGroupRegularExpressionKey: GroupId,  decode_regular_expression_key
              RegularExpression
============  ==========================================  =====================
"""

from __future__ import annotations

from streaming.codec.model import GroupKey, MemberKey, RegularExpressionKey
from streaming.codec.reader import Reader

__all__ = [
    "OffsetKey",
    "decode_group_key",
    "decode_group_metadata_key",
    "decode_member_key",
    "decode_offset_commit_key",
    "decode_regular_expression_key",
]

OffsetKey = tuple[int, str, str, int]
"""``(record_type, group, topic, partition)`` of an offset commit."""


def decode_offset_commit_key(buf: bytes, record_type: int) -> OffsetKey:
    r = Reader(buf, 2)
    group = r.string("group")
    topic = r.string("topic")
    return (record_type, group, topic, r.int32("partition"))


def decode_group_metadata_key(buf: bytes, record_type: int) -> str:
    return Reader(buf, 2).string("group")


def decode_group_key(buf: bytes, record_type: int) -> GroupKey:
    return GroupKey(Reader(buf, 2).string("group_id"))


def decode_member_key(buf: bytes, record_type: int) -> MemberKey:
    r = Reader(buf, 2)
    group_id = r.string("group_id")
    return MemberKey(group_id, r.string("member_id"))


def decode_regular_expression_key(buf: bytes, record_type: int) -> RegularExpressionKey:
    r = Reader(buf, 2)
    group_id = r.string("group_id")
    return RegularExpressionKey(group_id, r.string("regular_expression"))
