"""The stateful step's rows: decoded rows in, tracker events out, and their Spark schemas.

A group's rows become :class:`~streaming.tracking.model.Observation` objects
(:func:`observations_by_group`: a ``CommitRun`` row's runs as they are, every other record
decoded from its raw bytes, :mod:`streaming.spark.decode`; a collector event that names
many groups reaches each of them in the row's bucket); the tracker's events become
:data:`EVENTS_SCHEMA` rows (:func:`tracker_frame`, :func:`event_row`), handed from pandas to
the JVM in the cheaper :data:`STEP_SCHEMA` and given their shape again there
(:func:`from_step`). A row that cannot be rebuilt is a ``bad_records`` row naming its error
(:func:`bad_record_struct`), never dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from streaming.codec.model import OffsetCommitTombstone
from streaming.spark.buckets import bucket_of
from streaming.spark.decode import (
    COMMIT_RUN,
    FAN_OUT_TYPES,
    OFFSETS,
    STATS_FIELDS,
    observation_of,
)
from streaming.tracking.events import (
    EVENT_TYPES,
    OffsetCommitRow,
    RebalanceEvent,
    RebalanceSummary,
    event_id,
    from_row,
    to_row,
)
from streaming.tracking.model import CommitRuns, Observation, routing_keys

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

__all__ = [
    "EVENTS_SCHEMA",
    "FLAT",
    "STEP_SCHEMA",
    "STRUCT_KINDS",
    "WRAPPED",
    "bad_record_struct",
    "event_row",
    "events_to_rows",
    "frame_rows",
    "from_step",
    "observations_by_group",
    "passed_row",
    "run_commit_frame",
    "step_frame",
    "tracker_frame",
]


def _events_schema() -> StructType:
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    from streaming.tables import (
        BAD_RECORDS,
        COMMIT_RUNS_COLUMN,
        COMMIT_RUNS_STRUCT,
        COMMIT_STRUCT_COLUMN,
        DRIVER_STRUCTS,
        OFFSET_COMMITS,
        TRACKER_TABLES,
        body_schema,
        relaxed,
    )

    head = [
        StructField(name, LongType() if name == "event_ts_ms" else StringType(), True)
        for name in _HEAD_COLUMNS
    ]
    tables = [
        StructField(table, relaxed(body_schema(table)), True)
        for table in (*TRACKER_TABLES, BAD_RECORDS)
    ]
    types = {"string": StringType(), "int": IntegerType(), "bigint": LongType()}
    stats = StructType([StructField(n, types[t], True) for n, t in STATS_FIELDS])
    commit = StructField(COMMIT_STRUCT_COLUMN, relaxed(body_schema(OFFSET_COMMITS)), True)
    runs = StructField(COMMIT_RUNS_COLUMN, COMMIT_RUNS_STRUCT, True)
    driver = [StructField(kind, struct, True) for kind, struct in DRIVER_STRUCTS.items()]
    return StructType(
        [*head, *tables, commit, runs, StructField("source_stats", stats, True), *driver]
    )


_HEAD_COLUMNS = ("cluster", "group_id", "kind", "event_id", "event_ts_ms")
#: The stateful step's rows: the head, then one typed struct per table, filled on its kinds'
#: rows (:func:`streaming.tables.body_schema`: the table's columns but the derived
#: ones), the source stats, and one typed struct per kind the driver reads that no table
#: keeps (:data:`streaming.tables.DRIVER_STRUCTS`: a rebalance's
#: :class:`~streaming.tracking.events.RebalanceSummary`, ``group_status``,
#: ``group_deleted``). No output row carries JSON.
EVENTS_SCHEMA = _events_schema()
_EVENT_COLUMNS = tuple(EVENTS_SCHEMA.fieldNames())


def _step_schema() -> tuple[StructType, dict[str, dict[str, str]], frozenset[str]]:
    from pyspark.sql.types import ArrayType, MapType, StructField, StructType

    from streaming.tables import COMMIT_RUNS_COLUMN

    fields: list[StructField] = []
    flat: dict[str, dict[str, str]] = {}
    wrapped: set[str] = set()
    for f in EVENTS_SCHEMA.fields:
        if not isinstance(f.dataType, StructType):
            fields.append(f)
        elif f.name == COMMIT_RUNS_COLUMN or not any(
            isinstance(inner.dataType, ArrayType | MapType | StructType)
            for inner in f.dataType.fields
        ):
            flat[f.name] = {}
            for inner in f.dataType.fields:
                name = f"{f.name}__{inner.name}"
                flat[f.name][name] = inner.name
                fields.append(StructField(name, inner.dataType, True))
        else:
            wrapped.add(f.name)
            fields.append(StructField(f.name, ArrayType(f.dataType, False), True))
    return StructType(fields), flat, frozenset(wrapped)


def _struct_kinds() -> dict[str, tuple[str, ...]]:
    """Each struct column of :data:`EVENTS_SCHEMA` -> the kinds of the rows that fill it
    (:func:`event_row`, and the processor's own rows)."""
    from streaming.tables import (
        BAD_RECORD_KIND,
        BAD_RECORDS,
        COMMIT_KIND,
        COMMIT_RUNS_COLUMN,
        COMMIT_RUNS_KIND,
        COMMIT_STRUCT_COLUMN,
        DRIVER_STRUCTS,
        KIND_TO_TABLE,
        TRACKER_TABLES,
    )

    kinds: dict[str, tuple[str, ...]] = {
        table: tuple(k for k, t in KIND_TO_TABLE.items() if t == table) for table in TRACKER_TABLES
    }
    kinds |= {kind: (kind,) for kind in DRIVER_STRUCTS}
    kinds[RebalanceSummary.kind] = (RebalanceEvent.kind,)
    kinds |= {
        COMMIT_STRUCT_COLUMN: (COMMIT_KIND,),
        COMMIT_RUNS_COLUMN: (COMMIT_RUNS_KIND,),
        BAD_RECORDS: (BAD_RECORD_KIND,),
        "source_stats": ("source_stats",),
    }
    structs = {f.name for f in EVENTS_SCHEMA.fields if f.dataType.typeName() == "struct"}
    assert set(kinds) == structs, sorted(set(kinds) ^ structs)
    return kinds


#: What the processor writes, :data:`EVENTS_SCHEMA` in a shape that is cheap to hand from
#: pandas to the JVM; :func:`track` gives it its shape again (:func:`from_step`), in the JVM:
#:
#: * a struct of scalar fields as one flat column per field (``<struct>__<field>``;
#:   ``FLAT``: per struct, each flat column's field), and so the ``offset_commit_runs``
#:   struct of lists: pyspark converts a struct column of a pandas frame to Arrow value by
#:   value in Python, a flat column in one Arrow call. The rows of such a struct are made
#:   column by column from the tracker's row objects (:func:`tracker_frame`), not as dicts
#:   (``to_row``, a frame of them, Arrow value by value): a storm's micro-batch has
#:   hundreds of thousands of group-metrics and member-assignment rows;
#: * the other struct columns (``WRAPPED``: a rebalance and its summary, whose fields nest)
#:   as an array of at most one struct: an Arrow struct column that is null on a row still
#:   holds a null slot for each of its nested fields on that row, a list column only an
#:   offset. A row carries one or two of the structs, so most are null on every row.
STEP_SCHEMA, FLAT, WRAPPED = _step_schema()
#: Each struct column -> the kinds of the rows that fill it.
STRUCT_KINDS = _struct_kinds()
#: A flat column -> its struct and field.
_FLAT_FIELD = {column: (struct, f) for struct, fs in FLAT.items() for column, f in fs.items()}
#: The tracker row kinds whose rows fill one flat struct, and nothing else: made column by
#: column from the row objects (:func:`tracker_frame`).
_FLAT_KIND = {
    kinds[0]: struct
    for struct, kinds in STRUCT_KINDS.items()
    if struct in FLAT and len(kinds) == 1 and kinds[0] in EVENT_TYPES
}
_STEP_COLUMNS = tuple(STEP_SCHEMA.fieldNames())

# -- pure conversions ------------------------------------------------------------------------


def observations_by_group(
    frames: Iterable[pd.DataFrame],
    *,
    buckets: int,
    keep: Callable[[str], bool] | None = None,
    commits: list[OffsetCommitRow] | None = None,
    cluster: str = "",
    runs: dict[str, list[CommitRuns]] | None = None,
) -> tuple[dict[str, list[Observation]], list[dict[str, Any]]]:
    """Each group's observations of the decoded rows (in row order), and the rows that could
    not be decoded, as ``bad_records`` structs (:func:`bad_record_struct`) naming the error,
    quarantined, never dropped. A ``CommitRun`` row
    (:func:`streaming.spark.decode.decode_batch`: a group's runs) becomes a
    :class:`~streaming.tracking.model.CommitRun` per run; every other row is decoded from
    its bytes: a ``__consumer_offsets`` record here only (the decode stage routed it on its
    key, :func:`streaming.codec.record_route`), so the codec's error is the record's; a
    collector event the decode stage decoded already, so a failure means the two stages
    disagree (a code change between them).

    A collector event that names many groups (:data:`~streaming.tracking.model.FAN_OUT`)
    comes as one row per bucket of its groups (``buckets`` of them, the decode stage's
    number), keyed by one of that bucket's groups: its observation goes to each group it
    names that is in the row's bucket (:func:`~streaming.spark.buckets.bucket_of`) and
    passes ``keep`` (the job's group filter; None: every group), at the row's place in the
    order, as a row per group would have brought it. Any other record of a group that does
    not pass ``keep`` is decoded, for its errors, and given to no group.

    ``commits``: when given, receives the ``offset_commits`` row of each offset tombstone
    (of ``cluster``); the runs' are :func:`run_commit_frame`'s (a row per ``CommitRun`` row).

    ``runs``: when given, receives each group's ``CommitRun`` rows as
    :class:`~streaming.tracking.model.CommitRuns` (columns, no object per run) instead of
    their observations; a group with nothing else is then absent from the observations.

    The columns are read as lists once per frame and the rows walked in Python: a pandas
    operation per group (masks, ``iloc``) costs more than the group's rows."""
    out: dict[str, list[Observation]] = {}
    failed: list[dict[str, Any]] = []
    kept: dict[str, bool] = {}  # keep's answer per group
    for frame in frames:
        columns = ("source", "partition", "offset", "timestamp_ms", "key", "value", "group_id")
        source, partition, offset, ts_ms, key, value, group = (frame[c].tolist() for c in columns)
        kinds = frame["record_type"].tolist()
        run: dict[str, list[Any]] | None = None
        for i, kind in enumerate(kinds):
            if kind == COMMIT_RUN:
                if run is None:
                    run = {c: frame[c].tolist() for c in ("group_id", *_RUN_OBSERVED)}
                group_runs = _commit_runs(int(partition[i]), run, i)
                if runs is not None:
                    runs.setdefault(group_runs.group_id, []).append(group_runs)
                else:
                    out.setdefault(group_runs.group_id, []).extend(group_runs.observations())
                continue
            k, v = key[i], value[i]
            try:
                obs = observation_of(
                    source[i],
                    None if k is None else bytes(k),
                    None if v is None else bytes(v),
                    partition=int(partition[i]),
                    offset=int(offset[i]),
                    timestamp_ms=int(ts_ms[i]),
                )
            except Exception as e:  # one row must never stop the step
                failed.append(_failed_row(frame, i, e))
                continue
            if kind in FAN_OUT_TYPES:  # the bucket's groups it names
                _reach_bucket(out, obs, str(group[i]), buckets, keep)
                continue
            group_id = group[i]
            if keep is not None:
                passes = kept.get(group_id)
                if passes is None:
                    passes = kept[group_id] = keep(group_id)
                if not passes:  # a group the filter leaves out
                    continue
            observations = out.get(group_id)
            if observations is None:
                observations = out[group_id] = []
            observations.append(obs)
            if commits is not None and isinstance(obs.payload, OffsetCommitTombstone):
                commits.append(_tombstone_row(cluster, obs, obs.payload))
    return out, failed


def _reach_bucket(
    out: dict[str, list[Observation]],
    obs: Observation,
    head: str,
    buckets: int,
    keep: Callable[[str], bool] | None,
) -> None:
    """Add ``obs`` to each group it names (:func:`~streaming.tracking.model.routing_keys`)
    that is in the bucket of ``head`` (its row's group) and passes ``keep``."""
    bucket = bucket_of(head, buckets)
    for group_id in routing_keys(obs.payload):
        if bucket_of(group_id, buckets) == bucket and (keep is None or keep(group_id)):
            observations = out.get(group_id)
            if observations is None:
                observations = out[group_id] = []
            observations.append(obs)


def _failed_row(frame: pd.DataFrame, i: int, error: Exception) -> dict[str, Any]:
    """Row ``i`` of ``frame`` as a ``bad_records`` struct: a ``__consumer_offsets`` record
    with its codec's error, any other with what the step could not rebuild."""
    from streaming.codec import DecodeError

    row = frame.iloc[i]
    own = row["source"] == OFFSETS and isinstance(error, DecodeError)
    return bad_record_struct(
        {
            **{c: row[c] for c in ("topic", "partition", "offset", "timestamp_ms", "key", "value")},
            "error": str(error)
            if own
            else f"the stateful step could not rebuild the record: {error}",
            "error_type": type(error).__name__,
            "error_field": getattr(error, "field", None),
            "error_offset": error.offset if isinstance(error, DecodeError) else None,
        }
    )


def run_commit_frame(frames: Sequence[pd.DataFrame], cluster: str) -> pd.DataFrame | None:
    """The ``offset_commit_runs`` rows of the commit runs of decoded frames, in the
    processor's layout (:data:`STEP_SCHEMA`; None: no run): each ``CommitRun`` row's lists
    as they came, its source partition and time beside them. The JVM makes the
    ``offset_commits`` rows of them, the record ``history="latest"`` keeps of each partition
    in the micro-batch (:func:`streaming.sinks.frames.commit_frame`; a tombstone after it is
    a row of its own, with a higher source offset). No Python step per row or per run:
    commits are almost all of ``__consumer_offsets``."""
    import numpy as np
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

    from streaming.tables import COMMIT_RUNS_COLUMN, COMMIT_RUNS_KIND

    parts = [f.loc[f["record_type"] == COMMIT_RUN] for f in frames]
    parts = [p for p in parts if len(p)]
    if not parts:
        return None
    rows = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    n = len(rows)
    given = {
        "cluster": np.full(n, cluster, dtype=object),
        "group_id": rows["group_id"].to_numpy(),
        "kind": np.full(n, COMMIT_RUNS_KIND, dtype=object),
        "event_ts_ms": rows["timestamp_ms"].to_numpy(),
        **{
            flat: rows[_RUN_SOURCE[field]].to_numpy()
            for flat, field in FLAT[COMMIT_RUNS_COLUMN].items()
        },
    }
    none = np.full(n, None, dtype=object)  # every column at once: one insert each was slow
    return pd.DataFrame({c: given.get(c, none) for c in _STEP_COLUMNS}, columns=_STEP_COLUMNS)


#: Where each field of an ``offset_commit_runs`` row comes from: a ``CommitRun`` row's column
#: (:data:`streaming.spark.decode.DECODED_SCHEMA`).
_RUN_SOURCE = {
    "source_partition": "partition",
    "topic": "run_topic",
    "partition": "run_partition",
    "offset": "run_offset",
    "leader_epoch": "run_leader_epoch",
    "metadata": "run_metadata",
    "commit_ts_ms": "run_commit_ts_ms",
    "expire_ts_ms": "run_expire_ts_ms",
    "source_offset": "run_source_offset",
    "event_ts_ms": "run_timestamp_ms",
}


def step_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """:data:`EVENTS_SCHEMA` dicts (:func:`event_row`) as a frame of the processor's layout
    (:data:`STEP_SCHEMA`: the fields of the scalar structs flat, the other structs each in a
    list)."""
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

    present = {struct for struct in FLAT if any(r.get(struct) is not None for r in rows)}
    none = [None] * len(rows)
    columns: dict[str, list[Any]] = {}
    for column in _STEP_COLUMNS:
        flat = _FLAT_FIELD.get(column)
        if column in WRAPPED:
            columns[column] = [None if (v := r.get(column)) is None else [v] for r in rows]
        elif flat is None:
            columns[column] = [r.get(column) for r in rows]
        elif flat[0] not in present:
            columns[column] = none
        else:
            struct, field = flat
            columns[column] = [None if (c := r.get(struct)) is None else c.get(field) for r in rows]
    return pd.DataFrame(columns, columns=list(_STEP_COLUMNS))


def tracker_frame(events: Sequence[Any]) -> pd.DataFrame:
    """Tracker events as a frame of the processor's layout, in their order: the same as
    ``step_frame(events_to_rows(events))``. The rows of a kind that fills one flat struct
    (:data:`_FLAT_KIND`: group metrics, member assignments, lag, statuses, tombstones) are
    made column by column from the row objects (``attrgetter``, numpy); the others (a
    rebalance and its summary) through their dicts."""
    from operator import attrgetter

    import numpy as np
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

    n = len(events)
    columns: dict[str, Any] = {}

    def put(column: str, at: Any, values: Any) -> None:
        target = columns.get(column)
        if target is None:
            target = columns[column] = np.full(n, None, dtype=object)
        target[at] = values

    positions: dict[type, list[int]] = {}
    for i, event in enumerate(events):
        positions.setdefault(type(event), []).append(i)
    for cls, where in positions.items():
        at = np.asarray(where, dtype=np.int64)
        struct = _FLAT_KIND.get(getattr(cls, "kind", None))  # type: ignore[arg-type]
        if struct is None:  # through the dicts, then to its rows' places
            part = step_frame(events_to_rows([events[i] for i in where]))
            for column in _STEP_COLUMNS:
                values = part[column].to_numpy(dtype=object)
                if any(v is not None for v in values):
                    put(column, at, values)
            continue
        chosen = [events[i] for i in where]
        flat = FLAT[struct]
        fields = attrgetter(*flat.values())
        by_field = dict(zip(flat.values(), zip(*map(fields, chosen), strict=True), strict=True))
        for column, field in flat.items():
            put(column, at, _objects(by_field[field]))
        for head in ("cluster", "group_id", "event_id", "event_ts_ms"):
            values = by_field.get(head)  # a row's head fields are its struct's, as a rule
            if values is None:
                values = [getattr(e, head, None) for e in chosen]
            put(head, at, _objects(values))
        put("kind", at, cls.kind)  # type: ignore[attr-defined]
    none = np.full(n, None, dtype=object)
    return pd.DataFrame(
        {column: columns.get(column, none) for column in _STEP_COLUMNS}, columns=_STEP_COLUMNS
    )


def _objects(values: Sequence[Any]) -> Any:
    """``values`` as a numpy object array, element for element."""
    import numpy as np

    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def from_step(step: DataFrame) -> DataFrame:
    """The processor's rows (:data:`STEP_SCHEMA`) as :data:`EVENTS_SCHEMA` rows, in the JVM:
    each flat struct's columns nested into it on the rows of its kinds (null on the
    others), each wrapped struct taken out of its array."""
    from pyspark.sql import functions as F

    def column(name: str) -> Column:
        if name in FLAT:
            fields = (F.col(column).alias(field) for column, field in FLAT[name].items())
            kinds = F.col("kind").isin(list(STRUCT_KINDS[name]))
            return F.when(kinds, F.struct(*fields)).alias(name)
        if name in WRAPPED:
            return F.get(F.col(name), 0).alias(name)
        return F.col(name)

    return step.select(*(column(name) for name in _EVENT_COLUMNS))


def _tombstone_row(cluster: str, obs: Observation, p: OffsetCommitTombstone) -> OffsetCommitRow:
    """The ``offset_commits`` row of an offset tombstone, as the commit lane builds it."""
    return OffsetCommitRow(
        event_id=event_id("commit", cluster, p.group_id, f"{obs.partition}:{obs.offset}"),
        cluster=cluster,
        group_id=p.group_id,
        event_ts_ms=obs.timestamp_ms,
        topic=p.topic,
        partition=p.partition,
        offset=None,
        leader_epoch=None,
        metadata=None,
        commit_ts_ms=None,
        expire_ts_ms=None,
        deleted=True,
        source_partition=obs.partition,
        source_offset=obs.offset,
    )


#: The list columns a run's observation reads (the others are its ``offset_commits`` row's).
_RUN_OBSERVED = (
    "run_topic",
    "run_partition",
    "run_offset",
    "run_leader_epoch",
    "run_commit_ts_ms",
    "run_count",
    "run_history_ts_ms",
    "run_history_offsets",
    "run_topic_id",
    "run_metadata",
    "run_expire_ts_ms",
    "run_source_offset",
    "run_timestamp_ms",
)
#: Where in :data:`_RUN_OBSERVED` the lists of lists are (each run's history).
_RUN_NESTED = (_RUN_OBSERVED.index("run_history_ts_ms"), _RUN_OBSERVED.index("run_history_offsets"))


def _commit_runs(partition: int, run: Mapping[str, list[Any]], i: int) -> CommitRuns:
    """The runs of ``CommitRun`` row ``i`` (``run``: the frame's ``group_id`` and
    :data:`_RUN_OBSERVED` as lists; a row's lists come from pyspark as numpy arrays or
    lists) as columns of Python values."""
    columns = [_values(run[name][i]) for name in _RUN_OBSERVED]
    for nested in _RUN_NESTED:
        columns[nested] = [_values(cell) for cell in columns[nested]]
    return CommitRuns(str(run["group_id"][i]), partition, *columns)


def _values(cell: Any) -> list[Any]:
    """A list cell's values as Python values (a numpy array's ``tolist``: one C call)."""
    return cell.tolist() if hasattr(cell, "tolist") else list(cell)


def event_row(row: Mapping[str, Any], summary: RebalanceSummary | None = None) -> dict[str, Any]:
    """One tracker row (``to_row`` dict) as an :data:`EVENTS_SCHEMA` dict: the row itself in
    its table's struct column (the struct takes the table's columns of it), or in its own
    struct column for ``group_status`` and ``group_deleted``; for a rebalance also its
    :class:`~streaming.tracking.events.RebalanceSummary` (``rebalance_summary``: what the
    driver's exporter and listener read; built from the row when not given)."""
    from streaming.tables import (
        COMMIT_KIND,
        COMMIT_STRUCT_COLUMN,
        DRIVER_STRUCTS,
        KIND_TO_TABLE,
    )

    kind = row["kind"]
    out: dict[str, Any] = dict.fromkeys(_EVENT_COLUMNS)
    out.update(
        cluster=row.get("cluster"),
        group_id=row.get("group_id"),
        kind=kind,
        event_id=row["event_id"],
        event_ts_ms=int(row["event_ts_ms"]),
    )
    table = COMMIT_STRUCT_COLUMN if kind == COMMIT_KIND else KIND_TO_TABLE.get(kind)
    if table is not None:
        out[table] = row
    elif kind in DRIVER_STRUCTS:
        out[kind] = row
    if kind == RebalanceEvent.kind:
        out[RebalanceSummary.kind] = to_row(summary or _summary_of(row))
    return out


def _summary_of(row: Mapping[str, Any]) -> RebalanceSummary:
    return RebalanceSummary.of(from_row(RebalanceEvent, row))


def events_to_rows(events: Iterable[Any]) -> list[dict[str, Any]]:
    """Tracker events -> :data:`EVENTS_SCHEMA` dicts."""
    return [
        event_row(
            to_row(event),
            RebalanceSummary.of(event) if isinstance(event, RebalanceEvent) else None,
        )
        for event in events
    ]


def frame_rows(frames: Iterable[pd.DataFrame]) -> Iterator[dict[str, Any]]:
    """The rows of ``frames`` as dicts, in order."""
    for frame in frames:
        yield from frame.to_dict("records")


def passed_row(cluster: str, kind: str, row: Mapping[str, Any], **columns: Any) -> dict[str, Any]:
    """An :data:`EVENTS_SCHEMA` dict of a decoded row the step passes on without tracking
    (``source_stats``, ``bad_record``): its head from the record's place and time, its
    struct in ``columns``."""
    out: dict[str, Any] = dict.fromkeys(_EVENT_COLUMNS)
    out.update(
        cluster=cluster,
        kind=kind,
        event_id=f"{row['topic']}:{row['partition']}:{row['offset']}:{kind}",
        event_ts_ms=_int_or_none(row["timestamp_ms"]) or 0,
        **columns,
    )
    return out


def bad_record_struct(row: Mapping[str, Any]) -> dict[str, Any]:
    """A bad row (the decode stage's columns) as the ``bad_records`` struct of a
    ``bad_record`` row: the raw key and value bytes as they were read, and where the error
    was found."""

    def raw(value: Any) -> bytes | None:
        return None if value is None else bytes(value)

    return {
        "topic": row["topic"],
        "partition": int(row["partition"]),
        "offset": int(row["offset"]),
        "timestamp_ms": _int_or_none(row["timestamp_ms"]),
        "key": raw(row["key"]),
        "value": raw(row["value"]),
        "error": row["error"],
        "error_type": row["error_type"],
        "field": row["error_field"],
        "byte_offset": _int_or_none(row["error_offset"]),
    }


def _int_or_none(v: Any) -> int | None:
    return None if v is None or v != v else int(v)  # pandas gives NaN for a null int
