"""The coordinator's ``range`` assignor, registered as ``server-range``.

Expected lists are kafka-group-coordinator 4.4.0's, taken from the Java oracle
(``tests/oracle``) with the topic ids of Kafka's uniform tests (the range tests use random
ids; only the order of topics inside a member's list depends on them).
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assign_core.assignors import get_assignor
from assign_core.assignors import server_range as server_range_module
from assign_core.assignors.server_range import ServerRangeAssignor
from assign_core.model import GroupSpec, TopicPartition
from assign_core.scenario import parse_scenario

pytestmark = pytest.mark.unit

IDS = {
    "T1": "T1-A4s3VTwiI5CTbEp6POw",
    "T2": "T2-B4s3VTwiI5YHbPp6YUe",
    "T3": "T3-CU8fVTLCz5YMkLoDQsa",
    "T4": "T4-Tw9fVTLCz5HbPp6YQsa",
}


def spec(
    topics: dict[str, int],
    members: list[tuple[str, list[str]]],
    instances: dict[str, str] | None = None,
    owned: dict[str, list[list[object]]] | None = None,
) -> GroupSpec:
    return parse_scenario(
        {
            "topics": topics,
            "topic_ids": {t: IDS[t] for t in topics},
            "members": [
                {
                    "member_id": m,
                    "topics": subs,
                    "group_instance_id": (instances or {}).get(m),
                    "owned_partitions": (owned or {}).get(m, []),
                }
                for m, subs in members
            ],
        }
    )


def lists(result: dict[str, list[TopicPartition]]) -> dict[str, str]:
    return {m: " ".join(map(str, tps)) for m, tps in result.items()}


def assign(group: GroupSpec) -> dict[str, list[TopicPartition]]:
    result = ServerRangeAssignor().assign(group).assignment
    assert list(result) == [m.member_id for m in group.members]
    seen = Counter(tp for tps in result.values() for tp in tps)
    assert all(n == 1 for n in seen.values())
    for m in group.members:
        assert {tp.topic for tp in result[m.member_id]} <= set(m.topics)
    return result


def test_docstring_example() -> None:
    """S25 ``testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions``."""
    group = spec(
        {"T1": 3, "T2": 3, "T3": 2}, [("A", ["T1", "T2"]), ("B", ["T3"]), ("C", ["T2", "T3"])]
    )
    expected = {"A": "T2-0 T2-1 T1-0 T1-1 T1-2", "B": "T3-0", "C": "T2-2 T3-1"}
    assert lists(assign(group)) == expected
    doc = server_range_module.__doc__
    assert doc is not None
    assert "    A: T2-0 T2-1 T1-0 T1-1 T1-2\n    B: T3-0\n    C: T2-2 T3-1\n" in doc


def test_registered() -> None:
    assignor = get_assignor("server-range")
    assert (assignor.name, assignor.side) == ("server-range", "server")


def test_homogeneous() -> None:
    """S24 ``testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions`` and its three-member
    variant: the same sets as the reference; the lists follow the map order (T3 first)."""
    two = spec({"T1": 3, "T3": 2}, [("A", ["T1", "T3"]), ("B", ["T1", "T3"])])
    assert lists(assign(two)) == {"A": "T3-0 T1-0 T1-1", "B": "T3-1 T1-2"}
    three = spec(
        {"T1": 3, "T3": 2}, [("A", ["T1", "T3"]), ("B", ["T1", "T3"]), ("C", ["T1", "T3"])]
    )
    assert lists(assign(three)) == {"A": "T3-0 T1-0", "B": "T3-1 T1-1", "C": "T1-2"}


def test_static_members_sort_first_by_instance_id() -> None:
    group = spec(
        {"T1": 4},
        [("A", ["T1"]), ("B", ["T1"]), ("C", ["T1"])],
        instances={"B": "a-instance", "C": "z-instance"},
    )
    assert lists(assign(group)) == {"A": "T1-3", "B": "T1-0 T1-1", "C": "T1-2"}


def test_not_sticky() -> None:
    group = spec({"T1": 3}, [("A", ["T1"]), ("B", ["T1"])], owned={"A": [["T1", 2]]})
    assert lists(assign(group)) == {"A": "T1-0 T1-1", "B": "T1-2"}


def test_unknown_and_empty_topics() -> None:
    unknown = spec({"T1": 2}, [("A", ["T1", "gone"]), ("B", ["T1"])])
    assert lists(assign(unknown)) == {"A": "T1-0", "B": "T1-1"}
    empty = spec({"T1": 0, "T2": 3}, [("A", ["T1", "T2"]), ("B", ["T1", "T2"])])
    assert lists(assign(empty)) == {"A": "T2-0 T2-1", "B": "T2-2"}
    assert ServerRangeAssignor().assign(GroupSpec({"T1": 1}, ())).assignment == {}


def test_more_members_than_partitions() -> None:
    group = spec({"T2": 2}, [(f"m{i}", ["T2"]) for i in range(5)])
    assert lists(assign(group)) == {"m0": "T2-0", "m1": "T2-1", "m2": "", "m3": "", "m4": ""}


@st.composite
def groups(draw: st.DrawFn) -> GroupSpec:
    names = draw(st.lists(st.sampled_from(list(IDS)), min_size=1, max_size=4, unique=True))
    topics = {t: draw(st.integers(0, 30)) for t in names}
    n = draw(st.integers(1, 12))
    subs = [draw(st.lists(st.sampled_from(names), unique=True)) for _ in range(n)]
    if draw(st.booleans()):
        subs = [subs[0]] * n
    return spec(topics, [(f"member-{i:02d}", s) for i, s in enumerate(subs)])


@settings(max_examples=60, deadline=None)
@given(groups())
def test_ranges(group: GroupSpec) -> None:
    """Each topic is cut into contiguous ascending ranges over its subscribers, in member
    order (no instance ids here): sizes differ by at most one, larger ones first."""
    result = assign(group)
    for topic, count in group.topics.items():
        subscribers = [m.member_id for m in group.members if topic in m.topics]
        if not subscribers:
            continue
        got = [[tp.partition for tp in result[m] if tp.topic == topic] for m in subscribers]
        assert [p for ps in got for p in ps] == list(range(count))
        sizes = [len(ps) for ps in got]
        assert sizes == sorted(sizes, reverse=True)
        assert max(sizes) - min(sizes) <= 1
