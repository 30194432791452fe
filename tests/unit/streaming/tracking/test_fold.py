"""A quiet run (:func:`streaming.tracking.fold.quiet`) is one the reducer only records: on
random streams of commit runs, end offsets and rebalances, wherever ``quiet`` says so the
reducer emits nothing but the group's status and leaves the state :func:`fold` leaves."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from streaming.tracking import GroupState, Observation, apply
from streaming.tracking.config import DEFAULT_CONFIG, TrackerConfig
from streaming.tracking.events import GroupStatus
from streaming.tracking.fold import fold, quiet
from streaming.tracking.model import CommitRun, EndOffsetsSnapshot
from streaming.tracking.reducer import _status
from tests.unit.streaming.tracking.factories import (
    CLUSTER,
    GROUP,
    OFFSETS_PARTITION,
    group_metadata,
    member,
    tps,
)

pytestmark = pytest.mark.unit

TOPIC = "orders"
PARTITIONS = 4
T0 = 1_790_000_000_000

#: name -> (config, the least quiet runs of a 600-observation stream). Without a hold every
#: commit of a partition with end offsets judges its status: none is quiet once they come.
CONFIGS = {
    "job": (TrackerConfig(commit_rows=True), 60),
    "defaults": (DEFAULT_CONFIG, 60),
    "no hold": (TrackerConfig(commit_rows=True, lag_status_hold_ms=0), 0),
}


class _Stream:
    """One group's records, made up as it goes: commit runs of its partitions, now and then
    a collector's end offsets or a rebalance."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.ts = T0
        self.offset = 0
        self.committed = dict.fromkeys(range(PARTITIONS), 1_000)
        self.end = dict.fromkeys(range(PARTITIONS), 2_000)
        self.generation = 0
        self.previous_end_ts: int | None = None

    def _at(self, source: str, payload: Any) -> Observation:
        self.offset += 1
        partition = OFFSETS_PARTITION if source == "offsets" else 0
        return Observation(source, partition, self.offset, self.ts, payload)  # type: ignore[arg-type]

    def next(self) -> Observation:
        rng = self.rng
        self.ts += rng.choice((200, 1_000, 5_000, 5_000, 5_000, 20_000, 70_000))
        roll = rng.random()
        if roll < 0.08:
            self.end = {p: e + rng.randint(0, 3_000) for p, e in self.end.items()}
            event = EndOffsetsSnapshot(
                cluster=CLUSTER,
                kafka_cluster_id="c1",
                snapshot_id=str(self.ts),
                snapshot_ts_ms=self.ts - 20,
                errors=(),
                group_ids=(GROUP,),
                end_offsets_ts_ms=self.ts,
                full=True,
                offsets=tuple((TOPIC, p, e) for p, e in self.end.items()),
            )
            self.previous_end_ts = self.ts
            return self._at("membership", event)
        if roll < 0.11:
            self.generation += 1
            gm = group_metadata(
                self.generation,
                [member("app-1", [TOPIC], tps(TOPIC, *range(PARTITIONS)))],
                current_state_ts_ms=self.ts,
            )
            return self._at("offsets", gm)
        partition = rng.randrange(PARTITIONS)
        history = []
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            step = rng.choice((0, 40, 100, 100, 150, 400, -30, 5_000))
            self.committed[partition] = max(0, self.committed[partition] + step)
            history.append((self.ts - rng.randint(0, 900), self.committed[partition]))
        history.sort()
        offset = history[-1][1]
        run = CommitRun(
            group_id=GROUP,
            topic=TOPIC,
            partition=partition,
            offset=offset,
            leader_epoch=0,
            commit_ts_ms=history[-1][0],
            count=len(history),
            history=tuple(history),
        )
        return self._at("offsets", run)


def _lag_fields(status: GroupStatus) -> dict[str, Any]:
    moving = ("total_lag_records", "max_lag_seconds", "lag_status", "event_ts_ms", "as_of_ts_ms")
    return {f: getattr(status, f) for f in moving}


def _encoded(state: GroupState) -> bytes:
    return state.encode()


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_a_quiet_run_is_one_the_reducer_only_records(name: str, seed: int) -> None:
    config, least = CONFIGS[name]
    stream = _Stream(seed)
    state = GroupState.new(CLUSTER, GROUP)
    quiet_runs = loud_runs = 0
    for _ in range(600):
        obs = stream.next()
        now = max(obs.timestamp_ms, state.last_record_ts_ms or 0)
        was_quiet = quiet(state, obs, config)
        folded = None
        if was_quiet:
            folded = state.copy()
            fold(folded, obs, config)
        before = _status(state, now, config)
        state, events = apply(state, [obs], now, config=config)
        if was_quiet:
            assert folded is not None
            assert [type(e) for e in events if type(e) is not GroupStatus] == [], (obs, events)
            assert _encoded(folded) == _encoded(state), obs
            # the status the fold does not emit differs from the last one only in what
            # moves with lag (the next step, within the export window, emits it)
            (status,) = events
            assert isinstance(status, GroupStatus)
            assert replace(status, **_lag_fields(status)) == replace(before, **_lag_fields(status))
            quiet_runs += 1
        elif type(obs.payload) is CommitRun:
            loud_runs += 1
    # the streams reach both sides: the predicate is exercised, not vacuous
    assert quiet_runs >= least, (quiet_runs, loud_runs)
    assert loud_runs >= 20, (quiet_runs, loud_runs)


def _run(offset: int, source_offset: int, ts: int) -> Observation:
    """A one-commit run of partition 0 read at ``source_offset``, at ``ts``."""
    payload = CommitRun(GROUP, TOPIC, 0, offset, 0, ts, 1, ((ts, offset),))
    return Observation("offsets", OFFSETS_PARTITION, source_offset, ts, payload)


def test_a_run_that_makes_a_row_is_not_quiet() -> None:
    """The partition's first commit, a rewind, and a duplicate of the source position."""
    config = CONFIGS["job"][0]
    state = GroupState.new(CLUSTER, GROUP)
    first = _run(500, 10, T0)
    assert not quiet(state, first, config)  # kept as "first"
    state, _ = apply(state, [first], T0, config=config)
    assert quiet(state, _run(600, 11, T0 + 1_000), config)
    assert not quiet(state, _run(400, 11, T0 + 1_000), config)  # a rewind
    assert not quiet(state, _run(600, 10, T0 + 1_000), config)  # a duplicate


def test_a_bucket_folds_a_known_groups_quiet_runs_and_steps_the_others() -> None:
    """:meth:`BucketStates.step` with the job's folder: a known group whose observations
    are all quiet gives no event and keeps the folded state; a run that is not quiet goes
    through the reducer with the quiet ones before it, as if none had been folded."""
    from streaming.spark.buckets import BucketStates
    from streaming.spark.stateful import load_folder, load_reducer

    config = CONFIGS["job"][0]
    reducer, folder = load_reducer(config), load_folder(config)
    folded, stepped = BucketStates({}), BucketStates({})
    first = [_run(500, 1, T0)]
    for bucket in (folded, stepped):
        assert bucket.step(GROUP, first, CLUSTER, reducer, folder)  # a new group: the reducer
    quiet_ones = [_run(600, 2, T0 + 1_000), _run(700, 3, T0 + 2_000)]
    assert folded.step(GROUP, quiet_ones, CLUSTER, reducer, folder) == ()
    stepped.step(GROUP, quiet_ones, CLUSTER, reducer)
    rewind = [_run(300, 4, T0 + 3_000)]
    rows = folded.step(GROUP, rewind, CLUSTER, reducer, folder)
    assert [r.reason for r in rows if type(r).__name__ == "OffsetCommitRow"] == ["rewind"]
    without = stepped.step(GROUP, rewind, CLUSTER, reducer)
    assert list(rows) == list(without)
    assert folded.states == stepped.states
    assert folded.seen == stepped.seen
