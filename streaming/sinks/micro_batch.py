"""The job's ``foreachBatch`` sink: one micro-batch's rows to the exporter, Delta and counters.

:class:`Sinks` receives each micro-batch of the query (:func:`streaming.job.start`): the
stateful step's rows (tracker events, bad records, source stats) and the commit lane's
``offset_commits`` rows (:mod:`streaming.spark.commits`). It hands the exporter and the
listener the rows the driver needs first (detection latency), then appends each table's rows
to Delta side by side (:class:`streaming.sinks.delta.DeltaSink`, one Spark job per table),
and counts the batch (input, bad, unrouted, offset gaps) for the progress lines and the
exporter's own metrics.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from streaming.tables import BAD_RECORD_KIND, DRIVER_STRUCTS, GROUP_METRICS, PARTITION_LAG
from streaming.tracking.events import GroupMetricsRow, RebalanceSummary

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from streaming.config import JobConfig
    from streaming.sinks.delta import DeltaSink
    from streaming.sinks.prometheus import PrometheusSink

__all__ = [
    "BAD_RECORD",
    "DRIVER_KINDS",
    "DRIVER_STRUCT_KINDS",
    "SOURCE_STATS",
    "EventsListener",
    "JobStats",
    "Progress",
    "Sinks",
    "driver_row",
    "table_frames",
]

Progress = Callable[[str], None]
#: Receives each micro-batch's tracker rows of :data:`DRIVER_KINDS` but ``partition_lag``
#: (``to_row`` dicts; a rebalance as its :class:`~streaming.tracking.events.RebalanceSummary`,
#: kind ``rebalance_summary``), in order and in chunks of :data:`DRIVER_CHUNK`, before they
#: are written to Delta.
EventsListener = Callable[[list[dict[str, Any]]], None]
#: The tracker row kinds the driver needs (the exporter and the demo's summary); the bulk
#: (commits, per-member assignments) goes from the executors to Delta only.
DRIVER_KINDS = frozenset(
    {
        "rebalance",
        "group_metrics",
        "group_status",
        "partition_lag",
        "group_deleted",
        "tracked_groups",
    }
)

#: The struct column the driver reads of each of its kinds: the table's for group metrics
#: and lag, else the kind's own (:data:`~streaming.tables.DRIVER_STRUCTS`: a rebalance
#: as its summary, the kinds without a table). All typed: no JSON.
DRIVER_STRUCT_KINDS = {
    "group_metrics": GROUP_METRICS,
    "partition_lag": PARTITION_LAG,
    "rebalance": RebalanceSummary.kind,
    **{kind: kind for kind in DRIVER_STRUCTS if kind in DRIVER_KINDS},
}
_TOMBSTONE = "tombstone"
_METRICS = GroupMetricsRow.kind

#: The stateful step's rows that are not tracker events (:func:`streaming.spark.stateful.track`).
SOURCE_STATS, BAD_RECORD = "source_stats", BAD_RECORD_KIND
#: A bucket's count of tracked groups (:class:`~streaming.tracking.events.TrackedGroups`).
TRACKED_GROUPS = "tracked_groups"
#: Exporter rows parsed and applied at a time (of a batch collected as Arrow).
DRIVER_CHUNK = 5_000
#: Driver rows per task result at most, roughly: a bigger batch's are split by group first.
DRIVER_PIECE_ROWS = 50_000


# -- the sinks of one run --------------------------------------------------------------------


@dataclass
class JobStats:
    """Running totals of one run (what the progress lines show)."""

    input_records: int = 0
    bad_records: int = 0
    unrouted_records: int = 0
    offset_gaps: int = 0
    events: dict[str, int] = field(default_factory=dict)
    last_offsets: dict[tuple[str, int], int] = field(default_factory=dict)


class Sinks:
    """The ``foreachBatch`` handlers: split rows per table, Delta, Prometheus, counters.

    The writers are :class:`streaming.sinks.delta.DeltaSink` and
    :class:`streaming.sinks.prometheus.PrometheusSink` (``prometheus=None``: no exporter).
    """

    def __init__(
        self,
        delta: DeltaSink,
        prometheus: PrometheusSink | None,
        *,
        progress: Progress = print,
        on_events: EventsListener | None = None,
        offset_commits_history: str = "kept",
        cluster: str = "local",
    ) -> None:
        self.delta = delta
        self.prometheus = prometheus
        self.cluster = cluster
        self.progress = progress
        self.on_events = on_events
        self.offset_commits_history = offset_commits_history
        self.stats = JobStats()
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls,
        spark: SparkSession,
        config: JobConfig,
        *,
        progress: Progress = print,
        on_events: EventsListener | None = None,
    ) -> Sinks:
        from streaming.job import EVENTS_QUERY
        from streaming.sinks.delta import DeltaSink
        from streaming.sinks.maintenance import Settings
        from streaming.sinks.prometheus import PrometheusSink
        from streaming.spark import checkpoint as ckpt
        from streaming.tables import TABLE_NAMES

        # the Delta app id of the checkpoint, checked against the tables' transactions
        events = f"{config.checkpoint_dir.rstrip('/')}/{EVENTS_QUERY}"
        app = ckpt.app_id(spark, config.checkpoint_dir, events)
        delta = DeltaSink(spark, config.delta_path, app, Settings.of(config))
        delta.ensure_tables()
        ckpt.check_transactions(
            ckpt.table_transactions(spark, [(t, delta.path(t)) for t in TABLE_NAMES]),
            app,
            ckpt.last_batch_id(spark, events),
            lambda line: progress(f"[checkpoint] {line}"),
        )
        prometheus = None
        if config.metrics_port:
            from streaming.sinks.web_config import load_web_config

            web = (
                None
                if config.metrics_web_config_file is None
                else load_web_config(config.metrics_web_config_file)
            )
            prometheus = PrometheusSink(
                end_offsets_max_age_s=config.end_offsets_max_age_s,
                lag_export_interval_s=config.lag_export_interval_s,
            )
            prometheus.expect_cluster(config.cluster, time.time())
            delta.on_rows_written = prometheus.record_rows_written
            port = prometheus.start(config.metrics_host, config.metrics_port, web_config=web)
            scheme = "http" if web is None else web.scheme
            progress(
                f"metrics on {scheme}://{config.metrics_host}:{port}/metrics"
                + ("" if web is None or not web.users else " (basic auth)")
            )
        return cls(
            delta,
            prometheus,
            progress=progress,
            on_events=on_events,
            offset_commits_history=config.offset_commits_history,
            cluster=config.cluster,
        )

    def close(self) -> None:
        if self.prometheus is not None:
            self.prometheus.stop()

    def _count_records(
        self,
        stats_rows: list[dict[str, Any]],
        batch_id: int,
        started: float,
        bad_rows: int = 0,
    ) -> None:
        """Sum a batch's source stats (:func:`streaming.spark.decode.source_stats`) per source
        partition: records, bad, without a group, offset gaps; to Prometheus (with the batch's
        duration since ``started``, :func:`time.monotonic`) and a line. ``bad_rows``: the
        batch's ``bad_record`` rows; more than the stats' bad records when the stateful step
        quarantined rows of its own (:func:`streaming.spark.step_rows.observations_by_group`)."""
        per_partition: dict[tuple[str, int], list[int]] = {}  # lo, hi, records, unrouted, bad
        for s in stats_rows:
            key = (str(s["topic"]), int(s["partition"]))
            got = per_partition.get(key)
            if got is None:
                per_partition[key] = [s["lo"], s["hi"], s["records"], s["unrouted"], s["bad"]]
            else:
                got[0], got[1] = min(got[0], s["lo"]), max(got[1], s["hi"])
                got[2] += s["records"]
                got[3] += s["unrouted"]
                got[4] += s["bad"]
        with self._lock:
            stats = self.stats
            records = unrouted = bad_count = gaps = 0
            for key, (lo, hi, n, no_group, bad) in per_partition.items():
                records, unrouted, bad_count = records + n, unrouted + no_group, bad_count + bad
                last = stats.last_offsets.get(key)
                gaps += hi - lo + 1 - n
                if last is not None and lo > last + 1:
                    gaps += lo - last - 1
                stats.last_offsets[key] = max(hi, last if last is not None else -1)
            bad_count = max(bad_count, bad_rows)
            stats.input_records += records
            stats.bad_records += bad_count
            stats.unrouted_records += unrouted
            stats.offset_gaps += gaps
            line = (
                f"[records] batch {batch_id}: {records} records, {bad_count} bad, "
                f"{unrouted} without a group (totals: records={stats.input_records} "
                f"bad={stats.bad_records} unrouted={stats.unrouted_records} "
                f"gaps={stats.offset_gaps})"
            )
        if self.prometheus is not None:
            self.prometheus.record_batch(
                time.monotonic() - started,
                records,
                bad_count,
                time.time(),
                batch_id=batch_id,
                unrouted_records=unrouted,
                offset_gaps=gaps,
            )
        self.progress(line)

    def _drive(self, rows: pa.Table, columns: list[str]) -> None:
        """Hand the exporter and the listener the driver's rows of one collected piece, in
        order and in chunks of :data:`DRIVER_CHUNK` (no filtered copy of the piece: memory).
        Without a listener, each run of group metrics rows (a storm's bulk: one per strategy
        of each rebalance) goes to the exporter as columns, no row object each
        (:meth:`~streaming.sinks.prometheus.PrometheusSink.update_group_metrics`)."""
        from streaming.sinks.prometheus import GROUP_METRICS_COLUMNS

        exporter, listener = self.prometheus, self.on_events
        for start in range(0, rows.num_rows, DRIVER_CHUNK):
            chunk = rows.slice(start, DRIVER_CHUNK)
            kinds = chunk["kind"].to_pylist()
            # the metrics kind is never a run of its own when a listener needs every row
            split = _METRICS if exporter is not None and listener is None else None
            fields: dict[str, list[Any]] = {}
            if split in kinds:
                metrics = chunk[GROUP_METRICS].combine_chunks()
                fields = {c: metrics.field(c).to_pylist() for c in GROUP_METRICS_COLUMNS}
            values = [
                [None] * len(kinds) if fields and c == GROUP_METRICS else chunk[c].to_pylist()
                for c in columns
            ]
            i = 0
            while i < len(kinds):
                end = i
                if kinds[i] == split:
                    while end < len(kinds) and kinds[end] == split:
                        end += 1
                    assert exporter is not None
                    exporter.update_group_metrics({c: f[i:end] for c, f in fields.items()})
                    i = end
                    continue
                driver = []
                while end < len(kinds) and kinds[end] != split:
                    row = _driver_row(kinds[end], [v[end] for v in values])
                    if row is not None:
                        driver.append(row)
                    end += 1
                i = end
                if not driver:
                    continue
                if exporter is not None:
                    exporter.update(driver)
                if listener is not None:
                    listener(driver)

    def events_batch(self, df: DataFrame, batch_id: int) -> None:
        """One micro-batch of the stateful step's rows: the rows the driver needs (exporter,
        listener), then each table's rows parsed and appended by Spark (one Delta append per
        table with rows, side by side; the bad records into ``bad_records``), then the
        source stats counted (the batch's duration, input, bad, unrouted, gaps).

        The exporter goes first because it is what alerts read: a batch's values are served
        while its Delta commits run (detection latency). If a commit then fails, the query
        stops and a restart replays the batch into the (new) exporter and into Delta, which
        skips the tables already committed (``txnVersion``)."""
        import pyarrow.compute as pc
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        from streaming.sinks.frames import kept
        from streaming.tables import COMMIT_KIND, COMMIT_STRUCT_COLUMN

        started = time.monotonic()
        # on disk (the OS's page cache keeps it in memory when there is room): a block Spark
        # caches in its heap is pinned while a task reads it, and a partition of a backlog's
        # batch bigger than the heap's share leaves the tasks that read it (a table's append,
        # its sort) no memory at all
        df = df.persist(StorageLevel.DISK_ONLY)
        try:
            # the first job computes the batch (persisted) and counts each kind; the second
            # brings the driver, from the cache, the rows it needs, typed: the exporter's
            # (DRIVER_STRUCT_KINDS: a rebalance as its RebalanceSummary, without the lists
            # only Delta keeps; an offset tombstone's commit struct, which ends its
            # partition's lag series) and the source stats; only those rows, since each row
            # carries every struct column (null ones too); in pieces (_pieces)
            # and how many of each kind a table keeps: a batch whose lag measurements are
            # all outside partition_lag's interval appends nothing (an empty append is a
            # Delta commit, a log file, and a commit's round trips on the batch's path)
            kind_col = F.col("kind")
            counted = df.groupBy("kind").agg(
                F.count(F.lit(1)).alias("count"), F.count(F.when(kept(), 1)).alias("kept")
            )
            kinds: dict[str, int] = {}
            kept_kinds: set[str] = set()
            for r in counted.collect():
                kinds[str(r["kind"])] = int(r["count"])
                if r["kept"]:
                    kept_kinds.add(str(r["kind"]))
            computed = time.monotonic()
            commit = F.col(COMMIT_STRUCT_COLUMN)
            is_tombstone = (kind_col == COMMIT_KIND) & commit["deleted"]
            typed = [F.col(column) for column in DRIVER_STRUCT_KINDS.values()]
            columns = [*DRIVER_STRUCT_KINDS.values(), _TOMBSTONE]
            others = [k for k in DRIVER_KINDS if k != PARTITION_LAG]
            driver_rows = df.where(
                kind_col.isin([*others, SOURCE_STATS]) | F.coalesce(is_tombstone, F.lit(False))
            ).select(
                "kind",
                "group_id",
                *typed,
                F.when(is_tombstone, commit).alias(_TOMBSTONE),
                SOURCE_STATS,
            )
            needed = sum(n for k, n in kinds.items() if k in others or k == SOURCE_STATS)
            stats: list[dict[str, Any]] = []
            for piece in _pieces(driver_rows, needed):
                # Arrow buffers, not a row object each
                small = piece.drop("group_id").toArrow()
                is_stats = pc.equal(small["kind"], SOURCE_STATS)
                stats += small.filter(is_stats)[SOURCE_STATS].to_pylist()
                self._drive(small, columns)
                del small
            # then the lag rows, flat: after the batch's deletions and offset tombstones,
            # which a newer lag row of the same partition follows (the exporter takes no lag
            # row measured before a tombstone or older than the group's deletion)
            exporter, lag_count = self.prometheus, kinds.get(PARTITION_LAG, 0)
            if exporter is not None and lag_count:
                from streaming.sinks.prometheus import LAG_COLUMNS

                lag = F.col(PARTITION_LAG)
                lag_rows = df.where(kind_col == PARTITION_LAG).select(
                    *[lag[c].alias(c) for c in LAG_COLUMNS]
                )
                for piece in _pieces(lag_rows, lag_count):
                    flat = piece.toArrow()
                    for start in range(0, flat.num_rows, DRIVER_CHUNK):
                        chunk = flat.slice(start, DRIVER_CHUNK)
                        exporter.update_lag({c: chunk[c].to_pylist() for c in LAG_COLUMNS})
                    del flat
            if self.prometheus is not None:  # the inputs' freshness, with the batch's rows
                self.prometheus.record_sources(self.cluster, stats)
            exported = time.monotonic()
            frames = table_frames(
                df, kept_kinds, batch_id, offset_commits_history=self.offset_commits_history
            )
            self.delta.write_batch(batch_id, frames)
        finally:
            df.unpersist()
        self._count_records(stats, batch_id, started, kinds.get(BAD_RECORD, 0))
        not_events = (SOURCE_STATS, BAD_RECORD, TRACKED_GROUPS)
        events = {k: n for k, n in kinds.items() if k not in not_events}
        with self._lock:
            for kind, n in events.items():
                self.stats.events[kind] = self.stats.events.get(kind, 0) + n
        shown = ", ".join(f"{k}={n}" for k, n in sorted(events.items())) or "none"
        done = time.monotonic()
        self.progress(
            f"[events] batch {batch_id}: {sum(events.values())} events ({shown}) in"
            f" {done - started:.1f} s (read, decode, track {computed - started:.1f} s,"
            f" exporter {exported - computed:.1f} s, Delta {done - exported:.1f} s)"
        )


def _pieces(rows: DataFrame, needed: int) -> Iterator[DataFrame]:
    """The driver's rows of a micro-batch (``needed`` of them), in pieces of about
    :data:`DRIVER_PIECE_ROWS` rows collected one after the other, so that the driver's heap
    never holds more than one piece's task results: a big batch (a backfill without a cap)
    collected at once can run the driver out of heap. A group's rows are in one piece, in
    their order. The driver's rows are cached on their own first, so that each piece is a
    scan of them rather than of the whole batch (a batch's commit rows outnumber them)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    pieces = -(-needed // DRIVER_PIECE_ROWS)
    if pieces <= 1:
        yield rows
        return
    rows = rows.persist(StorageLevel.DISK_ONLY)
    try:
        # by group, which keeps each group's rows in their order (one map task holds a
        # group's rows); the rows without a group (the stats) hash alike, to one piece
        piece = F.pmod(F.xxhash64("group_id"), F.lit(pieces))
        for i in range(pieces):
            yield rows.where(piece == F.lit(i))
    finally:
        rows.unpersist()


def driver_row(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the driver reads of one of the stateful step's rows (a
    :data:`streaming.spark.step_rows.EVENTS_SCHEMA` dict), as :meth:`Sinks.events_batch` reads
    it from the batch's Arrow columns; None: a row only Delta reads."""
    from streaming.tables import COMMIT_KIND, COMMIT_STRUCT_COLUMN

    kind = row["kind"]
    commit = row.get(COMMIT_STRUCT_COLUMN)
    tombstone = commit if kind == COMMIT_KIND and commit and commit["deleted"] else None
    structs = [row.get(column) for column in DRIVER_STRUCT_KINDS.values()]
    return _driver_row(kind, [*structs, tombstone])


def _driver_row(kind: str, values: list[Any]) -> dict[str, Any] | None:
    """A row the driver needs, from its one non-null struct of :data:`DRIVER_STRUCT_KINDS`'
    columns then the tombstone's (a struct of its own kind's column, such as a rebalance's
    summary, is a row of that kind)."""
    for column, struct in zip(_DRIVER_COLUMNS, values, strict=True):
        if struct is not None:
            return {**struct, "kind": column if column in DRIVER_STRUCTS else kind}
    return None


_DRIVER_COLUMNS = (*DRIVER_STRUCT_KINDS.values(), _TOMBSTONE)


def table_frames(
    events: DataFrame,
    kinds: Iterable[str],
    batch_id: int,
    *,
    offset_commits_history: str = "kept",
) -> dict[str, DataFrame]:
    """Each table's rows of a micro-batch of the stateful step's rows (``events``) that
    holds rows of ``kinds``: the tracker tables' typed structs (:func:`frames.table_frame`),
    the commit lane's ``offset_commits`` (:func:`frames.commit_frame`) and the quarantined
    records (:func:`frames.bad_records_frame`)."""
    from streaming import tables as t
    from streaming.sinks import frames as f

    kinds = set(kinds)
    if t.COMMIT_RUNS_KIND in kinds:
        kinds.add(t.COMMIT_KIND)
    out = {
        table: (
            f.commit_frame(events, history=offset_commits_history)
            if table == t.OFFSET_COMMITS
            else f.table_frame(events, table)
        )
        for table in sorted({t.KIND_TO_TABLE[k] for k in kinds if k in t.KIND_TO_TABLE})
    }
    if BAD_RECORD in kinds:
        out[t.BAD_RECORDS] = f.bad_records_frame(events, batch_id)
    return out
