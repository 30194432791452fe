"""KIP-848 consumer groups: epochs, target assignments, reconciliation, tombstones."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from assign_core.assignors.registry import CLIENT_STRATEGIES, get_assignor
from assign_core.model import GroupSpec, Member, TopicPartition
from streaming.codec.model import MemberKey, Tombstone
from streaming.tracking.events import (
    GroupDeleted,
    GroupMetricsRow,
    GroupStatus,
    MemberAssignmentRow,
    RebalanceEvent,
)
from tests.unit.streaming.tracking.factories import (
    GROUP,
    TOPIC_IDS,
    Log,
    Tracker,
    cg_current,
    cg_epoch,
    cg_member,
    cg_member_gone,
    cg_partitions,
    cg_target,
    cg_target_epoch,
    commit,
)

pytestmark = pytest.mark.unit

S = 1000
COUNTS = {"Order": 4, "Stock": 2}
SUBS = ("Order", "Stock")


def uniform(
    members: Sequence[str], owned: Mapping[str, Sequence[TopicPartition]]
) -> dict[str, tuple[TopicPartition, ...]]:
    spec = GroupSpec(
        topics=COUNTS,
        members=tuple(Member(m, SUBS, owned_partitions=tuple(owned.get(m, ()))) for m in members),
        topic_ids=TOPIC_IDS,
    )
    return {m: tuple(p) for m, p in get_assignor("uniform").assign(spec).assignment.items()}


def epoch(
    log: Log,
    e: int,
    targets: Mapping[str, Sequence[TopicPartition]],
    *,
    ts: int,
    new_members: Sequence[str] = (),
) -> None:
    for m in new_members:
        log.rec(cg_member(m, SUBS), ts)
    if e == 1:
        log.rec(cg_partitions(COUNTS), ts)
    log.rec(cg_epoch(e), ts)
    for m, parts in targets.items():
        log.rec(cg_target(m, parts), ts + 10)
    log.rec(cg_target_epoch(e), ts + 10)


def rebalances(t: Tracker) -> list[RebalanceEvent]:
    return t.of(RebalanceEvent)


def two_members(log: Log, t: Tracker) -> dict[str, tuple[TopicPartition, ...]]:
    """J1 joins (epoch 1) and reconciles; J2 joins (epoch 2) and both reconcile."""
    first = uniform(["J1"], {})
    epoch(log, 1, first, ts=10 * S, new_members=["J1"])
    log.rec(cg_current("J1", 1, first["J1"]), 10 * S + 50)
    second = uniform(["J1", "J2"], first)
    epoch(log, 2, second, ts=20 * S, new_members=["J2"])
    revoked = tuple(p for p in first["J1"] if p not in second["J1"])
    # J1 first revokes (UNREVOKED_PARTITIONS), J2 waits for them (UNRELEASED_PARTITIONS)
    log.rec(cg_current("J1", 1, second["J1"], state=1, pending=revoked), 20 * S + 100)
    log.rec(cg_current("J2", 2, (), state=2), 20 * S + 150)
    log.rec(cg_current("J1", 2, second["J1"]), 21 * S)
    t.feed(log.take())
    assert len(rebalances(t)) == 1  # epoch 2 still reconciling
    log.rec(cg_current("J2", 2, second["J2"]), 22 * S)
    t.feed(log.take())
    return second


def test_join_then_second_member_reconciles() -> None:
    log, t = Log(), Tracker()
    second = two_members(log, t)
    e1, e2 = rebalances(t)
    assert (e1.group_protocol, e1.rebalance_protocol) == ("consumer", "cooperative")
    assert (e1.generation_before, e1.generation_after, e1.cause) == (0, 1, "join")
    assert e1.completion == "completed"
    assert (e1.started_ts_ms, e1.completed_ts_ms, e1.duration_ms) == (10 * S, 10 * S + 50, 50)
    assert e1.assignment_duration_ms == 10
    assert (e2.generation_before, e2.generation_after, e2.cause) == (1, 2, "join")
    assert e2.joined == ("J2",)
    assert e2.duration_ms == 2 * S and e2.duration_source == "records"
    assert e2.actual == second
    # cooperative: only what moved from J1 to J2 was paused
    assert set(e2.paused_partitions) == set(second["J2"])
    assert e2.churn.moved_partitions == len(second["J2"])
    # the coordinator's uniform assignor is the group's own strategy; server-range and, by
    # default, the classic strategies (what a move back would cost) are what-ifs
    assert [(x.strategy, x.own) for x in e2.expected] == [
        ("uniform", True),
        ("server-range", False),
        ("range", False),
        ("roundrobin", False),
        ("sticky", False),
        ("cooperative-sticky", False),
    ]
    assert e2.own_strategy_divergent is False
    assert e2.topic_partition_count_sources == {"Order": "records", "Stock": "records"}
    rows = [r for r in t.of(MemberAssignmentRow) if r.generation == 2]
    assert len(rows) == sum(COUNTS.values())
    status = t.of(GroupStatus)[-1]
    assert (status.state, status.generation, status.group_epoch, status.member_count) == (
        "Stable", 2, 2, 2
    )  # fmt: skip


def test_the_default_prices_a_move_back_to_the_classic_protocol() -> None:
    """Issue 14: a KIP-848 group's group_metrics rows carry every classic strategy by
    default, each priced as that strategy revokes (cost.py C2-C4): the eager ones pause
    everything the members owned before for the rebalance's duration, cooperative-sticky
    only what it moves, as the incremental server assignors do."""
    log, t = Log(), Tracker()
    two_members(log, t)
    e2 = rebalances(t)[-1]
    rows = {r.strategy: r for r in t.of(GroupMetricsRow) if r.rebalance_event_id == e2.event_id}
    assert set(rows) == {"actual", "uniform", "server-range", *CLIENT_STRATEGIES}
    owned_before = e2.churn.owned_before_partitions
    assert owned_before == sum(COUNTS.values())  # J1 owned everything
    seconds = e2.duration_ms / 1000
    for eager in ("range", "roundrobin", "sticky"):
        row = rows[eager]
        assert row.error is None and not row.is_own_strategy
        assert row.rebalance_protocol == "eager"
        assert row.paused_partitions == owned_before
        assert row.paused_partition_seconds == pytest.approx(owned_before * seconds)
    for cooperative in ("cooperative-sticky", "uniform", "actual"):
        row = rows[cooperative]
        assert row.rebalance_protocol == "cooperative"
        assert row.paused_partitions < owned_before
    assert rows["uniform"].is_own_strategy


def test_member_leaves_gracefully() -> None:
    log, t = Log(), Tracker()
    second = two_members(log, t)
    # J1 commits its partitions and leaves with a leave heartbeat
    for p in second["J1"]:
        log.rec(commit(p.topic, p.partition, 100, ts=29 * S), 29 * S)
        log.rec(commit(p.topic, p.partition, 120, ts=30 * S), 30 * S)
    for rec in cg_member_gone("J1"):
        log.rec(rec, 30 * S + 200)
    third = uniform(["J2"], {"J2": second["J2"]})
    epoch(log, 3, third, ts=30 * S + 200)
    log.rec(cg_current("J2", 3, third["J2"]), 31 * S)
    t.feed(log.take())
    e3 = rebalances(t)[-1]
    assert (e3.generation_after, e3.cause, e3.cause_rule) == (3, "graceful_leave", 5)
    (dep,) = e3.departures
    assert (dep.member_id, dep.kind, dep.silence_ms) == ("J1", "graceful", 200)
    assert e3.left == ("J1",)
    # J1's partitions move to J2: paused; J2's own stay
    assert set(e3.paused_partitions) == set(second["J1"])


def test_member_fenced_after_session_timeout() -> None:
    log, t = Log(), Tracker()
    second = two_members(log, t)
    for second_ in range(25, 60, 5):
        for p in second["J1"]:
            log.rec(commit(p.topic, p.partition, second_, ts=second_ * S), second_ * S)
    # J1 stops at 55 s; fenced 45 s later
    for rec in cg_member_gone("J1"):
        log.rec(rec, 100 * S)
    third = uniform(["J2"], {"J2": second["J2"]})
    epoch(log, 3, third, ts=100 * S)
    log.rec(cg_current("J2", 3, third["J2"]), 101 * S)
    t.feed(log.take())
    e3 = rebalances(t)[-1]
    assert (e3.cause, e3.departures[0].kind, e3.departures[0].rule) == ("crash", "crash", "D2")


def test_superseded_and_timed_out() -> None:
    log, t = Log(), Tracker()
    second = two_members(log, t)
    # epoch 3: J3 joins; nobody reconciles before J4 joins (epoch 4)
    third = uniform(["J1", "J2", "J3"], second)
    epoch(log, 3, third, ts=40 * S, new_members=["J3"])
    fourth = uniform(["J1", "J2", "J3", "J4"], third)
    epoch(log, 4, fourth, ts=41 * S, new_members=["J4"])
    t.feed(log.take(), now_ms=42 * S)
    e3 = rebalances(t)[-1]
    assert (e3.generation_after, e3.completion, e3.duration_ms) == (3, "superseded", None)
    assert e3.completed_ts_ms == 41 * S
    assert t.state.next_deadline_ms(t.config.reconcile_timeout_ms) == 41 * S + 10 + 300 * S
    # no record for five minutes: the adapter's timer calls apply with no observations
    assert t.feed([], now_ms=100 * S) == []
    events = t.feed([], now_ms=41 * S + 10 + 300 * S)
    (e4,) = [e for e in events if isinstance(e, RebalanceEvent)]
    assert (e4.generation_after, e4.completion) == (4, "timed_out")
    assert e4.completed_ts_ms == 41 * S + 10 + 300 * S
    assert t.state.next_deadline_ms(t.config.reconcile_timeout_ms) is None


def test_static_member_replaced_without_epoch_bump() -> None:
    log, t = Log(), Tracker()
    log.rec(cg_member("S1-old", SUBS, instance="s1"), 10 * S)
    log.rec(cg_partitions(COUNTS), 10 * S)
    log.rec(cg_epoch(1), 10 * S)
    everything = uniform(["S1-old"], {})["S1-old"]
    log.rec(cg_target("S1-old", everything), 10 * S)
    log.rec(cg_target_epoch(1), 10 * S)
    log.rec(cg_current("S1-old", 1, everything), 10 * S + 10)
    # static leave (epoch -2), then the same instance comes back under a new member id
    log.rec(cg_current("S1-old", -2, everything), 20 * S)
    for rec in cg_member_gone("S1-old"):
        log.rec(rec, 25 * S)
    log.rec(cg_member("S1-new", SUBS, instance="s1"), 25 * S)
    log.rec(cg_target("S1-new", everything), 25 * S)
    log.rec(cg_current("S1-new", 1, everything), 25 * S)
    t.feed(log.take())
    first, rejoin = rebalances(t)
    assert first.cause == "join"
    assert rejoin.is_rebalance is False
    assert (rejoin.cause, rejoin.cause_rule) == ("static_rejoin", 2)
    assert rejoin.generation_before == rejoin.generation_after == 1
    assert [(r.old_member_id, r.new_member_id) for r in rejoin.static_rejoins] == [
        ("S1-old", "S1-new")
    ]
    assert rejoin.paused_partitions == () and rejoin.churn.moved_partitions == 0


def test_group_deleted() -> None:
    log, t = Log(), Tracker()
    two_members(log, t)
    for m in ("J1", "J2"):
        log.rec(Tombstone(8, MemberKey(GROUP, m)), 50 * S)
    for m in ("J1", "J2"):
        log.rec(Tombstone(7, MemberKey(GROUP, m)), 50 * S)
    from streaming.codec.model import GroupKey

    log.rec(Tombstone(6, GroupKey(GROUP)), 50 * S)
    for m in ("J1", "J2"):
        log.rec(Tombstone(5, MemberKey(GROUP, m)), 50 * S)
    log.rec(Tombstone(4, GroupKey(GROUP)), 50 * S)
    log.rec(Tombstone(3, GroupKey(GROUP)), 50 * S)
    t.feed(log.take())
    (deleted,) = t.of(GroupDeleted)
    assert (deleted.group_protocol, deleted.last_generation, deleted.reason) == (
        "consumer", 2, "deleted"
    )  # fmt: skip
    assert t.state.consumer is None


def test_replay_of_an_established_group_is_a_baseline() -> None:
    """A compacted log: members already own partitions when the first target epoch is read."""
    log, t = Log(), Tracker()
    everything = uniform(["J1"], {})["J1"]
    log.rec(cg_member("J1", SUBS), 10 * S)
    log.rec(cg_partitions(COUNTS), 10 * S)
    log.rec(cg_current("J1", 7, everything), 10 * S)
    log.rec(cg_target("J1", everything), 10 * S)
    log.rec(cg_epoch(7), 10 * S)
    log.rec(cg_target_epoch(7), 10 * S)
    t.feed(log.take())
    (e,) = rebalances(t)
    assert (e.cause, e.cause_rule, e.generation_before, e.completion) == (
        "unknown", 1, None, "completed"
    )  # fmt: skip
