"""Kill the job mid-stream, restart it from its checkpoint: the tables equal, row for row, those
of an uninterrupted run over the same backlog.

The interrupted run is the real CLI (``rebalance-monitor run --once``) in its own process,
with a small ``--max-offsets-per-trigger`` so the backlog takes several micro-batches; it is
killed with SIGKILL (no shutdown hook, no chance to finish a write) once a few batches are
in, then started again with the same arguments. The reference run is the same job,
uninterrupted, in the test session's Spark.

Both read a frozen copy of the backlog's ``__consumer_offsets`` records (``--offsets-topic``:
same partitions, keys, values and timestamps) and the membership topic. The live topic keeps
growing between the runs (the Spark sources' own consumer groups write to it), which would
move the micro-batch boundaries; with identical input both runs plan identical batches, so
every table must match row for row. (Reading the real ``__consumer_offsets`` is the
end-to-end test's business.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from streaming.config import load_config
from streaming.sinks.tables import TABLE_NAMES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.spark.backlog import Backlog

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]

MAX_OFFSETS = 100
KILL_AFTER = "[events] batch 2:"


def _freeze_offsets(backlog: Backlog) -> str:
    """Copy the backlog groups' ``__consumer_offsets`` records to a topic of their own."""
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic

    from streaming.codec.decode import decode_record

    copy = f"{backlog.prefix}.offsets-copy"
    source = [TopicPartition("__consumer_offsets", p) for p in range(50)]
    consumer = KafkaConsumer(bootstrap_servers=backlog.bootstrap_servers, enable_auto_commit=False)
    consumer.assign(source)
    consumer.seek_to_beginning(*source)
    ends = consumer.end_offsets(source)
    admin = KafkaAdminClient(bootstrap_servers=backlog.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(copy, num_partitions=50, replication_factor=1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=backlog.bootstrap_servers, acks="all")
    copied = 0
    try:
        while any(consumer.position(tp) < ends[tp] for tp in source):
            for tp, records in consumer.poll(timeout_ms=1000).items():
                for r in records:
                    if r.offset >= ends[tp]:
                        continue
                    record = decode_record(r.key, r.value)
                    group = getattr(record, "group_id", None) or getattr(
                        getattr(record, "key", None), "group_id", ""
                    )
                    if str(group).startswith(backlog.prefix):
                        producer.send(
                            copy, key=r.key, value=r.value, partition=tp.partition,
                            timestamp_ms=r.timestamp,
                        )  # fmt: skip
                        copied += 1
        producer.flush()
    finally:
        producer.close()
        consumer.close()
    assert copied > 100, f"only {copied} records of the backlog's groups"
    return copy


def _settings(backlog: Backlog, offsets_topic: str, work: Path) -> dict[str, Any]:
    return {
        "bootstrap_servers": backlog.bootstrap_servers,
        "offsets_topic": offsets_topic,
        "membership_topic": backlog.membership_topic,
        "checkpoint_dir": str(work / "checkpoint"),
        "delta_path": str(work / "delta"),
        "metrics_port": 0,
        "max_offsets_per_trigger": MAX_OFFSETS,
    }


def _command(settings: dict[str, Any]) -> list[str]:
    return [
        str(Path(sys.executable).with_name("rebalance-monitor")),
        "run",
        "--once",
        "--master", "local[2]",
        "--conf", "spark.driver.memory=1g",
        "--bootstrap-server", settings["bootstrap_servers"],
        "--membership-topic", settings["membership_topic"],
        "--offsets-topic", settings["offsets_topic"],
        "--checkpoint-dir", settings["checkpoint_dir"],
        "--delta-path", settings["delta_path"],
        "--metrics-port", "0",
        "--max-offsets-per-trigger", str(MAX_OFFSETS),
    ]  # fmt: skip


def _rows(spark: SparkSession, delta: Path) -> dict[str, list[str]]:
    """Table -> its rows as sorted canonical JSON."""
    out: dict[str, list[str]] = {}
    for table in TABLE_NAMES:
        rows = spark.read.format("delta").load(str(delta / table)).collect()
        out[table] = sorted(
            json.dumps(r.asDict(recursive=True), sort_keys=True, default=_plain) for r in rows
        )
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    return str(value)


def test_killed_and_restarted_job_equals_an_uninterrupted_run(
    spark: SparkSession, backlog: Backlog, tmp_path: Path
) -> None:
    from streaming.job import run

    frozen = _freeze_offsets(backlog)
    # the reference: one uninterrupted run
    reference = _settings(backlog, frozen, tmp_path / "reference")
    run(load_config(environ={}, overrides=reference), once=True, spark=spark, progress=print)

    # the same backlog, killed after a few batches ...
    interrupted = _settings(backlog, frozen, tmp_path / "interrupted")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.Popen(
        _command(interrupted),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
        text=True,
    )
    first: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 600
    for line in proc.stdout:
        first.append(line.rstrip())
        if line.startswith(KILL_AFTER) or time.monotonic() > deadline:
            break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert any(line.startswith(KILL_AFTER) for line in first), "\n".join(first[-40:])
    assert proc.returncode == -signal.SIGKILL

    # ... and restarted from its checkpoint
    again = subprocess.run(
        _command(interrupted),
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-4000:]
    resumed = [line for line in again.stdout.splitlines() if line.startswith("[events] batch ")]
    assert resumed and not resumed[0].startswith("[events] batch 0:"), "started from scratch"

    expected = _rows(spark, tmp_path / "reference" / "delta")
    actual = _rows(spark, tmp_path / "interrupted" / "delta")
    groups = {json.loads(r)["group_id"] for r in expected["rebalance_events"]}
    assert set(backlog.groups) <= groups, "the reference run missed groups of the backlog"
    assert expected["bad_records"], "the garbage record was not quarantined"
    for table in TABLE_NAMES:
        assert len(actual[table]) == len(expected[table]), table
        assert actual[table] == expected[table], table
