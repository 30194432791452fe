"""The eight Delta tables: Spark schemas, the ``date`` partition column, tracker rows -> rows.

=====================  ===================================  ==================================
table                  one row per                          from
=====================  ===================================  ==================================
rebalance_events       rebalance                            ``RebalanceEvent``
member_assignments     generation x member x partition      ``MemberAssignmentRow``
group_metrics          rebalance x (actual, each strategy)  ``GroupMetricsRow``
offset_commits         offset commit or offset tombstone    ``OffsetCommitRow``
                       (kept: those that matter, a sample)
partition_lag          lag measurement of a partition per   ``PartitionLagRow`` (``stored``)
                       interval
group_lag              group x minute: its lag rolled up    ``GroupLagRow``
lag_transitions        change of a partition's or a         ``LagTransitionRow``
                       group's lag status
bad_records            record that failed to decode         ``bad_record`` rows
=====================  ===================================  ==================================

``GroupStatus`` and ``GroupDeleted`` feed Prometheus only (the status is an upsert, the
tombstone is also in ``offset_commits``/``rebalance_events`` history).

Column names are the tracker's field names (``docs/tables.md`` documents each one), plus:

* ``event_time``: ``event_ts_ms`` as a UTC ``TIMESTAMP`` for SQL convenience;
* ``date``: the UTC calendar date of the event time (``bad_records``: of the Kafka record
  timestamp), the partition column of every table.

Nested values are typed Spark structs, arrays and maps, not JSON strings: assignments are
``map<member_id, array<struct<topic, partition>>>``, members/departures/expected strategies
arrays of structs, so audit SQL can ``explode`` and filter them without parsing (and Delta
keeps their statistics). The flat ``member_assignments`` and ``group_metrics`` tables are
the place for everyday queries; the nested columns keep the whole event for audits.

The stateful step carries each row as its table's typed struct (:func:`body_schema`), so a
tracker row that does not fit the table's types fails the micro-batch instead of losing a
value.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import types
import typing
from typing import Any, ClassVar, Literal

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from streaming.errors import RebalanceMonitorError

__all__ = [
    "BAD_RECORDS",
    "BAD_RECORD_DERIVED",
    "BAD_RECORD_KIND",
    "DERIVED_COLUMNS",
    "DRIVER_STRUCTS",
    "GROUP_LAG",
    "GROUP_METRICS",
    "KIND_TO_TABLE",
    "LAG_TRANSITIONS",
    "MEMBER_ASSIGNMENTS",
    "OFFSET_COMMITS",
    "PARTITION_COLUMN",
    "PARTITION_LAG",
    "REBALANCE_EVENTS",
    "SCHEMAS",
    "STATS_COLUMNS",
    "STEP_COLUMNS",
    "TABLE_NAMES",
    "TRACKER_TABLES",
    "UnknownTableError",
    "body_schema",
    "dataclass_struct",
    "date_of_ms",
    "relaxed",
    "schema",
]


class UnknownTableError(RebalanceMonitorError, KeyError):
    """A table name that is not one of :data:`TABLE_NAMES`."""


REBALANCE_EVENTS = "rebalance_events"
MEMBER_ASSIGNMENTS = "member_assignments"
GROUP_METRICS = "group_metrics"
OFFSET_COMMITS = "offset_commits"
PARTITION_LAG = "partition_lag"
GROUP_LAG = "group_lag"
LAG_TRANSITIONS = "lag_transitions"
BAD_RECORDS = "bad_records"

TABLE_NAMES: tuple[str, ...] = (
    REBALANCE_EVENTS,
    MEMBER_ASSIGNMENTS,
    GROUP_METRICS,
    OFFSET_COMMITS,
    PARTITION_LAG,
    GROUP_LAG,
    LAG_TRANSITIONS,
    BAD_RECORDS,
)

#: The ``kind`` of a quarantined record's row.
BAD_RECORD_KIND = "bad_record"
#: Tracker row ``kind`` -> table.
KIND_TO_TABLE: dict[str, str] = {
    "rebalance": REBALANCE_EVENTS,
    "member_assignment": MEMBER_ASSIGNMENTS,
    "group_metrics": GROUP_METRICS,
    "offset_commit": OFFSET_COMMITS,
    "partition_lag": PARTITION_LAG,
    "group_lag": GROUP_LAG,
    "lag_transition": LAG_TRANSITIONS,
}

PARTITION_COLUMN = "date"
#: Columns the sink derives (not in the tracker's rows).
DERIVED_COLUMNS: tuple[str, ...] = ("event_time", PARTITION_COLUMN)
#: The columns Delta keeps statistics of (min, max, null count: data skipping) in the tables
#: with a row per partition, ``delta.dataSkippingStatsColumns``: what their audit queries
#: filter on (``docs/tables.md``). Delta's default, the first 32 columns, computes every
#: column's statistics row by row, a large share of the JVM's work when a micro-batch writes
#: many ``offset_commits`` rows. The other tables keep the default.
STATS_COLUMNS: dict[str, tuple[str, ...]] = {
    OFFSET_COMMITS: ("cluster", "group_id", "topic", "partition", "event_ts_ms"),
    PARTITION_LAG: ("cluster", "group_id", "topic", "partition", "event_ts_ms"),
    GROUP_LAG: ("cluster", "group_id", "event_ts_ms"),
}


# -- building blocks ----------------------------------------------------------------------------


def _field(name: str, dtype: DataType, nullable: bool, comment: str) -> StructField:
    return StructField(name, dtype, nullable, {"comment": comment} if comment else None)


def _f(name: str, dtype: DataType, comment: str = "") -> StructField:
    """A nullable column."""
    return _field(name, dtype, True, comment)


def _s() -> StringType:
    return StringType()


def _req(name: str, dtype: DataType, comment: str = "") -> StructField:
    """A non-nullable column."""
    return _field(name, dtype, False, comment)


_TP = StructType([_req("topic", StringType()), _req("partition", IntegerType())])
_TPS = ArrayType(_TP, containsNull=False)
_ASSIGNMENT = MapType(StringType(), _TPS, valueContainsNull=False)
_STRINGS = ArrayType(StringType(), containsNull=False)

_MEMBER = StructType(
    [
        _req("member_id", _s()),
        _f("group_instance_id", _s()),
        _f("client_id", _s()),
        _f("client_host", _s()),
        _f("rack", _s()),
        _req("topics", _STRINGS),
        _req("partitions", _TPS),
        _f("session_timeout_ms", IntegerType()),
        _f("rebalance_timeout_ms", IntegerType()),
    ]
)
_DEPARTURE = StructType(
    [
        _req("member_id", _s()),
        _f("group_instance_id", _s()),
        _req("kind", _s()),
        _req("rule", _s()),
        _f("last_alive_ts_ms", LongType()),
        _f("removed_after_ts_ms", LongType()),
        _f("removed_by_ts_ms", LongType()),
        _f("silence_ms", LongType()),
        _f("session_timeout_ms", IntegerType()),
        _f("commit_interval_ms", LongType()),
    ]
)
_STATIC_REJOIN = StructType(
    [_req("group_instance_id", _s()), _req("old_member_id", _s()), _req("new_member_id", _s())]
)
_SKEW = StructType(
    [
        _req("members", IntegerType()),
        _req("partitions", IntegerType()),
        _req("min_partitions", IntegerType()),
        _req("max_partitions", IntegerType()),
        _req("spread_partitions", IntegerType()),
        _req("mean_partitions", DoubleType()),
        _req("imbalance_ratio", DoubleType()),
        _req("cv", DoubleType()),
    ]
)
_CHURN = StructType(
    [
        _req("owned_before_partitions", IntegerType()),
        _req("moved_partitions", IntegerType()),
        _req("revoked_partitions", IntegerType()),
        _req("assigned_partitions", IntegerType()),
        _req("moved_fraction", DoubleType()),
        _req("moved", _TPS),
        _req("joined", _STRINGS),
        _req("left", _STRINGS),
    ]
)
_WITHHELD = StructType(
    [_req("topic", _s()), _req("partition", IntegerType()), _req("member_id", _s())]
)
_EXPECTED = StructType(
    [
        _req("strategy", _s()),
        _req("side", _s()),
        _req("own", BooleanType()),
        _f("assignment", _ASSIGNMENT),
        _req("withheld", ArrayType(_WITHHELD, containsNull=False)),
        _f("error", _s()),
        _f("divergent", BooleanType()),
        _req("divergent_members", _STRINGS),
        _f("skew", _SKEW),
        _f("churn", _CHURN),
        _f("implementation", _s()),
    ]
)


def _head(ts_comment: str = "event time (ms since the Unix epoch, UTC)") -> list[StructField]:
    return [
        _req("event_id", _s(), "stable id of the row: the idempotency key"),
        _req("cluster", _s(), "cluster label"),
        _req("group_id", _s(), "consumer group id"),
        _req("event_ts_ms", LongType(), ts_comment),
        _req("event_time", TimestampType(), "event_ts_ms as a UTC timestamp"),
    ]


_DATE = _req(PARTITION_COLUMN, DateType(), "UTC date of the event time (partition column)")


def relaxed(dtype: DataType) -> DataType:
    """``dtype`` with every nested field, element and map value nullable: Delta refuses
    NOT NULL inside arrays and maps (``DELTA_NESTED_NOT_NULL_CONSTRAINT``). The nested
    ``_req`` marks still document which values the tracker always fills."""
    if isinstance(dtype, StructType):
        return StructType(
            [StructField(f.name, relaxed(f.dataType), True, f.metadata) for f in dtype.fields]
        )
    if isinstance(dtype, ArrayType):
        return ArrayType(relaxed(dtype.elementType), containsNull=True)
    if isinstance(dtype, MapType):
        return MapType(dtype.keyType, relaxed(dtype.valueType), valueContainsNull=True)
    return dtype


def _table(fields: list[StructField]) -> StructType:
    """Top-level NOT NULL kept (Delta enforces it), nested types relaxed."""
    return StructType(
        [StructField(f.name, relaxed(f.dataType), f.nullable, f.metadata) for f in fields]
    )


SCHEMAS: dict[str, StructType] = {
    REBALANCE_EVENTS: _table(
        [
            *_head(),
            _req("group_protocol", _s(), "classic or consumer (KIP-848)"),
            _f("protocol_type", _s()),
            _f("strategy", _s(), "the group's assignor (protocol name)"),
            _req("rebalance_protocol", _s(), "eager or cooperative"),
            _req("is_rebalance", BooleanType()),
            _f("generation_before", IntegerType()),
            _req("generation_after", IntegerType()),
            _f("leader_before", _s()),
            _f("leader_after", _s()),
            _req("members_before", ArrayType(_MEMBER, containsNull=False)),
            _req("members_after", ArrayType(_MEMBER, containsNull=False)),
            _req("joined", _STRINGS),
            _req("left", _STRINGS),
            _req("static_rejoins", ArrayType(_STATIC_REJOIN, containsNull=False)),
            _req("departures", ArrayType(_DEPARTURE, containsNull=False)),
            _req("cause", _s()),
            _req("cause_rule", IntegerType()),
            _req("cause_detail", _s()),
            _req("cause_factors", _STRINGS),
            _f("started_ts_ms", LongType()),
            _req("completed_ts_ms", LongType()),
            _f("duration_ms", LongType()),
            _f("duration_max_ms", LongType()),
            _f("duration_source", _s()),
            _f("assignment_duration_ms", LongType()),
            _req("completion", _s()),
            _req("actual", _ASSIGNMENT, "member_id -> partitions"),
            _req("actual_skew", _SKEW),
            _req("churn", _CHURN),
            _req("paused_partitions", _TPS),
            _req("topic_partition_counts", MapType(_s(), IntegerType(), False)),
            _req("topic_partition_count_sources", MapType(_s(), _s(), False)),
            _req("expected", ArrayType(_EXPECTED, containsNull=False)),
            _req("divergent", MapType(_s(), BooleanType(), False), "strategy -> divergent"),
            _f("own_strategy_divergent", BooleanType()),
            _f(
                "own_strategy_implementation",
                _s(),
                "client implementation the own strategy was judged against",
            ),
            _req("source_partition", IntegerType(), "__consumer_offsets partition"),
            _req("source_offset", LongType(), "offset of the record that completed it"),
            _DATE,
        ]
    ),
    MEMBER_ASSIGNMENTS: _table(
        [
            *_head(),
            _req("rebalance_event_id", _s()),
            _req("generation", IntegerType()),
            _req("member_id", _s()),
            _f("group_instance_id", _s()),
            _f("client_id", _s()),
            _req("topic", _s()),
            _req("partition", IntegerType()),
            _DATE,
        ]
    ),
    GROUP_METRICS: _table(
        [
            *_head(),
            _req("rebalance_event_id", _s()),
            _req("generation", IntegerType()),
            _req("strategy", _s()),
            _req("is_actual", BooleanType()),
            _req("is_own_strategy", BooleanType()),
            _f("error", _s()),
            _req("member_count", IntegerType()),
            _req("partition_count", IntegerType()),
            _req("min_partitions", IntegerType()),
            _req("max_partitions", IntegerType()),
            _req("spread_partitions", IntegerType()),
            _req("imbalance_ratio", DoubleType()),
            _req("cv", DoubleType()),
            _req("moved_partitions", IntegerType()),
            _req("revoked_partitions", IntegerType()),
            _req("assigned_partitions", IntegerType()),
            _req("moved_fraction", DoubleType()),
            _f("divergent", BooleanType()),
            _req("divergent_member_count", IntegerType()),
            _req("rebalance_protocol", _s(), "eager or cooperative: how the strategy revokes"),
            _req("paused_partitions", IntegerType(), "partitions the rebalance paused"),
            _req(
                "paused_partition_seconds",
                DoubleType(),
                "paused partitions x the rebalance's measured duration (docs/tracking.md)",
            ),
            _req("needs_followup", BooleanType(), "withheld partitions for a second round"),
            _DATE,
        ]
    ),
    OFFSET_COMMITS: _table(
        [
            *_head(),
            _req("topic", _s()),
            _req("partition", IntegerType()),
            _f("offset", LongType()),
            _f("leader_epoch", IntegerType()),
            _f("metadata", _s()),
            _f("commit_ts_ms", LongType()),
            _f("expire_ts_ms", LongType()),
            _req("deleted", BooleanType()),
            _req("source_partition", IntegerType()),
            _req("source_offset", LongType()),
            _f(
                "reason",
                _s(),
                "why it is kept: tombstone, first, rewind, jump, rebalance or sample "
                "(null: the table keeps every commit or the latest per micro-batch)",
            ),
            _DATE,
        ]
    ),
    PARTITION_LAG: _table(
        [
            *_head(),
            _req("topic", _s()),
            _req("partition", IntegerType()),
            _req("committed_offset", LongType()),
            _f("end_offset", LongType()),
            _f("end_offset_ts_ms", LongType()),
            _f("lag_records", LongType()),
            _f("lag_seconds", DoubleType()),
            _req("lag_seconds_method", _s()),
            _req("measured_ts_ms", LongType()),
            _req("trigger", _s(), "commit or snapshot"),
            _f("status", _s(), "lag status: OK, WARN, STOP, STALL, REWIND (docs/tracking.md)"),
            _f("status_rule", IntegerType(), "the lag status rule (S1-S8) that decided it"),
            _DATE,
        ]
    ),
    GROUP_LAG: _table(
        [
            *_head("the measurement's time (ms since the Unix epoch, UTC)"),
            _req("interval_ts_ms", LongType(), "start of the window it is the group's row of"),
            _req("partitions", IntegerType(), "committed partitions"),
            _req("partitions_measured", IntegerType(), "partitions with a fresh end offset"),
            _req("partitions_unknown", IntegerType(), "partitions whose end offset is stale"),
            _f("total_lag_records", LongType(), "null: some partition's lag is unknown"),
            _f("max_lag_records", LongType(), "null: some partition's lag is unknown"),
            _f("max_lag_seconds", DoubleType(), "null: some partition's lag is unknown"),
            _f("status", _s(), "the group's lag status: OK, WARN, ERR (null: no verdict)"),
            _req("partitions_ok", IntegerType()),
            _req("partitions_warn", IntegerType()),
            _req("partitions_err", IntegerType(), "partitions STOP, STALL or REWIND"),
            _DATE,
        ]
    ),
    LAG_TRANSITIONS: _table(
        [
            *_head("when the new status was measured (ms since the Unix epoch, UTC)"),
            _req("scope", _s(), "partition or group"),
            _f("topic", _s(), "null for the group"),
            _f("partition", IntegerType(), "null for the group"),
            _f("status_before", _s(), "null: no verdict (no end offset, or a stale one)"),
            _f("status_after", _s(), "null: no verdict (no end offset, or a stale one)"),
            _f("rule", IntegerType(), "the lag status rule (S1-S8) of a partition's new status"),
            _f("lag_records", LongType(), "the partition's lag (the group's total) then"),
            _f("lag_seconds", DoubleType(), "the partition's lag (the group's worst) then"),
            _DATE,
        ]
    ),
    BAD_RECORDS: _table(
        [
            _req("topic", _s(), "source topic"),
            _req("partition", IntegerType(), "source partition"),
            _req("offset", LongType(), "source offset"),
            _req("timestamp_ms", LongType(), "Kafka record timestamp (ms since the epoch)"),
            _req("timestamp", TimestampType(), "Kafka record timestamp"),
            _f("key", BinaryType(), "raw key bytes"),
            _f("value", BinaryType(), "raw value bytes (null: tombstone)"),
            _req("error", _s(), "the error message"),
            _f("error_type", _s(), "exception class, e.g. TruncatedError"),
            _f("field", _s(), "path of the field that failed, e.g. value.members[2]"),
            _f("byte_offset", IntegerType(), "offset in the key or value buffer"),
            _f("batch_id", LongType(), "micro-batch that quarantined it"),
            _req(PARTITION_COLUMN, DateType(), "UTC date of the record timestamp"),
        ]
    ),
}


def schema(table: str) -> StructType:
    """The Spark schema of ``table`` (one of :data:`TABLE_NAMES`)."""
    try:
        return SCHEMAS[table]
    except KeyError:
        raise UnknownTableError(table) from None


def date_of_ms(ts_ms: int) -> dt.date:
    """The UTC calendar date of a time in ms since the Unix epoch."""
    return dt.datetime.fromtimestamp(ts_ms / 1000, tz=dt.UTC).date()


# -- rows -----------------------------------------------------------------------------------


#: The commit lane's rows (:func:`streaming.spark.commits.commit_rows`): kind, and the
#: ``offset_commits`` columns as one struct.
COMMIT_KIND, COMMIT_STRUCT_COLUMN = "offset_commit", "offset_commit"
#: With ``history="latest"``, the stateful step's row of a group's commit runs of one source
#: partition (kind and struct column): the ``offset_commits`` values of each run's last
#: commit as parallel lists (:data:`RUN_LIST_FIELDS`), which
#: :func:`streaming.sinks.frames.commit_frame` makes rows of in the JVM. One row for all of
#: a group's runs: the Python workers build and convert to Arrow a row per group, not a row
#: per partition.
COMMIT_RUNS_KIND = COMMIT_RUNS_COLUMN = "offset_commit_runs"
#: The ``offset_commits`` columns a run's list entry gives: the rest are the row's
#: (``cluster``, ``group_id``, ``source_partition``), constant (``deleted``: false) or
#: derived (``event_id``).
RUN_LIST_FIELDS: tuple[str, ...] = (
    "topic",
    "partition",
    "offset",
    "leader_epoch",
    "metadata",
    "commit_ts_ms",
    "expire_ts_ms",
    "source_offset",
    "event_ts_ms",
)


def _commit_runs_struct() -> StructType:
    columns = {f.name: f for f in SCHEMAS[OFFSET_COMMITS].fields}
    return StructType(
        [
            StructField("source_partition", columns["source_partition"].dataType, True),
            *(
                StructField(name, ArrayType(columns[name].dataType, True), True)
                for name in RUN_LIST_FIELDS
            ),
        ]
    )


#: The type of :data:`COMMIT_RUNS_COLUMN`, from the ``offset_commits`` schema.
COMMIT_RUNS_STRUCT = _commit_runs_struct()


#: The tracker tables: each is a nullable struct column of the stateful step's rows
#: (:data:`streaming.spark.step_rows.EVENTS_SCHEMA`), named as the table, filled on the rows
#: of its kinds.
TRACKER_TABLES: tuple[str, ...] = (
    REBALANCE_EVENTS,
    MEMBER_ASSIGNMENTS,
    GROUP_METRICS,
    PARTITION_LAG,
    GROUP_LAG,
    LAG_TRANSITIONS,
)
#: Fields the stateful step carries of a table's rows that the table does not keep: a
#: ``partition_lag`` row's ``stored`` (the exporter takes every lag row the tracker emits,
#: the table only the stored ones, :func:`streaming.sinks.frames.table_frame`).
STEP_COLUMNS: dict[str, tuple[StructField, ...]] = {
    PARTITION_LAG: (_f("stored", BooleanType(), "kept by the table (first of its interval)"),),
}
#: ``bad_records`` columns the sink derives: the rest travel as the ``bad_records`` struct.
BAD_RECORD_DERIVED: tuple[str, ...] = ("timestamp", "batch_id", PARTITION_COLUMN)


def body_schema(table: str) -> StructType:
    """What the stateful step carries of a row of ``table``: its columns without those the
    sink derives (:data:`DERIVED_COLUMNS`; ``bad_records``: :data:`BAD_RECORD_DERIVED`),
    with the step's own (:data:`STEP_COLUMNS`)."""
    derived = BAD_RECORD_DERIVED if table == BAD_RECORDS else DERIVED_COLUMNS
    kept = [f for f in schema(table).fields if f.name not in derived]
    return StructType([*kept, *STEP_COLUMNS.get(table, ())])


# -- the driver's rows without a table ------------------------------------------------------


def dataclass_struct(cls: type) -> StructType:
    """The Spark struct of a tracker row type, from its type hints (``ClassVar`` fields
    skipped, every field nullable): ``str`` and string ``Literal`` -> string, ``int`` ->
    bigint, ``float`` -> double, ``bool`` -> boolean, a dataclass -> struct, ``tuple[X, ...]``
    -> array. Any other annotation is a :class:`TypeError` naming the field."""
    hints = typing.get_type_hints(cls)
    fields = []
    for f in dataclasses.fields(cls):
        if typing.get_origin(hints[f.name]) is ClassVar:
            continue
        try:
            fields.append(StructField(f.name, _spark_type(hints[f.name]), True))
        except TypeError as e:
            raise TypeError(f"{cls.__name__}.{f.name}: {e}") from None
    return StructType(fields)


_SCALAR_TYPES: dict[Any, DataType] = {
    str: StringType(),
    int: LongType(),
    float: DoubleType(),
    bool: BooleanType(),
}


def _spark_type(tp: Any) -> DataType:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]
        return _spark_type(inner)
    if origin is Literal and all(isinstance(a, str) for a in args):
        return StringType()
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return ArrayType(_spark_type(args[0]), containsNull=True)
    if tp in _SCALAR_TYPES:
        return _SCALAR_TYPES[tp]
    if dataclasses.is_dataclass(tp):
        return dataclass_struct(tp)  # type: ignore[arg-type]
    raise TypeError(f"no Spark type for {tp!r}")


def _driver_structs() -> dict[str, StructType]:
    from streaming.tracking.events import (
        GroupDeleted,
        GroupStatus,
        RebalanceSummary,
        TrackedGroups,
    )

    kinds = (RebalanceSummary, GroupStatus, GroupDeleted, TrackedGroups)
    return {c.kind: dataclass_struct(c) for c in kinds}


#: The rows the driver reads that no table keeps, each a typed struct column of the stateful
#: step's rows named after its kind: a rebalance's
#: :class:`~streaming.tracking.events.RebalanceSummary` (``rebalance_summary``), and
#: ``group_status``, ``group_deleted`` and ``tracked_groups`` (the exporter's only).
DRIVER_STRUCTS: dict[str, StructType] = _driver_structs()
