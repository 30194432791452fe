"""``bench/footprint.py``'s churn members (``ChurnConsumers.java``) against a real broker that
keeps Kafka's default initial rebalance delay, as the bench's does: they join, are Stable,
leave, and the broker's request log counts their requests under their own client ids."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from bench.footprint import (
    CHURN_CLIENT_PREFIX,
    INITIAL_REBALANCE_DELAY_MS,
    BrokerRequests,
    ChurnDriver,
    Visit,
    make_groups,
    request_group,
)
from streaming import kafka_local
from tests.conftest import free_ports

pytestmark = [
    pytest.mark.integration,
    pytest.mark.java,
    pytest.mark.slow,
    pytest.mark.timeout(240),
]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kafka_local.BrokerConfig]:
    port, controller = free_ports(2)
    config = kafka_local.BrokerConfig(
        port=port,
        controller_port=controller,
        folder=tmp_path_factory.mktemp("footprint-broker"),
        extra_properties={"group.initial.rebalance.delay.ms": str(INITIAL_REBALANCE_DELAY_MS)},
    )
    kafka_local.start(config)
    try:
        yield config
    finally:
        kafka_local.stop(config)


def _state(admin: KafkaAdminClient, group: str) -> tuple[str, list[str]]:
    d = admin.describe_groups([group])[group]
    return d["group_state"], [m["client_id"] for m in d["members"]]


def test_members_join_settled_groups_stay_stable_and_leave(
    broker: kafka_local.BrokerConfig, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap_servers
    make_groups(bootstrap, 3, 2)
    requests = BrokerRequests(bootstrap, broker.log_path)
    requests.enable()
    driver = ChurnDriver(bootstrap, tmp_path / "churn.log")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    seen: dict[str, set[tuple[str, tuple[str, ...]]]] = {request_group(g): set() for g in (0, 2)}
    stop = threading.Event()

    def watch() -> None:  # what a watcher's polls would see
        while not stop.wait(0.3):
            for group, states in seen.items():
                state, clients = _state(admin, group)
                states.add((state, tuple(clients)))

    watcher = threading.Thread(target=watch, daemon=True)
    try:
        assert _state(admin, request_group(0)) == ("Empty", [])
        since = time.time()
        watcher.start()
        played = driver.play(
            [Visit(0, 0.5, 2.0), Visit(2, 0.5, 2.0, storm=True)], 20.0, threading.Event()
        )
        stop.set()
        watcher.join(10)
        until = time.time()
        after = _state(admin, request_group(0))
    finally:
        stop.set()
        driver.close()
        admin.close()

    assert (played.visits, played.storm_members, played.left, played.errors) == (2, 1, 2, [])
    assert len(played.joined_ms) == 2 and played.unassigned == 0
    assert min(played.joined_ms) >= INITIAL_REBALANCE_DELAY_MS  # PreparingRebalance first
    for group, states in seen.items():
        member = (f"{CHURN_CLIENT_PREFIX}{group}",)
        assert ("PreparingRebalance", member) in states
        assert ("Stable", member) in states
    assert after == ("Empty", [])
    assert driver.peak_rss > 0
    counts = requests.counts(CHURN_CLIENT_PREFIX, since, until)
    assert counts["JOIN_GROUP"] >= 2 and counts["SYNC_GROUP"] == 2
    assert counts["LEAVE_GROUP"] == 2
    assert requests.counts("footprint-collector", since, until) == {}
