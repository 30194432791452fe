"""The kafka-python and librdkafka variants of ``range`` and ``roundrobin``.

kafka-python's own assignor classes (the installed kafka-python) are called directly on many
generated groups, static and dynamic members mixed in every order, and must give identical
lists to :class:`~assign_core.assignors.kafka_python_range.KafkaPythonRangeAssignor` and
:class:`~assign_core.assignors.kafka_python_roundrobin.KafkaPythonRoundRobinAssignor`, order
included. The librdkafka variants are played against the real library in
``tests/integration/test_librdkafka_assignors.py``; here their worked examples and the
properties every assignor keeps.
"""

from __future__ import annotations

import doctest
import random
from collections import Counter
from types import ModuleType
from typing import Any

import pytest
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from assign_core.assignors import (
    _librdkafka_common,
    kafka_python_range,
    kafka_python_roundrobin,
    librdkafka_range,
    librdkafka_roundrobin,
)
from assign_core.assignors.registry import IMPLEMENTATIONS, get_assignor
from assign_core.errors import AssignmentError, ScenarioError
from assign_core.model import GroupSpec, Member, TopicPartition

pytestmark = pytest.mark.unit

SCENARIOS = 400


class _Cluster:
    """What kafka-python's assignors read from ``ClusterMetadata``."""

    def __init__(self, topics: dict[str, int]) -> None:
        self.topics = topics

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        n = self.topics.get(topic)
        return None if n is None else set(range(n))


class _Metadata:
    def __init__(self, topics: tuple[str, ...]) -> None:
        self.topics = list(topics)


class _Member:
    """kafka-python's ``GroupMember`` shape: member_id, group_instance_id, metadata."""

    def __init__(self, m: Member) -> None:
        self.member_id = m.member_id
        self.group_instance_id = m.group_instance_id
        self.metadata = _Metadata(m.topics)


def _generated(rnd: random.Random) -> GroupSpec:
    names = ["t0", "t1", "T2", "b", "z9"]
    topics = {t: rnd.randint(0, 9) for t in rnd.sample(names, k=rnd.randint(1, 4))}
    members = []
    for i in range(rnd.randint(1, 7)):
        subscribed = tuple(rnd.sample(names, k=rnd.randint(1, 3)))
        static = f"inst-{rnd.randint(0, 99):02d}-{i}" if rnd.random() < 0.4 else None
        members.append(
            Member(f"{rnd.choice('acmxz')}-{i}-{rnd.randint(0, 999)}", subscribed, static)
        )
    return GroupSpec(topics=topics, members=tuple(members))


def _kafka_python(assignor: Any, spec: GroupSpec) -> dict[str, list[TopicPartition]]:
    answer = assignor.assign(_Cluster(dict(spec.topics)), [_Member(m) for m in spec.members])
    return {
        member_id: [TopicPartition(t, p) for t, ps in a.assigned_partitions for p in ps]
        for member_id, a in answer.items()
    }


@pytest.mark.parametrize(
    ("strategy", "theirs"),
    [("range", RangePartitionAssignor), ("roundrobin", RoundRobinPartitionAssignor)],
)
def test_kafka_python_assignors_match(strategy: str, theirs: Any) -> None:
    rnd = random.Random(strategy)
    compared = left_out = failed = 0
    for _ in range(SCENARIOS):
        spec = _generated(rnd)
        try:
            ours = get_assignor(strategy, "kafka-python").assign(spec).assignment
        except AssignmentError:
            with pytest.raises(KeyError):  # where kafka-python's leader fails, ours fails
                _kafka_python(theirs, spec)
            failed += 1
            continue
        assert ours == _kafka_python(theirs, spec), spec
        compared += 1
        java = get_assignor(strategy).assign(spec).assignment
        left_out += any(set(java[m]) != set(ours[m]) for m in ours)
    print(
        f"kafka-python {strategy}: {compared} identical, {failed} failing in both, "
        f"{left_out} differ from Java's"
    )
    assert compared > SCENARIOS // 4 and left_out > 0


@pytest.mark.parametrize(
    "module",
    [kafka_python_range, kafka_python_roundrobin, librdkafka_range, librdkafka_roundrobin],
)
def test_worked_examples(module: ModuleType) -> None:
    failures, tried = doctest.testmod(module, raise_on_error=False)
    assert tried > 0 and failures == 0


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
@pytest.mark.parametrize("implementation", ["librdkafka", "kafka-python"])
def test_every_partition_once_to_a_subscriber(strategy: str, implementation: str) -> None:
    rnd = random.Random(f"{strategy}/{implementation}")
    for _ in range(200):
        spec = _generated(rnd)
        # all dynamic (no member left out of kafka-python's order), one subscription
        # (kafka-python's roundrobin fails on different ones)
        topics = spec.members[0].topics
        spec = GroupSpec(
            topics=spec.topics, members=tuple(Member(m.member_id, topics) for m in spec.members)
        )
        assignment = get_assignor(strategy, implementation).assign(spec).assignment
        assert list(assignment) == [m.member_id for m in spec.members]
        owners = Counter(tp for tps in assignment.values() for tp in tps)
        subscribed = {t for m in spec.members for t in m.topics}
        expected = {
            TopicPartition(t, p)
            for t, n in spec.topics.items()
            if t in subscribed
            for p in range(n)
        }
        assert set(owners) == expected and set(owners.values()) <= {1}
        for member_id, tps in assignment.items():
            assert {tp.topic for tp in tps} <= set(spec.member(member_id).topics)


def test_all_dynamic_or_all_static_groups_match_java() -> None:
    """The clients differ only where static and dynamic members meet (and in list order)."""
    rnd = random.Random(7)
    for _ in range(200):
        spec = _generated(rnd)
        static = rnd.random() < 0.5
        members = tuple(
            Member(m.member_id, spec.members[0].topics, f"i{m.member_id}" if static else None)
            for m in spec.members
        )
        spec = GroupSpec(topics=spec.topics, members=members)
        for strategy in ("range", "roundrobin"):
            java = get_assignor(strategy).assign(spec).assignment
            for implementation in IMPLEMENTATIONS[strategy][1:]:
                theirs = get_assignor(strategy, implementation).assign(spec).assignment
                assert {m: set(t) for m, t in theirs.items()} == {
                    m: set(t) for m, t in java.items()
                }


def test_glibc_msort_is_a_stable_merge_sort() -> None:
    items = [(3, "a"), (1, "b"), (3, "c"), (2, "d"), (1, "e")]
    ordered = _librdkafka_common.glibc_msort(items, lambda x, y: (x[0] > y[0]) - (x[0] < y[0]))
    assert ordered == sorted(items, key=lambda x: x[0])


def test_librdkafka_mixed_order_follows_the_merge_sort() -> None:
    """Non-transitive order: static s-b and s-y compare by instance id (b < y), each
    against the dynamic m by member id (m < s-b? no: "m" < "s"); the merge decides."""
    members = (
        Member("s-2", ("t",), "y"),
        Member("m-1", ("t",)),
        Member("s-1", ("t",), "b"),
    )
    ordered = _librdkafka_common.sorted_members(members)
    # halves [s-2] and [m-1, s-1] -> [m-1, s-1] (member ids); merge: y vs m-1 by member id
    # ("s-2" > "m-1" takes m-1), y vs b by instance id ("y" > "b" takes s-1), then s-2
    assert [m.member_id for m in ordered] == ["m-1", "s-1", "s-2"]


def test_unknown_implementation_is_a_named_error() -> None:
    with pytest.raises(ScenarioError, match="implementation"):
        get_assignor("sticky", "librdkafka")
