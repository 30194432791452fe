"""Schema version 2 against version 1: the same polls, published as changes (the collector's
:class:`~streaming.collector.changes.Changes`) or as full copies (``build_events``), encoded,
decoded by the tracker's reader and applied with the same ``__consumer_offsets`` records,
give the same rebalances and the same collector evidence (states, member sightings)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from assign_core.model import TopicPartition
from streaming.collector import AdminAnswers, build_events
from streaming.collector.changes import Changes
from streaming.tracking import Observation
from streaming.tracking.events import RebalanceEvent
from streaming.tracking.membership import parse_membership_json
from streaming.tracking.model import GroupHeartbeat, GroupSnapshot
from tests.unit.streaming.tracking.factories import (
    CLUSTER,
    GROUP,
    Log,
    Tracker,
    admin_topics,
    assign,
    member,
)

pytestmark = pytest.mark.unit

S = 1000
TOPICS = {"Order": 7, "Stock": 5}
SUBS = ["Order", "Stock"]
BROKER = {"broker_id": 1, "host": "b1", "port": 9092, "rack": None, "is_fenced": False}


def answers(
    ts: int,
    state: str,
    owned: dict[str, tuple[TopicPartition, ...]],
    *,
    end_offsets: bool = True,
) -> AdminAnswers:
    """One poll of a classic roundrobin group (kafka-python's shapes): members, their
    assignment, the two topics; end offsets that grow with time."""
    described = {
        "group_id": GROUP,
        "group_state": state,
        "protocol_type": "consumer",
        "protocol_data": "roundrobin" if state == "Stable" else "",
        "error": None,
        "members": [
            {
                "member_id": m,
                "group_instance_id": None,
                "client_id": m,
                "client_host": "/10.0.0.1",
                "member_metadata": {"topics": SUBS},
                "member_assignment": {
                    "assigned_partitions": [
                        {"topic": t, "partitions": sorted(p for tt, p in parts if tt == t)}
                        for t in SUBS
                    ]
                }
                if state == "Stable"
                else None,
            }
            for m, parts in sorted(owned.items())
        ],
    }
    metas = admin_topics(TOPICS)
    offsets = {(t, p): ts // 100 for t, n in TOPICS.items() for p in range(n)}
    return AdminAnswers(
        snapshot_ts_ms=ts,
        cluster={"cluster_id": "c1", "controller_id": 1, "brokers": [BROKER]},
        groups=[
            {
                "group_id": GROUP,
                "group_state": state,
                "group_type": "classic",
                "protocol_type": "consumer",
            }
        ],
        descriptions={GROUP: described},
        # no OffsetFetch answers: what version 1 would add, the log has already said
        topics=metas,
        end_offsets=offsets if end_offsets else {},
        end_offsets_ts_ms=ts if end_offsets else None,
    )


Poll = tuple[int, str, dict[str, tuple[TopicPartition, ...]]]


def _observations(log: Log, records: list[tuple[bytes, bytes | None]]) -> list[Observation]:
    out = []
    for _key, value in records:
        payload = parse_membership_json(value)
        assert not hasattr(payload, "reason"), payload
        if isinstance(payload, GroupSnapshot | GroupHeartbeat) or (
            GROUP in getattr(payload, "group_ids", ())
        ):
            ts = getattr(payload, "snapshot_ts_ms", 0)
            o = Observation("membership", 0, log.next_membership_offset, ts + 5, payload)
            log.next_membership_offset += 1
            out.append(o)
    return out


def run(
    version: int,
    polls: Sequence[Poll],
    records: Callable[[Log], None],
    heartbeat_s: int,
    poll_event_s: int = 0,
) -> Tracker:
    """Apply the polls (as ``version``'s events, a ``poll`` event every ``poll_event_s``)
    with the coordinator's records, a batch per second of record time as the job reads them
    live (the coordinator's record of a rebalance can come before the collector's next
    poll)."""
    log, t = Log(), Tracker()
    changes = Changes(
        cluster=CLUSTER,
        heartbeat_interval_ms=heartbeat_s * S,
        full_interval_ms=0,
        poll_event_interval_ms=poll_event_s * S,
    )
    batch: list[Observation] = []
    for i, (ts, state, owned) in enumerate(polls):
        if version == 1:
            events = build_events(answers(ts, state, owned), cluster=CLUSTER, snapshot_id=f"{i}")
        else:
            due = i % 6 == 0  # end offsets every 6th poll
            events = changes.events(answers(ts, state, owned, end_offsets=due), snapshot_id=f"{i}")
        batch.extend(_observations(log, [e.encode() for e in events]))
    records(log)
    by_second: dict[int, list[Observation]] = {}
    for o in batch + log.take():
        by_second.setdefault(o.logical_ts_ms // S, []).append(o)
    for second in sorted(by_second):
        t.feed(by_second[second], now_ms=(second + 1) * S)
    return t


def _crash_scenario(
    next_gen_s: int, listed_until_s: int, c3_last_commit_s: int, poll_s: int = 1
) -> tuple[list[Poll], Callable[[Log], None]]:
    members = [("C1", SUBS), ("C2", SUBS), ("C3", SUBS)]
    before = assign("roundrobin", members, TOPICS)
    after = assign("roundrobin", members[:2], TOPICS, owned={m: before[m] for m in ("C1", "C2")})
    polls: list[Poll] = []
    for second in range(11, next_gen_s + 20, poll_s):
        ts = second * S + 1
        if second <= listed_until_s:
            polls.append((ts, "Stable", {m: tuple(before[m]) for m, _ in members}))
        elif second < next_gen_s:
            polls.append((ts, "PreparingRebalance", {m: () for m in ("C1", "C2")}))
        else:
            polls.append((ts, "Stable", {m: tuple(after[m]) for m in ("C1", "C2")}))

    def records(log: Log) -> None:
        log.gm(
            5,
            [member(m, SUBS, before[m]) for m, _ in members],
            ts=10 * S,
            protocol="roundrobin",
            current_state_ts_ms=10 * S - 300,
        )
        for second in range(15, next_gen_s, 5):
            for m, _ in members:
                if m == "C3" and second > c3_last_commit_s:
                    continue
                log.commits(before[m], ts=second * S)
        log.gm(
            6,
            [member(m, SUBS, after[m]) for m in ("C1", "C2")],
            ts=next_gen_s * S + 400,
            protocol="roundrobin",
            current_state_ts_ms=next_gen_s * S,
        )

    return polls, records


def _evidence(t: Tracker) -> dict[str, Any]:
    col = t.state.collector
    return {
        "states": col.states,
        "seen": col.member_seen,
        "gone": col.member_gone,
        "last": col.last_ts_ms,
        "state": col.state,
        "topics": col.topics,
        "counts": {name: meta.counts for name, meta in t.state.topics.items()},
    }


@pytest.mark.parametrize(
    ("next_gen_s", "listed_until_s", "c3_last_commit_s"),
    [
        (146, 145, 100),  # C3 crashes, listed until the end: crash (D2)
        (146, 120, 100),  # listed until 120 s, gone while the group waits: crash
        (101, 100, 100),  # C3 leaves: graceful (D1)
        (60, 54, 55),  # a rebalance seen unstable for a few polls
    ],
)
@pytest.mark.parametrize("heartbeat_s", [5, 60])
def test_version_2_gives_the_rebalances_and_evidence_of_version_1(
    next_gen_s: int, listed_until_s: int, c3_last_commit_s: int, heartbeat_s: int
) -> None:
    polls, records = _crash_scenario(next_gen_s, listed_until_s, c3_last_commit_s)

    v1 = run(1, polls, records, heartbeat_s)
    v2 = run(2, polls, records, heartbeat_s)

    rebalances = [e for e in v1.events if isinstance(e, RebalanceEvent)]
    assert [e.generation_after for e in rebalances] == [5, 6]
    assert [e for e in v2.events if isinstance(e, RebalanceEvent)] == rebalances
    assert _evidence(v2) == _evidence(v1)


@pytest.mark.parametrize(
    ("next_gen_s", "listed_until_s", "c3_last_commit_s"),
    [
        (146, 145, 100),  # crash (D2), C3 listed until the end
        (101, 100, 100),  # graceful (D1)
        (60, 54, 55),  # a rebalance seen unstable for a few polls
    ],
)
def test_sparse_poll_events_give_the_rebalances_of_version_1(
    next_gen_s: int, listed_until_s: int, c3_last_commit_s: int
) -> None:
    """``poll`` events every 30 polls: a ``group`` event names the poll before it, so the
    tracker still knows when the group was last seen settled and when C3 was last listed to
    the poll, and the polling interval (the departures' window): the same rebalances, start
    times, duration bounds and departures as version 1's copies at every poll."""
    polls, records = _crash_scenario(next_gen_s, listed_until_s, c3_last_commit_s)

    v1 = run(1, polls, records, 60)
    sparse = run(2, polls, records, 60, poll_event_s=30)

    rebalances = [e for e in v1.events if isinstance(e, RebalanceEvent)]
    assert [e.generation_after for e in rebalances] == [5, 6]
    assert [e for e in sparse.events if isinstance(e, RebalanceEvent)] == rebalances


def test_sparse_poll_events_keep_a_long_rebalance_s_start_past_the_state_history() -> None:
    """Unstable from 121 s to 145 s, polled every second: version 1's 16 newest snapshots
    start at 131 s, so it dates the start there, bounded only by the previous generation's
    record; sparse ``poll`` events leave the first unstable poll and the last settled one (the
    poll before the change) in the history, and everything else the same."""
    polls, records = _crash_scenario(146, 120, 100)

    v1 = [e for e in run(1, polls, records, 60).events if isinstance(e, RebalanceEvent)]
    v2 = [
        e
        for e in run(2, polls, records, 60, poll_event_s=30).events
        if isinstance(e, RebalanceEvent)
    ]

    assert (v1[1].started_ts_ms, v1[1].duration_max_ms) == (131 * S + 1, 146 * S + 400 - 10 * S)
    assert (v2[1].started_ts_ms, v2[1].duration_max_ms) == (
        121 * S + 1,
        146 * S + 400 - 120 * S - 1,
    )
    assert v2 == [
        v1[0],
        dataclasses.replace(
            v1[1],
            started_ts_ms=121 * S + 1,
            duration_ms=146 * S + 400 - 121 * S - 1,
            duration_max_ms=146 * S + 400 - 120 * S - 1,
        ),
    ]


@pytest.mark.parametrize("poll_event_s", [20, 30])
def test_a_rebalance_between_two_polls_is_judged_by_the_last_poll_event(poll_event_s: int) -> None:
    """Polls every 5 s; C3 last listed at 146 s, the next generation recorded at 149 s, the
    next poll at 151 s: the group's change (naming the poll at 146 s) comes after the record.
    Version 1 judges C3 by its listing at 146 s; sparse ``poll`` events by the last one that
    named the group (136 s, within ``poll_event_s``): a shorter silence, the same verdict."""
    polls, records = _crash_scenario(149, 146, 100, poll_s=5)

    v1 = [e for e in run(1, polls, records, 60).events if isinstance(e, RebalanceEvent)]
    v2 = [
        e
        for e in run(2, polls, records, 60, poll_event_s=poll_event_s).events
        if isinstance(e, RebalanceEvent)
    ]

    [c3] = v1[1].departures
    assert (c3.member_id, c3.kind, c3.removed_after_ts_ms) == ("C3", "crash", 146 * S + 1)
    [late] = v2[1].departures
    assert late == dataclasses.replace(
        c3, removed_after_ts_ms=136 * S + 1, silence_ms=c3.silence_ms - 5 * S
    )
    assert 146 * S - late.removed_after_ts_ms <= poll_event_s * S
    assert v2[0] == v1[0]
    assert dataclasses.replace(v2[1], departures=v1[1].departures, cause_detail="") == (
        dataclasses.replace(v1[1], cause_detail="")
    )


def test_version_2_publishes_far_fewer_bytes_for_the_same_polls() -> None:
    polls, _records = _crash_scenario(146, 145, 100)
    sizes = {}
    for version in (1, 2):
        changes = Changes(cluster=CLUSTER, heartbeat_interval_ms=60 * S, full_interval_ms=600 * S)
        total = 0
        for i, (ts, state, owned) in enumerate(polls):
            a = answers(ts, state, owned, end_offsets=version == 1 or i % 30 == 0)
            events = (
                build_events(a, cluster=CLUSTER, snapshot_id=f"{i}")
                if version == 1
                else changes.events(a, snapshot_id=f"{i}")
            )
            total += sum(len(e.encode()[1] or b"") for e in events)
        sizes[version] = total

    assert sizes[2] * 10 < sizes[1], sizes  # uncompressed JSON; zstd packs version 2 further


def test_a_heartbeat_without_its_group_event_gives_the_state_only() -> None:
    """A reader that missed the group event (a heartbeat naming another digest) records the
    poll's state and time, not the members."""
    changes = Changes(cluster=CLUSTER, heartbeat_interval_ms=0, full_interval_ms=0)
    owned = {"C1": (TopicPartition("Order", 0),)}
    changes.events(answers(1 * S, "Stable", owned), snapshot_id="a")
    [beat] = [
        e for e in changes.events(answers(2 * S, "Stable", owned), snapshot_id="b")
        if e.value is not None and e.value["event_type"] == "heartbeat"
    ]  # fmt: skip
    log, t = Log(), Tracker()
    value = {**(beat.value or {}), "digest": "0000000000000000"}
    t.feed(_observations(log, [(b"k", json.dumps(value).encode())]))

    assert t.state.collector.states == ((2 * S, "Stable"),)
    assert t.state.collector.member_seen == {}


def test_every_version_2_poll_keeps_the_inputs_fresh() -> None:
    """The job's freshness of its inputs (``rebalance_monitor_*_age_seconds``) counts every
    poll of version 2: a group event only when the group changed, else heartbeats and poll
    events; end offsets in ``end_offsets`` events."""
    from streaming.spark.decode import MEMBERSHIP, _decode_one

    changes = Changes(cluster=CLUSTER, heartbeat_interval_ms=3 * S, full_interval_ms=0)
    owned = {"C1": (TopicPartition("Order", 0),)}
    times: dict[str, list[tuple[int | None, int | None]]] = {}
    for i, ts in enumerate((1 * S, 2 * S, 3 * S, 4 * S)):
        for e in changes.events(answers(ts, "Stable", owned), snapshot_id=f"{i}"):
            if e.value is None:
                continue
            key, value = e.encode()
            d = _decode_one(MEMBERSHIP, key, value)
            times.setdefault(e.value["event_type"], []).append(
                (d.snapshot_ts_ms, d.end_offsets_ts_ms)
            )
    assert times["group"] == [(1 * S, None)]  # the group changed once
    assert times["poll"] == [(2 * S, None), (3 * S, None)]  # then unchanged
    assert times["heartbeat"] == [(4 * S, None)]  # its heartbeat fell due
    assert [ends for _snap, ends in times["end_offsets"]] == [1 * S, 2 * S, 3 * S, 4 * S]
