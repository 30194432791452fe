"""The job's broker watch (:class:`streaming.kafka_check.BrokerWatch`) against real brokers:
checks every half second keep one connection to the broker, the same one (same local port)
from the first check to the last, not a new connection and login per check; on the secured
broker (SASL_SSL, SCRAM) too. A broker that stops is reported down with its cause and the
connection is gone; once it is back, one connection again."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from streaming import kafka_local
from streaming.kafka_check import BrokerWatch, kafka_python_options
from streaming.kafka_local import BrokerInfo
from tests.conftest import free_ports

pytestmark = [pytest.mark.integration]

_ESTABLISHED = "01"


def _own_sockets() -> set[str]:
    """The inodes of this process's sockets."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def connections_to(port: int) -> set[int]:
    """The local ports of this process's established TCP connections to ``port`` (the
    kernel's table, ``/proc/self/net/tcp`` and ``tcp6``)."""
    mine = _own_sockets()
    local_ports = set()
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/self/net/{table}")
        if not path.exists():
            continue
        for row in path.read_text().splitlines()[1:]:
            fields = row.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
            remote_port = int(remote.rsplit(":", 1)[1], 16)
            if state == _ESTABLISHED and inode in mine and remote_port == port:
                local_ports.add(int(local.rsplit(":", 1)[1], 16))
    return local_ports


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _watch_keeps_one_connection(servers: str, port: int, options: dict[str, object]) -> None:
    checks: list[bool] = []
    changes: list[tuple[bool, str | None]] = []
    assert connections_to(port) == set()
    watch = BrokerWatch(
        servers,
        options,
        lambda up, cause: changes.append((up, cause)),
        on_check=checks.append,
        interval_s=0.5,
        timeout_s=10,
    ).start()
    try:
        _wait(lambda: len(checks) >= 1, "the first check")
        first = connections_to(port)
        seen = [first]
        while len(checks) < 12:
            time.sleep(0.1)
            seen.append(connections_to(port))
    finally:
        watch.stop()
    assert changes == [(True, None)] and all(checks), (changes, checks)
    assert len(first) == 1, first
    assert all(ports == first for ports in seen), seen  # one connection, the same throughout
    _wait(lambda: connections_to(port) == set(), "the watch's connection to close", 10)


def test_the_watch_keeps_one_connection(kafka_broker: BrokerInfo) -> None:
    servers = kafka_broker.bootstrap_servers
    _watch_keeps_one_connection(servers, int(servers.rsplit(":", 1)[1]), {})


def test_the_watch_keeps_one_login_on_the_secured_broker(secured_broker: BrokerInfo) -> None:
    options = kafka_python_options(secured_broker.kafka_options)
    assert not options.unmapped  # the full check: TLS and the SCRAM login
    servers = secured_broker.bootstrap_servers
    _watch_keeps_one_connection(servers, int(servers.rsplit(":", 1)[1]), options.options)


def test_a_stopped_broker_is_down_with_its_cause_then_one_connection_again(
    tmp_path: Path,
) -> None:
    port, controller_port = free_ports(2)
    broker = kafka_local.BrokerConfig(
        port=port, controller_port=controller_port, folder=tmp_path / "kafka"
    )
    kafka_local.start(broker)
    changes: list[tuple[bool, str | None]] = []
    watch = BrokerWatch(
        broker.bootstrap_servers,
        {},
        lambda up, cause: changes.append((up, cause)),
        interval_s=0.5,
        timeout_s=3,
    ).start()
    try:
        _wait(lambda: changes == [(True, None)], "up")
        assert len(connections_to(port)) == 1
        kafka_local.stop(broker)
        _wait(lambda: len(changes) == 2, "down")
        assert changes[1] == (False, f"{broker.bootstrap_servers}: connection refused")
        assert connections_to(port) == set()
        kafka_local.start(broker)
        _wait(lambda: len(changes) == 3, "up again")
        assert changes[2] == (True, None)
        _wait(lambda: len(connections_to(port)) == 1, "one connection again", 10)
        again = connections_to(port)
        time.sleep(2)
        assert connections_to(port) == again
    finally:
        watch.stop()
        kafka_local.stop(broker)
