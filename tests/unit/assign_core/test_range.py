"""Unit tests of the client-side ``range`` assignor.

Every expected value is what kafka-clients 4.4.0 returns for the same input through
``AbstractPartitionAssignor.assign(Cluster, ...)`` (checked with ``tests/oracle``), list order
included. The Kafka unit tests quoted compare sorted strings or sets; here the exact Java lists
are asserted.
"""

from __future__ import annotations

import doctest
import gc
from collections import Counter
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assign_core.assignors import get_assignor
from assign_core.assignors import range as range_module
from assign_core.assignors._client_common import member_info_order
from assign_core.assignors.range import RangeAssignor
from assign_core.model import AssignmentResult, GroupSpec, Member, TopicPartition

pytestmark = pytest.mark.unit

# ------------------------------------------------------------------------------- helpers


def group(
    topics: Mapping[str, int],
    subscriptions: Mapping[str, Sequence[str]],
    *,
    racks: Sequence[str | None] | None = None,
    instances: Sequence[str | None] | None = None,
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


def kafka_test_racks(
    topics: Mapping[str, int], replication_factor: int, broker_racks: Sequence[str]
) -> dict[str, tuple[tuple[str, ...], ...]]:
    """The replica layout of Kafka's ``AbstractPartitionAssignorTest``: one broker per entry of
    ``broker_racks``; replica ``j`` of partition ``i`` is on broker ``(i + j + offset) % n``,
    where ``offset`` is the number of partitions of the topics listed before this one."""
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
    return {m: " ".join(map(str, tps)) for m, tps in result.assignment.items()}


def check_invariants(spec: GroupSpec, result: AssignmentResult) -> None:
    """Entries for all members in order; every partition of every subscribed topic assigned
    exactly once, only to a subscriber; per topic, subscribers' counts differ by at most one."""
    assert result.strategy == "range"
    assert list(result.assignment) == [m.member_id for m in spec.members]
    owners: dict[TopicPartition, str] = {}
    for m in spec.members:
        for tp in result.assignment[m.member_id]:
            assert tp not in owners, f"{tp} assigned twice"
            assert tp.topic in m.topics, f"{tp} assigned to non-subscriber {m.member_id}"
            assert 0 <= tp.partition < spec.topics[tp.topic]
            owners[tp] = m.member_id
    subscribed = {t for m in spec.members for t in m.topics}
    expected = {TopicPartition(t, p) for t in subscribed for p in range(spec.topics.get(t, 0))}
    assert set(owners) == expected
    for topic in subscribed:
        counts = Counter(owner for tp, owner in owners.items() if tp.topic == topic)
        per_member = [counts[m.member_id] for m in spec.members if topic in m.topics]
        if per_member:
            assert max(per_member) - min(per_member) <= 1, (topic, per_member)


def run(spec: GroupSpec) -> dict[str, str]:
    result = RangeAssignor().assign(spec)
    check_invariants(spec, result)
    return lists(result)


BOTH = ("topic1", "topic2")
T123 = {"t1": 6, "t2": 7, "t3": 2}
ALL3 = ("t1", "t2", "t3")
UNIFORM = {f"consumer{i}": ALL3 for i in range(3)}
NON_EQUAL = {"consumer0": ALL3, "consumer1": ALL3, "consumer2": ("t1", "t3")}
CO_PARTITIONED = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
RACKS_ABC = ("a", "b", "c")
RACKS_AB = ("a", "b")


# ------------------------------------------------------------------------------- module docs


def test_docstring_example() -> None:
    failures, tried = doctest.testmod(range_module, raise_on_error=False)
    assert tried >= 5
    assert failures == 0


def test_registered_under_protocol_name() -> None:
    assignor = get_assignor("range")
    assert isinstance(assignor, RangeAssignor)
    assert (assignor.name, assignor.side) == ("range", "client")


# ------------------------------------------------------------------------------- Kafka scenarios

# Kafka's RangeAssignorTest (S1-S5 of the reference) and the source documents. Each row:
# id, group, Java's lists. Rack-aware rows build the replica layout of Kafka's test.
CASES: list[tuple[str, GroupSpec, dict[str, str]]] = [
    # S1 testTwoConsumersTwoTopicsSixPartitions: each topic cut into [0, 1] and [2].
    (
        "S1",
        group({"topic1": 3, "topic2": 3}, {"consumer1": BOTH, "consumer2": BOTH}),
        {
            "consumer1": "topic1-0 topic1-1 topic2-0 topic2-1",
            "consumer2": "topic1-2 topic2-2",
        },
    ),
    # S2 testMultipleConsumersMixedTopics: topic2 has one subscriber, who takes all of it.
    (
        "S2",
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
    # S3 testTwoStaticConsumersTwoTopicsSixPartitions: instance ids order the members, so
    # consumer-b (instance1) goes before consumer-a (instance2).
    (
        "S3",
        group(
            {"topic1": 3, "topic2": 3},
            {"consumer-b": BOTH, "consumer-a": BOTH},
            instances=["instance1", "instance2"],
        ),
        {
            "consumer-b": "topic1-0 topic1-1 topic2-0 topic2-1",
            "consumer-a": "topic1-2 topic2-2",
        },
    ),
    # S3 variant testOneStaticConsumerAndOneDynamicConsumer...: static before dynamic.
    (
        "S3-one-static",
        group(
            {"topic1": 3, "topic2": 3},
            {"consumer-b": BOTH, "consumer-a": BOTH},
            instances=["instance1", None],
        ),
        {
            "consumer-b": "topic1-0 topic1-1 topic2-0 topic2-1",
            "consumer-a": "topic1-2 topic2-2",
        },
    ),
    # S4 testRackAwareAssignmentWithUniformSubscription, every partition on every rack (rf 3,
    # racks a, b, c): the gate says no, the plain ranges stand.
    (
        "S4-rf3",
        group(
            T123,
            UNIFORM,
            racks=RACKS_ABC,
            partition_racks=kafka_test_racks(T123, 3, RACKS_ABC),
        ),
        {
            "consumer0": "t1-0 t1-1 t2-0 t2-1 t2-2 t3-0",
            "consumer1": "t1-2 t1-3 t2-3 t2-4 t3-1",
            "consumer2": "t1-4 t1-5 t2-5 t2-6",
        },
    ),
    # S4, rf 1 on 3 racks: t1 and t2 are alone in their co-partitioning group and each consumer
    # takes its quota of rack-local partitions; t3's two partitions go to the racks b and c
    # that host them. 0 rack mismatches; lists sorted by (topic, partition).
    (
        "S4-rf1",
        group(
            T123,
            UNIFORM,
            racks=RACKS_ABC,
            partition_racks=kafka_test_racks(T123, 1, RACKS_ABC),
        ),
        {
            "consumer0": "t1-0 t1-3 t2-0 t2-3 t2-6",
            "consumer1": "t1-1 t1-4 t2-1 t2-4 t3-0",
            "consumer2": "t1-2 t1-5 t2-2 t2-5 t3-1",
        },
    ),
    # S4, rf 2 on 3 racks: one partition (t2-6 is not on consumer2's rack) is misaligned.
    (
        "S4-rf2",
        group(
            T123,
            UNIFORM,
            racks=RACKS_ABC,
            partition_racks=kafka_test_racks(T123, 2, RACKS_ABC),
        ),
        {
            "consumer0": "t1-0 t1-2 t2-0 t2-2 t2-3 t3-1",
            "consumer1": "t1-1 t1-3 t2-1 t2-4 t3-0",
            "consumer2": "t1-4 t1-5 t2-5 t2-6",
        },
    ),
    # S4, one consumer on a rack with no partitions (brokers on a, b only; all partitions on
    # both): not rack-aware.
    (
        "S4-rack-without-partitions",
        group(
            T123,
            UNIFORM,
            racks=RACKS_ABC,
            partition_racks=kafka_test_racks(T123, 3, RACKS_AB),
        ),
        {
            "consumer0": "t1-0 t1-1 t2-0 t2-1 t2-2 t3-0",
            "consumer1": "t1-2 t1-3 t2-3 t2-4 t3-1",
            "consumer2": "t1-4 t1-5 t2-5 t2-6",
        },
    ),
    # testRackAwareAssignmentWithNonEqualSubscription (consumer2 does not read t2).
    (
        "non-equal-no-racks",
        group(T123, NON_EQUAL),
        {
            "consumer0": "t1-0 t1-1 t2-0 t2-1 t2-2 t2-3 t3-0",
            "consumer1": "t1-2 t1-3 t2-4 t2-5 t2-6 t3-1",
            "consumer2": "t1-4 t1-5",
        },
    ),
    (
        "non-equal-rf1",
        group(
            T123,
            NON_EQUAL,
            racks=RACKS_ABC,
            partition_racks=kafka_test_racks(T123, 1, RACKS_ABC),
        ),
        {
            "consumer0": "t1-0 t1-3 t2-0 t2-2 t2-3 t2-6",
            "consumer1": "t1-1 t1-4 t2-1 t2-4 t2-5 t3-0",
            "consumer2": "t1-2 t1-5 t3-1",
        },
    ),
    (
        "non-equal-rf2",
        group(
            T123,
            NON_EQUAL,
            racks=RACKS_ABC,
            partition_racks=kafka_test_racks(T123, 2, RACKS_ABC),
        ),
        {
            "consumer0": "t1-0 t1-2 t2-0 t2-2 t2-3 t2-5 t3-1",
            "consumer1": "t1-1 t1-3 t2-1 t2-4 t2-6 t3-0",
            "consumer2": "t1-4 t1-5",
        },
    ),
    # S5 testRackAwareAssignmentWithCoPartitioning, rf 1 on racks a, b: t1/t2 and t3/t4 are
    # co-partitioned; partition p of both topics goes to the consumer on p's rack, so each
    # consumer keeps matching partitions of the two topics (co-partitioning preserved).
    (
        "S5-rf1",
        group(
            CO_PARTITIONED,
            {
                "consumer0": ("t1", "t2"),
                "consumer1": ("t1", "t2"),
                "consumer2": ("t3", "t4"),
                "consumer3": ("t3", "t4"),
            },
            racks=["a", "b", "b", "a"],
            partition_racks=kafka_test_racks(CO_PARTITIONED, 1, RACKS_AB),
        ),
        {
            "consumer0": "t1-0 t1-2 t1-4 t2-0 t2-2 t2-4",
            "consumer1": "t1-1 t1-3 t1-5 t2-1 t2-3 t2-5",
            "consumer2": "t3-1 t4-1",
            "consumer3": "t3-0 t4-0",
        },
    ),
    # S5, rf 2 (every partition on both racks): the plain ranges, lists in HashMap topic order
    # (t4 before t3).
    (
        "S5-rf2",
        group(
            CO_PARTITIONED,
            {
                "consumer0": ("t1", "t2"),
                "consumer1": ("t1", "t2"),
                "consumer2": ("t3", "t4"),
                "consumer3": ("t3", "t4"),
            },
            racks=["a", "b", "b", "a"],
            partition_racks=kafka_test_racks(CO_PARTITIONED, 2, RACKS_AB),
        ),
        {
            "consumer0": "t1-0 t1-1 t1-2 t2-0 t2-1 t2-2",
            "consumer1": "t1-3 t1-4 t1-5 t2-3 t2-4 t2-5",
            "consumer2": "t4-0 t3-0",
            "consumer3": "t4-1 t3-1",
        },
    ),
    # S5 second half: everyone reads t1..t4; two co-partitioned pairs (t1/t2 with 6
    # partitions, t3/t4 with 2) share the consumers.
    (
        "S5-all-rf1-2racks",
        group(
            CO_PARTITIONED,
            {f"consumer{i}": ("t1", "t2", "t3", "t4") for i in range(4)},
            racks=["a", "b", "b", "a"],
            partition_racks=kafka_test_racks(CO_PARTITIONED, 1, RACKS_AB),
        ),
        {
            "consumer0": "t1-0 t1-2 t2-0 t2-2 t3-0 t4-0",
            "consumer1": "t1-1 t1-3 t2-1 t2-3 t3-1 t4-1",
            "consumer2": "t1-5 t2-5",
            "consumer3": "t1-4 t2-4",
        },
    ),
    (
        "S5-all-rf1-3racks",
        group(
            CO_PARTITIONED,
            {f"consumer{i}": ("t1", "t2", "t3", "t4") for i in range(4)},
            racks=["a", "b", "b", "a"],
            partition_racks=kafka_test_racks(CO_PARTITIONED, 1, RACKS_ABC),
        ),
        {
            "consumer0": "t1-0 t1-3 t2-0 t2-3 t3-0 t4-0",
            "consumer1": "t1-1 t1-4 t2-1 t2-4 t3-1 t4-1",
            "consumer2": "t1-2 t2-2",
            "consumer3": "t1-5 t2-5",
        },
    ),
    # testRackAwareAssignmentWithUniformPartitionsNonEqualSubscription, rf 2: t2 alone needs
    # racks; t1/t3 (5 partitions each, same subscribers) are co-partitioned.
    (
        "uniform-partitions-non-equal-rf2",
        group(
            {"t1": 5, "t2": 5, "t3": 5},
            NON_EQUAL,
            racks=RACKS_ABC,
            partition_racks=kafka_test_racks({"t1": 5, "t2": 5, "t3": 5}, 2, RACKS_ABC),
        ),
        {
            "consumer0": "t1-2 t2-0 t2-1 t2-3 t3-2",
            "consumer1": "t1-0 t1-3 t2-2 t2-4 t3-0 t3-3",
            "consumer2": "t1-1 t1-4 t3-1 t3-4",
        },
    ),
    # 002: one topic of 10 partitions, 3 consumers: 4 + 3 + 3 (the article is right).
    (
        "doc-002",
        group({"topic": 10}, {c: ("topic",) for c in ("Consumer1", "Consumer2", "Consumer3")}),
        {
            "Consumer1": "topic-0 topic-1 topic-2 topic-3",
            "Consumer2": "topic-4 topic-5 topic-6",
            "Consumer3": "topic-7 topic-8 topic-9",
        },
    ),
    # 004: Order 7 + Stock 5 with C1..C3; the article's "before" is right.
    (
        "doc-004-before",
        group({"Order": 7, "Stock": 5}, {c: ("Order", "Stock") for c in ("C1", "C2", "C3")}),
        {
            "C1": "Order-0 Order-1 Order-2 Stock-0 Stock-1",
            "C2": "Order-3 Order-4 Stock-2 Stock-3",
            "C3": "Order-5 Order-6 Stock-4",
        },
    ),
    # 004 after C3 crashes. The article gives C1 "Stock P4, P5, P6" and C2 "Order P0, P1, P2":
    # wrong (Stock has no P5/P6, and Order P0-P2 cannot go twice). Java cuts each topic in two:
    # Order 4 + 3, Stock 3 + 2.
    (
        "doc-004-after-crash",
        group({"Order": 7, "Stock": 5}, {c: ("Order", "Stock") for c in ("C1", "C2")}),
        {
            "C1": "Order-0 Order-1 Order-2 Order-3 Stock-0 Stock-1 Stock-2",
            "C2": "Order-4 Order-5 Order-6 Stock-3 Stock-4",
        },
    ),
]


@pytest.mark.parametrize(("spec", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_java_result(spec: GroupSpec, expected: dict[str, str]) -> None:
    assert run(spec) == expected


# ------------------------------------------------------------------------------- Java details


def test_list_order_follows_hashmap_order_of_topics() -> None:
    # "t1".."t6" iterate t4, t5, t6, t1, t2, t3 in a default HashMap.
    topics = {f"t{i}": 2 for i in range(1, 7)}
    subscribed = tuple(topics)
    spec = group(topics, {"member1": subscribed, "member2": subscribed})
    assert run(spec) == {
        "member1": "t4-0 t5-0 t6-0 t1-0 t2-0 t3-0",
        "member2": "t4-1 t5-1 t6-1 t1-1 t2-1 t3-1",
    }


@pytest.mark.parametrize(
    ("subscriptions", "expected"),
    [
        # "Aa" and "BB" have the same hashCode: their order in the HashMap is the order in
        # which they were first added to the subscribed-topics HashSet, member by member in
        # the subscriptions HashMap ("m1" before "m2"), each member's topics sorted.
        (
            {"m1": ("BB",), "m2": ("Aa", "BB")},
            {"m1": "BB-0", "m2": "BB-1 Aa-0 Aa-1"},
        ),
        (
            {"m1": ("Aa", "BB"), "m2": ("BB",)},
            {"m1": "Aa-0 Aa-1 BB-0", "m2": "BB-1"},
        ),
        # JoinGroup order does not matter, the member ids' HashMap order does.
        (
            {"m2": ("Aa", "BB"), "m1": ("BB",)},
            {"m2": "BB-1 Aa-0 Aa-1", "m1": "BB-0"},
        ),
    ],
)
def test_colliding_topics_follow_subscription_hashmap_order(
    subscriptions: dict[str, tuple[str, ...]], expected: dict[str, str]
) -> None:
    assert run(group({"Aa": 2, "BB": 2}, subscriptions)) == expected


def test_member_order_static_first_then_dynamic() -> None:
    spec = group(
        {"t": 7},
        {"z-dyn": ("t",), "a-dyn": ("t",), "m-static": ("t",), "b-static": ("t",)},
        instances=[None, None, "zz", "yy"],
    )
    # b-static (instance yy) < m-static (instance zz) < a-dyn < z-dyn
    assert run(spec) == {
        "z-dyn": "t-6",
        "a-dyn": "t-4 t-5",
        "m-static": "t-2 t-3",
        "b-static": "t-0 t-1",
    }


def test_member_order_compares_utf16_code_units() -> None:
    # U+1F600 is the surrogate pair D83D DE00 in Java, which sorts before U+FFFD.
    members = (Member("\ufffd", ("t",)), Member("\U0001f600", ("t",)))
    assert member_info_order(members) == [1, 0]


def test_missing_and_partitionless_topics_are_skipped() -> None:
    spec = group(
        {"present": 3, "empty": 0},
        {"c1": ("present", "empty", "ghost"), "c2": ("ghost",), "c3": ()},
    )
    assert run(spec) == {"c1": "present-0 present-1 present-2", "c2": "", "c3": ""}


def test_no_members() -> None:
    assert RangeAssignor().assign(group({"t": 3}, {})).assignment == {}


def test_more_consumers_than_partitions() -> None:
    spec = group({"t": 2}, {f"c{i}": ("t",) for i in range(4)})
    assert run(spec) == {"c0": "t-0", "c1": "t-1", "c2": "", "c3": ""}


def test_rack_pass_sorts_lists_by_utf16_topic_order() -> None:
    # Rack-aware: the final lists are sorted by (topic, partition) with String.compareTo, so
    # the emoji topic (a surrogate pair) comes before U+FFFD.
    spec = group(
        {"\U0001f600": 2, "\ufffd": 3},
        {"m1": ("\U0001f600", "\ufffd"), "m2": ("\U0001f600", "\ufffd")},
        racks=["a", "b"],
        partition_racks={"\U0001f600": (("a",), ("b",)), "\ufffd": (("b",), ("a",), ("b",))},
    )
    assert run(spec) == {"m1": "\U0001f600-0 \ufffd-1", "m2": "\U0001f600-1 \ufffd-0 \ufffd-2"}


def test_empty_rack_id_is_no_rack() -> None:
    racks = kafka_test_racks(T123, 1, RACKS_ABC)
    no_racks = run(group(T123, UNIFORM))
    assert run(group(T123, UNIFORM, racks=["", "", ""], partition_racks=racks)) == no_racks


def test_consumer_racks_hosting_no_replica_disable_the_rack_pass() -> None:
    racks = kafka_test_racks(T123, 1, RACKS_ABC)
    spec = group(T123, UNIFORM, racks=["d", "e", "f"], partition_racks=racks)
    assert run(spec) == run(group(T123, UNIFORM))


def test_garbage_collector_state_is_restored() -> None:
    spec = group({"t": 3}, {"c": ("t",)})
    assert gc.isenabled()
    RangeAssignor().assign(spec)
    assert gc.isenabled()
    gc.disable()
    try:
        RangeAssignor().assign(spec)
        assert not gc.isenabled()
    finally:
        gc.enable()


# ------------------------------------------------------------------------------- properties

TOPIC_NAMES = ["a", "b", "Aa", "BB", "orders", "t1", "t2", "\ufffd", "\U0001f600"]


@st.composite
def groups(draw: st.DrawFn, *, with_racks: bool) -> GroupSpec:
    names = draw(st.lists(st.sampled_from(TOPIC_NAMES), min_size=1, max_size=6, unique=True))
    # few partition counts and shared subscriptions, so that topics are often co-partitioned
    topics = {t: draw(st.sampled_from([0, 1, 3, 3, 4, 6, 6, 9])) for t in names}
    n = draw(st.integers(0, 10))
    rack_names = ["r1", "r2", "r3"]
    # a few distinct subscriptions shared by several members, or one per member
    subscriptions = st.lists(st.sampled_from([*names, "ghost"]), max_size=6, unique=True)
    pool = draw(st.lists(subscriptions, min_size=1, max_size=2))
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
                rack=draw(st.sampled_from([None, *rack_names])) if with_racks else None,
            )
        )
    partition_racks: dict[str, tuple[tuple[str, ...], ...]] = {}
    if with_racks:
        for t, count in topics.items():
            partition_racks[t] = tuple(
                tuple(draw(st.lists(st.sampled_from(rack_names), max_size=2, unique=True)))
                for _ in range(count)
            )
    return GroupSpec(topics=topics, members=tuple(members), partition_racks=partition_racks)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups(with_racks=False))
def test_property_contiguous_ranges_without_racks(spec: GroupSpec) -> None:
    result = RangeAssignor().assign(spec)
    check_invariants(spec, result)
    order = [spec.members[i] for i in member_info_order(spec.members)]
    for topic, count in spec.topics.items():
        subscribers = [m.member_id for m in order if topic in m.topics]
        if not subscribers or count == 0:
            continue
        quota, extra = divmod(count, len(subscribers))
        start = 0
        for k, member_id in enumerate(subscribers):
            size = quota + 1 if k < extra else quota
            got = [tp.partition for tp in result.assignment[member_id] if tp.topic == topic]
            assert got == list(range(start, start + size))
            start += size
    for tps in result.assignment.values():
        # grouped by topic: a topic never reappears once the list moved on
        runs = [tp.topic for i, tp in enumerate(tps) if i == 0 or tps[i - 1].topic != tp.topic]
        assert len(runs) == len(set(runs))


def step_by_step(spec: GroupSpec) -> dict[str, set[TopicPartition]]:
    """KIP-881 range, restated one partition at a time with plain lists (see the reference,
    section 5.2): a slow second opinion on the assignor's cursors and queues."""
    ordered = [spec.members[i] for i in member_info_order(spec.members)]
    out: dict[str, set[TopicPartition]] = {m.member_id: set() for m in spec.members}

    class Topic:
        def __init__(self, name: str, count: int) -> None:
            self.name, self.count = name, count
            self.consumers = [m for m in ordered if name in m.topics]
            self.quota, self.extra = divmod(count, len(self.consumers))
            self.taken = dict.fromkeys((m.member_id for m in self.consumers), 0)
            self.unassigned = list(range(count))
            racks = {m.rack for m in self.consumers if m.rack}
            self.replicas: list[set[str]] = []
            if racks:
                given = spec.partition_racks.get(name, ())
                self.replicas = [set(given[p]) if given else set() for p in range(count)]
            everywhere = set().union(*self.replicas)
            self.rack_aware = bool(racks & everywhere) and any(
                r != everywhere for r in self.replicas
            )

        def room(self, m: Member) -> int:
            return max(0, self.quota + (self.extra > 0) - self.taken[m.member_id])

        def local(self, m: Member, p: int) -> bool:
            return not m.rack or m.rack in self.replicas[p]

        def give(self, m: Member, ps: list[int]) -> None:
            out[m.member_id].update(TopicPartition(self.name, p) for p in ps)
            self.taken[m.member_id] += len(ps)
            if self.taken[m.member_id] > self.quota:
                self.extra -= 1
            self.unassigned = [p for p in self.unassigned if p not in ps]

        def ranges(self, rack_local: bool) -> None:
            for m in self.consumers:
                if not self.unassigned:
                    break
                ps = [p for p in self.unassigned if not rack_local or self.local(m, p)]
                if ps[: self.room(m)]:
                    self.give(m, ps[: self.room(m)])

    states = [
        Topic(t, n)
        for t, n in spec.topics.items()
        if n > 0 and any(t in m.topics for m in spec.members)
    ]
    if any(t.rack_aware for t in states):
        grouped: dict[tuple[tuple[str, ...], int], list[Topic]] = {}
        for t in states:
            key = (tuple(m.member_id for m in t.consumers), len(t.replicas))
            grouped.setdefault(key, []).append(t)
        for (_, count), same in grouped.items():
            if len(same) == 1:
                if same[0].rack_aware:
                    same[0].ranges(rack_local=True)
                continue
            remaining = list(same[0].consumers)
            for p in range(count):
                fits = [m for m in remaining if all(t.local(m, p) and t.room(m) > 0 for t in same)]
                if not fits:
                    continue
                for t in same:
                    t.give(fits[0], [p])
                if all(t.room(fits[0]) == 0 for t in same):
                    remaining.remove(fits[0])
                    if not remaining:
                        break
    for t in states:
        t.ranges(rack_local=False)
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups(with_racks=True))
def test_property_rack_aware_matches_step_by_step(spec: GroupSpec) -> None:
    result = RangeAssignor().assign(spec)
    check_invariants(spec, result)
    assert {m: set(tps) for m, tps in result.assignment.items()} == step_by_step(spec)
