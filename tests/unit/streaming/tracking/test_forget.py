"""The forgetting rules (:mod:`streaming.tracking.forget`, F1-F4) as a numbered table: a group
with a generation, committed offsets and a collector sighting (what made its state permanent
before), then one more batch of its bucket; is the group still kept, and which
``GroupDeleted`` said so. Run through the bucket the stateful step keeps
(:class:`streaming.spark.buckets.BucketStates`), the real reducer and record time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from streaming.codec.model import GroupKey, Tombstone
from streaming.spark.buckets import BucketStates
from streaming.spark.stateful import load_reducer
from streaming.tracking import GroupState
from streaming.tracking.config import TrackerConfig
from streaming.tracking.events import GroupDeleted
from streaming.tracking.forget import FORGOTTEN, forgotten, is_idle, last_activity_ms
from streaming.tracking.model import Observation
from tests.unit.streaming.tracking.factories import (
    CLUSTER,
    GROUP,
    Log,
    cg_epoch,
    commit,
    group_snapshot,
    group_tombstone,
    member,
    tps,
)

pytestmark = pytest.mark.unit

S = 1_000
DAY = 86_400 * S
WEEK = 7 * DAY
T = 1_700_000_000_000
OTHER = "other-group"


def _history(log: Log) -> None:
    """The group as it stands before the batch under test: generation 1, committed
    offsets, listed by a collector snapshot (all at T)."""
    log.gm(1, [member("m-1", ["t"], tps("t", 0, 1))], ts=T)
    log.commits(tps("t", 0, 1), ts=T + S)
    log.snap(group_snapshot(T + 2 * S, "Stable", ["m-1"], topics=["t"]))


def _other(log: Log, ts: int) -> None:
    """A record of another group of the bucket: the bucket's batch time moves to ``ts``."""
    log.rec(commit("u", 0, 1, ts=ts, group=OTHER), ts)


@dataclass(frozen=True)
class Case:
    number: int
    why: str
    batch: Callable[[Log], None]
    kept: bool
    reason: str | None  # the GroupDeleted of the batch, if any
    idle_ms: int = WEEK


def _tombstone(log: Log) -> None:
    log.rec(group_tombstone(), T + DAY)


def _recreated_in_the_batch(log: Log) -> None:
    log.rec(group_tombstone(), T + DAY)
    log.gm(1, [member("m-9", ["t"], tps("t", 0))], ts=T + DAY + S)


def _converted(log: Log) -> None:
    log.rec(group_tombstone(), T + DAY)
    log.rec(cg_epoch(1), T + DAY + S)


def _snapshot_then_idle(log: Log) -> None:
    log.snap(group_snapshot(T + 5 * DAY, "Empty", []))
    _other(log, T + 5 * DAY + WEEK)


CASES = [
    # F1: the group tombstone (DeleteGroups, expiry) drops the state, offsets and the
    # collector's sighting with it (is_empty() stayed false before, so it was kept forever)
    Case(1, "classic tombstone", _tombstone, kept=False, reason="deleted"),
    # F1: a group of the same id made after the tombstone, in the same batch, is a new group
    Case(2, "tombstone, then a new group", _recreated_in_the_batch, kept=True, reason="deleted"),
    # F2: a conversion to the consumer protocol keeps the group
    Case(3, "converted", _converted, kept=True, reason="converted"),
    # F3: a week of record time without a record or a snapshot listing it
    Case(4, "idle a week", lambda log: _other(log, T + 2 * S + WEEK), kept=False, reason=FORGOTTEN),
    # F4: one millisecond short of the week
    Case(5, "idle a week less 1 ms", lambda log: _other(log, T + 2 * S + WEEK - 1), True, None),
    # F4: a snapshot listing the group restarts its week (F3 a week after that snapshot)
    Case(6, "snapshot, then idle", _snapshot_then_idle, kept=False, reason=FORGOTTEN),
    Case(
        7,
        "snapshot, then less than a week",
        lambda log: (log.snap(group_snapshot(T + 5 * DAY, "Empty", [])), _other(log, T + 8 * DAY)),
        kept=True,
        reason=None,
    ),
    # F3 off (retention 0): never forgotten
    Case(8, "idle a year, retention 0", lambda log: _other(log, T + 365 * DAY), True, None, 0),
    # F3 is the bucket's record time, not the group's: its own old record does not keep it
    Case(
        9,
        "a late record of its own, older than the week",
        lambda log: (log.commits(tps("t", 0), ts=T + 3 * S), _other(log, T + 3 * S + WEEK)),
        kept=False,
        reason=FORGOTTEN,
    ),
]


def _bucket_after(case: Case) -> tuple[BucketStates, list[object]]:
    reducer = load_reducer(TrackerConfig(group_idle_ms=case.idle_ms))
    log = Log()
    bucket = BucketStates({})
    _history(log)
    bucket.step(GROUP, log.take(), CLUSTER, reducer)
    assert GROUP in bucket.states  # what stayed forever before
    case.batch(log)
    batch = log.take()
    by_group: dict[str, list[Observation]] = {}
    for o in batch:
        by_group.setdefault(getattr(o.payload, "group_id", GROUP), []).append(o)
    events: list[object] = []
    for group_id, observations in by_group.items():
        events.extend(bucket.step(group_id, observations, CLUSTER, reducer))
    now_ms = max(o.logical_ts_ms for o in batch)
    events.extend(bucket.forget_idle(now_ms, case.idle_ms))
    # the bucket as the state store gives it back next batch
    return BucketStates.decode(bucket.encode()), events


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.number}-{c.why}")
def test_the_forgetting_rules(case: Case) -> None:
    bucket, events = _bucket_after(case)
    assert (GROUP in bucket.states) == case.kept, case.why
    assert (GROUP in bucket.seen) == case.kept
    deleted = [e for e in events if isinstance(e, GroupDeleted) and e.group_id == GROUP]
    assert [e.reason for e in deleted] == ([] if case.reason is None else [case.reason])
    if case.kept and case.reason == "deleted":  # case 2: only what came after the tombstone
        state = GroupState.decode(bucket.states[GROUP])
        assert state.commits == {} and state.collector.last_ts_ms is None
        assert state.classic is not None and state.classic.generation == 1


def test_a_kip848_group_tombstone_drops_the_state() -> None:
    reducer = load_reducer()
    log = Log()
    log.rec(cg_epoch(1), T)
    log.commits(tps("t", 0), ts=T + S)
    bucket = BucketStates({})
    bucket.step(GROUP, log.take(), CLUSTER, reducer)
    assert GROUP in bucket.states
    log.rec(Tombstone(3, GroupKey(GROUP)), T + DAY)
    (deleted,) = [
        e for e in bucket.step(GROUP, log.take(), CLUSTER, reducer) if isinstance(e, GroupDeleted)
    ]
    assert (deleted.group_protocol, deleted.reason) == ("consumer", "deleted")
    assert bucket.states == {} and bucket.seen == {}


def test_the_forgotten_event_names_the_group_and_is_the_same_on_a_replay() -> None:
    state = GroupState.new(CLUSTER, GROUP)
    state.last_record_ts_ms, state.collector.last_ts_ms = T, T + 5 * S
    assert last_activity_ms(state) == T + 5 * S
    first, again = forgotten(state, T + WEEK + 5 * S), forgotten(state, T + WEEK + 5 * S)
    assert first == again and first.reason == FORGOTTEN
    assert (first.cluster, first.group_id, first.event_ts_ms) == (CLUSTER, GROUP, T + WEEK + 5 * S)
    assert not is_idle(None, T, 1)  # never seen: nothing to time


def test_a_bucket_written_before_the_index_starts_its_groups_clocks() -> None:
    state = GroupState.new(CLUSTER, GROUP)
    state.last_record_ts_ms = T
    old = BucketStates({GROUP: state.encode()})  # as written before: no sightings
    assert BucketStates.decode(old.encode()).seen == {}
    bucket = BucketStates.decode(old.encode())
    assert bucket.forget_idle(T + 2 * WEEK, WEEK) == []  # its clock starts now
    assert bucket.seen == {GROUP: T + 2 * WEEK} and bucket.changed
    (gone,) = bucket.forget_idle(T + 3 * WEEK, WEEK)
    assert gone.group_id == GROUP and bucket.states == {}
