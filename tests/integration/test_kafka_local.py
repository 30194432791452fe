"""``streaming.kafka_local`` against the real broker it starts (the session fixture)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

from streaming import kafka_local
from streaming.kafka_local import (
    BrokerConfig,
    BrokerInfo,
    JarsMissingError,
    PortInUseError,
)
from tests.conftest import free_ports

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def admin(kafka_broker: BrokerInfo) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def decoy() -> Iterator[subprocess.Popen[bytes]]:
    """A process that is not our broker, though its command line names kafka.Kafka."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", "kafka.Kafka", "/elsewhere.prop"]
    )
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


# --------------------------------------------------------------------------- start / status


def test_start_is_idempotent(kafka_broker: BrokerInfo, kafka_broker_config: BrokerConfig) -> None:
    again = kafka_local.start(kafka_broker_config)

    assert again.already_running
    assert again.pid == kafka_broker.pid
    assert again.bootstrap_servers == kafka_broker.bootstrap_servers
    assert again.startup_s < 10


def test_status_reports_the_running_broker(
    kafka_broker: BrokerInfo, kafka_broker_config: BrokerConfig
) -> None:
    st = kafka_local.status(kafka_broker_config)

    assert st.running and st.answering
    assert st.pid == kafka_broker.pid
    assert st.bootstrap_servers == f"127.0.0.1:{kafka_broker_config.port}"
    assert st.log_path == kafka_broker.log_path
    assert "Kafka Server started" in st.log_path.read_text()


def test_broker_runs_with_the_written_configuration(
    kafka_broker: BrokerInfo, kafka_broker_config: BrokerConfig
) -> None:
    props = kafka_broker.properties_path.read_text()

    assert "process.roles=broker,controller" in props
    assert f"listeners=PLAINTEXT://127.0.0.1:{kafka_broker_config.port}," in props
    assert "group.min.session.timeout.ms=1000" in props
    assert (kafka_broker_config.data_dir / "meta.properties").exists()
    assert kafka_broker_config.pid_path.read_text().strip() == str(kafka_broker.pid)


def test_cli_status(
    kafka_broker: BrokerInfo,
    kafka_broker_config: BrokerConfig,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--dir", str(kafka_broker_config.folder), "--port", str(kafka_broker_config.port)]
    args += ["--controller-port", str(kafka_broker_config.controller_port)]

    assert kafka_local.cli_main(["status", *args]) == 0
    out = capsys.readouterr().out
    assert f"pid {kafka_broker.pid}" in out
    assert str(kafka_broker.log_path) in out


# --------------------------------------------------------------------------- clients


def test_produce_and_consume_a_record(kafka_broker: BrokerInfo) -> None:
    topic = unique("roundtrip")  # auto-created on first use
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    try:
        sent = producer.send(topic, key=b"k", value=b"hello").get(timeout=30)
    finally:
        producer.close()

    consumer = KafkaConsumer(
        bootstrap_servers=kafka_broker.bootstrap_servers, consumer_timeout_ms=20_000
    )
    try:
        consumer.assign([TopicPartition(topic, sent.partition)])
        consumer.seek_to_beginning()
        record = next(iter(consumer))
    finally:
        consumer.close()

    assert (record.topic, record.offset) == (topic, sent.offset)
    assert (record.key, record.value) == (b"k", b"hello")


def test_group_commit_creates_consumer_offsets(
    kafka_broker: BrokerInfo, kafka_broker_config: BrokerConfig, admin: KafkaAdminClient
) -> None:
    topic, group = unique("commits"), unique("group")
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    try:
        for i in range(3):
            producer.send(topic, value=b"%d" % i)
        producer.flush(timeout=30)
    finally:
        producer.close()

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=20_000,
    )
    try:
        values = [next(iter(consumer)).value for _ in range(3)]
        consumer.commit()
    finally:
        consumer.close()

    assert values == [b"0", b"1", b"2"]
    assert "__consumer_offsets" in admin.list_topics()
    [offsets_topic] = admin.describe_topics(["__consumer_offsets"])
    assert len(offsets_topic["partitions"]) == kafka_broker_config.offsets_topic_partitions
    committed = admin.list_group_offsets(group)[group]
    assert committed[TopicPartition(topic, 0)].offset == 3


# --------------------------------------------------------------------------- stop


def test_stop_ends_only_our_process(
    tmp_path: Path, kafka_broker_config: BrokerConfig, decoy: subprocess.Popen[bytes]
) -> None:
    port, controller_port = free_ports(2)
    second = BrokerConfig(port=port, controller_port=controller_port, folder=tmp_path / "k2")
    info = kafka_local.start(second)
    assert kafka_local.status(second).answering

    assert kafka_local.stop(second) is True
    assert kafka_local.stop(second) is False  # idempotent

    assert not kafka_local.status(second).running
    assert not _process_exists(info.pid)
    assert not second.pid_path.exists()
    assert kafka_local.status(kafka_broker_config).answering  # the session broker lives on
    assert decoy.poll() is None  # and so does everything else


def test_stop_leaves_a_foreign_pid_alone(tmp_path: Path, decoy: subprocess.Popen[bytes]) -> None:
    config = BrokerConfig(port=29_992, controller_port=29_993, folder=tmp_path)
    config.pid_path.write_text(f"{decoy.pid}\n")  # a stale pid file, now pointing elsewhere

    assert not kafka_local.status(config).running
    assert kafka_local.stop(config) is False

    time.sleep(0.2)
    assert decoy.poll() is None
    assert not config.pid_path.exists()


# --------------------------------------------------------------------------- errors


def test_start_refuses_a_port_held_by_someone_else(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        [controller_port] = free_ports(1)
        config = BrokerConfig(port=port, controller_port=controller_port, folder=tmp_path)

        with pytest.raises(PortInUseError, match=f"port {port} .* in use"):
            kafka_local.start(config)
    assert not config.pid_path.exists()


def test_start_without_jars_says_run_make_setup(tmp_path: Path) -> None:
    config = BrokerConfig(folder=tmp_path / "k", jars_dir=tmp_path / "no-jars")

    with pytest.raises(JarsMissingError, match="make setup"):
        kafka_local.start(config)


def test_config_rejects_managed_keys_and_clashing_ports() -> None:
    with pytest.raises(ValueError, match=r"log\.dirs"):
        BrokerConfig(extra_properties={"log.dirs": "/tmp/elsewhere"})
    with pytest.raises(ValueError, match="both"):
        BrokerConfig(port=19092, controller_port=19092)


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists()
