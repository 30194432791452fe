"""The Structured Streaming job: ``__consumer_offsets`` + membership topic -> sinks.

::

    kafka_stream(__consumer_offsets,       streaming.spark.sources: one source for both
                 membership topic)         (backfill from earliest, failOnDataLoss=false:
                                      │    compacted topic; a batch cap shared by both)
                                      ▼
    envelope -> with_commit                streaming.spark.commits: offset commits decoded in
                                      │    the JVM (jvm/udf), a typed ``commit`` column
              ┌───────────────────────┴──────────────────────────┐
              ▼ commit lane (JVM only,                           ▼ group lane
                offset_commits_history=every)
    commit_rows: offset_commits rows,      decode: mapInArrow on the executors; commits as
    one typed struct column                runs (vectorized), the rest decoded by the codec;
              │                            per source partition a stats row
              │                                                  ▼
              │                            track: transformWithStateInPandas, state per
              │                            group on RocksDB; bad rows and stats rows pass
              │                            through under keys of their own; the kept
              │                            commits (history=kept), or with history=latest
              │                            each group's runs as lists and each tombstone
              └───────────────────────┬──────────────────────────┘
                                      ▼ unionByName (every) / the group lane alone (latest)
    query "events": foreachBatch (streaming.sinks.micro_batch.Sinks) -> one job computes the
                    batch (persisted) and counts its kinds, one collects the exporter's rows
                    from the cache (DRIVER_KINDS; rebalances as their summary; the offset
                    tombstones) and the stats -> PrometheusSink.update first (detection
                    latency), counters (input, bad, unrouted, offset gaps); then each table's rows
                    (the tracker's typed struct of each table, streaming.sinks.frames.
                    table_frame; offset_commits from the offset_commit struct,
                    commit_frame) and the bad rows' struct -> DeltaSink, the tables side by side
                    (txnAppId/txnVersion); two progress lines per batch ([records], [events])

With the default ``offset_commits_history=kept`` the tracker writes the commits that matter
and a sample per partition per ``offset_commits_interval_s`` (:mod:`streaming.tracking.keep`),
each with its ``reason``; with ``latest`` the table keeps each partition's last record of a
micro-batch, which is the last commit of one of the group lane's runs (or a tombstone): the
stateful step passes those rows on. Either way the source is read once per micro-batch.
With ``every`` the commit lane writes every commit, and the source is read twice per
micro-batch, once by each lane (Spark plans a union's branches apart).

One query, so every record is decoded once: the quarantine and the counters ride through the
stateful step instead of a second query decoding the same records, and both lanes see the
same offsets in each micro-batch. Its checkpoint is ``<checkpoint_dir>/events``, which also
records the stateful step's buckets (``rebalance-monitor-layout.json``,
:func:`streaming.spark.buckets.checkpoint_keys`). It writes with ``txnAppId`` = the id kept
in ``<checkpoint_dir>/app-id`` (a UUID created with the checkpoint on any file system; a new
checkpoint gets a new id, :mod:`streaming.spark.checkpoint`) and ``txnVersion`` = the batch
id. Its handler is guarded (:mod:`streaming.spark.stopping`): a stop inside a micro-batch
ends the query as stopped, and a batch's failure is reported even when Spark loses its
record. A stop (SIGTERM as Ctrl-C under ``rebalance-monitor run``, the end of
``--duration``) first lets the micro-batch in flight finish, for at most
:data:`STOP_BATCH_WAIT_S`. While the job runs its exporter answers ``/-/ready`` with
:meth:`RunningJob.not_ready`.

Offset gaps: ``__consumer_offsets`` is compacted and cleaned, so the job reads it with
``failOnDataLoss=false`` and counts the offsets it never saw (per source partition: holes
inside a batch and between consecutive batches; compaction holes count too). The running
total is on the progress line (``gaps=``).

``--once`` (availableNow) processes the backlog and stops. The tracker keeps time by its
records, not by timers (see :mod:`streaming.spark.stateful`), so an idle job runs no
micro-batches. Delta rebuilds table snapshots with 50 tasks by default; :data:`JOB_CONF`
lowers that under the user's settings.

Run it with ``rebalance-monitor run [options]`` or, unchanged, with
``spark-submit --jars <.cache/jars/spark/*.jar and .cache/jars/udf/*.jar, comma-separated>
streaming/job.py [options]`` (``streaming.spark.session.spark_jars()`` lists them):
under ``spark-submit`` (or with an active session) the master and jars are left to it.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streaming.errors import EXIT_FAILED, ArgumentParser, RebalanceMonitorError, cli_command

if __package__ in (None, ""):  # ``spark-submit streaming/job.py``: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streaming.config import (
    DEFAULT_JOB_DIR,
    JobConfig,
    JobConfigError,
    load_config,
    parse_key_value,
)
from streaming.job_log import DEFAULT_LOG_FORMAT, LOG_FORMATS, JobLog
from streaming.sinks.micro_batch import EventsListener, JobStats, Progress, Sinks
from streaming.spark.stopping import BatchGuard
from streaming.version import version_line

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from streaming.kafka_check import BrokerWatch
    from streaming.sinks.maintenance import MaintenanceSchedule


__all__ = [
    "JobStats",
    "QueryFailedError",
    "RunningJob",
    "Sinks",
    "build_parser",
    "check_kafka",
    "cli_run",
    "launch",
    "main",
    "run",
    "start",
]

PROG = "rebalance-monitor run"
#: The query's name; its checkpoint is ``<checkpoint_dir>/<name>``.
EVENTS_QUERY = "events"
#: Where ``rebalance-monitor run`` writes the trace of a failure (``--log-file``).
DEFAULT_LOG_FILE = DEFAULT_JOB_DIR / "run.log"
#: The longest ``--duration``: ten years (``inf`` is a mistake, the default runs forever).
MAX_DURATION_S = 10 * 365 * 86_400.0
#: A stop (SIGTERM, Ctrl-C, the end of ``--duration``) lets the micro-batch in flight finish
#: for this long before it stops the query, which then interrupts the batch (still a clean
#: stop: the next start replays it, and Delta skips the tables it committed).
STOP_BATCH_WAIT_S = 30.0
#: ``/-/ready``: the last micro-batch is at most this old, or at least three trigger
#: intervals when that is longer (:meth:`RunningJob.not_ready`).
READY_BATCH_AGE_S = 60.0


class QueryFailedError(RebalanceMonitorError, RuntimeError):
    """The streaming query stopped with an error; the message is its first line."""

    exit_status = EXIT_FAILED


#: Job defaults under the user's ``spark_conf``:
#:
#: * Delta rebuilds a table's snapshot with 50 tasks by default, which dominates a
#:   micro-batch that appends to six small tables;
#: * with a byte limit per Arrow batch (64 MiB by default), Spark measures the batch it
#:   writes to a Python worker after every row (``ArrowWriter.sizeInBytes``, walking every
#:   vector of the row's structs), a steady share of the JVM's work at many groups.
#:   Without it (``Int.MaxValue``) a batch is bounded by its 10,000 rows alone, a few
#:   MB of ``__consumer_offsets`` records or tracker input rows.
JOB_CONF: dict[str, str] = {
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.execution.arrow.maxBytesPerBatch": "2147483647",
}


# -- the pipeline ----------------------------------------------------------------------------


def start(
    spark: SparkSession,
    config: JobConfig,
    sinks: Sinks,
    *,
    once: bool = False,
    handler: Callable[[DataFrame, int], None] | None = None,
) -> list[StreamingQuery]:
    """Build the pipeline and start its query (see the module docstring); ``handler`` takes
    each micro-batch (default ``sinks.events_batch``; :func:`launch` guards it)."""
    from pyspark.sql import functions as F

    from streaming.spark.buckets import checkpoint_keys
    from streaming.spark.commits import commit_rows, register, with_commit
    from streaming.spark.decode import decode, envelope
    from streaming.spark.sources import kafka_stream
    from streaming.spark.stateful import track
    from streaming.tracking.config import TrackerConfig

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

    # 3a. commit lane (every commit kept): offset_commits rows, typed, no Python
    history = config.offset_commits_history
    every = history == "every"
    commits = commit_rows(
        records.withColumn("timestamp_ms", F.unix_millis("timestamp")),
        cluster=config.cluster,
        timestamp_ms="timestamp_ms",
    )
    # 3b. group lane: the rest decoded on the executors (commits as runs), per source
    # partition a stats row; the tracker's per-group state; bad rows and stats pass through
    tracker = TrackerConfig(
        consumer_session_timeout_ms=config.consumer_session_timeout_ms,
        lag_status_window_ms=max(1, round(config.lag_status_window_s * 1000)),
        lag_status_hold_ms=round(config.lag_status_hold_s * 1000),
        group_idle_ms=round(config.group_retention_s * 1000),
        end_offsets_max_age_ms=max(1, round(config.end_offsets_max_age_s * 1000)),
        commit_rows=history == "kept",
        commit_sample_ms=max(1, round(config.offset_commits_interval_s * 1000)),
        commit_jump_records=config.offset_commits_jump_records,
        lag_interval_ms=round(config.partition_lag_interval_s * 1000),
        lag_export_interval_ms=round(config.lag_export_interval_s * 1000),
        group_lag_interval_ms=round(config.group_lag_interval_s * 1000),
    )
    keys = checkpoint_keys(spark, _join(config.checkpoint_dir, EVENTS_QUERY))
    decoded = decode(records, buckets=len(keys), stats=True, history=tracker.commit_history)
    events = track(
        decoded,
        cluster=config.cluster,
        config=tracker,
        commit_rows=history == "latest",
        keys=keys,
        group_filter=config.group_filter,
    )

    # 4. sinks
    rows = events.unionByName(commits, allowMissingColumns=True) if every else events
    return [_start_query(rows, EVENTS_QUERY, handler or sinks.events_batch, config, once=once)]


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


def _join(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/{name}"


# -- the session -----------------------------------------------------------------------------


def session_for(config: JobConfig, *, log_file: Path | None = None) -> SparkSession:
    """The active session, the one ``spark-submit`` prepared, or a local one with the jars
    from the local Maven cache (:func:`streaming.spark.session.build_session`; the JVM it
    launches prints to ``log_file``, when given, not to the terminal). Ctrl-C then stops the
    job as SIGTERM does (:func:`_interrupt_without_cancelling`)."""
    from pyspark.sql import SparkSession

    from streaming.config import under_spark_submit
    from streaming.spark.session import DEFAULT_CONF, REQUIRED_CONF, build_session

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if under_spark_submit() or config.spark_master is None:
        builder = SparkSession.builder.appName("rebalance-monitor")
        loaded = _submitted_conf() if under_spark_submit() else set()
        defaults = {k: v for k, v in DEFAULT_CONF.items() if k not in loaded}
        for key, value in {**defaults, **config.spark_conf, **REQUIRED_CONF}.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    else:
        spark = build_session(master=config.spark_master, conf=config.spark_conf, log_file=log_file)
    _interrupt_without_cancelling()
    return spark


def _interrupt_without_cancelling() -> None:
    """Ctrl-C (SIGINT) raises ``KeyboardInterrupt`` in the main thread and nothing else.
    pyspark's ``SparkContext`` handler cancels every Spark job first: the micro-batch in
    flight then failed its Delta append and the query ended as failed, where the job's own
    stop (:func:`run`, :class:`~streaming.spark.stopping.BatchGuard`) lets that batch finish
    or ends it as stopped."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _submitted_conf() -> set[str]:
    """Under ``spark-submit``: the Spark settings its driver JVM was started with
    (``--conf``, ``--properties-file``, ``spark-defaults.conf``). They win over
    :data:`DEFAULT_CONF`; the job's own ``--conf`` and :data:`REQUIRED_CONF` win over them."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connects to spark-submit's JVM
    return {key for key, _ in SparkConf().getAll()}


def _runtime_conf(spark: SparkSession, config: JobConfig) -> None:
    """The job's SQL settings on a session it did not build (those that can change);
    :data:`JOB_CONF` only where the session has no value of its own (``spark-submit
    --conf``, say)."""
    from streaming.spark.session import REQUIRED_CONF

    defaults = {k: v for k, v in JOB_CONF.items() if spark.conf.get(k, None) is None}
    for key, value in {**defaults, **config.spark_conf, **REQUIRED_CONF}.items():
        if spark.conf.get(key, None) == value:
            continue
        try:
            spark.conf.set(key, value)
        except Exception:  # a static or core setting: only at session start
            continue


# -- running ---------------------------------------------------------------------------------


class RunningJob:
    """A started job: its query and sinks (:func:`launch`); stop it with :meth:`stop`."""

    def __init__(
        self,
        config: JobConfig,
        sinks: Sinks,
        queries: list[StreamingQuery],
        watch: BrokerWatch | None = None,
        guard: BatchGuard | None = None,
        unlisten: Callable[[], None] | None = None,
        maintenance: MaintenanceSchedule | None = None,
    ) -> None:
        self.config = config
        self.sinks = sinks
        self.queries = queries
        self.watch = watch
        self.guard = guard
        #: The tables' maintenance schedule (None: ``maintenance_interval_s`` 0)
        self.maintenance = maintenance
        #: Unix time the queries started (``/-/ready`` before the first micro-batch)
        self.started_s = time.time()
        self._unlisten = unlisten

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

    def not_ready(self, now_s: float | None = None) -> list[str]:
        """Why the job is not ready (``/-/ready``); empty when it is: every query active,
        its last micro-batch younger than :data:`READY_BATCH_AGE_S` (or three trigger
        intervals) unless the query is caught up and waiting for data, and the cluster
        reachable at the watch's last check (when the job watches it)."""
        now_s = time.time() if now_s is None else now_s
        reasons: list[str] = []
        bound = max(READY_BATCH_AGE_S, 3 * self.config.trigger_interval_s)
        exporter = self.sinks.prometheus
        last = None if exporter is None else exporter.last_batch_ts_s
        age = now_s - (self.started_s if last is None else last)
        for query in self.queries:
            try:
                if not query.isActive:
                    reasons.append(f"query {query.name} is not active")
                    continue
                status = query.status
            except Exception as e:  # the JVM is going away
                reasons.append(f"query {query.name}: no status ({type(e).__name__})")
                continue
            waiting = not status["isDataAvailable"] and not status["isTriggerActive"]
            if age > bound and not waiting:
                what = "no micro-batch yet" if last is None else "last micro-batch"
                reasons.append(f"{what} after {age:.0f} s (bound {bound:g} s)")
        if self.watch is not None and self.watch.up is not True:
            reasons.append("kafka: " + ("not checked yet" if self.watch.up is None else "down"))
        return reasons

    def stop(self) -> None:
        """Stop the queries, the Kafka watch and the exporter; raise :class:`QueryFailedError`
        when a query failed (also when Spark lost its record of the failure:
        :class:`streaming.spark.stopping.BatchGuard`). A micro-batch in flight may finish
        first (:data:`STOP_BATCH_WAIT_S`)."""
        try:
            if self.maintenance is not None:
                self.maintenance.stop()
            if self.watch is not None:
                self.watch.stop()
            if self.guard is not None:
                self.guard.stop()  # a batch the stop interrupts is no failure
            self._let_batches_finish(STOP_BATCH_WAIT_S)
            for query in self.queries:
                if query.isActive:
                    query.stop()
        finally:
            if self._unlisten is not None:
                self._unlisten()
            self.sinks.close()
        for query in self.queries:
            error = query.exception()
            if error is not None:
                raise QueryFailedError(f"query {query.name} failed: {error}")
        if self.guard is not None and self.guard.failure is not None:
            name = self.queries[0].name if self.queries else "events"
            raise QueryFailedError(f"query {name} failed: {self.guard.failure}")

    def _let_batches_finish(self, timeout_s: float) -> None:
        """Until the triggers running at the call ended, at most ``timeout_s``: the batch in
        the handler then (:class:`BatchGuard`) returned and Spark committed it (the query's
        last progress reached it), and a trigger not yet in the handler then ended (its
        progress moved on). Later batches are not waited for."""
        deadline = time.monotonic() + timeout_s
        guard = self.guard
        running = None if guard is None else guard.running
        target = running if running is not None or guard is None else guard.handled

        def handler_done() -> bool:
            left = max(0.0, deadline - time.monotonic())
            return guard is None or running is None or guard.wait_past(running, left)

        for query in self.queries:
            try:
                first = _batch_id(query.lastProgress)
                while time.monotonic() < deadline and handler_done() and query.isActive:
                    done = _batch_id(query.lastProgress)
                    uncommitted = target is not None and (done is None or done < target)
                    starting = running is None and query.status["isTriggerActive"] and done == first
                    if not (uncommitted or starting):
                        break
                    time.sleep(0.1)
            except Exception:  # the JVM is going away, or this thread's link to it broke
                handler_done()  # (a Ctrl-C inside a py4j call): the batch may still finish
                return


def _batch_id(progress: Mapping[str, Any] | None) -> int | None:
    return None if progress is None else int(progress["batchId"])


def launch(
    config: JobConfig,
    *,
    once: bool = False,
    spark: SparkSession | None = None,
    progress: Progress = print,
    on_events: EventsListener | None = None,
    warn: Progress | None = None,
) -> RunningJob:
    """Open the sinks (tables created when absent, the exporter started) and start the
    queries; the caller stops the returned job. ``on_events`` sees each batch's rows;
    ``warn`` takes the warnings (default ``progress``)."""
    spark = spark or session_for(config)
    _runtime_conf(spark, config)
    sinks = Sinks.open(spark, config, progress=progress, on_events=on_events)
    guard = BatchGuard(sinks.events_batch)
    if sinks.prometheus is not None and not once:
        sinks.prometheus.record_trigger_interval(config.trigger_interval_s)
    unlisten = _listen_progress(spark, sinks)
    try:
        queries = start(spark, config, sinks, once=once, handler=guard)
    except BaseException:
        if unlisten is not None:
            unlisten()
        sinks.close()
        raise
    progress(
        f"started: {config.bootstrap_servers} cluster={config.cluster} "
        f"checkpoint={config.checkpoint_dir} delta={config.delta_path}"
        + (" (available now)" if once else "")
    )
    watch = _watch_kafka(config, sinks, progress, warn or progress)
    maintenance = _schedule_maintenance(spark, config, progress, warn or progress)
    job = RunningJob(config, sinks, queries, watch, guard, unlisten, maintenance)
    if sinks.prometheus is not None:
        sinks.prometheus.readiness = job.not_ready
    return job


def _schedule_maintenance(
    spark: SparkSession, config: JobConfig, progress: Progress, warn: Progress
) -> MaintenanceSchedule | None:
    """The tables' maintenance every ``maintenance_interval_s`` on a thread of its own
    (:class:`streaming.sinks.maintenance.MaintenanceSchedule`); None when it is 0."""
    from streaming.sinks.maintenance import Maintenance, MaintenanceSchedule, Settings, apply_conf

    if config.maintenance_interval_s == 0:
        return None
    apply_conf(spark, config.spark_conf)
    maintenance = Maintenance(spark, config.delta_path, Settings.of(config), progress=progress)
    return MaintenanceSchedule(maintenance, config.maintenance_interval_s, warn=warn).start()


def _listen_progress(spark: SparkSession, sinks: Sinks) -> Callable[[], None] | None:
    """The query's progress reports to the exporter (the job's own lag behind each source
    partition, :mod:`streaming.spark.progress`); returns what removes the listener."""
    from streaming.spark.progress import ProgressListener

    exporter = sinks.prometheus
    if exporter is None:
        return None
    listener = ProgressListener(f"rebalance-monitor-{EVENTS_QUERY}", exporter.record_progress)
    spark.streams.addListener(listener)
    return lambda: spark.streams.removeListener(listener)


def check_kafka(config: JobConfig, progress: Progress = print) -> None:
    """The check before Spark starts (:func:`streaming.kafka_check.check_broker`, with the
    job's Kafka options mapped to kafka-python's); raises
    :class:`~streaming.kafka_check.BrokerCheckError` naming the cause. Skipped when
    ``broker_check_timeout_s`` is 0."""
    from streaming.kafka_check import check_broker, kafka_python_options

    if config.broker_check_timeout_s == 0:
        return
    mapped = kafka_python_options(config.kafka_options)
    if mapped.unmapped:
        progress(
            f"kafka check: TCP only ({', '.join(mapped.unmapped)}: no Python equivalent, "
            "use PEM files to have the login checked too)"
        )
    check_broker(
        config.bootstrap_servers,
        mapped.options,
        timeout_s=config.broker_check_timeout_s,
        tcp_only=bool(mapped.unmapped),
    )


def _watch_kafka(
    config: JobConfig, sinks: Sinks, progress: Progress, warn: Progress
) -> BrokerWatch | None:
    """While the job runs: a line when the cluster goes down or comes back, and
    ``rebalance_monitor_kafka_up`` / ``..._last_batch_age_seconds`` after every check."""
    from streaming.kafka_check import BrokerWatch, kafka_python_options

    if config.broker_watch_interval_s == 0:
        return None
    mapped = kafka_python_options(config.kafka_options)
    down_since: list[float] = []

    def on_check(up: bool) -> None:
        if sinks.prometheus is not None:
            sinks.prometheus.record_kafka_check(up, time.time())

    def on_change(up: bool, cause: str | None) -> None:
        if not up:
            down_since[:] = [time.monotonic()]
            warn(f"kafka: DOWN: {cause} (the job keeps trying)")
        elif down_since:
            progress(f"kafka: up again after {time.monotonic() - down_since[0]:.0f} s")
            down_since.clear()

    return BrokerWatch(
        config.bootstrap_servers,
        mapped.options,
        on_change,
        on_check=on_check,
        interval_s=config.broker_watch_interval_s,
        timeout_s=min(10.0, max(2.0, config.broker_watch_interval_s)),
        tcp_only=bool(mapped.unmapped),
    ).start()


def run(
    config: JobConfig,
    *,
    once: bool = False,
    duration_s: float | None = None,
    spark: SparkSession | None = None,
    progress: Progress = print,
    warn: Progress | None = None,
) -> JobStats:
    """Start the job and wait: until the backlog is processed (``once``), ``duration_s``
    passes, a query fails (re-raised) or Ctrl-C (SIGINT; SIGTERM too under
    :func:`cli_run`)."""
    job = launch(config, once=once, spark=spark, progress=progress, warn=warn)
    started = time.monotonic()
    try:
        job.wait(duration_s)
    except KeyboardInterrupt:
        progress(
            f"interrupted: stopping (the micro-batch in flight may finish, at most "
            f"{STOP_BATCH_WAIT_S:g} s)"
        )
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
    p.add_argument(
        "--web-config-file",
        dest="metrics_web_config_file",
        metavar="FILE",
        help="the exporter's TLS and basic auth, in Prometheus' exporter-toolkit format "
        "(docs/operations.md, Security); needed before --metrics-host leaves 127.0.0.1",
    )
    p.add_argument("--master", dest="spark_master", help="Spark master ('none': spark-submit's)")
    p.add_argument("--max-offsets-per-trigger", type=int, metavar="N")
    p.add_argument(
        "--decode-partitions", type=int, metavar="N", help="decode tasks per batch (default 4)"
    )
    p.add_argument(
        "--offset-commits-history",
        choices=("kept", "latest", "every"),
        help="offset_commits keeps the commits that matter and a sample per partition per "
        "--offset-commits-interval (kept, the default), the last commit per partition per "
        "micro-batch (latest) or every commit (every; docs/tables.md gives the cost)",
    )
    p.add_argument(
        "--offset-commits-interval",
        dest="offset_commits_interval_s",
        type=float,
        metavar="SECONDS",
        help="with kept: one sample commit per partition per this long, record time (default 3600)",
    )
    p.add_argument(
        "--offset-commits-jump-records",
        type=int,
        metavar="N",
        help="with kept: the least forward move kept as a jump (default 1000; it must also "
        "be 10 times the partition's largest recent step)",
    )
    p.add_argument(
        "--partition-lag-interval",
        dest="partition_lag_interval_s",
        type=float,
        metavar="SECONDS",
        help="partition_lag keeps one measurement per partition per this long, record time "
        "(default 600; 0: every measurement)",
    )
    p.add_argument(
        "--lag-export-interval",
        dest="lag_export_interval_s",
        type=float,
        metavar="SECONDS",
        help="the exporter's lag gauges take a partition's first measurement per this long, "
        "record time, and each change of status at once (default 30; 0: every measurement)",
    )
    p.add_argument(
        "--group-lag-interval",
        dest="group_lag_interval_s",
        type=float,
        metavar="SECONDS",
        help="group_lag keeps one row per group per this long, record time (default 60; 0: none)",
    )
    p.add_argument(
        "--consumer-session-timeout-ms",
        type=int,
        metavar="MS",
        help="the cluster's KIP-848 session timeout, where the broker was not asked (45000)",
    )
    p.add_argument(
        "--broker-check-timeout",
        dest="broker_check_timeout_s",
        type=float,
        metavar="SECONDS",
        help="how long the check of the cluster before Spark starts may take (default 30; "
        "exit 2 when it fails; 0: no check)",
    )
    p.add_argument(
        "--broker-watch-interval",
        dest="broker_watch_interval_s",
        type=float,
        metavar="SECONDS",
        help="check the cluster this often while running (default 5; 0: never)",
    )
    p.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default=DEFAULT_LOG_FORMAT,
        help="the job's lines: 'text' (time, level, message; the default) or 'json' (one "
        "object per line)",
    )
    p.add_argument(
        "--group-filter",
        metavar="REGEX",
        help="only groups whose whole id matches this regular expression (default: all; as "
        "the collector's --group-filter)",
    )
    p.add_argument(
        "--group-retention",
        dest="group_retention_s",
        type=float,
        metavar="SECONDS",
        help="forget a group after this long without a record or a collector snapshot "
        "listing it, in record time (default 604800, a week; 0: never)",
    )
    p.add_argument(
        "--end-offsets-max-age",
        dest="end_offsets_max_age_s",
        type=float,
        metavar="SECONDS",
        help="lag against end offsets older than this is unknown, not 0 (default 60)",
    )
    p.add_argument(
        "--maintenance-interval",
        dest="maintenance_interval_s",
        type=float,
        metavar="SECONDS",
        help="compact, cluster, expire and vacuum the tables this often, beside the "
        "micro-batches (default 3600; 0: never, e.g. when `rebalance-monitor maintain` is "
        "scheduled instead)",
    )
    p.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this long")
    p.add_argument("--once", action="store_true", help="process what is available now, then stop")
    p.add_argument(
        "--log-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="where Spark's log (of a JVM this command starts) and the trace of a failure "
        f"go (default {DEFAULT_LOG_FILE})",
    )


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
            "offset_commits_interval_s",
            "offset_commits_jump_records",
            "partition_lag_interval_s",
            "lag_export_interval_s",
            "group_lag_interval_s",
            "consumer_session_timeout_ms",
            "broker_check_timeout_s",
            "broker_watch_interval_s",
            "metrics_web_config_file",
            "group_filter",
            "group_retention_s",
            "end_offsets_max_age_s",
            "maintenance_interval_s",
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
    parser = ArgumentParser(
        prog=PROG,
        description=(
            "Run the Structured Streaming job: __consumer_offsets and the membership topic "
            "-> per-group tracker -> Delta tables and Prometheus."
        ),
    )
    _add_arguments(parser)
    parser.add_argument("--version", action="version", version=version_line())
    return parser


@cli_command(PROG)
def cli_run(argv: Sequence[str] | None = None) -> int:
    """``rebalance-monitor run [options]``; returns the exit code: 0 done, 1 the query or
    Spark failed (one line on stderr, the trace in ``--log-file``), 2 invalid settings or
    the cluster cannot be used (before Spark starts)."""
    args = build_parser().parse_args(argv)
    # invalid settings raise JobConfigError: exit 2 (streaming.errors.cli_command)
    if args.duration is not None and not (
        math.isfinite(args.duration) and 0 < args.duration <= MAX_DURATION_S
    ):
        raise JobConfigError(
            f"duration: expected seconds in (0, {MAX_DURATION_S:g}], got {args.duration!r}"
        )
    config = config_from_args(args)
    if config.metrics_port and config.metrics_web_config_file is not None:
        from streaming.sinks.web_config import WebConfigError, load_web_config

        try:
            load_web_config(config.metrics_web_config_file)
        except WebConfigError as e:
            raise JobConfigError(f"metrics_web_config_file: {e}") from None
    log = JobLog(args.log_format)
    check_kafka(config, progress=log.warning)  # BrokerCheckError: exit 2 with its cause
    log_file: Path = args.log_file or DEFAULT_LOG_FILE
    _stop_on_sigterm()
    log.info(f"{PROG}: {version_line()}")
    try:
        spark = session_for(config, log_file=log_file)  # Spark's own lines: to the log file
        run(
            config,
            once=args.once,
            duration_s=args.duration,
            spark=spark,
            progress=log.info,
            warn=log.warning,
        )
    except Exception as e:
        where = _log_failure(log_file, e)
        print(f"{PROG}: failed: {_first_line(e)}{where}", file=sys.stderr, flush=True)
        return 1
    return 0


def _stop_on_sigterm() -> None:
    """SIGTERM (Kubernetes, compose, systemd) stops the job as Ctrl-C does: a
    ``KeyboardInterrupt`` in the main thread (:func:`run`); a second one while the job
    stops is ignored (the supervisor's SIGKILL ends a stop that hangs)."""

    def interrupt(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def _first_line(error: BaseException) -> str:
    for line in str(error).splitlines():
        if line.strip():
            return line.strip()
    return type(error).__name__


def _log_failure(path: Path, error: BaseException) -> str:
    """The trace of ``error`` appended to ``path``; `` (trace in PATH)`` or ``""``."""
    import traceback

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(time.strftime("%Y-%m-%dT%H:%M:%SZ failed\n", time.gmtime()))
            f.write("".join(traceback.format_exception(error)))
    except OSError:
        return ""
    return f" (trace in {path})"


def main() -> None:
    sys.exit(cli_run(sys.argv[1:]))


if __name__ == "__main__":
    main()
