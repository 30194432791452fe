"""Chunked ``topics`` and ``end_offsets`` events against unsplit ones: the same polls, published
by the collector's :class:`~streaming.collector.changes.Changes` as one record each (the
default ``chunk_bytes``) or in chunks (a small one), encoded, decoded by the tracker's reader,
handed to the groups each record names and applied with the same ``__consumer_offsets``
commits, leave every group with the same state and the same rows."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from assign_core.model import TopicPartition
from streaming.collector import AdminAnswers
from streaming.collector.changes import Changes
from streaming.tracking import GroupState, Observation
from streaming.tracking.events import PartitionLagRow
from streaming.tracking.membership import parse_membership_json
from streaming.tracking.model import EndOffsetsSnapshot, routing_keys
from tests.unit.streaming.tracking.factories import CLUSTER, OFFSETS_PARTITION, Tracker, commit

pytestmark = pytest.mark.unit

S = 1000
T0 = 1_795_238_700_000
TOPICS = [f"topic-{i:03d}" for i in range(100)]
PARTITIONS = 8
WIDE, IDLE = "g-wide", "g-idle"
CHUNK_BYTES = 4096  # a few topics a chunk
BROKERS = [
    {"broker_id": b, "host": f"b{b}", "port": 9092, "rack": f"r{b}", "is_fenced": False}
    for b in (1, 2, 3)
]


def consumed() -> dict[str, list[tuple[str, int]]]:
    """Group -> its partitions: ``g-007`` all of ``topic-007``'s, ``g-wide`` partition 0 and
    1 of every topic (so it spans every chunk)."""
    out = {f"g-{i:03d}": [(t, p) for p in range(PARTITIONS)] for i, t in enumerate(TOPICS)}
    out[WIDE] = [(t, p) for t in TOPICS for p in (0, 1)]
    return out


def end_offset(topic: str, partition: int, step: int) -> int:
    """End offsets that move at some steps only, differently per topic (some topics of one
    chunk move while those of another stay)."""
    i = TOPICS.index(topic)
    moves = sum(1 for s in range(1, step + 1) if (i + s) % 2 == 0 or (s == 4 and i % 3 == 0))
    return 1_000_000_000 + 10_000 * i + 100 * partition + 37 * moves


def poll(step: int) -> AdminAnswers:
    """The cluster at poll ``step`` (every 30 s): at step 3 topic-021's leader moved."""
    ts = T0 + step * 30 * S
    metas = []
    for i, t in enumerate(TOPICS):
        leader = 3 if (step >= 3 and t == "topic-021") else 1 + i % 3
        metas.append(
            {
                "name": t,
                "error_code": 0,
                "is_internal": False,
                "topic_id": None,
                "partitions": [
                    {
                        "partition_index": p,
                        "leader_id": leader,
                        "replica_nodes": [leader, 1 + leader % 3],
                        "isr_nodes": [leader, 1 + leader % 3],
                    }
                    for p in range(PARTITIONS)
                ],
            }
        )
    groups = consumed()
    return AdminAnswers(
        snapshot_ts_ms=ts,
        cluster={"cluster_id": "c1", "controller_id": 1, "brokers": BROKERS},
        groups=[
            {"group_id": g, "group_state": "Stable", "group_type": "consumer"}
            for g in [*groups, IDLE]
        ],
        committed={g: {tp: committed(tp, step) for tp in tps} for g, tps in groups.items()},
        topics=metas,
        end_offsets={(t, p): end_offset(t, p, step) for t in TOPICS for p in range(PARTITIONS)},
        end_offsets_ts_ms=ts + 20,
    )


def committed(tp: tuple[str, int], step: int) -> tuple[int, str, int]:
    return (end_offset(*tp, max(step - 1, 0)) - 5, "", 0)


def run(chunk_bytes: int) -> tuple[dict[str, Tracker], dict[str, int]]:
    """Every group's tracker after six polls (a full end offsets event at the first and the
    last), and how many records of each kind the polls published (``moves``: how many
    partitions came as a change)."""
    changes = Changes(
        cluster=CLUSTER,
        heartbeat_interval_ms=60 * S,
        full_interval_ms=150 * S,
        poll_event_interval_ms=0,
        chunk_bytes=chunk_bytes,
    )
    trackers = {g: Tracker(state=GroupState.new(CLUSTER, g)) for g in [*consumed(), IDLE]}
    counts: dict[str, int] = {}
    offset = {"offsets": 0, "membership": 0}

    def observation(source: str, ts: int, payload: Any) -> Observation:
        partition = OFFSETS_PARTITION if source == "offsets" else 0
        o = Observation(source, partition, offset[source], ts, payload)  # type: ignore[arg-type]
        offset[source] += 1
        return o

    for step in range(6):
        answers = poll(step)
        batches: dict[str, list[Observation]] = {g: [] for g in trackers}
        for g, tps in answers.committed.items():  # the commits before the poll, from the log
            for (t, p), (off, _, _) in sorted(tps.items()):
                ts = answers.snapshot_ts_ms - 2 * S
                batches[g].append(observation("offsets", ts, commit(t, p, off, ts=ts, group=g)))
        for event in changes.events(answers, snapshot_id=f"{step}"):
            _key, value = event.encode()
            payload = parse_membership_json(value)
            kind = "tombstone" if value is None else str(event.value["event_type"])  # type: ignore[index]
            counts[kind] = counts.get(kind, 0) + 1
            if isinstance(payload, EndOffsetsSnapshot):
                counts["moves"] = counts.get("moves", 0) + len(payload.moves)
            targets = routing_keys(payload)  # type: ignore[arg-type]
            if not targets and hasattr(payload, "group_id"):
                targets = (payload.group_id,)
            o = observation("membership", answers.snapshot_ts_ms + 5, payload)
            for g in targets:
                batches[g].append(o)
        for g, batch in batches.items():
            trackers[g].feed(batch, now_ms=answers.snapshot_ts_ms + S)
    return trackers, counts


def _rows(t: Tracker) -> list[str]:
    return sorted(repr(e) for e in t.events)


def _state(t: Tracker) -> GroupState:
    return dataclasses.replace(t.state, positions={})  # record offsets differ: more records


def test_chunked_events_give_every_group_what_one_record_gives() -> None:
    whole, whole_counts = run(64 << 20)
    split, split_counts = run(CHUNK_BYTES)
    # one record each at every publishing, against several chunks
    assert whole_counts["topics"] == 2 and whole_counts["end_offsets"] == 6
    assert split_counts["topics"] > 2 * 4 and split_counts["end_offsets"] > 6 * 2
    assert split_counts["tombstone"] > 0  # the partial publishings need fewer chunks
    for g in whole:
        assert _state(split[g]) == _state(whole[g]), g
        assert _rows(split[g]) == _rows(whole[g]), g
    # not trivially: lag measured for every committed partition at each end offsets poll
    wide_lag = [e for e in whole[WIDE].events if isinstance(e, PartitionLagRow)]
    assert {(e.topic, e.partition) for e in wide_lag} == set(consumed()[WIDE])
    assert len({e.measured_ts_ms for e in wide_lag}) == 6
    assert all(e.lag_records is not None and e.lag_records >= 5 for e in wide_lag)
    assert set(whole[IDLE].state.topics) == set()


def test_a_chunk_carries_forward_only_the_partitions_of_its_covered_topics() -> None:
    """A partial publishing in chunks: each chunk covers its topics (the tracker carries
    forward the partitions of those only, not one another chunk moved), each consumed topic
    is covered by one chunk, and the group spanning them gets every chunk."""
    answers = poll(1)
    changes = Changes(
        cluster=CLUSTER,
        heartbeat_interval_ms=60 * S,
        full_interval_ms=600 * S,
        chunk_bytes=CHUNK_BYTES,
    )
    changes.events(poll(0), snapshot_id="0")
    chunks = [
        parse_membership_json(e.encode()[1])
        for e in changes.events(answers, snapshot_id="1")
        if e.value is not None and e.value["event_type"] == "end_offsets"
    ]
    assert len(chunks) > 1
    covered: list[str] = []
    for chunk in chunks:
        assert isinstance(chunk, EndOffsetsSnapshot) and chunk.covered_topics is not None
        assert not chunk.full and WIDE in chunk.group_ids
        assert {t for t, _, _ in chunk.offsets} <= chunk.covered_topics
        covered += sorted(chunk.covered_topics)
    assert covered == TOPICS  # each topic covered once


def test_changes_leave_every_group_what_end_offsets_give(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same polls with moved partitions given as changes (from the third poll on) and
    given as end offsets: every group ends with the same state and the same rows."""
    from streaming.collector import changes as changes_module

    with_changes, counts = run(CHUNK_BYTES)
    assert counts["moves"] > 0
    monkeypatch.setattr(changes_module, "STEADY_EVENTS", 1_000)  # never steady: end offsets
    without, plain_counts = run(CHUNK_BYTES)
    assert plain_counts.get("moves", 0) == 0
    for g in without:
        assert _state(with_changes[g]) == _state(without[g]), g
        assert _rows(with_changes[g]) == _rows(without[g]), g


def _end_offsets(ts: int, offsets: Any, *, moves: Any = (), previous: int | None) -> Any:
    return EndOffsetsSnapshot(
        cluster=CLUSTER,
        kafka_cluster_id="c1",
        snapshot_id=str(ts),
        snapshot_ts_ms=ts - 20,
        errors=(),
        group_ids=("g",),
        end_offsets_ts_ms=ts,
        full=previous is None,
        offsets=tuple(offsets),
        moves=tuple(moves),
        previous_end_offsets_ts_ms=previous,
    )


def test_a_group_that_missed_the_previous_event_waits_for_a_full_one() -> None:
    """A change adds to the end offset as of the previous event; a group whose newest end
    offset is older (it missed that event) takes neither the change nor a repetition: the
    partition's end offset ages until a full event gives it."""
    tracker = Tracker(state=GroupState.new(CLUSTER, "g"))
    ts = [T0 + i * 30 * S for i in range(5)]
    n = iter(range(100))

    def feed(payload: Any, at: int) -> None:
        source = "offsets" if not isinstance(payload, EndOffsetsSnapshot) else "membership"
        tracker.feed([Observation(source, 0, next(n), at, payload)], now_ms=at)

    def newest() -> tuple[int, int]:
        return tracker.state.end_offsets[TopicPartition("t", 0)][-1]

    feed(commit("t", 0, 100, ts=ts[0] - S, group="g"), ts[0] - S)
    feed(_end_offsets(ts[0], [("t", 0, 150)], previous=None), ts[0])
    feed(_end_offsets(ts[1], [], moves=[("t", 0, 10)], previous=ts[0]), ts[1])
    assert newest() == (ts[1], 160)
    # the event at ts[2] never reached this group
    feed(_end_offsets(ts[3], [], moves=[("t", 0, 5)], previous=ts[2]), ts[3])
    assert newest() == (ts[1], 160)
    feed(_end_offsets(ts[4], [("t", 0, 171)], previous=None), ts[4])
    assert newest() == (ts[4], 171)
