"""The job against the secured broker (SASL_SSL, SCRAM-SHA-512 over TLS, the ``secured_broker``
fixture): ``run`` with the Java client settings from the environment and the Spark UI on reads a
group's commits into the tables, and the password is nowhere in its output, the Spark UI (its
environment, its SQL plans, its streaming pages, read while the job runs), the checkpoint or
the tables."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from streaming.job_log import message_of
from streaming.kafka_check import kafka_python_options
from streaming.kafka_local import BrokerInfo
from tests.conftest import free_ports

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


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        body: bytes = response.read()
    return body.decode("utf-8", errors="replace")


def _spark_ui_pages(port: int) -> dict[str, str]:
    """What the job's Spark UI shows: the environment (REST API and page), the SQL
    executions with their plans, the structured streaming pages."""
    base = f"http://127.0.0.1:{port}"
    apps = json.loads(_get(f"{base}/api/v1/applications"))
    app = apps[0]["id"]
    api = f"{base}/api/v1/applications/{app}"
    return {
        "environment (API)": _get(f"{api}/environment"),
        "environment (page)": _get(f"{base}/environment/"),
        "SQL (API, plans)": _get(f"{api}/sql?details=true&planDescription=true&length=1000"),
        "SQL (page)": _get(f"{base}/SQL/"),
        "streaming (page)": _get(f"{base}/StreamingQuery/"),
    }


def test_the_job_reads_the_secured_broker_and_keeps_the_password_to_itself(
    secured_broker: BrokerInfo, spark: SparkSession, tmp_path: Path
) -> None:
    _commit_offsets(secured_broker)
    jaas = secured_broker.kafka_options["sasl.jaas.config"]
    password = jaas.split('password="')[1].split('"')[0]
    env = {
        **os.environ,
        "REBALANCE_MONITOR_KAFKA_OPTIONS": json.dumps(dict(secured_broker.kafka_options)),
        "PYTHONUNBUFFERED": "1",
    }
    (ui_port,) = free_ports(1)
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "streaming.cli", "run", "--duration", "900",
            "--master", "local[1]", "--conf", "spark.driver.memory=1g",
            "--conf", "spark.ui.enabled=true", "--conf", f"spark.ui.port={ui_port}",
            "--bootstrap-server", secured_broker.bootstrap_servers,
            "--checkpoint-dir", str(tmp_path / "checkpoint"),
            "--delta-path", str(tmp_path / "delta"),
            "--log-file", str(tmp_path / "run.log"),
            "--metrics-port", "0", "--cluster", "secured",
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env,
    )  # fmt: skip
    stdout: list[str] = []
    stderr: list[str] = []
    readers = [
        threading.Thread(target=lambda: stdout.extend(proc.stdout or ()), daemon=True),
        threading.Thread(target=lambda: stderr.extend(proc.stderr or ()), daemon=True),
    ]
    for reader in readers:
        reader.start()
    try:
        # the first micro-batch (the group's commits) is in the tables: the UI has its plans
        deadline = time.monotonic() + 600
        while not any(message_of(line).startswith("[events] batch 0:") for line in stdout):
            assert proc.poll() is None, "".join(stdout + stderr)[-3000:]
            assert time.monotonic() < deadline, "".join(stdout + stderr)[-3000:]
            time.sleep(0.5)
        pages = _spark_ui_pages(ui_port)
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C: the job stops and exits 0
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for reader in readers:
            reader.join(timeout=30)
    assert proc.returncode == 0, "".join(stderr)[-3000:]
    assert password not in "".join(stdout + stderr)
    assert password not in (tmp_path / "run.log").read_text(errors="replace")  # Spark's log
    # the UI showed the job (its settings, the Kafka source's plan), never the password
    assert '"sparkProperties"' in pages["environment (API)"]
    assert "spark.ui.port" in pages["environment (page)"]
    assert "kafka" in pages["SQL (API, plans)"].lower()
    for name, page in pages.items():
        assert password not in page, f"the password is in the Spark UI's {name}"
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
