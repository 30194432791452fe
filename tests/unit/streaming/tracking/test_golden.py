"""The tracker on real ``__consumer_offsets`` bytes of real groups (``tests/fixtures/golden``).

Each fixture holds the raw records of one group (joins one by one, one clean leave, commits),
captured from a Kafka 4.4 broker, and what the clients themselves reported at every stable
point. The tracker must see the same generations and assignments as the clients did, and
its verdicts must be the ones the capture played.

The groups' leaders are kafka-python consumers. Their ``range`` and ``roundrobin``
subscriptions do not identify them; Java's answer, tried first, matches. kafka-python's
``sticky`` and ``cooperative-sticky`` are its own algorithms, not modelled (its ``sticky``
writes user data Java's StickyAssignor cannot read, a version prefix before the V1 struct;
its ``cooperative-sticky`` keeps other partitions than Java's when a member joins), so those
groups get no verdict rather than a false divergence.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assign_core.model import TopicPartition
from streaming.codec import decode_record
from streaming.tracking import GroupState, Observation, RebalanceEvent, apply
from streaming.tracking.events import GroupStatus, OffsetCommitRow, PartitionLagRow
from streaming.tracking.model import (
    SnapshotBroker,
    SnapshotPartition,
    SnapshotTopic,
    TopicsSnapshot,
)
from streaming.tracking.reducer import ordered

pytestmark = pytest.mark.unit

GOLDEN = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "golden"
FIXTURES = sorted(p.stem for p in GOLDEN.glob("*.json")) if GOLDEN.is_dir() else []

if not FIXTURES:  # pragma: no cover - the fixtures are checked in
    pytest.skip("no golden fixtures", allow_module_level=True)


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    return data


def observations(fixture: dict[str, Any]) -> list[Observation]:
    """The records, decoded, and one collector ``topics`` event built from the fixture's
    topic metadata (what the collector would have published)."""
    out = [
        Observation(
            "offsets",
            r["partition"],
            r["offset"],
            r["timestamp_ms"],
            decode_record(
                bytes.fromhex(r["key"]), bytes.fromhex(r["value"]) if r["value"] else None
            ),
        )
        for r in fixture["records"]
    ]
    # the collector had already described the topics (they existed before the group)
    ts = out[0].timestamp_ms - 1
    topics = TopicsSnapshot(
        cluster="local",
        kafka_cluster_id=None,
        snapshot_id="golden",
        snapshot_ts_ms=ts,
        errors=(),
        group_ids=(fixture["group_id"],),
        controller_id=1,
        brokers=(SnapshotBroker(1, "127.0.0.1", 19092, None, False),),
        end_offsets_ts_ms=ts,
        topics=tuple(
            SnapshotTopic(
                topic=name,
                topic_id=meta["topic_id"],
                is_internal=False,
                partition_count=meta["partitions"],
                error=None,
                partitions=tuple(
                    SnapshotPartition(p, 1, (1,), (1,), (), (None,), end)
                    for p, end in enumerate(meta["end_offsets"])
                ),
            )
            for name, meta in sorted(fixture["topics"].items())
        ),
    )
    out.append(Observation("membership", 0, 0, ts, topics))
    return out


def run(name: str, batch_size: int | None = None) -> tuple[GroupState, list[Any]]:
    fixture = load(name)
    obs = observations(fixture)
    state = GroupState.new("local", fixture["group_id"])
    events: list[Any] = []
    now = max(o.timestamp_ms for o in obs) + 1
    obs = ordered(obs)
    chunks = (
        [obs]
        if batch_size is None
        else [obs[i : i + batch_size] for i in range(0, len(obs), batch_size)]
    )
    for chunk in chunks:
        state, batch_events = apply(state, chunk, now)
        events.extend(batch_events)
    return state, events


def rebalances(events: list[Any]) -> list[RebalanceEvent]:
    return [e for e in events if isinstance(e, RebalanceEvent)]


@pytest.mark.parametrize("name", FIXTURES)
def test_generations_and_assignments_match_what_the_clients_reported(name: str) -> None:
    fixture = load(name)
    _state, events = run(name)
    by_gen = {e.generation_after: e for e in rebalances(events)}
    for point in fixture["reports"]["stable"]:
        event = by_gen[point["generation"]]
        reported = {
            m["member_id"]: {TopicPartition(t, p) for t, ps in m["assignment"].items() for p in ps}
            for m in point["members"]
        }
        assert {m: set(ps) for m, ps in event.actual.items()} == reported, point["label"]


@pytest.mark.parametrize("name", FIXTURES)
def test_one_event_per_generation_and_the_group_ends_empty(name: str) -> None:
    fixture = load(name)
    state, events = run(name)
    gens = [e.generation_after for e in rebalances(events)]
    assert gens == sorted(set(gens))
    last = rebalances(events)[-1]
    assert last.members_after == () and last.cause == "graceful_leave"
    status = [e for e in events if isinstance(e, GroupStatus)][-1]
    assert (status.state, status.member_count) == ("Empty", 0)
    # every member that left said goodbye: a clean leave, never a crash
    assert all(d.kind == "graceful" for e in rebalances(events) for d in e.departures)
    # committed offsets: the last commit of each partition is what OffsetFetch reported
    committed = {
        TopicPartition(t, int(p)): off
        for t, parts in fixture["reports"]["committed_offsets"].items()
        for p, off in parts.items()
    }
    assert {tp: c.offset for tp, c in state.commits.items()} == committed
    assert not any(isinstance(e, OffsetCommitRow) for e in events)  # the commit lane's rows
    assert any(isinstance(e, PartitionLagRow) for e in events)


@pytest.mark.parametrize("name", FIXTURES)
def test_batching_does_not_change_the_events(name: str) -> None:
    _s1, whole = run(name)
    _s2, pieces = run(name, batch_size=3)
    assert [e for e in whole if not isinstance(e, GroupStatus)] == [
        e for e in pieces if not isinstance(e, GroupStatus)
    ]


CAUSES = {
    "range": ["join", "join", "join", "graceful_leave", "graceful_leave"],
    # kafka-python joins before it knows the topics: an empty first generation, then the
    # leader sees the topics (partition count 0 -> n)
    "roundrobin": ["join", "partition_count_change", "join", "join", *["graceful_leave"] * 2],
    "sticky": ["join", "partition_count_change", "join", "join", *["graceful_leave"] * 2],
    "cooperative-sticky": [
        "join", "partition_count_change", "join", "cooperative_followup", "unknown", "join",
        "cooperative_followup", "graceful_leave", "unknown", "graceful_leave",
    ],
    "kip848-uniform": ["join", "join", "graceful_leave", "graceful_leave"],
}  # fmt: skip

#: generations whose actual assignment differs from the own strategy's (see module docstring)
DIVERGENT = {
    "range": set(),
    "roundrobin": set(),
    "sticky": set(),
    "cooperative-sticky": set(),
    "kip848-uniform": set(),
}


@pytest.mark.parametrize("name", sorted(CAUSES))
def test_causes_and_divergence(name: str) -> None:
    if name not in FIXTURES:
        pytest.skip(f"fixture {name} not captured")
    _state, events = run(name)
    rbs = rebalances(events)
    assert [e.cause for e in rbs] == CAUSES[name]
    assert {e.generation_after for e in rbs if e.own_strategy_divergent} == DIVERGENT[name]
    for e in rbs:
        if e.members_after:
            own = e.expected[0]
            assert own.own and own.implementation == LEADER_IMPLEMENTATION.get(name)
            if name in ("sticky", "cooperative-sticky"):
                assert own.error is not None and own.error.startswith("not modelled")
                assert e.own_strategy_divergent is None
            else:
                assert own.error is None, (e.generation_after, own.error)


#: The implementation each fixture's own strategy is judged against: kafka-python leaders
#: (their range and roundrobin subscriptions identify nothing: Java's answer, tried first,
#: matches), the broker's assignor for the KIP-848 group.
LEADER_IMPLEMENTATION = {
    "range": "java",
    "roundrobin": "java",
    "sticky": "kafka-python",
    "cooperative-sticky": "kafka-python",
    "kip848-uniform": "java",
}


def test_cooperative_sticky_pauses_only_moved_partitions() -> None:
    if "cooperative-sticky" not in FIXTURES:
        pytest.skip("fixture not captured")
    _state, events = run("cooperative-sticky")
    for e in rebalances(events):
        if e.members_after:
            assert e.rebalance_protocol == "cooperative"
            before = {tp for m in e.members_before for tp in m.partitions}
            assert len(e.paused_partitions) < max(1, len(before)) or not before


def test_kip848_reconciliation_durations() -> None:
    if "kip848-uniform" not in FIXTURES:
        pytest.skip("fixture not captured")
    _state, events = run("kip848-uniform")
    rbs = rebalances(events)
    assert [e.completion for e in rbs] == ["completed"] * len(rbs)
    assert all(e.duration_ms is not None and e.duration_ms >= 0 for e in rbs)
    assert all(e.group_protocol == "consumer" for e in rbs)
    # names resolved from the collector's topic ids
    assert {tp.topic for e in rbs for ps in e.actual.values() for tp in ps} == {
        "golden-kip848-uniform-orders",
        "golden-kip848-uniform-audit",
    }
