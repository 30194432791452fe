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

``cooperative-sticky`` groups see members join and leave one by one (static and dynamic,
identical and different subscriptions), so most runs start from owned partitions. The log
does not list those, so each run is replayed on the subscriptions the broker recorded for
the generation it made, with the topics in the order of the leader's metadata response
(``debug=metadata``): its lists must equal the logged ones (before the cooperative
adjustment), and after
:func:`~assign_core.assignors.librdkafka_cooperative_sticky.cooperative_adjust` the
generation's recorded assignment, order included.

The tracker's side is checked on the broker's own records: the GroupMetadata record of each
generation, read back from ``__consumer_offsets``, identifies the leader as librdkafka, and
the tracker's verdict on it is no divergence.
"""

from __future__ import annotations

import contextlib
import logging
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

from assign_core.assignors import get_assignor
from assign_core.assignors.librdkafka_cooperative_sticky import cooperative_adjust, sticky_lists
from assign_core.model import GroupSpec, Member, TopicPartition
from assign_core.placement import coordinator_partition
from streaming.codec import decode_record
from streaming.codec.model import GroupMetadata
from streaming.kafka_local import BrokerInfo
from streaming.tracking.expected import (
    classic_specs,
    flatten,
    leader_implementation,
    owned_for_strategy,
    run_strategies,
)

confluent_kafka = pytest.importorskip("confluent_kafka")
admin_module = pytest.importorskip("confluent_kafka.admin")

# the thread method: a consumer call blocked in librdkafka holds off the signal method
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(240, method="thread")]

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


def _capturing_logger(name: str, handler: logging.Handler) -> logging.Logger:
    """A logger of its own for one consumer's librdkafka debug lines, into ``handler`` only."""
    logger = logging.getLogger(name)
    logger.handlers[:] = [handler]
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    return logger


def parse_runs(lines: list[str]) -> list[_Run]:
    """The complete assignor runs in a leader's ``ASSIGN`` debug lines."""
    runs: list[_Run] = []
    with contextlib.suppress(StopIteration):  # a run still being logged
        _parse(iter(lines), runs)
    return runs


def _parse(it: Iterator[str], runs: list[_Run]) -> None:
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


def _topic(line: str) -> tuple[str, int]:
    m = _PARTITION.match(line)
    assert m is not None, line
    return m["topic"], int(m["p"])


def ensure_topics(bootstrap: str, topics: dict[str, int]) -> dict[str, int]:
    """``topics`` (name -> partitions) created on the broker where missing; returns a copy."""
    admin = admin_module.AdminClient({"bootstrap.servers": bootstrap})
    existing = admin.list_topics(timeout=10).topics
    new = [admin_module.NewTopic(t, n, 1) for t, n in topics.items() if t not in existing]
    for future in admin.create_topics(new).values() if new else ():
        future.result(30)
    return dict(topics)


@pytest.fixture(scope="module")
def topics(kafka_broker: BrokerInfo) -> dict[str, int]:
    return ensure_topics(kafka_broker.bootstrap_servers, TOPICS)


def group_records(bootstrap: str, group: str) -> list[GroupMetadata]:
    """The group's GroupMetadata records with members, from its ``__consumer_offsets``
    partition (the session broker has the default 50)."""
    reader = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{group}-reader", "enable.auto.commit": False}
    )
    try:
        tp = confluent_kafka.TopicPartition("__consumer_offsets", coordinator_partition(group), 0)
        _low, high = reader.get_watermark_offsets(tp, timeout=10)
        reader.assign([tp])
        out: list[GroupMetadata] = []
        deadline = time.monotonic() + 30
        position = 0
        while position < high and time.monotonic() < deadline:
            msg = reader.poll(0.5)
            if msg is None or msg.error():
                continue
            position = msg.offset() + 1
            record = decode_record(msg.key(), msg.value())
            if isinstance(record, GroupMetadata) and record.group_id == group and record.members:
                out.append(record)
        return out
    finally:
        reader.close()


def tracker_verdict(record: GroupMetadata, topics: dict[str, int]) -> tuple[str | None, object]:
    """(the leader's implementation, the own strategy's verdict entry) as the tracker makes
    them from one record."""
    leader = next(m for m in record.members if m.member_id == record.leader)
    implementation = leader_implementation(record.protocol, leader.subscription)
    own_spec, whatif_spec = classic_specs(
        record,
        topics=topics,
        racks={},
        topic_ids={},
        previous={},
        previous_generation=None,
        implementation=implementation,
    )
    actual = {
        m.member_id: flatten(m.assignment.assigned_partitions if m.assignment else ())
        for m in record.members
    }
    own, *_ = run_strategies(
        own=record.protocol,
        own_spec=own_spec,
        whatif_spec=whatif_spec,
        strategies=(),
        actual=actual,
        before={},
        identities={},
        max_members=100,
        max_partitions=1000,
        own_implementation=implementation,
        leader_version=None if leader.subscription is None else leader.subscription.version,
    )
    return implementation, own


def _play(
    bootstrap: str, strategy: str, scenario: int, topics: dict[str, int]
) -> tuple[list[_Run], dict[str, str | None], str]:
    """Consumers of one generated scenario join one by one; the leader's runs, each member
    id's group instance id and the group id."""
    rnd = random.Random(f"{strategy}-{scenario}")
    group = f"rk-{strategy}-{scenario}-{time.monotonic_ns()}"
    names = list(topics)
    consumers = []
    handlers: list[_Lines] = []
    instance_ids = rnd.sample(INSTANCE_IDS, k=len(INSTANCE_IDS))
    try:
        for i in range(rnd.randint(2, 4)):
            handler = _Lines()
            logger = _capturing_logger(f"librdkafka-differential.{group}.{i}", handler)
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
        return [r for h in handlers for r in parse_runs(h.lines)], ids, group
    finally:
        _close_all([c for c, _ in consumers])


def _close_all(consumers: list[Any]) -> None:
    """Close the consumers at the same time: each close waits for the group's rebalance,
    which the others' closes serve."""
    threads = [threading.Thread(target=c.close, daemon=True) for c in consumers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a consumer did not close within 60 s"


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
    groups = []
    for scenario in range(SCENARIOS):
        runs, instance_ids, group = _play(
            kafka_broker.bootstrap_servers, strategy, scenario, topics
        )
        groups.append(group)
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

    judged = 0
    for group in groups:
        for record in group_records(kafka_broker.bootstrap_servers, group):
            implementation, own = tracker_verdict(record, topics)
            assert implementation == "librdkafka"
            assert own.error is None and own.divergent is False, (group, record.generation)  # type: ignore[attr-defined]
            assert own.implementation == "librdkafka"  # type: ignore[attr-defined]
            judged += 1
    print(f"librdkafka {strategy}: {judged} generations judged by the tracker, none divergent")
    assert judged >= SCENARIOS * 2


_METADATA_HEAD = re.compile(r"(?P<b>\d+) brokers, (?P<t>\d+) topics")
_METADATA_TOPIC = re.compile(r"  Topic (?P<topic>\S+) with (?P<n>\d+) partitions")
_OWNED = re.compile(r' Member "[^"]+"(?: \(me\))? with (?P<k>\d+) owned')
_SEQUENCE = iter(range(1 << 62))


class _StickyLines(logging.Handler):
    """``ASSIGN`` and ``METADATA`` lines of one consumer, each numbered in the order the
    callbacks of all consumers delivered them."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[int, str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        tag = message.split(" ", 1)[0]
        if tag in ("ASSIGN", "METADATA"):
            text = message.split("]: ", 1)[1] if "]: " in message else message
            self.lines.append((next(_SEQUENCE), tag, text))


@dataclass
class _StickyRun:
    """A logged assignor run, with its place in time and the leader's metadata topic order."""

    sequence: int
    run: _Run
    topic_order: list[str]
    owned_counts: list[int]


def sticky_runs(handler: _StickyLines) -> list[_StickyRun]:
    """The complete runs in one consumer's lines, each with the topic order of the last
    metadata response the consumer parsed before it (the one the assignor runs on)."""
    texts: list[str] = []
    starts: list[tuple[int, int, list[str]]] = []
    order: list[str] = []
    pending: list[str] = []
    for seq, tag, text in handler.lines:
        if tag == "METADATA":
            if _METADATA_HEAD.search(text):
                pending = []
            elif m := _METADATA_TOPIC.search(text):
                pending.append(m["topic"])
                order = list(pending)
        else:
            if _RUN.search(text):
                starts.append((len(texts), seq, order))
            texts.append(text)
    out: list[_StickyRun] = []
    for k, (index, seq, topic_order) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(texts)
        runs = parse_runs(texts[index:end])
        if runs:
            owned = [int(m["k"]) for t in texts[index:end] if (m := _OWNED.search(t))]
            out.append(_StickyRun(seq, runs[0], topic_order, owned[: len(runs[0].members)]))
    return out


def _play_cooperative(
    bootstrap: str, scenario: int, topics: dict[str, int]
) -> tuple[list[_StickyRun], str]:
    """Members join one by one, then leave one by one (the last stays until the end); each
    step waits until the group settled (every member's assignment stable)."""
    rnd = random.Random(f"cooperative-sticky-{scenario}")
    group = f"rk-coop-{scenario}-{time.monotonic_ns()}"
    names = list(topics)
    members: list[tuple[Any, _StickyLines]] = []
    handlers: list[_StickyLines] = []
    instance_ids = rnd.sample(INSTANCE_IDS, k=len(INSTANCE_IDS))
    shared = rnd.sample(names, k=rnd.randint(1, 3))
    try:
        for i in range(rnd.randint(2, 4)):
            handler = _StickyLines()
            logger = _capturing_logger(f"librdkafka-coop.{group}.{i}", handler)
            conf: dict[str, object] = {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": rnd.choice(CLIENT_IDS),
                "partition.assignment.strategy": "cooperative-sticky",
                "debug": "assignor,metadata",
                "logger": logger,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 200,
                "enable.auto.commit": False,
            }
            if rnd.random() < 0.5:
                conf["group.instance.id"] = instance_ids.pop()
            # identical subscriptions take another path
            subscription = shared if rnd.random() < 0.5 else rnd.sample(names, k=rnd.randint(1, 3))
            consumer = confluent_kafka.Consumer(conf)
            consumer.subscribe(subscription)
            members.append((consumer, handler))
            handlers.append(handler)
            _settle(members)
        while len(members) > 1:
            consumer, handler = members.pop(rnd.randrange(len(members)))
            consumer.close()
            _settle(members)
        runs = [r for h in handlers for r in sticky_runs(h)]
        return sorted(runs, key=lambda r: r.sequence), group
    finally:
        for consumer, _ in members:
            consumer.close()


def _assign_lines(handler: _StickyLines) -> int:
    return sum(tag == "ASSIGN" for _, tag, _ in handler.lines)


def _settle(members: list[tuple[Any, _StickyLines]]) -> None:
    """Poll every member until no assignor run was logged for 3 s (the follow-up rebalance
    of withheld partitions included)."""
    deadline = time.monotonic() + 40
    quiet_since = time.monotonic()
    seen = sum(_assign_lines(h) for _, h in members)
    while time.monotonic() < deadline:
        for consumer, _ in members:
            consumer.poll(0.02)
        now = sum(_assign_lines(h) for _, h in members)
        if now != seen:
            seen, quiet_since = now, time.monotonic()
        elif time.monotonic() - quiet_since > 3:
            return
    raise AssertionError("the group did not settle within 40 s")


def _sticky_spec(run: _StickyRun, record: GroupMetadata, topics: dict[str, int]) -> GroupSpec:
    """The run's input: its members in JoinGroup order with the subscriptions (owned
    partitions, generation) the broker recorded, the topics in the leader's metadata order."""
    by_id = {m.member_id: m for m in record.members}
    members = []
    for member_id, subscribed in run.run.members:
        recorded = by_id[member_id]
        owned, generation = owned_for_strategy("cooperative-sticky", recorded.subscription)
        members.append(
            Member(
                member_id,
                tuple(subscribed),
                group_instance_id=recorded.group_instance_id,
                owned_partitions=owned,
                generation=generation,
            )
        )
    order = [t for t in run.topic_order if t in topics]
    return GroupSpec(topics={t: topics[t] for t in order}, members=tuple(members))


def _run_key(run: _StickyRun) -> tuple[tuple[str, int], ...]:
    return tuple(zip([m for m, _ in run.run.members], run.owned_counts, strict=True))


def _record_key(record: GroupMetadata, order: list[str]) -> tuple[tuple[str, int], ...]:
    by_id = {m.member_id: m for m in record.members}
    if set(by_id) != set(order):
        return ()
    return tuple(
        (m, len(owned_for_strategy("cooperative-sticky", by_id[m].subscription)[0])) for m in order
    )


SCENARIOS_COOPERATIVE = 10


@pytest.mark.timeout(1200, method="thread")
def test_librdkafka_cooperative_sticky_matches(
    kafka_broker: BrokerInfo, topics: dict[str, int]
) -> None:
    """Members join one by one and leave one by one (static and dynamic, identical and
    different subscriptions): each logged run, replayed on the subscriptions the broker
    recorded for its generation, gives librdkafka's lists before the cooperative adjustment,
    and the adjustment gives the generation's recorded assignment, order included."""
    runs_total = identical = adjusted = unmatched = scenarios = 0
    with_owned = same_subscriptions = judged = order_decides = 0
    metadata_orders: Counter[str] = Counter()
    failures: list[str] = []
    # the groups are independent and each step mostly waits for its group to settle: played
    # side by side
    with ThreadPoolExecutor(max_workers=5) as pool:
        played = list(
            pool.map(
                lambda s: _play_cooperative(kafka_broker.bootstrap_servers, s, topics),
                range(SCENARIOS_COOPERATIVE),
            )
        )
    for scenario, (runs, group) in enumerate(played):
        scenarios += 1
        records = sorted(
            group_records(kafka_broker.bootstrap_servers, group), key=lambda r: r.generation
        )
        position = 0
        for run in runs:
            runs_total += 1
            order = [m for m, _ in run.run.members]
            key = _run_key(run)
            match = next(
                (i for i in range(position, len(records)) if _record_key(records[i], order) == key),
                None,
            )
            if match is None:
                unmatched += 1
                continue
            position = match + 1
            record = records[match]
            spec = _sticky_spec(run, record, topics)
            with_owned += any(m.owned_partitions for m in spec.members)
            same_subscriptions += len({frozenset(m.topics) for m in spec.members}) == 1
            order = list(spec.topics)
            metadata_orders["sorted" if order == sorted(order) else "unsorted"] += 1
            ours = sticky_lists(spec)
            if ours != run.run.assigned:
                failures.append(
                    f"{scenario} gen {record.generation}: {spec} ours {ours} "
                    f"theirs {run.run.assigned}"
                )
                continue
            identical += 1
            by_name = sticky_lists(GroupSpec(dict(sorted(spec.topics.items())), spec.members))
            order_decides += any(set(by_name[m]) != set(ours[m]) for m in ours)
            lists, _withheld = cooperative_adjust(spec.members, ours)
            recorded = {
                m.member_id: list(flatten(m.assignment.assigned_partitions if m.assignment else ()))
                for m in record.members
            }
            if lists != recorded:
                failures.append(
                    f"{scenario} gen {record.generation} adjusted: ours {lists} recorded {recorded}"
                )
                continue
            adjusted += 1
        for record in records:
            implementation, own = tracker_verdict(record, topics)
            assert implementation == "librdkafka"
            assert own.error is None and own.implementation == "librdkafka"  # type: ignore[attr-defined]
            if own.divergent is not False:  # type: ignore[attr-defined]
                failures.append(f"{scenario} gen {record.generation}: the tracker diverges")
            judged += 1
    print(
        f"librdkafka cooperative-sticky: {scenarios} scenarios, {runs_total} runs, "
        f"{runs_total - unmatched} matched to their generation's record ({with_owned} with "
        f"owned partitions, {same_subscriptions} with one subscription), {identical} "
        f"identical, {adjusted} adjusted identically; leader's metadata topic order "
        f"{dict(metadata_orders)} ({order_decides} runs whose partitions it decides); {judged} "
        "generations judged by the tracker"
    )
    for failure in failures:
        print(failure)
    assert not failures
    assert with_owned >= SCENARIOS_COOPERATIVE
    assert identical >= runs_total - unmatched > SCENARIOS_COOPERATIVE * 2
    assert same_subscriptions > 0 and judged >= SCENARIOS_COOPERATIVE * 2
