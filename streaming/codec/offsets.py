"""OffsetCommitValue (record types 0 and 1), value versions 0-4.

====  ===============================================================  ==========
v     fields, in wire order                                            encoding
====  ===============================================================  ==========
0     offset i64, metadata str, commitTimestamp i64                    classic
1     offset, metadata, commitTimestamp, expireTimestamp i64           classic
2     offset, metadata, commitTimestamp                                classic
3     offset, leaderEpoch i32, metadata, commitTimestamp               classic
4     v3 fields + tagged fields (tag 0: topicId uuid)                  flexible
====  ===============================================================  ==========

Absent fields take their defaults (leaderEpoch -1, expireTimestamp -1, topicId zero).
Kafka 4.4.0 maps type 0 to ``LegacyOffsetCommitValue`` (v0 only); 3.x brokers read any
OffsetCommitValue version under either key type, and so do we. Transactional commits are
written the same way; only the batch (producer id, control markers) tells them apart.

:func:`decode_offset_commit_fast` reads the common case (key and a v0-v4 value, or a
tombstone; v4 with short metadata and at most the topic id tag) in one pass; anything unusual
goes through the per-version functions, which also produce the precise error. (The job's
commit lane decodes commits in the JVM, :mod:`streaming.spark.commits`; this path serves the
group lane, the CLI and the benchmarks' reference loop.)

Example (type 1, value v3)::

    key   0001 0002 6731 0002 7430 00000003          group "g1", topic "t0", partition 3
    value 0003 000000000000002a 00000005 0000        offset 42, leader epoch 5, metadata ""
          00000190f1b2c3d4                           commit timestamp
"""

from __future__ import annotations

import struct
from base64 import urlsafe_b64encode

from streaming.codec.keys import OffsetKey
from streaming.codec.model import OffsetCommit, OffsetCommitTombstone, TaggedField, fast_init
from streaming.codec.reader import I32, I64, ZERO_UUID, Reader

__all__ = [
    "decode_offset_commit_fast",
    "decode_offset_commit_value_v0",
    "decode_offset_commit_value_v1",
    "decode_offset_commit_value_v2",
    "decode_offset_commit_value_v3",
    "decode_offset_commit_value_v4",
]


def decode_offset_commit_value_v0(key: OffsetKey, buf: bytes) -> OffsetCommit:
    r = Reader(buf, 2)
    offset = r.int64("offset")
    metadata = r.string("metadata")
    commit_ts = r.int64("commit_ts_ms")
    return OffsetCommit(*key, 0, offset, -1, metadata, commit_ts, -1, ZERO_UUID)


def decode_offset_commit_value_v1(key: OffsetKey, buf: bytes) -> OffsetCommit:
    r = Reader(buf, 2)
    offset = r.int64("offset")
    metadata = r.string("metadata")
    commit_ts = r.int64("commit_ts_ms")
    expire_ts = r.int64("expire_ts_ms")
    return OffsetCommit(*key, 1, offset, -1, metadata, commit_ts, expire_ts, ZERO_UUID)


def decode_offset_commit_value_v2(key: OffsetKey, buf: bytes) -> OffsetCommit:
    r = Reader(buf, 2)
    offset = r.int64("offset")
    metadata = r.string("metadata")
    commit_ts = r.int64("commit_ts_ms")
    return OffsetCommit(*key, 2, offset, -1, metadata, commit_ts, -1, ZERO_UUID)


def decode_offset_commit_value_v3(key: OffsetKey, buf: bytes) -> OffsetCommit:
    r = Reader(buf, 2)
    offset = r.int64("offset")
    leader_epoch = r.int32("leader_epoch")
    metadata = r.string("metadata")
    commit_ts = r.int64("commit_ts_ms")
    return OffsetCommit(*key, 3, offset, leader_epoch, metadata, commit_ts, -1, ZERO_UUID)


def decode_offset_commit_value_v4(key: OffsetKey, buf: bytes) -> OffsetCommit:
    r = Reader(buf, 2)
    offset = r.int64("offset")
    leader_epoch = r.int32("leader_epoch")
    metadata = r.compact_string("metadata")
    commit_ts = r.int64("commit_ts_ms")
    topic_id = ZERO_UUID
    unknown: list[TaggedField] = []
    for tag, start, stop in r.tagged_fields():
        if tag == 0:
            sub = r.sub(start, stop)
            topic_id = sub.uuid("topic_id")
            sub.done("topic_id")
        else:
            unknown.append(TaggedField(tag, buf[start:stop]))
    return OffsetCommit(
        *key, 4, offset, leader_epoch, metadata, commit_ts, -1, topic_id, tuple(unknown)
    )


VALUE_DECODERS = (
    decode_offset_commit_value_v0,
    decode_offset_commit_value_v1,
    decode_offset_commit_value_v2,
    decode_offset_commit_value_v3,
    decode_offset_commit_value_v4,
)


# -- the hot path -----------------------------------------------------------------------------

_new_offset_commit = fast_init(OffsetCommit)
_new_offset_tombstone = fast_init(OffsetCommitTombstone)
_I64_I32 = struct.Struct(">qi")
_NO_TAGS: tuple[TaggedField, ...] = ()


def _v4_fast(
    record_type: int, group: str, topic: str, partition: int, value: bytes
) -> OffsetCommit | None:
    """A v4 value (what Kafka 4.4 writes) whose metadata is shorter than 127 bytes (a one-byte
    length) and whose tagged fields are none or the topic id alone; else None."""
    vend = len(value)
    n = value[14] - 1 if vend > 14 else -1  # compact string: length + 1, one byte
    if not 0 <= n < 0x7F:
        return None
    stop = 15 + n
    if stop + 9 > vend:
        return None
    try:
        metadata = value[15:stop].decode()
    except UnicodeDecodeError:
        return None
    offset, leader_epoch = _I64_I32.unpack_from(value, 2)
    commit_ts: int = I64.unpack_from(value, stop)[0]
    tags = value[stop + 8]
    if tags == 0:
        topic_id = ZERO_UUID
    elif tags == 1 and value[stop + 9 : stop + 11] == b"\x00\x10" and stop + 27 <= vend:
        topic_id = urlsafe_b64encode(value[stop + 11 : stop + 27])[:22].decode("ascii")
    else:
        return None
    return _new_offset_commit(
        record_type,
        group,
        topic,
        partition,
        4,
        offset,
        leader_epoch,
        metadata,
        commit_ts,
        -1,
        topic_id,
        _NO_TAGS,
    )


def decode_offset_commit_fast(
    key: bytes, value: bytes | None
) -> OffsetCommit | OffsetCommitTombstone | None:
    """Type 0/1 key with a v0-v4 value or a tombstone, in one pass over the bytes.

    Returns None whenever anything is unusual (short buffers, null or oversized strings,
    invalid UTF-8, other versions); the per-version decoders then decode the record or raise
    the precise error. For the inputs it accepts, the result equals theirs.
    """
    end = len(key)
    if end < 4 or key[0] or key[1] > 1:
        return None
    n = key[2] << 8 | key[3]
    p = 4 + n
    if n >= 0x8000 or p + 2 > end:
        return None
    m = key[p] << 8 | key[p + 1]
    q = p + 2 + m
    if m >= 0x8000 or q + 4 > end:
        return None
    try:
        group = key[4:p].decode()
        topic = key[p + 2 : q].decode()
    except UnicodeDecodeError:
        return None
    partition: int = I32.unpack_from(key, q)[0]
    record_type = key[1]
    if value is None:
        return _new_offset_tombstone(record_type, group, topic, partition)
    vend = len(value)
    if vend < 12 or value[0]:
        return None
    version = value[1]
    if version == 4:
        return _v4_fast(record_type, group, topic, partition, value)
    if version == 3:
        if vend < 16:
            return None
        offset, leader_epoch = _I64_I32.unpack_from(value, 2)
        at = 14
    elif version <= 2:
        offset = I64.unpack_from(value, 2)[0]
        leader_epoch = -1
        at = 10
    else:
        return None
    n = value[at] << 8 | value[at + 1]
    start = at + 2
    stop = start + n
    if n >= 0x8000 or stop + (16 if version == 1 else 8) > vend:
        return None
    try:
        metadata = value[start:stop].decode()
    except UnicodeDecodeError:
        return None
    commit_ts: int = I64.unpack_from(value, stop)[0]
    expire_ts: int = I64.unpack_from(value, stop + 8)[0] if version == 1 else -1
    return _new_offset_commit(
        record_type,
        group,
        topic,
        partition,
        version,
        offset,
        leader_epoch,
        metadata,
        commit_ts,
        expire_ts,
        ZERO_UUID,
        _NO_TAGS,
    )
