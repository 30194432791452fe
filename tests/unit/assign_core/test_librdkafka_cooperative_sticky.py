"""librdkafka's ``cooperative-sticky`` (:mod:`assign_core.assignors.librdkafka_cooperative_sticky`).

Its answers are checked bit for bit against the real library in
``tests/integration/test_librdkafka_assignors.py``; here, the properties every answer has over
generated groups that rebalance generation after generation (members join, leave and change
subscriptions, static and dynamic, owned partitions from the previous generation), and the
worked example.
"""

from __future__ import annotations

import doctest
import random
from collections import Counter

import pytest

from assign_core.assignors import librdkafka_cooperative_sticky
from assign_core.assignors.librdkafka_cooperative_sticky import cooperative_adjust, sticky_lists
from assign_core.assignors.registry import UNMODELLED, get_assignor
from assign_core.errors import AssignmentError
from assign_core.model import GroupSpec, Member, TopicPartition

pytestmark = pytest.mark.unit

TOPICS = {"Order": 7, "Stock": 5, "Big": 12, "a": 1}


def test_worked_example() -> None:
    failures, tried = doctest.testmod(librdkafka_cooperative_sticky, raise_on_error=False)
    assert tried > 0 and failures == 0


def test_registered_and_judged() -> None:
    assignor = get_assignor("cooperative-sticky", "librdkafka")
    assert type(assignor).__name__ == "LibrdkafkaCooperativeStickyAssignor"
    assert "librdkafka" not in UNMODELLED.get("cooperative-sticky", ())


def _generations(seed: int, steps: int = 12) -> list[GroupSpec]:
    """A group rebalancing ``steps`` times, each generation's members owning what the
    previous adjusted assignment gave them."""
    rnd = random.Random(seed)
    names = list(TOPICS)
    shared = tuple(rnd.sample(names, k=rnd.randint(1, 3)))
    members: dict[str, Member] = {}
    owned: dict[str, list[TopicPartition]] = {}
    specs = []
    for generation in range(1, steps + 1):
        if not members or (len(members) < 6 and rnd.random() < 0.5):
            member_id = f"{rnd.choice('akz')}-{generation}-{rnd.randint(0, 99)}"
            topics = shared if rnd.random() < 0.5 else tuple(rnd.sample(names, k=rnd.randint(1, 3)))
            static = f"i-{generation}" if rnd.random() < 0.4 else None
            members[member_id] = Member(member_id, topics, static)
        elif len(members) > 1 and rnd.random() < 0.5:
            del members[rnd.choice(list(members))]
        spec = GroupSpec(
            topics=TOPICS,
            members=tuple(
                Member(
                    m.member_id,
                    m.topics,
                    m.group_instance_id,
                    owned_partitions=tuple(owned.get(m.member_id, ())),
                    generation=generation - 1 if m.member_id in owned else -1,
                )
                for m in members.values()
            ),
        )
        specs.append(spec)
        owned = {
            m: list(tps)
            for m, tps in get_assignor("cooperative-sticky", "librdkafka")
            .assign(spec)
            .assignment.items()
        }
    return specs


@pytest.mark.parametrize("seed", range(40))
def test_each_partition_once_to_a_subscriber_and_balanced(seed: int) -> None:
    for spec in _generations(seed):
        lists = sticky_lists(spec)
        assert list(lists) == [m.member_id for m in spec.members]
        subscribed = {m.member_id: set(m.topics) for m in spec.members}
        given = Counter(tp for tps in lists.values() for tp in tps)
        eligible = {
            TopicPartition(t, p)
            for t, n in spec.topics.items()
            if any(t in s for s in subscribed.values())
            for p in range(n)
        }
        assert set(given) == eligible and set(given.values()) <= {1}, spec
        for member_id, tps in lists.items():
            assert all(tp.topic in subscribed[member_id] for tp in tps)
        if len({m.topics for m in spec.members}) == 1:  # one subscription: balanced
            sizes = [len(tps) for tps in lists.values()]
            assert max(sizes) - min(sizes) <= 1, (spec, lists)


@pytest.mark.parametrize("seed", range(40))
def test_adjustment_keeps_owned_and_withholds_moves(seed: int) -> None:
    for spec in _generations(seed):
        lists = sticky_lists(spec)
        adjusted, withheld = cooperative_adjust(spec.members, lists)
        owner = {tp: m.member_id for m in spec.members for tp in m.owned_partitions}
        for member_id, tps in lists.items():
            for tp in tps:
                if tp in owner and owner[tp] != member_id:
                    assert withheld[tp] == member_id and tp not in adjusted[member_id]
                else:
                    assert tp in adjusted[member_id]
        kept = [tp for tps in adjusted.values() for tp in tps]
        assert len(kept) == len(set(kept)) and not set(kept) & set(withheld)


def test_withheld_partitions_follow_in_the_next_generation() -> None:
    topics = {"Order": 7, "Stock": 5}
    both = ("Order", "Stock")
    first = sticky_lists(GroupSpec(topics, (Member("C1", both), Member("C2", both))))
    owners = [
        Member(c, both, owned_partitions=tuple(tps), generation=1) for c, tps in first.items()
    ]
    joined = GroupSpec(topics, (*owners, Member("C3", both)))
    adjusted, withheld = cooperative_adjust(joined.members, sticky_lists(joined))
    assert set(withheld.values()) == {"C3"} and len(withheld) == 4
    follow_up = GroupSpec(
        topics,
        tuple(
            Member(c, both, owned_partitions=tuple(tps), generation=2)
            for c, tps in adjusted.items()
        ),
    )
    lists, again = cooperative_adjust(follow_up.members, sticky_lists(follow_up))
    assert not again and set(lists["C3"]) == set(withheld)
    assert [len(tps) for tps in lists.values()] == [4, 4, 4]


def test_a_partition_claimed_twice_in_one_generation_is_nobodys() -> None:
    tp = TopicPartition("Order", 0)
    spec = GroupSpec(
        {"Order": 2},
        (
            Member("a", ("Order",), owned_partitions=(tp,), generation=3),
            Member("b", ("Order",), owned_partitions=(tp,), generation=3),
        ),
    )
    lists = sticky_lists(spec)
    assert sorted(len(v) for v in lists.values()) == [1, 1]
    _adjusted, withheld = cooperative_adjust(spec.members, lists)
    holder = next(m for m, tps in lists.items() if tp in tps)
    # the adjustment takes the last claimer as the owner: anyone else waits for it
    assert (tp in withheld) == (holder != "b")


def test_rack_aware_runs_are_not_modelled() -> None:
    members = (Member("a", ("Order",), rack="r1"), Member("b", ("Order",)))
    gated = GroupSpec({"Order": 2}, members, partition_racks={"Order": (("r1",), ("r2",))})
    with pytest.raises(AssignmentError, match="rack-aware"):
        sticky_lists(gated)
    # replicas on every rack, or no replica on a member's rack: the gate is shut
    everywhere = GroupSpec({"Order": 2}, members, partition_racks={"Order": (("r1", "r2"),) * 2})
    elsewhere = GroupSpec({"Order": 2}, members, partition_racks={"Order": (("r2",), ("r3",))})
    for spec in (everywhere, elsewhere, GroupSpec({"Order": 2}, members)):
        assert sticky_lists(spec) == {
            "a": [TopicPartition("Order", 0)],
            "b": [TopicPartition("Order", 1)],
        }
