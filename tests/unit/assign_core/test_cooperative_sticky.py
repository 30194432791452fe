"""Unit tests of the client-side ``cooperative-sticky`` assignor.

Expected lists are kafka-clients 4.4.0's (``CooperativeStickyAssignor.assign`` on the
subscriptions as the leader decodes them, checked with ``tests/oracle``), list order
included; ``withheld`` is Java's ``partitionsTransferringOwnership`` (checked with a harness
reading that map). Reference §9 S10-S23 where they concern this assignor.
"""

from __future__ import annotations

import doctest

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assign_core.assignors import cooperative_sticky as cooperative_module
from assign_core.assignors import get_assignor
from assign_core.assignors.cooperative_sticky import CooperativeStickyAssignor
from assign_core.errors import AssignmentError
from assign_core.model import AssignmentResult, GroupSpec, TopicPartition
from tests.unit.assign_core.test_sticky import (
    A12,
    ABC,
    ALL_T,
    KAFKA_SCENARIOS,
    MISALIGNED,
    NON_EQUAL,
    UNIFORM,
    check_invariants,
    group,
    groups,
    lists,
    member,
    next_round,
    rack_group,
)

pytestmark = pytest.mark.unit


def cooperative(spec: GroupSpec) -> AssignmentResult:
    result = CooperativeStickyAssignor().assign(spec)
    assert result.strategy == "cooperative-sticky"
    return result


def withheld(result: AssignmentResult) -> dict[str, str]:
    return {str(tp): m for tp, m in sorted(result.withheld.items())}


def check_no_direct_move(spec: GroupSpec, result: AssignmentResult) -> None:
    """Cooperative rule: a partition another member owned is never handed over directly."""
    owners: dict[TopicPartition, set[str]] = {}
    for m in spec.members:
        for tp in m.owned_partitions:
            owners.setdefault(tp, set()).add(m.member_id)
    for member_id, partitions in result.assignment.items():
        for tp in partitions:
            previous = owners.get(tp, set())
            assert not previous or member_id in previous, f"{tp} moved from {previous}"


def test_docstring_examples() -> None:
    failures, tried = doctest.testmod(cooperative_module, raise_on_error=False)
    assert tried >= 9
    assert failures == 0


def test_registered_under_protocol_name() -> None:
    assignor = get_assignor("cooperative-sticky")
    assert isinstance(assignor, CooperativeStickyAssignor)
    assert (assignor.name, assignor.side) == ("cooperative-sticky", "client")


# ------------------------------------------------------------------------------- Kafka scenarios

#: Where the cooperative result differs from ``sticky`` (the partition that changes owner
#: is withheld): scenario name -> (lists, withheld).
COOPERATIVE_DIFFERENCES = {
    "S13 more maxQuota owners than maxQuota slots (consumer2 comes first in map order)": (
        {"consumer1": "topic1-0", "consumer2": "topic1-1 topic2-1", "consumer3": ""},
        {"topic2-0": "consumer3"},
    ),
    "S17 a partition claimed twice in one generation goes to neither claimer": (
        {"consumer1": "topic-1", "consumer2": "topic-2", "consumer3": ""},
        {"topic-0": "consumer3"},
    ),
    "S17 same with four partitions": (
        {"consumer1": "topic-1 topic-3", "consumer2": "topic-2", "consumer3": ""},
        {"topic-0": "consumer3"},
    ),
}


@pytest.mark.parametrize(
    ("name", "spec", "expected"),
    [pytest.param(name, s, e, id=name) for name, s, e in KAFKA_SCENARIOS],
)
def test_kafka_scenarios(name: str, spec: GroupSpec, expected: dict[str, str]) -> None:
    """S10-S21: the sticky result, minus what changes owner (withheld for one round)."""
    result = cooperative(spec)
    expected_lists, expected_withheld = COOPERATIVE_DIFFERENCES.get(name, (expected, {}))
    assert lists(result) == expected_lists
    assert withheld(result) == expected_withheld
    check_invariants(spec, result)
    check_no_direct_move(spec, result)


def test_s13_follow_up_rebalance_hands_over_the_withheld_partition() -> None:
    spec = group(
        {"topic1": 2, "topic2": 2},
        member("consumer1", A12, "topic1-0 topic2-0", 1),
        member("consumer2", A12, "topic1-1 topic2-1", 1),
        member("consumer3", A12, "", 1),
    )
    follow_up = cooperative(next_round(spec, cooperative(spec), 2))
    assert lists(follow_up) == {
        "consumer1": "topic1-0",
        "consumer2": "topic1-1 topic2-1",
        "consumer3": "topic2-0",
    }
    assert follow_up.withheld == {}


def test_s15_two_members_join_then_the_first_two_leave() -> None:
    """S15: the joiners get nothing until the follow-up rebalance."""
    first = group({"topic1": 3, "topic2": 4}, member("consumer1", A12), member("consumer2", A12))
    r1 = cooperative(first)
    assert lists(r1) == {
        "consumer1": "topic1-0 topic1-2 topic2-1 topic2-3",
        "consumer2": "topic1-1 topic2-0 topic2-2",
    }
    joined = next_round(
        first, r1, 1, join=[member("consumer3", A12, "", 1), member("consumer4", A12, "", 1)]
    )
    r2 = cooperative(joined)
    assert lists(r2) == {
        "consumer1": "topic1-0 topic2-1",
        "consumer2": "topic2-0 topic1-1",
        "consumer3": "",
        "consumer4": "",
    }
    assert withheld(r2) == {
        "topic1-2": "consumer3",
        "topic2-2": "consumer4",
        "topic2-3": "consumer3",
    }
    check_invariants(joined, r2)
    check_no_direct_move(joined, r2)
    follow_up = next_round(joined, r2, 2)
    r3 = cooperative(follow_up)
    assert lists(r3) == {
        "consumer1": "topic1-0 topic2-1",
        "consumer2": "topic2-0 topic1-1",
        "consumer3": "topic1-2 topic2-3",
        "consumer4": "topic2-2",
    }
    assert r3.withheld == {}
    left = next_round(follow_up, r3, 3, leave=["consumer1", "consumer2"])
    r4 = cooperative(left)
    assert lists(r4) == {
        "consumer3": "topic1-2 topic2-3 topic1-0 topic2-1",
        "consumer4": "topic2-2 topic1-1 topic2-0",
    }
    assert r4.withheld == {}


def test_s22_rack_aware_uniform_subscription() -> None:
    for replication_factor in (1, 2, 3):
        spec = rack_group(replication_factor, ABC, [ALL_T] * 3)
        result = cooperative(spec)
        assert lists(result) == UNIFORM
        assert result.withheld == {}


def test_s22_misaligned_owned_partitions_are_revoked_first() -> None:
    """S22, rf 1, owned partitions on the wrong racks: each member keeps only its rack-local
    ones; the rest is withheld and moves in the follow-up rebalance."""
    spec = rack_group(1, ABC, [ALL_T] * 3, MISALIGNED)
    result = cooperative(spec)
    assert lists(result) == {
        "consumer0": "t1-0 t1-3",
        "consumer1": "t2-1",
        "consumer2": "t3-1 t2-5",
    }
    assert withheld(result) == {
        "t1-1": "consumer1",
        "t1-2": "consumer2",
        "t1-4": "consumer1",
        "t1-5": "consumer2",
        "t2-0": "consumer0",
        "t2-2": "consumer2",
        "t2-3": "consumer0",
        "t2-4": "consumer1",
        "t2-6": "consumer0",
        "t3-0": "consumer1",
    }
    check_invariants(spec, result)
    check_no_direct_move(spec, result)
    follow_up = cooperative(next_round(spec, result, 1))
    assert lists(follow_up) == {
        "consumer0": "t1-0 t1-3 t2-0 t2-3 t2-6",
        "consumer1": "t2-1 t1-1 t1-4 t2-4 t3-0",
        "consumer2": "t3-1 t2-5 t1-2 t1-5 t2-2",
    }
    assert follow_up.withheld == {}


def test_s23_misaligned_owned_partitions_with_non_equal_subscriptions() -> None:
    """S23, rf 1: the general builder's result minus the partitions changing owner."""
    spec = rack_group(1, ABC, NON_EQUAL, MISALIGNED)
    result = cooperative(spec)
    assert lists(result) == {"consumer0": "t1-3", "consumer1": "t2-1", "consumer2": "t3-1"}
    assert withheld(result) == {
        "t1-0": "consumer2",
        "t1-1": "consumer2",
        "t1-2": "consumer2",
        "t1-4": "consumer1",
        "t1-5": "consumer2",
        "t2-0": "consumer0",
        "t2-2": "consumer0",
        "t2-3": "consumer0",
        "t2-4": "consumer1",
        "t2-5": "consumer1",
        "t2-6": "consumer0",
        "t3-0": "consumer1",
    }
    check_invariants(spec, result)
    check_no_direct_move(spec, result)


# ------------------------------------------------------------------------------- Java quirks


def test_owned_partitions_come_in_protocol_order() -> None:
    """The subscription's owned partitions arrive sorted by (topic, partition), so the general
    builder keeps them in that order (``sticky`` lists them in user-data order instead)."""
    spec = group(
        {"events": 2, "users": 2, "other": 1},
        member("c1", ["events", "users"], "users-0 events-0", 1),
        member("c2", ["other"]),
    )
    assert lists(cooperative(spec)) == {"c1": "events-0 users-0 events-1 users-1", "c2": "other-0"}


def test_claim_beyond_the_partition_count() -> None:
    spec = group({"a": 1}, member("c1", ["a"], "a-1", 1), member("c2", ["a"]))
    with pytest.raises(AssignmentError, match="No more unfilled consumers"):
        cooperative(spec)
    spec = group({"a": 2, "b": 3}, member("c1", ["b"], "b-1"), member("c2", ["b", "a"], "a-2", 1))
    assert lists(cooperative(spec)) == {"c1": "b-1 b-0 b-1 b-2", "c2": "a-2 a-0 a-1"}


def test_previous_owner_set_aside_as_fixed_is_a_null_pointer() -> None:
    spec = group(
        {"a": 3, "b": 2},
        member("c1", ["b"], "a-0", 1),
        member("c2", ["a"], "b-0", 2),
        member("c3", ["a"], "a-0 a-1 a-2", 2),
    )
    with pytest.raises(AssignmentError, match="NullPointerException"):
        cooperative(spec)


# ------------------------------------------------------------------------------- properties


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=groups(), data=st.data())
def test_valid_balanced_and_never_a_direct_move(spec: GroupSpec, data: st.DataObject) -> None:
    first = cooperative(spec)
    assert first.withheld == {}  # nothing owned yet
    check_invariants(spec, first)
    leave = data.draw(st.lists(st.sampled_from([m.member_id for m in spec.members]), unique=True))
    join = [member("newcomer", spec.members[0].topics, "", 1)]
    after = next_round(spec, first, 1, leave=leave, join=join)
    second = cooperative(after)
    check_invariants(after, second)
    check_no_direct_move(after, second)
    # given now + withheld for later = what the eager assignor gives at once
    eager = get_assignor("sticky").assign(after).assignment
    for m, partitions in second.assignment.items():
        later = {tp for tp, to in second.withheld.items() if to == m}
        assert set(partitions) | later == set(eager[m])
