"""The Spark adapter of the tracker: per-group state on RocksDB, rows in, tracker events out.

::

    good rows (streaming.spark.decode)         source, partition, offset, timestamp_ms, key,
        │  groupBy(tracker_key)                value, group_id (routed rows only); the key:
        │                                      the key of the group's bucket (the
        │                                      checkpoint's, checkpoint_keys)
        ▼
    transformWithStateInPandas(GroupTracker)   per bucket: ValueState ``bucket`` = its groups'
        │                                      states (BucketStates: group id -> GroupState
        │                                      msgpack); each group's rows -> Observations ->
        │                                      reducer.apply -> events
        ▼
    EVENTS_SCHEMA rows                         cluster, group_id, kind, event_id,
                                               event_ts_ms; a typed struct per table
                                               (rebalance_events, ..., bad_records);
                                               a typed struct per kind the driver reads
                                               that no table keeps (rebalance_summary:
                                               a rebalance's part for the driver;
                                               group_status, group_deleted)

Why buckets of groups and not a key per group: every key costs a processor call per
micro-batch, with its own pandas frames in and out and state-server round trips to set and
clear the key, several times the tracker's own work on a group that only committed. A
bucket pays that once for all its groups, and so do its state calls: the bucket's groups'
states are one value (:class:`BucketStates`, one read and one write per micro-batch), where
a MapState entry per group cost a round trip to the state server per group read and per
group written. A group's state lives under the key of bucket ``xxhash64(group id) mod
buckets``, so the keys are fixed for a checkpoint and recorded in it (:func:`checkpoint_keys`:
a new checkpoint gets :data:`BUCKETS` keys balanced over the shuffle partitions, one from
before the record its :data:`LEGACY_BUCKETS` plain names). A checkpoint of a version with a
key per group must be recreated; one with a MapState entry per group is read and moved,
:func:`load_bucket`.

Why ``transformWithStateInPandas`` and not ``applyInPandasWithState``: it is the
RocksDB-backed state API v2 (state variables have their own schema and can be changed and
evicted independently), it is the API Spark develops (v1 is frozen), and it is known to
work on this stack (pyspark 4.2.0, RocksDB, protobuf).

Time is the records' time, not the clock (``timeMode="None"``, no timers). The reducer's
``now_ms`` is the latest logical time of the group's observations (record timestamp, or a
collector snapshot's time), so a KIP-848 reconciliation that exceeds
``reconcile_timeout_ms`` is emitted as ``timed_out`` with the group's next observation past
the deadline (the collector snapshots every group every few seconds, so that is soon after
it) and always with ``completed_ts_ms`` = the deadline. Two reasons against processing-time
timers, both measured on this stack: in ``ProcessingTime`` mode Spark's
``TransformWithStateExec.shouldRunAnotherBatch`` is always true, so the query runs an empty
micro-batch at every trigger forever (a core kept busy on an idle cluster, and
``processAllAvailable``/``availableNow`` never finish); and a wall-clock ``now`` makes the
output depend on when the records are processed (a backfill would judge every old
reconciliation as timed out), while record time gives the same rows live, on backfill and
after a restart from the checkpoint.

The adapter only converts (STYLE habit 8): rows -> :class:`~streaming.tracking.model.
Observation` (re-decoding the raw bytes, see :mod:`streaming.spark.decode` for the
measurement), the stored bytes <-> :class:`~streaming.tracking.state.GroupState`, and events
-> rows with :func:`~streaming.tracking.events.to_row`. Ordering is the reducer's job
(``reducer.ordered``: offset order per source partition, merged by logical time), so rows
are handed over as Spark delivers them.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from assign_core.partition_cache import made_in_bulk
from streaming.codec.model import OffsetCommitTombstone
from streaming.spark.checkpoint import CheckpointFileError
from streaming.spark.decode import COMMIT_RUN, STATS_FIELDS, STATS_KEY, observation_of
from streaming.tracking.config import DEFAULT_CONFIG, TrackerConfig
from streaming.tracking.errors import StateFormatError
from streaming.tracking.events import (
    EVENT_TYPES,
    GroupDeleted,
    OffsetCommitRow,
    RebalanceEvent,
    RebalanceSummary,
    TrackedGroups,
    event_id,
    from_row,
    to_row,
)
from streaming.tracking.forget import forgotten, is_idle, last_activity_ms
from streaming.tracking.model import CommitRun, Observation
from streaming.tracking.state import GroupState

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.streaming.stateful_processor import StatefulProcessorHandle, TimerValues
    from pyspark.sql.types import StructType

__all__ = [
    "BAD_KEY",
    "BUCKETS",
    "BUCKET_STATE_SCHEMA",
    "EVENTS_SCHEMA",
    "FLAT",
    "LAYOUT_FILE",
    "LEGACY_BUCKETS",
    "STEP_SCHEMA",
    "STRUCT_KINDS",
    "WRAPPED",
    "BucketStates",
    "CheckpointLayoutError",
    "Reducer",
    "bad_record_struct",
    "balanced_keys",
    "bucket_names",
    "checkpoint_keys",
    "event_row",
    "events_to_rows",
    "from_step",
    "load_bucket",
    "load_reducer",
    "logical_now_ms",
    "observations_by_group",
    "run_commit_frame",
    "step_frame",
    "store_bucket",
    "track",
    "tracker_frame",
    "tracker_key",
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
#: The stateful step's one state variable: per bucket (a grouping key), a ValueState of its
#: groups' states, :meth:`BucketStates.encode`.
BUCKET_STATE = "bucket"
BUCKET_STATE_SCHEMA = "groups binary"
#: The layout before: a MapState entry per group (group id -> GroupState JSON). Still
#: declared so that a checkpoint written with it is read: a bucket's entries are moved into
#: its ValueState the first time the bucket has rows (:func:`load_bucket`).
LEGACY_STATE = "groups"
LEGACY_STATE_SCHEMA = "state string"
GROUP_KEY_SCHEMA = "group_id string"
#: Buckets (stateful keys) of a new checkpoint. Each key costs one call of the processor per
#: micro-batch with a pandas frame in and out (its columns read as lists, its output converted
#: to Arrow column by column, its value read and written), so fewer buckets cost less per
#: micro-batch; but a bucket's frame holds all its groups' rows, so in a storm's one
#: micro-batch fewer buckets hold more memory at once. 32 is between the two
#: (``bench/live.py``, ``bench/stream.py``). The keys are balanced over the shuffle
#: partitions (:func:`balanced_keys`). Fixed for a checkpoint (a group's state lives under
#: its bucket): the keys are recorded in it.
BUCKETS = 32
#: Buckets of a checkpoint written before the number was recorded.
LEGACY_BUCKETS = 64
#: The file in the query's checkpoint folder that records its buckets.
LAYOUT_FILE = "rebalance-monitor-layout.json"
BUCKET_PREFIX = "\x00rebalance-monitor:bucket:"
#: The entry of a bucket's map that holds its groups' last sightings (no Kafka group is
#: named so): :class:`BucketStates`.
SEEN_KEY = "\x00rebalance-monitor:seen"
#: The grouping column of the stateful step.
TRACKER_KEY = "tracker_key"
#: The key of the bad rows in the stateful step (no Kafka group is named so).
BAD_KEY = "\x00rebalance-monitor:bad-records"

#: ``apply(state, observations, now_ms) -> (state, events)``, the pure reducer.
Reducer = Callable[[GroupState, Sequence[Observation], int], tuple[GroupState, Sequence[Any]]]


def load_reducer(config: TrackerConfig = DEFAULT_CONFIG) -> Reducer:
    """:func:`streaming.tracking.reducer.apply` with ``config`` bound."""
    from streaming.tracking.reducer import apply

    def bound(
        state: GroupState, observations: Sequence[Observation], now_ms: int
    ) -> tuple[GroupState, Sequence[Any]]:
        return apply(state, observations, now_ms, config=config)

    return bound


# -- pure conversions ------------------------------------------------------------------------


def observations_by_group(
    frames: Iterable[pd.DataFrame],
    *,
    commits: list[OffsetCommitRow] | None = None,
    cluster: str = "",
) -> tuple[dict[str, list[Observation]], list[dict[str, Any]]]:
    """Each group's observations of the decoded rows (in row order), and the rows that could
    not be rebuilt, as ``bad_records`` structs (:func:`bad_record_struct`) naming the error:
    the decode stage accepted them, so a failure here means the stages disagree (a code
    change between them), and the row is quarantined, never dropped. A ``CommitRun`` row
    (:func:`streaming.spark.decode.decode_batch`: a group's runs) becomes a
    :class:`~streaming.tracking.model.CommitRun` per run; every other row is decoded from
    its bytes.

    ``commits``: when given, receives the ``offset_commits`` row of each offset tombstone
    (of ``cluster``); the runs' are :func:`run_commit_frame`'s (a row per ``CommitRun`` row).

    The columns are read as lists once per frame and the rows walked in Python: a pandas
    operation per group (masks, ``iloc``) costs more than the group's rows."""
    out: dict[str, list[Observation]] = {}
    failed: list[dict[str, Any]] = []
    for frame in frames:
        columns = ("source", "partition", "offset", "timestamp_ms", "key", "value", "group_id")
        source, partition, offset, ts_ms, key, value, group = (frame[c].tolist() for c in columns)
        kinds = frame["record_type"].tolist()
        run: dict[str, list[Any]] | None = None
        for i, kind in enumerate(kinds):
            observations = out.get(group[i])
            if observations is None:
                observations = out[group[i]] = []
            if kind == COMMIT_RUN:
                if run is None:
                    run = {c: frame[c].tolist() for c in ("group_id", *_RUN_OBSERVED)}
                observations.extend(_runs(int(partition[i]), run, i))
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
            observations.append(obs)
            if commits is not None and isinstance(obs.payload, OffsetCommitTombstone):
                commits.append(_tombstone_row(cluster, obs, obs.payload))
    return out, failed


def _failed_row(frame: pd.DataFrame, i: int, error: Exception) -> dict[str, Any]:
    from streaming.codec import DecodeError

    row = frame.iloc[i]
    return bad_record_struct(
        {
            **{c: row[c] for c in ("topic", "partition", "offset", "timestamp_ms", "key", "value")},
            "error": f"the stateful step could not rebuild the record: {error}",
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
    commits are ~99 % of ``__consumer_offsets``."""
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


def _runs(partition: int, run: Mapping[str, list[Any]], i: int) -> Iterator[Observation]:
    """The observations of the runs of ``CommitRun`` row ``i`` (``run``: the frame's
    ``group_id`` and :data:`_RUN_OBSERVED` as lists; a row's lists come from pyspark as
    numpy arrays or lists)."""
    group = str(run["group_id"][i])
    columns = [_values(run[name][i]) for name in _RUN_OBSERVED]
    for (
        topic,
        part,
        off,
        epoch,
        ts,
        count,
        hist_ts,
        hist_off,
        topic_id,
        metadata,
        expire,
        at,
        at_ts,
    ) in zip(*columns, strict=True):
        history = tuple(zip(_values(hist_ts), _values(hist_off), strict=True))
        run_ = CommitRun(
            group, topic, part, off, epoch, ts, count, history, topic_id, metadata, expire
        )
        yield Observation("offsets", partition, at, at_ts, run_)


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


def _records(frames: Iterable[pd.DataFrame]) -> Iterator[dict[str, Any]]:
    for frame in frames:
        yield from frame.to_dict("records")


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


def logical_now_ms(state: GroupState, observations: Sequence[Observation]) -> int:
    """The group's "now": the latest logical time of its observations, never before the
    last record the state has seen."""
    latest = max((o.logical_ts_ms for o in observations), default=0)
    return max(latest, state.last_record_ts_ms or 0)


class BucketStates:
    """The states of one bucket's groups, as its ValueState keeps them: one msgpack map of
    group id -> :meth:`GroupState.encode` bytes (msgpack; a checkpoint written before holds
    :meth:`GroupState.to_json` bytes, read as well). A group's state is parsed only when the
    group has rows in the micro-batch (:meth:`step`); the others stay bytes.

    Why one value per bucket and not a MapState entry per group: each state call is a round
    trip to the JVM's state server, which would cost a group that only committed more than
    the tracker's own work on it. A bucket pays one read and one write whatever its number
    of groups.

    The map is stored compressed (zlib, level 1, about a quarter of the msgpack): the state
    server pickles a value byte by byte, and RocksDB writes and checkpoints every changed
    value. A bucket
    written before (plain msgpack) is read as well: a zlib stream starts with ``0x78``, which
    no msgpack map does.

    Each group's last sighting (:func:`~streaming.tracking.forget.last_activity_ms`) is kept
    beside the states, under a key no Kafka group has (:data:`SEEN_KEY`), so that the idle
    groups are found without parsing a state (:meth:`forget_idle`). A bucket written before
    the index starts its groups' clocks at the first micro-batch that reads it."""

    __slots__ = ("changed", "seen", "states")

    def __init__(self, states: dict[str, bytes], seen: dict[str, int] | None = None) -> None:
        self.states = states
        self.seen = {} if seen is None else seen
        self.changed = False

    @classmethod
    def decode(cls, blob: bytes | bytearray) -> BucketStates:
        try:
            if blob[:1] == b"\x78":
                blob = zlib.decompress(blob)
            states = _BUCKET_DECODE(blob)
            seen_blob = states.pop(SEEN_KEY, None)
            seen = None if seen_blob is None else _SEEN_DECODE(seen_blob)
        except (msgspec.DecodeError, zlib.error) as e:
            raise StateFormatError("$bucket", f"not a bucket of group states: {e}") from None
        return cls(states, seen)

    def encode(self) -> bytes:
        entries = self.states
        if self.seen:
            entries = {**entries, SEEN_KEY: _SEEN_ENCODE(self.seen)}
        return zlib.compress(_BUCKET_ENCODE(entries), 1)

    def step(
        self, group_id: str, observations: Sequence[Observation], cluster: str, apply: Reducer
    ) -> Sequence[Any]:
        """Apply one group's observations to its state (a new one if it has none) and keep
        the result (an empty state is dropped); the group's events."""
        stored = self.states.get(group_id)
        state = GroupState.new(cluster, group_id) if stored is None else GroupState.decode(stored)
        state, events = apply(state, observations, logical_now_ms(state, observations))
        if not state.is_empty():
            blob = state.encode()
            if blob != stored:
                self.states[group_id] = blob
                self.changed = True
            seen = last_activity_ms(state)
            if seen is not None and self.seen.get(group_id) != seen:
                self.seen[group_id] = seen
                self.changed = True
        elif stored is not None:
            del self.states[group_id]
            self.seen.pop(group_id, None)
            self.changed = True
        return events

    def forget_idle(self, now_ms: int, idle_ms: int) -> list[GroupDeleted]:
        """Drop the groups last seen ``idle_ms`` or more before ``now_ms`` (record time; rule
        F3 of :mod:`streaming.tracking.forget`); a ``GroupDeleted`` (``forgotten``) each."""
        events: list[GroupDeleted] = []
        for group_id in [g for g in self.states if g not in self.seen]:
            self.seen[group_id] = now_ms  # a bucket from before the index: the clock starts
            self.changed = True
        if idle_ms <= 0:
            return events
        for group_id, seen in list(self.seen.items()):
            if is_idle(seen, now_ms, idle_ms):
                stored = self.states.pop(group_id, None)
                del self.seen[group_id]
                self.changed = True
                if stored is not None:
                    events.append(forgotten(GroupState.decode(stored), now_ms))
        return events


def load_bucket(value: Any, legacy: Any) -> BucketStates:
    """A bucket's states from its ValueState (``value``, :data:`BUCKET_STATE`); a bucket
    never written under this layout takes its groups' entries from the layout before
    (``legacy``: the MapState :data:`LEGACY_STATE`, group id -> JSON), and clears them."""
    stored = value.get()
    if stored is not None:
        return BucketStates.decode(stored[0])
    bucket = BucketStates({})
    if legacy.exists():
        for (group_id,), (text,) in legacy.iterator():
            bucket.states[group_id] = text.encode()
        legacy.clear()
        bucket.changed = True
    return bucket


def store_bucket(value: Any, bucket: BucketStates) -> None:
    """Write a bucket's states back to its ValueState if a group's state changed (an empty
    bucket is cleared)."""
    if not bucket.changed:
        return
    if bucket.states:
        value.update((bucket.encode(),))
    else:
        value.clear()


_BUCKET_ENCODE = msgspec.msgpack.Encoder().encode
_BUCKET_DECODE = msgspec.msgpack.Decoder(dict[str, bytes]).decode
_SEEN_ENCODE = msgspec.msgpack.Encoder().encode
_SEEN_DECODE = msgspec.msgpack.Decoder(dict[str, int]).decode


# -- the processor ---------------------------------------------------------------------------


def _processor_class() -> type:
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class GroupTracker(StatefulProcessor):
        """The trackers of one bucket of groups: the groups' states in the bucket's
        ValueState (:class:`BucketStates`), time from the group's records."""

        def __init__(
            self, cluster: str, config: TrackerConfig, commit_rows: bool, group_filter: str
        ) -> None:
            self._cluster = cluster
            self._config = config
            self._commit_rows = commit_rows
            self._group_filter = group_filter

        def init(self, handle: StatefulProcessorHandle) -> None:
            self._handle = handle
            self._bucket = handle.getValueState(BUCKET_STATE, BUCKET_STATE_SCHEMA)
            # the layout before buckets kept one entry per group: read once, then moved
            self._legacy = handle.getMapState(LEGACY_STATE, GROUP_KEY_SCHEMA, LEGACY_STATE_SCHEMA)
            self._apply = load_reducer(self._config)
            self._keep = _group_keeper(self._group_filter)

        def handleInputRows(
            self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
        ) -> Iterator[pd.DataFrame]:
            if key[0] == STATS_KEY:
                out = [
                    self._passed("source_stats", r, source_stats=r["stats"]) for r in _records(rows)
                ]
                yield step_frame(out)
            elif key[0] == BAD_KEY:
                out = [
                    self._passed("bad_record", r, bad_records=bad_record_struct(r))
                    for r in _records(rows)
                ]
                yield step_frame(out)
            else:
                frames = list(rows)
                # a bucket's step makes ~10 objects per commit run, none part of a cycle: the
                # cyclic collector paused meanwhile (it scanned the worker's heap over and
                # over: ~20 % of the step's Python at 10,000 groups)
                yield from made_in_bulk(lambda: self._track(str(key[0]), frames))

        def _track(self, bucket_key: str, frames: list[pd.DataFrame]) -> list[pd.DataFrame]:
            import pandas as pd  # type: ignore[import-untyped, unused-ignore]

            if self._keep is not None:
                frames = [_kept(frame, self._keep) for frame in frames]
            commits: list[OffsetCommitRow] | None = [] if self._commit_rows else None
            by_group, failed = observations_by_group(frames, commits=commits, cluster=self._cluster)
            events: list[Any] = list(commits or ())
            bucket = load_bucket(self._bucket, self._legacy)
            for group_id, observations in by_group.items():
                events.extend(bucket.step(group_id, observations, self._cluster, self._apply))
            now_ms = max(
                (o.logical_ts_ms for observed in by_group.values() for o in observed), default=None
            )
            if now_ms is not None:
                events.extend(bucket.forget_idle(now_ms, self._config.group_idle_ms))
                events.append(
                    TrackedGroups(
                        event_id=event_id("tracked", self._cluster, bucket_key, now_ms),
                        cluster=self._cluster,
                        group_id=bucket_key,
                        event_ts_ms=now_ms,
                        groups=len(bucket.states),
                    )
                )
            store_bucket(self._bucket, bucket)
            out = [tracker_frame(events)]
            if failed:
                bad_rows = [self._passed("bad_record", bad, bad_records=bad) for bad in failed]
                out.append(step_frame(bad_rows))
            run_commits = run_commit_frame(frames, self._cluster) if self._commit_rows else None
            if run_commits is not None:
                out.append(run_commits)
            # one frame: pyspark converts each frame to Arrow column by column, at a cost
            # per column whatever its rows, and a live bucket has a few hundred rows
            return out if len(out) == 1 else [pd.concat(out, ignore_index=True)]

        def _passed(self, kind: str, row: Mapping[str, Any], **columns: Any) -> dict[str, Any]:
            out: dict[str, Any] = dict.fromkeys(_EVENT_COLUMNS)
            out.update(
                cluster=self._cluster,
                kind=kind,
                event_id=f"{row['topic']}:{row['partition']}:{row['offset']}:{kind}",
                event_ts_ms=_int_or_none(row["timestamp_ms"]) or 0,
                **columns,
            )
            return out

        def close(self) -> None:
            pass

    return GroupTracker


def _group_keeper(group_filter: str) -> Callable[[str], bool] | None:
    """Whether a group id passes ``group_filter`` (:func:`streaming.config.group_matches`,
    the collector's matching); None when every group passes."""
    if group_filter == ".*":
        return None
    from streaming.config import JobConfigError, group_matches, group_pattern

    pattern = group_pattern(group_filter, JobConfigError)
    return lambda group_id: group_matches(pattern, group_id)


def _kept(frame: pd.DataFrame, keep: Callable[[str], bool]) -> pd.DataFrame:
    """A bucket's rows of the groups that pass the filter (``keep``, once per group id)."""
    ids = frame["group_id"]
    passing = {g: keep(g) for g in ids.unique()}
    return frame[ids.map(passing).astype(bool)]


def tracker_key(group_id: Column, keys: Sequence[str]) -> Column:
    """The stateful step's grouping key of a group: the key of its bucket, ``xxhash64`` of
    the group id modulo the number of ``keys`` (so the same on every executor and after a
    restart). ``keys``: the checkpoint's (:func:`checkpoint_keys`)."""
    from pyspark.sql import functions as F

    bucket = F.pmod(F.xxhash64(group_id), F.lit(len(keys)))
    return F.element_at(F.array(*(F.lit(k) for k in keys)), (bucket + 1).cast("int"))


def bucket_names(buckets: int) -> list[str]:
    """The plain keys of ``buckets`` buckets (a checkpoint written before keys were
    recorded uses these)."""
    return [f"{BUCKET_PREFIX}{b}" for b in range(buckets)]


def balanced_keys(spark: SparkSession, buckets: int, partitions: int) -> list[str]:
    """Keys for ``buckets`` buckets that Spark spreads evenly over ``partitions`` shuffle
    partitions: bucket ``b`` on partition ``b % partitions``. Spark places a key by
    ``pmod(hash(key), partitions)`` (Murmur3, SQL's ``hash``), and the plain names are far
    from even: of 8 names, 6 land on one of 2 partitions (of 64, 39), so one task of the
    stateful step did most of the work. Each key is the plain name with the smallest salt
    (``:<n>``) that lands where wanted, found with that same function."""
    if partitions < 1:
        raise ValueError(f"partitions: expected at least 1, got {partitions}")
    from pyspark.sql import functions as F

    salts = 64 * partitions
    b, s = F.col("b"), F.col("s")
    key = F.concat(F.lit(BUCKET_PREFIX), b.cast("string"), F.lit(":"), s.cast("string"))
    rows = (
        spark.range(buckets)
        .toDF("b")
        .crossJoin(spark.range(salts).toDF("s"))
        .where(F.pmod(F.hash(key), F.lit(partitions)) == F.pmod(b, F.lit(partitions)))
        .groupBy("b")
        .agg(F.min(s).alias("s"))
        .collect()
    )
    salt = {int(r["b"]): int(r["s"]) for r in rows}
    if len(salt) != buckets:
        raise ValueError(f"no salt below {salts} places every bucket on its partition")
    return [f"{BUCKET_PREFIX}{b}:{salt[b]}" for b in range(buckets)]


def checkpoint_keys(spark: SparkSession, checkpoint: str) -> list[str]:
    """The bucket keys of the stateful query whose checkpoint folder is ``checkpoint``, as
    its :data:`LAYOUT_FILE` records them. A new checkpoint gets :data:`BUCKETS` buckets with
    :func:`balanced_keys` over the session's ``spark.sql.shuffle.partitions`` (fixed with
    the checkpoint: Spark keeps the number it was created with). One the query wrote before
    the file existed (it has an ``offsets`` log) keeps the plain names of
    :data:`LEGACY_BUCKETS` buckets, under which its states live. A missing file is written
    (whole: a temporary file renamed), so the keys stay with the checkpoint. Through
    Hadoop's file system API, so any checkpoint location Spark takes works.

    Raises :class:`CheckpointLayoutError` naming the file when it is not a layout."""
    from streaming.spark.checkpoint import has_run, read_file, write_once

    text = read_file(spark, checkpoint, LAYOUT_FILE, error=CheckpointLayoutError)
    if text is not None:
        return _layout_keys(text, f"{checkpoint.rstrip('/')}/{LAYOUT_FILE}")
    if has_run(spark, checkpoint):
        keys = bucket_names(LEGACY_BUCKETS)
        record: dict[str, Any] = {"buckets": LEGACY_BUCKETS}
    else:
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or "200")
        keys = balanced_keys(spark, BUCKETS, partitions)
        record = {"buckets": BUCKETS, "partitions": partitions, "keys": keys}
    text = json.dumps(record)
    there = write_once(spark, checkpoint, LAYOUT_FILE, text, error=CheckpointLayoutError)
    if there != text:  # another run wrote it meanwhile
        return _layout_keys(there, f"{checkpoint.rstrip('/')}/{LAYOUT_FILE}")
    return keys


class CheckpointLayoutError(CheckpointFileError):
    """A checkpoint's :data:`LAYOUT_FILE` that cannot be read or written."""


def _layout_keys(text: str, path: str) -> list[str]:
    try:
        record = json.loads(text)
        buckets = record["buckets"]
        keys = record.get("keys")
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise CheckpointLayoutError(path, f"not a layout ({type(e).__name__}: {e})") from None
    if type(buckets) is not int or buckets < 1:
        raise CheckpointLayoutError(path, f"buckets: expected a positive integer, got {buckets!r}")
    if keys is None:
        return bucket_names(buckets)
    if (
        not isinstance(keys, list)
        or len(keys) != buckets
        or not all(isinstance(k, str) for k in keys)
        or len(set(keys)) != buckets
    ):
        raise CheckpointLayoutError(path, f"keys: expected {buckets} distinct strings")
    return keys


def track(
    decoded: DataFrame,
    *,
    cluster: str,
    config: TrackerConfig = DEFAULT_CONFIG,
    keys: Sequence[str],
    commit_rows: bool = False,
    group_filter: str = ".*",
) -> DataFrame:
    """Decoded rows (:func:`streaming.spark.decode.decode`) -> tracker events
    (:data:`EVENTS_SCHEMA`), state per group id in its bucket (:func:`tracker_key`). Two
    keys are not buckets and keep no state: the bad rows go under :data:`BAD_KEY` and come
    out as ``bad_record`` rows, the source stats rows
    (:data:`~streaming.spark.decode.STATS_KEY`) as ``source_stats`` rows, so one query both
    tracks and quarantines and counts. Good rows without a group are dropped here; the
    stats count them.

    ``keys``: the checkpoint's bucket keys (:func:`checkpoint_keys`), under which its groups'
    states live.

    ``commit_rows``: also an ``offset_commit`` row (the ``offset_commit`` struct) of each
    offset tombstone and an ``offset_commit_runs`` row of each ``CommitRun`` row (its runs'
    last commits as lists), of which :func:`streaming.sinks.frames.commit_frame` makes what
    ``offset_commits`` keeps with ``history="latest"``: the commit lane's rows without its
    second read of the source (:func:`streaming.job.start`).

    ``group_filter``: only the groups whose whole id matches it are tracked; the others' rows
    are dropped in the step (the collector's ``--group-filter`` matching,
    :func:`streaming.config.group_matches`). Every bucket that had rows also gives a
    ``tracked_groups`` row (its count of states) and forgets its idle groups
    (``config.group_idle_ms``, :mod:`streaming.tracking.forget`)."""
    from pyspark.sql import functions as F

    group = F.col("group_id")
    key = (
        F.when(F.col("error").isNotNull(), F.lit(BAD_KEY))
        .when(group == F.lit(STATS_KEY), group)
        .otherwise(tracker_key(group, keys))
    )
    routed = decoded.where(group.isNotNull() | F.col("error").isNotNull())
    routed = routed.withColumn(TRACKER_KEY, key)
    processor = _processor_class()(cluster, config, commit_rows, group_filter)
    step = routed.groupBy(TRACKER_KEY).transformWithStateInPandas(
        statefulProcessor=processor,
        outputStructType=STEP_SCHEMA,
        outputMode="Append",
        timeMode="None",
    )
    return from_step(step)
