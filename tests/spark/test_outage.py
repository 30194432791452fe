"""A broker outage while the job runs (issue 15): the job keeps running, the first failed
check is a ``kafka: DOWN`` line naming the cause, ``rebalance_monitor_kafka_up`` goes to 0 and
``/-/ready`` to 503; when the broker is back, ``kafka: up again``, 1 and 200. A real broker
of its own, stopped and started again; the job in this process on the shared session."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from streaming import kafka_local
from streaming.config import load_config
from streaming.job import launch
from tests.conftest import free_ports

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _kafka_up(port: int) -> float | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("rebalance_monitor_kafka_up "):
                return float(line.split()[1])
    return None


def _ready(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_an_outage_is_a_line_and_a_metric_and_the_recovery_is_logged(
    spark: SparkSession, tmp_path: Path
) -> None:
    port, controller_port, metrics_port = free_ports(3)
    broker = kafka_local.BrokerConfig(
        port=port, controller_port=controller_port, folder=tmp_path / "kafka"
    )
    kafka_local.start(broker)
    config = load_config(
        environ={},
        overrides={
            "bootstrap_servers": broker.bootstrap_servers,
            "checkpoint_dir": str(tmp_path / "checkpoint"),
            "delta_path": str(tmp_path / "delta"),
            "metrics_port": metrics_port,
            "broker_watch_interval_s": 0.5,
            "starting_offsets": "latest",
        },
    )
    lines: list[str] = []
    job = launch(config, spark=spark, progress=lines.append)
    try:
        _wait(lambda: _kafka_up(metrics_port) == 1.0, "kafka_up 1")
        # idle (no records after "latest"): ready, the query waits for data
        _wait(lambda: _ready(metrics_port) == (200, "OK\n"), "/-/ready 200")
        kafka_local.stop(broker)
        _wait(lambda: any(x.startswith("kafka: DOWN: ") for x in lines), "the DOWN line")
        down = next(x for x in lines if x.startswith("kafka: DOWN: "))
        assert down == (
            f"kafka: DOWN: {broker.bootstrap_servers}: connection refused (the job keeps trying)"
        )
        assert _kafka_up(metrics_port) == 0.0
        assert _ready(metrics_port) == (503, "not ready: kafka: down\n")
        assert all(q.isActive for q in job.queries)  # the outage did not stop the job
        kafka_local.start(broker)
        _wait(lambda: any(x.startswith("kafka: up again after ") for x in lines), "recovery")
        _wait(lambda: _kafka_up(metrics_port) == 1.0, "kafka_up 1 again")
        assert _ready(metrics_port) == (200, "OK\n")
        assert all(q.isActive for q in job.queries)
    finally:
        try:
            job.stop()
        finally:
            kafka_local.stop(broker)
