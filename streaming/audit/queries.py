"""The Spark side of ``rebalance-monitor audit``: one method of :class:`Audit` per subcommand.

Every method reads the Delta tables under one base path (``<base>/<table>``, see
``docs/tables.md``), optionally restricted to one ``cluster``, and returns a
:class:`~streaming.audit.render.Result`. Rows are de-duplicated by ``event_id`` (two app ids
may have written the same events, ``docs/tables.md``), and time ranges also filter the
``date`` partition column so Spark reads only the days concerned. Ranges are half-open:
``since <= event time < until``.

Semantics, numbered as the help texts refer to them:

1. ``history``: every row of ``rebalance_events`` of the group in the range, in event-time
   order (ties: generation, then ``__consumer_offsets`` position). ``skew`` is the actual
   assignment's ``spread_partitions`` (max - min partitions per member), ``imbalance`` its
   ``max / mean``; ``divergent`` lists the strategies whose assignment differs from it.
2. ``storms``: rebalances (``is_rebalance``) of each group in the range; a window of
   ``M`` minutes starting at each rebalance counts the rebalances in ``[t, t + M)``. A
   window with at least ``N`` is stormy; overlapping stormy windows (sharing a rebalance)
   merge into one storm, reported with its first and last rebalance, how many rebalances
   it holds and the most found in one window (``max_in_window``), and what its rebalances
   paused (``paused_partition_seconds``: paused partitions x duration, summed; rules C4,
   C5 of ``docs/tracking.md``). The costliest storms come first.
3. ``diverging``: per group, the latest row of ``rebalance_events`` in the range (event
   time, then generation); reported when its actual assignment differs from the expected one of the
   group's own strategy (``own_strategy_divergent``), or of strategy ``S`` (``divergent[S]``).
   A group that ended empty has nothing to diverge.
4. ``top-churn``: per group, partitions moved and revoked summed over the range
   (``churn`` of ``rebalance_events``), most moved first.
5. ``owner``: per group that held the partition at or before T (event time, from the
   window's start on), its latest rebalance at or before T decides: :meth:`Audit.owner`.
6. ``sql``: every table registered as a temporary view under its name (restricted to the
   cluster when one is given); only read-only statements run.
7. ``advise``: the ``group_metrics`` rows of the group's rebalances (``is_rebalance`` in
   ``rebalance_events``) in the range, priced per strategy and summed with the rules of
   :mod:`streaming.audit.advise` (partitions moved, paused partitions and
   partition-seconds, mean/max skew, follow-up rounds), and a one-line recommendation.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType

from streaming import tables as t
from streaming.audit import MissingTableError, QueryError, TimeTravelError
from streaming.audit import results as shape
from streaming.audit.advise import CostRow
from streaming.audit.readonly import check_read_only
from streaming.audit.render import Result
from streaming.audit.results import GROUP as _GROUP
from streaming.audit.results import ORDER as _ORDER
from streaming.audit.results import Timeline
from streaming.audit.times import format_ms

__all__ = ["Audit"]


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _date(ts_ms: int) -> dt.date:
    return t.date_of_ms(ts_ms)


def _in_range(frame: DataFrame, since_ms: int | None, until_ms: int | None) -> DataFrame:
    """``since <= event_ts_ms < until``, with the matching ``date`` bounds for pruning."""
    if since_ms is not None:
        frame = frame.filter(
            (F.col(t.PARTITION_COLUMN) >= F.lit(_date(since_ms)))
            & (F.col("event_ts_ms") >= F.lit(since_ms))
        )
    if until_ms is not None:  # exclusive: an until at midnight ends the day before
        frame = frame.filter(
            (F.col(t.PARTITION_COLUMN) <= F.lit(_date(until_ms - 1)))
            & (F.col("event_ts_ms") < F.lit(until_ms))
        )
    return frame


def _divergent_strategies() -> Column:
    return F.array_sort(F.map_keys(F.map_filter("divergent", lambda _k, v: v)))


class Audit:
    """The Delta tables under ``base_path`` (``<base>/<table>``), read-only.

    ``cluster``: restrict every query to that cluster label (None: every cluster).
    ``limit``: the most rows a result keeps (None: all); a longer one gets a note.
    """

    def __init__(
        self,
        spark: SparkSession,
        base_path: str,
        *,
        cluster: str | None = None,
        limit: int | None = None,
    ) -> None:
        self.spark = spark
        self.base_path = base_path.rstrip("/") or "/"
        self.cluster = cluster
        self.limit = limit

    # -- reading ---------------------------------------------------------------------------

    def path(self, table: str) -> str:
        return f"{self.base_path}/{table}"

    def exists(self, table: str) -> bool:
        from delta.tables import DeltaTable

        return bool(DeltaTable.isDeltaTable(self.spark, self.path(table)))

    def read(self, table: str, *, version: int | None = None) -> DataFrame:
        """``table`` (at ``version``, else the latest), restricted to the cluster."""
        if not self.exists(table):
            raise MissingTableError(
                f"--delta-path: no Delta table {table} at {self.path(table)} "
                "(has the job written there? --delta-path names the tables' base)"
            )
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        frame = reader.load(self.path(table))
        if self.cluster is not None and "cluster" in frame.columns:
            frame = frame.filter(F.col("cluster") == F.lit(self.cluster))
        return frame

    def _collect(self, frame: DataFrame, notes: list[str]) -> list[Any]:
        if self.limit is None:
            return frame.collect()
        rows = frame.limit(self.limit + 1).collect()
        if len(rows) > self.limit:
            notes.append(f"showing the first {self.limit} rows (--limit N, 0 for all)")
            rows = rows[: self.limit]
        return rows

    # -- 1. history ------------------------------------------------------------------------

    def _group_events(self, group: str, since_ms: int | None, until_ms: int | None) -> DataFrame:
        frame = self.read(t.REBALANCE_EVENTS).filter(F.col("group_id") == F.lit(group))
        return _in_range(frame, since_ms, until_ms)

    def history(self, group: str, *, since_ms: int | None, until_ms: int | None) -> Result:
        """The group's rebalances in order (module docstring, 1)."""
        frame = (
            self._group_events(group, since_ms, until_ms)
            .select(
                "event_id",
                *_ORDER,
                "cluster",
                "generation_before",
                F.size("members_before").alias("members_before"),
                F.size("members_after").alias("members_after"),
                "cause",
                F.col("churn.moved_partitions").alias("moved"),
                F.col("churn.revoked_partitions").alias("revoked"),
                F.col("actual_skew.spread_partitions").alias("skew"),
                F.col("actual_skew.imbalance_ratio").alias("imbalance"),
                "strategy",
                _divergent_strategies().alias("divergent"),
            )
            .dropDuplicates(["event_id"])
            .orderBy(*_ORDER, "cluster")
        )
        notes: list[str] = []
        found = self._collect(frame, notes)
        return shape.history_result(found, notes, group=group, cluster=self.cluster)

    def timeline(self, group: str, *, since_ms: int | None, until_ms: int | None) -> Timeline:
        """Per rebalance of the group in the range (all of them, ``limit`` aside): the
        partitions each member held, moved and revoked partitions (``history --plot``)."""
        frame = (
            self._group_events(group, since_ms, until_ms)
            .select(
                "event_id",
                *_ORDER,
                "cluster",
                F.transform_values("actual", lambda _k, v: F.size(v)).alias("counts"),
                F.transform(
                    "members_after",
                    lambda m: F.struct(
                        m["member_id"].alias("member_id"),
                        m["group_instance_id"].alias("group_instance_id"),
                        m["client_id"].alias("client_id"),
                    ),
                ).alias("members"),
                F.col("churn.moved_partitions").alias("moved"),
                F.col("churn.revoked_partitions").alias("revoked"),
                "cause",
            )
            .dropDuplicates(["event_id"])
            .orderBy(*_ORDER)
        )
        return shape.timeline_of(frame.collect(), group=group)

    # -- 2. storms -------------------------------------------------------------------------

    def storms(
        self,
        *,
        since_ms: int | None,
        until_ms: int | None,
        min_rebalances: int,
        window_ms: int,
    ) -> Result:
        """Groups with at least ``min_rebalances`` rebalances in a window of ``window_ms``
        (module docstring, 2)."""
        events = (
            _in_range(self.read(t.REBALANCE_EVENTS), since_ms, until_ms)
            .filter(F.col("is_rebalance"))
            .select(
                "event_id",
                *_GROUP,
                *_ORDER,
                # what the rebalance really paused (rule C5 of docs/tracking.md)
                (
                    F.size("paused_partitions")
                    * F.coalesce("duration_ms", "assignment_duration_ms", F.lit(0))
                    / 1000.0
                )
                .cast("double")
                .alias("paused_s"),
            )
            .dropDuplicates(["event_id"])
        )
        by_time = Window.partitionBy(*_GROUP).orderBy(*_ORDER)
        events = events.withColumn("idx", F.row_number().over(by_time))
        # the window of each rebalance: itself, its peers (same ms) and those up to M later
        ahead = Window.partitionBy(*_GROUP).orderBy("event_ts_ms").rangeBetween(0, window_ms - 1)
        windows = (
            events.withColumn("first_idx", F.min("idx").over(ahead))
            .withColumn("last_idx", F.max("idx").over(ahead))
            .withColumn("last_ts_ms", F.max("event_ts_ms").over(ahead))
            .withColumn("n", F.col("last_idx") - F.col("first_idx") + 1)
            .filter(F.col("n") >= min_rebalances)
        )
        # merge stormy windows that share a rebalance (gaps and islands)
        before = (
            Window.partitionBy(*_GROUP)
            .orderBy("first_idx", "last_idx")
            .rowsBetween(Window.unboundedPreceding, -1)
        )
        upto = (
            Window.partitionBy(*_GROUP)
            .orderBy("first_idx", "last_idx")
            .rowsBetween(Window.unboundedPreceding, Window.currentRow)
        )
        storms = (
            windows.withColumn("prev_last", F.max("last_idx").over(before))
            .withColumn(
                "new",
                F.when(
                    F.col("prev_last").isNull() | (F.col("first_idx") > F.col("prev_last")), 1
                ).otherwise(0),
            )
            .withColumn("storm", F.sum("new").over(upto))
            .groupBy(*_GROUP, "storm")
            .agg(
                F.min("event_ts_ms").alias("start_ms"),
                F.max("last_ts_ms").alias("end_ms"),
                F.min("first_idx").alias("lo"),
                F.max("last_idx").alias("hi"),
                F.max("n").alias("max_in_window"),
            )
            .withColumn("rebalances", F.col("hi") - F.col("lo") + 1)
        )
        # the storm's cost: what its rebalances paused, summed once each
        paused = (
            storms.alias("s")
            .join(
                events.alias("e"),
                (F.col("s.cluster") == F.col("e.cluster"))
                & (F.col("s.group_id") == F.col("e.group_id"))
                & F.col("e.idx").between(F.col("s.lo"), F.col("s.hi")),
            )
            .groupBy("s.cluster", "s.group_id", "s.storm")
            .agg(F.sum("e.paused_s").alias("paused_partition_seconds"))
        )
        storms = storms.join(paused, [*_GROUP, "storm"]).orderBy(
            F.desc("paused_partition_seconds"), F.desc("rebalances"), "start_ms", *_GROUP
        )
        notes: list[str] = []
        return shape.storms_result(
            self._collect(storms, notes),
            notes,
            cluster=self.cluster,
            min_rebalances=min_rebalances,
            window_ms=window_ms,
        )

    # -- 7. advise -------------------------------------------------------------------------

    def cost_rows(
        self, group: str, *, since_ms: int | None, until_ms: int | None
    ) -> tuple[list[CostRow], str | None]:
        """The ``group_metrics`` rows of the group's rebalances (``is_rebalance``) in the
        range, as :class:`~streaming.audit.advise.CostRow` (one per rebalance and strategy),
        and the group protocol of its latest rebalance."""
        events = (
            self._group_events(group, since_ms, until_ms)
            .filter(F.col("is_rebalance"))
            .select(
                F.col("event_id").alias("rebalance_event_id"),
                F.col("event_ts_ms").alias("rebalance_ts_ms"),
                "group_protocol",
            )
            .dropDuplicates(["rebalance_event_id"])
        )
        metrics = (
            _in_range(
                self.read(t.GROUP_METRICS).filter(F.col("group_id") == F.lit(group)),
                since_ms,
                until_ms,
            )
            .dropDuplicates(["event_id"])
            .join(events, "rebalance_event_id")
            .select(
                "rebalance_event_id",
                "rebalance_ts_ms",
                "group_protocol",
                F.when(F.col("is_actual"), F.lit("actual"))
                .otherwise(F.col("strategy"))
                .alias("strategy"),
                "is_own_strategy",
                "rebalance_protocol",
                "moved_partitions",
                "paused_partitions",
                "paused_partition_seconds",
                "spread_partitions",
                "needs_followup",
                "error",
            )
            .orderBy("rebalance_ts_ms", "rebalance_event_id", "strategy")
        )
        return shape.cost_rows(metrics.collect())

    def advise(
        self,
        group: str,
        *,
        since_ms: int | None,
        until_ms: int | None,
        rows: list[CostRow] | None = None,
        group_protocol: str | None = None,
    ) -> Result:
        """The group's rebalances priced under every strategy, and the advice (module
        docstring, 7; :mod:`streaming.audit.advise`). ``rows``: already read
        (:meth:`cost_rows`)."""
        if rows is None:
            rows, group_protocol = self.cost_rows(group, since_ms=since_ms, until_ms=until_ms)
        return shape.advise_result(
            rows, group=group, group_protocol=group_protocol, cluster=self.cluster
        )

    # -- 3. diverging ----------------------------------------------------------------------

    def diverging(
        self, *, strategy: str | None, since_ms: int | None = None, until_ms: int | None = None
    ) -> Result:
        """Groups whose latest actual assignment in the range differs from their own
        strategy's (or ``strategy``'s) expected one (module docstring, 3)."""
        if strategy is None:
            divergent = F.coalesce(F.col("own_strategy_divergent"), F.lit(False))
            checked = F.filter("expected", lambda e: e["own"])
        else:
            divergent = F.coalesce(F.col("divergent").getItem(strategy), F.lit(False))
            checked = F.filter("expected", lambda e: e["strategy"] == F.lit(strategy))
        latest = Window.partitionBy(*_GROUP).orderBy(*(F.desc(c) for c in _ORDER))
        frame = (
            _in_range(self.read(t.REBALANCE_EVENTS), since_ms, until_ms)
            .select(
                "event_id",
                *_GROUP,
                *_ORDER,
                "strategy",
                F.size("members_after").alias("members"),
                divergent.alias("is_divergent"),
                F.size(F.get(checked, 0)["divergent_members"]).alias("divergent_members"),
                _divergent_strategies().alias("divergent"),
            )
            .dropDuplicates(["event_id"])
            .withColumn("rank", F.row_number().over(latest))
            .filter((F.col("rank") == 1) & F.col("is_divergent"))
            .orderBy(*_GROUP)
        )
        notes: list[str] = []
        return shape.diverging_result(
            self._collect(frame, notes), notes, strategy=strategy, cluster=self.cluster
        )

    # -- 4. top-churn ----------------------------------------------------------------------

    def top_churn(self, *, since_ms: int | None, until_ms: int | None) -> Result:
        """Groups by partitions moved (then revoked) in the range (module docstring, 4)."""
        frame = (
            _in_range(self.read(t.REBALANCE_EVENTS), since_ms, until_ms)
            .select(
                "event_id",
                *_GROUP,
                "is_rebalance",
                F.col("churn.moved_partitions").alias("moved"),
                F.col("churn.revoked_partitions").alias("revoked"),
            )
            .dropDuplicates(["event_id"])
            .groupBy(*_GROUP)
            .agg(
                F.sum("moved").alias("moved"),
                F.sum("revoked").alias("revoked"),
                F.count_if(F.col("is_rebalance")).alias("rebalances"),
                F.max("moved").alias("max_moved"),
            )
            .orderBy(F.desc("moved"), F.desc("revoked"), *_GROUP)
        )
        notes: list[str] = []
        return shape.top_churn_result(self._collect(frame, notes), notes, cluster=self.cluster)

    # -- 5. owner --------------------------------------------------------------------------

    def version_at(self, table: str, at_ms: int) -> int:
        """The version of ``table`` Delta's ``timestampAsOf`` would read at ``at_ms``: the
        last commit at or before it, from the table's history. :class:`TimeTravelError`
        when ``at_ms`` is before the first version still in the log."""
        from delta.tables import DeltaTable

        if not self.exists(table):
            self.read(table)  # raises MissingTableError
        history = DeltaTable.forPath(self.spark, self.path(table)).history()
        ts = F.unix_millis(F.col("timestamp"))
        summary = history.agg(
            F.max(F.when(ts <= F.lit(at_ms), F.col("version"))).alias("version"),
            F.min_by("version", ts).alias("first_version"),
            F.min(ts).alias("first_ms"),
        ).collect()[0]
        if summary["version"] is None:
            raise TimeTravelError(
                f"--at: {format_ms(at_ms)} is before the first version of {table} "
                f"(version {summary['first_version']}, written {format_ms(summary['first_ms'])});"
                " use a later --at, or drop --as-recorded to read the table as it is now"
            )
        return int(summary["version"])

    def owner(
        self,
        topic: str,
        partition: int,
        *,
        at_ms: int,
        since_ms: int | None = None,
        group: str | None = None,
        as_recorded: bool = False,
    ) -> Result:
        """Who owned ``topic``-``partition`` at ``at_ms``, per group (module docstring, 5).

        1. ``rebalance_events`` and ``member_assignments`` are read as they are now; with
           ``as_recorded`` as they were at ``at_ms`` (Delta time travel to the last commit
           at or before it, :meth:`version_at`: what the monitor had recorded by then).
        2. Only events at or before ``at_ms`` (event time) count, and from ``since_ms`` on
           (the window's bound: a group whose last rebalance is older is not seen).
        3. Per group that held the partition in one of those generations: the group's
           latest generation at or before ``at_ms``. If it assigns the partition, that
           member is the owner (``status = owner``); if not (the group moved on, shrank to
           nothing, or stopped consuming the topic), the row says ``released`` and names the
           last owner and the generation it held the partition in (``owner_generation``).
        """
        re_version = ma_version = None
        if as_recorded:
            re_version = self.version_at(t.REBALANCE_EVENTS, at_ms)
            ma_version = self.version_at(t.MEMBER_ASSIGNMENTS, at_ms)

        def upto(frame: DataFrame) -> DataFrame:
            frame = frame.filter(
                (F.col(t.PARTITION_COLUMN) <= F.lit(_date(at_ms)))
                & (F.col("event_ts_ms") <= F.lit(at_ms))
            )
            frame = _in_range(frame, since_ms, None)
            return frame if group is None else frame.filter(F.col("group_id") == F.lit(group))

        held = (
            upto(self.read(t.MEMBER_ASSIGNMENTS, version=ma_version))
            .filter((F.col("topic") == F.lit(topic)) & (F.col("partition") == F.lit(partition)))
            .select(
                "event_id",
                *_GROUP,
                "rebalance_event_id",
                F.col("generation").alias("owner_generation"),
                F.col("event_ts_ms").alias("held_ts_ms"),
                "member_id",
                "group_instance_id",
                "client_id",
            )
            .dropDuplicates(["event_id"])
            .withColumn(
                "rank",
                F.rank().over(
                    Window.partitionBy(*_GROUP).orderBy(
                        F.desc("held_ts_ms"), F.desc("owner_generation")
                    )
                ),
            )
            .filter(F.col("rank") == 1)
            .drop("rank", "event_id")
        )
        latest = (
            upto(self.read(t.REBALANCE_EVENTS, version=re_version))
            .select("event_id", *_GROUP, *_ORDER)
            .dropDuplicates(["event_id"])
            .withColumn(
                "rank",
                F.row_number().over(
                    Window.partitionBy(*_GROUP).orderBy(*(F.desc(c) for c in _ORDER))
                ),
            )
            .filter(F.col("rank") == 1)
            .select(
                *_GROUP,
                F.col("event_id").alias("latest_event_id"),
                F.col("event_ts_ms").alias("latest_ts_ms"),
                F.col("generation_after").alias("latest_generation"),
            )
        )
        frame = held.join(latest, list(_GROUP), "left").orderBy(*_GROUP, "member_id")
        notes: list[str] = []
        try:
            found = self._collect(frame, notes)
        except PySparkException as e:
            if not as_recorded:
                raise
            raise TimeTravelError(
                f"--at: cannot read the tables as of {format_ms(at_ms)} (versions "
                f"{re_version}/{ma_version}): {_first_line(e)}"
            ) from None
        return shape.owner_result(
            found,
            notes,
            topic=topic,
            partition=partition,
            at_ms=at_ms,
            group=group,
            cluster=self.cluster,
        )

    # -- 6. sql ----------------------------------------------------------------------------

    def sql(self, statement: str) -> Result:
        """``statement`` over the tables registered as temporary views (module docstring,
        6); top-level timestamps come back as ISO-8601 UTC strings."""
        check_read_only(self.spark, statement)
        registered = []
        for table in t.TABLE_NAMES:
            if self.exists(table):
                self.read(table).createOrReplaceTempView(table)
                registered.append(table)
        if not registered:
            raise MissingTableError(
                f"--delta-path: no Delta tables under {self.base_path} "
                f"(expected {', '.join(t.TABLE_NAMES)})"
            )
        notes: list[str] = []
        try:
            frame = self.spark.sql(statement)
            frame = frame.select(*(_iso(f.name, f.dataType) for f in frame.schema.fields))
            rows = self._collect(frame, notes)
        except PySparkException as e:
            raise QueryError(f"sql: {_first_line(e)}") from None
        columns = tuple(frame.columns)
        missing = sorted(set(t.TABLE_NAMES) - set(registered))
        if missing:
            notes.append(f"not found under {self.base_path}: {', '.join(missing)}")
        return Result(columns, [tuple(r) for r in rows], notes)


def _iso(name: str, dtype: Any) -> Column:
    column = F.col(f"`{name.replace('`', '``')}`")
    if isinstance(dtype, TimestampType):
        # rendered in the session time zone (UTC, streaming.spark.session.DEFAULT_CONF)
        return F.date_format(column, "yyyy-MM-dd'T'HH:mm:ss.SSSXXX").alias(name)
    return column.alias(name)
