"""The Structured Streaming job: ``__consumer_offsets`` + membership topic -> tracker -> sinks.

::

    kafka_stream(__consumer_offsets,       streaming.spark.sources: one source for both
                 membership topic)         (backfill from earliest, failOnDataLoss=false:
                                      │    compacted topic; a batch cap shared by both)
                                      ▼
    envelope -> decode                     streaming.spark.decode: mapInArrow on the executors;
                                      │    per source partition and Arrow batch a stats row
                                      ▼    (records, bad, without a group, lowest/highest offset)
    track                                  streaming.spark.stateful: transformWithStateInPandas,
                                      │    state per group on RocksDB; bad rows and stats rows
                                      │    pass through under keys of their own
                                      ▼
    query "events": foreachBatch -> one job computes the batch (persisted) and collects the
                    exporter's rows (DRIVER_KINDS; rebalances as their summary), the stats
                    and every row's kind -> PrometheusSink.update first (detection latency),
                    counters (input, bad, unrouted, offset gaps); then each table's rows
                    parsed on the executors (from_json, streaming.sinks.tables.table_frame)
                    and the bad rows -> DeltaSink, the tables side by side (txnAppId/
                    txnVersion); two progress lines per batch ([records], [events])

One query, so every record is read from Kafka and decoded once: the quarantine and the
counters ride through the stateful step instead of a second query reading and decoding the
same records (``bench/stream.py`` measured what that cost). Its checkpoint is
``<checkpoint_dir>/events``. It writes with ``txnAppId`` = the id kept in
``<checkpoint_dir>/app-id`` (a UUID created with the checkpoint; a new checkpoint gets a new
id, see :mod:`streaming.sinks.delta`) and ``txnVersion`` = the batch id.

Offset gaps: ``__consumer_offsets`` is compacted and cleaned, so the job reads it with
``failOnDataLoss=false`` and counts the offsets it never saw (per source partition: holes
inside a batch and between consecutive batches; compaction holes count too). The running
total is on the progress line (``gaps=``).

``--once`` (availableNow) processes the backlog and stops. The tracker keeps time by its
records, not by timers (see :mod:`streaming.spark.stateful`), so an idle job runs no
micro-batches. Delta rebuilds table snapshots with 50 tasks by default; :data:`JOB_CONF`
lowers that under the user's settings.

Run it with ``rebalance-monitor run [options]`` or, unchanged, with
``spark-submit --jars <.cache/jars/spark/*.jar, comma-separated> streaming/job.py [options]``:
under ``spark-submit`` (or with an active session) the master and jars are left to it.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if __package__ in (None, ""):  # ``spark-submit streaming/job.py``: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streaming.config import JobConfig, JobConfigError, load_config, parse_key_value

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from streaming.sinks.delta import DeltaSink
    from streaming.sinks.prometheus import PrometheusSink

__all__ = [
    "JobStats",
    "RunningJob",
    "Sinks",
    "build_parser",
    "cli_run",
    "launch",
    "main",
    "run",
    "start",
]

PROG = "rebalance-monitor run"
Progress = Callable[[str], None]
#: Receives each micro-batch's tracker rows of :data:`DRIVER_KINDS` (``to_row`` dicts; a
#: rebalance as :func:`streaming.spark.stateful.summary_row`), in order and in chunks of
#: :data:`DRIVER_CHUNK`, before they are written to Delta.
EventsListener = Callable[[list[dict[str, Any]]], None]
#: The tracker row kinds the driver needs (the exporter and the demo's summary); the bulk
#: (commits, per-member assignments) goes from the executors to Delta only.
DRIVER_KINDS = frozenset(
    {"rebalance", "group_metrics", "group_status", "partition_lag", "group_deleted"}
)

#: The stateful step's rows that are not tracker events (:func:`streaming.spark.stateful.track`).
SOURCE_STATS, BAD_RECORD = "source_stats", "bad_record"
BAD_RECORD_JSON = (
    "source string, topic string, partition int, offset bigint, timestamp_ms bigint, "
    "key string, value string, error string, error_type string, error_field string, "
    "error_offset int"
)

#: Exporter rows parsed and applied at a time (of a batch collected as Arrow).
DRIVER_CHUNK = 5_000

#: Job defaults under the user's ``spark_conf``: Delta rebuilds a table's snapshot with 50
#: tasks by default, which dominates a micro-batch that appends to six small tables.
JOB_CONF: dict[str, str] = {"spark.databricks.delta.snapshotPartitions": "2"}


# -- the pipeline ----------------------------------------------------------------------------


def start(
    spark: SparkSession, config: JobConfig, sinks: Sinks, *, once: bool = False
) -> list[StreamingQuery]:
    """Build the pipeline and start its query (see the module docstring)."""
    from pyspark.sql import functions as F

    from streaming.spark.commits import commit_rows, register, with_commit
    from streaming.spark.decode import decode, envelope
    from streaming.spark.sources import kafka_stream
    from streaming.spark.stateful import track
    from streaming.tracking.config import DEFAULT_CONFIG

    register(spark)
    # 1. source: both topics, one subscription
    kafka = kafka_stream(
        spark,
        topics=(config.offsets_topic, config.membership_topic),
        bootstrap_servers=config.bootstrap_servers,
        starting_offsets=config.starting_offsets,
        kafka_options=config.kafka_options,
        max_offsets_per_trigger=config.max_offsets_per_trigger,
    )
    records = envelope(kafka, config.offsets_topic)
    if config.decode_partitions is not None:
        records = records.coalesce(config.decode_partitions)
    # 2. offset commits decoded in the JVM (the commit lane's column)
    records = with_commit(records)

    # 3a. commit lane: offset_commits rows, typed, no Python
    commits = commit_rows(
        records.withColumn("timestamp_ms", F.unix_millis("timestamp")),
        cluster=config.cluster,
        timestamp_ms="timestamp_ms",
    )
    # 3b. group lane: the rest decoded on the executors (commits as runs), per source
    # partition a stats row; the tracker's per-group state; bad rows and stats pass through
    decoded = decode(records, stats=True, history=DEFAULT_CONFIG.commit_history)
    events = track(decoded, cluster=config.cluster)

    # 4. sinks
    rows = events.unionByName(commits, allowMissingColumns=True)
    return [_start_query(rows, "events", sinks.events_batch, config, once=once)]


def _start_query(
    df: DataFrame,
    name: str,
    handler: Callable[[DataFrame, int], None],
    config: JobConfig,
    *,
    once: bool,
) -> StreamingQuery:
    writer = df.writeStream.queryName(f"rebalance-monitor-{name}").foreachBatch(handler)
    writer = writer.option("checkpointLocation", _join(config.checkpoint_dir, name))
    if once:
        return writer.trigger(availableNow=True).start()
    return writer.trigger(processingTime=f"{config.trigger_interval_s} seconds").start()


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
        offset_commits_history: str = "latest",
    ) -> None:
        self.delta = delta
        self.prometheus = prometheus
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
        from streaming.sinks.delta import DeltaSink
        from streaming.sinks.prometheus import PrometheusSink

        delta = DeltaSink(spark, config.delta_path, app_id(config.checkpoint_dir))
        delta.ensure_tables()
        prometheus = None
        if config.metrics_port:
            prometheus = PrometheusSink()
            port = prometheus.start(config.metrics_host, config.metrics_port)
            progress(f"metrics on http://{config.metrics_host}:{port}/metrics")
        return cls(
            delta,
            prometheus,
            progress=progress,
            on_events=on_events,
            offset_commits_history=config.offset_commits_history,
        )

    def close(self) -> None:
        if self.prometheus is not None:
            self.prometheus.stop()

    def _count_records(
        self, stats_rows: list[dict[str, Any]], batch_id: int, started: float
    ) -> None:
        """Sum a batch's source stats (:func:`streaming.spark.decode.source_stats`) per source
        partition: records, bad, without a group, offset gaps; to Prometheus (with the batch's
        duration since ``started``, :func:`time.monotonic`) and a line."""
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
        from pyspark.sql import functions as F

        from streaming.sinks.tables import (
            BAD_RECORDS,
            COMMIT_KIND,
            COMMIT_STRUCT_COLUMN,
            KIND_TO_TABLE,
            OFFSET_COMMITS,
            commit_frame,
            table_frame,
        )

        started = time.monotonic()
        df = df.persist()
        try:
            # one job computes the batch (persisted) and brings the driver every row's kind
            # (the counts, without a second job) and the text of the rows it needs: the
            # exporter's (a rebalance as its summary_row: without the lists only Delta keeps;
            # an offset tombstone of the commit lane ends its partition's lag series) and the
            # source stats; the batch cap (max_offsets_per_trigger) bounds them
            needed = F.col("kind").isin([*DRIVER_KINDS, SOURCE_STATS])
            commit = F.col(COMMIT_STRUCT_COLUMN)
            text = (
                F.when(needed, F.coalesce(F.col("summary"), F.col("payload")))
                .when(
                    (F.col("kind") == COMMIT_KIND) & commit["deleted"],
                    F.to_json(commit, {"ignoreNullFields": "false"}),  # nulls are fields too
                )
                .alias("text")
            )
            small = df.select("kind", text).toArrow()  # Arrow buffers, not a row object each
            counts = pc.value_counts(small["kind"])
            kinds: dict[str, int] = dict(
                zip(
                    counts.field("values").to_pylist(),
                    counts.field("counts").to_pylist(),
                    strict=True,
                )
            )
            stats: list[dict[str, Any]] = []
            for start in range(0, small.num_rows, DRIVER_CHUNK):  # no filtered copy: memory
                chunk = small.slice(start, DRIVER_CHUNK)
                driver = []
                for kind, text in zip(
                    chunk["kind"].to_pylist(), chunk["text"].to_pylist(), strict=True
                ):
                    if text is not None:
                        parsed = json.loads(text)
                        if kind == SOURCE_STATS:
                            stats.append(parsed)
                        else:
                            parsed["kind"] = kind  # the lane's tombstones are bare rows
                            driver.append(parsed)
                if not driver:
                    continue
                if self.prometheus is not None:
                    self.prometheus.update(driver)
                if self.on_events is not None:
                    self.on_events(driver)
            del small, counts
            frames = {
                table: (
                    commit_frame(df, history=self.offset_commits_history)
                    if table == OFFSET_COMMITS
                    else table_frame(df, table)
                )
                for table in sorted({KIND_TO_TABLE[k] for k in kinds if k in KIND_TO_TABLE})
            }
            if kinds.get(BAD_RECORD):
                frames[BAD_RECORDS] = _bad_records_rows(df, batch_id)
            self.delta.write_batch(batch_id, frames)
        finally:
            df.unpersist()
        self._count_records(stats, batch_id, started)
        events = {k: n for k, n in kinds.items() if k not in (SOURCE_STATS, BAD_RECORD)}
        with self._lock:
            for kind, n in events.items():
                self.stats.events[kind] = self.stats.events.get(kind, 0) + n
        shown = ", ".join(f"{k}={n}" for k, n in sorted(events.items())) or "none"
        self.progress(f"[events] batch {batch_id}: {sum(events.values())} events ({shown})")


def _bad_records_rows(events: DataFrame, batch_id: int) -> DataFrame:
    """The ``bad_record`` rows (:func:`streaming.spark.stateful.bad_record_json`) in the
    ``bad_records`` table's columns, parsed on the executors."""
    from pyspark.sql import functions as F

    bad = F.from_json("payload", BAD_RECORD_JSON, {"mode": "FAILFAST"})
    rows = events.where(F.col("kind") == BAD_RECORD).select(bad.alias("b")).select("b.*")
    return rows.select(
        "topic",
        "partition",
        "offset",
        "timestamp_ms",
        F.timestamp_millis("timestamp_ms").alias("timestamp"),
        F.unhex("key").alias("key"),
        F.unhex("value").alias("value"),
        "error",
        "error_type",
        F.col("error_field").alias("field"),
        F.col("error_offset").alias("byte_offset"),
        F.lit(batch_id).cast("bigint").alias("batch_id"),
        F.to_date(F.timestamp_millis("timestamp_ms")).alias("date"),
    )


def _join(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/{name}"


def app_id(checkpoint_dir: str) -> str:
    """The Delta ``txnAppId`` base of this checkpoint: a UUID created with it (local paths),
    else derived from the checkpoint URI."""
    if "://" in checkpoint_dir and not checkpoint_dir.startswith("file:"):
        return f"rebalance-monitor:{checkpoint_dir}"
    folder = Path(checkpoint_dir.removeprefix("file://").removeprefix("file:"))
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / "app-id"
    if not marker.exists():
        marker.write_text(f"rebalance-monitor:{uuid.uuid4()}\n", encoding="utf-8")
    return marker.read_text(encoding="utf-8").strip()


# -- the session -----------------------------------------------------------------------------


def session_for(config: JobConfig) -> SparkSession:
    """The active session, the one ``spark-submit`` prepared, or a local one with the jars
    from the local Maven cache (:func:`streaming.spark.session.build_session`)."""
    from pyspark.sql import SparkSession

    from streaming.config import under_spark_submit
    from streaming.spark.session import DEFAULT_CONF, REQUIRED_CONF, build_session

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if under_spark_submit() or config.spark_master is None:
        builder = SparkSession.builder.appName("rebalance-monitor")
        for key, value in {**DEFAULT_CONF, **config.spark_conf, **REQUIRED_CONF}.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    return build_session(master=config.spark_master, conf=config.spark_conf)


def _runtime_conf(spark: SparkSession, config: JobConfig) -> None:
    """The job's SQL settings on a session it did not build (those that can change)."""
    from streaming.spark.session import REQUIRED_CONF

    for key, value in {**JOB_CONF, **config.spark_conf, **REQUIRED_CONF}.items():
        if spark.conf.get(key, None) == value:
            continue
        try:
            spark.conf.set(key, value)
        except Exception:  # a static or core setting: only at session start
            continue


# -- running ---------------------------------------------------------------------------------


class RunningJob:
    """A started job: its query and sinks (:func:`launch`); stop it with :meth:`stop`."""

    def __init__(self, config: JobConfig, sinks: Sinks, queries: list[StreamingQuery]) -> None:
        self.config = config
        self.sinks = sinks
        self.queries = queries

    @property
    def stats(self) -> JobStats:
        return self.sinks.stats

    @property
    def metrics_url(self) -> str | None:
        prometheus = self.sinks.prometheus
        if prometheus is None or prometheus.port is None:
            return None
        return f"http://{self.config.metrics_host}:{prometheus.port}/metrics"

    def await_backlog(self) -> None:
        """Block until the query has processed everything available now."""
        for query in self.queries:
            query.processAllAvailable()

    def wait(self, duration_s: float | None = None) -> None:
        """Until the queries end (``once``), ``duration_s`` passes or a query fails."""
        deadline = None if duration_s is None else time.monotonic() + duration_s
        for query in self.queries:
            if deadline is None:
                query.awaitTermination()
            else:
                query.awaitTermination(max(1, round(max(0.0, deadline - time.monotonic()))))

    def stop(self) -> None:
        """Stop the queries and the exporter; re-raise a query's failure."""
        try:
            for query in self.queries:
                if query.isActive:
                    query.stop()
        finally:
            self.sinks.close()
        for query in self.queries:
            error = query.exception()
            if error is not None:
                raise RuntimeError(f"query {query.name} failed: {error}")


def launch(
    config: JobConfig,
    *,
    once: bool = False,
    spark: SparkSession | None = None,
    progress: Progress = print,
    on_events: EventsListener | None = None,
) -> RunningJob:
    """Open the sinks (tables created when absent, the exporter started) and start the
    queries; the caller stops the returned job. ``on_events`` sees each batch's rows."""
    spark = spark or session_for(config)
    _runtime_conf(spark, config)
    sinks = Sinks.open(spark, config, progress=progress, on_events=on_events)
    try:
        queries = start(spark, config, sinks, once=once)
    except BaseException:
        sinks.close()
        raise
    progress(
        f"started: {config.bootstrap_servers} cluster={config.cluster} "
        f"checkpoint={config.checkpoint_dir} delta={config.delta_path}"
        + (" (available now)" if once else "")
    )
    return RunningJob(config, sinks, queries)


def run(
    config: JobConfig,
    *,
    once: bool = False,
    duration_s: float | None = None,
    spark: SparkSession | None = None,
    progress: Progress = print,
) -> JobStats:
    """Start the job and wait: until the backlog is processed (``once``), ``duration_s``
    passes, a query fails (re-raised) or Ctrl-C."""
    job = launch(config, once=once, spark=spark, progress=progress)
    started = time.monotonic()
    try:
        job.wait(duration_s)
    except KeyboardInterrupt:
        progress("interrupted: stopping")
    finally:
        job.stop()
    stats = job.stats
    exporter = job.sinks.prometheus
    progress(
        f"stopped after {time.monotonic() - started:.1f} s: {stats.input_records} records "
        f"({stats.bad_records} bad), {sum(stats.events.values())} events"
        + ("" if exporter is None else f", {exporter.groups} groups in the exporter")
    )
    return stats


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="TOML config file (see streaming.config)")
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting (repeatable), e.g. spark.sql.shuffle.partitions=8",
    )
    p.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka client setting of both sources (repeatable), e.g. security.protocol=SSL",
    )
    p.add_argument("--bootstrap-server", dest="bootstrap_servers", metavar="HOST:PORT[,...]")
    p.add_argument("--cluster", help="the cluster label of every row and metric")
    p.add_argument("--membership-topic", help="the collector's topic")
    p.add_argument(
        "--offsets-topic",
        help="topic of the coordinator records (default __consumer_offsets; another topic only "
        "for a copy of them, e.g. a replayed capture)",
    )
    p.add_argument("--starting-offsets", help="earliest (default), latest or Spark's JSON offsets")
    p.add_argument("--checkpoint-dir", help="streaming checkpoint (default .local/job/...)")
    p.add_argument("--delta-path", help="base path of the Delta tables")
    p.add_argument("--trigger-interval", dest="trigger_interval_s", type=float, metavar="SECONDS")
    p.add_argument("--metrics-host")
    p.add_argument("--metrics-port", type=int, help="Prometheus exporter port (0: off)")
    p.add_argument("--master", dest="spark_master", help="Spark master ('none': spark-submit's)")
    p.add_argument("--max-offsets-per-trigger", type=int, metavar="N")
    p.add_argument(
        "--decode-partitions", type=int, metavar="N", help="decode tasks per batch (default 4)"
    )
    p.add_argument(
        "--offset-commits-history",
        choices=("latest", "every"),
        help="offset_commits keeps the last commit per partition per micro-batch (latest, "
        "the default) or every commit (every)",
    )
    p.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this long")
    p.add_argument("--once", action="store_true", help="process what is available now, then stop")


def config_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> JobConfig:
    """The job's configuration from parsed arguments (over file and environment)."""
    overrides: dict[str, Any] = {
        name: getattr(args, name)
        for name in (
            "bootstrap_servers",
            "cluster",
            "membership_topic",
            "offsets_topic",
            "starting_offsets",
            "checkpoint_dir",
            "delta_path",
            "trigger_interval_s",
            "metrics_host",
            "metrics_port",
            "spark_master",
            "max_offsets_per_trigger",
            "decode_partitions",
            "offset_commits_history",
        )
    }
    if args.conf:
        overrides["spark_conf"] = dict(parse_key_value(t, "--conf") for t in args.conf)
    if args.kafka_option:
        overrides["kafka_options"] = dict(
            parse_key_value(t, "--kafka-option") for t in args.kafka_option
        )
    return load_config(config_file=args.config, environ=environ, overrides=overrides)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``rebalance-monitor run`` (and of ``spark-submit job.py``)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Run the Structured Streaming job: __consumer_offsets and the membership topic "
            "-> per-group tracker -> Delta tables and Prometheus."
        ),
    )
    _add_arguments(parser)
    return parser


def cli_run(argv: Sequence[str] | None = None) -> int:
    """``rebalance-monitor run [options]``; returns the exit code (2: invalid settings)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        if args.duration is not None and args.duration <= 0:
            raise JobConfigError("duration: must be positive")
        config = config_from_args(args)
    except JobConfigError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    run(config, once=args.once, duration_s=args.duration, progress=_print)
    return 0


def _print(line: str) -> None:
    print(line, flush=True)


def main() -> None:
    sys.exit(cli_run(sys.argv[1:]))


if __name__ == "__main__":
    main()
