"""``apply``: ordering, idempotency, lagging snapshots, dispatch of odd records, purity."""

from __future__ import annotations

import random

import pytest

from streaming.codec.model import ShareGroupMetadata, Unknown
from streaming.tracking import GroupState, Observation, ObservationError, apply
from streaming.tracking.events import GroupStatus, RebalanceEvent, TrackerEvent
from streaming.tracking.model import UnsupportedEvent
from streaming.tracking.reducer import ordered
from tests.unit.streaming.tracking.factories import (
    CLUSTER,
    GROUP,
    Log,
    Tracker,
    assign,
    commit,
    group_metadata,
    group_snapshot,
    member,
    topics_snapshot,
    tps,
)

pytestmark = pytest.mark.unit

S = 1000


def scenario() -> list[Observation]:
    """Three generations with commits and collector snapshots in between."""
    log = Log()
    ids: list[str] = []
    for gen, new in enumerate(("A", "B", "C"), start=1):
        ids.append(new)
        actual = assign("range", [(m, ["t"]) for m in ids], {"t": 6})
        log.snap(group_snapshot(gen * 10 * S - 2 * S, "PreparingRebalance", ids[:-1]))
        log.gm(gen, [member(m, ["t"], actual[m]) for m in ids], ts=gen * 10 * S)
        for m in ids:
            log.commits(actual[m], ts=gen * 10 * S + 3 * S)
        log.snap(group_snapshot(gen * 10 * S + 4 * S, "Stable", ids, topics=["t"]))
        log.snap(topics_snapshot(gen * 10 * S + 4 * S, {"t": [gen * 100] * 6}))
    return log.take()


def non_status(events: list[TrackerEvent]) -> list[TrackerEvent]:
    return [e for e in events if not isinstance(e, GroupStatus)]


def test_order_within_a_batch_does_not_matter() -> None:
    obs = scenario()
    _s1, expected = apply(GroupState.new(CLUSTER, GROUP), obs, 10**6)
    shuffled = list(obs)
    random.Random(7).shuffle(shuffled)
    _s2, got = apply(GroupState.new(CLUSTER, GROUP), shuffled, 10**6)
    assert got == expected
    assert sum(isinstance(e, RebalanceEvent) for e in got) == 3


def test_snapshots_merge_by_the_time_they_describe() -> None:
    obs = scenario()
    merged = ordered(obs)
    times = [o.logical_ts_ms for o in merged]
    assert times == sorted(times)
    # the snapshot taken 2 s before generation 2 gives that rebalance's start
    _s, events = apply(GroupState.new(CLUSTER, GROUP), obs, 10**6)
    gen2 = [e for e in events if isinstance(e, RebalanceEvent)][1]
    assert (gen2.started_ts_ms, gen2.duration_ms) == (18 * S, 2 * S)


def test_reapplying_records_emits_nothing() -> None:
    obs = scenario()
    state, _first = apply(GroupState.new(CLUSTER, GROUP), obs, 10**6)
    again, second = apply(state, obs, 10**6)
    assert second == []
    assert again.counters["duplicate"] == len(obs)


def test_overlapping_batches_emit_each_event_once() -> None:
    obs = scenario()
    _s, whole = apply(GroupState.new(CLUSTER, GROUP), obs, 10**6)
    merged = ordered(obs)
    state = GroupState.new(CLUSTER, GROUP)
    events: list[TrackerEvent] = []
    for start in range(0, len(merged), 4):
        state, batch = apply(state, merged[max(0, start - 3) : start + 4], 10**6)
        events.extend(batch)
    assert non_status(events) == non_status(list(whole))
    ids = [e.event_id for e in non_status(events)]
    assert len(ids) == len(set(ids))


def test_a_lagging_snapshot_does_not_roll_the_group_back() -> None:
    log, t = Log(), Tracker()
    log.gm(1, [member("A", ["t"], tps("t", 0, 1))], ts=10 * S)
    actual = assign("range", [("A", ["t"]), ("B", ["t"])], {"t": 2})
    log.gm(2, [member(m, ["t"], actual[m]) for m in "AB"], ts=20 * S)
    t.feed(log.take())
    # read later, taken before generation 2: lists only A
    log.snap(group_snapshot(15 * S, "Stable", ["A"]))
    t.feed(log.take())
    assert t.state.classic is not None and len(t.state.classic.members) == 2
    status = t.of(GroupStatus)[-1]
    assert (status.state_source, status.member_count, status.generation) == ("records", 2, 2)
    # a newer snapshot is believed for the state
    log.snap(group_snapshot(25 * S, "PreparingRebalance", ["A", "B"]))
    t.feed(log.take())
    assert t.of(GroupStatus)[-1].state == "PreparingRebalance"


def test_a_record_of_another_group_is_an_adapter_bug() -> None:
    o = Observation("offsets", 0, 0, 1, commit("t", 0, 1, ts=1, group="other"))
    with pytest.raises(ObservationError):
        apply(GroupState.new(CLUSTER, GROUP), [o], 1)


def test_envelope_is_validated() -> None:
    with pytest.raises(ObservationError):
        Observation("offsets", 0, 0, 1, group_snapshot(1, "Stable"))
    with pytest.raises(ObservationError):
        Observation("membership", 0, 0, 1, commit("t", 0, 1, ts=1))
    with pytest.raises(ObservationError):
        Observation("elsewhere", 0, 0, 1, commit("t", 0, 1, ts=1))  # type: ignore[arg-type]


def test_unknown_share_and_unsupported_records_are_counted() -> None:
    obs = [
        Observation("offsets", 0, 0, 1, Unknown(99, None, b"k", None, "unknown record type 99")),
        Observation("offsets", 0, 1, 2, ShareGroupMetadata(GROUP, 0, 3, 0)),
        Observation("membership", 0, 0, 3, UnsupportedEvent(2, "group", "schema_version 2")),
    ]
    state, events = apply(GroupState.new(CLUSTER, GROUP), obs, 5)
    assert events == []
    assert state.counters == {
        "unknown_record": 1,
        "unsupported_group_type": 1,
        "unsupported_event": 1,
    }
    assert state.kind == "share"


def test_apply_does_not_modify_its_input() -> None:
    obs = scenario()
    state, _ = apply(GroupState.new(CLUSTER, GROUP), obs[:10], 10**6)
    before = state.to_dict()
    apply(state, obs[10:], 10**6)
    assert state.to_dict() == before


def test_status_is_emitted_once_per_changing_call() -> None:
    t = Tracker()
    log = Log()
    log.gm(1, [member("A", ["t"], tps("t", 0))], ts=10 * S)
    log.rec(commit("t", 0, 5, ts=11 * S), 11 * S)
    events = t.feed(log.take())
    assert sum(isinstance(e, GroupStatus) for e in events) == 1
    assert isinstance(events[-1], GroupStatus)
    assert t.feed([]) == []


def test_empty_group_state_is_recognised() -> None:
    state = GroupState.new(CLUSTER, GROUP)
    assert state.is_empty()
    state, _ = apply(state, [Observation("offsets", 0, 0, 1, group_metadata(0, []))], 1)
    assert not state.is_empty()


# -- freshness: lag against end offsets older than the bound is unknown ----------------------


def _stale_end_offsets(max_age_ms: int, commit_after_ms: int) -> Tracker:
    """A group committing partition t-0: one end-offset snapshot at 10 s (end offset 500),
    then commits at 10 s + ``commit_after_ms`` (offsets past 500: the producer went on, the
    collector did not report it)."""
    from streaming.tracking.config import TrackerConfig

    tracker = Tracker(config=TrackerConfig(end_offsets_max_age_ms=max_age_ms))
    log = Log()
    log.gm(1, [member("A", ["t"], tps("t", 0))], ts=5 * S)
    log.commits(tps("t", 0), ts=9 * S, offset=400)
    log.snap(topics_snapshot(10 * S, {"t": [500]}))
    tracker.feed(log.take())
    log.commits(tps("t", 0), ts=10 * S + commit_after_ms, offset=700)
    tracker.feed(log.take())
    return tracker


def test_lag_against_fresh_end_offsets_is_measured() -> None:
    from streaming.tracking.events import PartitionLagRow

    tracker = _stale_end_offsets(max_age_ms=60 * S, commit_after_ms=60 * S)  # at the bound
    row = tracker.of(PartitionLagRow)[-1]
    assert (row.trigger, row.lag_records, row.lag_seconds) == ("commit", 0, 0.0)
    assert (row.lag_seconds_method, row.status) == ("caught_up", "OK")
    status = tracker.of(GroupStatus)[-1]
    assert (status.total_lag_records, status.lag_status) == (0, "OK")


def test_lag_against_end_offsets_older_than_the_bound_is_unknown() -> None:
    from streaming.tracking.events import PartitionLagRow

    tracker = _stale_end_offsets(max_age_ms=60 * S, commit_after_ms=60 * S + 1)
    row = tracker.of(PartitionLagRow)[-1]
    assert row.trigger == "commit" and row.committed_offset == 700
    # never 0 / OK: the end offset (500, at 10 s) says nothing about offset 700 at 70 s
    assert (row.lag_records, row.lag_seconds, row.lag_seconds_method) == (None, None, "unknown")
    assert (row.status, row.status_rule) == (None, None)
    assert (row.end_offset, row.end_offset_ts_ms) == (500, 10 * S)  # what was known, and when
    status = tracker.of(GroupStatus)[-1]
    assert status.total_lag_records is None and status.max_lag_seconds is None
    assert status.lag_status is None


def test_a_new_snapshot_makes_lag_known_again() -> None:
    from streaming.tracking.events import PartitionLagRow

    tracker = _stale_end_offsets(max_age_ms=60 * S, commit_after_ms=120 * S)
    log = Log(next_offset=10, next_membership_offset=10)
    log.snap(topics_snapshot(131 * S, {"t": [900]}))
    tracker.feed(log.take())
    row = tracker.of(PartitionLagRow)[-1]
    assert (row.trigger, row.lag_records, row.lag_seconds_method) == (
        "snapshot",
        200,
        "interpolated",
    )
    assert row.status is not None
    status = tracker.of(GroupStatus)[-1]
    assert status.total_lag_records == 200 and status.lag_status is not None


def test_the_bound_is_validated() -> None:
    from streaming.tracking.config import TrackerConfig
    from streaming.tracking.errors import TrackerConfigError

    with pytest.raises(TrackerConfigError, match="end_offsets_max_age_ms"):
        TrackerConfig(end_offsets_max_age_ms=0)
    with pytest.raises(TrackerConfigError, match="lag_status_hold_ms"):
        TrackerConfig(lag_status_hold_ms=-1)
    assert TrackerConfig().lag_status_hold_ms == 300_000
