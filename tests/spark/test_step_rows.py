"""The stateful step's rows cross from pandas to the JVM in their own shape
(:data:`streaming.spark.step_rows.STEP_SCHEMA`: the scalar structs flat, the other structs in
lists) and :func:`~streaming.spark.step_rows.from_step` gives them back the shape every sink
reads (:data:`~streaming.spark.step_rows.EVENTS_SCHEMA`): row for row, field for field."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark]


def _rows() -> list[dict[str, Any]]:
    """Every kind of row: the golden captures' tracker events, offset commits and a
    tombstone, a source-stats row and a bad record, as :data:`EVENTS_SCHEMA` dicts."""
    from streaming.spark.step_rows import bad_record_struct, event_row, events_to_rows
    from streaming.tracking.events import OffsetCommitRow, to_row
    from streaming.tracking.reducer import apply
    from streaming.tracking.state import GroupState
    from tests.unit.streaming.tracking.test_golden import FIXTURES, load, observations

    rows: list[dict[str, Any]] = []
    for name in FIXTURES:
        fixture = load(name)
        _state, events = apply(
            GroupState.new("c", fixture["group_id"]), observations(fixture), 10**13
        )
        rows += events_to_rows(events)
    assert {r["kind"] for r in rows} >= {"rebalance", "group_status", "member_assignment"}
    for deleted in (False, True):
        commit = OffsetCommitRow(
            event_id=f"commit/c/g/7%3A{int(deleted)}",
            cluster="c",
            group_id="g",
            event_ts_ms=1_000,
            topic="t",
            partition=3,
            offset=None if deleted else 42,
            leader_epoch=None if deleted else 5,
            metadata=None if deleted else "m\u00e9ta",
            commit_ts_ms=None if deleted else 900,
            expire_ts_ms=None,
            deleted=deleted,
            source_partition=7,
            source_offset=int(deleted),
        )
        rows.append(event_row(to_row(commit)))
    head = {"cluster": "c", "group_id": None, "event_ts_ms": 5, "event_id": "x"}
    stats = {"topic": "t", "partition": 0, "lo": 1, "hi": 9, "records": 9, "unrouted": 0, "bad": 1}
    bad = bad_record_struct(
        {"topic": "t", "partition": 0, "offset": 3, "timestamp_ms": 5, "key": b"\x00",
         "value": None, "error": "cut", "error_type": "TruncatedError",
         "error_field": "key", "error_offset": 1}
    )  # fmt: skip
    from streaming.spark.step_rows import EVENTS_SCHEMA

    for kind, column, value in (
        ("source_stats", "source_stats", stats),
        ("bad_record", "bad_records", bad),
    ):
        row = dict.fromkeys(EVENTS_SCHEMA.fieldNames())
        row.update(head, kind=kind, **{column: value})
        rows.append(row)
    return rows


def test_the_steps_rows_come_back_in_the_shape_the_sinks_read(spark: SparkSession) -> None:
    from streaming.spark.step_rows import EVENTS_SCHEMA, STEP_SCHEMA, WRAPPED, step_frame
    from tests.delta_rows import same_rows, step_events

    rows = _rows()
    frame = step_frame(rows)
    assert list(frame.columns) == STEP_SCHEMA.fieldNames()
    assert WRAPPED and all(isinstance(v, list) or v is None for c in WRAPPED for v in frame[c])
    crossed = step_events(spark, frame)
    assert crossed.schema.simpleString() == EVENTS_SCHEMA.simpleString()
    assert same_rows(crossed, spark.createDataFrame(rows, schema=EVENTS_SCHEMA)) == len(rows)


def _events() -> list[Any]:
    """Tracker row objects of every kind the tracker makes: the golden captures' events, in
    their order, and an offset tombstone's row between them."""
    from streaming.tracking.events import OffsetCommitRow
    from streaming.tracking.reducer import apply
    from streaming.tracking.state import GroupState
    from tests.unit.streaming.tracking.test_golden import FIXTURES, load, observations

    events: list[Any] = []
    for name in FIXTURES:
        fixture = load(name)
        _state, got = apply(GroupState.new("c", fixture["group_id"]), observations(fixture), 10**13)
        events += got
    tombstone = OffsetCommitRow(
        event_id="commit/c/g/7%3A1", cluster="c", group_id="g", event_ts_ms=1_000, topic="t",
        partition=3, offset=None, leader_epoch=None, metadata=None, commit_ts_ms=None,
        expire_ts_ms=None, deleted=True, source_partition=7, source_offset=1,
    )  # fmt: skip
    events.insert(len(events) // 2, tombstone)
    return events


def test_the_tracker_rows_made_column_by_column_equal_their_dicts() -> None:
    """:func:`tracker_frame` (the flat structs' rows from the row objects, the rest through
    their dicts) gives the frame ``step_frame(events_to_rows(...))`` gives, row for row in
    the events' order (a missing value None, where pandas may have made it NaN)."""
    from streaming.spark.step_rows import FLAT, events_to_rows, step_frame, tracker_frame

    events = _events()
    kinds = {type(e).kind for e in events}
    assert kinds >= {"rebalance", "group_metrics", "member_assignment", "group_status"}
    assert "offset_commit" in kinds
    fast = tracker_frame(events)
    slow = step_frame(events_to_rows(events))
    assert list(fast.columns) == list(slow.columns)
    assert list(fast["kind"]) == [type(e).kind for e in events]

    def plain(values: list[Any]) -> list[Any]:  # pandas made a float column of None: NaN
        return [None if isinstance(v, float) and v != v else v for v in values]

    for column in fast.columns:
        assert plain(fast[column].tolist()) == plain(slow[column].tolist()), column
    assert any(fast[c].notna().any() for c in FLAT["group_metrics"])


def test_the_tracker_rows_cross_to_the_jvm_in_the_sinks_shape(spark: SparkSession) -> None:
    """The frame :func:`tracker_frame` makes, through :func:`from_step`, is the tracker's
    rows in :data:`EVENTS_SCHEMA`, field for field."""
    from streaming.spark.step_rows import EVENTS_SCHEMA, events_to_rows, tracker_frame
    from tests.delta_rows import same_rows, step_events

    events = _events()
    crossed = step_events(spark, tracker_frame(events))
    expected = spark.createDataFrame(events_to_rows(events), schema=EVENTS_SCHEMA)
    assert same_rows(crossed, expected) == len(events)


def test_the_kept_commits_and_the_lag_reach_their_tables_in_their_shape(
    spark: SparkSession,
) -> None:
    """On the job's defaults (``offset_commits_history=kept``): ``offset_commits`` holds the
    tracker's kept commits with their reason, ``partition_lag`` only the stored measurements
    (not the exporter's others), ``group_lag`` and ``lag_transitions`` the tracker's rows;
    each table in its schema's columns, value for value."""
    from streaming import tables as t
    from streaming.sinks.micro_batch import table_frames
    from streaming.spark.step_rows import tracker_frame
    from streaming.tracking.config import TrackerConfig
    from streaming.tracking.events import (
        GroupLagRow,
        LagTransitionRow,
        OffsetCommitRow,
        PartitionLagRow,
        to_row,
    )
    from streaming.tracking.reducer import apply
    from streaming.tracking.state import GroupState
    from tests.delta_rows import step_events
    from tests.unit.streaming.tracking.factories import Log, Tracker, commit, topics_snapshot
    from tests.unit.streaming.tracking.test_golden import FIXTURES, load, observations

    config = TrackerConfig(commit_rows=True, group_lag_interval_ms=10_000)
    events: list[Any] = []
    for name in FIXTURES:
        fixture = load(name)
        state = GroupState.new("c", fixture["group_id"])
        for obs in observations(fixture):  # one call per record: the group's micro-batches
            state, got = apply(state, [obs], obs.logical_ts_ms, config=config)
            events += got
    # and a group measured every 5 s for 25 minutes: most lag measurements are not stored
    log, tracker = Log(), Tracker(config=config)
    for ts in range(5_000, 1_500_000, 5_000):
        log.rec(commit("Order", 0, ts // 1_000, ts=ts), ts)
        log.snap(topics_snapshot(ts + 1, {"Order": [ts // 1_000 + ts % 3]}))
        events += tracker.feed(log.take())
    lag = [e for e in events if isinstance(e, PartitionLagRow)]
    assert any(e.stored for e in lag) and not all(e.stored for e in lag)
    want = {
        t.OFFSET_COMMITS: [e for e in events if isinstance(e, OffsetCommitRow)],
        t.PARTITION_LAG: [e for e in lag if e.stored],
        t.GROUP_LAG: [e for e in events if isinstance(e, GroupLagRow)],
        t.LAG_TRANSITIONS: [e for e in events if isinstance(e, LagTransitionRow)],
    }
    assert all(want.values())
    assert {e.reason for e in want[t.OFFSET_COMMITS]} >= {"first", "rebalance"}
    crossed = step_events(spark, tracker_frame(events))
    frames = table_frames(crossed, {type(e).kind for e in events}, 0)
    for table, rows in want.items():
        got = frames[table]
        assert got.schema.fieldNames() == t.schema(table).fieldNames(), table
        body = [f for f in t.schema(table).fieldNames() if f not in t.DERIVED_COLUMNS]
        have = sorted((r.asDict() for r in got.select(*body).collect()), key=str)
        expected = [{k: v for k, v in to_row(e).items() if k in body} for e in rows]
        assert have == sorted(expected, key=str), table
