"""The stateful step's rows cross from pandas to the JVM in their own shape
(:data:`streaming.spark.stateful.STEP_SCHEMA`: the commit struct flat, the other structs in
lists) and :func:`~streaming.spark.stateful.from_step` gives them back the shape every sink
reads (:data:`~streaming.spark.stateful.EVENTS_SCHEMA`): row for row, field for field."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark]


def _rows() -> list[dict[str, Any]]:
    """Every kind of row: the golden captures' tracker events, offset commits and a
    tombstone, a source-stats row and a bad record, as :data:`EVENTS_SCHEMA` dicts."""
    from streaming.spark.stateful import bad_record_struct, event_row, events_to_rows
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
    from streaming.spark.stateful import EVENTS_SCHEMA

    for kind, column, value in (
        ("source_stats", "source_stats", stats),
        ("bad_record", "bad_records", bad),
    ):
        row = dict.fromkeys(EVENTS_SCHEMA.fieldNames())
        row.update(head, kind=kind, **{column: value})
        rows.append(row)
    return rows


def test_the_steps_rows_come_back_in_the_shape_the_sinks_read(spark: SparkSession) -> None:
    from streaming.spark.stateful import EVENTS_SCHEMA, STEP_SCHEMA, WRAPPED, from_step, step_frame

    rows = _rows()
    frame = step_frame(rows)
    assert list(frame.columns) == STEP_SCHEMA.fieldNames()
    assert WRAPPED and all(isinstance(v, list) or v is None for c in WRAPPED for v in frame[c])
    crossed = from_step(spark.createDataFrame(frame, schema=STEP_SCHEMA))
    assert crossed.schema.simpleString() == EVENTS_SCHEMA.simpleString()
    expected = spark.createDataFrame(rows, schema=EVENTS_SCHEMA)

    def key(r: Any) -> tuple[str, str]:
        return (r["kind"], r["event_id"])

    got = sorted((r.asDict(recursive=True) for r in crossed.collect()), key=key)
    want = sorted((r.asDict(recursive=True) for r in expected.collect()), key=key)
    assert len(got) == len(rows)
    assert got == want
