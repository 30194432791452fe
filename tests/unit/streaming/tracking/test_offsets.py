"""Offset commits, offset tombstones and lag rows (records and seconds)."""

from __future__ import annotations

import pytest

from assign_core.model import TopicPartition
from streaming.tracking.events import GroupStatus, OffsetCommitRow, PartitionLagRow
from streaming.tracking.model import GroupSnapshot, SnapshotOffset
from tests.unit.streaming.tracking.factories import (
    Log,
    Tracker,
    commit,
    group_snapshot,
    offset_tombstone,
    topics_snapshot,
)

pytestmark = pytest.mark.unit

S = 1000
P0 = TopicPartition("Order", 0)


def test_commit_rows_and_lag_in_records_and_seconds() -> None:
    log, t = Log(), Tracker()
    log.rec(commit("Order", 0, 1000, ts=1 * S), 1 * S)
    # the end offset grows by 100 every 10 s: 1000 at 10 s ... 1300 at 40 s
    for i in range(4):
        log.snap(topics_snapshot((10 + 10 * i) * S, {"Order": [1000 + 100 * i]}))
    t.feed(log.take())
    (row,) = t.of(OffsetCommitRow)
    assert (row.offset, row.commit_ts_ms, row.deleted, row.leader_epoch) == (1000, 1 * S, False, 0)
    lag = t.of(PartitionLagRow)
    assert [r.trigger for r in lag] == ["snapshot"] * 4
    assert [r.lag_records for r in lag] == [0, 100, 200, 300]
    # the end offset passed 1000 at 10 s (the first snapshot)
    assert [r.lag_seconds for r in lag] == [0.0, 10.0, 20.0, 30.0]
    assert [r.lag_seconds_method for r in lag] == ["caught_up"] + ["interpolated"] * 3

    # a commit at 45 s of offset 1150: 150 records behind the newest end offset (1300, at
    # 40 s); the end offset passed 1150 at 25 s -> 20 s behind at 45 s
    log.rec(commit("Order", 0, 1150, ts=45 * S), 45 * S)
    events = t.feed(log.take())
    (commit_lag,) = [e for e in events if isinstance(e, PartitionLagRow)]
    assert (commit_lag.trigger, commit_lag.lag_records) == ("commit", 150)
    assert commit_lag.lag_seconds == pytest.approx(20.0)
    assert (commit_lag.end_offset, commit_lag.end_offset_ts_ms) == (1300, 40 * S)
    status = [e for e in events if isinstance(e, GroupStatus)][-1]
    assert status.total_lag_records == 150
    assert status.max_lag_seconds == pytest.approx(15.0)  # measured at the newest end offset
    assert status.committed_partitions == 1


def test_offset_tombstone_deletes_and_emits() -> None:
    log, t = Log(), Tracker()
    log.rec(commit("Order", 0, 5, ts=1 * S), 1 * S)
    log.snap(topics_snapshot(2 * S, {"Order": [9]}))
    log.rec(offset_tombstone("Order", 0), 3 * S)
    t.feed(log.take())
    rows = t.of(OffsetCommitRow)
    assert [(r.offset, r.deleted) for r in rows] == [(5, False), (None, True)]
    assert P0 not in t.state.commits and P0 not in t.state.end_offsets


def test_lag_only_for_topics_the_group_touches() -> None:
    log, t = Log(), Tracker()
    log.rec(commit("Order", 0, 5, ts=1 * S), 1 * S)
    log.snap(topics_snapshot(2 * S, {"Order": [9], "Other": [1, 2, 3]}))
    t.feed(log.take())
    assert set(t.state.topics) == {"Order"}
    assert {tp.topic for tp in t.state.end_offsets} == {"Order"}


def test_snapshot_offsets_fill_in_until_the_log_shows_commits() -> None:
    log, t = Log(), Tracker()
    snap = group_snapshot(10 * S, "Stable", ["A"], topics=["Order"])
    from dataclasses import replace

    snap = replace(
        snap,
        committed_offsets=(SnapshotOffset("Order", 0, 40, 0, "", 42, 2),),
    )
    assert isinstance(snap, GroupSnapshot)
    log.snap(snap)
    log.snap(topics_snapshot(10 * S, {"Order": [42]}))
    t.feed(log.take())
    assert t.state.commits[P0].source == "snapshot"
    (lag,) = t.of(PartitionLagRow)
    assert lag.lag_records == 2
    assert t.of(OffsetCommitRow) == []  # a snapshot is not a commit
    log.rec(commit("Order", 0, 41, ts=11 * S), 11 * S)
    t.feed(log.take())
    assert t.state.commits[P0].source == "log"
    assert t.state.commits[P0].history == ((11 * S, 41),)


def test_commit_history_is_bounded() -> None:
    log, t = Log(), Tracker()
    for i in range(50):
        log.rec(commit("Order", 0, i, ts=i * S), i * S)
    t.feed(log.take())
    entry = t.state.commits[P0]
    assert len(entry.history) == t.config.commit_history
    assert entry.history[-1] == (49 * S, 49)
