"""What the tables keep: the commits that matter with their reason, lag rows per interval,
the group's lag rollup and the lag status transitions."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import pytest

from assign_core.model import TopicPartition
from streaming.tracking.config import TrackerConfig
from streaming.tracking.errors import TrackerConfigError
from streaming.tracking.events import (
    GroupLagRow,
    GroupStatus,
    LagTransitionRow,
    OffsetCommitRow,
    PartitionLagRow,
)
from streaming.tracking.keep import keep_reason
from streaming.tracking.model import CommitRun, Observation
from streaming.tracking.state import CommitEntry
from tests.unit.streaming.tracking.factories import (
    GROUP,
    OFFSETS_PARTITION,
    Log,
    Tracker,
    commit,
    member,
    offset_tombstone,
    topics_snapshot,
    tps,
)

pytestmark = pytest.mark.unit

S = 1000
MIN = 60 * S
HOUR = 3600 * S
P0 = TopicPartition("Order", 0)
KEPT = TrackerConfig(commit_rows=True)


def kept(t: Tracker) -> list[tuple[int | None, str | None]]:
    return [(r.offset, r.reason) for r in t.of(OffsetCommitRow)]


def test_first_commit_then_one_sample_per_hour_window() -> None:
    log, t = Log(), Tracker(config=KEPT)
    for ts in (10 * S, 20 * MIN, 59 * MIN, 61 * MIN, 62 * MIN, 2 * HOUR + 5 * S):
        log.rec(commit("Order", 0, ts // 100, ts=ts), ts)
        t.feed(log.take())
    assert kept(t) == [(100, "first"), (36_600, "sample"), (72_050, "sample")]
    # the row: the commit lane's id (source partition:offset of the record) and values
    first = t.of(OffsetCommitRow)[0]
    assert first.event_id == f"commit/local/{GROUP}/{OFFSETS_PARTITION}%3A0"
    assert (first.source_partition, first.source_offset, first.event_ts_ms) == (
        OFFSETS_PARTITION, 0, 10 * S,
    )  # fmt: skip
    assert (first.leader_epoch, first.metadata, first.commit_ts_ms, first.expire_ts_ms) == (
        0, "", 10 * S, None,
    )  # fmt: skip
    assert first.deleted is False


def test_rewind_is_kept_whenever_it_happens() -> None:
    log, t = Log(), Tracker(config=KEPT)
    for ts, offset in ((1 * S, 500), (6 * S, 510), (11 * S, 300), (16 * S, 320), (21 * S, 320)):
        log.rec(commit("Order", 0, offset, ts=ts), ts)
        t.feed(log.take())
    assert kept(t) == [(500, "first"), (300, "rewind")]


def test_jump_needs_a_thousand_records_and_ten_times_the_usual_step() -> None:
    log, t = Log(), Tracker(config=KEPT)
    offsets = [100, 110, 120, 130, 5_000, 5_010, 7_000, 9_100]
    for i, offset in enumerate(offsets):
        log.rec(commit("Order", 0, offset, ts=(i + 1) * S), (i + 1) * S)
        t.feed(log.take())
    # 130 -> 5,000: 4,870 records, usual step 10: a jump; 5,010 -> 7,000 (1,990) is more than
    # ten times 10 but the usual step is now 4,870; 7,000 -> 9,100: neither
    assert kept(t) == [(100, "first"), (5_000, "jump")]


def test_small_moves_of_an_idle_partition_are_no_jump() -> None:
    assert (
        keep_reason(
            CommitEntry(5, 1, 1, 0, ((0, 5), (1, 5)), "log", kept_ts_ms=1),
            ((2, 900),),
            2,
            None,
            sample_ms=HOUR,
            jump_records=1_000,
        )
        is None
    )
    # without two earlier commits there is no usual step to compare with
    assert (
        keep_reason(
            CommitEntry(5, 1, 1, 0, ((1, 5),), "log", kept_ts_ms=1),
            ((2, 50_000),),
            2,
            None,
            sample_ms=HOUR,
            jump_records=1_000,
        )
        is None
    )


def test_offset_tombstone_is_kept() -> None:
    log, t = Log(), Tracker(config=KEPT)
    log.rec(commit("Order", 0, 5, ts=1 * S), 1 * S)
    log.rec(offset_tombstone("Order", 0), 2 * S)
    log.rec(commit("Order", 0, 7, ts=3 * S), 3 * S)
    t.feed(log.take())
    rows = t.of(OffsetCommitRow)
    assert [(r.offset, r.deleted, r.reason) for r in rows] == [
        (5, False, "first"),
        (None, True, "tombstone"),
        (7, False, "first"),  # the tracker knows no committed offset after the tombstone
    ]
    assert rows[1].event_id == f"commit/local/{GROUP}/{OFFSETS_PARTITION}%3A1"
    assert (rows[1].commit_ts_ms, rows[1].leader_epoch, rows[1].metadata) == (None, None, None)


def test_first_commit_of_each_partition_after_a_rebalance() -> None:
    log, t = Log(), Tracker(config=KEPT)
    a = member("A", ["Order"], tps("Order", 0, 1))
    log.gm(1, [a], ts=1 * S)
    log.commits(tps("Order", 0, 1), ts=2 * S)
    log.commits(tps("Order", 0, 1), ts=7 * S)
    t.feed(log.take())
    b = member("B", ["Order"], tps("Order", 1))
    a2 = member("A", ["Order"], tps("Order", 0))
    log.gm(2, [a2, b], ts=10 * S)
    log.commits(tps("Order", 0), ts=12 * S)
    t.feed(log.take())
    log.commits(tps("Order", 0, 1), ts=17 * S)
    log.commits(tps("Order", 0, 1), ts=22 * S)
    t.feed(log.take())
    rows = [(r.partition, r.event_ts_ms, r.reason) for r in t.of(OffsetCommitRow)]
    assert rows == [
        (0, 2 * S, "first"),
        (1, 2 * S, "first"),
        (0, 12 * S, "rebalance"),
        (1, 17 * S, "rebalance"),  # its first commit after the rebalance, though not the group's
    ]


def test_a_run_is_judged_on_all_its_commits_and_kept_as_its_last() -> None:
    log, t = Log(), Tracker(config=KEPT)
    log.rec(commit("Order", 0, 90, ts=1 * S), 1 * S)
    t.feed(log.take())
    # a run of three commits, 100 -> 50 -> 120: the rewind inside it keeps its last commit
    run = CommitRun(
        GROUP, "Order", 0, 120, 3, 9 * S, 3, ((5 * S, 100), (7 * S, 50), (9 * S, 120)),
        metadata="m", expire_ts_ms=99 * S,
    )  # fmt: skip
    t.feed([Observation("offsets", OFFSETS_PARTITION, 40, 9 * S, run)])
    last = t.of(OffsetCommitRow)[-1]
    assert (last.offset, last.reason, last.source_offset) == (120, "rewind", 40)
    assert (last.leader_epoch, last.metadata, last.expire_ts_ms, last.commit_ts_ms) == (
        3, "m", 99 * S, 9 * S,
    )  # fmt: skip


def test_without_commit_rows_the_tracker_keeps_no_commit() -> None:
    log, t = Log(), Tracker()
    log.rec(commit("Order", 0, 5, ts=1 * S), 1 * S)
    log.rec(offset_tombstone("Order", 0), 2 * S)
    t.feed(log.take())
    assert t.of(OffsetCommitRow) == []


# -- lag ---------------------------------------------------------------------------------------


def _snapshots_for_3_minutes(config: TrackerConfig) -> list[PartitionLagRow]:
    """A partition committed once, then a snapshot every 5 s for 3 minutes (its status
    stays STOP): the tracker's lag rows."""
    log, t = Log(), Tracker(config=config)
    log.rec(commit("Order", 0, 10, ts=1 * S), 1 * S)
    t.feed(log.take())
    for ts in range(5 * S, 3 * MIN, 5 * S):
        log.snap(topics_snapshot(ts, {"Order": [10 + ts // S]}))
        t.feed(log.take())
    return t.of(PartitionLagRow)


def test_lag_rows_are_stored_once_per_interval_and_exported_once_per_export_interval() -> None:
    rows = _snapshots_for_3_minutes(TrackerConfig(lag_interval_ms=MIN, emit_lag_on_commit=False))
    # the first measurement of each 30 s window (lag_export_interval_ms): the gauges' values
    assert [r.measured_ts_ms // S for r in rows] == [5, 30, 60, 90, 120, 150]
    assert [r.lag_records for r in rows] == [5, 30, 60, 90, 120, 150]
    stored = [r.measured_ts_ms for r in rows if r.stored]
    assert stored == [5 * S, 1 * MIN, 2 * MIN]


def test_an_export_interval_of_zero_emits_every_measurement() -> None:
    config = TrackerConfig(lag_interval_ms=MIN, lag_export_interval_ms=0, emit_lag_on_commit=False)
    rows = _snapshots_for_3_minutes(config)
    assert len(rows) == 35  # every snapshot's measurement
    stored = [r.measured_ts_ms for r in rows if r.stored]
    assert stored == [5 * S, 1 * MIN, 2 * MIN]


def test_the_lag_interval_must_be_a_multiple_of_the_export_interval() -> None:
    with pytest.raises(TrackerConfigError, match="lag_interval_ms: expected a multiple"):
        TrackerConfig(lag_interval_ms=45_000, lag_export_interval_ms=30_000)
    assert TrackerConfig(lag_interval_ms=0, lag_export_interval_ms=30_000).lag_interval_ms == 0


def test_lag_interval_zero_stores_every_measurement() -> None:
    log, t = Log(), Tracker(config=TrackerConfig(lag_interval_ms=0))
    log.rec(commit("Order", 0, 10, ts=1 * S), 1 * S)
    for ts in (5 * S, 10 * S, 15 * S):
        log.snap(topics_snapshot(ts, {"Order": [20]}))
    t.feed(log.take())
    assert all(r.stored for r in t.of(PartitionLagRow))
    assert len(t.of(PartitionLagRow)) == 3


def test_group_lag_rollup_once_a_minute_and_unknown_stays_null() -> None:
    config = TrackerConfig(emit_lag_on_commit=False)
    log, t = Log(), Tracker(config=config)
    log.commits(tps("Order", 0, 1), ts=1 * S, offset=100)
    t.feed(log.take())
    assert t.of(GroupLagRow) == []  # no end offset yet: no lag to roll up
    for ts in range(5 * S, 2 * MIN, 5 * S):
        log.snap(topics_snapshot(ts, {"Order": [100 + ts // S, 100]}))
        log.commits(tps("Order", 1), ts=ts, offset=100)
        t.feed(log.take())
    rollups = t.of(GroupLagRow)
    assert [r.interval_ts_ms for r in rollups] == [0, MIN]
    first = rollups[0]
    assert first.event_ts_ms == 5 * S  # the first observation of the minute: the snapshot
    assert (first.partitions, first.partitions_measured, first.partitions_unknown) == (2, 2, 0)
    assert (first.total_lag_records, first.max_lag_records) == (5, 5)
    assert first.event_id == f"group_lag/local/{GROUP}/0"
    # the collector stops: a commit 2 minutes later finds only stale end offsets
    log.commits(tps("Order", 1), ts=4 * MIN, offset=100)
    t.feed(log.take())
    last = t.of(GroupLagRow)[-1]
    assert (last.interval_ts_ms, last.partitions_measured, last.partitions_unknown) == (
        4 * MIN, 0, 2,
    )  # fmt: skip
    assert (last.total_lag_records, last.max_lag_records, last.max_lag_seconds) == (
        None, None, None,
    )  # fmt: skip
    assert last.status is None
    assert (last.partitions_ok, last.partitions_warn, last.partitions_err) == (0, 0, 0)


def test_group_lag_interval_zero_writes_no_rollup() -> None:
    log, t = Log(), Tracker(config=TrackerConfig(group_lag_interval_ms=0))
    log.rec(commit("Order", 0, 10, ts=1 * S), 1 * S)
    log.snap(topics_snapshot(5 * S, {"Order": [20]}))
    t.feed(log.take())
    assert t.of(GroupLagRow) == []


def test_lag_status_transitions_of_the_partition_and_the_group() -> None:
    """Without a hold (0), every change of status is a row, at the measurement showing it."""
    config = TrackerConfig(lag_status_window_ms=20 * S, lag_status_hold_ms=0)
    log, t = Log(), Tracker(config=config)
    log.rec(commit("Order", 0, 1000, ts=1 * S), 1 * S)
    t.feed(log.take())
    # the end offset grows by 100 every 10 s and the consumer stops committing
    for i in range(4):
        log.snap(topics_snapshot((10 + 10 * i) * S, {"Order": [1000 + 100 * i]}))
        t.feed(log.take())
    lag = t.of(PartitionLagRow)
    # exported: the first of the 30 s window, then the change of status at once (the others
    # of the window are not)
    assert [(r.measured_ts_ms // S, r.status) for r in lag] == [(10, "OK"), (30, "STOP")]
    moves = [
        (e.scope, e.event_ts_ms, e.status_before, e.status_after, e.rule, e.lag_records)
        for e in t.of(LagTransitionRow)
    ]
    assert moves == [
        ("partition", 10 * S, None, "OK", 2, 0),
        ("group", 10 * S, None, "OK", None, 0),
        ("partition", 30 * S, "OK", "STOP", 3, 200),
        ("group", 30 * S, "OK", "ERR", None, 200),
    ]
    # the collector stops: a commit 70 s later finds a stale end offset, the lag and the
    # status become unknown (null), never OK or 0
    log.rec(commit("Order", 0, 1300, ts=110 * S), 110 * S)
    t.feed(log.take())
    tail = [
        (e.scope, e.status_before, e.status_after, e.lag_records, e.lag_seconds)
        for e in t.of(LagTransitionRow)[4:]
    ]
    assert tail == [
        ("partition", "STOP", None, None, None),
        ("group", "ERR", None, None, None),
    ]
    assert t.of(GroupStatus)[-1].lag_status is None
    # the collector is back: a verdict again
    log.snap(topics_snapshot(115 * S, {"Order": [1300]}))
    t.feed(log.take())
    back = [(e.scope, e.status_before, e.status_after) for e in t.of(LagTransitionRow)[6:]]
    assert back == [("partition", None, "OK"), ("group", None, "OK")]


def test_each_transition_is_a_change_of_the_lag_rows_status() -> None:
    """Without a hold (0), the partition transitions are exactly the changes between
    consecutive lag rows (every measurement exported: a batch's older rows stay too)."""
    config = TrackerConfig(
        lag_status_window_ms=30 * S, lag_status_hold_ms=0, lag_export_interval_ms=0
    )
    log, t = Log(), Tracker(config=config)
    end = 0
    offset = 0
    for i in range(1, 60):
        end += 50 if i % 7 else 400
        if i % 11 < 6:
            offset = min(end, offset + 70)
            log.rec(commit("Order", 0, offset, ts=i * 5 * S), i * 5 * S)
        if i % 13 != 0:
            log.snap(topics_snapshot(i * 5 * S + 1, {"Order": [end]}))
        t.feed(log.take())
    statuses = [r.status for r in t.of(PartitionLagRow)]
    changes = [(a, b) for a, b in zip([None, *statuses], statuses, strict=False) if a != b]
    moves = [
        (e.status_before, e.status_after) for e in t.of(LagTransitionRow) if e.scope == "partition"
    ]
    assert moves == changes
    assert len(set(statuses)) >= 2


# -- the hold: a partition's status is recorded once it has lasted (H1-H5) --------------------

HOLD = TrackerConfig(lag_status_window_ms=8 * S)  # the default hold, 5 minutes


def _play(log: Log, phases: list[tuple[str, int]], start: int = 0) -> list[list[Observation]]:
    """A commit every 5 s and the collector's end offset 1 ms later (100 more records each
    time); ``ok``: the commit reaches the end offset (S2); ``warn``: 30 records behind, a lag
    that never shrinks (S7); ``flap``: 30 and 50 behind in turn, so with the 8 s window
    (two commits) the lag grows (S7, WARN) and shrinks (S8, OK) at every evaluation. One
    batch per 5 s."""
    batches = []
    k = start
    for kind, seconds in phases:
        for _ in range(seconds // 5):
            k += 1
            behind = {"ok": 0, "warn": 30, "flap": 30 if k % 2 else 50}[kind]
            log.rec(commit("Order", 0, 100 * k - behind, ts=5 * k * S), 5 * k * S)
            log.snap(topics_snapshot(5 * k * S + 1, {"Order": [100 * k]}))
            batches.append(log.take())
    return batches


def _snapshot_statuses(t: Tracker) -> list[tuple[int, str | None]]:
    return [(r.measured_ts_ms, r.status) for r in t.of(PartitionLagRow) if r.trigger == "snapshot"]


def _moves(t: Tracker) -> list[tuple[str, int, str | None, str | None, int | None]]:
    return [
        (e.scope, e.event_ts_ms, e.status_before, e.status_after, e.rule)
        for e in t.of(LagTransitionRow)
    ]


def test_a_flapping_status_writes_no_transition() -> None:
    """H1: each measurement starts the other status again; none lasts the hold."""
    log, t = Log(), Tracker(config=HOLD)
    for batch in _play(log, [("flap", 20 * 60)]):
        t.feed(batch)
    statuses = [s for _ts, s in _snapshot_statuses(t)][1:]  # the first: one commit, STOP
    assert len(statuses) == 239 and set(statuses) == {"OK", "WARN"}
    assert all(a != b for a, b in pairwise(statuses))  # every time
    assert t.of(LagTransitionRow) == []  # neither the partition's nor the group's
    entry = t.state.commits[P0]
    assert entry.status is None and entry.pending_status in ("OK", "WARN")
    # the gauges' rows and the group's status still carry the status of the moment
    assert t.of(GroupStatus)[-1].lag_status == statuses[-1]


def test_a_status_that_lasts_the_hold_is_one_row_from_when_it_began() -> None:
    """H2: one row per status that lasted, at its start; H4: the group's when recorded."""
    log, t = Log(), Tracker(config=HOLD)
    for batch in _play(log, [("ok", 10 * 60), ("warn", 10 * 60), ("flap", 10 * 60)]):
        t.feed(batch)
    seen = _snapshot_statuses(t)
    first_ok = seen[0][0]
    first_warn = next(ts for ts, s in seen if s == "WARN")
    assert (first_ok, first_warn) == (5 * S + 1, 610 * S + 1)  # at 605 s: S5, OK
    assert _moves(t) == [
        ("partition", first_ok, None, "OK", 2),
        ("group", first_ok + 300 * S, None, "OK", None),  # when the group's was recorded
        ("partition", first_warn, "OK", "WARN", 7),
        ("group", first_warn + 300 * S, "OK", "WARN", None),
    ]
    partition_rows = [e for e in t.of(LagTransitionRow) if e.scope == "partition"]
    # the id names when the status began; the lag is the confirming measurement's
    assert partition_rows[1].event_id == f"lag_transition/local/{GROUP}/Order/0/{first_warn}"
    assert (partition_rows[0].lag_records, partition_rows[1].lag_records) == (0, 30)
    # the flapping that followed the WARN is not recorded: the status stays WARN
    assert t.state.commits[P0].status == "WARN"


def test_a_status_shorter_than_the_hold_is_not_recorded() -> None:
    """H1: the recorded status measured again drops the pending one."""
    log, t = Log(), Tracker(config=HOLD)
    batches = _play(log, [("ok", 10 * 60)])
    batches += _play(log, [("warn", 4 * 60), ("ok", 10 * 60)], start=len(batches))
    for batch in batches:
        t.feed(batch)
    assert "WARN" in {s for _ts, s in _snapshot_statuses(t)}
    assert [(scope, after) for scope, _ts, _b, after, _r in _moves(t)] == [
        ("partition", "OK"),
        ("group", "OK"),
    ]
    assert t.state.commits[P0].pending_since_ts_ms is None  # OK again: nothing pending


def test_a_third_status_restarts_the_hold() -> None:
    """H1: OK recorded; 4 minutes WARN, then STOP: the STOP's hold starts at its first
    measurement, not at the WARN's."""
    log, t = Log(), Tracker(config=HOLD)
    batches = _play(log, [("ok", 10 * 60), ("warn", 4 * 60)])
    for batch in batches:
        t.feed(batch)
    k = len(batches)
    for i in range(1, 121):  # the consumer stops; the end offset keeps growing
        ts = 5 * (k + i) * S + 1
        log.snap(topics_snapshot(ts, {"Order": [100 * (k + i)]}))
        t.feed(log.take())
    seen = _snapshot_statuses(t)
    first_stop = next(ts for ts, s in seen if s == "STOP")
    assert {s for ts, s in seen if 605 * S + 1 < ts < first_stop} == {"WARN"}
    assert [m for m in _moves(t) if m[0] == "partition"][1:] == [
        ("partition", first_stop, "OK", "STOP", 3),
    ]


def test_the_hold_does_not_depend_on_the_batches() -> None:
    """Live (a batch per 5 s), a backlog read in one batch, and a record per batch write the
    same transitions and end in the same state."""
    phases = [("ok", 7 * 60), ("flap", 3 * 60), ("warn", 6 * 60), ("flap", 8 * 60)]
    live, backlog, single = Tracker(config=HOLD), Tracker(config=HOLD), Tracker(config=HOLD)
    batches = _play(Log(), phases)
    for batch in batches:
        live.feed(batch)
    backlog.feed([o for batch in batches for o in batch])
    for o in (o for batch in batches for o in batch):
        single.feed([o])
    assert len(_moves(live)) == 4
    for other in (backlog, single):
        assert other.of(LagTransitionRow) == live.of(LagTransitionRow)
        assert other.state.commits == live.state.commits


def _wandering(config: TrackerConfig) -> Tracker:
    """An hour of a consumer that keeps up, falls behind and stops in turn; the collector
    misses a snapshot now and then."""
    log, t = Log(), Tracker(config=config)
    end = offset = 0
    for i in range(1, 720):
        end += 50 if i % 7 else 400
        if i % 97 < 60:
            offset = min(end, offset + (70 if i % 23 < 12 else 40))
            log.rec(commit("Order", 0, offset, ts=i * 5 * S), i * 5 * S)
        if i % 13 != 0:
            log.snap(topics_snapshot(i * 5 * S + 1, {"Order": [end]}))
        t.feed(log.take())
    return t


def test_the_recorded_statuses_are_the_runs_that_lasted_the_hold() -> None:
    """H1, H2 against the lag rows: each partition row starts a run of snapshots of one
    status that lasted the hold, and every such run of a status other than the recorded one
    is a row."""
    config = TrackerConfig(lag_status_window_ms=30 * S, lag_status_hold_ms=MIN)
    t = _wandering(config)
    runs: list[tuple[str | None, int, int]] = []  # status, first and last measurement
    for ts, status in _snapshot_statuses(t):
        if runs and runs[-1][0] == status:
            runs[-1] = (status, runs[-1][1], ts)
        else:
            runs.append((status, ts, ts))
    want = []
    recorded: str | None = None
    for status, first, last in runs:
        if status != recorded and last - first >= config.lag_status_hold_ms:
            want.append((first, recorded, status))
            recorded = status
    got = [
        (ts, before, after) for scope, ts, before, after, _r in _moves(t) if scope == "partition"
    ]
    assert got == want
    assert len(want) >= 10 and len(runs) > 2 * len(want)


def test_the_commits_measurements_take_no_part_in_the_hold() -> None:
    """H3: with a hold the rows are those of the snapshots alone, whether or not the commits
    are measured; H5: without one, the commits' measurements add rows of their own."""
    held = TrackerConfig(lag_status_window_ms=30 * S, lag_status_hold_ms=MIN)
    with_commits = _wandering(held)
    without = _wandering(replace(held, emit_lag_on_commit=False))
    assert {r.status for r in with_commits.of(PartitionLagRow) if r.trigger == "commit"} >= {
        "OK",
        "WARN",
    }
    assert with_commits.of(LagTransitionRow) == without.of(LagTransitionRow) != []
    a, b = with_commits.state.commits[P0], without.state.commits[P0]
    assert (a.status, a.pending_status, a.pending_since_ts_ms) == (
        b.status, b.pending_status, b.pending_since_ts_ms,
    )  # fmt: skip
    at_once = replace(held, lag_status_hold_ms=0)
    every = _wandering(at_once).of(LagTransitionRow)
    snapshots_only = _wandering(replace(at_once, emit_lag_on_commit=False)).of(LagTransitionRow)
    assert len(every) > len(snapshots_only) > len(with_commits.of(LagTransitionRow))
