"""The consumer protocol payloads embedded in classic GroupMetadata members.

Both payloads are ``int16 version`` + a non-flexible struct. As ``ConsumerProtocol`` does, a
version above 3 is read with the v3 schema (new versions may only append fields), a negative
version is malformed, and trailing bytes are ignored.

ConsumerProtocolSubscription::

    v0  Topics []string, UserData nullable bytes
    v1  + OwnedPartitions []{Topic string, Partitions []int32}
    v2  + GenerationId int32                      (default -1)
    v3  + RackId nullable string                  (default null)

ConsumerProtocolAssignment (v0-v3 are byte-identical)::

    AssignedPartitions []{Topic string, Partitions []int32}, UserData nullable bytes

Assignor user data, decoded for the group's selected protocol (``assignor``):

* ``sticky`` (StickyAssignor): V1 = previous_assignment []{topic string, partitions []int32},
  generation int32; V0 = the same without generation. Java tries V1, then V0, then gives up
  with no partitions and generation -1; null or empty user data means no data. Topic names
  with invalid UTF-8 get U+FFFD, as Java's reader does (this decoding never fails).
* ``cooperative-sticky``: generation int32; fewer than 4 bytes read as -1.

Example, a v0 subscription to ``t0`` with no user data::

    0000 00000001 0002 7430 ffffffff
"""

from __future__ import annotations

from collections.abc import Callable

from streaming.codec.errors import DecodeError, MalformedError
from streaming.codec.model import (
    Assignment,
    CooperativeStickyUserData,
    StickyUserData,
    Subscription,
    TopicPartitions,
    fast_init,
)
from streaming.codec.reader import I32, MAX_COLLECTION_SIZE, Reader, int32s

__all__ = [
    "assignor_user_data",
    "decode_assignment",
    "decode_assignment_v0",
    "decode_cooperative_sticky_user_data",
    "decode_franz_go_sticky_user_data",
    "decode_sticky_user_data",
    "decode_sticky_user_data_v0",
    "decode_sticky_user_data_v1",
    "decode_subscription",
    "decode_subscription_v0",
    "decode_subscription_v1",
    "decode_subscription_v2",
    "decode_subscription_v3",
    "read_assignment",
    "read_subscription",
]

_NO_PARTITIONS: tuple[TopicPartitions, ...] = ()


_new_topic_partitions = fast_init(TopicPartitions)
_new_subscription = fast_init(Subscription)
_new_assignment = fast_init(Assignment)


def _topic_partitions(r: Reader) -> TopicPartitions:
    topic = r.string("topic")
    return _new_topic_partitions(topic, r.int32_array("partitions"))


def _topic_partitions_array(r: Reader, field: str) -> tuple[TopicPartitions, ...]:
    """[]{Topic string, Partitions []int32} in one pass; on anything unusual the generic
    struct reader runs from the start and raises the precise error."""
    buf, pos, end = r.buf, r.pos, r.end
    if pos + 4 <= end:
        count: int = I32.unpack_from(buf, pos)[0]
        pos += 4
        if 0 <= count <= end - pos and count <= MAX_COLLECTION_SIZE:
            out = []
            for _ in range(count):
                start = pos + 2
                if start > end:
                    break
                n = buf[pos] << 8 | buf[pos + 1]
                stop = start + n
                if n >= 0x8000 or stop + 4 > end:
                    break
                try:
                    topic = buf[start:stop].decode()
                except UnicodeDecodeError:
                    break
                m: int = I32.unpack_from(buf, stop)[0]
                pos = stop + 4
                if m < 0 or 4 * m > end - pos or m > MAX_COLLECTION_SIZE:
                    break
                out.append(_new_topic_partitions(topic, int32s(buf, pos, m)))
                pos += 4 * m
            else:
                r.pos = pos
                return tuple(out)
    return r.structs(field, _topic_partitions)


# -- user data ------------------------------------------------------------------------------


def _sticky_topic_partitions(r: Reader) -> TopicPartitions:
    topic = r.lenient_string("topic")
    return TopicPartitions(topic, r.int32_array("partitions"))


def decode_sticky_user_data_v1(r: Reader) -> StickyUserData:
    previous = r.structs("previous_assignment", _sticky_topic_partitions)
    return StickyUserData(1, previous, r.int32("generation"))


def decode_sticky_user_data_v0(r: Reader) -> StickyUserData:
    return StickyUserData(0, r.structs("previous_assignment", _sticky_topic_partitions), None)


def decode_sticky_user_data(data: bytes) -> StickyUserData:
    """StickyAssignor user data as Java reads it: V1, else V0, else (no partitions, -1)."""
    try:
        return decode_sticky_user_data_v1(Reader(data))
    except DecodeError:
        pass
    try:
        return decode_sticky_user_data_v0(Reader(data))
    except DecodeError:
        return StickyUserData(-1, _NO_PARTITIONS, -1)


def decode_kafka_python_sticky_user_data(data: bytes) -> StickyUserData:
    """kafka-python's ``sticky`` user data as kafka-python reads it: an int16 version, then
    the V0 or V1 struct (versions above 1 read as V1); unreadable: (no partitions, -1)."""
    try:
        r = Reader(data)
        version = r.int16("version")
        if version < 0:
            raise MalformedError("version", 0, f"negative version {version}")
        if version == 0:
            return decode_sticky_user_data_v0(r)
        return decode_sticky_user_data_v1(r)
    except DecodeError:
        return StickyUserData(-1, _NO_PARTITIONS, -1)


def decode_franz_go_sticky_user_data(data: bytes) -> StickyUserData:
    """franz-go's sticky user data as franz-go reads it (``deserializeUserData``): Java's
    struct, read leniently (an array longer than the bytes left, or a string that overruns,
    makes the whole claim empty; a negative array length is an empty array), then the
    generation if any bytes are left (-1 when none or unreadable)."""
    pos, bad = 0, False
    claims: list[TopicPartitions] = []

    def int32() -> int:
        nonlocal pos, bad
        if bad or len(data) - pos < 4:
            bad = True
            return 0
        value: int = I32.unpack_from(data, pos)[0]
        pos += 4
        return value

    def array_len() -> int:
        nonlocal bad
        n = int32()
        if len(data) - pos < n:
            bad = True
            return 0
        return n

    for _ in range(array_len()):
        if bad or len(data) - pos < 2:
            bad = True
            break
        length = int.from_bytes(data[pos : pos + 2], "big", signed=True)
        pos += 2
        if length < 0 or len(data) - pos < length:
            bad = True
            break
        topic = data[pos : pos + length].decode("utf-8", "replace")
        pos += length
        claims.append(TopicPartitions(topic, tuple(int32() for _ in range(array_len()))))
    generation = -1
    if not bad and pos < len(data):
        generation = int32()
    if bad:
        return StickyUserData(-1, _NO_PARTITIONS, generation)
    return StickyUserData(1, tuple(claims), generation)


def decode_cooperative_sticky_user_data(data: bytes) -> CooperativeStickyUserData:
    """CooperativeStickyAssignor user data: the generation, or -1 if under 4 bytes."""
    if len(data) < 4:
        return CooperativeStickyUserData(-1, False)
    generation: int = I32.unpack_from(data)[0]
    return CooperativeStickyUserData(generation, True)


def assignor_user_data(
    assignor: str | None, user_data: bytes | None
) -> StickyUserData | CooperativeStickyUserData | None:
    """The subscription user data decoded for the named assignor, if it is a sticky one."""
    if user_data is None:
        return None
    if assignor == "cooperative-sticky":
        return decode_cooperative_sticky_user_data(user_data)
    if assignor == "sticky" and user_data:
        return decode_sticky_user_data(user_data)
    return None


# -- subscription ---------------------------------------------------------------------------


def decode_subscription_v0(r: Reader, version: int, assignor: str | None) -> Subscription:
    topics = r.string_array("topics")
    user_data = r.nullable_bytes("user_data")
    data = assignor_user_data(assignor, user_data)
    return _new_subscription(version, topics, user_data, _NO_PARTITIONS, -1, None, data)


def decode_subscription_v1(r: Reader, version: int, assignor: str | None) -> Subscription:
    topics = r.string_array("topics")
    user_data = r.nullable_bytes("user_data")
    owned = _topic_partitions_array(r, "owned_partitions")
    data = assignor_user_data(assignor, user_data)
    return _new_subscription(version, topics, user_data, owned, -1, None, data)


def decode_subscription_v2(r: Reader, version: int, assignor: str | None) -> Subscription:
    topics = r.string_array("topics")
    user_data = r.nullable_bytes("user_data")
    owned = _topic_partitions_array(r, "owned_partitions")
    generation_id = r.int32("generation_id")
    data = assignor_user_data(assignor, user_data)
    return _new_subscription(version, topics, user_data, owned, generation_id, None, data)


def decode_subscription_v3(r: Reader, version: int, assignor: str | None) -> Subscription:
    topics = r.string_array("topics")
    user_data = r.nullable_bytes("user_data")
    owned = _topic_partitions_array(r, "owned_partitions")
    generation_id = r.int32("generation_id")
    rack_id = r.nullable_string("rack_id")
    data = assignor_user_data(assignor, user_data)
    return _new_subscription(version, topics, user_data, owned, generation_id, rack_id, data)


_SUBSCRIPTION_DECODERS: tuple[Callable[[Reader, int, str | None], Subscription], ...] = (
    decode_subscription_v0,
    decode_subscription_v1,
    decode_subscription_v2,
    decode_subscription_v3,
)


def read_subscription(buf: bytes, start: int, stop: int, assignor: str | None) -> Subscription:
    """The subscription in ``buf[start:stop]`` (error offsets are offsets in ``buf``)."""
    r = Reader(buf, start, stop)
    version = r.int16("version")
    if version < 0:
        raise MalformedError("version", start, f"unsupported subscription version {version}")
    return _SUBSCRIPTION_DECODERS[min(version, 3)](r, version, assignor)


def decode_subscription(data: bytes, assignor: str | None = None) -> Subscription:
    """A version-prefixed ConsumerProtocolSubscription; ``assignor`` selects the user-data
    decoding (``"sticky"``, ``"cooperative-sticky"``)."""
    return read_subscription(bytes(data), 0, len(data), assignor)


# -- assignment -----------------------------------------------------------------------------


def decode_assignment_v0(r: Reader, version: int) -> Assignment:
    """v0; v1-v3 are byte-identical (they exist to stay in lockstep with the subscription)."""
    assigned = _topic_partitions_array(r, "assigned_partitions")
    return _new_assignment(version, assigned, r.nullable_bytes("user_data"))


def read_assignment(buf: bytes, start: int, stop: int) -> Assignment:
    """The assignment in ``buf[start:stop]`` (error offsets are offsets in ``buf``)."""
    r = Reader(buf, start, stop)
    version = r.int16("version")
    if version < 0:
        raise MalformedError("version", start, f"unsupported assignment version {version}")
    return decode_assignment_v0(r, version)


def decode_assignment(data: bytes) -> Assignment:
    """A version-prefixed ConsumerProtocolAssignment."""
    return read_assignment(bytes(data), 0, len(data))
