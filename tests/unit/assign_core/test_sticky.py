"""Unit tests of the client-side ``sticky`` assignor (and the shared sticky core).

Every expected list is what kafka-clients 4.4.0 returns for the same input through
``AbstractPartitionAssignor.assign(Cluster, ...)`` with the subscriptions serialized as the
leader receives them (checked with ``tests/oracle``), list order included. Kafka's own unit
tests (reference §9, S10-S23) often compare sets or sorted strings; here the exact Java lists
are asserted. The helpers are shared with ``test_cooperative_sticky.py``.
"""

from __future__ import annotations

import doctest
import gc
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assign_core import partition_cache
from assign_core.assignors import get_assignor
from assign_core.assignors import sticky as sticky_module
from assign_core.assignors.sticky import StickyAssignor
from assign_core.errors import AssignmentError
from assign_core.model import AssignmentResult, GroupSpec, Member, TopicPartition

pytestmark = pytest.mark.unit

# ------------------------------------------------------------------------------- helpers


def tps(text: str) -> tuple[TopicPartition, ...]:
    """``"t-0 t-1"`` -> TopicPartitions (the topic is everything before the last dash)."""
    out = []
    for item in text.split():
        topic, _, p = item.rpartition("-")
        out.append(TopicPartition(topic, int(p)))
    return tuple(out)


def member(
    member_id: str,
    topics: Sequence[str],
    owned: str = "",
    generation: int | None = None,
    rack: str | None = None,
) -> Member:
    return Member(
        member_id=member_id,
        topics=tuple(topics),
        owned_partitions=tps(owned),
        generation=generation,
        rack=rack,
    )


def group(
    topics: Mapping[str, int],
    *members: Member,
    partition_racks: Mapping[str, tuple[tuple[str, ...], ...]] | None = None,
) -> GroupSpec:
    return GroupSpec(topics=dict(topics), members=members, partition_racks=partition_racks or {})


def kafka_test_racks(
    topics: Mapping[str, int], replication_factor: int, broker_racks: Sequence[str]
) -> dict[str, tuple[tuple[str, ...], ...]]:
    """The replica layout of Kafka's ``AbstractStickyAssignorTest``: one broker per entry of
    ``broker_racks``; replica ``j`` of partition ``i`` is on broker ``(i + j + offset) % n``,
    ``offset`` being the number of partitions of the topics listed before this one."""
    out: dict[str, tuple[tuple[str, ...], ...]] = {}
    offset = 0
    n = len(broker_racks)
    for topic, count in topics.items():
        out[topic] = tuple(
            tuple(broker_racks[(i + j + offset) % n] for j in range(replication_factor))
            for i in range(count)
        )
        offset += count
    return out


def lists(result: AssignmentResult) -> dict[str, str]:
    """Each member's list as ``"t-0 t-1 ..."`` (order preserved)."""
    return {m: " ".join(map(str, partitions)) for m, partitions in result.assignment.items()}


def next_round(
    spec: GroupSpec,
    result: AssignmentResult,
    generation: int,
    *,
    leave: Sequence[str] = (),
    join: Sequence[Member] = (),
) -> GroupSpec:
    """The next rebalance: every remaining member owns what ``result`` gave it."""
    members = tuple(
        Member(
            member_id=m.member_id,
            topics=m.topics,
            owned_partitions=tuple(result.assignment[m.member_id]),
            generation=generation,
            rack=m.rack,
        )
        for m in spec.members
        if m.member_id not in leave
    )
    return GroupSpec(
        topics=spec.topics, members=members + tuple(join), partition_racks=spec.partition_racks
    )


def check_invariants(spec: GroupSpec, result: AssignmentResult) -> None:
    """For inputs without claims outside the metadata: an entry per member in order; every
    partition of a subscribed topic assigned (or, cooperative, withheld) exactly once and only
    to a subscriber; and balance as Kafka's ``verifyValidityAndBalance`` defines it: a member
    with two or more partitions more than another holds none the other could take."""
    ids = [m.member_id for m in spec.members]
    assert list(result.assignment) == ids
    subscriptions = {m.member_id: set(m.topics) for m in spec.members}
    final: dict[str, list[TopicPartition]] = {m: list(p) for m, p in result.assignment.items()}
    for tp, m in result.withheld.items():
        assert all(tp not in p for p in result.assignment.values()), f"{tp} withheld and given"
        final[m].append(tp)
    owners: dict[TopicPartition, str] = {}
    for m, partitions in final.items():
        for tp in partitions:
            assert tp not in owners, f"{tp} assigned twice"
            owners[tp] = m
            assert tp.topic in subscriptions[m], f"{tp} given to {m}, not a subscriber"
            assert 0 <= tp.partition < spec.topics[tp.topic]
    subscribed = set().union(*subscriptions.values())
    expected = {TopicPartition(t, p) for t in subscribed for p in range(spec.topics.get(t, 0))}
    assert set(owners) == expected
    smallest = min((len(p) for p in final.values()), default=0)
    for big, big_list in final.items():
        if len(big_list) <= smallest + 1:
            continue
        big_topics = {tp.topic for tp in big_list}
        for small, small_list in final.items():
            if len(big_list) > len(small_list) + 1:
                movable = big_topics & subscriptions[small]
                assert not movable, f"{big} could give a partition of {movable} to {small}"


def sticky(spec: GroupSpec) -> AssignmentResult:
    result = StickyAssignor().assign(spec)
    assert result.strategy == "sticky"
    assert result.withheld == {}
    return result


# ------------------------------------------------------------------------------- basics


def test_docstring_examples() -> None:
    failures, tried = doctest.testmod(sticky_module, raise_on_error=False)
    assert tried >= 8
    assert failures == 0


def test_registered_under_protocol_name() -> None:
    assignor = get_assignor("sticky")
    assert isinstance(assignor, StickyAssignor)
    assert (assignor.name, assignor.side) == ("sticky", "client")


def test_empty_inputs() -> None:
    with pytest.raises(AssignmentError, match="by zero"):  # as Java, dividing by 0 members
        sticky(group({"t": 3}))
    spec = group({"t": 0}, member("a", ["t", "missing"]), member("b", []))
    assert lists(sticky(spec)) == {"a": "", "b": ""}


# ------------------------------------------------------------------------------- Kafka scenarios

A12 = ["topic1", "topic2"]
ALL4 = ["topic", "topic1", "topic2", "topic3"]

#: (reference scenario, group, Java's lists). Kafka's member ids consumer1..3 iterate in
#: HashMap order consumer3, consumer2, consumer1, which decides who keeps the extra partition.
KAFKA_SCENARIOS: list[tuple[str, GroupSpec, dict[str, str]]] = [
    (
        "S10 mixed subscriptions (general builder)",
        group(
            {"topic1": 3, "topic2": 2},
            member("consumer1", ["topic1"]),
            member("consumer2", A12),
            member("consumer3", ["topic1"]),
        ),
        {
            "consumer1": "topic1-0 topic1-2",
            "consumer2": "topic2-0 topic2-1",
            "consumer3": "topic1-1",
        },
    ),
    (
        "S11 two consumers, two topics (constrained builder)",
        group({"topic1": 3, "topic2": 3}, member("consumer1", A12), member("consumer2", A12)),
        {"consumer1": "topic1-0 topic1-2 topic2-1", "consumer2": "topic1-1 topic2-0 topic2-2"},
    ),
    (
        "S12 a member owning minQuota, expected to reach maxQuota",
        group(
            {"topic1": 2, "topic2": 3},
            member("consumer1", A12, "topic1-0 topic2-1", 1),
            member("consumer2", A12, "topic1-1 topic2-2", 1),
        ),
        {"consumer1": "topic1-0 topic2-1 topic2-0", "consumer2": "topic1-1 topic2-2"},
    ),
    (
        "S13 more maxQuota owners than maxQuota slots (consumer2 comes first in map order)",
        group(
            {"topic1": 2, "topic2": 2},
            member("consumer1", A12, "topic1-0 topic2-0", 1),
            member("consumer2", A12, "topic1-1 topic2-1", 1),
            member("consumer3", A12, "", 1),
        ),
        {"consumer1": "topic1-0", "consumer2": "topic1-1 topic2-1", "consumer3": "topic2-0"},
    ),
    (
        "S14 all consumers under minQuota",
        group(
            {"topic1": 2, "topic2": 3},
            member("consumer1", A12, "topic1-0", 1),
            member("consumer2", A12, "topic1-1", 1),
            member("consumer3", A12, "", 1),
        ),
        {
            "consumer1": "topic1-0 topic2-1",
            "consumer2": "topic1-1 topic2-2",
            "consumer3": "topic2-0",
        },
    ),
    (
        "S16 all consumers reach the expected quota",
        group(
            {"topic": 4},
            member("consumer1", ["topic"], "topic-0 topic-1", 1),
            member("consumer2", ["topic"], "topic-2", 1),
            member("consumer3", ["topic"], "", 1),
        ),
        {"consumer1": "topic-0 topic-1", "consumer2": "topic-2", "consumer3": "topic-3"},
    ),
    (
        "S17 a partition claimed twice in one generation goes to neither claimer",
        group(
            {"topic": 3},
            member("consumer1", ["topic"], "topic-0 topic-1", 1),
            member("consumer2", ["topic"], "topic-0 topic-2", 1),
            member("consumer3", ["topic"], "", 1),
        ),
        {"consumer1": "topic-1", "consumer2": "topic-2", "consumer3": "topic-0"},
    ),
    (
        "S17 same with four partitions",
        group(
            {"topic": 4},
            member("consumer1", ["topic"], "topic-0 topic-1", 1),
            member("consumer2", ["topic"], "topic-0 topic-2", 1),
            member("consumer3", ["topic"], "", 1),
        ),
        {"consumer1": "topic-1 topic-3", "consumer2": "topic-2", "consumer3": "topic-0"},
    ),
    (
        "S18 a stale generation loses its claims",
        group(
            {"topic": 3, "topic2": 3},
            member("consumer1", ["topic", "topic2"], "topic-0 topic-2 topic2-1", 10),
            member("consumer2", ["topic", "topic2"], "topic-0 topic-2 topic2-1", 9),
        ),
        {"consumer1": "topic-0 topic2-1 topic-2", "consumer2": "topic-1 topic2-0 topic2-2"},
    ),
    (
        "S18 no generation loses too",
        group(
            {"topic": 3, "topic2": 3},
            member("consumer1", ["topic", "topic2"], "topic-0 topic-2 topic2-1", 10),
            member("consumer2", ["topic", "topic2"], "topic-0 topic-2 topic2-1"),
        ),
        {"consumer1": "topic-0 topic2-1 topic-2", "consumer2": "topic-1 topic2-0 topic2-2"},
    ),
    (
        "S19 partitions go to the highest generation",
        group(
            {"topic": 3, "topic2": 3, "topic3": 3},
            member("consumer1", ["topic", "topic2", "topic3"], "topic-0 topic2-0 topic3-0", 10),
            member("consumer2", ["topic", "topic2", "topic3"], "topic-1 topic2-1 topic3-1", 9),
            member("consumer3", ["topic", "topic2", "topic3"], "topic2-1 topic3-0 topic3-2", 8),
        ),
        {
            "consumer1": "topic-0 topic2-0 topic3-0",
            "consumer2": "topic-1 topic2-1 topic3-1",
            "consumer3": "topic3-2 topic-2 topic2-2",
        },
    ),
    (
        "S20 no reassignment among current members",
        group(
            dict.fromkeys(ALL4, 3),
            member("consumer1", ALL4),
            member("consumer2", ALL4, "topic-0 topic2-0 topic1-0", 9),
            member("consumer3", ALL4, "topic3-2 topic2-2 topic1-1", 8),
            member("consumer4", ALL4, "topic3-1 topic-1 topic-2", 7),
        ),
        {
            "consumer1": "topic1-2 topic2-1 topic3-0",
            "consumer2": "topic-0 topic1-0 topic2-0",
            "consumer3": "topic1-1 topic2-2 topic3-2",
            "consumer4": "topic-1 topic3-1 topic-2",
        },
    ),
    (
        "S21 old user data versions (v0 without generation, v1, none)",
        group(
            {"topic1": 3},
            member("consumer1", ["topic1"], "topic1-0"),
            member("consumer2", ["topic1"], "topic1-1", 1),
            member("consumer3", ["topic1"]),
        ),
        {"consumer1": "topic1-0", "consumer2": "topic1-1", "consumer3": "topic1-2"},
    ),
]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [pytest.param(s, e, id=name) for name, s, e in KAFKA_SCENARIOS],
)
def test_kafka_scenarios(spec: GroupSpec, expected: dict[str, str]) -> None:
    result = sticky(spec)
    assert lists(result) == expected
    check_invariants(spec, result)


def test_s15_add_then_remove_two_consumers() -> None:
    """S15: two members, two more join, then the first two leave."""
    first = group({"topic1": 3, "topic2": 4}, member("consumer1", A12), member("consumer2", A12))
    r1 = sticky(first)
    assert lists(r1) == {
        "consumer1": "topic1-0 topic1-2 topic2-1 topic2-3",
        "consumer2": "topic1-1 topic2-0 topic2-2",
    }
    joined = next_round(
        first, r1, 1, join=[member("consumer3", A12, "", 1), member("consumer4", A12, "", 1)]
    )
    r2 = sticky(joined)
    assert lists(r2) == {
        "consumer1": "topic1-0 topic2-1",
        "consumer2": "topic2-0 topic1-1",
        "consumer3": "topic1-2 topic2-3",
        "consumer4": "topic2-2",
    }
    check_invariants(joined, r2)
    left = next_round(joined, r2, 2, leave=["consumer1", "consumer2"])
    r3 = sticky(left)
    assert lists(r3) == {
        "consumer3": "topic1-2 topic2-3 topic1-0 topic2-1",
        "consumer4": "topic2-2 topic1-1 topic2-0",
    }
    check_invariants(left, r3)


# ------------------------------------------------------------------------------- racks (S22, S23)

T3 = {"t1": 6, "t2": 7, "t3": 2}
ALL_T = ["t1", "t2", "t3"]
ABC = ["a", "b", "c"]
MISALIGNED = ["t1-0 t1-1 t1-2 t1-3 t1-4", "t1-5 t2-0 t2-1 t2-2 t2-3", "t2-4 t2-5 t2-6 t3-0 t3-1"]


def rack_group(
    replication_factor: int,
    consumer_racks: Sequence[str | None],
    subscriptions: Sequence[Sequence[str]],
    owned: Sequence[str] = ("", "", ""),
) -> GroupSpec:
    """Kafka's rack tests: consumer0..2, brokers on racks a, b, c."""
    return group(
        T3,
        *(
            member(f"consumer{i}", subscriptions[i], owned[i], None, consumer_racks[i])
            for i in range(3)
        ),
        partition_racks=kafka_test_racks(T3, replication_factor, ABC),
    )


UNIFORM = {
    "consumer0": "t1-0 t1-3 t2-0 t2-3 t2-6",
    "consumer1": "t1-1 t1-4 t2-1 t2-4 t3-0",
    "consumer2": "t1-2 t1-5 t2-2 t2-5 t3-1",
}


@pytest.mark.parametrize(
    ("replication_factor", "consumer_racks"),
    [(3, [None] * 3), (1, ABC), (2, ABC), (3, ABC)],
    ids=["no consumer racks", "rf1", "rf2", "rf3 (every rack has every partition)"],
)
def test_s22_rack_aware_uniform_subscription(
    replication_factor: int, consumer_racks: list[str | None]
) -> None:
    """S22: rack-aligned with rf 1 and 2, the same as without racks otherwise."""
    spec = rack_group(replication_factor, consumer_racks, [ALL_T] * 3)
    result = sticky(spec)
    assert lists(result) == UNIFORM
    check_invariants(spec, result)
    racks = spec.partition_racks
    for m in spec.members:
        if m.rack is not None:
            assert all(
                m.rack in racks[tp.topic][tp.partition] for tp in result.assignment[m.member_id]
            )


def test_s22_misaligned_owned_partitions_move_to_their_racks() -> None:
    """S22 with rf 1: owned partitions on the wrong rack are given up (the eager protocol
    moves them at once)."""
    spec = rack_group(1, ABC, [ALL_T] * 3, MISALIGNED)
    assert lists(sticky(spec)) == {
        "consumer0": "t1-0 t1-3 t2-0 t2-3 t2-6",
        "consumer1": "t2-1 t1-1 t1-4 t2-4 t3-0",
        "consumer2": "t3-1 t2-5 t1-2 t1-5 t2-2",
    }


NON_EQUAL = [ALL_T, ALL_T, ["t1", "t3"]]


@pytest.mark.parametrize(
    ("replication_factor", "consumer_racks", "expected"),
    [
        (
            3,
            [None] * 3,
            {
                "consumer0": "t2-0 t2-2 t2-4 t2-6 t1-5",
                "consumer1": "t2-1 t2-3 t2-5 t1-3 t3-0",
                "consumer2": "t1-0 t1-1 t1-2 t1-4 t3-1",
            },
        ),
        (
            1,
            ABC,
            {
                "consumer0": "t2-0 t2-3 t2-6 t1-3 t2-2",
                "consumer1": "t2-1 t2-4 t1-4 t3-0 t2-5",
                "consumer2": "t1-2 t1-5 t3-1 t1-0 t1-1",
            },
        ),
        (
            2,
            ABC,
            {
                "consumer0": "t2-0 t2-2 t2-5 t2-6 t1-3",
                "consumer1": "t2-1 t2-3 t2-4 t1-0 t3-0",
                "consumer2": "t1-1 t1-2 t1-4 t1-5 t3-1",
            },
        ),
    ],
    ids=["no racks", "rf1 (4 partitions off-rack)", "rf2 (all on-rack)"],
)
def test_s23_rack_aware_non_equal_subscription(
    replication_factor: int, consumer_racks: list[str | None], expected: dict[str, str]
) -> None:
    """S23: the general builder's rack pass is best effort."""
    spec = rack_group(replication_factor, consumer_racks, NON_EQUAL)
    result = sticky(spec)
    assert lists(result) == expected
    check_invariants(spec, result)


def test_s23_misaligned_owned_partitions() -> None:
    spec = rack_group(1, ABC, NON_EQUAL, MISALIGNED)
    assert lists(sticky(spec)) == {
        "consumer0": "t1-3 t2-0 t2-3 t2-6 t2-2",
        "consumer1": "t2-1 t2-4 t1-4 t3-0 t2-5",
        "consumer2": "t3-1 t1-2 t1-5 t1-0 t1-1",
    }


# ------------------------------------------------------------------------------- source documents


def test_seed_000_initial_assignment() -> None:
    """000, 4.3.1: C0 reads t0; C1 t0, t1; C2 t0, t1, t2 (the document's result)."""
    spec = group(
        {"t0": 1, "t1": 2, "t2": 3},
        member("C0", ["t0"]),
        member("C1", ["t0", "t1"]),
        member("C2", ["t0", "t1", "t2"]),
    )
    result = sticky(spec)
    assert lists(result) == {"C0": "t0-0", "C1": "t1-0 t1-1", "C2": "t2-0 t2-1 t2-2"}
    check_invariants(spec, result)


def test_seed_000_after_a_consumer_crash() -> None:
    """000, 4.3.2: C0..C2 read t0..t3 (2 partitions each), then C1 crashes.

    The first round matches the document. After the crash the document hands C1's t0-1,
    t2-0, t3-1 to C2, C0, C2 (the pre-2.3 algorithm); Java 4.4.0 takes the constrained path
    and deals them round-robin by member id: t0-1 to C0, t2-0 and t3-1 to C2. Both
    survivors keep everything they had, listed by (partition, topic).
    """
    topics = [f"t{i}" for i in range(4)]
    spec = group(dict.fromkeys(topics, 2), *(member(c, topics) for c in ("C0", "C1", "C2")))
    first = sticky(spec)
    assert lists(first) == {"C0": "t0-0 t1-1 t3-0", "C1": "t0-1 t2-0 t3-1", "C2": "t1-0 t2-1"}
    after = next_round(spec, first, 1, leave=["C1"])
    result = sticky(after)
    assert lists(result) == {"C0": "t0-0 t3-0 t1-1 t0-1", "C2": "t1-0 t2-1 t2-0 t3-1"}
    check_invariants(after, result)


def test_seed_004_order_and_stock_before_and_after_c3_crashes() -> None:
    """004: Order (7) and Stock (5) read by C1..C3, then C3 crashes.

    The document's post-crash text lists partitions twice and keeps C3's (see
    ``seeds/README.md``); Java's result: C1 and C2 keep all they had and split C3's
    Order-2, Order-5, Stock-1, Stock-4 between them.
    """
    both = ["Order", "Stock"]
    spec = group({"Order": 7, "Stock": 5}, *(member(c, both) for c in ("C1", "C2", "C3")))
    first = sticky(spec)
    assert lists(first) == {
        "C1": "Order-0 Order-3 Order-6 Stock-2",
        "C2": "Order-1 Order-4 Stock-0 Stock-3",
        "C3": "Order-2 Order-5 Stock-1 Stock-4",
    }
    after = next_round(spec, first, 1, leave=["C3"])
    result = sticky(after)
    assert lists(result) == {
        "C1": "Order-0 Stock-2 Order-3 Order-6 Order-2 Stock-1",
        "C2": "Stock-0 Order-1 Stock-3 Order-4 Order-5 Stock-4",
    }
    check_invariants(after, result)
    for survivor in ("C1", "C2"):
        kept = result.assignment[survivor][: len(first.assignment[survivor])]
        assert set(kept) == set(first.assignment[survivor])


# ------------------------------------------------------------------------------- Java quirks


def test_user_data_lists_topics_in_compute_if_absent_order() -> None:
    """The user data groups owned partitions by topic with ``HashMap.computeIfAbsent``: topics
    sharing a bucket ("events" and "users") come newest first, and the general builder keeps
    owned partitions in that order."""
    spec = group(
        {"events": 2, "users": 2, "other": 1},
        member("c1", ["events", "users"], "events-0 users-0", 1),
        member("c2", ["other"]),
    )
    assert lists(sticky(spec)) == {"c1": "users-0 events-0 events-1 users-1", "c2": "other-0"}


def test_user_data_map_grows_only_on_the_next_call() -> None:
    """``computeIfAbsent`` resizes at the start of a call: 13 topics fill a 16-bucket table
    when the 13th comes last, a 32-bucket one when another call follows."""
    topics = [f"topic{i}" for i in range(13)]
    counts = {**dict.fromkeys(topics, 2), "z": 1}
    owned = " ".join(f"{t}-0" for t in topics)
    thirteen = group(counts, member("c1", topics, owned, 1), member("c2", ["z"]))
    assert lists(sticky(thirteen))["c1"].split()[:13] == [
        f"topic{i}-0" for i in (1, 2, 0, 5, 6, 10, 3, 11, 4, 12, 9, 7, 8)
    ]
    one_more = group(counts, member("c1", topics, owned + " topic0-1", 1), member("c2", ["z"]))
    assert lists(sticky(one_more))["c1"].startswith(
        "topic1-0 topic2-0 topic0-0 topic0-1 topic5-0 topic6-0 topic3-0 "
        "topic4-0 topic12-0 topic9-0 topic7-0 topic8-0 topic10-0 topic11-0 "
    )


def test_claim_beyond_the_partition_count_breaks_the_round_robin() -> None:
    """A kept claim of a partition that does not exist takes a slot (Java:
    ``IllegalStateException: No more unfilled consumers to be assigned.``)."""
    spec = group({"a": 1}, member("c1", ["a"], "", 1), member("c2", ["a"], "a-1", 2))
    with pytest.raises(AssignmentError, match="No more unfilled consumers"):
        sticky(spec)


def test_claim_beyond_the_partition_count_can_duplicate_a_partition() -> None:
    """Java walks the sorted kept partitions beside all partitions; the nonexistent a-1 never
    matches, so b-0 (kept by c1) is dealt again, to c2 (constrained builder)."""
    abc = ["a", "b", "c"]
    spec = group({"a": 1, "b": 1, "c": 2}, member("c1", abc, "b-0", 1), member("c2", abc, "a-1", 1))
    assert lists(sticky(spec)) == {"c1": "b-0 a-0 c-0", "c2": "a-1 b-0 c-1"}


def test_claim_beyond_the_partition_count_in_the_general_builder() -> None:
    spec = group(
        {"a": 2, "b": 3}, member("c1", ["a", "b"], "a-2", 1), member("c2", ["b"], "b-0", 1)
    )
    assert lists(sticky(spec)) == {"c1": "a-2 a-0 a-1 b-2", "c2": "b-0 b-0 b-1"}


def test_previous_owner_set_aside_as_fixed_is_a_null_pointer() -> None:
    """c3's only topic c has no other subscriber and it holds all of it, so the general
    builder sets it aside; c2's b-2 was c3's in an older generation, and looking up c3's
    assignment then fails in Java (NullPointerException)."""
    spec = group(
        {"a": 2, "b": 3, "c": 3},
        member("c1", ["a"], "c-0"),
        member("c2", ["b", "c"], "a-1 b-1 b-2 c-1 c-2 c-3"),
        member("c3", ["c"], "b-2", 1),
    )
    with pytest.raises(AssignmentError, match="NullPointerException"):
        sticky(spec)


def test_empty_subscription_seen_first_gets_partitions() -> None:
    """Java's equality check skips an empty subscription met before the first non-empty one
    (in map order), so the constrained builder runs and deals to that member too."""
    spec = group(
        {"alpha": 4},
        member("consumer-e3e70682-c209-4cac-629f-6fbed82c07cd-0", []),
        member("consumer-f728b4fa-4248-5e3a-0a5d-2f346baa9455-1", ["alpha"]),
    )
    assert list(lists(sticky(spec)).values()) == ["alpha-0 alpha-2", "alpha-1 alpha-3"]


def test_instance_remembers_the_highest_generation() -> None:
    assignor = StickyAssignor()
    assignor.assign(group({"t": 1}, member("a", ["t"], "t-0", 7)))
    assignor.assign(group({"t": 1}, member("a", ["t"], "t-0", 3)))
    assert assignor._state.max_generation == 7


def test_duplicate_member_ids_are_rejected() -> None:
    with pytest.raises(AssignmentError):
        sticky(group({"t": 1}, member("a", ["t"]), member("a", ["t"])))


# ------------------------------------------------------------------------------- machinery


@pytest.mark.parametrize("enabled", [True, False])
def test_the_garbage_collector_state_is_restored(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        sticky(group({"t": 4}, member("a", ["t"]), member("b", ["t"])))
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_cached_topic_partitions_follow_the_partition_count() -> None:
    """TopicPartitions are reused across calls; a topic that shrinks or grows still gets
    exactly its partitions."""
    for count in (10, 5, 12, 5):
        result = sticky(group({"cache-probe": count}, member("a", ["cache-probe"])))
        assert result.assignment["a"] == [TopicPartition("cache-probe", p) for p in range(count)]


def test_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(partition_cache, "CACHE_LIMIT", 25)
    for i in range(5):
        sticky(group({f"bounded-{i}": 10}, member("a", [f"bounded-{i}"])))
    assert sum(len(v) for k, v in partition_cache._cache.items() if k.startswith("bounded")) <= 25


@pytest.mark.timeout(60)
@pytest.mark.parametrize("non_equal", [False, True], ids=["uniform", "last member one topic"])
def test_large_group_two_rounds(non_equal: bool) -> None:
    """Kafka's large-group test shape, scaled down (50 topics x 400 partitions, 400 members):
    a first round, then a second with the first as owned partitions (generation 1)."""
    topics = [f"t{i:02d}" for i in range(50)]
    members = [member(f"c{i:03d}", topics) for i in range(400)]
    if non_equal:
        members[-1] = member("c399", topics[:1])
    spec = group(dict.fromkeys(topics, 400), *members)
    first = sticky(spec)
    check_invariants(spec, first)
    again = next_round(spec, first, 1)
    second = sticky(again)
    for m, partitions in first.assignment.items():  # nothing moves
        assert set(second.assignment[m]) == set(partitions)
    check_invariants(again, second)


# ------------------------------------------------------------------------------- properties

TOPICS = ["alpha", "beta", "gamma", "delta"]


@st.composite
def groups(draw: st.DrawFn) -> GroupSpec:
    counts = {t: draw(st.integers(0, 6)) for t in TOPICS[: draw(st.integers(1, 4))]}
    names = list(counts)
    equal = draw(st.booleans())
    common = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    n = draw(st.integers(1, 7))
    members = []
    for i in range(n):
        subs = common if equal else draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        rack = draw(st.sampled_from([None, "r1", "r2"]))
        members.append(member(f"consumer-{draw(st.uuids())}-{i}", subs, rack=rack))
    racks = {}
    if draw(st.booleans()):
        racks = {
            t: tuple(tuple(draw(st.sets(st.sampled_from(["r1", "r2", "r3"])))) for _ in range(c))
            for t, c in counts.items()
        }
    return group(counts, *members, partition_racks=racks)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=groups(), data=st.data())
def test_valid_balanced_and_sticky(spec: GroupSpec, data: st.DataObject) -> None:
    first = sticky(spec)
    check_invariants(spec, first)
    leave = data.draw(st.lists(st.sampled_from([m.member_id for m in spec.members]), unique=True))
    join = [member("newcomer", spec.members[0].topics, "", 1)]
    after = next_round(spec, first, 1, leave=leave, join=join)
    second = sticky(after)
    check_invariants(after, second)
    subscriptions = {m.member_id for m in spec.members}
    if len({frozenset(m.topics) for m in after.members}) == 1 and not spec.partition_racks:
        # constrained builder: everyone keeps min(owned, quota) of what it had
        total = sum(spec.topics[t] for t in after.members[0].topics)
        floor = total // len(after.members)
        for m in after.members:
            if m.member_id in subscriptions:
                owned = set(m.owned_partitions)
                kept = owned & set(second.assignment[m.member_id])
                assert len(kept) >= min(len(owned), floor)
