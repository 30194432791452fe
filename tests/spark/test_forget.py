"""Forgetting and filtering on the real job (real broker, Spark, RocksDB state, Delta, the
exporter over HTTP, the collector): a group the collector listed and then deleted with
DeleteGroups leaves the job's state (the tracked groups gauge counts the buckets' states) and
the exporter; a group idle for ``--group-retention`` of record time, measured by a later
record in its bucket, leaves them too (rule F3); and a group outside ``--group-filter`` never
reaches a table or a series. (The rules: ``tests/unit/streaming/tracking/test_forget.py``.)"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streaming.config import load_config
from streaming.tables import TABLE_NAMES
from tests.conftest import free_ports

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from streaming.kafka_local import BrokerInfo

pytestmark = [pytest.mark.spark, pytest.mark.integration]

TOPIC = "forget-test-topic"
MEMBERSHIP = "forget-test.membership"


def _samples(port: int) -> list[tuple[str, dict[str, str], float]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    return [
        (s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def _until(what: str, done: Callable[[], bool], timeout_s: float = 240.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if done():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def _join_commit_leave(bootstrap: str, group: str, topic: str = TOPIC) -> None:
    """A real member joins ``group`` (a generation), commits every partition of ``topic``
    and leaves."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=10_000,
        heartbeat_interval_ms=500,
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + 60
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(200)
    assert consumer.assignment(), f"{group} got no partitions"
    consumer.commit()
    consumer.close()


def test_a_deleted_group_leaves_the_state_and_the_exporter_and_a_filtered_one_never_comes(
    spark: SparkSession, kafka_broker: BrokerInfo, tmp_path: Path
) -> None:
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

    from streaming.job import launch

    bootstrap = kafka_broker.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics(
        [
            NewTopic(TOPIC, num_partitions=2, replication_factor=1),
            NewTopic(MEMBERSHIP, num_partitions=1, replication_factor=1),
        ]
    )
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(4):
        producer.send(TOPIC, value=b"x", partition=i % 2)
    producer.flush()
    producer.close()
    run_id = uuid.uuid4().hex[:8]
    kept, filtered = f"forget-{run_id}", f"outside-{run_id}"
    _join_commit_leave(bootstrap, kept)
    _join_commit_leave(bootstrap, filtered)
    # one snapshot of the real collector lists both groups (its own filter lets both pass):
    # a group the collector has seen kept its state forever before
    collect = [
        str(Path(sys.executable).with_name("rebalance-monitor")),
        "collect",
        "--bootstrap-server", bootstrap,
        "--topic", MEMBERSHIP,
        "--group-filter", f"(forget|outside)-{run_id}",
        "--once",
    ]  # fmt: skip
    subprocess.run(collect, check=True, timeout=120, capture_output=True)

    (port,) = free_ports(1)
    config = load_config(
        environ={},
        overrides={
            "bootstrap_servers": bootstrap,
            "membership_topic": MEMBERSHIP,
            "checkpoint_dir": str(tmp_path / "checkpoint"),
            "delta_path": str(tmp_path / "delta"),
            "metrics_port": port,
            "trigger_interval_s": 1.0,
            "group_filter": f"forget-{run_id}",
        },
    )

    def groups_in_exporter() -> set[str]:
        return {labels["group"] for _n, labels, _v in _samples(port) if "group" in labels}

    def tracked() -> float | None:
        values = [v for n, _l, v in _samples(port) if n == "rebalance_monitor_tracked_groups"]
        return values[0] if values else None

    lines: list[str] = []
    statuses: list[dict[str, Any]] = []

    def on_events(rows: list[dict[str, Any]]) -> None:
        statuses.extend(r for r in rows if r["kind"] == "group_status")

    job = launch(config, spark=spark, progress=lines.append, on_events=on_events)
    try:
        _until(f"{kept} in the exporter", lambda: kept in groups_in_exporter())
        _until("one tracked group", lambda: tracked() == 1)  # the one the filter lets through
        # the collector's snapshot reached the group's state (what kept it forever before)
        assert any(
            r["group_id"] == kept and r["collector_seen_ts_ms"] is not None for r in statuses
        )
        generation = [
            v
            for n, labels, v in _samples(port)
            if n == "kafka_consumergroup_generation" and labels["group"] == kept
        ]
        assert len(generation) == 1 and generation[0] >= 1  # kafka-python may need two

        admin.delete_groups([kept])  # offset tombstones and the group tombstone
        _until(f"{kept} gone from the exporter", lambda: kept not in groups_in_exporter())
        _until("no tracked group", lambda: tracked() == 0)
        assert filtered not in groups_in_exporter()
    finally:
        job.stop()
        admin.close()

    tables: dict[str, list[Any]] = {
        table: spark.read.format("delta").load(str(tmp_path / "delta" / table)).collect()
        for table in TABLE_NAMES
    }
    written = {row.asDict().get("group_id") for rows in tables.values() for row in rows}
    assert kept in written  # its rebalance and commits went to the tables
    assert filtered not in written  # the filter held for every table
    assert {r["group_id"] for r in tables["rebalance_events"]} == {kept}


def _same_bucket(spark: SparkSession, group: str, prefix: str) -> str:
    """A group id starting with ``prefix`` whose state lives in ``group``'s bucket (the
    stateful step's ``xxhash64(group id) mod BUCKETS``, computed by Spark itself)."""
    from pyspark.sql import functions as F

    from streaming.spark.buckets import BUCKETS

    names = [group] + [f"{prefix}-{i}" for i in range(20 * BUCKETS)]
    frame = spark.createDataFrame([(n,) for n in names], "g string")
    buckets = {
        r.g: r.b
        for r in frame.select("g", F.pmod(F.xxhash64("g"), F.lit(BUCKETS)).alias("b")).collect()
    }
    return next(n for n in names[1:] if buckets[n] == buckets[group])


def test_an_idle_group_is_forgotten_when_record_time_in_its_bucket_passes_the_retention(
    spark: SparkSession, kafka_broker: BrokerInfo, tmp_path: Path
) -> None:
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

    from streaming.job import launch

    bootstrap = kafka_broker.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    run_id = uuid.uuid4().hex[:8]
    topic, membership = f"idle-test-{run_id}", f"idle-test-{run_id}.membership"
    admin.create_topics(
        [
            NewTopic(topic, num_partitions=2, replication_factor=1),
            NewTopic(membership, num_partitions=1, replication_factor=1),
        ]
    )
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(4):
        producer.send(topic, value=b"x", partition=i % 2)
    producer.flush()
    producer.close()
    idle = f"idle-{run_id}"
    waker = _same_bucket(spark, idle, f"waker-{run_id}")
    retention_s = 20.0
    _join_commit_leave(bootstrap, idle, topic)
    idle_last_s = time.time()  # its last record: the member's leave, written before this

    (port,) = free_ports(1)
    config = load_config(
        environ={},
        overrides={
            "bootstrap_servers": bootstrap,
            "membership_topic": membership,  # no collector writes it: no sightings
            "checkpoint_dir": str(tmp_path / "checkpoint"),
            "delta_path": str(tmp_path / "delta"),
            "metrics_port": port,
            "trigger_interval_s": 1.0,
            "group_filter": f"(idle|waker)-{run_id}.*",
            "group_retention_s": retention_s,
        },
    )

    def groups_in_exporter() -> set[str]:
        return {labels["group"] for _n, labels, _v in _samples(port) if "group" in labels}

    def tracked() -> float | None:
        values = [v for n, _l, v in _samples(port) if n == "rebalance_monitor_tracked_groups"]
        return values[0] if values else None

    deleted: list[dict[str, Any]] = []

    def on_events(rows: list[dict[str, Any]]) -> None:
        deleted.extend(r for r in rows if r["kind"] == "group_deleted")

    job = launch(config, spark=spark, progress=lambda _line: None, on_events=on_events)
    try:
        _until(f"{idle} in the exporter", lambda: idle in groups_in_exporter())
        assert tracked() == 1
        # wall time is record time here: the coordinator stamps its records when it writes them
        time.sleep(max(0.0, idle_last_s + retention_s + 1.0 - time.time()))
        assert idle in groups_in_exporter()  # no record in its bucket since: nothing forgets it
        _join_commit_leave(
            bootstrap, waker, topic
        )  # a record in the same bucket, past the retention
        _until(f"{idle} gone from the exporter", lambda: idle not in groups_in_exporter())
        _until(f"{waker} in the exporter", lambda: waker in groups_in_exporter())
        assert tracked() == 1  # the waker's state alone
    finally:
        job.stop()

    forgotten = [r for r in deleted if r["group_id"] == idle]
    assert [r["reason"] for r in forgotten] == ["forgotten"]
    assert forgotten[0]["event_ts_ms"] >= (idle_last_s + retention_s) * 1000
    assert not [r for r in deleted if r["group_id"] == waker]
    events = spark.read.format("delta").load(str(tmp_path / "delta" / "rebalance_events"))
    # forgetting drops state and series, never history
    assert {r.group_id for r in events.select("group_id").collect()} == {idle, waker}
