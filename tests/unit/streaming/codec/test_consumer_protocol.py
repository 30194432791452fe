"""ConsumerProtocol subscription/assignment and the sticky assignors' user data."""

from __future__ import annotations

import pytest

from streaming.codec import (
    DecodeError,
    decode_assignment,
    decode_cooperative_sticky_user_data,
    decode_sticky_user_data,
    decode_subscription,
)
from streaming.codec.errors import MalformedError, TruncatedError
from streaming.codec.model import (
    Assignment,
    CooperativeStickyUserData,
    StickyUserData,
    Subscription,
    TopicPartitions,
)
from tests.unit.streaming.codec import wire as w

pytestmark = pytest.mark.unit

TP = TopicPartitions


def test_docstring_example_v0_subscription() -> None:
    data = bytes.fromhex("0000 00000001 0002 7430 ffffffff")
    assert decode_subscription(data) == Subscription(0, ("t0",), None, (), -1, None, None)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_versions_read_only_their_fields(version: int) -> None:
    data = w.subscription(version, ["a", "b"], b"\x01", [("a", [0, 2])], 5, "rack-1")
    sub = decode_subscription(data)
    assert sub.version == version
    assert sub.topics == ("a", "b")
    assert sub.user_data == b"\x01"
    assert sub.owned_partitions == (((TP("a", (0, 2)),)) if version >= 1 else ())
    assert sub.generation_id == (5 if version >= 2 else -1)
    assert sub.rack_id == ("rack-1" if version >= 3 else None)


def test_future_versions_are_read_as_v3_and_trailing_bytes_ignored() -> None:
    v3 = w.subscription(3, ["t"], None, [("t", [1])], 9, None)
    future = w.i16(7) + v3[2:] + b"\xde\xad\xbe\xef"  # v7 appends fields we do not know
    sub = decode_subscription(future)
    assert sub == Subscription(7, ("t",), None, (TP("t", (1,)),), 9, None, None)
    asg = decode_assignment(w.i16(32767) + w.assignment(3, [("t", [1])])[2:] + b"\x00")
    assert asg == Assignment(32767, (TP("t", (1,)),), None)


def test_negative_versions_are_malformed() -> None:
    with pytest.raises(MalformedError) as e:
        decode_subscription(w.i16(-1) + w.array([]) + w.bytes_(None))
    assert (e.value.field, e.value.offset) == ("version", 0)
    with pytest.raises(MalformedError):
        decode_assignment(w.i16(-3) + w.array([]) + w.bytes_(None))


def test_truncated_subscription_names_the_field() -> None:
    data = w.subscription(2, ["a"], None, [("a", [0])], 4)[:-2]
    with pytest.raises(TruncatedError) as e:
        decode_subscription(data)
    assert e.value.field == "generation_id"
    assert e.value.offset == len(data) - 2


def test_owned_partitions_error_names_the_element() -> None:
    data = (
        w.i16(1) + w.array([]) + w.bytes_(None) + w.array([w.topic_partitions("a", [1]), w.i16(-1)])
    )
    with pytest.raises(DecodeError) as e:
        decode_subscription(data)
    assert e.value.field == "owned_partitions[1].topic"


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignment_versions_are_byte_identical(version: int) -> None:
    data = w.assignment(version, [("b", [3, 1]), ("a", [0])], b"ud")
    assert decode_assignment(data) == Assignment(version, (TP("b", (3, 1)), TP("a", (0,))), b"ud")


def test_sticky_user_data_v1_v0_and_java_fallback() -> None:
    v1 = w.sticky_user_data([("t1", [0, 1]), ("t0", [2])], generation=4)
    assert decode_sticky_user_data(v1) == StickyUserData(1, (TP("t1", (0, 1)), TP("t0", (2,))), 4)
    v0 = w.sticky_user_data([("t1", [0])])
    assert decode_sticky_user_data(v0) == StickyUserData(0, (TP("t1", (0,)),), None)
    garbage = b"\xff\xff\xff\xff"  # a negative array size: neither schema parses
    assert decode_sticky_user_data(garbage) == StickyUserData(-1, (), -1)


def test_sticky_user_data_topics_with_invalid_utf8_read_as_java_does() -> None:
    data = w.array([w.i16(2) + b"a\xff" + w.array([w.i32(0)])]) + w.i32(3)
    assert decode_sticky_user_data(data) == StickyUserData(1, (TP("a\ufffd", (0,)),), 3)


def test_cooperative_sticky_user_data() -> None:
    assert decode_cooperative_sticky_user_data(w.i32(-1)) == CooperativeStickyUserData(-1, True)
    assert decode_cooperative_sticky_user_data(w.i32(6) + b"x") == CooperativeStickyUserData(
        6, True
    )
    assert decode_cooperative_sticky_user_data(b"\x01") == CooperativeStickyUserData(-1, False)


def test_user_data_is_decoded_for_the_selected_assignor_only() -> None:
    sticky = w.sticky_user_data([("t", [0])], generation=2)
    data = w.subscription(3, ["t"], sticky)
    assert decode_subscription(data, "sticky").assignor_data == StickyUserData(
        1, (TP("t", (0,)),), 2
    )
    assert decode_subscription(data, "range").assignor_data is None
    assert decode_subscription(w.subscription(3, ["t"], b""), "sticky").assignor_data is None
    assert decode_subscription(w.subscription(3, ["t"], None), "sticky").assignor_data is None
    coop = decode_subscription(w.subscription(3, ["t"], w.i32(8)), "cooperative-sticky")
    assert coop.assignor_data == CooperativeStickyUserData(8, True)
    empty = decode_subscription(w.subscription(3, ["t"], b""), "cooperative-sticky")
    assert empty.assignor_data == CooperativeStickyUserData(-1, False)
