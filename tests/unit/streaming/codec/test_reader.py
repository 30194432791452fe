"""Wire primitives: values, Kafka's limits, and errors that name field and byte offset."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streaming.codec.errors import DecodeError, MalformedError, TruncatedError
from streaming.codec.model import TaggedField
from streaming.codec.reader import (
    MAX_COLLECTION_SIZE,
    ZERO_UUID,
    Reader,
    uuid_to_str,
)
from tests.unit.streaming.codec import wire as w

pytestmark = pytest.mark.unit


def error(fn, *args):  # type: ignore[no-untyped-def]
    with pytest.raises(DecodeError) as info:
        fn(*args)
    return info.value


# -- fixed width ------------------------------------------------------------------------------


def test_fixed_width_integers_are_big_endian_and_signed() -> None:
    r = Reader(w.i8(-2) + w.i16(-300) + w.u16(65535) + w.i32(-70000) + w.i64(-(2**40)))
    assert r.int8("a") == -2
    assert r.int16("b") == -300
    assert r.uint16("c") == 65535
    assert r.int32("d") == -70000
    assert r.int64("e") == -(2**40)
    assert r.remaining == 0


@pytest.mark.parametrize(
    ("method", "width"), [("int8", 1), ("int16", 2), ("uint16", 2), ("int32", 4), ("int64", 8)]
)
def test_truncated_integer_names_field_and_offset(method: str, width: int) -> None:
    r = Reader(b"\x00" * (3 + width - 1), pos=3)
    e = error(getattr(r, method), "the_field")
    assert isinstance(e, TruncatedError)
    assert (e.field, e.offset) == ("the_field", 3)
    assert str(e) == f"the_field at byte 3: needs {width} byte(s), {width - 1} left"


def test_reader_respects_its_end_inside_a_larger_buffer() -> None:
    r = Reader(w.i32(1) + w.i32(2), pos=0, end=6)
    assert r.int32("a") == 1
    assert isinstance(error(r.int32, "b"), TruncatedError)


def test_uuid_is_kafka_text_form() -> None:
    assert uuid_to_str(bytes(16)) == ZERO_UUID
    # Uuid(0, 1).toString() in Java
    assert Reader(bytes(15) + b"\x01").uuid("id") == "AAAAAAAAAAAAAAAAAAAAAQ"
    text = "Vq7z8kQbT1mQvE3pU5cG6A"
    assert Reader(w.uuid(text)).uuid("id") == text


# -- varints ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 16383, 16384, 2**21, 2**28, 2**31 - 1])
def test_uvarint_round_trip(value: int) -> None:
    r = Reader(w.uvarint(value))
    assert r.uvarint("n") == value
    assert r.remaining == 0


def test_uvarint_beyond_int32_is_malformed() -> None:
    e = error(Reader(w.uvarint(2**31)).uvarint, "n")
    assert isinstance(e, MalformedError)
    assert "exceeds" in e.reason


def test_uvarint_longer_than_five_bytes_is_malformed() -> None:
    e = error(Reader(b"\x80\x80\x80\x80\x80\x00", pos=0).uvarint, "n")
    assert isinstance(e, MalformedError)
    assert (e.offset, e.reason) == (0, "varint longer than 5 bytes")


def test_truncated_uvarint() -> None:
    e = error(Reader(b"\x01\x80\x80", pos=1).uvarint, "n")
    assert isinstance(e, TruncatedError)
    assert e.offset == 1


@pytest.mark.parametrize("value", [0, -1, 1, -64, 63, 2**31 - 1, -(2**31)])
def test_zigzag_varint(value: int) -> None:
    assert Reader(w.varint(value)).varint("n") == value


def test_varlong_reads_64_bits_and_refuses_more() -> None:
    assert Reader(b"\xff" * 9 + b"\x01").uvarlong("n") == 2**64 - 1
    assert Reader(b"\x03").varlong("n") == -2
    assert isinstance(error(Reader(b"\xff" * 10 + b"\x01").uvarlong, "n"), MalformedError)


@given(st.integers(min_value=0, max_value=2**31 - 1))
def test_uvarint_property(value: int) -> None:
    assert Reader(w.uvarint(value) + b"tail").uvarint("n") == value


# -- strings ----------------------------------------------------------------------------------


@given(st.text(max_size=200))
def test_strings_round_trip(text: str) -> None:
    data = w.string(text) + w.cstring(text) + w.string(None) + w.cstring(None)
    r = Reader(data)
    assert r.string("a") == text
    assert r.compact_string("b") == text
    assert r.nullable_string("c") is None
    assert r.compact_nullable_string("d") is None
    assert r.remaining == 0


def test_null_in_non_nullable_strings() -> None:
    e = error(Reader(b"\x00" + w.i16(-1), pos=1).string, "topic")
    assert isinstance(e, MalformedError)
    assert (e.field, e.offset, e.reason) == ("topic", 1, "null in a non-nullable string")
    e = error(Reader(w.uvarint(0)).compact_string, "client_id")
    assert (e.field, e.reason) == ("client_id", "null in a non-nullable string")


def test_any_negative_length_reads_as_null_in_nullable_strings() -> None:
    # Kafka: `if (length < 0) null`
    assert Reader(w.i16(-7)).nullable_string("s") is None


def test_string_longer_than_the_buffer_is_truncated() -> None:
    e = error(Reader(w.i16(10) + b"abc").string, "group")
    assert isinstance(e, TruncatedError)
    assert (e.offset, e.reason) == (0, "string of 10 byte(s), only 3 byte(s) left")


def test_compact_string_longer_than_32767_is_malformed() -> None:
    e = error(Reader(w.uvarint(40000) + b"a" * 40000).compact_string, "s")
    assert isinstance(e, MalformedError)
    assert "exceeds 32767" in e.reason


def test_invalid_utf8_names_the_first_bad_byte() -> None:
    e = error(Reader(w.i16(4) + b"ab\xffc").string, "topic")
    assert isinstance(e, MalformedError)
    assert (e.offset, e.reason) == (4, "invalid UTF-8 (invalid start byte)")
    # surrogates encoded in UTF-8 are invalid too (Java never writes them)
    assert isinstance(error(Reader(w.i16(3) + b"\xed\xa0\x80").string, "t"), MalformedError)


def test_lenient_string_substitutes_like_java() -> None:
    assert Reader(w.i16(4) + b"ab\xffc").lenient_string("topic") == "ab\ufffdc"


# -- bytes ------------------------------------------------------------------------------------


def test_bytes_variants() -> None:
    data = w.bytes_(b"\x01\x02") + w.bytes_(None) + w.cbytes(b"") + w.cbytes(None) + w.bytes_(b"")
    r = Reader(data)
    assert r.bytes_("a") == b"\x01\x02"
    assert r.nullable_bytes("b") is None
    assert r.compact_bytes("c") == b""
    assert r.compact_nullable_bytes("d") is None
    assert r.bytes_span("e") == (len(data), len(data))


def test_null_and_oversized_bytes() -> None:
    assert isinstance(error(Reader(w.i32(-1)).bytes_, "subscription"), MalformedError)
    e = error(Reader(w.i32(2**31 - 1) + b"xx").nullable_bytes, "user_data")
    assert isinstance(e, TruncatedError)
    assert e.reason == "bytes of length 2147483647, only 2 byte(s) left"


# -- arrays -----------------------------------------------------------------------------------


def test_arrays_of_ints_and_strings() -> None:
    data = (
        w.array([w.i32(3), w.i32(-1)])
        + w.carray([w.i32(7)])
        + w.carray(None)
        + w.carray([w.i16(1), w.i16(-2)])
        + w.array([w.string("a"), w.string("é")])
        + w.carray([w.cstring("x")])
    )
    r = Reader(data)
    assert r.int32_array("a") == (3, -1)
    assert r.compact_int32_array("b") == (7,)
    assert r.compact_nullable_int32_array("c") is None
    assert r.compact_int16_array("d") == (1, -2)
    assert r.string_array("e") == ("a", "é")
    assert r.compact_string_array("f") == ("x",)
    assert r.remaining == 0


def test_long_int32_arrays() -> None:
    values = list(range(-500, 500))
    assert Reader(w.array(w.i32(v) for v in values)).int32_array("p") == tuple(values)


def test_huge_count_fails_fast_without_allocating() -> None:
    data = w.i32(2**31 - 1) + b"\x00" * 16
    started = time.perf_counter()
    e = error(Reader(data).int32_array, "partitions")
    assert time.perf_counter() - started < 0.01
    assert isinstance(e, TruncatedError)
    assert e.reason == "array of 2147483647 element(s), only 16 byte(s) left"


def test_counts_above_kafkas_limit_are_malformed() -> None:
    n = MAX_COLLECTION_SIZE + 1
    e = error(Reader(w.i32(n) + bytes(n)).array_len, "topics")
    assert isinstance(e, MalformedError)
    assert "exceeds 1000000" in e.reason


def test_null_arrays() -> None:
    assert isinstance(error(Reader(w.i32(-1)).array_len, "a"), MalformedError)
    assert Reader(w.i32(-5)).nullable_array_len("a") is None
    assert Reader(w.uvarint(0)).compact_nullable_array_len("a") is None
    assert isinstance(error(Reader(w.uvarint(0)).compact_array_len, "a"), MalformedError)


def test_string_array_fast_path_reports_the_same_error_as_element_by_element() -> None:
    data = w.array([w.string("ok"), w.i16(5) + b"ab\xff\xfe!"])
    e = error(Reader(data).string_array, "topics")
    assert (e.field, e.offset, e.reason) == ("topics", 12, "invalid UTF-8 (invalid start byte)")


def test_struct_errors_are_prefixed_with_the_element_index() -> None:
    data = w.array([w.string("a"), w.i16(-1)])
    e = error(Reader(data).structs, "topics", lambda r: r.string("name"))
    assert (e.field, e.offset) == ("topics[1].name", 7)


# -- tagged fields ----------------------------------------------------------------------------


def test_tagged_fields_are_spans_and_unknown_ones_are_kept() -> None:
    data = w.tags({0: w.i64(5), 7: b"\x01\x02"})
    r = Reader(data)
    spans = r.tagged_fields()
    assert [(tag, data[a:b]) for tag, a, b in spans] == [(0, w.i64(5)), (7, b"\x01\x02")]
    assert Reader(data).unknown_tags() == (TaggedField(0, w.i64(5)), TaggedField(7, b"\x01\x02"))
    assert Reader(w.tags()).unknown_tags() == ()


def test_tagged_field_limits() -> None:
    e = error(Reader(w.uvarint(3) + b"\x00").tagged_fields)
    assert isinstance(e, TruncatedError)
    e = error(Reader(w.uvarint(1) + w.uvarint(4) + w.uvarint(9) + b"abc").tagged_fields)
    assert (e.field, e.reason) == (
        "_tagged_fields[tag 4]",
        "payload of 9 byte(s), only 3 byte(s) left",
    )
    e = error(Reader(w.uvarint(10_001) + bytes(20_000)).tagged_fields)
    assert isinstance(e, MalformedError)


def test_done_requires_a_tag_payload_to_be_consumed() -> None:
    r = Reader(w.i32(1) + b"\x00", 0, 5)
    r.int32("x")
    e = error(r.done, "metadata_hash")
    assert (e.field, e.offset, e.reason) == (
        "metadata_hash",
        4,
        "1 unread byte(s) in a tagged field",
    )


def test_error_within_and_pickle() -> None:
    import pickle

    e = TruncatedError("topics", 4, "x")
    assert e.within("value").field == "value.topics"
    assert e.within("members[2]").within("value").field == "value.members[2].topics"
    assert isinstance(e.within("v"), TruncatedError)
    again = pickle.loads(pickle.dumps(e))
    assert (type(again), again.field, again.offset, again.reason) == (
        TruncatedError,
        "topics",
        4,
        "x",
    )
    assert isinstance(e, ValueError)
