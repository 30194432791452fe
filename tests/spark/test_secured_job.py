"""The job against the secured broker (SASL_SSL, SCRAM-SHA-512 over TLS, the ``secured_broker``
fixture): ``run --once`` with the Java client settings from the environment reads a group's
commits into the tables, and the password is nowhere in its output, the checkpoint or the
tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from streaming.kafka_check import kafka_python_options
from streaming.kafka_local import BrokerInfo

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
GROUP = "secured-group"


def _commit_offsets(info: BrokerInfo) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    options = kafka_python_options(info.kafka_options).options
    producer = KafkaProducer(bootstrap_servers=info.bootstrap_servers, **options)
    for i in range(5):
        producer.send("secured-orders", f"order-{i}".encode())
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        "secured-orders",
        group_id=GROUP,
        bootstrap_servers=info.bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=10_000,
        **options,
    )
    try:
        assert len(list(consumer)) == 5
        consumer.commit()
    finally:
        consumer.close()


def test_the_job_reads_the_secured_broker_and_keeps_the_password_to_itself(
    secured_broker: BrokerInfo, spark: SparkSession, tmp_path: Path
) -> None:
    _commit_offsets(secured_broker)
    jaas = secured_broker.kafka_options["sasl.jaas.config"]
    password = jaas.split('password="')[1].split('"')[0]
    env = {
        **os.environ,
        "REBALANCE_MONITOR_KAFKA_OPTIONS": json.dumps(dict(secured_broker.kafka_options)),
    }
    proc = subprocess.run(
        [
            sys.executable, "-m", "streaming.cli", "run", "--once",
            "--master", "local[1]", "--conf", "spark.driver.memory=1g",
            "--bootstrap-server", secured_broker.bootstrap_servers,
            "--checkpoint-dir", str(tmp_path / "checkpoint"),
            "--delta-path", str(tmp_path / "delta"),
            "--metrics-port", "0", "--cluster", "secured",
            "--log-file", str(tmp_path / "run.log"),
        ],
        capture_output=True, text=True, timeout=900, cwd=REPO, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert password not in proc.stdout + proc.stderr
    assert password not in (tmp_path / "run.log").read_text(errors="replace")  # Spark's log
    commits = (
        spark.read.format("delta")
        .load(str(tmp_path / "delta" / "offset_commits"))
        .filter(f"group_id = '{GROUP}'")
        .collect()
    )
    assert {(r["topic"], r["offset"]) for r in commits} == {("secured-orders", 5)}
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert password.encode() not in path.read_bytes(), path
