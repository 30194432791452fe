"""A quiet run (:func:`streaming.tracking.fold.quiet`) is one the reducer only records: on
random streams of commit runs, end offsets and rebalances, wherever ``quiet`` says so the
reducer emits nothing but the group's status and leaves the state :func:`fold` leaves."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from assign_core.model import TopicPartition
from streaming.tracking import GroupState, Observation, apply
from streaming.tracking.config import DEFAULT_CONFIG, TrackerConfig
from streaming.tracking.events import GroupStatus
from streaming.tracking.fold import fold, fold_all, fold_encoded, quiet
from streaming.tracking.forget import last_activity_ms
from streaming.tracking.model import CommitRun, CommitRuns, EndOffsetsSnapshot
from streaming.tracking.reducer import _status
from streaming.tracking.state import ConsumerGroupState, PendingRebalance
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
    """:meth:`BucketStates.fold` with the job's folder: a known group whose runs are all
    quiet gives no event and keeps the folded state; a run that is not quiet goes through
    the reducer, as if none had been folded."""
    from streaming.spark.buckets import BucketStates
    from streaming.spark.stateful import load_folder, load_reducer

    config = CONFIGS["job"][0]
    reducer, folder = load_reducer(config), load_folder(config)
    folded, stepped = BucketStates({}), BucketStates({})
    first = [_run(500, 1, T0)]
    assert not folded.fold(GROUP, [_columns(first)], folder)  # a new group: the reducer
    for bucket in (folded, stepped):
        assert bucket.step(GROUP, first, CLUSTER, reducer)
    quiet_ones = [_run(600, 2, T0 + 1_000), _run(700, 3, T0 + 2_000)]
    assert folded.fold(GROUP, [_columns(quiet_ones)], folder)
    stepped.step(GROUP, quiet_ones, CLUSTER, reducer)
    rewind = [_run(300, 4, T0 + 3_000)]
    assert not folded.fold(GROUP, [_columns(rewind)], folder)
    rows = folded.step(GROUP, rewind, CLUSTER, reducer)
    assert [r.reason for r in rows if type(r).__name__ == "OffsetCommitRow"] == ["rewind"]
    without = stepped.step(GROUP, rewind, CLUSTER, reducer)
    assert list(rows) == list(without)
    assert folded.states == stepped.states
    assert folded.seen == stepped.seen


def _columns(observations: list[Observation]) -> CommitRuns:
    """The runs of ``observations`` (one source partition) as the decode stage's columns."""
    runs = [o.payload for o in observations]
    assert all(isinstance(r, CommitRun) for r in runs)
    return CommitRuns(
        GROUP,
        observations[0].partition,
        [r.topic for r in runs],
        [r.partition for r in runs],
        [r.offset for r in runs],
        [r.leader_epoch for r in runs],
        [r.commit_ts_ms for r in runs],
        [r.count for r in runs],
        [[t for t, _ in r.history] for r in runs],
        [[o for _, o in r.history] for r in runs],
        [r.topic_id for r in runs],
        [r.metadata for r in runs],
        [r.expire_ts_ms for r in runs],
        [o.offset for o in observations],
        [o.timestamp_ms for o in observations],
    )


def test_the_columns_of_runs_give_back_their_observations() -> None:
    stream = _Stream(7)
    observations = [o for o in (stream.next() for _ in range(200)) if type(o.payload) is CommitRun]
    assert len(observations) > 100
    assert _columns(observations).observations() == observations


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_fold_of_encoded_states_is_the_fold_of_their_objects(name: str, seed: int) -> None:
    """:func:`fold_encoded` on random streams, a run at a time and a micro-batch of runs at a
    time: it folds exactly what :func:`fold_all` folds (a group whose runs are all quiet),
    into the same bytes, with the group's last sighting."""
    config, _least = CONFIGS[name]
    stream = _Stream(100 + seed)
    state = GroupState.new(CLUSTER, GROUP)
    folded_batches = stepped_batches = 0
    for _ in range(200):
        size = stream.rng.choice((1, 1, 2, 3, 5))
        batch = [stream.next() for _ in range(size)]
        blob = state.encode()
        expected = fold_all(state, batch, config)
        runs = [o for o in batch if type(o.payload) is CommitRun]
        if len(runs) == len(batch) and state.commits:
            # the decode stage may hand a group's runs in more than one row
            rows = [_columns(runs[:2])] + ([_columns(runs[2:])] if size > 2 else [])
            got = fold_encoded(blob, rows, config)
            assert (got is None) == (expected is None), batch
            if expected is not None:
                assert got == (expected.encode(), last_activity_ms(expected))
                folded_batches += 1
            else:
                stepped_batches += 1
        now = max([o.timestamp_ms for o in batch] + [state.last_record_ts_ms or 0])
        state, _ = apply(state, batch, now, config=config)
    assert stepped_batches >= 10, (folded_batches, stepped_batches)
    if _least:
        assert folded_batches >= 10, (folded_batches, stepped_batches)


def test_a_kip848_group_folds_only_with_no_rebalance_waiting_and_its_topic_ids_known() -> None:
    config = CONFIGS["job"][0]
    state = GroupState.new(CLUSTER, GROUP)
    state, _ = apply(state, [_run(500, 1, T0)], T0, config=config)
    run = _run(600, 2, T0 + 1_000)
    topic_id = "b3JkZXJzLXRvcGljLWlkAA"
    known = replace(run, payload=replace(run.payload, topic_id=topic_id))
    cases = {
        "no rebalance waiting, the id named so": (
            ConsumerGroupState(topic_names={topic_id: TOPIC}),
            True,
        ),
        "the id names another topic": (ConsumerGroupState(topic_names={topic_id: "other"}), False),
        "a rebalance waiting": (
            ConsumerGroupState(topic_names={topic_id: TOPIC}, pending=PendingRebalance(3, T0, {})),
            False,
        ),
    }
    for case, (consumer, folds) in cases.items():
        kip848 = state.copy()
        kip848.consumer = consumer
        assert quiet(kip848, known, config) is folds, case
        got = fold_encoded(kip848.encode(), [_columns([known])], config)
        assert (got is not None) is folds, case
        if folds:
            expected = fold_all(kip848, [known], config)
            assert expected is not None
            assert got == (expected.encode(), last_activity_ms(expected))


def test_bytes_the_fold_cannot_read_go_to_the_reducer() -> None:
    """An older checkpoint's JSON state: the reducer reads it (and the bucket then keeps
    msgpack); the fold declines rather than guess."""
    config = CONFIGS["job"][0]
    state, _ = apply(GroupState.new(CLUSTER, GROUP), [_run(500, 1, T0)], T0, config=config)
    runs = [_columns([_run(600, 2, T0 + 1_000)])]
    assert fold_encoded(state.encode(), runs, config) is not None
    assert fold_encoded(state.to_json().encode(), runs, config) is None


def _known_group(config: TrackerConfig) -> GroupState:
    """A group whose partitions 0 and 1 committed once, at ``T0``, read at source offsets 1
    and 2."""
    state = GroupState.new(CLUSTER, GROUP)
    first = [
        _run(500, 1, T0),
        replace(_run(500, 2, T0), payload=replace(_run(500, 2, T0).payload, partition=1)),
    ]
    state, _ = apply(state, first, T0, config=config)
    return state


def _case(name: str) -> tuple[GroupState, Observation]:
    """A state and a run of partition 0 that one of ``quiet``'s rules judges."""
    config = CONFIGS["job"][0]
    state = _known_group(config)
    run = _run(600, 3, T0 + 1_000)
    if name == "quiet":
        pass
    elif name == "a duplicate":
        run = _run(600, 2, T0 + 1_000)
    elif name == "a rewind":
        run = _run(400, 3, T0 + 1_000)
    elif name == "a partition never committed":
        run = replace(run, payload=replace(run.payload, partition=2))
    elif name == "the status named by the collector":
        state.collector = replace(state.collector, state="Stable", last_ts_ms=T0 + 500)
    elif name == "the status named by the records, the collector's older":
        state.collector = replace(state.collector, state="Stable", last_ts_ms=T0 - 500)
    elif name == "lag due on the partition":
        state.end_offsets = {TopicPartition(TOPIC, 0): ((T0, 900),)}
    elif name == "a rollup due, lag on another partition":
        state.end_offsets = {TopicPartition(TOPIC, 1): ((T0, 900),)}
    elif name == "the rollup of the window done, lag on another partition":
        state.end_offsets = {TopicPartition(TOPIC, 1): ((T0, 900),)}
        state.group_lag_ts_ms = T0 + 1_000
    else:
        raise AssertionError(name)
    return state, run


CASES = {
    "quiet": True,
    "a duplicate": False,
    "a rewind": False,
    "a partition never committed": False,
    "the status named by the collector": False,
    "the status named by the records, the collector's older": True,
    "lag due on the partition": False,
    "a rollup due, lag on another partition": False,
    "the rollup of the window done, lag on another partition": True,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_rule_judges_the_encoded_state_as_the_objects(name: str) -> None:
    config = CONFIGS["job"][0]
    state, run = _case(name)
    assert quiet(state, run, config) is CASES[name]
    got = fold_encoded(state.encode(), [_columns([run])], config)
    assert (got is not None) is CASES[name]
    if got is not None:
        expected = fold_all(state, [run], config)
        assert expected is not None
        assert got == (expected.encode(), last_activity_ms(expected))
