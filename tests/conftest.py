"""Shared fixtures: one real KRaft broker for the whole test session (integration, Spark).

The broker is started through :func:`streaming.kafka_local.start`, the same code path as
``rebalance-monitor kafka start``, in a fresh folder under pytest's temporary directory and
on port 19192 (controller 19193), so a developer's broker on the default 19092 is never
touched. If 19192/19193 are taken (another test session running in the same checkout), two
free ports are used instead. The broker is stopped when the session ends.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from streaming import kafka_local
from streaming.kafka_local import BrokerConfig, BrokerInfo

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TEST_PORT = 19192
TEST_CONTROLLER_PORT = 19193


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports the OS reports free right now."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@pytest.fixture(scope="session")
def kafka_broker_config(tmp_path_factory: pytest.TempPathFactory) -> BrokerConfig:
    """The session broker's configuration (folder, ports, test-friendly settings)."""
    if _bindable(TEST_PORT) and _bindable(TEST_CONTROLLER_PORT):
        port, controller_port = TEST_PORT, TEST_CONTROLLER_PORT
    else:
        port, controller_port = free_ports(2)
    return BrokerConfig(
        port=port,
        controller_port=controller_port,
        folder=tmp_path_factory.mktemp("kafka"),
    )


@pytest.fixture(scope="session")
def kafka_broker(kafka_broker_config: BrokerConfig) -> Iterator[BrokerInfo]:
    """A running single-node broker; ``.bootstrap_servers`` is what clients need."""
    info = kafka_local.start(kafka_broker_config)
    try:
        yield info
    finally:
        kafka_local.stop(kafka_broker_config)


@pytest.fixture(scope="session")
def secured_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerInfo]:
    """A second broker whose only client listener is SASL_SSL (SCRAM-SHA-512 over TLS, the
    keystores made by keytool): ``rebalance-monitor kafka start --security scram+tls``.
    ``.kafka_options`` are the Java client settings of its ``monitor`` user."""
    port, controller_port = free_ports(2)
    config = BrokerConfig(
        port=port,
        controller_port=controller_port,
        folder=tmp_path_factory.mktemp("kafka-secured"),
        security="scram+tls",
        startup_timeout_s=180.0,
    )
    info = kafka_local.start(config)
    try:
        yield info
    finally:
        kafka_local.stop(config)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One local SparkSession for every Spark test (real Spark, the pinned jars, Delta): a
    JVM holds one SparkContext, so the Spark, audit and end-to-end tiers share it."""
    from streaming.spark.session import build_session

    # one JVM for every tier, the whole run: more heap than the job's own default
    session = build_session(
        "rebalance-monitor-tests", master="local[2]", conf={"spark.driver.memory": "2g"}
    )
    try:
        yield session
    finally:
        session.stop()
