"""Table maintenance: what keeps the Delta tables small and fast to read while the job runs for
months.

One cycle (:meth:`Maintenance.cycle`) takes the tables one after the other; for each:

==============  =============================================================================
step            what it does
==============  =============================================================================
``retention``   ``DELETE`` of the whole ``date`` partitions older than the table's retention
                (:meth:`Settings.retention_days`): a metadata-only commit, no file rewritten
``compaction``  ``OPTIMIZE`` (bin-packing) of the open dates, today and yesterday (UTC), when
                they hold small files: each micro-batch appends one small file per table
``clustering``  ``OPTIMIZE ... ZORDER BY (group_id)`` of each closed date (older than
                yesterday) that is not clustered yet, one date per commit: an audit query of
                one group then reads the few files whose ``group_id`` range holds it
                (``bad_records``, without groups: bin-packing)
``vacuum``      ``VACUUM``: deletes the data files no version within the table's
                ``delta.deletedFileRetentionDuration`` references (compacted, deleted,
                and those a killed write left)
==============  =============================================================================

Z-order rather than liquid clustering: liquid clustering excludes partition columns, so the
tables would lose their ``date`` partitions (a new layout for every existing table, and a
retention delete that rewrites files instead of dropping whole partitions) and take the
``clustering`` and ``domainMetadata`` writer features; Z-order keeps the layout and the
protocol, at the price of rewriting a whole date (done once per closed date). A closed date
counts as clustered when it has no more files than its size needs
(:func:`needs_clustering`): what ``ZORDER`` leaves. A date that more rows reach later (a
backfill) is clustered again.

The tables' properties (:func:`table_properties`), set when the sink creates or opens a table
(:meth:`streaming.sinks.delta.DeltaSink.ensure_tables`): ``delta.logRetentionDuration`` and
``delta.deletedFileRetentionDuration`` from the settings, ``delta.checkpointInterval``
:data:`CHECKPOINT_INTERVAL`. No table feature that raises the reader protocol (deletion
vectors, v2 checkpoints, column mapping): ``deltalake`` (delta-rs) readers keep reading.

Beside the job's appends: every step is one Delta commit, optimistic. Compaction and
clustering commit ``dataChange=false`` rewrites of files they read; the job's appends are
blind (they read nothing), so neither conflicts with the other. A retention delete reads only
dates older than the retention, which the job does not append to; should it (a very late
record), Delta refuses the delete, and the step tries again (:data:`ATTEMPTS`). A kill at any
point leaves the table at its last commit: a rewrite's new files that no commit references
are removed by a later ``VACUUM``.

Inside ``rebalance-monitor run`` :class:`MaintenanceSchedule` runs a cycle on a thread of its
own, in the Spark scheduler pool :data:`POOL` (fair scheduling, :mod:`streaming.spark.session`):
a micro-batch's tasks take the next free core, never waiting for a whole cycle; OPTIMIZE
rewrites one bin at a time, of at most ``spark.databricks.delta.optimize.maxFileSize``
(:data:`MAINTENANCE_CONF`). ``rebalance-monitor maintain`` runs one cycle and exits.

A test can hold a cycle after a table's compaction (:mod:`streaming.sinks.pause`,
``maintenance:<table>@<cycle>``) to kill the job there.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from streaming.sinks import SinkError
from streaming.sinks.pause import Pauser
from streaming.tables import UnknownTableError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from streaming.config import JobConfig

__all__ = [
    "ATTEMPTS",
    "AUDIT_TABLES",
    "CHECKPOINT_INTERVAL",
    "CLUSTER_COLUMN",
    "MAINTENANCE_CONF",
    "POOL",
    "STEPS",
    "CycleReport",
    "DateFiles",
    "Maintenance",
    "MaintenanceError",
    "MaintenanceSchedule",
    "Settings",
    "StepReport",
    "needs_clustering",
    "table_properties",
]

#: The audit tables: full history by default (``audit_retention_days``).
AUDIT_TABLES: tuple[str, ...] = ("rebalance_events", "member_assignments", "group_metrics")
BAD_RECORDS = "bad_records"
#: What a closed date is Z-ordered by: the audit queries' filter.
CLUSTER_COLUMN = "group_id"
PARTITION_COLUMN = "date"
#: Dates the job still appends to: today and this many days before (UTC).
OPEN_DAYS = 1
#: ``delta.checkpointInterval``: a Delta checkpoint (the whole file list, Parquet) every this
#: many commits. Delta's default, 10, wrote one every 10 micro-batches of every table; with
#: the files compacted a snapshot is rebuilt from the checkpoint and at most this many small
#: JSON commits, and the log is cleaned (``delta.logRetentionDuration``) only at a
#: checkpoint.
CHECKPOINT_INTERVAL = 100
#: OPTIMIZE's file sizes and parallelism in the job's session (its other work never reads
#: them): files of up to 256 MiB, a file under 8 MiB is small (bin-packing rewrites it; a
#: compacted file above it is left alone), one bin at a time (a micro-batch shares the cores
#: with at most one rewrite); VACUUM logs its counts. A cycle rewrites at most 8 MiB of a
#: date's earlier rows: the files it replaces wait on disk for
#: ``delta.deletedFileRetentionDuration``, so a bigger threshold multiplies the disk a day's
#: rows take by the cycles within that retention.
MAINTENANCE_CONF: dict[str, str] = {
    "spark.databricks.delta.optimize.maxFileSize": str(256 * 1024 * 1024),
    "spark.databricks.delta.optimize.minFileSize": str(8 * 1024 * 1024),
    "spark.databricks.delta.optimize.maxThreads": "1",
    # VACUUM records what it deleted in the table's history (its START and END commits)
    "spark.databricks.delta.vacuum.logging.enabled": "true",
    # VACUUM lists a table's folders in this many Spark tasks (Spark's default, 10,000, is
    # made for lakes of millions of folders: here a table has a folder per date)
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "8",
}
MAX_FILE_BYTES = int(MAINTENANCE_CONF["spark.databricks.delta.optimize.maxFileSize"])
MIN_FILE_BYTES = int(MAINTENANCE_CONF["spark.databricks.delta.optimize.minFileSize"])
#: The Spark scheduler pool of the maintenance jobs (fair scheduling).
POOL = "rebalance-monitor-maintenance"
#: The Spark job group of a running cycle (cancelled when the job stops).
JOB_GROUP = "rebalance-monitor-maintenance"
#: A step Delta refuses for a concurrent commit is tried this many times.
ATTEMPTS = 3
STEPS = ("retention", "compaction", "clustering", "vacuum")
#: The first cycle of a running job starts this long after the job (or one interval later,
#: when that is sooner): a restart loop still maintains its tables.
FIRST_CYCLE_AFTER_S = 300.0

Progress = Callable[[str], None]


class MaintenanceError(SinkError):
    """A maintenance step failed; the message names the table and the step."""


@dataclass(frozen=True)
class Settings:
    """What maintenance keeps (``streaming.config.JobConfig`` documents each setting)."""

    audit_retention_days: int = 400
    lag_retention_days: int = 30
    bad_records_retention_days: int = 90
    delta_log_retention_hours: float = 48.0
    deleted_file_retention_hours: float = 24.0

    @classmethod
    def of(cls, config: JobConfig) -> Settings:
        return cls(
            audit_retention_days=config.audit_retention_days,
            lag_retention_days=config.lag_retention_days,
            bad_records_retention_days=config.bad_records_retention_days,
            delta_log_retention_hours=config.delta_log_retention_hours,
            deleted_file_retention_hours=config.deleted_file_retention_hours,
        )

    def retention_days(self, table: str) -> int:
        """The days of ``table`` kept (0: all): the audit tables', ``bad_records``', or the
        commit and lag tables' (every other table)."""
        if table in AUDIT_TABLES:
            return self.audit_retention_days
        if table == BAD_RECORDS:
            return self.bad_records_retention_days
        return self.lag_retention_days


def _minutes(hours: float) -> str:
    return f"interval {max(1, round(hours * 60))} minutes"


def table_properties(settings: Settings) -> dict[str, str]:
    """The Delta table properties every table is given (module docstring)."""
    return {
        "delta.logRetentionDuration": _minutes(settings.delta_log_retention_hours),
        "delta.deletedFileRetentionDuration": _minutes(settings.deleted_file_retention_hours),
        "delta.checkpointInterval": str(CHECKPOINT_INTERVAL),
    }


@dataclass(frozen=True)
class DateFiles:
    """A ``date`` partition's live files: how many, their bytes, how many are small."""

    date: dt.date
    files: int
    bytes: int
    small: int


def needs_clustering(d: DateFiles) -> bool:
    """Whether a closed date is not clustered yet: more files than Z-order leaves for its
    size (one per :data:`MAX_FILE_BYTES`, one more for the remainder)."""
    return d.files > math.ceil(d.bytes / MAX_FILE_BYTES) + 1


@dataclass
class StepReport:
    """One step of one table: files removed and added (or deleted by VACUUM), its time."""

    table: str
    step: str
    seconds: float
    removed: int = 0
    added: int = 0
    dates: int = 0
    error: str | None = None

    def line(self) -> str:
        took = f"in {self.seconds:.1f} s"
        if self.error is not None:
            return (
                f"[maintenance] {self.table}: {self.step} FAILED after {self.seconds:.1f} s: "
                + (self.error)
            )
        if self.step == "retention":
            what = f"deleted {self.dates} dates ({self.removed} files)"
        elif self.step == "vacuum":
            what = f"vacuumed {self.removed} unreferenced files"
        elif self.step == "clustering":
            what = (
                f"clustered {self.dates} dates by {CLUSTER_COLUMN}: "
                f"{self.removed} -> {self.added} files"
            )
        else:
            what = f"compacted {self.dates} open dates: {self.removed} -> {self.added} files"
        return f"[maintenance] {self.table}: {what} {took}"


@dataclass
class CycleReport:
    """What one cycle did, per table and step."""

    number: int
    steps: list[StepReport] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> list[StepReport]:
        return [s for s in self.steps if s.error is not None]


def _quoted(path: str) -> str:
    return "delta.`" + path.replace("`", "``") + "`"


def _is_conflict(error: BaseException) -> bool:
    """A commit Delta refused for a concurrent one (worth another attempt)."""
    text = f"{type(error).__name__} {error}"
    return "DELTA_CONCURRENT" in text or "Concurrent" in text


class Maintenance:
    """Runs maintenance cycles on the tables under ``base_path`` (module docstring)."""

    def __init__(
        self,
        spark: SparkSession,
        base_path: str,
        settings: Settings,
        *,
        tables: Sequence[str] | None = None,
        progress: Progress = print,
        pauser: Pauser | None = None,
        today: Callable[[], dt.date] | None = None,
    ) -> None:
        from streaming.tables import TABLE_NAMES

        chosen = tuple(TABLE_NAMES if tables is None else tables)
        for table in chosen:
            if table not in TABLE_NAMES:
                raise UnknownTableError(table)
        self.spark = spark
        self.base_path = base_path.rstrip("/")
        self.settings = settings
        self.tables = chosen
        self.progress = progress
        self.pauser = pauser or Pauser.from_env()
        self.today = today or (lambda: dt.datetime.now(dt.UTC).date())
        self.cycles = 0

    def path(self, table: str) -> str:
        return f"{self.base_path}/{table}"

    # -- a cycle --------------------------------------------------------------------------

    def cycle(self, stopping: threading.Event | None = None) -> CycleReport:
        """One cycle over every table; a failed step is reported (a line, the report) and
        the table's later steps skipped, the other tables still maintained."""
        from delta.tables import DeltaTable

        number = self.cycles
        self.cycles += 1
        report = CycleReport(number)
        began = time.monotonic()
        today = self.today()
        self.progress(f"[maintenance] cycle {number}: {len(self.tables)} tables, today {today}")
        for table in self.tables:
            if stopping is not None and stopping.is_set():
                break
            if not DeltaTable.isDeltaTable(self.spark, self.path(table)):
                continue
            for step in STEPS:
                if stopping is not None and stopping.is_set():
                    break
                done = self._step(table, step, today)
                report.steps.append(done)
                if done.error is not None or done.removed or done.added or done.dates:
                    self.progress(done.line())
                if done.error is not None:
                    break
                if step == "compaction":
                    self.pauser.reach("maintenance", number, table)
        report.seconds = time.monotonic() - began
        failed = len(report.failed)
        self.progress(
            f"[maintenance] cycle {number} done in {report.seconds:.1f} s"
            + (f", {failed} steps FAILED" if failed else "")
        )
        return report

    def _step(self, table: str, step: str, today: dt.date) -> StepReport:
        began = time.monotonic()
        run = {
            "retention": self._retention,
            "compaction": self._compaction,
            "clustering": self._clustering,
            "vacuum": self._vacuum,
        }[step]
        for attempt in range(1, ATTEMPTS + 1):
            try:
                report = run(table, today)
                report.seconds = time.monotonic() - began
                return report
            except Exception as e:
                if attempt < ATTEMPTS and _is_conflict(e):
                    continue
                first = next((x.strip() for x in str(e).splitlines() if x.strip()), "")
                return StepReport(
                    table, step, time.monotonic() - began, error=first or type(e).__name__
                )
        raise AssertionError("unreachable")  # pragma: no cover

    # -- the table's files ------------------------------------------------------------------

    def dates(self, table: str) -> list[DateFiles]:
        """The table's live files per ``date`` (from its Delta log, no data read)."""
        from pyspark.sql import DataFrame
        from pyspark.sql import functions as F

        jvm = self.spark.sparkContext._jvm
        assert jvm is not None
        none = jvm.scala.Option.empty()
        log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
            self.spark._jsparkSession, self.path(table)
        )
        files = DataFrame(log.update(False, none, none).allFiles().toDF(), self.spark)
        rows = (
            files.groupBy(F.col("partitionValues")[PARTITION_COLUMN].alias("date"))
            .agg(
                F.count("*").alias("files"),
                F.sum("size").alias("bytes"),
                F.sum(F.when(F.col("size") < MIN_FILE_BYTES, 1).otherwise(0)).alias("small"),
            )
            .collect()
        )
        return sorted(
            (
                DateFiles(dt.date.fromisoformat(r["date"]), r["files"], r["bytes"], r["small"])
                for r in rows
                if r["date"] is not None
            ),
            key=lambda d: d.date,
        )

    def _optimize(self, table: str, where: str, zorder: bool) -> tuple[int, int]:
        """``OPTIMIZE`` the table's rows ``where``; (files removed, files added)."""
        sql = f"OPTIMIZE {_quoted(self.path(table))} WHERE {where}"
        if zorder:
            sql += f" ZORDER BY ({CLUSTER_COLUMN})"
        row = self.spark.sql(sql).collect()[0]
        metrics = row["metrics"]
        return int(metrics["numFilesRemoved"]), int(metrics["numFilesAdded"])

    # -- the steps --------------------------------------------------------------------------

    def _retention(self, table: str, today: dt.date) -> StepReport:
        days = self.settings.retention_days(table)
        report = StepReport(table, "retention", 0.0)
        if days == 0:
            return report
        cutoff = today - dt.timedelta(days=days)
        old = [d for d in self.dates(table) if d.date < cutoff]
        if old:
            self.spark.sql(
                f"DELETE FROM {_quoted(self.path(table))} "
                f"WHERE {PARTITION_COLUMN} < DATE'{cutoff.isoformat()}'"
            ).collect()
            report.dates = len(old)
            report.removed = sum(d.files for d in old)
        return report

    def _compaction(self, table: str, today: dt.date) -> StepReport:
        first_open = today - dt.timedelta(days=OPEN_DAYS)
        report = StepReport(table, "compaction", 0.0)
        dates = [d for d in self.dates(table) if d.date >= first_open and d.small > 1]
        if dates:
            report.removed, report.added = self._optimize(
                table, f"{PARTITION_COLUMN} >= DATE'{first_open.isoformat()}'", zorder=False
            )
            report.dates = len(dates)
        return report

    def _clustering(self, table: str, today: dt.date) -> StepReport:
        first_open = today - dt.timedelta(days=OPEN_DAYS)
        report = StepReport(table, "clustering", 0.0)
        zorder = table != BAD_RECORDS
        for d in self.dates(table):
            if d.date >= first_open or not needs_clustering(d):
                continue
            removed, added = self._optimize(
                table, f"{PARTITION_COLUMN} = DATE'{d.date.isoformat()}'", zorder=zorder
            )
            report.removed += removed
            report.added += added
            report.dates += 1
        return report

    def _vacuum(self, table: str, today: dt.date) -> StepReport:
        report = StepReport(table, "vacuum", 0.0)
        where = _quoted(self.path(table))
        self.spark.sql(f"VACUUM {where}").collect()
        # its count, from the VACUUM END commit it logged (MAINTENANCE_CONF); the job may
        # have appended since
        for row in self.spark.sql(f"DESCRIBE HISTORY {where} LIMIT 20").collect():
            if row["operation"] == "VACUUM END":
                metrics = row["operationMetrics"] or {}
                report.removed = int(metrics.get("numDeletedFiles", 0))
                break
        return report


def apply_conf(spark: SparkSession, user: Mapping[str, str] | None = None) -> None:
    """:data:`MAINTENANCE_CONF` on ``spark``, where neither ``user`` (the job's
    ``spark_conf``) nor the session has a value."""
    for key, value in MAINTENANCE_CONF.items():
        if user is not None and key in user:
            continue
        if spark.conf.get(key, None) is None:
            spark.conf.set(key, value)


class MaintenanceSchedule:
    """Runs :meth:`Maintenance.cycle` every ``interval_s`` on a thread of its own (the first
    after :data:`FIRST_CYCLE_AFTER_S`, or one interval when shorter), its Spark jobs in the
    pool :data:`POOL`; :meth:`stop` cancels a running cycle's jobs and waits for the thread.
    A failed cycle is reported (``warn``) and the next runs on time."""

    def __init__(
        self,
        maintenance: Maintenance,
        interval_s: float,
        *,
        warn: Progress | None = None,
        first_after_s: float | None = None,
        on_cycle: Callable[[CycleReport], None] | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be > 0")
        self.maintenance = maintenance
        self.interval_s = interval_s
        self.first_after_s = (
            min(interval_s, FIRST_CYCLE_AFTER_S) if first_after_s is None else first_after_s
        )
        self.warn = warn or maintenance.progress
        self.on_cycle = on_cycle
        self.reports: list[CycleReport] = []
        self.running = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name="rebalance-monitor-maintenance", daemon=True
        )

    def start(self) -> MaintenanceSchedule:
        self._thread.start()
        return self

    def _loop(self) -> None:
        sc = self.maintenance.spark.sparkContext
        sc.setLocalProperty("spark.scheduler.pool", POOL)
        sc.setJobGroup(JOB_GROUP, "rebalance-monitor table maintenance", interruptOnCancel=True)
        wait = self.first_after_s
        while not self._stopping.wait(wait):
            began = time.monotonic()
            self.running.set()
            try:
                report = self.maintenance.cycle(self._stopping)
            except Exception as e:
                if not self._stopping.is_set():
                    self.warn(f"[maintenance] cycle failed: {_first_line(e)} (the job goes on)")
            else:
                self.reports.append(report)
                if report.failed:
                    self.warn(
                        f"[maintenance] cycle {report.number}: {len(report.failed)} steps failed "
                        "(the job goes on; the next cycle tries again)"
                    )
                if self.on_cycle is not None:
                    self.on_cycle(report)
            finally:
                self.running.clear()
            wait = max(0.0, self.interval_s - (time.monotonic() - began))

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop: no new step starts, the running one's Spark jobs are cancelled (its commit
        is not made, or is made whole: Delta's)."""
        self._stopping.set()
        if self.running.is_set():
            with contextlib.suppress(Exception):  # the JVM is going away
                self.maintenance.spark.sparkContext.cancelJobGroup(JOB_GROUP)
        self._thread.join(timeout_s)


def _first_line(error: BaseException) -> str:
    for line in str(error).splitlines():
        if line.strip():
            return line.strip()
    return type(error).__name__


def run_cycle(
    spark: SparkSession,
    base_path: str,
    settings: Settings,
    tables: Iterable[str] | None = None,
    progress: Progress = print,
) -> CycleReport:
    """One cycle now (``rebalance-monitor maintain``): the tables' properties first, then
    :meth:`Maintenance.cycle`."""
    from streaming.sinks.delta import set_properties

    apply_conf(spark)
    maintenance = Maintenance(
        spark,
        base_path,
        settings,
        tables=None if tables is None else list(tables),
        progress=progress,
    )
    for table in maintenance.tables:
        set_properties(spark, maintenance.path(table), table, settings)
    return maintenance.cycle()
