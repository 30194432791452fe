"""The whole job against the real broker: a real group joins, grows and shrinks; one run
with ``--once`` (availableNow) writes its rebalances to Delta and quarantines garbage."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from streaming.config import load_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from streaming.kafka_local import BrokerInfo

pytestmark = [pytest.mark.spark, pytest.mark.integration]

GROUP = "spark-job-test-group"
COMMITTER = "spark-job-test-committer"
TOPIC = "spark-job-test-topic"
MEMBERSHIP = "spark-job-test.membership"
GARBAGE = b"\x00garbage, not JSON"


def _poll_until(consumers: list[Any], done: Any, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(200)
        if done():
            return
    raise AssertionError("the group did not reach the expected assignment in time")


@pytest.fixture(scope="module")
def group_history(kafka_broker: BrokerInfo) -> list[set[str]]:
    """A joins, B joins, B leaves, A leaves: the member ids of each generation."""
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import NewTopic

    bootstrap = kafka_broker.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics(
        [
            NewTopic(TOPIC, num_partitions=4, replication_factor=1),
            NewTopic(MEMBERSHIP, num_partitions=1, replication_factor=1),
        ]
    )
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.send(MEMBERSHIP, key=b"local", value=GARBAGE)
    producer.flush()
    producer.close()

    def consumer() -> Any:
        c = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=GROUP,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=10_000,
            heartbeat_interval_ms=500,
        )
        c.subscribe([TOPIC])
        return c

    a = consumer()
    _poll_until([a], lambda: len(a.assignment()) == 4)
    a.commit()
    generations = [{a._coordinator._generation.member_id}]
    b = consumer()
    _poll_until([a, b], lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2)
    generations.append({a._coordinator._generation.member_id, b._coordinator._generation.member_id})
    b.close()
    _poll_until([a], lambda: len(a.assignment()) == 4)
    a.commit()
    generations.append({a._coordinator._generation.member_id})
    a.close()
    return generations


def test_the_job_writes_the_groups_rebalances(
    spark: SparkSession,
    kafka_broker: BrokerInfo,
    group_history: list[set[str]],
    tmp_path: Path,
) -> None:
    from streaming.job import run

    config = load_config(
        environ={},
        overrides={
            "bootstrap_servers": kafka_broker.bootstrap_servers,
            "membership_topic": MEMBERSHIP,
            "checkpoint_dir": str(tmp_path / "checkpoint"),
            "delta_path": str(tmp_path / "delta"),
            "metrics_port": 0,
        },
    )
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        print(line, flush=True)

    stats = run(config, once=True, spark=spark, progress=progress)
    assert any(line.startswith("[records] batch 0") for line in lines)
    assert any(line.startswith("[events] batch 0") for line in lines)
    assert stats.bad_records >= 1

    rebalances = (
        spark.read.format("delta")
        .load(str(tmp_path / "delta" / "rebalance_events"))
        .where(f"group_id = '{GROUP}'")
        .orderBy("generation_after")
        .collect()
    )
    seen = [
        (r.generation_after, {m.member_id for m in r.members_after})
        for r in rebalances
        if r.members_after
    ]
    # The membership changes, in generation order, are the ones the clients reported.
    # kafka-python sometimes needs an extra generation for the same members (its leader
    # assigns nothing while its metadata lacks the topic, then rejoins), so consecutive
    # generations with identical members are one change.
    generations = [gen for gen, _members in seen]
    assert generations == sorted(set(generations)) and generations[0] >= 1
    changes = [
        members for i, (_g, members) in enumerate(seen) if i == 0 or members != seen[i - 1][1]
    ]
    assert changes[:3] == group_history
    assert rebalances[0].cluster == "local"

    bad = (
        spark.read.format("delta")
        .load(str(tmp_path / "delta" / "bad_records"))
        .where(f"topic = '{MEMBERSHIP}'")
        .collect()
    )
    assert [bytes(r.value) for r in bad] == [GARBAGE]
    assert bad[0].error_type == "MembershipEventError"

    # a second run on the same checkpoint goes on where the first stopped: the group's
    # rebalances are not written twice (the Spark source's own consumer groups do add
    # records to __consumer_offsets in between, so the run is not empty)
    again = run(config, once=True, spark=spark, progress=progress)
    assert again.bad_records == 0
    assert spark.read.format("delta").load(str(tmp_path / "delta" / "rebalance_events")).where(
        f"group_id = '{GROUP}'"
    ).count() == len(rebalances)


def test_offset_commits_latest_keeps_the_last_of_every_commit_per_partition(
    spark: SparkSession,
    kafka_broker: BrokerInfo,
    group_history: list[set[str]],
    tmp_path: Path,
) -> None:
    """``offset_commits_history``: ``every`` (the commit lane, a second read of the source)
    writes each commit record; ``latest`` (the stateful step's rows) writes, per partition,
    that same last record of the micro-batch, field for field."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    from streaming.job import run

    committer = KafkaConsumer(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=COMMITTER,
        enable_auto_commit=False,
    )
    partitions = [TopicPartition(TOPIC, p) for p in range(4)]
    committer.assign(partitions)
    for round_ in range(3):  # three commits of each partition, in one micro-batch
        offsets = {tp: 10 * round_ + tp.partition for tp in partitions}
        committer.commit({tp: OffsetAndMetadata(o, f"r{round_}", -1) for tp, o in offsets.items()})
    committer.close()
    tables: dict[str, list[dict[str, Any]]] = {}
    for history in ("latest", "every"):
        config = load_config(
            environ={},
            overrides={
                "bootstrap_servers": kafka_broker.bootstrap_servers,
                "membership_topic": MEMBERSHIP,
                "checkpoint_dir": str(tmp_path / history / "checkpoint"),
                "delta_path": str(tmp_path / history / "delta"),
                "metrics_port": 0,
                "offset_commits_history": history,
            },
        )
        run(config, once=True, spark=spark, progress=lambda _line: None)
        rows = spark.read.format("delta").load(str(tmp_path / history / "delta" / "offset_commits"))
        tables[history] = [r.asDict() for r in rows.drop("event_time", "date").collect()]
    latest, every = tables["latest"], tables["every"]
    ours = sorted((r["partition"], r["offset"]) for r in latest if r["group_id"] == COMMITTER)
    assert ours == [(p, 20 + p) for p in range(4)]
    assert len([r for r in every if r["group_id"] == COMMITTER]) == 12
    every_by_id = {r["event_id"]: r for r in every}
    read_up_to: dict[int, int] = {}  # per source partition, the latest run's last offset
    for r in latest:
        assert every_by_id.get(r["event_id"]) == r  # the same record, field for field
        read_up_to[r["source_partition"]] = max(
            read_up_to.get(r["source_partition"], -1), r["source_offset"]
        )
    last = {(r["group_id"], r["topic"], r["partition"]): r["source_offset"] for r in latest}
    for r in every:  # nothing later of a partition, within what the latest run read
        if r["source_offset"] <= read_up_to.get(r["source_partition"], -1):
            assert r["source_offset"] <= last[(r["group_id"], r["topic"], r["partition"])]


def test_the_sessions_own_settings_win_over_the_jobs_defaults(
    spark: SparkSession, tmp_path: Path
) -> None:
    """``JOB_CONF`` fills only what the session does not set (``spark-submit --conf`` puts
    it there); the job's ``spark_conf`` and ``REQUIRED_CONF`` are applied over it."""
    from streaming.job import JOB_CONF, _runtime_conf

    key, other = (
        "spark.databricks.delta.snapshotPartitions",
        "spark.sql.execution.arrow.maxBytesPerBatch",
    )
    config = load_config(environ={}, overrides={"checkpoint_dir": str(tmp_path)})
    before = {k: spark.conf.get(k, None) for k in (key, other)}
    try:
        spark.conf.set(key, "7")
        spark.conf.unset(other)
        _runtime_conf(spark, config)
        assert spark.conf.get(key) == "7"  # the session's value stays
        assert spark.conf.get(other) == JOB_CONF[other]  # the default fills the gap
        mine = load_config(environ={}, overrides={"spark_conf": {key: "5"}})
        _runtime_conf(spark, mine)
        assert spark.conf.get(key) == "5"  # the job's own --conf wins over both
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
