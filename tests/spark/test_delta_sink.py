"""The Delta sink against real Spark + Delta in a temporary folder.

Rows come from the real tracker (a group whose three members join one by one, with
commits and collector snapshots), so these tests also catch drift between the tracker's
rows and the documented table schemas.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from streaming import tables as t
from streaming.sinks import TableSchemaError
from streaming.sinks.delta import DeltaSink
from streaming.sinks.frames import table_frame
from streaming.tracking.events import to_row
from tests.delta_rows import events_frame, table_frames_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark]

S = 1000
C1, C2 = "client-1-aaaa", "client-2-bbbb"


def tracker_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two batches of real tracker rows: generation 1 (one member), then generation 2; every
    lag status change is a ``lag_transitions`` row (no hold), so every event table has rows."""
    from streaming.tracking.config import TrackerConfig
    from tests.unit.streaming.tracking.factories import (
        Log,
        Tracker,
        assign,
        member,
        topics_snapshot,
    )

    log, tracker = Log(), Tracker(config=TrackerConfig(lag_status_hold_ms=0))
    topics = {"t": 4}
    out: list[list[dict[str, Any]]] = []
    joined: list[str] = []
    for gen, new in enumerate((C1, C2), start=1):
        joined.append(new)
        actual = assign("range", [(m, ["t"]) for m in joined], topics)
        log.snap(topics_snapshot(gen * 10 * S - 500, {"t": [100 * gen] * 4}))
        log.gm(gen, [member(m, ["t"], actual[m]) for m in joined], ts=gen * 10 * S)
        log.commits([p for m in joined for p in actual[m]], ts=gen * 10 * S + 2 * S)
        out.append([to_row(e) for e in tracker.feed(log.take())])
    return out[0], out[1]


@pytest.fixture(scope="module")
def rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return tracker_rows()


def commits(sink: DeltaSink, table: str) -> int:
    """Commits in the table's Delta log (a skipped append adds none)."""
    return len(list(Path(sink.path(table), "_delta_log").glob("*.json")))


def row_counts(spark: SparkSession, sink: DeltaSink, tables: list[str]) -> dict[str, int]:
    """Rows per table, in one Spark job."""
    from pyspark.sql import functions as F

    frames = [
        spark.read.format("delta").load(sink.path(x)).select(F.lit(x).alias("table"))
        for x in tables
    ]
    union = reduce(lambda a, b: a.unionByName(b), frames)
    return {r["table"]: r["count"] for r in union.groupBy("table").count().collect()}


def log_metadata(sink: DeltaSink, table: str) -> dict[str, Any]:
    """The table's ``metaData`` action, read from its first commit file."""
    first = Path(sink.path(table), "_delta_log", f"{0:020d}.json")
    actions = [json.loads(line) for line in first.read_text().splitlines() if line]
    meta: dict[str, Any] = next(a["metaData"] for a in actions if "metaData" in a)
    return meta


def test_tables_are_created_once_with_the_documented_schema(
    spark: SparkSession, tmp_path: Path
) -> None:
    from pyspark.sql.types import StructType

    sink = DeltaSink(spark, str(tmp_path), "app-1")
    sink.ensure_tables()
    sink.ensure_tables()  # already there: checked, nothing written
    for table in t.TABLE_NAMES:
        assert commits(sink, table) == 1, table  # one CREATE, no second commit
        meta = log_metadata(sink, table)
        assert meta["partitionColumns"] == ["date"], table
        schema = StructType.fromJson(json.loads(meta["schemaString"]))
        assert schema == t.schema(table), table  # types, nullability, column comments
    key = t.schema(t.BAD_RECORDS)["key"]
    assert key.metadata == {"comment": "raw key bytes"}


def test_the_per_partition_tables_keep_statistics_of_their_filter_columns_only(
    spark: SparkSession, tmp_path: Path
) -> None:
    """offset_commits and partition_lag get a row per partition: Delta keeps min/max/null
    statistics of the columns their audit queries filter on, not of every column (the
    appended file's stats say which); a table created before is given the property once."""
    sink = DeltaSink(spark, str(tmp_path), "app-1")
    sink.ensure_tables()
    wanted = ",".join(t.STATS_COLUMNS[t.OFFSET_COMMITS])
    meta = log_metadata(sink, t.OFFSET_COMMITS)
    assert meta["configuration"]["delta.dataSkippingStatsColumns"] == wanted
    assert "delta.dataSkippingStatsColumns" not in log_metadata(sink, t.REBALANCE_EVENTS).get(
        "configuration", {}
    )
    row: dict[str, Any] = dict.fromkeys(t.schema(t.OFFSET_COMMITS).fieldNames())
    row |= {"event_id": "e", "cluster": "c", "group_id": "g", "event_ts_ms": 1, "topic": "t"}
    row |= {"partition": 0, "deleted": False, "source_partition": 0, "source_offset": 7}
    row |= {"offset": 5, "event_time": dt.datetime(2026, 1, 1), "date": dt.date(2026, 1, 1)}
    frame = spark.createDataFrame([row], t.schema(t.OFFSET_COMMITS))
    sink.write_batch(0, {t.OFFSET_COMMITS: frame})
    second = Path(sink.path(t.OFFSET_COMMITS), "_delta_log", f"{1:020d}.json")
    (add,) = [
        json.loads(line)["add"] for line in second.read_text().splitlines() if '"add"' in line
    ]
    stats = json.loads(add["stats"])
    assert set(stats["minValues"]) <= set(t.STATS_COLUMNS[t.OFFSET_COMMITS])
    assert set(stats["nullCount"]) == set(t.STATS_COLUMNS[t.OFFSET_COMMITS])

    # a table created by a version without the property is given it
    spark.sql(
        f"ALTER TABLE delta.`{sink.path(t.PARTITION_LAG)}` "
        "UNSET TBLPROPERTIES ('delta.dataSkippingStatsColumns')"
    )
    sink.ensure_tables()
    from delta.tables import DeltaTable

    detail = DeltaTable.forPath(spark, sink.path(t.PARTITION_LAG)).detail().collect()[0]
    assert detail["properties"]["delta.dataSkippingStatsColumns"] == wanted
    before = commits(sink, t.PARTITION_LAG)
    sink.ensure_tables()  # already given: no commit
    assert commits(sink, t.PARTITION_LAG) == before


def test_an_existing_table_with_other_columns_is_refused(
    spark: SparkSession, tmp_path: Path
) -> None:
    sink = DeltaSink(spark, str(tmp_path), "app-1")
    spark.createDataFrame([(1, dt.date(2026, 1, 1))], "x INT, date DATE").write.format(
        "delta"
    ).partitionBy("date").save(sink.path(t.OFFSET_COMMITS))
    with pytest.raises(TableSchemaError, match="offset_commits"):
        sink.ensure_tables()


def test_a_replayed_batch_is_written_once_and_a_later_batch_appends(
    spark: SparkSession,
    tmp_path: Path,
    rows: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    first, second = (table_frames_of(spark, batch, i) for i, batch in enumerate(rows))
    # The tracker's rows fill every event table but offset_commits (the commit lane's,
    # tests/spark/test_commit_lane.py) and conform to the schemas.
    assert set(first) == set(t.KIND_TO_TABLE.values()) - {t.OFFSET_COMMITS}
    sink = DeltaSink(spark, str(tmp_path), "app-1")
    sink.ensure_tables()
    tables = sorted(set(first))
    assert {x: commits(sink, x) for x in tables} == dict.fromkeys(tables, 1)  # CREATE

    assert sorted(sink.write_batch(0, first)) == tables
    sink.write_batch(0, first)  # Spark re-runs batch 0 after a crash: skipped
    assert {x: commits(sink, x) for x in tables} == dict.fromkeys(tables, 2)

    sink.write_batch(1, second)
    sink.write_batch(0, first)  # an old batch id is never written again
    assert {x: commits(sink, x) for x in tables} == {x: 2 + (x in second) for x in tables}

    def kept(r: dict[str, Any]) -> bool:  # partition_lag keeps its stored measurements
        return r["kind"] != "partition_lag" or r["stored"] is not False

    per_table = {
        x: sum(t.KIND_TO_TABLE.get(r["kind"]) == x and kept(r) for b in rows for r in b)
        for x in tables
    }
    assert row_counts(spark, sink, tables) == per_table

    # The partition column and the nested columns, queryable without parsing.
    got = (
        spark.read.format("delta")
        .load(sink.path(t.REBALANCE_EVENTS))
        .selectExpr("generation_after", "date", "year(event_time)", "sort_array(map_keys(actual))")
        .orderBy("generation_after")
        .collect()
    )
    assert [tuple(r) for r in got] == [
        (1, dt.date(1970, 1, 1), 1970, [C1]),
        (2, dt.date(1970, 1, 1), 1970, [C1, C2]),
    ]

    # A new checkpoint (batch ids from 0 again) with a new app id is written.
    fresh = DeltaSink(spark, str(tmp_path), "app-2")
    before = commits(sink, t.GROUP_METRICS)
    fresh.write_batch(0, {t.GROUP_METRICS: first[t.GROUP_METRICS]})
    assert commits(sink, t.GROUP_METRICS) == before + 1


def test_a_batch_whose_lag_measurements_are_all_unkept_appends_nothing_to_partition_lag(
    spark: SparkSession,
    tmp_path: Path,
    rows: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    from streaming.sinks.micro_batch import Sinks

    lag = [r for b in rows for r in b if r["kind"] == "partition_lag"]
    metrics = [r for b in rows for r in b if r["kind"] == "group_metrics"]
    assert lag and metrics
    unkept = [{**r, "stored": False} for r in lag]  # measured inside their interval
    sink = DeltaSink(spark, str(tmp_path), "app-1")
    sink.ensure_tables()
    lines: list[str] = []
    sinks = Sinks(sink, None, progress=lines.append)

    sinks.events_batch(events_frame(spark, unkept + metrics), 0)
    assert commits(sink, t.PARTITION_LAG) == 1  # its CREATE only: no empty append
    assert commits(sink, t.GROUP_METRICS) == 2
    assert f"partition_lag={len(lag)}" in lines[-1]  # still counted as the batch's events

    kept = next(r for r in lag if r["stored"] is not False)
    sinks.events_batch(events_frame(spark, [*unkept[:1], kept]), 1)
    assert commits(sink, t.PARTITION_LAG) == 2
    assert row_counts(spark, sink, [t.PARTITION_LAG]) == {t.PARTITION_LAG: 1}


def test_rows_written_count_this_batch_append_past_a_maintenance_commit(
    spark: SparkSession,
    tmp_path: Path,
    rows: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    first, second = (table_frames_of(spark, batch, i) for i, batch in enumerate(rows))
    sink = DeltaSink(spark, str(tmp_path), "app-1")
    sink.ensure_tables()
    told: list[tuple[str, int]] = []
    sink.on_rows_written = lambda table, n: told.append((table, n))
    table = t.MEMBER_ASSIGNMENTS
    sink.write_batch(0, {table: first[table]})
    sink.write_batch(0, {table: first[table]})  # a replay: skipped, nothing counted
    assert told == [(table, first[table].count())]

    # maintenance commits between the append and the count: the append is still found
    where = sink.path(table)
    sink.write_batch(1, {table: second[table]})
    spark.sql(f"OPTIMIZE delta.`{where}`").collect()
    assert told[1] == (table, second[table].count())
    marks = [
        r["userMetadata"]
        for r in spark.sql(f"DESCRIBE HISTORY delta.`{where}`").collect()
        if (r["userMetadata"] or "").startswith("app-1:1:")
    ]
    assert len(marks) == 1
    assert sink._rows_written(table, marks[0]) == second[table].count()
    assert sink._rows_written(table, "app-1:1:" + "0" * 32) is None  # another attempt's


def test_bad_records_keep_the_raw_bytes(spark: SparkSession, tmp_path: Path) -> None:
    from streaming.sinks.micro_batch import table_frames
    from streaming.spark.step_rows import EVENTS_SCHEMA, bad_record_struct

    sink = DeltaSink(spark, str(tmp_path), "app-1")
    sink.ensure_tables()
    raw_key, raw_value = b"\x00\x02\x00\x03grp\xff", bytes(range(256))
    decoded = [  # the decode stage's columns of two bad records
        {
            "topic": "__consumer_offsets",
            "partition": 7,
            "offset": 42,
            "timestamp_ms": 1_767_225_600_000,  # 2026-01-01T00:00:00Z
            "key": raw_key,
            "value": raw_value,
            "error": "value.members[0].subscription at byte 17: truncated",
            "error_type": "TruncatedError",
            "error_field": "value.members[0].subscription",
            "error_offset": 17,
        },
        {
            "topic": "__consumer_offsets",
            "partition": 7,
            "offset": 43,
            "timestamp_ms": 1_767_225_600_001,
            "key": b"\x00\x63",
            "value": None,
            "error": "key version 99",
            "error_type": None,
            "error_field": None,
            "error_offset": None,
        },
    ]
    events = spark.createDataFrame(
        [
            dict.fromkeys(EVENTS_SCHEMA.fieldNames())
            | {"kind": "bad_record", "event_id": str(d["offset"]), "event_ts_ms": 0}
            | {t.BAD_RECORDS: bad_record_struct(d)}
            for d in decoded
        ],
        schema=EVENTS_SCHEMA,
    )
    frames = table_frames(events, ["bad_record"], 3)
    assert list(frames) == [t.BAD_RECORDS]
    sink.write_batch(3, frames)
    sink.write_batch(3, frames)  # a replay writes nothing
    got = spark.read.format("delta").load(sink.path(t.BAD_RECORDS)).orderBy("offset").collect()
    assert len(got) == 2
    assert (bytes(got[0]["key"]), bytes(got[0]["value"])) == (raw_key, raw_value)
    assert (got[0]["field"], got[0]["byte_offset"], got[0]["error_type"]) == (
        "value.members[0].subscription",
        17,
        "TruncatedError",
    )
    assert got[0]["date"] == dt.date(2026, 1, 1)
    assert [r["batch_id"] for r in got] == [3, 3]
    assert got[1]["value"] is None and got[1]["field"] is None


def test_columns_follow_the_tracker_rows_field_by_field() -> None:
    """Every field of every row class (and of its nested parts) is a column, in order."""
    import dataclasses
    import types
    import typing

    from pyspark.sql.types import ArrayType, DataType, MapType, StructType

    from streaming.tracking.events import EVENT_TYPES

    def check(cls: type[Any], struct: StructType, where: str) -> None:
        hints = typing.get_type_hints(cls)
        step_only = {f.name for f in t.STEP_COLUMNS.get(where, ())}  # the step's, not kept
        names = [f.name for f in dataclasses.fields(cls) if f.name not in step_only]
        assert [n for n in struct.fieldNames() if n not in t.DERIVED_COLUMNS] == names, where
        for name in names:
            walk(hints[name], struct[name].dataType, f"{where}.{name}")

    def walk(hint: Any, dtype: DataType, where: str) -> None:
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
            (hint,) = [a for a in typing.get_args(hint) if a is not type(None)]
        args = typing.get_args(hint)
        if isinstance(dtype, ArrayType):
            walk(args[0], dtype.elementType, f"{where}[]")
        elif isinstance(dtype, MapType):
            walk(args[1], dtype.valueType, f"{where}{{}}")
        elif isinstance(dtype, StructType):
            if dataclasses.is_dataclass(hint):
                check(hint, dtype, where)  # type: ignore[arg-type]
            else:  # TopicPartition
                assert dtype.fieldNames() == list(hint._fields), where

    for kind, table in t.KIND_TO_TABLE.items():
        check(EVENT_TYPES[kind], t.schema(table), table)


def test_table_frame_gives_the_tracker_rows_column_for_column(
    spark: SparkSession, rows: tuple[list[dict[str, Any]], list[dict[str, Any]]]
) -> None:
    """The job's path (each tracker row in its table's struct column of the stateful
    step's rows) gives every table column of the tracker's rows, with ``event_time`` and
    ``date`` derived from ``event_ts_ms``."""
    tracker = [r for batch in rows for r in batch]
    events = events_frame(spark, tracker)
    tables = {t.KIND_TO_TABLE[r["kind"]] for r in tracker if r["kind"] in t.KIND_TO_TABLE}
    assert tables >= {t.REBALANCE_EVENTS, t.MEMBER_ASSIGNMENTS, t.GROUP_METRICS}

    def plain(value: Any) -> Any:  # a Spark value and a to_row value compare alike
        if isinstance(value, Mapping):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        return value

    for table in sorted(tables):
        body = [c for c in t.body_schema(table).fieldNames() if c in t.schema(table).names]
        want = [
            plain({c: r[c] for c in body})
            for r in tracker
            # the exporter takes every lag row, the table the stored ones
            if t.KIND_TO_TABLE.get(r["kind"]) == table and r.get("stored", True) is not False
        ]
        got = table_frame(events, table).collect()
        for row in got:
            # PySpark gives a naive local time: .timestamp() reads it back as local time
            assert round(row["event_time"].timestamp() * 1000) == row["event_ts_ms"]
            utc = dt.datetime.fromtimestamp(row["event_ts_ms"] / 1000, tz=dt.UTC)
            assert row["date"] == utc.date()
        key = lambda d: json.dumps(d, sort_keys=True, default=str)  # noqa: E731
        got_rows = [plain({c: row.asDict(recursive=True)[c] for c in body}) for row in got]
        assert sorted(map(key, got_rows)) == sorted(map(key, want)), table


def _without(schema: Any, drop: Mapping[str, str | None]) -> Any:
    """``schema`` without the columns of ``drop`` (name -> a field of its array's structs to
    drop instead, or None for the column itself): a table as an older version made it."""
    from pyspark.sql.types import ArrayType, StructField, StructType

    fields = []
    for f in schema.fields:
        if f.name in drop and drop[f.name] is None:
            continue
        if f.name in drop:
            inner = f.dataType.elementType
            kept = StructType([x for x in inner.fields if x.name != drop[f.name]])
            f = StructField(f.name, ArrayType(kept, f.dataType.containsNull), f.nullable)
        fields.append(f)
    return StructType(fields)


def test_an_older_table_gains_the_new_nullable_columns(
    spark: SparkSession,
    tmp_path: Path,
    rows: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    from delta.tables import DeltaTable

    from streaming.sinks.delta import added_columns

    expected = t.schema(t.REBALANCE_EVENTS)
    older = _without(expected, {"own_strategy_implementation": None, "expected": "implementation"})
    assert added_columns(older, expected) == [
        "expected.element.implementation string AFTER churn",
        "own_strategy_implementation string COMMENT "
        "'client implementation the own strategy was judged against' "
        "AFTER own_strategy_divergent",
    ]
    sink = DeltaSink(spark, str(tmp_path), "app-1")
    path = sink.path(t.REBALANCE_EVENTS)
    DeltaTable.create(spark).location(path).addColumns(older).partitionedBy("date").execute()

    sink.ensure_tables()
    assert [
        (f.name, f.dataType.simpleString())
        for f in spark.read.format("delta").load(path).schema.fields
    ] == [(f.name, f.dataType.simpleString()) for f in expected.fields]
    first = table_frames_of(spark, rows[0], 0)
    sink.write_batch(0, first)
    written = spark.read.format("delta").load(path).collect()
    assert len(written) == first[t.REBALANCE_EVENTS].count() > 0
    assert {r.own_strategy_implementation for r in written} == {
        r["own_strategy_implementation"]
        for r in first[t.REBALANCE_EVENTS].select("own_strategy_implementation").collect()
    }
    before = commits(sink, t.REBALANCE_EVENTS)
    sink.ensure_tables()  # the next start changes nothing
    assert commits(sink, t.REBALANCE_EVENTS) == before


def test_an_older_commit_table_gains_the_reason_column() -> None:
    """``offset_commits`` of a version before ``reason``: one nullable column added at its
    place (the job's start does it, as for any table, above)."""
    from streaming.sinks.delta import added_columns

    expected = t.schema(t.OFFSET_COMMITS)
    older = _without(expected, {"reason": None})
    (clause,) = added_columns(older, expected) or [None]
    assert clause is not None and clause.startswith("reason string COMMENT 'why it is kept")
    assert clause.endswith("AFTER source_offset")


def test_a_table_missing_a_required_column_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    from delta.tables import DeltaTable

    expected = t.schema(t.REBALANCE_EVENTS)
    required = next(f.name for f in expected.fields if not f.nullable and f.name != "date")
    sink = DeltaSink(spark, str(tmp_path), "app-1")
    path = sink.path(t.REBALANCE_EVENTS)
    older = _without(expected, {required: None})
    DeltaTable.create(spark).location(path).addColumns(older).partitionedBy("date").execute()
    with pytest.raises(TableSchemaError, match="rebalance_events"):
        sink.ensure_tables()
