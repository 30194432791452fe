"""Offset commits, offset tombstones and lag rows (records and seconds)."""

from __future__ import annotations

import pytest

from assign_core.model import TopicPartition
from streaming.tracking.config import DEFAULT_CONFIG, TrackerConfig
from streaming.tracking.events import GroupStatus, OffsetCommitRow, PartitionLagRow
from streaming.tracking.model import CommitRun, GroupSnapshot, Observation, SnapshotOffset
from tests.unit.streaming.tracking.factories import (
    GROUP,
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
#: Every lag measurement emitted (no export interval): the tests of what one measures.
EVERY_MEASUREMENT = TrackerConfig(lag_export_interval_ms=0)


def test_committed_offsets_and_lag_in_records_and_seconds() -> None:
    log, t = Log(), Tracker(config=EVERY_MEASUREMENT)
    log.rec(commit("Order", 0, 1000, ts=1 * S), 1 * S)
    # the end offset grows by 100 every 10 s: 1000 at 10 s ... 1300 at 40 s
    for i in range(4):
        log.snap(topics_snapshot((10 + 10 * i) * S, {"Order": [1000 + 100 * i]}))
    t.feed(log.take())
    # the offset_commits rows are the commit lane's (streaming.spark.commits), not the tracker's
    assert t.of(OffsetCommitRow) == []
    entry = t.state.commits[P0]
    assert (entry.offset, entry.commit_ts_ms, entry.leader_epoch, entry.source) == (
        1000, 1 * S, 0, "log",
    )  # fmt: skip
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


def test_offset_tombstone_deletes_the_committed_offset() -> None:
    log, t = Log(), Tracker()
    log.rec(commit("Order", 0, 5, ts=1 * S), 1 * S)
    log.snap(topics_snapshot(2 * S, {"Order": [9]}))
    t.feed(log.take())
    assert P0 in t.state.commits and P0 in t.state.end_offsets
    log.rec(offset_tombstone("Order", 0), 3 * S)
    t.feed(log.take())
    assert P0 not in t.state.commits and P0 not in t.state.end_offsets
    status = t.of(GroupStatus)[-1]
    assert status.committed_partitions == 0


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


def _run_of(commits: list[tuple[int, int]], *, record_ts: int, epoch: int = 0) -> CommitRun:
    """A run of ``(offset, commit_ts)`` commits of Order-0 as the commit lane hands it over."""
    last_offset, last_ts = commits[-1]
    return CommitRun(
        group_id=GROUP,
        topic="Order",
        partition=0,
        offset=last_offset,
        leader_epoch=epoch,
        commit_ts_ms=last_ts,
        count=len(commits),
        history=tuple((ts, off) for off, ts in commits)[-DEFAULT_CONFIG.commit_history :],
    )


@pytest.mark.parametrize("before", [0, 3, 20])
def test_a_commit_run_equals_its_commits_one_by_one(before: int) -> None:
    """The group lane hands a partition's consecutive commits over as one CommitRun: the
    state after it (offset, history, times, the status' lag) equals the state after the
    commits one by one; the lag row is the run's last commit's."""
    commits = [(100 + 10 * i, (5 + i) * S) for i in range(12)]
    one_by_one, as_run = Tracker(config=EVERY_MEASUREMENT), Tracker(config=EVERY_MEASUREMENT)
    log = Log()
    for i in range(before):
        log.rec(commit("Order", 0, i, ts=(i + 1) * S // 10), (i + 1) * S // 10)
    log.snap(topics_snapshot(4 * S, {"Order": [300]}))
    first = log.take()
    one_by_one.feed(first)
    as_run.feed(first)
    for offset, ts in commits:
        log.rec(commit("Order", 0, offset, ts=ts), ts)
    singles = log.take()
    one_by_one.feed(singles)
    last = singles[-1]
    run = _run_of(commits, record_ts=last.timestamp_ms)
    as_run.feed([Observation("offsets", last.partition, last.offset, last.timestamp_ms, run)])
    assert as_run.state.commits == one_by_one.state.commits
    assert as_run.state.last_record_ts_ms == one_by_one.state.last_record_ts_ms
    lag_singles = [e for e in one_by_one.events if isinstance(e, PartitionLagRow)]
    lag_run = [e for e in as_run.events if isinstance(e, PartitionLagRow)]
    if before:  # the partition has end offsets: one lag row per commit, one per run
        assert lag_run[-1] == lag_singles[-1]
        assert len(lag_run) == len(lag_singles) - len(commits) + 1
    else:  # no end offsets yet (the topic was not the group's before the commits)
        assert lag_run == lag_singles == []
    assert as_run.of(GroupStatus)[-1] == one_by_one.of(GroupStatus)[-1]
