"""Differential test: librdkafka's own ``range`` and ``roundrobin`` against assign_core's.

Real confluent-kafka consumers (librdkafka from PyPI) join groups on the session's broker one
by one, with generated subscriptions, client ids and group instance ids (so that static and
dynamic members are ordered both ways). The leader logs (``debug=assignor``) every run of its
assignor: the members in the order it received them, with their subscriptions, and the list
it computed for each member. Each run is replayed through
:class:`~assign_core.assignors.librdkafka_range.LibrdkafkaRangeAssignor` or
:class:`~assign_core.assignors.librdkafka_roundrobin.LibrdkafkaRoundRobinAssignor` and must
give identical lists, order included.

The topics have distinct partition counts, so the order of ``range`` topics that tie (same
subscribers, same count: the broker's metadata response order) is not exercised here.
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from assign_core.assignors import get_assignor
from assign_core.model import GroupSpec, Member, TopicPartition
from streaming.kafka_local import BrokerInfo

confluent_kafka = pytest.importorskip("confluent_kafka")
admin_module = pytest.importorskip("confluent_kafka.admin")

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(240)]

#: Topic -> partitions; distinct counts (see the module docstring).
TOPICS = {"rk-Order": 7, "rk-Stock": 5, "rk-Big": 12, "rk-a": 1, "rk-Z": 3, "rk-m": 4}
CLIENT_IDS = ("alpha", "kilo", "zulu")
INSTANCE_IDS = ("bravo", "lima", "yankee", "zz")
SCENARIOS = 16

_RUN = re.compile(r'Group "(?P<group>[^"]+)" running (?P<strategy>\S+) assignor for (?P<n>\d+)')
_DONE = re.compile(r'Group "(?P<group>[^"]+)" (?P<strategy>\S+) assignment for (?P<n>\d+) member')
_MEMBER_IN = re.compile(r' Member "(?P<id>[^"]+)"(?: \(me\))? with .* and (?P<k>\d+) subscribed')
_MEMBER_OUT = re.compile(r' Member "(?P<id>[^"]+)"(?: \(me\))? assigned (?P<k>\d+) partition')
_PARTITION = re.compile(r"^  (?P<topic>\S+) \[(?P<p>-?\d+)\]$")


@dataclass
class _Run:
    """One run of the leader's assignor, as it logged it."""

    group: str
    strategy: str
    members: list[tuple[str, list[str]]] = field(default_factory=list)
    assigned: dict[str, list[TopicPartition]] = field(default_factory=dict)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("ASSIGN "):
            self.lines.append(message.split("]: ", 1)[1] if "]: " in message else message)


def parse_runs(lines: list[str]) -> list[_Run]:
    """The complete assignor runs in a leader's ``ASSIGN`` debug lines."""
    runs: list[_Run] = []
    it: Iterator[str] = iter(lines)
    current: _Run | None = None
    for line in it:
        if m := _RUN.search(line):
            current = _Run(m["group"], m["strategy"])
            for _ in range(int(m["n"])):
                head = _MEMBER_IN.search(next(it))
                assert head is not None
                topics = [_topic(next(it)) for _ in range(int(head["k"]))]
                current.members.append((head["id"], [t for t, _ in topics]))
        elif (m := _DONE.search(line)) and current is not None:
            for _ in range(int(m["n"])):
                head = _MEMBER_OUT.search(next(it))
                assert head is not None
                current.assigned[head["id"]] = [
                    TopicPartition(*_topic(next(it))) for _ in range(int(head["k"]))
                ]
            runs.append(current)
            current = None
    return runs


def _topic(line: str) -> tuple[str, int]:
    m = _PARTITION.match(line)
    assert m is not None, line
    return m["topic"], int(m["p"])


@pytest.fixture(scope="module")
def topics(kafka_broker: BrokerInfo) -> dict[str, int]:
    admin = admin_module.AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    existing = admin.list_topics(timeout=10).topics
    new = [admin_module.NewTopic(t, n, 1) for t, n in TOPICS.items() if t not in existing]
    for future in admin.create_topics(new).values() if new else ():
        future.result(30)
    return dict(TOPICS)


def _play(
    bootstrap: str, strategy: str, scenario: int, topics: dict[str, int]
) -> tuple[list[_Run], dict[str, str | None]]:
    """Consumers of one generated scenario join one by one; the leader's runs and each
    member id's group instance id."""
    rnd = random.Random(f"{strategy}-{scenario}")
    group = f"rk-{strategy}-{scenario}-{time.monotonic_ns()}"
    names = list(topics)
    consumers = []
    handlers: list[_Lines] = []
    instance_ids = rnd.sample(INSTANCE_IDS, k=len(INSTANCE_IDS))
    try:
        for i in range(rnd.randint(2, 4)):
            handler = _Lines()
            logger = logging.getLogger(f"librdkafka-differential.{group}.{i}")
            logger.handlers[:] = [handler]
            logger.setLevel(logging.DEBUG)
            logger.propagate = False
            conf: dict[str, object] = {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": rnd.choice(CLIENT_IDS),
                "partition.assignment.strategy": strategy,
                "debug": "assignor",
                "logger": logger,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 200,
                "enable.auto.commit": False,
            }
            if rnd.random() < 0.5:
                conf["group.instance.id"] = instance_ids.pop()
            subscription = rnd.sample(names, k=rnd.randint(1, min(3, len(names))))
            consumer = confluent_kafka.Consumer(conf)
            consumer.subscribe(subscription)
            consumers.append((consumer, conf.get("group.instance.id")))
            handlers.append(handler)
            _poll_until_run_with(consumers, handlers, len(consumers))
        ids = {c.memberid(): gid for c, gid in consumers}
        return [r for h in handlers for r in parse_runs(h.lines)], ids
    finally:
        for consumer, _ in consumers:
            consumer.close()


def _poll_until_run_with(
    consumers: list[tuple[object, object]], handlers: list[_Lines], n: int
) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for consumer, _ in consumers:
            consumer.poll(0.02)  # type: ignore[attr-defined]
        if any(len(r.members) == n for h in handlers for r in parse_runs(h.lines)):
            return
    raise AssertionError(f"no assignor run with {n} members within 30 s")


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_librdkafka_assignments_match(
    kafka_broker: BrokerInfo, topics: dict[str, int], strategy: str
) -> None:
    compared = mixed = java_differs = 0
    for scenario in range(SCENARIOS):
        runs, instance_ids = _play(kafka_broker.bootstrap_servers, strategy, scenario, topics)
        assert runs, "the leader logged no assignor run"
        for run in runs:
            assert run.strategy == strategy
            members = tuple(
                Member(member_id, tuple(subscribed), group_instance_id=instance_ids.get(member_id))
                for member_id, subscribed in run.members
            )
            spec = GroupSpec(topics=topics, members=members)
            ours = get_assignor(strategy, "librdkafka").assign(spec).assignment
            assert ours == run.assigned, (scenario, run)
            compared += 1
            java = get_assignor(strategy).assign(spec).assignment
            java_differs += any(set(java[m]) != set(ours[m]) for m in ours)
            kinds = {m.group_instance_id is None for m in members}
            mixed += len(kinds) == 2
    print(
        f"librdkafka {strategy}: {compared} assignments identical ({mixed} with static and "
        f"dynamic members, {java_differs} where Java's partitions differ)"
    )
    assert compared >= SCENARIOS * 2
    assert mixed > 0 and java_differs > 0  # the scenarios reach where the clients differ
