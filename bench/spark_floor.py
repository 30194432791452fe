"""The least a Spark job does with a ``__consumer_offsets`` backlog: the steady benchmark's
floor for any design built on Spark Structured Streaming.

One query, run the way the job runs its own (same session settings and jars,
``streaming.spark.sources.kafka_stream``, the commit decoded in the JVM by
``rm_offset_commit``, one micro-batch with ``availableNow``), that does only what every
design must do with the commits: read them, decode them, keep each partition's last offset
(a ``groupBy`` with ``max``, collected to the driver). No Python per record, no per-group
state, no Delta table, no exporter. Its time, from the query's start to its end (Spark's own
start-up apart, as the job is timed from its ``started:`` line), bounds what the job could
reach on this machine by changing its own work alone.

Run by ``bench/steady.py`` as its own process; prints one JSON line: ``seconds`` (the
query), ``with_startup_s``, ``records``, and ``last``: ``{group: {"topic/partition":
offset}}`` for the bench to check against the backlog.

With ``--live``, the same query reads what is produced from now on, with the job's 1 s
trigger, until it is interrupted (``bench/live.py``'s reference run: what the least live
micro-batches cost on this machine); each micro-batch's partitions and their last offsets
reach the driver as Arrow columns, not a Python object each. It prints ``started:`` when
the query has started and a line per micro-batch: ``[floor] batch N: R records, oldest D
ms`` (R: its commits; D: from the batch's oldest record's timestamp to when its rows
reached the driver).

    python -m bench.spark_floor BOOTSTRAP --checkpoint DIR [--topic T] [--conf K=V ...]
    python -m bench.spark_floor BOOTSTRAP --checkpoint DIR --live
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def batch_line(batch_id: int, records: int, oldest_ms: int) -> str:
    """The ``--live`` line of a micro-batch: its commits, and how old its oldest record was
    when its rows reached the driver (``bench/live.py`` reads it)."""
    return f"[floor] batch {batch_id}: {records} records, oldest {oldest_ms} ms"


def main(argv: list[str] | None = None) -> int:
    spawned = time.perf_counter()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bootstrap")
    parser.add_argument("--topic", default="__consumer_offsets")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    parser.add_argument(
        "--partitions",
        type=int,
        default=None,
        help="tasks reading the batch (default: the job's decode_partitions; 0: the source's)",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting over the job's defaults (repeatable)",
    )
    parser.add_argument(
        "--live",
        action="store_true",
        help="read from the topic's end on, a micro-batch a second, until interrupted",
    )
    args = parser.parse_args(argv)

    import pyarrow.compute as pc
    from pyspark.sql import Column, DataFrame
    from pyspark.sql import functions as F

    from streaming.config import JobConfig
    from streaming.spark.commits import register, with_commit
    from streaming.spark.decode import envelope
    from streaming.spark.session import build_session
    from streaming.spark.sources import kafka_stream

    partitions = JobConfig().decode_partitions if args.partitions is None else args.partitions
    conf = dict(item.split("=", 1) for item in args.conf)
    spark = build_session("bench-spark-floor", conf=conf)
    register(spark)
    kafka = kafka_stream(
        spark,
        bootstrap_servers=args.bootstrap,
        topics=(args.topic,),
        starting_offsets="latest" if args.live else "earliest",
    )
    records = envelope(kafka, args.topic)
    if partitions:
        records = records.coalesce(partitions)
    commits = with_commit(records).where(F.col("commit").isNotNull())
    counted: dict[str, int] = {}
    last: dict[str, dict[str, int]] = {}

    def per_partition(df: DataFrame, *more: Column) -> DataFrame:
        """Each committed partition's last offset and commits (and the ``more`` aggregates)."""
        return (
            df.where(F.col("commit.version") >= 0)
            .groupBy("commit.group_id", "commit.topic", "commit.partition")
            .agg(F.max("commit.offset").alias("offset"), F.count("*").alias("n"), *more)
        )

    def batch(df, _batch_id: int) -> None:  # type: ignore[no-untyped-def]
        for r in per_partition(df).collect():
            last.setdefault(r["group_id"], {})[f"{r['topic']}/{r['partition']}"] = r["offset"]
            counted["commits"] = counted.get("commits", 0) + r["n"]

    def live_batch(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        offsets = per_partition(df, F.unix_millis(F.min("timestamp")).alias("oldest_ms")).toArrow()
        if offsets.num_rows:
            oldest_ms = pc.min(offsets["oldest_ms"]).as_py()
            records = pc.sum(offsets["n"]).as_py()
            print(batch_line(batch_id, records, round(time.time() * 1000 - oldest_ms)), flush=True)

    started = time.perf_counter()
    writer = (
        commits.writeStream.queryName("bench-spark-floor")
        .foreachBatch(live_batch if args.live else batch)
        .option("checkpointLocation", args.checkpoint)
    )
    if args.live:
        query = writer.trigger(processingTime="1 second").start()
        print("started: the floor's query", flush=True)
        try:
            query.awaitTermination()
        except KeyboardInterrupt:
            query.stop()
        spark.stop()
        return 0
    query = writer.trigger(availableNow=True).start()
    query.awaitTermination()
    ended = time.perf_counter()
    read = sum(progress.numInputRows for progress in query.recentProgress)
    spark.stop()
    json.dump(
        {
            "seconds": ended - started,
            "with_startup_s": ended - spawned,
            "records": read,
            "commits": counted.get("commits", 0),
            "last": last,
        },
        sys.stdout,
    )
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
