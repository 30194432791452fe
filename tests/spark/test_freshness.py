"""Freshness of the job's inputs and its own pace, on the real broker, collector, Spark, Delta
and Prometheus.

1. The collector stops under a running job whose group keeps producing and committing: its
   commits pass the last end offsets the collector reported. Lag must become unknown
   (``partition_lag`` rows with ``lag_seconds_method = unknown``, no lag and no status; the
   lag series leave the exporter), never 0 / OK, and the stale-input alerts' expressions
   (as written in the rules file) must fire on a real Prometheus scraping the job.
2. The job reads a backlog of ``__consumer_offsets`` a few records per micro-batch: its own
   lag (records, seconds) shows, then shrinks to 0 once it has caught up; rows written per
   table count what Delta appended.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streaming.config import load_config
from streaming.job import RunningJob, launch
from tests.conftest import free_ports
from tests.dashboards import promql
from tests.dashboards.promql import PrometheusServer
from tests.spark.backlog import collector

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from streaming.kafka_local import BrokerInfo

pytestmark = [
    pytest.mark.spark,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.timeout(1200),
]

CLUSTER = "fresh"
MAX_AGE_S = 5.0  # the job's end_offsets_max_age_s here (60 s by default)

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _series(samples: Samples, name: str, **labels: str) -> dict[frozenset[Any], float]:
    want = set(labels.items())
    return {lbl: v for (n, lbl), v in samples.items() if n == name and want <= set(lbl)}


def _until(
    condition: Callable[[], Any], what: str, *, timeout_s: float, step: Callable[[], None]
) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        got = condition()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        step()


def _alert_expr(name: str) -> str:
    (rule,) = [r for _f, r in promql.load_rules() if r.get("alert") == name]
    return str(rule["expr"])


def _topics(bootstrap: str, *names: str) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(n, num_partitions=1, replication_factor=1) for n in names])
    finally:
        admin.close()


def _end_offsets(bootstrap: str, topic: str) -> dict[int, int] | None:
    """The topic's end offsets; None when it does not exist (yet)."""
    from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        (described,) = admin.describe_topics([topic])
    finally:
        admin.close()
    if described["error_code"] == 3:  # UNKNOWN_TOPIC_OR_PARTITION: no group ever committed
        return None
    partitions = [TopicPartition(topic, p["partition_index"]) for p in described["partitions"]]
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        return {tp.partition: o for tp, o in consumer.end_offsets(partitions).items()}
    finally:
        consumer.close()


class Workload:
    """A producer writing to ``topic`` and a group consuming and committing it."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        from kafka import KafkaConsumer, KafkaProducer

        self.topic = topic
        self.producer = KafkaProducer(bootstrap_servers=bootstrap)
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=10_000,
            heartbeat_interval_ms=500,
        )
        self.consumer.subscribe([topic])

    def step(self) -> None:
        """Produce a few records, consume what is there, commit; about half a second."""
        for i in range(5):
            self.producer.send(self.topic, value=b"x%d" % i)
        self.producer.flush()
        self.consumer.poll(300)
        if self.consumer.assignment():
            self.consumer.commit()
        time.sleep(0.2)

    def close(self) -> None:
        self.consumer.close()
        self.producer.close()


@pytest.fixture
def prefix() -> str:
    import secrets

    return f"fresh-{secrets.token_hex(3)}"


def _job(
    spark: SparkSession, tmp_path: Path, bootstrap: str, **overrides: Any
) -> tuple[RunningJob, int]:
    (metrics_port,) = free_ports(1)
    config = load_config(
        environ={},
        overrides={
            "bootstrap_servers": bootstrap,
            "cluster": CLUSTER,
            "checkpoint_dir": str(tmp_path / "checkpoint"),
            "delta_path": str(tmp_path / "delta"),
            "metrics_port": metrics_port,
            "trigger_interval_s": 1.0,
            "broker_watch_interval_s": 0,
            "partition_lag_interval_s": 0,  # every measurement in the table: the stale ones too
            **overrides,
        },
    )
    return launch(config, spark=spark, progress=print), metrics_port  # shown on a failure


@pytest.fixture
def running(
    spark: SparkSession, kafka_broker: BrokerInfo, tmp_path: Path, prefix: str
) -> Iterator[tuple[RunningJob, int, Workload, Path]]:
    bootstrap = kafka_broker.bootstrap_servers
    membership, topic = f"{prefix}.membership", f"{prefix}-events"
    _topics(bootstrap, membership, topic)
    job, port = _job(
        spark,
        tmp_path,
        bootstrap,
        membership_topic=membership,
        starting_offsets="latest",
        end_offsets_max_age_s=MAX_AGE_S,
    )
    work = Workload(bootstrap, topic, f"{prefix}-group")
    try:
        yield job, port, work, tmp_path
    finally:
        work.close()
        job.stop()


def test_lag_becomes_unknown_when_the_collector_stops_and_the_stale_alerts_fire(
    spark: SparkSession,
    kafka_broker: BrokerInfo,
    running: tuple[RunningJob, int, Workload, Path],
    prefix: str,
) -> None:
    job, port, work, tmp_path = running
    group = f"{prefix}-group"
    where = {"cluster": CLUSTER, "group": group}
    lag = "kafka_consumergroup_lag"
    log = tmp_path / "collector.log"
    with PrometheusServer(tmp_path / "prometheus", f"127.0.0.1:{port}") as prometheus:
        membership_stale = _alert_expr("RebalanceMonitorMembershipSnapshotsStale")
        ends_stale = _alert_expr("RebalanceMonitorEndOffsetsStale")
        with collector(
            kafka_broker.bootstrap_servers, f"{prefix}.membership", rf"{prefix}-.*", log
        ):
            # the collector runs: lag is measured, with a status, and the inputs are fresh
            _until(
                lambda: (
                    _series(_scrape(port), lag, **where)
                    and _series(_scrape(port), "kafka_consumergroup_partition_status", **where)
                ),
                "the group's lag and status series",
                timeout_s=300,
                step=work.step,
            )
            samples = _scrape(port)
            ages = {
                name: _series(samples, name, cluster=CLUSTER)
                for name in (
                    "rebalance_monitor_membership_snapshot_age_seconds",
                    "rebalance_monitor_end_offsets_age_seconds",
                )
            }
            assert all(len(v) == 1 and next(iter(v.values())) < 10 for v in ages.values()), ages
            assert prometheus.query(ends_stale) == [] and prometheus.query(membership_stale) == []
        stopped_ms = time.time() * 1000
        # the collector is stopped (SIGTERM to its process group); the group goes on
        # producing and committing past the last end offsets it reported
        _until(
            lambda: not _series(_scrape(port), lag, **where),
            "the lag series to go (unknown, not 0)",
            timeout_s=300,
            step=work.step,
        )
        samples = _scrape(port)
        for name in ("kafka_consumergroup_lag_seconds", "kafka_consumergroup_partition_status",
                     "kafka_consumergroup_status"):  # fmt: skip
            assert _series(samples, name, **where) == {}, name
        (age,) = _series(
            samples, "rebalance_monitor_end_offsets_age_seconds", cluster=CLUSTER
        ).values()
        assert age > MAX_AGE_S
        # the alerts' expressions, as the rules file has them, fire on the real Prometheus
        for expr in (ends_stale, membership_stale):
            fired = _until(
                lambda expr=expr: prometheus.query(expr),
                f"{expr!r} to return a series",
                timeout_s=300,
                step=work.step,
            )
            assert [r["metric"]["cluster"] for r in fired] == [CLUSTER]
    # the partition_lag table: after the stop, the commits' rows are unknown, never 0 / OK
    job.await_backlog()
    rows = (
        spark.read.format("delta")
        .load(str(tmp_path / "delta" / "partition_lag"))
        .where(f"group_id = '{group}' AND trigger = 'commit'")
        .collect()
    )
    late = [r for r in rows if r.measured_ts_ms > r.end_offset_ts_ms + MAX_AGE_S * 1000]
    assert late, "no commit was measured against stale end offsets"
    assert all(r.measured_ts_ms > stopped_ms - 2_000 for r in late), [
        (r.partition, r.measured_ts_ms - stopped_ms, r.end_offset_ts_ms - stopped_ms)
        for r in late
        if r.measured_ts_ms <= stopped_ms - 2_000
    ]
    for r in late:
        assert (r.lag_records, r.lag_seconds, r.lag_seconds_method) == (None, None, "unknown")
        assert (r.status, r.status_rule) == (None, None)
    fresh = [r for r in rows if r not in late]
    assert fresh and all(r.lag_seconds_method != "unknown" and r.status for r in fresh)


def test_the_jobs_own_lag_shows_while_it_reads_a_backlog_and_shrinks_to_zero(
    spark: SparkSession, kafka_broker: BrokerInfo, tmp_path: Path, prefix: str
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    membership, topic = f"{prefix}.membership", f"{prefix}-events"
    _topics(bootstrap, membership, topic)
    start = _end_offsets(bootstrap, "__consumer_offsets")  # other tests' records before
    work = Workload(bootstrap, topic, f"{prefix}-group")
    try:
        for _ in range(40):  # a backlog of commits in __consumer_offsets
            work.step()
    finally:
        work.close()
    # the backlog a few records per micro-batch: behind at first
    starting = (
        "earliest"
        if start is None
        else json.dumps(
            {"__consumer_offsets": {str(p): o for p, o in start.items()}, membership: {"0": -2}}
        )
    )
    job, port = _job(
        spark,
        tmp_path,
        bootstrap,
        membership_topic=membership,
        max_offsets_per_trigger=20,
        starting_offsets=starting,
    )
    try:
        records = "rebalance_monitor_source_lag"
        seconds = "rebalance_monitor_source_lag_seconds"

        def behind() -> Samples:
            # the first report of a partition's lag is a lower bound of 0 s (one latest
            # offset known); the next ones date it from the history of latest offsets
            samples = _scrape(port)
            return {
                k: v
                for k, v in _series(samples, records).items()
                if v > 0 and samples.get((seconds, k), 0) > 0
            }

        _until(behind, "the job's lag behind a source partition", timeout_s=300,
               step=lambda: time.sleep(0.5))  # fmt: skip
        samples = _scrape(port)
        assert {dict(k)["topic"] for k in _series(samples, records)} >= {"__consumer_offsets"}
        assert samples[("rebalance_monitor_trigger_interval_seconds", frozenset())] == 1.0
        job.await_backlog()
        caught_up = _until(
            lambda: (
                (s := _scrape(port)) and all(v == 0 for v in _series(s, records).values()) and s
            ),
            "the job to catch up",
            timeout_s=300,
            step=lambda: time.sleep(0.5),
        )
        assert all(v == 0 for v in _series(caught_up, seconds).values())
        written = _series(caught_up, "rebalance_monitor_rows_written_total")
        table = spark.read.format("delta").load(str(tmp_path / "delta" / "offset_commits")).count()
        assert written[frozenset({("table", "offset_commits")})] == table > 0
        # every series once: a histogram's by its _count sample
        served = caught_up[("rebalance_monitor_exporter_series", frozenset())]
        assert served == sum(
            1 for name, _labels in caught_up if not name.endswith(("_bucket", "_sum", "_created"))
        )
    finally:
        job.stop()
