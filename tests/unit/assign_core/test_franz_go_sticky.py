"""franz-go's ``sticky`` and ``cooperative-sticky`` models: the worked example, the
registration, the invariants on generated groups, the answers over the leader's map orders,
the cooperative adjustment, and franz-go's reading of its members' claims. franz-go's own
balancers are the oracle in ``tests/oracle/test_franz_go_assignors.py``."""

from __future__ import annotations

import doctest
import random
import struct

import pytest

from assign_core.assignors import franz_go_sticky
from assign_core.assignors.franz_go_sticky import (
    FranzGoCooperativeStickyAssignor,
    FranzGoStickyAssignor,
)
from assign_core.assignors.registry import (
    HASH_ORDERED,
    IDENTIFIED_ONLY,
    UNMODELLED,
    get_assignor,
)
from assign_core.model import AssignmentResult, GroupSpec, Member, TopicPartition
from streaming.codec.consumer_protocol import decode_franz_go_sticky_user_data
from streaming.codec.model import Subscription, TopicPartitions
from streaming.tracking.expected import owned_for_strategy

pytestmark = pytest.mark.unit

TP = TopicPartition
STRATEGIES = ("sticky", "cooperative-sticky")


def test_worked_example() -> None:
    failures, tried = doctest.testmod(franz_go_sticky, raise_on_error=False)
    assert tried > 0 and failures == 0


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_registered_judging_only_identified_leaders(strategy: str) -> None:
    assignor = get_assignor(strategy, "franz-go")
    assert isinstance(assignor, FranzGoStickyAssignor) and assignor.name == strategy
    assert "franz-go" not in UNMODELLED.get(strategy, ())
    assert "franz-go" in IDENTIFIED_ONLY[strategy]
    assert (strategy, "franz-go") in HASH_ORDERED


def _generated(seed: int) -> GroupSpec:
    rng = random.Random(seed)
    names = rng.sample(["t", "a", "Order", "b-1", "é"], rng.randint(1, 4))
    topics = {t: rng.randint(0, 12) for t in names}
    uniform = rng.random() < 0.5
    members = []
    claimable = [TP(t, p) for t in names for p in range(topics[t] + 1)]
    for i in range(rng.randint(1, 7)):
        subscribed = tuple(names if uniform else rng.sample(names, rng.randint(1, len(names))))
        k = rng.randint(0, min(4, len(claimable)))
        claims = tuple(rng.sample(claimable, k)) if rng.random() < 0.5 else ()
        members.append(
            Member(
                f"m-{rng.getrandbits(16):04x}-{i}",
                subscribed,
                group_instance_id=f"i-{i}" if rng.random() < 0.3 else None,
                owned_partitions=claims,
                generation=rng.choice([None, -1, 0, 1, 2]) if claims else None,
            )
        )
    return GroupSpec(topics=topics, members=tuple(members))


def _check_invariants(spec: GroupSpec, result: AssignmentResult) -> None:
    """Every partition of a subscribed topic once (withheld ones counted), only to a
    subscriber; uniform subscriptions: loads within one (before withholding); each list in
    franz-go's SyncGroup order (topic, then partition)."""
    assert list(result.assignment) == [m.member_id for m in spec.members]
    seen: list[TopicPartition] = []
    loads = {}
    for m in spec.members:
        tps = result.assignment[m.member_id]
        assert tps == sorted(tps, key=lambda tp: (tp.topic.encode(), tp.partition))
        assert all(tp.topic in m.topics for tp in tps)
        held = [tp for tp, to in result.withheld.items() if to == m.member_id]
        assert all(tp.topic in m.topics for tp in held)
        seen += tps + held
        loads[m.member_id] = len(tps) + len(held)
    wanted = {t for m in spec.members for t in m.topics}
    every = [TP(t, p) for t, n in spec.topics.items() if t in wanted for p in range(n)]
    assert sorted(seen) == sorted(every)
    if len({frozenset(m.topics) for m in spec.members}) == 1:
        assert max(loads.values()) - min(loads.values()) <= 1


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_invariants_over_every_map_order(strategy: str) -> None:
    assignor = get_assignor(strategy, "franz-go")
    assert isinstance(assignor, FranzGoStickyAssignor)
    for seed in range(150):
        spec = _generated(seed)
        answers, _ = assignor.alternatives(spec, 64)
        assert answers[0] == assignor.assign(spec)
        for answer in answers:
            _check_invariants(spec, answer)


def test_the_answer_depends_on_the_leaders_map_of_topics() -> None:
    """Two fresh members, three topics of one partition: whichever topic franz-go numbers
    first goes alone to the first member (franz-go gives each of the three, run after run)."""
    spec = GroupSpec(
        topics={"a": 1, "b": 1, "c": 1},
        members=(Member("m0", ("a", "b", "c")), Member("m1", ("a", "b", "c"))),
    )
    answers, complete = FranzGoStickyAssignor().alternatives(spec, 64)
    assert complete
    assert sorted(tuple(a.assignment["m0"]) for a in answers) == [
        (TP("a", 0),),
        (TP("b", 0),),
        (TP("c", 0),),
    ]


def test_a_single_topic_without_double_claims_has_one_answer() -> None:
    spec = GroupSpec(
        topics={"t": 7},
        members=tuple(Member(f"m{i}", ("t",)) for i in range(3)),
    )
    answers, complete = FranzGoStickyAssignor().alternatives(spec, 64)
    assert complete and len(answers) == 1


def test_static_members_are_balanced_first_by_instance_id() -> None:
    """The leader sorts static members (by instance id) before dynamic ones (by member id):
    the first in that order gets the first partition."""
    spec = GroupSpec(
        topics={"t": 1},
        members=(Member("a", ("t",)), Member("z", ("t",), group_instance_id="static")),
    )
    assert FranzGoStickyAssignor().assign(spec).assignment == {"a": [], "z": [TP("t", 0)]}


def test_cooperative_withholds_what_moves() -> None:
    """C3 joins C1 and C2 (generation 4): the partition that moves to C3 is withheld."""
    members = (
        Member("C1", ("t",), owned_partitions=(TP("t", 0), TP("t", 1)), generation=4),
        Member("C2", ("t",), owned_partitions=(TP("t", 2), TP("t", 3)), generation=4),
        Member("C3", ("t",)),
    )
    spec = GroupSpec(topics={"t": 4}, members=members)
    eager = FranzGoStickyAssignor().assign(spec)
    result = FranzGoCooperativeStickyAssignor().assign(spec)
    moved = {tp for tp in eager.assignment["C3"]}
    assert len(moved) == 1 and result.withheld == dict.fromkeys(moved, "C3")
    assert result.assignment["C3"] == []
    assert {m: set(tps) for m, tps in result.assignment.items() if m != "C3"} == {
        m: set(tps) for m, tps in eager.assignment.items() if m != "C3"
    }


def test_cooperative_a_beaten_stale_claim_is_no_ownership() -> None:
    """Z rejoins claiming t-0 at generation 1, which A holds at generation 5: if the plan
    gives t-0 to Z, it is withheld (Z's claim proves nothing) and A revokes it first."""
    members = (
        Member("A", ("t",), owned_partitions=(TP("t", 0), TP("t", 1), TP("t", 2)), generation=5),
        Member("Z", ("t",), owned_partitions=(TP("t", 0),), generation=1),
    )
    spec = GroupSpec(topics={"t": 3}, members=members)
    planned = FranzGoStickyAssignor().assign(spec).assignment
    assert TP("t", 0) in planned["Z"]  # re-stuck to its stale claimant
    result = FranzGoCooperativeStickyAssignor().assign(spec)
    assert result.withheld == {TP("t", 0): "Z"} and result.assignment["Z"] == []


def _sticky_struct(claims: dict[str, list[int]], generation: int | None) -> bytes:
    out = struct.pack(">i", len(claims))
    for t, ps in claims.items():
        out += struct.pack(">h", len(t)) + t.encode() + struct.pack(f">i{len(ps)}i", len(ps), *ps)
    return out if generation is None else out + struct.pack(">i", generation)


#: (user data, claims read, generation read) as franz-go's deserializeUserData reads them.
USER_DATA = [
    (_sticky_struct({"t": [0, 2], "u": [1]}, 7), {"t": (0, 2), "u": (1,)}, 7),
    (_sticky_struct({"t": [3]}, None), {"t": (3,)}, -1),  # no generation: -1
    (_sticky_struct({"t": [3]}, -1), {"t": (3,)}, -1),
    (_sticky_struct({"t": [0, 1]}, 4)[:-6], {}, -1),  # cut short: nothing
    (struct.pack(">i", -3), {}, -1),  # a negative count: no topic
    (b"", {}, -1),
]


@pytest.mark.parametrize(("data", "claims", "generation"), USER_DATA)
def test_franz_go_reads_its_sticky_user_data(
    data: bytes, claims: dict[str, tuple[int, ...]], generation: int
) -> None:
    read = decode_franz_go_sticky_user_data(data)
    assert {e.topic: e.partitions for e in read.previous_assignment} == claims
    assert read.generation == generation


def _subscription(generation: int, owned: tuple[TopicPartitions, ...], data: bytes) -> Subscription:
    return Subscription(
        version=3,
        topics=("t",),
        user_data=data,
        owned_partitions=owned,
        generation_id=generation,
        rack_id=None,
        assignor_data=None,
    )


def test_the_claims_franz_go_reads() -> None:
    """``sticky`` reads the user data; ``cooperative-sticky`` the owned partitions at the
    subscription's generation, or the user data when it has none."""
    data = _sticky_struct({"t": [5]}, 3)
    owned = (TopicPartitions("t", (1,)),)
    with_generation = _subscription(8, owned, data)
    without = _subscription(-1, owned, data)
    assert owned_for_strategy("sticky", with_generation, "franz-go") == ((TP("t", 5),), 3)
    assert owned_for_strategy("cooperative-sticky", with_generation, "franz-go") == (
        (TP("t", 1),),
        8,
    )
    assert owned_for_strategy("cooperative-sticky", without, "franz-go") == ((TP("t", 5),), 3)
    assert owned_for_strategy("range", with_generation, "franz-go") == ((), None)
