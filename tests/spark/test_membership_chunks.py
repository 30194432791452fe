"""The job reading the collector's chunked ``topics`` and ``end_offsets`` events (real broker,
Spark, Delta): groups commit on the real broker, the collector's events of two polls are
published in chunks of 1 KiB (a group spans all of them), and the job's ``partition_lag``
rows measure each committed partition against the end offset its own chunk gave, at both
polls: every chunk reached the groups it names, and a chunk of the second, partial poll
repeated only the partitions of the topics it covers, not those another chunk moved."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from streaming.config import load_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from streaming.kafka_local import BrokerInfo

pytestmark = [
    pytest.mark.spark,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.timeout(600),
]

PARTITIONS = 4
COMMITTED = 5


def _commit(bootstrap: str, group: str, partitions: list[tuple[str, int]]) -> None:
    """``group`` commits offset :data:`COMMITTED` on ``partitions`` (no membership)."""
    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        tps = [TopicPartition(t, p) for t, p in partitions]
        consumer.assign(tps)
        consumer.commit({tp: OffsetAndMetadata(COMMITTED, "", -1) for tp in tps})
    finally:
        consumer.close()


def _answers(
    ts: int, topics: list[str], consumed: dict[str, list[tuple[str, int]]], ends: dict[Any, int]
) -> Any:
    from streaming.collector import AdminAnswers

    return AdminAnswers(
        snapshot_ts_ms=ts,
        cluster={"cluster_id": "c1", "controller_id": 1, "brokers": []},
        groups=[{"group_id": g, "group_state": "Empty", "group_type": "classic"} for g in consumed],
        committed={g: {tp: (COMMITTED, "", -1) for tp in tps} for g, tps in consumed.items()},
        topics=[
            {
                "name": t,
                "error_code": 0,
                "partitions": [
                    {"partition_index": p, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}
                    for p in range(PARTITIONS)
                ],
            }
            for t in topics
        ],
        end_offsets=ends,
        end_offsets_ts_ms=ts + 10,
    )


def test_the_job_measures_each_partition_against_its_own_chunk(
    spark: SparkSession, kafka_broker: BrokerInfo, tmp_path: Path
) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    from streaming.collector import Collector, CollectorConfig
    from streaming.collector.changes import Changes
    from streaming.job import run

    bootstrap = kafka_broker.bootstrap_servers
    prefix = f"chunks-{uuid.uuid4().hex[:6]}"
    membership = f"{prefix}.membership"
    topics = [f"{prefix}-t{i:02d}" for i in range(24)]
    consumed = {
        f"{prefix}-g{i:02d}": [(t, p) for p in range(PARTITIONS)] for i, t in enumerate(topics)
    }
    wide = f"{prefix}-wide"
    consumed[wide] = [(t, 0) for t in topics]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics(
            [NewTopic(t, PARTITIONS, 1) for t in topics] + [NewTopic(membership, 1, 1)]
        )
    finally:
        admin.close()
    for group, tps in consumed.items():
        _commit(bootstrap, group, tps)

    # three polls after the commits (record time): all end offsets, twice (the second is
    # too soon for changes), then those of the last six topics moved (the last chunk's, as
    # changes), the others not
    ts1 = int(time.time() * 1000) + 1_000
    ts_mid = ts1 + 15_000
    ts2 = ts1 + 30_000
    first = {(t, p): 100 + 10 * i + p for i, t in enumerate(topics) for p in range(PARTITIONS)}
    second = {tp: o + (50 if tp[0] in topics[-6:] else 0) for tp, o in first.items()}
    changes = Changes(
        cluster="local", heartbeat_interval_ms=60_000, full_interval_ms=600_000, chunk_bytes=1024
    )
    events = changes.events(_answers(ts1, topics, consumed, first), snapshot_id="p1")
    events += changes.events(_answers(ts_mid, topics, consumed, first), snapshot_id="p1b")
    events += changes.events(_answers(ts2, topics, consumed, second), snapshot_id="p2")
    ends = [
        e.value for e in events if e.value is not None and e.value["event_type"] == "end_offsets"
    ]
    assert {e["snapshot_id"] for e in ends if e["chunks"] >= 2} == {"p1", "p1b", "p2"}
    assert all(wide in e["group_ids"] for e in ends)
    moved = [e for e in ends if e["snapshot_id"] == "p2" and e["topics"]]
    assert moved and all(e["chunk"] > 0 for e in moved)  # another chunk comes first
    assert all(t["moved_by"] and not t["partitions"] for e in moved for t in e["topics"])
    collector = Collector(CollectorConfig(bootstrap_servers=bootstrap, topic=membership))
    try:
        assert collector.publish(events) == len(events)
    finally:
        collector.close()

    config = load_config(
        environ={},
        overrides={
            "bootstrap_servers": bootstrap,
            "membership_topic": membership,
            "checkpoint_dir": str(tmp_path / "checkpoint"),
            "delta_path": str(tmp_path / "delta"),
            "metrics_port": 0,
            "group_filter": f"{prefix}-.*",
            "partition_lag_interval_s": 0,  # every measurement in the table
            "end_offsets_max_age_s": 3600.0,
        },
    )
    run(config, once=True, spark=spark, progress=print)

    rows = (
        spark.read.format("delta")
        .load(str(tmp_path / "delta" / "partition_lag"))
        .where(f"group_id like '{prefix}-%' and trigger = 'snapshot'")
        .collect()
    )
    got = {
        (r.group_id, r.topic, r.partition, r.measured_ts_ms, r.end_offset, r.committed_offset)
        for r in rows
    }
    want = {
        (g, t, p, ts + 10, offsets[(t, p)], COMMITTED)
        for g, tps in consumed.items()
        for t, p in tps
        for ts, offsets in ((ts1, first), (ts_mid, first), (ts2, second))
    }
    assert got == want
