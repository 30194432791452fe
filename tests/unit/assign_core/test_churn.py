"""Churn and balance rules (``assign_core.metrics.churn`` / ``.balance``), numbered tables."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assign_core.metrics import (
    churn,
    identities_of,
    is_balanced,
    member_identities,
    min_moves_to_balance,
    subscriptions_equal,
)
from assign_core.metrics.churn import by_identity, owners
from assign_core.model import GroupSpec, Member, TopicPartition

pytestmark = pytest.mark.unit


def tps(*partitions: int) -> list[TopicPartition]:
    """Partitions of topic ``t``."""
    return [TopicPartition("t", p) for p in partitions]


@dataclass(frozen=True)
class ChurnCase:
    rule: str
    why: str
    before: dict[str, list[TopicPartition]]
    after: dict[str, list[TopicPartition]]
    identities: dict[str, str] | None
    moved: list[int]
    revoked: dict[str, list[int]]
    assigned: dict[str, list[int]]
    fraction: float
    joined: tuple[str, ...] = ()
    left: tuple[str, ...] = ()


CHURN_CASES = [
    # 2. nothing changes: no moves, nothing revoked or assigned
    ChurnCase(
        "2", "unchanged",
        {"a": tps(0, 1), "b": tps(2)}, {"a": tps(1, 0), "b": tps(2)}, None,
        [], {"a": [], "b": []}, {"a": [], "b": []}, 0.0,
    ),
    # 2. t-1 goes from a to b: one move, revoked from a, assigned to b; 1 of 3 owned moved
    ChurnCase(
        "2", "one move",
        {"a": tps(0, 1), "b": tps(2)}, {"a": tps(0), "b": tps(2, 1)}, None,
        [1], {"a": [1], "b": []}, {"a": [], "b": [1]}, 1 / 3,
    ),
    # 3/5. a new member takes t-2 from b: a move; c joined and got it assigned
    ChurnCase(
        "5", "member joins",
        {"a": tps(0, 1), "b": tps(2, 3)}, {"a": tps(0, 1), "b": tps(3), "c": tps(2)}, None,
        [2], {"a": [], "b": [2], "c": []}, {"a": [], "b": [], "c": [2]}, 0.25, ("c",), (),
    ),
    # 5. a member leaves: all its partitions are revoked, and moved where someone takes them
    ChurnCase(
        "5", "member leaves",
        {"a": tps(0), "b": tps(1), "c": tps(2)}, {"a": tps(0, 2), "b": tps(1)}, None,
        [2], {"a": [], "b": [], "c": [2]}, {"a": [2], "b": [], "c": []}, 1 / 3, (), ("c",),
    ),
    # 1. static member: "old-id" and "new-id" are both instance "i1", so keeping t-0 across
    #    the restart is not a move, and nobody joined or left
    ChurnCase(
        "1", "static member returns with a new member id",
        {"old-id": tps(0, 1), "b": tps(2)}, {"new-id": tps(0), "b": tps(2, 1)},
        {"old-id": "i1", "new-id": "i1"},
        [1], {"i1": [1], "b": []}, {"i1": [], "b": [1]}, 1 / 3,
    ),
    # 1. without identities the same change looks like a leave + a join moving t-0 too
    ChurnCase(
        "1", "same change, dynamic ids",
        {"old-id": tps(0, 1), "b": tps(2)}, {"new-id": tps(0), "b": tps(2, 1)}, None,
        [0, 1], {"old-id": [0, 1], "b": [], "new-id": []},
        {"old-id": [], "b": [1], "new-id": [0]}, 2 / 3, ("new-id",), ("old-id",),
    ),
    # 2. t-0 claimed by a and b before (a double claim), kept by b: not a move; a lost it
    ChurnCase(
        "2", "double claim kept by one claimer",
        {"a": tps(0, 1), "b": tps(0)}, {"a": tps(1), "b": tps(0)}, None,
        [], {"a": [0], "b": []}, {"a": [], "b": []}, 0.0,
    ),
    # 3. owned by nobody afterwards (topic deleted, or withheld): revoked, not moved
    ChurnCase(
        "3", "revoked to nobody",
        {"a": tps(0, 1)}, {"a": tps(0)}, None,
        [], {"a": [1]}, {"a": []}, 0.0,
    ),
    # 3/4. nothing owned before: everything is assigned, nothing moved, fraction 0
    ChurnCase(
        "4", "first assignment",
        {"a": [], "b": []}, {"a": tps(0), "b": tps(1)}, None,
        [], {"a": [], "b": []}, {"a": [0], "b": [1]}, 0.0,
    ),
    # 4/5. empty before and after
    ChurnCase("4", "empty", {}, {}, None, [], {}, {}, 0.0),
]  # fmt: skip


@pytest.mark.parametrize("case", CHURN_CASES, ids=[f"rule{c.rule}-{c.why}" for c in CHURN_CASES])
def test_churn_table(case: ChurnCase) -> None:
    c = churn(case.before, case.after, identities=case.identities)
    assert c.moved == tuple(tps(*case.moved))
    assert c.moved_partitions == len(case.moved)
    assert dict(c.revoked) == {m: tuple(tps(*v)) for m, v in case.revoked.items()}
    assert dict(c.assigned) == {m: tuple(tps(*v)) for m, v in case.assigned.items()}
    assert c.revoked_partitions == sum(len(v) for v in case.revoked.values())
    assert c.assigned_partitions == sum(len(v) for v in case.assigned.values())
    assert c.moved_fraction == pytest.approx(case.fraction)
    assert (c.joined, c.left) == (case.joined, case.left)


def test_rule1_member_identities_from_specs() -> None:
    before = GroupSpec({"t": 2}, (Member("m-1", ("t",), group_instance_id="i1"), Member("d", ())))
    after = GroupSpec({"t": 2}, (Member("m-2", ("t",), group_instance_id="i1"),))
    assert member_identities(before.members) == {"m-1": "i1", "d": "d"}
    assert identities_of(before, after) == {"m-1": "i1", "d": "d", "m-2": "i1"}
    c = churn(
        {"m-1": tps(0, 1), "d": []}, {"m-2": tps(0, 1)}, identities=identities_of(before, after)
    )
    assert (c.moved_partitions, c.joined, c.left) == (0, (), ("d",))


def test_helpers() -> None:
    assert by_identity({"x": tps(0), "y": tps(1)}, {"x": "i", "y": "i"}) == {"i": set(tps(0, 1))}
    t0, t1 = tps(0, 1)
    assert owners({"a": tps(0), "b": tps(0, 1)}) == {t0: {"a", "b"}, t1: {"b"}}


# --- balance ----------------------------------------------------------------------------------


def spec_of(
    topics: dict[str, int],
    subs: dict[str, tuple[str, ...]],
    owned: dict[str, list[TopicPartition]] | None = None,
) -> GroupSpec:
    owned = owned or {}
    return GroupSpec(
        topics,
        tuple(Member(m, t, owned_partitions=tuple(owned.get(m, ()))) for m, t in subs.items()),
    )


@dataclass(frozen=True)
class BalanceCase:
    rule: str
    why: str
    spec: GroupSpec
    assignment: dict[str, list[TopicPartition]]
    balanced: bool


X, Y = TopicPartition("x", 0), TopicPartition("y", 0)
BALANCE_CASES = [
    # B2. equal subscriptions: 2 / 1 is balanced ...
    BalanceCase("B2", "max-min 1", spec_of({"t": 3}, {"a": ("t",), "b": ("t",)}),
                {"a": tps(0, 1), "b": tps(2)}, True),
    # B2. ... 3 / 1 is not (b could take one of a's)
    BalanceCase("B2", "max-min 2", spec_of({"t": 4}, {"a": ("t",), "b": ("t",)}),
                {"a": tps(0, 1, 2), "b": tps(3)}, False),
    # B2. unequal: b only subscribes x (1 partition), so a=4 / b=1 can't improve: balanced
    BalanceCase("B2", "unequal, nothing movable",
                spec_of({"t": 4, "x": 1}, {"a": ("t", "x"), "b": ("x",)}),
                {"a": tps(0, 1, 2, 3), "b": [X]}, True),
    # B2. unequal: b subscribes t too and holds 2 fewer than a: not balanced
    BalanceCase("B2", "unequal, movable",
                spec_of({"t": 4, "x": 1}, {"a": ("t",), "b": ("t", "x")}),
                {"a": tps(0, 1, 2), "b": [X]}, False),
    # B1/B2. a topic missing from the metadata gives nothing to hold
    BalanceCase("B1", "missing topic ignored",
                spec_of({"t": 2}, {"a": ("t", "ghost"), "b": ("ghost",)}),
                {"a": tps(0, 1), "b": []}, True),
    # B2. empty group
    BalanceCase("B2", "no members", spec_of({"t": 2}, {}), {}, True),
]  # fmt: skip


@pytest.mark.parametrize(
    "case", BALANCE_CASES, ids=[f"rule{c.rule}-{c.why}" for c in BALANCE_CASES]
)
def test_balance_table(case: BalanceCase) -> None:
    assert is_balanced(case.assignment, case.spec) is case.balanced


def test_rule_b3_subscriptions_equal() -> None:
    assert subscriptions_equal(spec_of({"t": 2}, {"a": ("t",), "b": ("t", "ghost")}))
    assert subscriptions_equal(spec_of({"t": 2, "e": 0}, {"a": ("t", "e"), "b": ("t",)}))
    assert not subscriptions_equal(spec_of({"t": 2, "u": 1}, {"a": ("t", "u"), "b": ("t",)}))
    assert subscriptions_equal(spec_of({"t": 2}, {}))


@dataclass(frozen=True)
class MovesCase:
    rule: str
    why: str
    spec: GroupSpec
    before: dict[str, list[TopicPartition]] | None
    moves: int


MOVES_CASES = [
    # B5. first assignment (nothing owned): nothing can move
    MovesCase("B5", "nothing owned", spec_of({"t": 4}, {"a": ("t",), "b": ("t",)}), None, 0),
    # B5. already balanced: 0
    MovesCase("B5", "balanced already",
              spec_of({"t": 4}, {"a": ("t",), "b": ("t",)}, {"a": tps(0, 1), "b": tps(2, 3)}),
              None, 0),
    # B5. a owns all 4, b joins: 2 must move
    MovesCase("B5", "newcomer",
              spec_of({"t": 4}, {"a": ("t",), "b": ("t",)}, {"a": tps(0, 1, 2, 3)}), None, 2),
    # B5. T=7, N=3 (q=2, r=1): owns 4/3/0 -> the +1 slot goes to the 4-owner: keeps 3+2
    MovesCase("B5", "+1 slot to the biggest owner",
              spec_of({"t": 7}, {"a": ("t",), "b": ("t",), "c": ("t",)},
                      {"a": tps(0, 1, 2, 3), "b": tps(4, 5, 6)}),
              None, 2),
    # S13 shape (T=4, N=3, q=1, r=1): owns 2/2/0 -> one keeps 2, other keeps 1 -> 1 move
    MovesCase("B5", "S13 quota",
              spec_of({"t": 4}, {"a": ("t",), "b": ("t",), "c": ("t",)},
                      {"a": tps(0, 1), "b": tps(2, 3)}),
              None, 1),
    # B5. double claim t-0 by a and b (S17 shape: T=3, N=3): a keeps 1, b keeps 1, and t-0 is
    #     kept by either -> 1 partition must move to c
    MovesCase("B5", "double claim",
              spec_of({"t": 3}, {"a": ("t",), "b": ("t",), "c": ("t",)},
                      {"a": tps(0, 1), "b": tps(0, 2)}),
              None, 1),
    # B4. explicit before with a departed member (004 after C3 crashes, range): C3's 3 move
    MovesCase("B4", "departed member's partitions move",
              spec_of({"t": 12}, {"C1": ("t",), "C2": ("t",)}),
              {"C1": tps(0, 1, 2, 3, 4), "C2": tps(5, 6, 7, 8), "C3": tps(9, 10, 11)},
              3),
    # B4. owned partitions of a deleted topic are not moves (nobody can hold them)
    MovesCase("B4", "deleted topic", spec_of({"t": 2}, {"a": ("t",)}, {"a": [*tps(0, 1), X]}),
              None, 0),
    # B6. unequal subscriptions: lower bound = partitions whose owner can't keep them
    #     (a unsubscribed y; x's owner left)
    MovesCase("B6", "unequal, forced moves only",
              spec_of({"t": 2, "x": 1, "y": 1}, {"a": ("t",), "b": ("t", "x", "y")}),
              {"a": [*tps(0, 1), Y], "gone": [X]}, 2),
    # B5. no members: nothing can be held, 0
    MovesCase("B5", "no members", spec_of({"t": 2}, {}), {"gone": tps(0, 1)}, 0),
]  # fmt: skip


@pytest.mark.parametrize("case", MOVES_CASES, ids=[f"rule{c.rule}-{c.why}" for c in MOVES_CASES])
def test_min_moves_table(case: MovesCase) -> None:
    assert min_moves_to_balance(case.spec, before=case.before) == case.moves


def test_min_moves_static_identity() -> None:
    spec = GroupSpec(
        {"t": 2}, (Member("new-id", ("t",), group_instance_id="i1"), Member("b", ("t",)))
    )
    before = {"old-id": tps(0, 1)}
    ids = {"old-id": "i1", **member_identities(spec.members)}
    assert min_moves_to_balance(spec, before=before, identities=ids) == 1
    assert min_moves_to_balance(spec, before=before) == 2  # old-id looks departed


def _brute_force(n_members: int, n_parts: int, claims: list[set[int]]) -> int:
    """Fewest moves over every balanced assignment (owner per partition)."""
    best = None
    owned = [p for p in range(n_parts) if claims[p]]
    for owner in itertools.product(range(n_members), repeat=n_parts):
        counts = [owner.count(m) for m in range(n_members)]
        if max(counts) - min(counts) > 1:
            continue
        moves = sum(1 for p in owned if owner[p] not in claims[p])
        best = moves if best is None else min(best, moves)
    assert best is not None
    return best


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.data())
def test_rule_b5_min_moves_is_exact(data: st.DataObject) -> None:
    n_members = data.draw(st.integers(1, 3))
    n_parts = data.draw(st.integers(0, 6))
    claims = [
        data.draw(st.sets(st.integers(0, n_members), max_size=2))  # n_members = a departed one
        for _ in range(n_parts)
    ]
    names = [f"m{i}" for i in range(n_members + 1)]
    before: dict[str, list[TopicPartition]] = {n: [] for n in names}
    for p, who in enumerate(claims):
        for m in who:
            before[names[m]].append(TopicPartition("t", p))
    spec = spec_of({"t": n_parts}, {n: ("t",) for n in names[:n_members]})
    expected = _brute_force(n_members, n_parts, claims)
    assert min_moves_to_balance(spec, before=before) == expected


def _java_is_balanced(assignment: dict[str, list[TopicPartition]], spec: GroupSpec) -> bool:
    """AbstractStickyAssignor.isBalanced, transcribed literally (kafka-internals.md 5.4.2)."""
    counts = {m.member_id: len(assignment[m.member_id]) for m in spec.members}
    if max(counts.values()) - min(counts.values()) <= 1:
        return True
    owner = {tp: m for m, tps in assignment.items() for tp in tps}
    for m in spec.members:
        mine = counts[m.member_id]
        potential = [
            TopicPartition(t, p)
            for t in m.topics
            if t in spec.topics
            for p in range(spec.topics[t])
        ]
        if mine >= len(potential):
            continue
        for tp in potential:
            other = owner.get(tp)
            if other is not None and other != m.member_id and mine + 1 < counts[other]:
                return False
    return True


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.data())
def test_rule_b2_matches_java_is_balanced(data: st.DataObject) -> None:
    topics = {"t": data.draw(st.integers(0, 6)), "u": data.draw(st.integers(0, 4))}
    names = [f"m{i}" for i in range(data.draw(st.integers(1, 4)))]
    subs = {n: tuple(data.draw(st.sets(st.sampled_from(["t", "u", "ghost"])))) for n in names}
    spec = spec_of(topics, subs)
    assignment: dict[str, list[TopicPartition]] = {n: [] for n in names}
    for t, count in topics.items():
        for p in range(count):
            holders = [n for n in names if t in subs[n]]
            if not holders or not data.draw(st.booleans()):
                continue  # nobody may hold it, or left unassigned
            assignment[data.draw(st.sampled_from(holders))].append(TopicPartition(t, p))
    assert is_balanced(assignment, spec) == _java_is_balanced(assignment, spec)
