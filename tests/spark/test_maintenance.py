"""Table maintenance against real Spark + Delta: compaction, clustering, retention, VACUUM,
the tables' properties, maintenance beside the job's appends, and ``rebalance-monitor
maintain`` end to end.

The tables are the job's (:class:`~streaming.sinks.delta.DeltaSink` creates them), the rows
``offset_commits`` rows appended as the job appends them (``txnAppId``/``txnVersion``, one
small file per table per micro-batch), on dates chosen around a fixed "today".
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from streaming import tables as t
from streaming.sinks.delta import DeltaSink
from streaming.sinks.maintenance import (
    CHECKPOINT_INTERVAL,
    Maintenance,
    MaintenanceSchedule,
    Settings,
    apply_conf,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark]

#: Today (UTC): ``rebalance-monitor maintain`` goes by the clock.
TODAY = dt.datetime.now(dt.UTC).date()
GROUPS, PARTITIONS = 40, 5


def commits(spark: SparkSession, days: list[dt.date], batch: int) -> DataFrame:
    """One micro-batch's ``offset_commits`` rows on each of ``days``: a commit per partition
    of each group, the batch's offsets (one file per date, as a micro-batch writes)."""
    from functools import reduce

    return reduce(lambda a, b: a.unionByName(b), (_commits(spark, d, batch) for d in days))


def _commits(spark: SparkSession, day: dt.date, batch: int) -> DataFrame:
    from pyspark.sql import functions as F

    midnight = int(dt.datetime.combine(day, dt.time(), dt.UTC).timestamp() * 1000)
    ts = F.lit(midnight) + F.lit(batch * 1000) + F.col("id")
    rows = spark.range(GROUPS * PARTITIONS).select(
        F.concat(F.lit(f"commit/{day}/{batch}/"), F.col("id").cast("string")).alias("event_id"),
        F.lit("local").alias("cluster"),
        F.format_string("group-%03d", (F.col("id") / PARTITIONS).cast("int")).alias("group_id"),
        ts.alias("event_ts_ms"),
        F.timestamp_millis(ts).alias("event_time"),
        F.lit("orders").alias("topic"),
        (F.col("id") % PARTITIONS).cast("int").alias("partition"),
        (F.lit(batch) * 100 + F.col("id")).alias("offset"),
        F.lit(None).cast("int").alias("leader_epoch"),
        F.lit("").alias("metadata"),
        ts.alias("commit_ts_ms"),
        F.lit(None).cast("bigint").alias("expire_ts_ms"),
        F.lit(False).alias("deleted"),
        F.lit(3).alias("source_partition"),
        (F.lit(batch) * 1000 + F.col("id")).alias("source_offset"),
        F.lit("sample").alias("reason"),
        F.lit(day).alias("date"),
    )
    return spark.createDataFrame(rows.rdd, t.schema(t.OFFSET_COMMITS)).coalesce(1)


def append(sink: DeltaSink, frame: DataFrame, batch: int) -> None:
    sink.write_batch(batch, {t.OFFSET_COMMITS: frame})


def live_files(spark: SparkSession, path: str) -> dict[str, int]:
    """date -> live data files (the Delta log's)."""
    from pyspark.sql import functions as F

    detail = spark.read.format("delta").load(path).select(F.input_file_name().alias("f"), "date")
    return {
        str(r["date"]): int(r["n"])
        for r in detail.groupBy("date").agg(F.countDistinct("f").alias("n")).collect()
    }


def rows_of(spark: SparkSession, path: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def parquet_on_disk(table: Path) -> set[Path]:
    return {p for p in table.rglob("*.parquet") if "_delta_log" not in p.parts}


#: Days before today with rows: today and yesterday are open; 3 and 30 days ago closed and
#: kept; 31 and 45 days ago past the commit tables' 30 days.
DAYS_BACK = (45, 31, 30, 3, 1, 0)
#: Micro-batches appended, each with rows on every one of those days: files per date.
BATCHES = 3


@pytest.fixture(scope="module")
def built(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The job's tables, once; ``offset_commits`` with :data:`BATCHES` micro-batches."""
    base = tmp_path_factory.mktemp("maintenance") / "delta"
    sink = DeltaSink(spark, str(base), "rebalance-monitor:test")
    sink.ensure_tables()
    days = [TODAY - dt.timedelta(days=back) for back in DAYS_BACK]
    for batch in range(BATCHES):
        append(sink, commits(spark, days, batch), batch)
    return base


@pytest.fixture
def filled(spark: SparkSession, built: Path, tmp_path: Path) -> tuple[DeltaSink, Path]:
    """A copy of :func:`built`'s tables (Delta's paths are relative) and a sink on them."""
    import shutil

    base = tmp_path / "delta"
    shutil.copytree(built, base)
    return DeltaSink(spark, str(base), "rebalance-monitor:test"), base


def test_a_cycle_compacts_clusters_and_expires_and_keeps_every_other_row(
    spark: SparkSession, filled: tuple[DeltaSink, Path]
) -> None:
    sink, base = filled
    path = sink.path(t.OFFSET_COMMITS)
    before_rows = rows_of(spark, path)
    before = live_files(spark, path)
    assert all(n == BATCHES for n in before.values()), before
    lines: list[str] = []
    apply_conf(spark)
    report = Maintenance(
        spark, str(base), Settings(), tables=[t.OFFSET_COMMITS], progress=lines.append,
        today=lambda: TODAY,
    ).cycle()  # fmt: skip
    assert not report.failed, lines
    after = live_files(spark, path)
    days = {back: str(TODAY - dt.timedelta(days=back)) for back in DAYS_BACK}
    # retention: the dates before today - 30 days are gone, the 30th day is kept
    assert days[45] not in after and days[31] not in after
    # compaction of the open dates, Z-order of the closed ones: one file each
    assert {d: after[d] for d in (days[30], days[3], days[1], days[0])} == dict.fromkeys(
        (days[30], days[3], days[1], days[0]), 1
    )
    expired = {str(TODAY - dt.timedelta(days=b)) for b in (45, 31)}
    assert rows_of(spark, path) == [r for r in before_rows if str(r[-1]) not in expired]
    by_step = {s.step: s for s in report.steps}
    assert (by_step["retention"].dates, by_step["retention"].removed) == (2, 6)
    assert (by_step["compaction"].removed, by_step["compaction"].added) == (6, 2)
    assert (by_step["clustering"].dates, by_step["clustering"].removed) == (2, 6)
    assert any("clustered 2 dates by group_id: 6 -> 2 files" in line for line in lines), lines
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    zorders = [
        json.loads(h["operationParameters"]["zOrderBy"])
        for h in history
        if h["operation"] == "OPTIMIZE" and h["operationParameters"].get("zOrderBy") != "[]"
    ]
    assert zorders == [["group_id"], ["group_id"]]

    # a second cycle finds nothing to do: clustered dates stay as they are
    again = Maintenance(
        spark, str(base), Settings(), tables=[t.OFFSET_COMMITS], progress=lines.append,
        today=lambda: TODAY,
    ).cycle()  # fmt: skip
    assert [(s.step, s.removed, s.added) for s in again.steps if s.removed or s.added] == []
    assert live_files(spark, path) == after


def test_z_order_lets_a_query_of_one_group_skip_files(
    spark: SparkSession, filled: tuple[DeltaSink, Path]
) -> None:
    """A closed date's files, Z-ordered by group_id into several: a query of one group reads
    fewer files than the date holds (Delta's data skipping on group_id)."""
    from pyspark.sql import functions as F

    sink, _base = filled
    path = sink.path(t.OFFSET_COMMITS)
    closed = TODAY - dt.timedelta(days=3)
    # files of 100 rows, as a big table's files of many rows: the date's rows in 6 files
    spark.conf.set("spark.sql.files.maxRecordsPerFile", "100")
    try:
        spark.sql(
            f"OPTIMIZE delta.`{path}` WHERE date = DATE'{closed}' ZORDER BY (group_id)"
        ).collect()
    finally:
        spark.conf.unset("spark.sql.files.maxRecordsPerFile")
    table = spark.read.format("delta").load(path).where(F.col("date") == F.lit(closed))
    one = table.where(F.col("group_id") == "group-007")
    assert len(table.inputFiles()) >= 3
    assert len(one.inputFiles()) < len(table.inputFiles())
    assert one.count() == BATCHES * PARTITIONS


def test_vacuum_removes_unreferenced_files_and_keeps_those_within_retention(
    spark: SparkSession, filled: tuple[DeltaSink, Path]
) -> None:
    _sink, base = filled
    table = base / t.OFFSET_COMMITS
    # what a write killed before its commit leaves: a data file no version references
    orphan = table / f"date={TODAY}" / "part-00000-killed-write.c000.snappy.parquet"
    orphan.write_bytes(next(iter(parquet_on_disk(table))).read_bytes())
    two_days_ago = time.time() - 2 * 86_400
    os.utime(orphan, (two_days_ago, two_days_ago))
    fresh_orphan = orphan.with_name("part-00001-just-written.c000.snappy.parquet")
    fresh_orphan.write_bytes(orphan.read_bytes())
    on_disk = parquet_on_disk(table)
    apply_conf(spark)
    report = Maintenance(
        spark, str(base), Settings(), tables=[t.OFFSET_COMMITS], progress=print,
        today=lambda: TODAY,
    ).cycle()  # fmt: skip
    vacuum = next(s for s in report.steps if s.step == "vacuum")
    left = parquet_on_disk(table)
    assert not orphan.exists()
    assert vacuum.removed == 1
    # within the 24 hours: the file a write may be committing now, and the files the
    # compaction and the retention delete just removed (readers of older versions)
    assert fresh_orphan.exists()
    assert on_disk - {orphan} <= left


def test_the_tables_get_the_retention_properties_and_keep_reader_protocol_1(
    spark: SparkSession, tmp_path: Path
) -> None:
    from delta.tables import DeltaTable

    base = str(tmp_path / "delta")
    DeltaSink(spark, base, "rebalance-monitor:test").ensure_tables()
    for table in t.TABLE_NAMES:
        detail = DeltaTable.forPath(spark, f"{base}/{table}").detail().collect()[0]
        assert detail["properties"]["delta.logRetentionDuration"] == "interval 2880 minutes"
        assert detail["properties"]["delta.deletedFileRetentionDuration"] == (
            "interval 1440 minutes"
        )
        assert detail["properties"]["delta.checkpointInterval"] == str(CHECKPOINT_INTERVAL)
        assert detail["minReaderVersion"] == 1, table
    # other settings on the next start: set once, on the existing tables
    settings = Settings(delta_log_retention_hours=24 * 7, deleted_file_retention_hours=36)
    DeltaSink(spark, base, "rebalance-monitor:test", settings).ensure_tables()
    detail = DeltaTable.forPath(spark, f"{base}/{t.OFFSET_COMMITS}").detail().collect()[0]
    assert detail["properties"]["delta.logRetentionDuration"] == "interval 10080 minutes"
    assert detail["properties"]["delta.deletedFileRetentionDuration"] == "interval 2160 minutes"
    assert detail["properties"]["delta.dataSkippingStatsColumns"] == ",".join(
        t.STATS_COLUMNS[t.OFFSET_COMMITS]
    )


def test_maintenance_beside_the_jobs_appends_loses_and_duplicates_nothing(
    spark: SparkSession, filled: tuple[DeltaSink, Path]
) -> None:
    """Appends as the job makes them (txnAppId/txnVersion) on a thread, cycles on another:
    every append commits, and the table holds exactly the appended rows of the dates kept."""
    from pyspark.sql import functions as F

    sink, base = filled
    path = sink.path(t.OFFSET_COMMITS)
    first, appended, errors = 100, 6, []

    def job() -> None:
        try:
            for batch in range(first, first + appended):
                append(sink, commits(spark, [TODAY], batch), batch)
        except Exception as e:  # pragma: no cover - the assertion below says what
            errors.append(e)

    writer = threading.Thread(target=job)
    apply_conf(spark)
    maintenance = Maintenance(
        spark, str(base), Settings(), tables=[t.OFFSET_COMMITS], progress=print,
        today=lambda: TODAY,
    )  # fmt: skip
    writer.start()
    reports = []
    while writer.is_alive() or not reports:
        reports.append(maintenance.cycle())
    writer.join()
    assert not errors, errors
    assert all(not r.failed for r in reports), [s.line() for r in reports for s in r.failed]
    table = spark.read.format("delta").load(path)
    today = table.where(F.col("date") == F.lit(TODAY))
    assert today.count() == (BATCHES + appended) * GROUPS * PARTITIONS
    assert today.select("event_id").distinct().count() == today.count()
    assert table.where(F.col("date") < F.lit(TODAY - dt.timedelta(days=30))).count() == 0
    versions = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").where("operation = 'WRITE'")
    assert versions.count() == BATCHES + appended


def test_the_schedule_runs_cycles_on_its_thread_and_stops(
    spark: SparkSession, filled: tuple[DeltaSink, Path]
) -> None:
    _sink, base = filled
    lines: list[str] = []
    maintenance = Maintenance(
        spark, str(base), Settings(), tables=[t.OFFSET_COMMITS], progress=lines.append,
        today=lambda: TODAY,
    )  # fmt: skip
    schedule = MaintenanceSchedule(maintenance, 0.5, first_after_s=0.1).start()
    deadline = time.monotonic() + 300
    while len(schedule.reports) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    schedule.stop()
    assert len(schedule.reports) >= 2, lines
    assert not schedule._thread.is_alive()
    assert sum(s.removed for s in schedule.reports[0].steps) > 0
    assert any(line.startswith("[maintenance] cycle 1 done") for line in lines), lines


@pytest.mark.slow
def test_maintain_command_end_to_end(spark: SparkSession, filled: tuple[DeltaSink, Path]) -> None:
    """``rebalance-monitor maintain`` in its own process (its own Spark): exit 0, a line per
    step that did something, the tables maintained; a bad --table exits 2 before Spark."""
    sink, base = filled
    path = sink.path(t.OFFSET_COMMITS)
    rows = rows_of(spark, path)
    command = [str(Path(sys.executable).with_name("rebalance-monitor")), "maintain"]
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "REBALANCE_MONITOR_LAG_RETENTION_DAYS": "0",
    }
    done = subprocess.run(
        [*command, "--delta-path", str(base), "--master", "local[1]",
         "--log-file", str(base.parent / "maintain.log")],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "[maintenance] offset_commits: compacted 2 open dates: 6 -> 2 files" in out, out
    assert "[maintenance] offset_commits: clustered 4 dates by group_id: 12 -> 4 files" in out
    assert f"rebalance-monitor maintain: {len(t.TABLE_NAMES)} tables in" in out
    assert rows_of(spark, path) == rows  # lag_retention_days 0: every day kept
    assert set(live_files(spark, path).values()) == {1}

    bad = subprocess.run(
        [*command, "--delta-path", str(base), "--table", "nope"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2
    assert "--table: nope is not a table of the job" in bad.stderr
