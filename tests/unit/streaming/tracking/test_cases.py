"""The rules applied to records: one row per case real Java groups showed (issue 17).

Every row builds the records (and collector events) of one case as the coordinator and the
collector wrote them, feeds them to the reducer and checks the verdict on one rebalance.
The rule column names the row of ``docs/tracking.md`` the case proves (cause rules 1-12,
departure rules D1-D3, protocol rule P1, identity rules I1-I3, session rule S1). Each row
failed before the fix it names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from assign_core.assignors.registry import get_assignor
from assign_core.model import GroupSpec, Member, TopicPartition
from streaming.tracking.config import TrackerConfig
from streaming.tracking.events import RebalanceEvent
from tests.unit.streaming.tracking.factories import (
    TOPIC_IDS,
    Log,
    Tracker,
    cg_current,
    cg_epoch,
    cg_member,
    cg_member_gone,
    cg_target,
    cg_target_epoch,
    commit,
    group_snapshot,
    member,
    topics_snapshot,
    tps,
)

pytestmark = pytest.mark.unit

S = 1000
Assignment = dict[str, tuple[TopicPartition, ...]]


@dataclass(frozen=True)
class Expect:
    """What the checked rebalance must say (None: not checked)."""

    cause: str | None = None
    rule: int | None = None
    rebalance_protocol: str | None = None
    strategy: str | None = None
    own_divergent: bool | None = None
    churn: tuple[int, int, int] | None = None
    """(moved, revoked, assigned)"""
    departures: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """member id -> (kind, rule)"""
    completion: str | None = None
    joined: tuple[str, ...] | None = None
    factors: tuple[str, ...] | None = None


# -- KIP-848 ----------------------------------------------------------------------------------

COUNTS = {"Order": 4, "Stock": 2}
SUBS = ("Order", "Stock")


def uniform(members: Sequence[str], owned: Mapping[str, Sequence[TopicPartition]]) -> Assignment:
    spec = GroupSpec(
        topics=COUNTS,
        members=tuple(Member(m, SUBS, owned_partitions=tuple(owned.get(m, ()))) for m in members),
        topic_ids=TOPIC_IDS,
    )
    return {m: tuple(p) for m, p in get_assignor("uniform").assign(spec).assignment.items()}


def epoch(log: Log, e: int, targets: Assignment, *, ts: int, new: Sequence[str] = ()) -> None:
    """A KIP-848 epoch as Kafka 4.1+ writes it: no PartitionMetadata record."""
    for m in new:
        log.rec(cg_member(m, SUBS), ts)
    log.rec(cg_epoch(e), ts)
    for m, parts in targets.items():
        log.rec(cg_target(m, parts), ts + 10)
    log.rec(cg_target_epoch(e), ts + 10)


def reconcile(log: Log, e: int, targets: Assignment, *, ts: int) -> None:
    for m, parts in targets.items():
        log.rec(cg_current(m, e, parts), ts)


def named_commits(log: Log, parts: Sequence[TopicPartition], *, ts: int) -> None:
    """Offset commits as Kafka 4.x writes them: the value carries the topic id."""
    for tp in parts:
        log.rec(commit(tp.topic, tp.partition, ts // 100, ts=ts, topic_id=TOPIC_IDS[tp.topic]), ts)


def moved_revoked_assigned(before: Assignment, after: Assignment) -> tuple[int, int, int]:
    was = {tp: m for m, ps in before.items() for tp in ps}
    now = {tp: m for m, ps in after.items() for tp in ps}
    moved = sum(1 for tp, m in was.items() if tp in now and now[tp] != m)
    revoked = sum(len(set(ps) - set(after.get(m, ()))) for m, ps in before.items())
    assigned = sum(len(set(ps) - set(before.get(m, ()))) for m, ps in after.items())
    return moved, revoked, assigned


def first_epoch_named_by_commits() -> tuple[list[RebalanceEvent], int]:
    """Case 2: no PartitionMetadata record (Kafka 4.1+) and no collector event yet; the
    epoch waits for its names, which the first offset commits carry (I1, I2)."""
    log, t = Log(), Tracker()
    first = uniform(["J1"], {})
    epoch(log, 1, first, ts=10 * S, new=["J1"])
    reconcile(log, 1, first, ts=10 * S + 50)
    t.feed(log.take())
    assert t.of(RebalanceEvent) == [], "held until the topic ids have names"
    named_commits(log, first["J1"], ts=11 * S)
    t.feed(log.take())
    return t.of(RebalanceEvent), 0


def churn_by_names_on_both_sides() -> tuple[list[RebalanceEvent], int]:
    """Cases 3 and 6: the first epoch's names came from the collector after it was written;
    the next epochs compare names with names (churn), and the owned partitions handed to
    the own strategy are the previous target by name (stickiness: no false divergence)."""
    log, t = Log(), Tracker()
    first = uniform(["J1"], {})
    epoch(log, 1, first, ts=10 * S, new=["J1"])
    reconcile(log, 1, first, ts=10 * S + 50)
    log.snap(topics_snapshot(12 * S, {"Order": [0] * 4, "Stock": [0] * 2}))
    second = uniform(["J1", "J2"], first)
    epoch(log, 2, second, ts=20 * S, new=["J2"])
    reconcile(log, 2, second, ts=21 * S)
    third = uniform(["J1", "J2", "J3"], second)
    epoch(log, 3, third, ts=30 * S, new=["J3"])
    reconcile(log, 3, third, ts=31 * S)
    t.feed(log.take())
    return t.of(RebalanceEvent), 1


def churn_after_a_forced_unnamed_epoch() -> tuple[list[RebalanceEvent], int]:
    """Case 3, the other order: epoch 1 never got names before epoch 2 was written (it is
    emitted with its ids); epoch 2 waits, and once named, epoch 1's partitions are renamed
    before churn is computed (I3)."""
    log, t = Log(), Tracker()
    first = uniform(["J1"], {})
    epoch(log, 1, first, ts=10 * S, new=["J1"])
    reconcile(log, 1, first, ts=10 * S + 50)
    second = uniform(["J1", "J2"], first)
    epoch(log, 2, second, ts=20 * S, new=["J2"])
    reconcile(log, 2, second, ts=21 * S)
    log.snap(topics_snapshot(22 * S, {"Order": [0] * 4, "Stock": [0] * 2}))
    t.feed(log.take())
    return t.of(RebalanceEvent), 1


def kip848_crash(config: TrackerConfig, *, reported_session_ms: int | None) -> Tracker:
    """J1 commits every second until 30 s and dies; the group's 6 s session fences it."""
    log, t = Log(), Tracker(config=config)
    first = uniform(["J1", "J2"], {})
    log.snap(topics_snapshot(1 * S, {"Order": [0] * 4, "Stock": [0] * 2}))
    snap = group_snapshot(2 * S, "Stable", topics=SUBS)
    log.snap(
        replace(snap, group_type="consumer", members=None, session_timeout_ms=reported_session_ms)
    )
    epoch(log, 1, first, ts=10 * S, new=["J1", "J2"])
    reconcile(log, 1, first, ts=10 * S + 50)
    for second in range(11, 31):
        named_commits(log, first["J1"], ts=second * S)
    for rec in cg_member_gone("J1"):
        log.rec(rec, 36 * S)
    alone = uniform(["J2"], {"J2": first["J2"]})
    epoch(log, 2, alone, ts=36 * S)
    reconcile(log, 2, alone, ts=37 * S)
    t.feed(log.take())
    return t


def fenced_and_back_under_its_member_id() -> tuple[list[RebalanceEvent], int]:
    """A KIP-848 member whose heartbeats stopped for its 6 s session is fenced (its records
    tombstoned, an epoch bump without a target: nobody heartbeats) and joins again under
    the member id its client keeps: a crash and a join between two targets, not "nothing
    visible changed" (seen live on a loaded machine)."""
    log, t = Log(), Tracker(config=TrackerConfig(consumer_session_timeout_ms=6_000))
    first = uniform(["J1", "J2"], {})
    log.snap(topics_snapshot(1 * S, {"Order": [0] * 4, "Stock": [0] * 2}))
    epoch(log, 1, first, ts=10 * S, new=["J1", "J2"])
    reconcile(log, 1, first, ts=10 * S + 50)
    for second in range(11, 21):
        named_commits(log, first["J2"], ts=second * S)
    for rec in cg_member_gone("J2"):
        log.rec(rec, 27 * S)
    log.rec(cg_epoch(2), 27 * S)
    again = uniform(["J1", "J2"], {"J1": first["J1"]})
    epoch(log, 3, again, ts=29 * S, new=["J2"])
    reconcile(log, 3, again, ts=30 * S)
    t.feed(log.take())
    return t.of(RebalanceEvent), -1


def first_target_before_the_topics_existed() -> tuple[list[RebalanceEvent], int]:
    """A member joined before the coordinator's metadata held its topics (created a moment
    before): the first target assigns nothing; the next, with the same member and
    subscription, every partition. The subscribed topics grew from 0 partitions at the
    coordinator (rule 9), although the collector, reading later, knew their counts all
    along (seen live in the real-Java tier)."""
    log, t = Log(), Tracker()
    log.snap(topics_snapshot(1 * S, {"Order": [0] * 4, "Stock": [0] * 2}))
    nothing: Assignment = {"J1": ()}
    epoch(log, 1, nothing, ts=10 * S, new=["J1"])
    reconcile(log, 1, nothing, ts=10 * S + 50)
    full = uniform(["J1"], {})
    epoch(log, 2, full, ts=11 * S)
    reconcile(log, 2, full, ts=11 * S + 50)
    named_commits(log, full["J1"], ts=12 * S)
    t.feed(log.take())
    return t.of(RebalanceEvent), 1


def session_from_the_broker() -> tuple[list[RebalanceEvent], int]:
    """Case 7: the collector reports the group's 6 s session (DescribeConfigs) (S1)."""
    return kip848_crash(TrackerConfig(), reported_session_ms=6_000).of(RebalanceEvent), 1


def session_from_the_cluster_setting() -> tuple[list[RebalanceEvent], int]:
    """Case 7: no collector answer; the per-cluster setting says 6 s (S1)."""
    config = TrackerConfig(consumer_session_timeout_ms=6_000)
    return kip848_crash(config, reported_session_ms=None).of(RebalanceEvent), 1


# -- classic ----------------------------------------------------------------------------------

COOP = "cooperative-sticky"


def coop(member_id: str, parts: Sequence[TopicPartition], owned: Sequence[TopicPartition]) -> Any:
    return member(member_id, ["t"], parts, owned=owned, generation=1)


def followup_after_a_stale_rejoin() -> tuple[list[RebalanceEvent], int]:
    """Case 1: C joins (generation 4); B must give up t-3 and rejoins (5) before it got the
    generation-4 assignment, still claiming t-3: held back again; generation 6 gives it to C.
    Both follow-ups are rule 11, though t-3 was missing from the generation-4 record."""
    log, t = Log(), Tracker()
    a, b = tps("t", 0, 1), tps("t", 2, 3)
    log.gm(3, [coop("A", a, a), coop("B", b, b)], ts=10 * S, protocol=COOP)
    log.gm(
        4, [coop("A", a, a), coop("B", tps("t", 2), b), coop("C", (), ())], ts=20 * S, protocol=COOP
    )
    # B rejoined before its SyncGroup response: it still owns (claims) t-2 and t-3
    log.gm(
        5, [coop("A", a, a), coop("B", tps("t", 2), b), coop("C", (), ())], ts=21 * S, protocol=COOP
    )
    log.gm(
        6,
        [coop("A", a, a), coop("B", tps("t", 2), tps("t", 2)), coop("C", tps("t", 3), ())],
        ts=22 * S,
        protocol=COOP,
    )
    t.feed(log.take())
    events = t.of(RebalanceEvent)
    assert [e.cause for e in events[1:]] == ["join", "cooperative_followup", "cooperative_followup"]
    return events, -1


def emptied_cooperative_group() -> tuple[list[RebalanceEvent], int]:
    """Case 5: the last member leaves a cooperative-sticky group; the empty group's record
    has no protocol, the group still rebalanced cooperatively (P1)."""
    log, t = Log(), Tracker()
    a = tps("t", 0, 1)
    log.gm(3, [coop("A", a, a)], ts=10 * S, protocol=COOP)
    log.gm(4, [], ts=20 * S, protocol=None)
    t.feed(log.take())
    return t.of(RebalanceEvent), -1


def leave_while_a_static_session_runs_out() -> tuple[list[RebalanceEvent], int]:
    """Case 4: static D (15 s session) closes at 20 s, which sends no LeaveGroup; A leaves at
    22 s; the next generation waits for D's session (35 s). The collector (every 2 s) no
    longer lists A at 24 s: A left gracefully (D1); D timed out (D2)."""
    log, t = Log(), Tracker()
    a, d = tps("t", 0, 1), tps("t", 2, 3)
    log.gm(
        7,
        [
            member("A", ["t"], a, session_timeout_ms=6_000),
            member("D-1", ["t"], d, instance="D", session_timeout_ms=15_000),
        ],
        ts=10 * S,
    )
    for ms in range(10 * S, 22 * S, 500):
        log.commits(a, ts=ms + 250)
        if ms < 20 * S:
            log.commits(d, ts=ms)
    for ms in range(10 * S + 1, 36 * S, 2 * S):
        listed = ["A", "D-1"] if ms < 22 * S else ["D-1"] if ms < 35 * S else []
        state = "Stable" if ms < 22 * S else "PreparingRebalance"
        log.snap(group_snapshot(ms, state, listed))
    log.gm(8, [], ts=35 * S + 100, current_state_ts_ms=35 * S, protocol=None)
    t.feed(log.take())
    return t.of(RebalanceEvent), -1


def members_in_the_coordinators_order() -> tuple[list[RebalanceEvent], int]:
    """A real KIP-848 uniform group (ids as the coordinator made them): A joined first, D
    last; B came and went, so the member table has 4 slots. A and D share a slot (D, the
    later, iterates first) and a ``HashMap`` bin: D comes first in ``memberIds()``, gives up
    the extra partition of 27 and A takes Stock 6 and 7 when Stock grows to 8 (I4)."""
    a, b, d = "LZG0n3PDRiOkAXrIVlg9GA", "B0000000000000000000AA", "rf_uxs_mQEOrD76mwaicEg"
    subs = ("Big", "Order", "Stock")
    log, t = Log(), Tracker()
    log.snap(topics_snapshot(1 * S, {"Big": [0] * 12, "Order": [0] * 7, "Stock": [0] * 5}))
    big, order, stock = tps("Big", *range(12)), tps("Order", *range(7)), tps("Stock", *range(5))
    steps: list[tuple[int, list[str], Assignment]] = [
        (2, [a], {a: big + order + stock}),
        (3, [b], {a: big, b: order + stock}),
        (4, [d], {a: big, b: order, d: stock}),
    ]
    for e, new, targets in steps:
        for m in new:
            log.rec(replace(cg_member(m, subs), subscribed_topic_names=subs), e * 10 * S)
        log.rec(cg_epoch(e), e * 10 * S)
        for m, parts in targets.items():
            log.rec(cg_target(m, parts), e * 10 * S)
        log.rec(cg_target_epoch(e), e * 10 * S)
        reconcile(log, e, targets, ts=e * 10 * S + 50)
    for rec in cg_member_gone(b):
        log.rec(rec, 50 * S)
    five = {a: big, d: order + stock}
    log.rec(cg_epoch(5), 50 * S)
    log.rec(cg_target(d, five[d]), 50 * S)
    log.rec(cg_target_epoch(5), 50 * S)
    reconcile(log, 5, five, ts=50 * S + 50)
    log.snap(topics_snapshot(55 * S, {"Big": [0] * 12, "Order": [0] * 7, "Stock": [0] * 8}))
    six = {a: big + tps("Stock", 6, 7), d: order + stock + tps("Stock", 5)}  # what Kafka did
    log.rec(cg_epoch(6), 60 * S)
    for m, parts in six.items():
        log.rec(cg_target(m, parts), 60 * S)
    log.rec(cg_target_epoch(6), 60 * S)
    reconcile(log, 6, six, ts=60 * S + 50)
    t.feed(log.take())
    events = t.of(RebalanceEvent)
    assert events[-1].generation_after == 6
    return events, -1


@dataclass(frozen=True)
class Case:
    case: str
    rule: str
    build: Callable[[], tuple[list[RebalanceEvent], int]]
    expect: Expect


TABLE = [
    # case, rule, records, what the rebalance says
    Case(
        "1 follow-up after a stale rejoin",
        "11",
        followup_after_a_stale_rejoin,
        Expect(cause="cooperative_followup", rule=11, rebalance_protocol="cooperative"),
    ),
    Case(
        "2 first KIP-848 epoch named by the offset commits",
        "I1 I2",
        first_epoch_named_by_commits,
        Expect(cause="join", rule=7, own_divergent=False, completion="completed"),
    ),
    Case(
        "3+6 churn and stickiness by names (names from the collector)",
        "I1 I3",
        churn_by_names_on_both_sides,
        Expect(cause="join", rule=7, own_divergent=False),
    ),
    Case(
        "3 churn after an epoch emitted with ids",
        "I2 I3",
        churn_after_a_forced_unnamed_epoch,
        Expect(cause="join", rule=7, own_divergent=False),
    ),
    Case(
        "6 the assignor sees the members in the coordinator's order",
        "I4",
        members_in_the_coordinators_order,
        Expect(cause="partition_count_change", rule=9, own_divergent=False),
    ),
    Case(
        "4 LeaveGroup while a static member's session runs out",
        "D1 D2",
        leave_while_a_static_session_runs_out,
        # the broker: "explicit `LeaveGroup` request for A"; D's expiry came during the join
        Expect(
            cause="graceful_leave",
            rule=5,
            departures={"A": ("graceful", "D1"), "D-1": ("crash", "D2")},
            factors=("crash",),
        ),
    ),
    Case(
        "5 an emptied cooperative group",
        "P1",
        emptied_cooperative_group,
        Expect(cause="graceful_leave", rule=5, rebalance_protocol="cooperative", strategy=COOP),
    ),
    Case(
        "a KIP-848 member fenced and back under its member id",
        "4 7",
        fenced_and_back_under_its_member_id,
        Expect(cause="crash", rule=4, departures={"J2": ("crash", "D2")}, joined=("J2",)),
    ),
    Case(
        "a KIP-848 target before the coordinator saw the topics",
        "9",
        first_target_before_the_topics_existed,
        Expect(cause="partition_count_change", rule=9, churn=(0, 0, 6)),
    ),
    Case(
        "7 KIP-848 session timeout from the broker",
        "S1 D2",
        session_from_the_broker,
        Expect(cause="crash", rule=4, departures={"J1": ("crash", "D2")}),
    ),
    Case(
        "7 KIP-848 session timeout from the cluster setting",
        "S1 D2",
        session_from_the_cluster_setting,
        Expect(cause="crash", rule=4, departures={"J1": ("crash", "D2")}),
    ),
]


@pytest.mark.parametrize("row", TABLE, ids=[row.case for row in TABLE])
def test_case_table(row: Case) -> None:
    events, index = row.build()
    e = events[index]
    x = row.expect
    assert (e.cause, e.cause_rule) == (x.cause, x.rule), e.cause_detail
    if x.rebalance_protocol is not None:
        assert e.rebalance_protocol == x.rebalance_protocol
    if x.strategy is not None:
        assert e.strategy == x.strategy
    if x.own_divergent is not None:
        assert e.own_strategy_divergent is x.own_divergent, [
            (a.strategy, a.error) for a in e.expected
        ]
    if x.completion is not None:
        assert e.completion == x.completion
    if x.joined is not None:
        assert e.joined == x.joined
    if x.factors is not None:
        assert e.cause_factors == x.factors
    if x.departures:
        assert {d.member_id: (d.kind, d.rule) for d in e.departures} == dict(x.departures)
    # churn always by names on both sides, as the members' sets say
    before = {m.member_id: m.partitions for m in e.members_before}
    after = {m.member_id: m.partitions for m in e.members_after}
    churn = (e.churn.moved_partitions, e.churn.revoked_partitions, e.churn.assigned_partitions)
    assert churn == moved_revoked_assigned(before, after)
    named = set(TOPIC_IDS) | {"t", "Big"}
    assert {tp.topic for ps in (*before.values(), *after.values()) for tp in ps} <= named


def test_first_epoch_completion_time_is_the_reconciliation() -> None:
    """Held for its names, the epoch still completes when its members reconciled."""
    (e,), _ = first_epoch_named_by_commits()
    assert (e.generation_before, e.generation_after) == (0, 1)
    assert e.completed_ts_ms == 10 * S + 50 and e.duration_ms == 50
    assert all(tp.topic in COUNTS for tps_ in e.actual.values() for tp in tps_)


def test_every_epoch_of_the_collector_named_group_has_a_verdict() -> None:
    events, _ = churn_by_names_on_both_sides()
    assert [e.generation_after for e in events] == [1, 2, 3]
    assert [e.own_strategy_divergent for e in events] == [False, False, False]
    # the joins moved what the members' sets say, by name
    assert [e.churn.moved_partitions for e in events[1:]] == [
        moved_revoked_assigned(
            {m.member_id: m.partitions for m in e.members_before},
            {m.member_id: m.partitions for m in e.members_after},
        )[0]
        for e in events[1:]
    ]
    assert events[1].churn.moved_partitions == 3  # 6 partitions: J2 takes 3 from J1


def test_an_epoch_forced_out_without_names_keeps_its_ids() -> None:
    events, _ = churn_after_a_forced_unnamed_epoch()
    first, second = events
    assert first.own_strategy_divergent is None
    assert first.expected[0].error is not None and "not resolved" in first.expected[0].error
    assert {tp.topic for tp in first.actual["J1"]} == {TOPIC_IDS[t] for t in SUBS}
    assert second.churn.moved_partitions == 3


def test_target_without_names_is_emitted_at_the_timeout() -> None:
    log, t = Log(), Tracker()
    log.rec(cg_member("J1", ["Order"]), 10 * S)
    log.rec(cg_epoch(1), 10 * S)
    log.rec(cg_target("J1", tps("Order", 0)), 10 * S)
    log.rec(cg_target_epoch(1), 10 * S)
    log.rec(cg_current("J1", 1, tps("Order", 0)), 10 * S)
    t.feed(log.take())
    assert t.of(RebalanceEvent) == []
    deadline = t.state.next_deadline_ms(t.config.reconcile_timeout_ms)
    assert deadline == 10 * S + t.config.reconcile_timeout_ms
    # the adapter's timer: apply with no observations at the deadline
    assert t.feed([], now_ms=deadline - 1) == []
    t.feed([], now_ms=deadline)
    (e,) = t.of(RebalanceEvent)
    assert e.actual == {"J1": (TopicPartition(TOPIC_IDS["Order"], 0),)}
    assert (e.completion, e.completed_ts_ms) == ("completed", 10 * S)
    assert e.own_strategy_divergent is None
    assert t.state.next_deadline_ms(t.config.reconcile_timeout_ms) is None


def test_a_deferred_epoch_survives_the_state_round_trip() -> None:
    from streaming.tracking.state import GroupState

    log, t = Log(), Tracker()
    first = uniform(["J1"], {})
    epoch(log, 1, first, ts=10 * S, new=["J1"])
    reconcile(log, 1, first, ts=10 * S + 50)
    t.feed(log.take())
    assert t.state.consumer is not None and t.state.consumer.deferred is not None
    t.state = GroupState.from_json(t.state.to_json())
    named_commits(log, first["J1"], ts=11 * S)
    t.feed(log.take())
    (e,) = t.of(RebalanceEvent)
    assert (e.cause, e.completed_ts_ms, e.own_strategy_divergent) == ("join", 10 * S + 50, False)
