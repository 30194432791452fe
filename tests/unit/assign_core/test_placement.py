"""Coordinator partition, producer partitioning and replica placement, against Java's values.

Vectors: kafka-internals.md §7 (Kafka's UtilsTest, AdminUtils javadoc, AdminRackAwareTest),
values checked against kafka-clients 4.4.0 where marked, and the source documents 001/002.
"""

from __future__ import annotations

import pytest

from assign_core.errors import ScenarioError
from assign_core.javacompat import string_hash, to_int32
from assign_core.placement import (
    Broker,
    assign_replicas_to_brokers,
    coordinator_partition,
    java_abs,
    murmur2,
    partition_for_key,
    rack_alternated_broker_list,
    to_positive,
)

pytestmark = pytest.mark.unit

# --- 7.1 coordinator --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "hash_code", "partition"),
    [
        ("group", 98629247, 47),
        ("my-group", -1906497762, 12),
        ("test-group", 627841412, 12),
        ("console-consumer-12345", 158455506, 6),
        ("", 0, 0),
        ("polygenelubricants", -(2**31), 0),  # hashCode == Integer.MIN_VALUE, Utils.abs -> 0
        ("Aa", 2112, 12),
        ("BB", 2112, 12),  # same hashCode as "Aa", same coordinator
        ("G1", 2250, 0),  # document 004's group (kafka-clients 4.4.0)
    ],
)
def test_coordinator_partition(group: str, hash_code: int, partition: int) -> None:
    assert string_hash(group) == hash_code
    assert coordinator_partition(group) == partition
    assert coordinator_partition(group, 50) == partition


def test_coordinator_partition_other_counts() -> None:
    assert coordinator_partition("group", 1) == 0
    assert coordinator_partition("my-group", 7) == 1906497762 % 7


def _article_001_formula(group: str, partitions: int = 50) -> int:
    """Document 001 writes ``Util.abs(groupId.hashCode() % count)``: abs *after* the modulo."""
    h = string_hash(group)
    java_rem = -(abs(h) % partitions) if h < 0 else h % partitions  # Java's % truncates
    return abs(java_rem)


@pytest.mark.parametrize("group", ["group", "my-group", "test-group", "console-consumer-12345"])
def test_document_001_formula_agrees_except_min_value(group: str) -> None:
    assert _article_001_formula(group) == coordinator_partition(group)


def test_document_001_formula_is_wrong_for_min_value() -> None:
    # Document 001 puts the modulo inside abs. Kafka computes Utils.abs(hashCode) % 50, and
    # Utils.abs(Integer.MIN_VALUE) is 0 (Math.abs would stay negative). For a group id hashing
    # to MIN_VALUE the article's formula gives |-2147483648 % 50| = 48; Java says 0.
    assert _article_001_formula("polygenelubricants") == 48
    assert coordinator_partition("polygenelubricants") == 0


def test_java_abs_and_to_positive() -> None:
    assert java_abs(-(2**31)) == 0
    assert java_abs(-5) == 5
    assert java_abs(2**31 - 1) == 2**31 - 1
    assert to_positive(-1) == 2**31 - 1
    assert to_positive(-(2**31)) == 0
    assert to_positive(to_int32(0xDEADBEEF)) == 0xDEADBEEF & 0x7FFFFFFF


@pytest.mark.parametrize("bad", [0, -1])
def test_coordinator_partition_rejects_bad_counts(bad: int) -> None:
    with pytest.raises(ScenarioError) as e:
        coordinator_partition("g", bad)
    assert e.value.field == "partitions"


# --- 7.2 producer partitioning ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        # Kafka UtilsTest.testMurmur2
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
        # checked with kafka-clients 4.4.0 Utils.murmur2
        (b"", 275646681),
        (b"order-42", 501153024),
        ("用户-1".encode(), 335664456),
    ],
)
def test_murmur2_vectors(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


@pytest.mark.parametrize(
    ("key", "partitions", "expected"),
    [
        ("foobar", 10, 6),  # §7.2: toPositive(-790332482) % 10
        (b"foobar", 10, 6),  # bytes and UTF-8 str agree
        ("21", 10, 0),
        ("a-little-bit-long-string", 3, 2),
        ("order-42", 10, 4),  # kafka-clients 4.4.0
        ("用户-1", 10, 6),  # kafka-clients 4.4.0: StringSerializer encodes UTF-8
        ("", 10, 1),  # an empty key is still a key (hashed, not sticky-partitioned)
        ("anything", 1, 0),
    ],
)
def test_partition_for_key(key: bytes | str, partitions: int, expected: int) -> None:
    assert partition_for_key(key, partitions) == expected


def test_document_002_key_hash_is_murmur2_not_hashcode() -> None:
    # Document 002: "the key's hash modulo the partition count". The Java producer hashes the
    # serialized key bytes with murmur2 and clears the sign bit (toPositive); it does not use
    # String.hashCode. The two differ, e.g. for "foobar": abs(hashCode) % 10 = 3, Java picks 6.
    assert abs(string_hash("foobar")) % 10 == 3
    assert partition_for_key("foobar", 10) == 6
    # Its third rule (no key: a random start, then round-robin) describes producers before
    # 2.4; since KIP-480/KIP-794 a null key uses the sticky partitioner, which is random and
    # not modelled: partition_for_key only takes real keys.


def test_partition_for_key_rejects_bad_counts() -> None:
    with pytest.raises(ScenarioError) as e:
        partition_for_key("k", 0)
    assert e.value.field == "partitions"


# --- 7.3 replica placement --------------------------------------------------------------------

FIVE_BROKERS_TEN_PARTITIONS = {
    0: [0, 1, 2],
    1: [1, 2, 3],
    2: [2, 3, 4],
    3: [3, 4, 0],
    4: [4, 0, 1],
    5: [0, 2, 3],  # second round: the replica shift grows by one
    6: [1, 3, 4],
    7: [2, 4, 0],
    8: [3, 0, 1],
    9: [4, 1, 2],
}


def test_rack_unaware_five_brokers() -> None:
    # §7.3 and the AdminUtils javadoc table: brokers 0..4, fixed start 0, rf 3
    got = assign_replicas_to_brokers([0, 1, 2, 3, 4], 10, 3, fixed_start_index=0)
    assert got == FIVE_BROKERS_TEN_PARTITIONS
    assert list(got) == list(range(10))


def test_broker_objects_without_racks_are_rack_unaware() -> None:
    brokers = [Broker(i) for i in range(5)]
    assert assign_replicas_to_brokers(brokers, 10, 3, fixed_start_index=0) == (
        FIVE_BROKERS_TEN_PARTITIONS
    )


def test_start_partition_id_continues_the_sequence() -> None:
    # Adding partitions 5..9 later gives what creating 10 at once gives (same start/shift):
    # partition 5 is a multiple of the broker count, so the shift grows before it.
    got = assign_replicas_to_brokers(
        [0, 1, 2, 3, 4], 5, 3, fixed_start_index=0, start_partition_id=5
    )
    assert got == {p: FIVE_BROKERS_TEN_PARTITIONS[p] for p in range(5, 10)}


def test_document_002_naive_formula_only_holds_for_the_first_round() -> None:
    # Document 002 first states the naive rule "partition i on broker i mod n, its replica j
    # on broker (i + j) mod n", then (rightly) says Kafka starts at a random broker and shifts
    # the followers. With a fixed start of 0 the naive rule matches Java for the first n
    # partitions only; from partition n on the follower shift grows: p5 is [0, 2, 3], not the
    # naive [0, 1, 2].
    got = assign_replicas_to_brokers([0, 1, 2, 3, 4], 10, 3, fixed_start_index=0)
    naive = {i: [(i + j) % 5 for j in range(3)] for i in range(10)}
    assert all(got[i] == naive[i] for i in range(5))
    assert got[5] == [0, 2, 3] != naive[5]


def test_document_002_start_index_rotates_the_leaders() -> None:
    # Document 002: 5 brokers, 5 partitions, the first partition on the 4th broker -> the
    # second on the 5th, the third on the 1st, the fourth on the 2nd. (With a fixed start
    # index Java uses it for the replica shift too.)
    got = assign_replicas_to_brokers([0, 1, 2, 3, 4], 5, 3, fixed_start_index=3)
    assert [replicas[0] for replicas in got.values()] == [3, 4, 0, 1, 2]
    assert got[0] == [3, 2, 4]  # replicaIndex(3, shift 3, j) = 3 + 1 + (3 + j) % 4


def test_replica_shift_can_differ_from_the_start_index() -> None:
    # Java draws start index and shift independently when fixedStartIndex is -1.
    got = assign_replicas_to_brokers([0, 1, 2, 3, 4], 2, 3, fixed_start_index=0, replica_shift=1)
    assert got == {0: [0, 2, 3], 1: [1, 3, 4]}


def test_broker_order_is_as_given() -> None:
    got = assign_replicas_to_brokers([10, 20, 30], 3, 2, fixed_start_index=0)
    assert got == {0: [10, 20], 1: [20, 30], 2: [30, 10]}


RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def test_rack_alternated_broker_list() -> None:
    assert rack_alternated_broker_list(RACKS) == [0, 3, 1, 5, 4, 2]
    # javadoc of getRackAlternatedBrokerList
    racks = {b: f"rack{b // 3 + 1}" for b in range(9)}
    assert rack_alternated_broker_list(racks) == [0, 3, 6, 1, 4, 7, 2, 5, 8]
    # uneven racks: exhausted racks are skipped
    assert rack_alternated_broker_list({1: "a", 2: "a", 3: "a", 4: "b"}) == [1, 4, 2, 3]


def test_rack_aware_admin_rack_aware_test() -> None:
    # AdminRackAwareTest / AdminUtils javadoc: 7 partitions, rf 3, fixed start 0
    brokers = [Broker(b, r) for b, r in RACKS.items()]
    got = assign_replicas_to_brokers(brokers, 7, 3, fixed_start_index=0)
    assert got == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],  # second round shifts the followers instead of repeating [0, 3, 1]
    }


def test_rack_aware_spreads_replicas_over_racks() -> None:
    brokers = [Broker(b, r) for b, r in RACKS.items()]
    got = assign_replicas_to_brokers(brokers, 30, 3, fixed_start_index=2)
    for replicas in got.values():
        assert len(set(replicas)) == 3
        assert len({RACKS[b] for b in replicas}) == 3


def test_rack_aware_more_replicas_than_racks() -> None:
    brokers = [Broker(0, "a"), Broker(1, "a"), Broker(2, "b"), Broker(3, "b")]
    got = assign_replicas_to_brokers(brokers, 8, 3, fixed_start_index=1)
    for replicas in got.values():
        assert len(set(replicas)) == 3
        assert {("a" if b < 2 else "b") for b in replicas} == {"a", "b"}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"brokers": [0, 1], "n_partitions": 0, "replication_factor": 1}, "n_partitions"),
        ({"brokers": [0, 1], "n_partitions": 1, "replication_factor": 0}, "replication_factor"),
        ({"brokers": [0, 1], "n_partitions": 1, "replication_factor": 3}, "replication_factor"),
        ({"brokers": [0, 0], "n_partitions": 1, "replication_factor": 1}, "brokers[1]"),
        (
            {"brokers": [Broker(0, "r"), Broker(1)], "n_partitions": 1, "replication_factor": 1},
            "brokers[1].rack",
        ),
    ],
)
def test_replica_placement_errors(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ScenarioError) as e:
        assign_replicas_to_brokers(fixed_start_index=0, **kwargs)  # type: ignore[arg-type]
    assert e.value.field == field


def test_replica_placement_needs_a_fixed_start_index() -> None:
    with pytest.raises(ScenarioError) as e:
        assign_replicas_to_brokers([0, 1], 1, 1, fixed_start_index=-1)
    assert e.value.field == "fixed_start_index"
