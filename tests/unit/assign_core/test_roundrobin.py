"""Unit tests of the client-side ``roundrobin`` assignor.

Every expected value is what kafka-clients 4.4.0 returns for the same input through
``AbstractPartitionAssignor.assign(Cluster, ...)`` (checked with ``tests/oracle``), list order
included.
"""

from __future__ import annotations

import doctest
from collections import Counter
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assign_core.assignors import get_assignor
from assign_core.assignors import roundrobin as roundrobin_module
from assign_core.assignors._client_common import member_info_order
from assign_core.assignors.roundrobin import RoundRobinAssignor
from assign_core.errors import AssignmentError
from assign_core.javacompat import java_sorted_strings
from assign_core.model import AssignmentResult, GroupSpec, Member, TopicPartition

pytestmark = pytest.mark.unit

# ------------------------------------------------------------------------------- helpers


def group(
    topics: Mapping[str, int],
    subscriptions: Mapping[str, Sequence[str]],
    *,
    instances: Sequence[str | None] | None = None,
    racks: Sequence[str | None] | None = None,
    partition_racks: Mapping[str, tuple[tuple[str, ...], ...]] | None = None,
) -> GroupSpec:
    """A group whose members join in ``subscriptions`` order."""
    members = tuple(
        Member(
            member_id=member_id,
            topics=tuple(subscribed),
            group_instance_id=instances[i] if instances else None,
            rack=racks[i] if racks else None,
        )
        for i, (member_id, subscribed) in enumerate(subscriptions.items())
    )
    return GroupSpec(topics=dict(topics), members=members, partition_racks=partition_racks or {})


def lists(result: AssignmentResult) -> dict[str, str]:
    """Each member's list as ``"t-0 t-1 ..."`` (order preserved)."""
    return {m: " ".join(map(str, tps)) for m, tps in result.assignment.items()}


def check_invariants(spec: GroupSpec, result: AssignmentResult) -> None:
    """Entries for all members in order; every partition of every subscribed topic assigned
    exactly once, only to a subscriber; lists in (topic, partition) order; with equal
    subscriptions, member totals differ by at most one."""
    assert result.strategy == "roundrobin"
    assert list(result.assignment) == [m.member_id for m in spec.members]
    owners: dict[TopicPartition, str] = {}
    for m in spec.members:
        tps = result.assignment[m.member_id]
        topic_rank = {t: i for i, t in enumerate(java_sorted_strings({tp.topic for tp in tps}))}
        keys = [(topic_rank[tp.topic], tp.partition) for tp in tps]
        assert keys == sorted(keys)
        for tp in tps:
            assert tp not in owners, f"{tp} assigned twice"
            assert tp.topic in m.topics, f"{tp} assigned to non-subscriber {m.member_id}"
            owners[tp] = m.member_id
    subscribed = {t for m in spec.members for t in m.topics}
    expected = {TopicPartition(t, p) for t in subscribed for p in range(spec.topics.get(t, 0))}
    assert set(owners) == expected
    if len({frozenset(m.topics) for m in spec.members}) == 1:
        totals = Counter(owners.values())
        counts = [totals[m.member_id] for m in spec.members]
        assert max(counts) - min(counts) <= 1


def run(spec: GroupSpec) -> dict[str, str]:
    result = RoundRobinAssignor().assign(spec)
    check_invariants(spec, result)
    return lists(result)


def dealt_one_by_one(spec: GroupSpec) -> dict[str, list[TopicPartition]]:
    """The textbook deal: one partition at a time around the circle of members, skipping
    (and so passing over) members not subscribed to the partition's topic."""
    circle = [spec.members[i] for i in member_info_order(spec.members)]
    out: dict[str, list[TopicPartition]] = {m.member_id: [] for m in spec.members}
    head = 0
    for topic in java_sorted_strings({t for m in spec.members for t in m.topics}):
        for p in range(spec.topics.get(topic, 0)):
            while topic not in circle[head].topics:
                head = (head + 1) % len(circle)
            out[circle[head].member_id].append(TopicPartition(topic, p))
            head = (head + 1) % len(circle)
    return out


BOTH = ("topic1", "topic2")

# ------------------------------------------------------------------------------- module docs


def test_docstring_example() -> None:
    failures, tried = doctest.testmod(roundrobin_module, raise_on_error=False)
    assert tried >= 5
    assert failures == 0


def test_registered_under_protocol_name() -> None:
    assignor = get_assignor("roundrobin")
    assert isinstance(assignor, RoundRobinAssignor)
    assert (assignor.name, assignor.side) == ("roundrobin", "client")


# ------------------------------------------------------------------------------- Kafka scenarios

# Kafka's RoundRobinAssignorTest (S6-S9 of the reference) and the source documents.
CASES: list[tuple[str, GroupSpec, dict[str, str]]] = [
    # S6 testTwoDynamicConsumersTwoTopicsSixPartitions: one circle over both topics.
    (
        "S6",
        group({"topic1": 3, "topic2": 3}, {"consumer1": BOTH, "consumer2": BOTH}),
        {
            "consumer1": "topic1-0 topic1-2 topic2-1",
            "consumer2": "topic1-1 topic2-0 topic2-2",
        },
    ),
    # S7 testMultipleConsumersMixedTopics: topic2-1 goes to consumer2 again because
    # consumer3 and consumer1 (not subscribed to topic2) are skipped.
    (
        "S7",
        group(
            {"topic1": 3, "topic2": 2},
            {"consumer1": ("topic1",), "consumer2": BOTH, "consumer3": ("topic1",)},
        ),
        {
            "consumer1": "topic1-0",
            "consumer2": "topic1-1 topic2-0 topic2-1",
            "consumer3": "topic1-2",
        },
    ),
    # S8 testStaticMemberRoundRobinAssignmentPersistent: static members (by instance id)
    # first, the dynamic consumer4 last.
    (
        "S8",
        group(
            {"topic1": 3, "topic2": 3},
            {f"consumer{i}": BOTH for i in range(1, 5)},
            instances=["instance1", "instance2", "instance3", None],
        ),
        {
            "consumer1": "topic1-0 topic2-1",
            "consumer2": "topic1-1 topic2-2",
            "consumer3": "topic1-2",
            "consumer4": "topic2-0",
        },
    ),
    # S8, the dynamic member replaced by consumer5: it takes consumer4's place.
    (
        "S8-replaced",
        group(
            {"topic1": 3, "topic2": 3},
            {c: BOTH for c in ("consumer1", "consumer2", "consumer3", "consumer5")},
            instances=["instance1", "instance2", "instance3", None],
        ),
        {
            "consumer1": "topic1-0 topic2-1",
            "consumer2": "topic1-1 topic2-2",
            "consumer3": "topic1-2",
            "consumer5": "topic2-0",
        },
    ),
    # S9 testStaticMemberRoundRobinAssignmentPersistentAfterMemberIdChanges.
    (
        "S9",
        group(
            {"topic1": 5, "topic2": 5},
            {f"consumer{i}": BOTH for i in range(1, 4)},
            instances=["instance1", "instance2", "instance3"],
        ),
        {
            "consumer1": "topic1-0 topic1-3 topic2-1 topic2-4",
            "consumer2": "topic1-1 topic1-4 topic2-2",
            "consumer3": "topic1-2 topic2-0 topic2-3",
        },
    ),
    # S9 with new member ids (instance2 is now consumer5, instance3 consumer4): the
    # instances keep their partitions.
    (
        "S9-new-member-ids",
        group(
            {"topic1": 5, "topic2": 5},
            {c: BOTH for c in ("consumer1", "consumer5", "consumer4")},
            instances=["instance1", "instance2", "instance3"],
        ),
        {
            "consumer1": "topic1-0 topic1-3 topic2-1 topic2-4",
            "consumer5": "topic1-1 topic1-4 topic2-2",
            "consumer4": "topic1-2 topic2-0 topic2-3",
        },
    ),
    # Racks play no part: Kafka's rack test topology (S4: rf 1, brokers on racks a, b, c,
    # replica of partition i of a topic on broker (i + offset) % 3) gives the plain deal.
    (
        "racks-ignored",
        group(
            {"t1": 6, "t2": 7, "t3": 2},
            {f"consumer{i}": ("t1", "t2", "t3") for i in range(3)},
            racks=["a", "b", "c"],
            partition_racks={
                t: tuple((("a", "b", "c")[(i + offset) % 3],) for i in range(n))
                for t, n, offset in (("t1", 6, 0), ("t2", 7, 6), ("t3", 2, 13))
            },
        ),
        {
            "consumer0": "t1-0 t1-3 t2-0 t2-3 t2-6",
            "consumer1": "t1-1 t1-4 t2-1 t2-4 t3-0",
            "consumer2": "t1-2 t1-5 t2-2 t2-5 t3-1",
        },
    ),
    # 002: one topic of 10 partitions, 3 consumers (the article is right).
    (
        "doc-002",
        group({"topic": 10}, {c: ("topic",) for c in ("Consumer1", "Consumer2", "Consumer3")}),
        {
            "Consumer1": "topic-0 topic-3 topic-6 topic-9",
            "Consumer2": "topic-1 topic-4 topic-7",
            "Consumer3": "topic-2 topic-5 topic-8",
        },
    ),
    # 004: Order 7 + Stock 5 with C1..C3. The article deals each topic from C1 again
    # (C1 = Order 0, 3, 6 + Stock 0, 3): wrong. Java lays all 12 partitions on one circle,
    # so Stock continues where Order stopped (Stock-0 goes to C2).
    (
        "doc-004-before",
        group({"Order": 7, "Stock": 5}, {c: ("Order", "Stock") for c in ("C1", "C2", "C3")}),
        {
            "C1": "Order-0 Order-3 Order-6 Stock-2",
            "C2": "Order-1 Order-4 Stock-0 Stock-3",
            "C3": "Order-2 Order-5 Stock-1 Stock-4",
        },
    ),
    # 004 after C3 crashes. The article gives C1 = Order 0, 2, 4, 6 + Stock 0, 2, 4: wrong for
    # the same reason; Order ends on C1, so Stock starts at C2.
    (
        "doc-004-after-crash",
        group({"Order": 7, "Stock": 5}, {c: ("Order", "Stock") for c in ("C1", "C2")}),
        {
            "C1": "Order-0 Order-2 Order-4 Order-6 Stock-1 Stock-3",
            "C2": "Order-1 Order-3 Order-5 Stock-0 Stock-2 Stock-4",
        },
    ),
]


@pytest.mark.parametrize(("spec", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_java_result(spec: GroupSpec, expected: dict[str, str]) -> None:
    assert run(spec) == expected


# ------------------------------------------------------------------------------- Java details


def test_skipped_members_lose_their_turn() -> None:
    spec = group({"a": 2, "b": 3, "c": 2}, {"m1": ("a", "b"), "m2": ("c",), "m3": ("b", "c")})
    # a-0 m1, a-1: m2, m3 skipped -> m1; b-0: m2 skipped -> m3; b-1 m1; b-2: m2 -> m3;
    # c-0: m1 skipped -> m2; c-1 m3.
    assert run(spec) == {"m1": "a-0 a-1 b-1", "m2": "c-0", "m3": "b-0 b-2 c-1"}


def test_mixed_subscriptions_with_four_members() -> None:
    spec = group(
        {"a": 2, "b": 3, "c": 2},
        {"m1": ("a", "b"), "m2": ("c",), "m3": ("b", "c"), "m4": ("a",)},
    )
    assert run(spec) == {"m1": "a-0 b-0 b-2", "m2": "c-0", "m3": "b-1 c-1", "m4": "a-1"}


def test_topics_sorted_by_utf16_code_units() -> None:
    # TreeSet<String>: "a" < U+1F600 (surrogates D83D DE00) < U+FFFD.
    spec = group(
        {"\U0001f600": 2, "\ufffd": 2, "a": 1},
        {"m1": ("\U0001f600", "\ufffd", "a"), "m2": ("\U0001f600", "\ufffd", "a")},
    )
    assert run(spec) == {
        "m1": "a-0 \U0001f600-1 \ufffd-1",
        "m2": "\U0001f600-0 \ufffd-0",
    }


def test_member_order_static_first_then_dynamic() -> None:
    spec = group(
        {"t": 7},
        {"z-dyn": ("t",), "a-dyn": ("t",), "m-static": ("t",), "b-static": ("t",)},
        instances=[None, None, "zz", "yy"],
    )
    assert run(spec) == {
        "z-dyn": "t-3",
        "a-dyn": "t-2 t-6",
        "m-static": "t-1 t-5",
        "b-static": "t-0 t-4",
    }


def test_missing_and_partitionless_topics_are_skipped() -> None:
    spec = group(
        {"present": 3, "empty": 0},
        {"c1": ("present", "empty", "ghost"), "c2": ("ghost",), "c3": ()},
    )
    assert run(spec) == {"c1": "present-0 present-1 present-2", "c2": "", "c3": ""}


def test_no_members_is_an_error_as_in_java() -> None:
    # Java's CircularIterator rejects an empty member list (IllegalArgumentException).
    with pytest.raises(AssignmentError, match="CircularIterator"):
        RoundRobinAssignor().assign(group({"t": 3}, {}))


# ------------------------------------------------------------------------------- properties

TOPIC_NAMES = ["a", "b", "Aa", "BB", "orders", "t1", "t2", "\ufffd", "\U0001f600"]


@st.composite
def groups(draw: st.DrawFn) -> GroupSpec:
    names = draw(st.lists(st.sampled_from(TOPIC_NAMES), min_size=1, max_size=6, unique=True))
    topics = {t: draw(st.integers(0, 12)) for t in names}
    n = draw(st.integers(1, 10))
    # one subscription for all (equal), a few shared ones, or one per member
    subscriptions = st.lists(st.sampled_from([*names, "ghost"]), max_size=4, unique=True)
    pool = draw(st.lists(subscriptions, min_size=1, max_size=3))
    shared = draw(st.booleans())
    members = []
    for i in range(n):
        subscribed = draw(st.sampled_from(pool) if shared else subscriptions)
        static = draw(st.booleans())
        members.append(
            Member(
                member_id=f"member-{draw(st.integers(0, 99))}-{i}",
                topics=tuple(subscribed),
                group_instance_id=f"inst-{n - i}" if static else None,
            )
        )
    return GroupSpec(topics=topics, members=tuple(members))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups())
def test_property_equals_the_one_by_one_deal(spec: GroupSpec) -> None:
    result = RoundRobinAssignor().assign(spec)
    check_invariants(spec, result)
    assert result.assignment == dealt_one_by_one(spec)
