"""Java semantics emulation, against values verified on JDK 17 (reference §4, §7.1)."""

from __future__ import annotations

import pytest

from assign_core import javacompat as j

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("consumer1", -421004549),
        ("consumer2", -421004548),
        ("group", 98629247),
        ("polygenelubricants", -2147483648),
        ("", 0),
        ("Aa", 2112),
        ("BB", 2112),
        ("\U0001f600", 1772899),  # a surrogate pair: two UTF-16 code units (JDK 17)
    ],
)
def test_string_hash(text: str, expected: int) -> None:
    assert j.string_hash(text) == expected


def test_hashmap_iteration_orders() -> None:
    assert j.string_hash_order(["consumer1", "consumer2", "consumer3"]) == [
        "consumer3",
        "consumer2",
        "consumer1",
    ]
    assert j.string_hash_order([f"t{i}" for i in range(1, 7)]) == [
        "t4",
        "t5",
        "t6",
        "t1",
        "t2",
        "t3",
    ]
    assert j.string_hash_order(["member1", "member2", "member3"]) == [
        "member2",
        "member3",
        "member1",
    ]
    assert j.hash_order([3, 17, 1], lambda x: x) == [17, 1, 3]


def test_hashmap_grows_and_never_shrinks() -> None:
    order: j.JavaHashOrder[int] = j.JavaHashOrder(lambda x: x)
    order.add_all(range(13))  # the 13th key doubles the table: 16 -> 32
    assert order.capacity == 32
    for k in range(13):
        order.remove(k)
    order.add_all([33, 1])  # buckets of a 32-table: 33 -> 1, 1 -> 1; same bucket: insertion order
    assert order.capacity == 32
    assert order.ordered() == [33, 1]


def test_uuid_semantics() -> None:
    ids = {
        "T1-A4s3VTwiI5CTbEp6POw": 418407434,
        "T2-B4s3VTwiI5YHbPp6YUe": 885118816,
        "T3-CU8fVTLCz5YMkLoDQsa": 365927798,
        "T4-Tw9fVTLCz5HbPp6YQsa": -1944536819,
    }
    assert {u: j.uuid_hash(u) for u in ids} == ids
    assert j.hash_order(list(ids), j.uuid_hash) == [
        "T2-B4s3VTwiI5YHbPp6YUe",
        "T4-Tw9fVTLCz5HbPp6YQsa",
        "T3-CU8fVTLCz5YMkLoDQsa",
        "T1-A4s3VTwiI5CTbEp6POw",
    ]


def test_compare_to_orders_utf16_code_units() -> None:
    # U+FFFD sorts after a surrogate pair in Java (0xFFFD > 0xD83D), before it in Python.
    words = ["\ufffd", "\U0001f600"]
    assert sorted(words) == ["\ufffd", "\U0001f600"]
    assert j.java_sorted_strings(words) == ["\U0001f600", "\ufffd"]
    assert sorted(words, key=j.java_str_key) == ["\U0001f600", "\ufffd"]


def test_capacities() -> None:
    assert j.table_size_for(1) == 1
    assert j.table_size_for(17) == 32
    assert j.capacity_for_copy(3) == 8  # JDK 17: tableSizeFor(3/0.75 + 1)
    assert j.capacity_for_copy(12) == 32
    assert j.capacity_for_hashset_copy(12) == 32
    assert j.capacity_for_hashset_copy(2) == 16


def test_timeline_order() -> None:
    """``TimelineHashMap`` (expected size 0) after ``put`` of these keys in this order,
    iterated on JDK 17 with kafka-server-common 4.4.0: by slot (Fibonacci hashing of
    ``hashCode``), the later insertion first within a slot ("c" before its slot mate
    "UpFj…")."""
    keys = [
        "UpFjBxyTQVW8acWDJVJR0Q",
        "hU3xqQeGR-iLa8G2Zb-CCg",
        "Edd8JHDJQ6ivtN5CuhW1Gg",
        *"abcdefgh",
    ]
    order = j.timeline_order([j.string_hash(k) for k in keys])
    assert [keys[i] for i in order] == [
        "f",
        "c",
        "UpFjBxyTQVW8acWDJVJR0Q",
        "h",
        "e",
        "b",
        "hU3xqQeGR-iLa8G2Zb-CCg",
        "g",
        "Edd8JHDJQ6ivtN5CuhW1Gg",
        "d",
        "a",
    ]
    assert j.timeline_order([]) == []
