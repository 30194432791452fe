"""The commit lane: offset commits decoded in the JVM and appended columnar, no Python.

A real ``__consumer_offsets`` is almost all offset commits (record types 0 and 1): every consumer
commits every partition it owns every few seconds. They take this lane::

    envelope rows ──► with_commit: ``commit`` = rm_offset_commit(key, value)   (JVM, jvm/udf)
        │                         (null: not a well-formed commit or offset tombstone)
        ├──► commit_rows (``offset_commits_history=every``): the ``offset_commits``
        │    table's columns as one typed struct (``offset_commit``), event ids built as
        │    the tracker builds them (``rm_quote`` = Python's ``urllib.parse.quote(safe="")``)
        └──► the group lane (streaming.spark.decode): commits reach the per-group tracker
             only as per-run aggregates (CommitRun), everything else as today; with
             ``latest`` (the default) the stateful step passes each group's runs on as
             lists (``offset_commit_runs``) and each tombstone as an ``offset_commit`` row;
             the sink makes rows of the runs' last commits in the JVM, equal to this lane's
             last rows (:func:`streaming.sinks.frames.commit_frame`), and the source is
             read once

``rm_offset_commit`` (``jvm/udf/.../OffsetCommitUdf.java``, built by ``make setup``) accepts
exactly the commits the Python codec accepts and returns null for everything else: other
record types, unknown value versions, malformed records. Those go the group lane's way, where
the Python codec decodes them or quarantines them with the field and byte offset that failed
(``bad_records``). ``tests/spark/test_commit_lane.py`` checks the two decoders agree on the
codec corpus and on mutations of it.

The UDFs are registered per session (:func:`register`); their jar is in
:func:`streaming.spark.session.spark_jars`, so executors have it in local and cluster mode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streaming.tracking.events import quoted

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "COMMIT_COLUMN",
    "COMMIT_STRUCT",
    "DECODE_UDF",
    "QUOTE_UDF",
    "commit_rows",
    "register",
    "with_commit",
]

DECODE_UDF = "rm_offset_commit"
QUOTE_UDF = "rm_quote"
#: What ``rm_offset_commit`` returns (Kafka's -1 defaults kept; ``version`` -1: tombstone;
#: ``topic_id``: a v4 value's tag 0, the zero id when absent, null for a tombstone).
COMMIT_STRUCT = (
    "struct<record_type:int, group_id:string, topic:string, partition:int, version:int, "
    "offset:bigint, leader_epoch:int, metadata:string, commit_ts_ms:bigint, "
    "expire_ts_ms:bigint, topic_id:string>"
)
#: The column :func:`with_commit` adds.
COMMIT_COLUMN = "commit"


def register(spark: SparkSession) -> None:
    """Register the lane's JVM functions on ``spark`` (idempotent)."""
    spark.udf.registerJavaFunction(
        DECODE_UDF, "rebalancemonitor.spark.OffsetCommitUdf", COMMIT_STRUCT
    )
    spark.udf.registerJavaFunction(QUOTE_UDF, "rebalancemonitor.spark.QuoteUdf", "string")


def with_commit(envelope: DataFrame, *, source_column: str = "source") -> DataFrame:
    """Envelope rows with :data:`COMMIT_COLUMN`: the decoded commit of an ``offsets`` record
    that is one, else null."""
    from pyspark.sql import functions as F

    decoded = F.expr(f"{DECODE_UDF}(key, value)")
    return envelope.withColumn(COMMIT_COLUMN, F.when(F.col(source_column) == "offsets", decoded))


def _or_null(column: Column) -> Column:
    from pyspark.sql import functions as F

    return F.when(column >= 0, column)


def commit_rows(with_commits: DataFrame, *, cluster: str, timestamp_ms: str) -> DataFrame:
    """The commits of :func:`with_commit` rows as ``offset_commits`` rows: one struct column
    ``offset_commit`` in the table's column order (without the derived ``event_time`` and
    ``date``), beside ``kind`` = ``offset_commit``, ``group_id`` and ``event_ts_ms``.
    ``timestamp_ms``: the column with the Kafka record time in ms."""
    from pyspark.sql import functions as F

    c = F.col(COMMIT_COLUMN)
    deleted = c["version"] < 0
    ts = F.col(timestamp_ms)
    event_id = F.concat(
        F.lit(f"commit/{quoted(cluster)}/"),
        F.expr(f"{QUOTE_UDF}({COMMIT_COLUMN}.group_id)"),
        F.lit("/"),
        F.col("partition").cast("string"),
        F.lit("%3A"),  # the tracker's part "<partition>:<offset>", percent-encoded
        F.col("offset").cast("string"),
    )
    row = F.struct(
        event_id.alias("event_id"),
        F.lit(cluster).alias("cluster"),
        c["group_id"].alias("group_id"),
        ts.alias("event_ts_ms"),
        c["topic"].alias("topic"),
        c["partition"].alias("partition"),
        F.when(~deleted, c["offset"]).alias("offset"),
        F.when(~deleted, _or_null(c["leader_epoch"])).alias("leader_epoch"),
        F.when(~deleted, c["metadata"]).alias("metadata"),
        F.when(~deleted, c["commit_ts_ms"]).alias("commit_ts_ms"),
        F.when(~deleted, _or_null(c["expire_ts_ms"])).alias("expire_ts_ms"),
        deleted.alias("deleted"),
        F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        F.lit(None).cast("string").alias("reason"),
    )
    return with_commits.where(c.isNotNull()).select(
        F.lit("offset_commit").alias("kind"),
        c["group_id"].alias("group_id"),
        ts.alias("event_ts_ms"),
        row.alias("offset_commit"),
    )
