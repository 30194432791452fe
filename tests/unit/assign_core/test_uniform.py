"""The coordinator's ``uniform`` assignor and the Java-collection models behind it.

Expected lists are kafka-group-coordinator 4.4.0's, taken from the Java oracle
(``tests/oracle``) with the topic ids of Kafka's own tests. The reference notes describe 4.0;
where 4.4.0 differs the case says so.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assign_core.assignors import _server_common as server_common
from assign_core.assignors import _uniform_heterogeneous as uniform_heterogeneous
from assign_core.assignors import get_assignor
from assign_core.assignors import uniform as uniform_module
from assign_core.assignors._server_common import MapModel, TopicTable
from assign_core.assignors.uniform import UniformAssignor
from assign_core.errors import AssignmentError
from assign_core.javacompat import hashmap, string_hash, string_hashes, uuid_hash
from assign_core.javacompat.hashmap import (
    HashTableSim,
    float_capacity,
    hashset_copy_capacity,
    int_hash,
    int_set_order,
    put_only_order,
)
from assign_core.model import GroupSpec, Member, TopicPartition
from assign_core.scenario import parse_scenario

pytestmark = pytest.mark.unit

IDS = {
    "T1": "T1-A4s3VTwiI5CTbEp6POw",
    "T2": "T2-B4s3VTwiI5YHbPp6YUe",
    "T3": "T3-CU8fVTLCz5YMkLoDQsa",
    "T4": "T4-Tw9fVTLCz5HbPp6YQsa",
}


def spec(topics: dict[str, int], members: list[tuple[str, list[str], str]]) -> GroupSpec:
    """Members as (id, subscribed topics, current assignment like "T1-0 T1-2")."""
    return parse_scenario(
        {
            "topics": topics,
            "topic_ids": {t: IDS[t] for t in topics},
            "members": [
                {
                    "member_id": m,
                    "topics": subs,
                    "owned_partitions": [
                        [tp.rsplit("-", 1)[0], int(tp.rsplit("-", 1)[1])] for tp in owned.split()
                    ],
                }
                for m, subs, owned in members
            ],
        }
    )


def lists(result: dict[str, list[TopicPartition]]) -> dict[str, str]:
    return {m: " ".join(map(str, tps)) for m, tps in result.items()}


def check_invariants(group: GroupSpec, result: dict[str, list[TopicPartition]]) -> None:
    """Every partition at most once, only to subscribers, every member present."""
    assert list(result) == [m.member_id for m in group.members]
    seen = Counter(tp for tps in result.values() for tp in tps)
    assert not [tp for tp, n in seen.items() if n > 1]
    for m in group.members:
        assert {tp.topic for tp in result[m.member_id]} <= set(m.topics)
        for tp in result[m.member_id]:
            assert 0 <= tp.partition < group.topics[tp.topic]


def assign(group: GroupSpec) -> dict[str, list[TopicPartition]]:
    result = UniformAssignor().assign(group).assignment
    check_invariants(group, result)
    return result


# ------------------------------------------------------------------------------------------
# The module docstring's example and Kafka's unit-test scenarios (S26, S27)


def test_docstring_example() -> None:
    """S26 ``testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks``. 4.4.0 differs from the
    reference (4.0: A {T1:[0], T3:[0,1]}, B {T1:[1,2]}): A gives its extra partition up."""
    group = spec({"T1": 3, "T3": 2}, [("A", ["T1", "T3"], ""), ("B", ["T1", "T3"], "")])
    assert lists(assign(group)) == {"A": "T3-0 T3-1", "B": "T1-0 T1-1 T1-2"}
    assert uniform_module.__doc__ is not None
    assert "    A: T3-0 T3-1\n    B: T1-0 T1-1 T1-2\n" in uniform_module.__doc__


def test_registered() -> None:
    assignor = get_assignor("uniform")
    assert (assignor.name, assignor.side) == ("uniform", "server")


@pytest.mark.parametrize(
    ("name", "topics", "members", "expected"),
    [
        (
            # 4.4.0 differs from the reference (4.0: A {T1:[0,2,3], T2:[0,3,4]}, B {T1:[1,4,5],
            # T2:[1,2]}): A, unable to fill quota 6, gives the extra partition to B.
            "testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics",
            {"T1": 6, "T2": 5},
            [("A", ["T1", "T2"], "T1-0 T1-2 T2-0"), ("B", ["T1", "T2"], "T1-1 T2-1 T2-2")],
            {"A": "T2-0 T2-3 T2-4 T1-0 T1-2", "B": "T2-1 T2-2 T1-1 T1-3 T1-4 T1-5"},
        ),
        (
            # The reference lists A {T1:[0,2]}, B {T1:[1], T2:[1]}, C {T2:[0,2]}: there A's
            # current assignment iterates T1 first; the coordinator's HashMap iterates T2 first.
            "testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics",
            {"T1": 3, "T2": 3},
            [
                ("A", ["T1", "T2"], "T1-0 T1-2 T2-0"),
                ("B", ["T1", "T2"], "T1-1 T2-1 T2-2"),
                ("C", ["T1", "T2"], ""),
            ],
            {"A": "T2-0 T1-0", "B": "T2-1 T2-2", "C": "T1-1 T1-2"},
        ),
        (
            # Reference: A {T1:[0,1], T2:[0]}, B {T1:[2], T2:[1,2]} (T1 iterated first, as above).
            "testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment",
            {"T1": 3, "T2": 3},
            [("A", ["T1", "T2"], "T1-0 T1-1 T2-0 T2-1"), ("B", ["T1", "T2"], "T1-2 T2-2")],
            {"A": "T2-0 T2-1 T1-0", "B": "T2-2 T1-1 T1-2"},
        ),
        (
            "S27 testFirstAssignmentTwoMembersTwoTopics (heterogeneous)",
            {"T1": 3, "T3": 6},
            [("A", ["T1", "T3"], ""), ("B", ["T3"], "")],
            {"A": "T1-0 T1-1 T1-2 T3-4", "B": "T3-0 T3-1 T3-2 T3-3 T3-5"},
        ),
        (
            "testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment",
            {"T1": 6, "T2": 4, "T3": 4},
            [
                ("A", ["T1"], "T1-0 T1-1 T1-2"),
                ("B", ["T1", "T2"], "T1-3 T2-0"),
                ("C", ["T1", "T2", "T3"], "T1-4 T1-5 T2-1 T2-2 T2-3 T3-0 T3-1 T3-2 T3-3"),
            ],
            {
                "A": "T1-0 T1-1 T1-2 T1-5",
                "B": "T2-0 T2-1 T2-2 T2-3 T1-3",
                "C": "T3-0 T3-1 T3-2 T3-3 T1-4",
            },
        ),
        (
            "testFirstAssignmentNumMembersGreaterThanTotalNumPartitions",
            {"T3": 1, "T1": 2},
            [("A", ["T3"], ""), ("B", ["T3"], ""), ("C", ["T1"], "")],
            {"A": "T3-0", "B": "", "C": "T1-0 T1-1"},
        ),
    ],
)
def test_kafka_scenarios(
    name: str,
    topics: dict[str, int],
    members: list[tuple[str, list[str], str]],
    expected: dict[str, str],
) -> None:
    assert lists(assign(spec(topics, members))) == expected, name


# ------------------------------------------------------------------------------------------
# Edge cases


def test_no_members_and_no_subscriptions() -> None:
    assert UniformAssignor().assign(GroupSpec({"T1": 3}, ())).assignment == {}
    group = spec({"T1": 3}, [("A", [], "T1-0"), ("B", [], "")])
    assert lists(assign(group)) == {"A": "", "B": ""}  # Map.of(): nobody in the result


def test_unknown_topics_are_not_subscribed() -> None:
    """``TopicIds`` skips names missing from the metadata (no exception, unlike Java's
    explicit -1 check, which is unreachable)."""
    group = spec({"T1": 2}, [("A", ["T1", "gone"], ""), ("B", ["T1", "gone"], "")])
    assert lists(assign(group)) == {"A": "T1-0", "B": "T1-1"}


def test_partition_owned_twice_is_left_unassigned() -> None:
    """Homogeneous: a doubly owned partition makes the quotas add up to fewer distinct
    partitions; Java throws "Partitions were left unassigned"."""
    group = spec({"T1": 2}, [("A", ["T1"], "T1-0"), ("B", ["T1"], "T1-0")])
    with pytest.raises(AssignmentError, match="left unassigned"):
        UniformAssignor().assign(group)


def test_partition_beyond_the_topic_heterogeneous() -> None:
    """Heterogeneous: ``owners[partition]`` with partition >= count throws in Java."""
    group = spec({"T1": 2, "T3": 1}, [("A", ["T1"], "T1-5"), ("B", ["T1", "T3"], "")])
    with pytest.raises(AssignmentError, match="beyond"):
        UniformAssignor().assign(group)


def test_unsubscribed_topic_is_revoked() -> None:
    group = spec({"T1": 2, "T3": 2}, [("A", ["T1"], "T3-0 T3-1 T1-0"), ("B", ["T1", "T3"], "")])
    assert lists(assign(group)) == {"A": "T1-0 T1-1", "B": "T3-0 T3-1"}


#: Issue 13: a member's current assignment still holds partitions of a deleted topic.
VANISHED_TOPIC_SCENARIO = Path(__file__).with_name("scenarios") / "uniform_vanished_topic.json"


def test_vanished_topic_sizes_the_copy_of_the_current_assignment() -> None:
    """The coordinator's current assignment keeps a deleted topic's id, so
    ``deepCopyAssignment`` sizes its ``HashMap`` for 5 topics (8 bins, not 4) before
    removing it: the member's topics then iterate _internal, inventory, events, a (4.4.0)."""
    result = assign(parse_scenario(json.loads(VANISHED_TOPIC_SCENARIO.read_text())))
    assert result["B2w_uNRwHbRXjjELT99d0g"] == [
        *(TopicPartition("_internal", p) for p in (2, 18, 6, 22, 26, 10, 30, 14)),
        TopicPartition("inventory", 3),
        TopicPartition("events", 0),
        TopicPartition("a", 2),
        TopicPartition("a", 6),
    ]


def test_vanished_topic_id_from_the_scenario() -> None:
    """A vanished topic keeps the id ``topic_ids`` gives it (else one derived from its name),
    and a subscription naming it resolves nothing."""
    raw = json.loads(VANISHED_TOPIC_SCENARIO.read_text())
    raw["topic_ids"]["deleted-topic"] = "AAAAAAAAAAAAAAAAAAAAAA"
    table = TopicTable(parse_scenario(raw))
    deleted = table.owned_topic("deleted-topic")
    assert table.ids[deleted] == "AAAAAAAAAAAAAAAAAAAAAA"
    assert "deleted-topic" not in table.index
    assert table.counts[deleted] == 0


def test_stable_group_keeps_its_assignment() -> None:
    """A second run on the first run's result keeps every partition where it is (the lists
    may change order: the coordinator rebuilds the maps with ``put``)."""
    ids = [f"m{i:03d}" for i in range(40)]
    topics = {t: 97 for t in IDS}
    first = assign(spec(topics, [(m, list(IDS), "") for m in ids]))
    sizes = sorted(map(len, first.values()))
    assert sizes[-1] - sizes[0] <= 1
    again = spec(topics, [(m, list(IDS), " ".join(map(str, first[m]))) for m in ids])
    second = assign(again)
    assert {m: set(tps) for m, tps in second.items()} == {m: set(tps) for m, tps in first.items()}
    third = spec(topics, [(m, list(IDS), " ".join(map(str, second[m]))) for m in ids])
    assert assign(third) == second  # and from then on the lists too


# ------------------------------------------------------------------------------------------
# Invariants on random groups


@st.composite
def groups(draw: st.DrawFn) -> GroupSpec:
    names = draw(st.lists(st.sampled_from(list(IDS)), min_size=1, max_size=4, unique=True))
    topics = {t: draw(st.integers(0, 40)) for t in names}
    n = draw(st.integers(1, 12))
    equal = draw(st.booleans())
    common = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    members = []
    owned_by: dict[str, list[str]] = {}
    for i in range(n):
        subs = common if equal else draw(st.lists(st.sampled_from(names), unique=True))
        owned_by[f"member-{i}"] = []
        members.append((f"member-{i}", subs))
    for t, count in topics.items():
        for p in range(count):
            owner = draw(st.integers(-1, n - 1))
            if owner >= 0:
                owned_by[f"member-{owner}"].append(f"{t}-{p}")
    return spec(topics, [(m, subs, " ".join(owned_by[m])) for m, subs in members])


@settings(max_examples=60, deadline=None)
@given(groups())
def test_invariants(group: GroupSpec) -> None:
    result = assign(group)
    subscribed = {t for m in group.members for t in m.topics}
    everything = sum(c for t, c in group.topics.items() if t in subscribed)
    assert sum(map(len, result.values())) == everything  # nothing left over
    if len({frozenset(m.topics) for m in group.members}) == 1:
        sizes = [len(tps) for tps in result.values()]
        assert max(sizes) - min(sizes) <= 1  # homogeneous: balanced


# ------------------------------------------------------------------------------------------
# The Java collection models (expected orders recorded on OpenJDK 17.0.15)


def test_hashset_copy_orders() -> None:
    assert put_only_order([3, 17, 1], int_hash, int_hash, hashset_copy_capacity(3)) == [17, 1, 3]
    # 20 keys in one bin of new HashSet<>(list): resized to 64, then treeified (root first)
    multiples = list(range(0, 1280, 64))
    expected = [448, 192, 0, 64, 128, *range(256, 448, 64), *range(512, 1280, 64)]
    assert put_only_order(multiples, int_hash, int_hash, hashset_copy_capacity(20)) == expected
    assert int_set_order(hashset_copy_capacity(20), multiples) == expected


def test_compute_if_absent_prepends_and_resizes_late() -> None:
    sim: HashTableSim[int] = HashTableSim(int_hash, int_hash)
    for k in (1, 17, 33):
        sim.compute_if_absent(k)
    assert sim.keys() == [33, 17, 1]
    sim = HashTableSim(int_hash, int_hash, pending_capacity=1)  # new HashMap<>(0)
    for k in (5, 6, 7):
        sim.compute_if_absent(k)
    assert sim.keys() == [5, 6, 7]


def test_removal_from_a_tree_bin() -> None:
    sim: HashTableSim[int] = HashTableSim(int_hash, int_hash)
    for k in range(0, 768, 64):
        sim.put(k)
    sim.remove(256)
    sim.remove(0)
    sim.put(1)
    assert sim.keys() == [448, 192, 64, 128, 320, 384, 512, 576, 640, 704, 1]


def test_map_model_matches_the_simulator() -> None:
    """The cheap model of a member's map gives the simulator's order on random call
    sequences (put, computeIfAbsent, remove), colliding topic ids included."""
    rng = random.Random(5)
    for _ in range(300):
        n_topics = rng.choice([3, 12, 40])
        topics_json = {f"t{i}": 1 for i in range(n_topics)}
        group = parse_scenario({"topics": topics_json, "members": []})
        table = TopicTable(group)
        pending = rng.choice([1, 2, 16, 64])
        model = MapModel(table, pending)
        sim: HashTableSim[int] = HashTableSim(table.hash_of, table.cmp_of, pending)
        for _ in range(rng.randint(1, 80)):
            t = rng.randrange(n_topics)
            op = rng.random()
            if op < 0.3:
                model.put(t)
                sim.put(t)
            elif op < 0.85:
                model.compute_if_absent(t)
                sim.compute_if_absent(t)
            else:
                model.remove(t)
                sim.remove(t)
        assert model.order() == sim.keys()


def test_capacity_idioms() -> None:
    assert [float_capacity(n) for n in (0, 1, 2, 3, 12, 13)] == [1, 2, 3, 5, 17, 18]
    assert [hashset_copy_capacity(n) for n in (0, 11, 12, 50)] == [16, 16, 32, 128]


def test_string_hashes() -> None:
    words = ["consumer1", "consumer2", "group", "polygenelubricants", "é", "\U0001f600", ""]
    words += [f"{i:022d}" for i in range(20)]
    assert string_hashes(words) == [string_hash(w) for w in words]
    assert string_hashes(["polygenelubricants"] * 9) == [-(2**31)] * 9
    assert uuid_hash(IDS["T1"]) == 418407434


def test_members_iterate_in_java_hashmap_order() -> None:
    """``memberIds()``: "consumer1..3" iterate consumer3, consumer2, consumer1."""
    group = GroupSpec(
        {"T1": 3},
        tuple(Member(f"consumer{i}", ("T1",)) for i in (1, 2, 3)),
        topic_ids={"T1": IDS["T1"]},
    )
    # homogeneous: the list of partitions goes out in memberIds() order
    assert lists(assign(group)) == {"consumer1": "T1-2", "consumer2": "T1-1", "consumer3": "T1-0"}


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(st.integers(0, 300), min_size=1, max_size=6),
    n_members=st.integers(1, 120),
)
def test_first_assignment_equals_the_general_path(counts: list[int], n_members: int) -> None:
    """A homogeneous group that owns nothing takes the one-pass path; it gives the lists the
    quota walk and the replay of every member's map give (runs over several topics, runs
    rotated at a block boundary, members left empty)."""
    names = [f"topic-{i}" for i in range(len(counts))]
    group = parse_scenario(
        {
            "topics": dict(zip(names, counts, strict=True)),
            "members": [{"member_id": f"member-{i}", "topics": names} for i in range(n_members)],
        }
    )
    g = uniform_module.ServerGroup(group)
    olds = uniform_module._Olds(g)
    states = uniform_module._homogeneous(g, olds)
    one_pass = uniform_module._first_assignment(g)
    if states is None:
        assert one_pass is None
    else:
        assert one_pass is not None
        assert one_pass.lists() == uniform_module._numbers(g, olds, states).lists()


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(st.integers(1, 400), min_size=2, max_size=24),
    n_members=st.integers(4, 80),
    seed=st.integers(0, 2**32 - 1),
)
def test_batched_fresh_targets_equal_the_per_member_path(
    counts: list[int], n_members: int, seed: int
) -> None:
    """A heterogeneous group's members that owned nothing are ordered in one numpy sort; it
    gives the lists each member's own replay gives (members with many partitions of a topic,
    crowded maps and a few members owning partitions mixed in)."""
    rng = random.Random(seed)
    names = [f"topic-{i}" for i in range(len(counts))]
    members = []
    for i in range(n_members):
        subs = rng.sample(names, rng.randint(1, len(names)))
        owned = []
        if rng.random() < 0.2:
            t = rng.choice(subs)
            owned = [[t, p] for p in range(min(counts[names.index(t)], rng.randint(1, 5)))]
        members.append({"member_id": f"m-{i}", "topics": subs, "owned_partitions": owned})
    scenario = {"topics": dict(zip(names, counts, strict=True)), "members": members}
    group = parse_scenario(scenario)
    results = []
    for batch_min in (1, 1 << 30):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(uniform_heterogeneous, "_BATCH_MIN", batch_min)
            try:
                results.append(UniformAssignor().assign(group).assignment)
            except AssignmentError as e:
                results.append({"error": str(e)})
    assert results[0] == results[1]


#: Issue 13, fifth pass: a batch of fresh members whose last one was left out of it.
BATCH_LAST_INSERTION_SCENARIO = (
    Path(__file__).with_name("scenarios") / "uniform_batch_last_insertion.json"
)


def test_batched_map_capacity_of_the_last_member() -> None:
    """The last member of the batch inserts ``payments`` with its last change, so its map
    keeps 4 bins: ``audit``, ``events``, ``payments``, ``orders`` (Java's lists). The batch
    once read the member's last insertion from a slice that ended where the member left out
    after it began, and took 8 bins."""
    raw = json.loads(BATCH_LAST_INSERTION_SCENARIO.read_text())
    for batch_min in (1, 1 << 30):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(uniform_heterogeneous, "_BATCH_MIN", batch_min)
            result = assign(parse_scenario(raw))
        assert result["Xg9u7qMCRq22fsSfsxZmdw"] == [
            TopicPartition("audit", 0),
            TopicPartition("audit", 2),
            TopicPartition("events", 16),
            TopicPartition("events", 22),
            TopicPartition("payments", 2),
            *(TopicPartition("orders", p) for p in (2, 18, 6, 22, 10, 14)),
        ]


def _put_only_safe_reference(spreads: list[int], cap: int) -> bool:
    """The check as first written: every capacity the table passes through, sorted bins."""
    n = len(spreads)
    while True:
        k = min(n, cap * 3 // 4 + 1)
        if k >= 9 and not hashmap._buckets_ok(spreads[:k], cap, 9):
            return False
        if n <= cap * 3 // 4:
            return True
        cap *= 2


def test_put_only_check_agrees_with_the_reference() -> None:
    """The check stops once every key is in, and counts bins with numpy from 512 keys."""
    rng = random.Random(13)
    seen = set()
    for n in (9, 30, 100, 600, 5000):
        for bits in (5, 8, 12, 16, 32):
            for cap in (2, 16):
                keys = [rng.getrandbits(bits) for _ in range(n)]
                expected = _put_only_safe_reference(keys, cap)
                assert hashmap._put_only_safe(keys, cap) == expected, (n, bits, cap)
                seen.add(expected)
    assert seen == {True, False}


def test_string_hashes_of_many_ids() -> None:
    """KIP-848 member ids (22 base64 characters) hashed as numpy lanes wrap like Java."""
    rng = random.Random(7)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    ids = ["".join(rng.choices(alphabet, k=22)) for _ in range(3000)]
    assert string_hashes(ids) == [string_hash(i) for i in ids]
    mixed = [*ids[:50], "é" * 22, "x" * 300, ""]
    assert string_hashes(mixed) == [string_hash(i) for i in mixed]


def test_parser_shares_names_subscriptions_and_partitions() -> None:
    """Equal subscriptions are one tuple and a listed topic's partitions the cached objects
    (what the assignors compare by identity first); a partition beyond the topic's count or
    of a vanished topic is a new object, equal as ever."""
    group = parse_scenario(
        {
            "topics": {"t": 4},
            "members": [
                {"member_id": "a", "topics": ["t"], "owned_partitions": [["t", 0], ["t", 5]]},
                {"member_id": "b", "topics": ["t"], "owned_partitions": [["t", 0], ["gone", 1]]},
            ],
        }
    )
    a, b = group.members
    assert a.topics is b.topics
    assert a.owned_partitions[0] is b.owned_partitions[0] == TopicPartition("t", 0)
    assert a.owned_partitions[1] == TopicPartition("t", 5)
    assert b.owned_partitions[1] == TopicPartition("gone", 1)


def _flat_fields(owned: object) -> object:
    if isinstance(owned, server_common.OwnedFlat):
        return ("flat", owned.topics, owned.starts, list(owned.parts), owned.tps, owned.perm)
    if isinstance(owned, list):
        return [(o.topic, o.partitions, o.tps, o.lo, o.hi) for o in owned]
    return owned


@settings(max_examples=80, deadline=None)
@given(
    counts=st.lists(st.integers(1, 70_000), min_size=1, max_size=14),
    n_members=st.integers(1, 60),
    seed=st.integers(0, 2**32 - 1),
)
def test_current_assignments_read_together_equal_one_by_one(
    counts: list[int], n_members: int, seed: int
) -> None:
    """The members' current assignments read with numpy in one go (``_flat_many``) give what
    reading them one by one gives: the same views, the same free partitions and double
    ownership (topics in shuffled groups, a topic in two groups, vanished topics, partitions
    from 65,536 on, sets with 9 keys in a bin, members owning nothing)."""
    rng = random.Random(seed)
    names = [f"topic-{i}" for i in range(len(counts))]
    members = []
    for i in range(n_members):
        owned: list[list[object]] = []
        for name in rng.sample(names, rng.randint(0, len(names))):
            count = counts[names.index(name)]
            shape = rng.random()
            if shape < 0.1:  # many keys in one bin of the set
                ps = list(range(rng.randrange(16), count, 16))[: rng.randint(1, 20)]
            elif shape < 0.2:  # from 65,536 on
                ps = [p for p in range(65_530, 65_540) if p < count] or [0]
            else:
                ps = sorted(rng.sample(range(count), min(count, rng.randint(1, 30))))
                if rng.random() < 0.5:
                    rng.shuffle(ps)
            owned.extend([name, p] for p in ps)
        if owned and rng.random() < 0.1:
            owned.append(["vanished", 3])
        if owned and rng.random() < 0.1:
            owned.append(owned.pop(0))  # the first topic again, in a second group
        members.append({"member_id": f"m-{i}", "topics": names, "owned_partitions": owned})
    group = parse_scenario({"topics": dict(zip(names, counts, strict=True)), "members": members})
    together = server_common.ServerGroup(group)
    alone = server_common.ServerGroup(group)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(server_common, "_BULK_MEMBERS", 1)
        bulk = [_flat_fields(o) for o in together.current]
        patch.setattr(server_common, "_BULK_MEMBERS", 10**9)
        assert bulk == [_flat_fields(o) for o in alone.current]
    assert {t: list(ps) for t, ps in together._ownership[0].items()} == {
        t: list(ps) for t, ps in alone._ownership[0].items()
    }
    assert together.double_owned == alone.double_owned


# A member's current assignment is one run (``ServerGroup.current`` answers ``(topic, lo,
# hi, objects)``) only when it lists one dense range of one topic in the iteration order of
# ``new HashSet<>(it)``: 4 partitions go to a table of 16 bins, so ascending within a block
# of 16, or from the next multiple of 16 on first. Topic "t" has 40 partitions.
RUN_CASES = [
    # 1. ascending within one block: a run
    ([3, 4, 5, 6], (3, 6)),
    # 2. wrapped at a block boundary (the set of 14..17 iterates 16, 17, 14, 15): a run
    ([16, 17, 14, 15], (14, 17)),
    # 3. wrapped after one partition (the set of 13..16): a run
    ([16, 13, 14, 15], (13, 16)),
    # 4. ascending across a block boundary: not the set's order
    ([14, 15, 16, 17], None),
    # 5. wrapped shape, turning too late (the bisection's turn at 3, then 18 is missing)
    ([16, 14, 17, 15], None),
    # 6. a gap
    ([3, 4, 6], None),
    # 7. beyond the topic's 40 partitions
    ([38, 39, 40], None),
    # 8. a vanished topic's partitions
    ([("gone", 3), ("gone", 4)], None),
    # 9. another topic in the middle
    ([3, ("u", 4), 5], None),
    # 10. a single partition: a run
    ([7], (7, 7)),
]


@pytest.mark.parametrize(("partitions", "run"), RUN_CASES)
@pytest.mark.parametrize("shared", [True, False], ids=["interned", "own objects"])
def test_current_assignment_read_as_a_run(
    partitions: list[int | tuple[str, int]], run: tuple[int, int] | None, shared: bool
) -> None:
    """Run or not, by the table above; a run keeps the input's own objects, in input order,
    whether they are the interned ones (compared by identity) or equal copies."""
    owned = [["t", p] if isinstance(p, int) else list(p) for p in partitions]
    group = parse_scenario(
        {
            "topics": {"t": 40, "u": 8},
            "members": [
                {"member_id": "m", "topics": ["t", "u"], "owned_partitions": owned},
                {"member_id": "n", "topics": ["t", "u"], "owned_partitions": []},
            ],
        }
    )
    if not shared:  # equal objects of the member's own, not the parser's interned ones
        member = group.members[0]
        copies = tuple(TopicPartition(t, p) for t, p in member.owned_partitions)
        assert all(c is not o for c, o in zip(copies, member.owned_partitions, strict=True))
        member = Member(member.member_id, member.topics, owned_partitions=copies)
        group = GroupSpec(group.topics, (member, group.members[1]), topic_ids=group.topic_ids)
    given_tps = group.members[0].owned_partitions
    current = server_common.ServerGroup(group).current
    if run is None:
        assert not isinstance(current[0], tuple)
    else:
        t, lo, hi, tps = current[0]
        assert (t, lo, hi) == (0, *run)
        assert tps == list(given_tps)
        assert all(a is b for a, b in zip(tps, given_tps, strict=True))
    assert current[1] == []
