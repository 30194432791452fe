"""Classic groups end to end: GroupMetadata (and commits, snapshots) in, rebalance events out."""

from __future__ import annotations

import dataclasses

import pytest

from assign_core.model import TopicPartition
from streaming.codec.model import CooperativeStickyUserData, StickyUserData, TopicPartitions
from streaming.tracking.events import (
    GroupDeleted,
    GroupMetricsRow,
    GroupStatus,
    MemberAssignmentRow,
    RebalanceEvent,
)
from tests.unit.streaming.tracking.factories import (
    Log,
    Tracker,
    assign,
    group_snapshot,
    group_tombstone,
    member,
    topics_snapshot,
    tps,
)

pytestmark = pytest.mark.unit

S = 1000  # ms per second


def rebalances(t: Tracker) -> list[RebalanceEvent]:
    return t.of(RebalanceEvent)


# -- source document 001: three clients join one by one -----------------------------------------

C1, C2, C3 = (
    "client-1-4f0e5a10-0000-4000-8000-000000000001",
    "client-2-9b1c2d30-0000-4000-8000-000000000002",
    "client-3-1a2b3c40-0000-4000-8000-000000000003",
)


def test_doc001_members_join_one_by_one() -> None:
    log, t = Log(), Tracker()
    topics = {"t": 4}
    ends = {"t": [10, 20, 30, 40]}
    joined: list[str] = []
    for i, new in enumerate((C1, C2, C3), start=1):
        joined.append(new)
        actual = assign("range", [(m, ["t"]) for m in joined], topics)
        log.gm(i, [member(m, ["t"], actual[m]) for m in joined], ts=i * 10 * S)
        # the collector's snapshot of the group's topics, a few seconds later
        log.snap(topics_snapshot(i * 10 * S + 3 * S, ends))
        t.feed(log.take())

    events = rebalances(t)
    assert [e.generation_after for e in events] == [1, 2, 3]
    assert [e.generation_before for e in events] == [0, 1, 2]
    assert [e.cause for e in events] == ["join"] * 3
    assert [e.cause_rule for e in events] == [7, 7, 7]
    assert [len(e.members_before) for e in events] == [0, 1, 2]
    assert [e.joined for e in events] == [(C1,), (C2,), (C3,)]
    # partitions per member as in the document: 4; then 2/2; then 2/1/1
    assert [sorted(len(p) for p in e.actual.values()) for e in events] == [[4], [2, 2], [1, 1, 2]]
    # eager: every partition owned before is paused
    assert [len(e.paused_partitions) for e in events] == [0, 4, 4]
    assert all(e.rebalance_protocol == "eager" for e in events)
    # range is the group's own strategy and gives exactly the actual assignment
    for e in events:
        own = e.expected[0]
        assert (own.strategy, own.own, own.error, own.divergent) == ("range", True, None, False)
        assert e.own_strategy_divergent is False
        assert {x.strategy for x in e.expected} == {
            "range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "server-range"
        }  # fmt: skip
        assert e.topic_partition_counts == {"t": 4}
    # range hands out every partition the leader knows: the assignment gives its count
    assert [e.topic_partition_count_sources["t"] for e in events] == ["assignment"] * 3
    # generation 2 moved two partitions from client-1 to client-2
    assert events[1].churn.moved_partitions == 2
    assert events[1].churn.owned_before_partitions == 4
    # one member row per partition, one metrics row for actual + one per strategy
    rows = t.of(MemberAssignmentRow)
    assert len(rows) == 4 * 3
    assert {(r.generation, r.member_id) for r in rows if r.generation == 3} == {
        (3, C1), (3, C2), (3, C3)
    }  # fmt: skip
    metrics = t.of(GroupMetricsRow)
    assert len(metrics) == 3 * (1 + 6)
    assert len({r.event_id for r in rows + metrics}) == len(rows) + len(metrics)


# -- source document 004: Order 7 + Stock 5, C1..C3, C3 crashes or leaves -------------------------

TOPICS = {"Order": 7, "Stock": 5}
SUBS = ["Order", "Stock"]


def _three_then_two(
    log: Log,
    t: Tracker,
    *,
    c3_last_commit_s: int,
    next_gen_s: int,
    listed_until_s: int | None,
    polls_s: range | None = None,
) -> RebalanceEvent:
    """Generation 5 with C1..C3, everyone commits every 5 s; C3 stops at ``c3_last_commit_s``;
    generation 6 (C1, C2) starts CompletingRebalance at ``next_gen_s``. The collector polls
    at each commit second (or at ``polls_s``) and lists C3 until ``listed_until_s``."""
    members = [("C1", SUBS), ("C2", SUBS), ("C3", SUBS)]
    actual = assign("roundrobin", members, TOPICS)
    t.feed([log.snap(topics_snapshot(1 * S, {"Order": [0] * 7, "Stock": [0] * 5}))])
    log.gm(
        5,
        [member(m, SUBS, actual[m]) for m, _ in members],
        ts=10 * S,
        protocol="roundrobin",
        current_state_ts_ms=10 * S - 300,
    )
    for second in range(15, next_gen_s, 5):
        for m, _ in members:
            if m == "C3" and second > c3_last_commit_s:
                continue
            log.commits(actual[m], ts=second * S)
    for second in polls_s or range(15, next_gen_s, 5):
        if listed_until_s is not None and second <= listed_until_s:
            log.snap(group_snapshot(second * S + 1, "Stable", ["C1", "C2", "C3"]))
        elif polls_s is not None and second < next_gen_s:
            log.snap(group_snapshot(second * S + 1, "PreparingRebalance", ["C1", "C2"]))
    t.feed(log.take())
    after = assign("roundrobin", members[:2], TOPICS, owned={m: actual[m] for m in ("C1", "C2")})
    log.gm(
        6,
        [member(m, SUBS, after[m]) for m in ("C1", "C2")],
        ts=next_gen_s * S + 400,
        protocol="roundrobin",
        current_state_ts_ms=next_gen_s * S,
    )
    t.feed(log.take())
    (event,) = [e for e in rebalances(t) if e.generation_after == 6]
    return event


def test_doc004_crash_among_three() -> None:
    log, t = Log(), Tracker()
    # C3 commits until 100 s and dies; removed after the 45 s session timeout
    event = _three_then_two(log, t, c3_last_commit_s=100, next_gen_s=146, listed_until_s=145)
    assert (event.cause, event.cause_rule) == ("crash", 4)
    (dep,) = event.departures
    assert (dep.member_id, dep.kind, dep.rule) == ("C3", "crash", "D2")
    assert dep.last_alive_ts_ms == 100 * S
    assert dep.commit_interval_ms == 5 * S
    assert dep.removed_after_ts_ms == 145 * S + 1  # the collector still listed it
    assert dep.session_timeout_ms == 45_000
    assert event.left == ("C3",)
    assert event.members_after and {m.member_id for m in event.members_after} == {"C1", "C2"}
    # roundrobin redistributes from scratch: C3's 4 partitions move, and others
    assert event.churn.left == ("C3",)
    assert event.churn.moved_partitions >= 4
    # the actual assignment is roundrobin's (Java's) answer for the two survivors
    assert event.own_strategy_divergent is False
    assert event.divergent["roundrobin"] is False
    # roundrobin result for C1, C2 (documented in the seeds README, after C3 crashes)
    assert sorted(event.actual["C1"]) == sorted(tps("Order", 0, 2, 4, 6) + tps("Stock", 1, 3))
    assert event.assignment_duration_ms == 400


def test_crash_last_listed_a_whole_poll_before_its_removal() -> None:
    log, t = Log(), Tracker()
    # a collector polling every 25 s last lists C3 at 120 s (20 s of silence); its next poll,
    # at 145 s, finds it gone: removed in (120 s, 145 s], taken as 132.5 s (32.5 s of silence)
    event = _three_then_two(
        log, t, c3_last_commit_s=100, next_gen_s=146, listed_until_s=120, polls_s=range(20, 150, 25)
    )
    assert (event.cause, event.cause_rule) == ("crash", 4)
    (dep,) = event.departures
    assert (dep.kind, dep.rule) == ("crash", "D2")
    assert dep.removed_after_ts_ms == 120 * S + 1
    assert dep.silence_ms == 32_500 + 1  # the snapshots are taken 1 ms past the second


def test_doc004_graceful_leave() -> None:
    log, t = Log(), Tracker()
    # C3 commits at 100 s (close() commits) and sends LeaveGroup; the group re-forms at 101 s
    event = _three_then_two(log, t, c3_last_commit_s=100, next_gen_s=101, listed_until_s=None)
    assert (event.cause, event.cause_rule) == ("graceful_leave", 5)
    (dep,) = event.departures
    assert (dep.kind, dep.rule) == ("graceful", "D1")
    assert dep.silence_ms == 1 * S


def test_leave_without_commits_is_undetermined() -> None:
    log, t = Log(), Tracker()
    actual = assign("range", [("A", ["t"]), ("B", ["t"])], {"t": 2})
    log.gm(3, [member(m, ["t"], actual[m]) for m in "AB"], ts=10 * S)
    log.gm(4, [member("A", ["t"], tps("t", 0, 1))], ts=600 * S)
    t.feed(log.take())
    last = rebalances(t)[-1]
    assert (last.cause, last.cause_rule) == ("leave", 6)
    assert last.departures[0].kind == "undetermined"


def test_first_observation_of_an_established_group() -> None:
    log, t = Log(), Tracker()
    log.gm(17, [member("A", ["t"], tps("t", 0))], ts=10 * S)
    t.feed(log.take())
    (event,) = rebalances(t)
    assert (event.cause, event.cause_rule) == ("unknown", 1)
    assert event.generation_before is None and event.members_before == ()


def test_collector_snapshots_give_the_duration() -> None:
    log, t = Log(), Tracker()
    log.gm(1, [member("A", ["t"], tps("t", 0, 1))], ts=10 * S)
    log.snap(group_snapshot(20 * S, "Stable", ["A"]))
    log.snap(group_snapshot(25 * S, "PreparingRebalance", ["A"]))
    actual = assign("range", [("A", ["t"]), ("B", ["t"])], {"t": 2})
    log.gm(2, [member(m, ["t"], actual[m]) for m in "AB"], ts=28 * S)
    t.feed(log.take())
    event = rebalances(t)[-1]
    assert event.duration_source == "collector"
    assert event.started_ts_ms == 25 * S
    assert event.duration_ms == 3 * S
    assert event.duration_max_ms == 8 * S


# -- partition increase ---------------------------------------------------------------------------


@pytest.mark.parametrize("snapshot_first", [True, False], ids=["collector", "assignment"])
def test_partition_increase(snapshot_first: bool) -> None:
    log, t = Log(), Tracker()
    t.feed([log.snap(topics_snapshot(1 * S, {"Order": [5] * 7}))])
    members = [("A", ["Order"]), ("B", ["Order"])]
    before = assign("range", members, {"Order": 7})
    log.gm(4, [member(m, ["Order"], before[m]) for m, _ in members], ts=10 * S)
    t.feed(log.take())
    if snapshot_first:  # the collector saw 9 partitions before the rebalance
        t.feed([log.snap(topics_snapshot(20 * S, {"Order": [5] * 9}))])
    after = assign("range", members, {"Order": 9})
    log.gm(5, [member(m, ["Order"], after[m]) for m, _ in members], ts=30 * S)
    t.feed(log.take())
    event = rebalances(t)[-1]
    assert (event.cause, event.cause_rule) == ("partition_count_change", 9)
    assert event.topic_partition_counts == {"Order": 9}
    assert event.topic_partition_count_sources["Order"] == "assignment"
    assert event.own_strategy_divergent is False


def test_late_rejoin_after_a_partition_increase() -> None:
    """Rule 12: every librdkafka member rejoins when it sees a new partition count; one that
    saw it after the count change's generation formed rejoins with new metadata while the
    group is Stable (the broker: "Updating metadata for member B during Stable") and nothing
    else changes. Once another rebalance came between, nothing visible is rule 13."""
    log, t = Log(), Tracker()
    members = [("A", ["Order"]), ("B", ["Order"])]
    counts = {"Order": 7}
    for gen, ts in ((4, 10), (5, 30), (6, 31), (7, 60)):
        if gen == 5:
            counts = {"Order": 9}
        actual = assign("range", members, counts)
        log.gm(gen, [member(m, ["Order"], actual[m]) for m, _ in members], ts=ts * S)
    t.feed(log.take())
    grew, late, later = rebalances(t)[-3:]
    assert (grew.cause, grew.cause_rule) == ("partition_count_change", 9)
    assert (late.cause, late.cause_rule, late.cause_factors) == ("metadata_update", 12, ())
    assert late.cause_detail.startswith("rule 12: a member rejoined late")
    assert (later.cause, later.cause_rule) == ("unknown", 13)


def test_custom_strategy_counts_come_from_the_collector() -> None:
    """An assignor the tracker does not know may leave partitions out: the count is the
    collector's (as of the rebalance), raised by what the assignment proves."""
    log, t = Log(), Tracker()
    log.gm(1, [member("A", ["Order", "Stock"], tps("Order", 0, 1))], ts=10 * S, protocol="mine")
    log.snap(topics_snapshot(12 * S, {"Order": [0] * 4, "Stock": [0] * 2}))
    log.gm(2, [member("A", ["Order", "Stock"], tps("Order", 0, 5))], ts=20 * S, protocol="mine")
    t.feed(log.take())
    first, second = rebalances(t)
    assert first.topic_partition_counts == {"Order": 2}
    assert first.topic_partition_count_sources == {"Order": "inferred"}
    assert second.topic_partition_counts == {"Order": 6, "Stock": 2}
    assert second.topic_partition_count_sources == {"Order": "inferred", "Stock": "collector"}
    assert (second.cause, second.cause_rule) == ("partition_count_change", 9)


# -- static membership ----------------------------------------------------------------------------


def test_static_member_restart_without_rebalance() -> None:
    log, t = Log(), Tracker()
    members = [("s1-aaa", ["t"]), ("s2-bbb", ["t"])]
    inst = {"s1-aaa": "s1", "s2-bbb": "s2"}
    actual = assign("range", members, {"t": 4}, instances=inst)
    log.gm(3, [member(m, ["t"], actual[m], instance=inst[m]) for m, _ in members], ts=10 * S)
    t.feed(log.take())
    # s2 restarts within the session timeout: same generation, new member id, same partitions
    log.gm(
        3,
        [
            member("s1-aaa", ["t"], actual["s1-aaa"], instance="s1"),
            member("s2-ccc", ["t"], actual["s2-bbb"], instance="s2"),
        ],
        ts=50 * S,
        current_state_ts_ms=10 * S - 200,
    )
    events = t.feed(log.take())
    (event,) = [e for e in events if isinstance(e, RebalanceEvent)]
    assert event.is_rebalance is False
    assert (event.cause, event.cause_rule) == ("static_rejoin", 2)
    assert event.generation_before == event.generation_after == 3
    assert [
        (r.group_instance_id, r.old_member_id, r.new_member_id) for r in event.static_rejoins
    ] == [("s2", "s2-bbb", "s2-ccc")]
    assert event.joined == () and event.left == ()
    assert event.churn.moved_partitions == 0
    assert event.paused_partitions == ()
    assert event.expected == ()
    # member rows only for the new member id
    rows = [e for e in events if isinstance(e, MemberAssignmentRow)]
    assert {r.member_id for r in rows} == {"s2-ccc"}
    assert t.state.classic is not None
    assert {m.member_id for m in t.state.classic.members} == {"s1-aaa", "s2-ccc"}


def _static_return(leader_before: str, leader_after: str) -> RebalanceEvent:
    """s2 comes back as s2-ccc in a new generation, nothing else changes."""
    log, t = Log(), Tracker()
    inst = {"s1-aaa": "s1", "s2-bbb": "s2", "s2-ccc": "s2"}
    actual = assign("range", [("s1-aaa", ["t"]), ("s2-bbb", ["t"])], {"t": 4}, instances=inst)
    members = [member(m, ["t"], p, instance=inst[m]) for m, p in actual.items()]
    log.gm(3, members, ts=10 * S, leader=leader_before)
    actual2 = assign("range", [("s1-aaa", ["t"]), ("s2-ccc", ["t"])], {"t": 4}, instances=inst)
    members2 = [member(m, ["t"], p, instance=inst[m]) for m, p in actual2.items()]
    log.gm(4, members2, ts=20 * S, leader=leader_after)
    t.feed(log.take())
    return rebalances(t)[-1]


def test_static_leader_rejoin_in_a_new_generation() -> None:
    event = _static_return("s2-bbb", "s2-ccc")
    assert event.is_rebalance is True
    assert (event.cause, event.cause_rule) == ("static_rejoin", 10)
    assert event.departures == () and event.joined == ()
    assert event.churn.moved_partitions == 0


def test_a_static_followers_return_does_not_start_a_rebalance() -> None:
    """The coordinator takes a follower's return into a round something else started (here
    nothing the records show): a factor, not the cause."""
    event = _static_return("s1-aaa", "s1-aaa")
    assert event.is_rebalance is True
    assert (event.cause, event.cause_rule) == ("unknown", 13)
    assert event.cause_factors == ("static_rejoin",)
    assert [r.new_member_id for r in event.static_rejoins] == ["s2-ccc"]


# -- cooperative-sticky: two rounds, only moved partitions paused --------------------------------


def test_cooperative_sticky_incremental() -> None:
    log, t = Log(), Tracker()
    topics = {"Order": 6}
    coop = "cooperative-sticky"
    # generation 2: C1 alone owns everything
    log.gm(
        2,
        [
            member(
                "C1", ["Order"], tps("Order", *range(6)), generation=1,
                assignor_data=CooperativeStickyUserData(1, True),
            )
        ],
        ts=10 * S,
        protocol=coop,
    )  # fmt: skip
    # generation 3: C2 joins; C1 reports what it owns; three partitions are held back
    owned = {"C1": tps("Order", *range(6))}
    first = assign(coop, [("C1", ["Order"]), ("C2", ["Order"])], topics, owned=owned, generation=2)
    assert first["C2"] == ()
    log.gm(
        3,
        [
            member("C1", ["Order"], first["C1"], owned=owned["C1"], generation=2),
            member("C2", ["Order"], (), user_data=b"\xff\xff\xff\xff",
                   assignor_data=CooperativeStickyUserData(-1, True)),
        ],
        ts=20 * S,
        protocol=coop,
    )  # fmt: skip
    # generation 4: C1 revoked them and rejoins; C2 gets them
    owned2 = {"C1": first["C1"]}
    second = assign(
        coop, [("C1", ["Order"]), ("C2", ["Order"])], topics, owned=owned2, generation=3
    )
    log.gm(
        4,
        [
            member("C1", ["Order"], second["C1"], owned=first["C1"], generation=3),
            member("C2", ["Order"], second["C2"], generation=3),
        ],
        ts=21 * S,
        protocol=coop,
    )
    t.feed(log.take())
    gen3, gen4 = rebalances(t)[-2:]
    assert gen3.rebalance_protocol == gen4.rebalance_protocol == "cooperative"
    assert (gen3.cause, gen4.cause) == ("join", "cooperative_followup")
    moved = tuple(sorted(set(tps("Order", *range(6))) - set(first["C1"])))
    assert gen3.paused_partitions == moved  # only what leaves C1, not all six
    assert gen4.paused_partitions == ()
    assert gen3.own_strategy_divergent is False
    assert gen4.own_strategy_divergent is False
    own3 = gen3.expected[0]
    assert own3.strategy == coop
    assert {(w.topic, w.partition, w.member_id) for w in own3.withheld} == {
        (p.topic, p.partition, "C2") for p in moved
    }
    assert sorted(second["C2"]) == list(moved)


# -- sticky with user data ------------------------------------------------------------------------


def test_sticky_expected_uses_the_user_data() -> None:
    """The leader's StickyAssignor reads the previous assignment from the user data, not from
    the subscription; the expected assignment is what Java's sticky gives for it."""
    log, t = Log(), Tracker()
    topics = {"Order": 7, "Stock": 5}
    prev = assign("sticky", [("C1", SUBS), ("C2", SUBS), ("C3", SUBS)], topics)

    def ud(m: str) -> StickyUserData:
        by_topic: dict[str, list[int]] = {}
        for p in prev[m]:
            by_topic.setdefault(p.topic, []).append(p.partition)
        return StickyUserData(
            1, tuple(TopicPartitions(k, tuple(v)) for k, v in by_topic.items()), 8
        )

    survivors = ["C1", "C2"]
    actual = assign(
        "sticky", [(m, SUBS) for m in survivors], topics, owned={m: prev[m] for m in survivors},
        generation=8,
    )  # fmt: skip
    log.gm(
        9,
        [member(m, SUBS, actual[m], user_data=b"x", assignor_data=ud(m)) for m in survivors],
        ts=10 * S,
        protocol="sticky",
    )
    t.feed([log.snap(topics_snapshot(1 * S, {"Order": [0] * 7, "Stock": [0] * 5}))])
    t.feed(log.take())
    event = rebalances(t)[-1]
    own = event.expected[0]
    assert own.strategy == "sticky" and own.own and own.error is None
    assert own.assignment == actual
    assert own.divergent is False
    # sticky keeps what the survivors owned: only C3's partitions changed hands
    for m in survivors:
        assert set(prev[m]) <= set(actual[m])


def test_divergence_when_actual_differs_from_expected() -> None:
    log, t = Log(), Tracker()
    # a custom leader gave everything to B although the protocol says range
    log.gm(2, [member("A", ["t"], ()), member("B", ["t"], tps("t", 0, 1, 2, 3))], ts=10 * S)
    t.feed([log.snap(topics_snapshot(1 * S, {"t": [0, 0, 0, 0]}))])
    t.feed(log.take())
    event = rebalances(t)[-1]
    assert event.own_strategy_divergent is True
    own = event.expected[0]
    assert own.strategy == "range" and own.divergent is True
    assert set(own.divergent_members) == {"A", "B"}
    assert event.actual_skew.spread_partitions == 4
    assert own.skew is not None and own.skew.spread_partitions == 0
    rows = {r.strategy: r for r in t.of(GroupMetricsRow)}
    assert rows["range"].divergent is True and rows["range"].divergent_member_count == 2
    assert rows["actual"].divergent is None


def test_unknown_strategy_is_reported_not_raised() -> None:
    log, t = Log(), Tracker()
    log.gm(1, [member("A", ["t"], tps("t", 0))], ts=10 * S, protocol="my-assignor")
    t.feed(log.take())
    event = rebalances(t)[-1]
    own = event.expected[0]
    assert own.strategy == "my-assignor" and own.own
    assert own.error is not None and "not implemented" in own.error
    assert event.own_strategy_divergent is None


# -- tombstones, empty groups, non-consumer protocols ---------------------------------------------


def test_group_tombstone_emits_group_deleted() -> None:
    log, t = Log(), Tracker()
    log.gm(1, [member("A", ["t"], tps("t", 0))], ts=10 * S)
    log.gm(2, [], ts=20 * S)  # the last member left: the group is Empty
    log.rec(group_tombstone(), 30 * S)
    t.feed(log.take())
    empty = rebalances(t)[-1]
    assert empty.members_after == () and empty.generation_after == 2
    assert empty.expected == ()
    (deleted,) = t.of(GroupDeleted)
    assert (deleted.reason, deleted.last_generation) == ("deleted", 2)
    assert t.state.classic is None
    status = t.of(GroupStatus)[-1]
    assert status.generation is None


def test_connect_group_has_members_but_no_expected() -> None:
    log, t = Log(), Tracker()
    m = member("worker-1", [], ())
    from dataclasses import replace

    m = replace(m, subscription=None, assignment=None, subscription_bytes=b"\x00\x01")
    log.gm(1, [m], ts=10 * S, protocol="sessioned", protocol_type="connect")
    t.feed(log.take())
    event = rebalances(t)[-1]
    assert event.protocol_type == "connect" and event.rebalance_protocol == "cooperative"
    assert event.expected == () and event.cause == "join"


def test_stale_generation_is_skipped() -> None:
    log, t = Log(), Tracker()
    log.gm(5, [member("A", ["t"], tps("t", 0))], ts=10 * S)
    log.gm(4, [member("A", ["t"], tps("t", 0))], ts=20 * S)
    t.feed(log.take())
    assert len(rebalances(t)) == 1
    assert t.state.counters["stale"] == 1


def test_group_recreated_restarts_generations() -> None:
    log, t = Log(), Tracker()
    log.gm(5, [member("A", ["t"], tps("t", 0))], ts=10 * S)
    log.gm(1, [member("B", ["t"], tps("t", 0))], ts=20 * S)
    t.feed(log.take())
    assert [d.reason for d in t.of(GroupDeleted)] == ["recreated"]
    assert rebalances(t)[-1].cause == "join"


def test_leader_and_members_are_reported() -> None:
    log, t = Log(), Tracker()
    log.gm(
        1, [member("A", ["t"], tps("t", 0)), member("B", ["t"], tps("t", 1))], ts=10 * S, leader="B"
    )
    t.feed(log.take())
    e = rebalances(t)[-1]
    assert e.leader_after == "B"
    assert e.members_after[0].session_timeout_ms == 45_000
    assert e.members_after[0].partitions == (TopicPartition("t", 0),)


#: (librdkafka's, Java's) answer for the static D and the dynamic A over t (4 partitions).
ANSWERS = {
    "range": (
        {"D-1": tps("t", 2, 3), "A-1": tps("t", 0, 1)},
        {"D-1": tps("t", 0, 1), "A-1": tps("t", 2, 3)},
    ),
    "roundrobin": (
        {"D-1": tps("t", 1, 3), "A-1": tps("t", 0, 2)},
        {"D-1": tps("t", 0, 2), "A-1": tps("t", 1, 3)},
    ),
}


@pytest.mark.parametrize("protocol", ["range", "roundrobin"])
@pytest.mark.parametrize(
    ("user_data", "answer", "divergent", "implementation"),
    [
        (b"", 0, False, "librdkafka"),  # a librdkafka leader (v3, empty user data)
        (None, 0, False, "librdkafka"),  # an unknown leader: librdkafka's answer matches
        (None, 1, False, "java"),  # an unknown leader: Java's answer matches
        (b"", 1, True, "librdkafka"),  # a librdkafka leader cannot have given Java's
    ],
)
def test_a_static_and_a_dynamic_member_judged_by_the_leaders_library(
    protocol: str, user_data: bytes | None, answer: int, divergent: bool, implementation: str
) -> None:
    """Issue 32's false alarm: librdkafka orders the dynamic A (member id "A-1") before the
    static D ("D-1", instance id "static-d"), Java the other way round. Neither answer is a
    divergence unless the leader is known to run the other library."""
    log, t = Log(), Tracker()
    given = ANSWERS[protocol][answer]
    members = [
        member("D-1", ["t"], given["D-1"], instance="static-d", user_data=user_data),
        member("A-1", ["t"], given["A-1"], user_data=user_data),
    ]
    log.gm(2, members, ts=10 * S, protocol=protocol)
    t.feed([log.snap(topics_snapshot(1 * S, {"t": [0, 0, 0, 0]}))])
    t.feed(log.take())
    event = rebalances(t)[-1]
    assert event.own_strategy_divergent is divergent
    assert event.own_strategy_implementation == implementation


@pytest.mark.parametrize(("version", "divergent"), [(1, None), (2, None), (3, True)])
def test_a_java_shaped_cooperative_sticky_leader_is_judged_by_its_subscription_version(
    version: int, divergent: bool | None
) -> None:
    """Issue 32: Sarama's ``cooperative-sticky`` writes Java's shape (its generation as user
    data) at version 1 or 2, and its answer is not Java's: there an assignment that is not
    Java's is no verdict; at version 3 only Java writes that shape, and it is a divergence."""
    log, t = Log(), Tracker()
    fresh = CooperativeStickyUserData(-1, True)  # the generation before the first: -1
    members = [
        member(m, ["t"], held, user_data=b"\xff\xff\xff\xff", assignor_data=fresh)
        for m, held in (("A-1", tps("t", 0, 1)), ("B-1", tps("t", 2, 3)))
    ]
    members = [
        dataclasses.replace(m, subscription=dataclasses.replace(m.subscription, version=version))
        for m in members
    ]
    log.gm(1, members, ts=10 * S, protocol="cooperative-sticky")
    t.feed([log.snap(topics_snapshot(1 * S, {"t": [0, 0, 0, 0]}))])
    t.feed(log.take())
    event = rebalances(t)[-1]
    assert event.own_strategy_divergent is divergent
    assert event.own_strategy_implementation == ("java" if divergent else None)
