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
        │                                      reducer.apply -> events (a known group's quiet
        │                                      commit runs: fold.fold_encoded, no event)
        ▼
    EVENTS_SCHEMA rows                         cluster, group_id, kind, event_id,
                                               event_ts_ms; a typed struct per table
                                               (rebalance_events, ..., bad_records);
                                               a typed struct per kind the driver reads
                                               that no table keeps (rebalance_summary:
                                               a rebalance's part for the driver;
                                               group_status, group_deleted)

The pieces: :mod:`streaming.spark.step_rows` (the step's rows: decoded rows -> observations,
tracker events -> rows, and their schemas), :mod:`streaming.spark.buckets` (the groups'
states under bucket keys, the checkpoint's layout) and here the processor and the query's
stateful step (:func:`track`).

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
timers, both seen on this stack: in ``ProcessingTime`` mode Spark's
``TransformWithStateExec.shouldRunAnotherBatch`` is always true, so the query runs an empty
micro-batch at every trigger forever (a core kept busy on an idle cluster, and
``processAllAvailable``/``availableNow`` never finish); and a wall-clock ``now`` makes the
output depend on when the records are processed (a backfill would judge every old
reconciliation as timed out), while record time gives the same rows live, on backfill and
after a restart from the checkpoint.

The adapter only converts: rows -> :class:`~streaming.tracking.model.Observation`, the
stored bytes <-> :class:`~streaming.tracking.state.GroupState`, and events -> rows with
:func:`~streaming.tracking.events.to_row`. Ordering is the reducer's job
(``reducer.ordered``: offset order per source partition, merged by logical time), so rows
are handed over as Spark delivers them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

from assign_core.partition_cache import made_in_bulk
from streaming.migration import GROUP_KEY_SCHEMA, MAP_STATE, MAP_STATE_SCHEMA
from streaming.spark.buckets import (
    BUCKET_STATE,
    BUCKET_STATE_SCHEMA,
    Folder,
    Reducer,
    load_bucket,
    store_bucket,
    tracker_key,
)
from streaming.spark.decode import COMMIT_RUN, FAN_OUT_TYPES, OFFSETS, STATS_KEY
from streaming.spark.step_rows import (
    STEP_SCHEMA,
    bad_record_struct,
    frame_rows,
    from_step,
    observations_by_group,
    passed_row,
    run_commit_frame,
    step_frame,
    tracker_frame,
)
from streaming.tracking.config import DEFAULT_CONFIG, TrackerConfig
from streaming.tracking.events import (
    OffsetCommitRow,
    TrackedGroups,
    event_id,
)
from streaming.tracking.model import CommitRuns, Observation
from streaming.tracking.state import GroupState

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.stateful_processor import StatefulProcessorHandle, TimerValues

__all__ = [
    "BAD_KEY",
    "TRACKER_KEY",
    "load_folder",
    "load_reducer",
    "track",
]

#: The grouping column of the stateful step.
TRACKER_KEY = "tracker_key"
#: The key of the bad rows in the stateful step (no Kafka group is named so).
BAD_KEY = "\x00rebalance-monitor:bad-records"
#: A bucket reports its count of groups (``TrackedGroups``) when it changes and in its first
#: micro-batch of each such window of record time, so that an exporter started since hears
#: from every bucket with rows; a bucket with nothing else to say then emits no frame.
TRACKED_EVERY_MS = 60_000


def load_reducer(config: TrackerConfig = DEFAULT_CONFIG) -> Reducer:
    """:func:`streaming.tracking.reducer.apply` with ``config`` bound."""
    from streaming.tracking.reducer import apply

    def bound(
        state: GroupState, observations: Sequence[Observation], now_ms: int
    ) -> tuple[GroupState, Sequence[Any]]:
        return apply(state, observations, now_ms, config=config)

    return bound


def load_folder(config: TrackerConfig = DEFAULT_CONFIG) -> Folder:
    """:func:`streaming.tracking.fold.fold_encoded` with ``config`` bound: a group whose
    micro-batch holds only commit runs the reducer would only record skips it."""
    from streaming.tracking.fold import fold_encoded

    def bound(blob: bytes, runs: Sequence[CommitRuns]) -> tuple[bytes, int] | None:
        return fold_encoded(blob, runs, config)

    return bound


# -- the processor ---------------------------------------------------------------------------


def _processor_class() -> type:
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class GroupTracker(StatefulProcessor):
        """The trackers of one bucket of groups: the groups' states in the bucket's
        ValueState (:class:`BucketStates`), time from the group's records."""

        def __init__(
            self,
            cluster: str,
            config: TrackerConfig,
            commit_rows: bool,
            group_filter: str,
            buckets: int,
        ) -> None:
            self._cluster = cluster
            self._config = config
            self._commit_rows = commit_rows
            self._group_filter = group_filter
            self._buckets = buckets

        def init(self, handle: StatefulProcessorHandle) -> None:
            self._handle = handle
            self._bucket = handle.getValueState(BUCKET_STATE, BUCKET_STATE_SCHEMA)
            # the layout before buckets kept one entry per group: read once, then moved
            self._legacy = handle.getMapState(MAP_STATE, GROUP_KEY_SCHEMA, MAP_STATE_SCHEMA)
            self._apply = load_reducer(self._config)
            self._folds = load_folder(self._config)
            self._keep = _group_keeper(self._group_filter)

        def handleInputRows(
            self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
        ) -> Iterator[pd.DataFrame]:
            if key[0] == STATS_KEY:
                out = [
                    self._passed("source_stats", r, source_stats=r["stats"])
                    for r in frame_rows(rows)
                ]
                yield step_frame(out)
            elif key[0] == BAD_KEY:
                out = [
                    self._passed("bad_record", r, bad_records=bad_record_struct(r))
                    for r in frame_rows(rows)
                ]
                yield step_frame(out)
            else:
                frames = list(rows)
                # a bucket's step makes several objects per commit run, none part of a cycle:
                # the cyclic collector paused meanwhile (it would scan the worker's heap over
                # and over, a large share of the step's Python at many groups)
                yield from made_in_bulk(lambda: self._track(str(key[0]), frames))

        def _track(self, bucket_key: str, frames: list[pd.DataFrame]) -> list[pd.DataFrame]:
            import pandas as pd  # type: ignore[import-untyped, unused-ignore]

            if self._keep is not None:
                frames = [_kept(frame, self._keep) for frame in frames]
            commits: list[OffsetCommitRow] | None = [] if self._commit_rows else None
            runs: dict[str, list[CommitRuns]] = {}
            by_group, failed = observations_by_group(
                frames,
                buckets=self._buckets,
                keep=self._keep,
                commits=commits,
                cluster=self._cluster,
                runs=runs,
            )
            now_ms = max(
                chain(
                    (o.logical_ts_ms for observed in by_group.values() for o in observed),
                    (max(r.timestamp_ms) for group_runs in runs.values() for r in group_runs),
                ),
                default=None,
            )
            events: list[Any] = list(commits or ())
            bucket = load_bucket(self._bucket, self._legacy)
            counted, last_seen = len(bucket.states), max(bucket.seen.values(), default=None)
            for group_id, group_runs in runs.items():
                if group_id not in by_group and bucket.fold(group_id, group_runs, self._folds):
                    continue  # all quiet: no event
                observed = by_group.setdefault(group_id, [])
                observed.extend(o for r in group_runs for o in r.observations())
            for group_id, observations in by_group.items():
                events.extend(bucket.step(group_id, observations, self._cluster, self._apply))
            if now_ms is not None:
                events.extend(bucket.forget_idle(now_ms, self._config.group_idle_ms))
            if now_ms is not None and (
                len(bucket.states) != counted
                or last_seen is None
                or now_ms // TRACKED_EVERY_MS > last_seen // TRACKED_EVERY_MS
            ):
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
            out = [tracker_frame(events)] if events else []
            if failed:
                bad_rows = [self._passed("bad_record", bad, bad_records=bad) for bad in failed]
                out.append(step_frame(bad_rows))
            run_commits = run_commit_frame(frames, self._cluster) if self._commit_rows else None
            if run_commits is not None:
                out.append(run_commits)
            # one frame, or none: pyspark converts each frame to Arrow column by column, at a
            # cost per column whatever its rows
            return out if len(out) <= 1 else [pd.concat(out, ignore_index=True)]

        def _passed(self, kind: str, row: Mapping[str, Any], **columns: Any) -> dict[str, Any]:
            return passed_row(self._cluster, kind, row, **columns)

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
    """A bucket's rows of the groups that pass the filter (``keep``, once per group id), its
    rows of events that name many groups, and its ``__consumer_offsets`` records other than
    runs: :func:`~streaming.spark.step_rows.observations_by_group` filters their groups as
    it applies them, after decoding the records, whose errors are quarantined whatever the
    group."""
    ids, kinds = frame["group_id"], frame["record_type"]
    passing = {g: keep(g) for g in ids.unique()}
    decoded_here = (frame["source"] == OFFSETS) & (kinds != COMMIT_RUN)
    return frame[ids.map(passing).astype(bool) | kinds.isin(FAN_OUT_TYPES) | decoded_here]


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
    states live; ``decoded`` must be decoded for as many buckets (``decode(buckets=len(keys))``:
    an event that names many groups comes as a row per bucket of its groups).

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
    processor = _processor_class()(cluster, config, commit_rows, group_filter, len(keys))
    step = routed.groupBy(TRACKER_KEY).transformWithStateInPandas(
        statefulProcessor=processor,
        outputStructType=STEP_SCHEMA,
        outputMode="Append",
        timeMode="None",
    )
    return from_step(step)
