"""A micro-batch's rows per table: the stateful step's rows (tracker events, bad records,
commit runs) as each Delta table's rows, in the JVM.

The rows' types are :mod:`streaming.tables`'; here only the selection and the columns the
sink derives (``event_time``, ``date``, a bad record's ``timestamp`` and ``batch_id``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streaming.tables import (
    BAD_RECORD_KIND,
    BAD_RECORDS,
    COMMIT_KIND,
    COMMIT_RUNS_COLUMN,
    COMMIT_RUNS_KIND,
    COMMIT_STRUCT_COLUMN,
    DERIVED_COLUMNS,
    KIND_TO_TABLE,
    OFFSET_COMMITS,
    PARTITION_COLUMN,
    PARTITION_LAG,
    RUN_LIST_FIELDS,
    SCHEMAS,
    TRACKER_TABLES,
    UnknownTableError,
    schema,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["bad_records_frame", "commit_frame", "table_frame"]


def commit_frame(events: DataFrame, *, history: str = "kept") -> DataFrame:
    """The ``offset_commits`` rows of a micro-batch, ``event_time`` and ``date`` derived from
    ``event_ts_ms``: the tracker's kept commits with their reason (``history="kept"``:
    :mod:`streaming.tracking.keep`, and the offset tombstones), the commit lane's typed rows,
    every one (``"every"``), or the last record (commit or tombstone) of each partition of
    each group (``"latest"``: of the stateful step's commit runs, :data:`COMMIT_RUNS_KIND`,
    and offset tombstones)."""
    from pyspark.sql import functions as F

    commits = events.where(F.col("kind") == COMMIT_KIND)
    if history == "latest":
        if COMMIT_RUNS_COLUMN in events.columns:  # the stateful step's (not the lane's)
            commits = commits.select(COMMIT_STRUCT_COLUMN).unionByName(_run_commits(events))
        # a group's records are in one __consumer_offsets partition: offset order is log
        # order; a hash aggregate (partial on each task) rather than a sorted window
        c = F.col(COMMIT_STRUCT_COLUMN)
        commits = commits.groupBy(c["group_id"], c["topic"], c["partition"]).agg(
            F.max_by(c, c["source_offset"]).alias(COMMIT_STRUCT_COLUMN)
        )
    elif history not in ("every", "kept"):
        raise ValueError(f"history: expected 'kept', 'latest' or 'every', got {history!r}")
    rows = commits.select(f"{COMMIT_STRUCT_COLUMN}.*")
    rows = rows.withColumn("event_time", F.timestamp_millis("event_ts_ms"))
    return rows.withColumn(PARTITION_COLUMN, F.to_date("event_time")).select(
        *schema(OFFSET_COMMITS).fieldNames()
    )


def _run_commits(events: DataFrame) -> DataFrame:
    """The ``offset_commit`` struct of each list entry of the :data:`COMMIT_RUNS_KIND` rows
    of ``events``: its ``event_id`` as the tracker makes it (``commit/<cluster>/<group>/
    <source partition>%3A<source offset>``, each part percent-encoded: ``rm_quote``,
    :mod:`streaming.spark.commits`), a negative leader epoch or expire time as null."""
    from pyspark.sql import functions as F

    from streaming.spark.commits import QUOTE_UDF

    runs = F.col(COMMIT_RUNS_COLUMN)
    # the event id's part before the source offset, once per row of runs (not per run)
    prefix = F.concat(
        F.lit("commit/"),
        F.expr(f"{QUOTE_UDF}(cluster)"),
        F.lit("/"),
        F.expr(f"{QUOTE_UDF}(group_id)"),
        F.lit("/"),
        runs["source_partition"].cast("string"),
        F.lit("%3A"),  # the tracker's part "<partition>:<offset>", percent-encoded
    )
    entries = events.where(F.col("kind") == COMMIT_RUNS_KIND).select(
        "cluster",
        "group_id",
        runs["source_partition"].alias("source_partition"),
        prefix.alias("event_id_prefix"),
        F.inline(F.arrays_zip(*(runs[name].alias(name) for name in RUN_LIST_FIELDS))),
    )
    column = {name: F.col(name) for name in entries.columns}
    column["event_id"] = F.concat(F.col("event_id_prefix"), F.col("source_offset").cast("string"))
    for name in ("leader_epoch", "expire_ts_ms"):
        column[name] = F.when(F.col(name) >= 0, F.col(name))
    column["deleted"] = F.lit(False)
    column["reason"] = F.lit(None).cast("string")
    fields = [f.name for f in SCHEMAS[OFFSET_COMMITS].fields if f.name not in DERIVED_COLUMNS]
    return entries.select(
        F.struct(*(column[name].alias(name) for name in fields)).alias(COMMIT_STRUCT_COLUMN)
    )


def kept() -> Column:
    """True for a row of the stateful step its table keeps: all but the ``partition_lag``
    measurements inside their interval (``stored`` false; the exporter takes every one)."""
    from pyspark.sql import functions as F

    return F.coalesce(F.col(f"{PARTITION_LAG}.stored"), F.lit(True))


def table_frame(events: DataFrame, table: str) -> DataFrame:
    """The rows of ``table`` (one of :data:`TRACKER_TABLES`) from the stateful step's rows:
    the table's struct column (:func:`body_schema`) of the rows of its kinds, ``event_time``
    and ``date`` derived from ``event_ts_ms``."""
    from pyspark.sql import functions as F

    if table not in TRACKER_TABLES:
        raise UnknownTableError(table)
    kinds = [kind for kind, name in KIND_TO_TABLE.items() if name == table]
    rows = events.where(F.col("kind").isin(kinds))
    if table == PARTITION_LAG:
        rows = rows.where(kept())
    rows = rows.select(f"{table}.*").withColumn("event_time", F.timestamp_millis("event_ts_ms"))
    return rows.withColumn(PARTITION_COLUMN, F.to_date("event_time")).select(
        *schema(table).fieldNames()
    )


def bad_records_frame(events: DataFrame, batch_id: int) -> DataFrame:
    """The ``bad_records`` rows of a micro-batch: the ``bad_records`` struct of the
    ``bad_record`` rows, with the record time, the batch id and the date derived."""
    from pyspark.sql import functions as F

    rows = events.where(F.col("kind") == BAD_RECORD_KIND).select(f"{BAD_RECORDS}.*")
    rows = rows.withColumn("timestamp", F.timestamp_millis("timestamp_ms"))
    rows = rows.withColumn("batch_id", F.lit(batch_id).cast("bigint"))
    return rows.withColumn(PARTITION_COLUMN, F.to_date("timestamp")).select(
        *schema(BAD_RECORDS).fieldNames()
    )
