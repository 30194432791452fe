"""``rebalance-monitor collect`` against the real broker: real groups, one snapshot, the
events read back from the membership topic and compared with what the consumers report.

Groups (ids share a unique prefix, which is also the collector's ``--group-filter``):

* ``<p>-range``: two kafka-python consumers, range assignor; ``r1`` is a static member
  (``group.instance.id``);
* ``<p>-rr``: three kafka-python consumers, roundrobin assignor;
* ``<p>-kip848``: one Java consumer (kafka-clients 4.4 from the broker's jars, run as a
  single-file source program) with ``group.protocol=consumer``, which kafka-python cannot
  describe.
"""

from __future__ import annotations

import json
import logging
import queue
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jsonschema
import kafka.errors as kafka_errors
import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.structs import MemberState

from streaming import kafka_local
from streaming.collector import cli_collect, load_schema
from streaming.collector.topic import TOPIC_CONFIGS, describe_topic_configs
from streaming.kafka_local import BrokerInfo

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

# Records produced per partition (partition 2 of ta and partition 1 of tb stay empty).
PRODUCED = {"ta": [3, 1, 0], "tb": [4, 0]}

JAVA_CONSUMER = r"""
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;

/** args: bootstrap group topics(comma) client.id expected-records.
 *  Consumes expected-records records, commits, prints COMMITTED, polls until stdin ends. */
public class Kip848Consumer {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[1]);
        p.put("group.protocol", "consumer");
        p.put("client.id", args[3]);
        p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        int expected = Integer.parseInt(args[4]);
        Thread watcher = new Thread(() -> {
            try { while (System.in.read() != -1) { } } catch (Exception e) { }
        });
        watcher.setDaemon(true);
        watcher.start();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            c.subscribe(Arrays.asList(args[2].split(",")));
            int seen = 0;
            boolean committed = false;
            while (watcher.isAlive()) {
                seen += c.poll(Duration.ofMillis(100)).count();
                if (!committed && seen >= expected) {
                    c.commitSync();
                    committed = true;
                    System.out.println("COMMITTED " + c.assignment());
                    System.out.flush();
                }
            }
        }
    }
}
"""


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Member(threading.Thread):
    """One kafka-python consumer polling in its own thread, as in an application. (Polling
    several consumers in turn from one thread with short timeouts makes kafka-python 3.0
    abandon in-flight joins on a slow broker: the group never settles.) Other threads only
    read its group metadata and assignment, and hand it commits to make. While ``held`` is
    set it does not poll (its heartbeats go on): it does not rejoin a rebalance, as an
    application busy with a batch."""

    def __init__(self, consumer: KafkaConsumer) -> None:
        super().__init__(daemon=True)
        self.consumer = consumer
        self.stopping = threading.Event()
        self.held = threading.Event()
        self._commits: queue.Queue[tuple[dict[Any, Any], threading.Event]] = queue.Queue()

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                if self.held.is_set():
                    time.sleep(0.05)
                    continue
                self.consumer.poll(timeout_ms=200)
                while not self._commits.empty():
                    offsets, done = self._commits.get()
                    self.consumer.commit(offsets=offsets)
                    done.set()
        finally:
            self.consumer.close()

    def commit(self, offsets: dict[Any, Any]) -> None:
        done = threading.Event()
        self._commits.put((offsets, done))
        assert done.wait(30), "commit not done"

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)


@dataclass
class Snapshot:
    """Everything the tests compare: events read back, and the consumers' own view."""

    prefix: str
    topics: dict[str, str]  # logical name (ta, tb) -> real topic
    events: list[dict[str, Any]]
    keys: list[str]
    expected: dict[str, dict[str, dict[str, Any]]]  # group -> member_id -> consumer's view
    java_assignment: str
    v2: list[tuple[str, int, dict[str, Any] | None]]  # (key, partition, value) in offset order

    def group(self, suffix: str) -> dict[str, Any]:
        [event] = [
            e
            for e in self.events
            if e["event_type"] == "group" and e["group_id"] == f"{self.prefix}-{suffix}"
        ]
        return event

    @property
    def topics_event(self) -> dict[str, Any]:
        [event] = [e for e in self.events if e["event_type"] == "topics"]
        return event


def _consumer_view(consumer: KafkaConsumer) -> dict[str, Any]:
    meta = consumer.group_metadata()
    return {
        "member_id": meta.member_id,
        "generation_id": meta.generation_id,
        "group_instance_id": meta.group_instance_id,
        "client_id": consumer.config["client_id"],
        "assignment": sorted((tp.topic, tp.partition) for tp in consumer.assignment()),
        "stable": meta.state == MemberState.STABLE,
    }


def _listed_state(admin: KafkaAdminClient, group: str) -> str | None:
    """The group's state as ListGroups gives it (what the collector reads first)."""
    return {g["group_id"]: g["group_state"] for g in admin.list_groups()}.get(group)


def _groups_settled(groups: dict[str, list[Member]], partitions: set[Any]) -> bool:
    for members in groups.values():
        views = [_consumer_view(m.consumer) for m in members]
        if not all(v["stable"] for v in views):
            return False
        if len({v["generation_id"] for v in views}) != 1:
            return False
        owned = [tp for v in views for tp in v["assignment"]]
        if len(owned) != len(set(owned)) or set(owned) != partitions:
            return False
    return True


def _views(groups: dict[str, list[Member]]) -> dict[str, dict[str, dict[str, Any]]]:
    return {
        gid: {v["member_id"]: v for v in (_consumer_view(m.consumer) for m in members)}
        for gid, members in groups.items()
    }


@pytest.fixture(scope="module")
def snapshot(
    kafka_broker: BrokerInfo, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Snapshot]:
    bootstrap = kafka_broker.bootstrap_servers
    prefix = unique("collect")
    topics = {name: f"{prefix}-{name}" for name in PRODUCED}
    monitor_topic = f"{prefix}.membership"
    tmp = tmp_path_factory.mktemp("collector")

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics(
            {
                topics[n]: {"num_partitions": len(counts), "replication_factor": 1}
                for n, counts in PRODUCED.items()
            },
            wait_for_metadata=True,
        )
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        for name, counts in PRODUCED.items():
            for partition, count in enumerate(counts):
                for i in range(count):
                    producer.send(topics[name], value=b"%d" % i, partition=partition)
        producer.flush(timeout=30)
    finally:
        producer.close()
    partitions = {(topics[n], p) for n, counts in PRODUCED.items() for p in range(len(counts))}

    # The Java consumer compiles and starts in the background while the others settle.
    java_jars = kafka_local.DEFAULT_JARS
    source = tmp / "Kip848Consumer.java"
    source.write_text(JAVA_CONSUMER, encoding="utf-8")
    java = shutil.which("java") or "java"
    java_log = (tmp / "java.log").open("w")
    java_proc = subprocess.Popen(
        [java, "-cp", f"{java_jars}/*", str(source), bootstrap, f"{prefix}-kip848",
         ",".join(topics.values()), "java-848", str(sum(map(sum, PRODUCED.values())))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=java_log,
        text=True,
    )  # fmt: skip

    def member(group: str, client_id: str, assignor: Any, **extra: Any) -> Member:
        consumer = KafkaConsumer(
            *topics.values(),
            bootstrap_servers=bootstrap,
            group_id=f"{prefix}-{group}",
            client_id=client_id,
            partition_assignment_strategy=[assignor],
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=6000,
            heartbeat_interval_ms=300,
            **extra,
        )
        started = Member(consumer)
        started.start()
        return started

    groups: dict[str, list[Member]] = {}
    try:
        groups[f"{prefix}-range"] = [
            member("range", "r1", RangePartitionAssignor(), group_instance_id="static-r1"),
            member("range", "r2", RangePartitionAssignor()),
        ]
        groups[f"{prefix}-rr"] = [
            member("rr", f"rr{i}", RoundRobinPartitionAssignor()) for i in (1, 2, 3)
        ]

        def settle(timeout_s: float = 30.0) -> None:
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                if _groups_settled(groups, partitions):
                    return
                time.sleep(0.1)
            pytest.fail(f"groups did not settle: {_views(groups)}")

        settle()
        # The range group commits end offset - 1 where there are records: lag 1 there.
        range_commits = {
            TopicPartition(topics[n], p): OffsetAndMetadata(max(count - 1, 0), "", -1)
            for n, counts in PRODUCED.items()
            for p, count in enumerate(counts)
        }
        for m in groups[f"{prefix}-range"]:
            mine = {tp: om for tp, om in range_commits.items() if tp in m.consumer.assignment()}
            m.commit(mine)

        assert java_proc.stdout is not None
        java_line = java_proc.stdout.readline().strip()  # blocks until it has committed
        assert java_line.startswith("COMMITTED"), (tmp / "java.log").read_text()

        # One snapshot; redo it if a group rebalanced meanwhile (the view would be stale).
        for _attempt in range(3):
            settle()
            before = _views(groups)
            code = cli_collect(
                ["--bootstrap-server", bootstrap, "--once", "--duration", "30",
                 "--topic", monitor_topic, "--cluster", "itest", "--group-filter", f"{prefix}-.*",
                 "--schema-version", "1"]
            )  # fmt: skip
            assert code == 0
            if _views(groups) == before:
                break
        else:
            pytest.fail("the groups kept rebalancing during the snapshots")

        events, keys = _read_last_snapshot(bootstrap, monitor_topic)
        # the same groups through version 2: two polls, the second unchanged
        v2_topic = f"{prefix}.membership-v2"
        code = cli_collect(
            ["--bootstrap-server", bootstrap, "--interval", "1", "--duration", "6",
             "--heartbeat-interval", "3", "--poll-event-interval", "1", "--topic", v2_topic,
             "--cluster", "itest", "--group-filter", f"{prefix}-.*"]
        )  # fmt: skip
        assert code == 0
        v2_records = _read_all(bootstrap, v2_topic)
        yield Snapshot(
            prefix=prefix,
            topics=topics,
            events=events,
            keys=keys,
            expected=before,
            java_assignment=java_line,
            v2=v2_records,
        )
    finally:
        for members in groups.values():
            for m in members:
                m.stop()
        if java_proc.stdin is not None:
            java_proc.stdin.close()  # the Java consumer closes itself at end of input
        try:
            java_proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            java_proc.kill()
            java_proc.wait()
        java_log.close()


def _read_all(bootstrap: str, topic: str) -> list[tuple[str, int, dict[str, Any] | None]]:
    """Every record of ``topic``: (key, partition, JSON value or None for a tombstone)."""
    reader = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        parts = [TopicPartition(topic, p) for p in sorted(reader.partitions_for_topic(topic))]
        reader.assign(parts)
        reader.seek_to_beginning()
        end = reader.end_offsets(parts)
        records = []
        deadline = time.monotonic() + 20
        while any(reader.position(tp) < end[tp] for tp in parts):
            assert time.monotonic() < deadline, "membership topic not read in time"
            for batch in reader.poll(timeout_ms=500).values():
                records.extend(batch)
    finally:
        reader.close()
    records.sort(key=lambda r: (r.partition, r.offset))
    return [
        (r.key.decode(), r.partition, None if r.value is None else json.loads(r.value))
        for r in records
    ]


def _read_last_snapshot(bootstrap: str, topic: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The events of the newest poll in ``topic`` (values, keys)."""
    records = [(k, v) for k, _partition, v in _read_all(bootstrap, topic) if v is not None]
    last = max(records, key=lambda r: r[1]["snapshot_ts_ms"])[1]["snapshot_id"]
    chosen = [(k, v) for k, v in records if v["snapshot_id"] == last]
    return [v for _, v in chosen], [k for k, _ in chosen]


# --------------------------------------------------------------------------- the tests


def test_every_event_validates_against_the_schema(snapshot: Snapshot) -> None:
    validator = jsonschema.Draft202012Validator(load_schema(1))

    for event in snapshot.events:
        errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(event)]
        assert errors == []
        assert event["cluster"] == "itest"
        assert event["errors"] == []


def test_one_event_per_group_keyed_by_group_id_plus_a_topics_event(snapshot: Snapshot) -> None:
    p = snapshot.prefix
    groups = sorted(f"{p}-{s}" for s in ("range", "rr", "kip848"))

    assert sorted(snapshot.keys) == sorted([*groups, "itest"])
    for key, event in zip(snapshot.keys, snapshot.events, strict=True):
        assert key == (event["group_id"] if event["event_type"] == "group" else "itest")
    assert snapshot.topics_event["group_ids"] == groups


@pytest.mark.parametrize(("suffix", "assignor"), [("range", "range"), ("rr", "roundrobin")])
def test_classic_group_matches_what_its_consumers_report(
    snapshot: Snapshot, suffix: str, assignor: str
) -> None:
    event = snapshot.group(suffix)
    expected = snapshot.expected[f"{snapshot.prefix}-{suffix}"]

    assert event["group_type"] == "classic"
    assert event["protocol_type"] == "consumer"
    assert event["state"] == "Stable"
    assert event["protocol_name"] == assignor
    assert event["membership_source"] == "describe_groups"
    assert event["member_count"] == len(expected)
    assert {m["member_id"] for m in event["members"]} == set(expected)
    for member in event["members"]:
        mine = expected[member["member_id"]]
        assert member["client_id"] == mine["client_id"]
        assert member["group_instance_id"] == mine["group_instance_id"]
        assert member["client_host"].endswith("127.0.0.1")
        assert member["subscribed_topics"] == sorted(snapshot.topics.values())
        got = sorted((e["topic"], p) for e in member["assignment"] for p in e["partitions"])
        assert got == mine["assignment"]
        assert member["assigned_partition_count"] == len(mine["assignment"])
    assert event["topics"] == sorted(snapshot.topics.values())


def test_static_member_is_reported_with_its_instance_id(snapshot: Snapshot) -> None:
    members = snapshot.group("range")["members"]

    assert sorted((m["client_id"], m["group_instance_id"]) for m in members) == [
        ("r1", "static-r1"),
        ("r2", None),
    ]


def test_committed_offsets_and_lag(snapshot: Snapshot) -> None:
    committed = {
        (o["topic"], o["partition"]): o for o in snapshot.group("range")["committed_offsets"]
    }

    for name, counts in PRODUCED.items():
        for partition, count in enumerate(counts):
            entry = committed[(snapshot.topics[name], partition)]
            assert entry["offset"] == max(count - 1, 0)
            assert entry["end_offset"] == count
            assert entry["lag"] == (1 if count else 0)
    assert snapshot.group("rr")["committed_offsets"] == []  # the rr group never committed


def test_kip848_group_gets_state_offsets_and_the_consumer_offsets_flag(
    snapshot: Snapshot,
) -> None:
    event = snapshot.group("kip848")

    assert event["group_type"] == "consumer"
    assert event["protocol_type"] == "consumer"
    assert event["state"] == "Stable"
    assert event["membership_source"] == "consumer_offsets"
    assert event["members"] is None and event["member_count"] is None
    assert event["protocol_name"] is None
    offsets = {(o["topic"], o["partition"]): o["offset"] for o in event["committed_offsets"]}
    for name, counts in PRODUCED.items():
        for partition, count in enumerate(counts):
            if count:  # the Java consumer consumed everything, then committed
                assert offsets[(snapshot.topics[name], partition)] == count
    assert all(o["lag"] == 0 for o in event["committed_offsets"])
    for topic in snapshot.topics.values():  # the Java consumer owned them all
        assert topic in snapshot.java_assignment
    assert event["topics"] == sorted(snapshot.topics.values())


def test_topics_event_has_partition_counts_racks_and_end_offsets(snapshot: Snapshot) -> None:
    t = snapshot.topics_event
    by_name = {x["topic"]: x for x in t["topics"]}

    assert sorted(by_name) == sorted(snapshot.topics.values())
    assert [b["rack"] for b in t["brokers"]] == [None]  # the test broker sets no broker.rack
    assert t["controller_id"] == t["brokers"][0]["broker_id"]
    assert t["end_offsets_ts_ms"] >= t["snapshot_ts_ms"]
    for name, counts in PRODUCED.items():
        topic = by_name[snapshot.topics[name]]
        assert topic["error"] is None and topic["is_internal"] is False
        assert topic["partition_count"] == len(counts)
        assert len(topic["topic_id"]) == 22
        assert [p["end_offset"] for p in topic["partitions"]] == counts
        for p in topic["partitions"]:
            assert p["replicas"] == p["isr"] == [t["brokers"][0]["broker_id"]]
            assert p["replica_racks"] == [None]


def test_the_collector_created_its_topic(kafka_broker: BrokerInfo, snapshot: Snapshot) -> None:
    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers)
    try:
        [meta] = admin.describe_topics([f"{snapshot.prefix}.membership"])
    finally:
        admin.close()

    assert meta["error_code"] == 0


def test_the_topic_is_created_compacted_compressed_and_bounded(
    kafka_broker: BrokerInfo, snapshot: Snapshot
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers)
    try:
        actual = describe_topic_configs(admin, f"{snapshot.prefix}.membership")
    finally:
        admin.close()

    assert {k: actual.get(k) for k in TOPIC_CONFIGS} == dict(TOPIC_CONFIGS)
    assert actual["cleanup.policy"] == "compact"
    assert actual["compression.type"] == "zstd"


def test_an_existing_topic_with_other_settings_is_named_in_a_warning_not_changed(
    kafka_broker: BrokerInfo, caplog: pytest.LogCaptureFixture
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = f"{unique('plain')}.membership"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics(
            {topic: {"num_partitions": 1, "replication_factor": 1}}, wait_for_metadata=True
        )
        with caplog.at_level(logging.WARNING, logger="streaming.collector"):
            code = cli_collect(
                ["--bootstrap-server", bootstrap, "--once", "--duration", "30",
                 "--topic", topic, "--group-filter", "no-such-group-.*"]
            )  # fmt: skip
        after = describe_topic_configs(admin, topic)
    finally:
        admin.close()

    assert code == 0
    [warning] = [r.getMessage() for r in caplog.records if "other settings" in r.getMessage()]
    assert topic in warning
    assert "cleanup.policy=delete (wanted compact)" in warning
    assert "segment.ms=604800000 (wanted 3600000)" in warning
    assert after["cleanup.policy"] == "delete"  # used as it is, not altered


def test_version_2_publishes_each_group_once_then_heartbeats_and_end_offsets(
    snapshot: Snapshot,
) -> None:
    """Polls a second apart for 6 s, heartbeats every 3 s, ``poll`` events every poll, the
    groups settled: each group's ``group`` event at the first poll, then at every poll a
    heartbeat or a ``poll`` event naming it; the topics once; the end offsets once (their
    cadence is 30 s), of the consumed partitions."""
    validator = jsonschema.Draft202012Validator(load_schema(2))
    p = snapshot.prefix
    groups = sorted(f"{p}-{s}" for s in ("range", "rr", "kip848"))
    values = [v for _, _, v in snapshot.v2 if v is not None]
    for value in values:
        assert list(validator.iter_errors(value)) == []
    by_type: dict[str, list[dict[str, Any]]] = {}
    for value in values:
        by_type.setdefault(value["event_type"], []).append(value)

    assert sorted(e["group_id"] for e in by_type["group"]) == groups
    assert [len(by_type["topics"]), len(by_type["end_offsets"])] == [1, 1]
    assert {e["group_id"] for e in by_type["heartbeat"]} == set(groups)
    polls = sorted({v["snapshot_ts_ms"] for v in values})
    assert len(polls) >= 4
    for group_id in groups:
        [event] = [e for e in by_type["group"] if e["group_id"] == group_id]
        named = [event["snapshot_ts_ms"]]
        for v in values:
            if v["event_type"] == "heartbeat" and v["group_id"] == group_id:
                assert v["digest"] == event["digest"] and v["state"] == event["state"]
                named.append(v["snapshot_ts_ms"])
            elif v["event_type"] == "poll" and group_id in v["group_ids"]:
                named.append(v["snapshot_ts_ms"])
        assert sorted(named) == polls  # every poll names the group once
    # a group's heartbeat shares its group event's partition, under its own key
    where = {k: part for k, part, v in snapshot.v2 if v is not None and v["event_type"] == "group"}
    for key, part, value in snapshot.v2:
        if value is not None and value["event_type"] == "heartbeat":
            assert key == f"{value['group_id']}\x00heartbeat"
            assert part == where[value["group_id"]]
    group = next(e for e in by_type["group"] if e["group_id"] == f"{p}-range")
    assert "committed_offsets" not in group
    assert group["members"] == snapshot.group("range")["members"]
    # end offsets: the partitions the groups consume, all of them (the first event is full)
    [offsets] = by_type["end_offsets"]
    assert offsets["full"] is True and offsets["group_ids"] == groups
    got = {
        (t["topic"], q): o
        for t in offsets["topics"]
        for q, o in zip(t["partitions"], t["end_offsets"], strict=True)
    }
    expected = {
        (snapshot.topics[n], q): c for n, counts in PRODUCED.items() for q, c in enumerate(counts)
    }
    assert got == expected


def test_a_rebalance_between_full_describe_passes_is_described_when_list_groups_shows_it(
    kafka_broker: BrokerInfo,
) -> None:
    """The collector polls every second and describes every group only once an hour: a
    settled group is not described again, until a second member joins while the first is
    busy (the group waits in PreparingRebalance). ListGroups shows the state, so that poll
    describes the group and publishes it rebalancing, and, when the group settles, with both
    members as they report themselves; each change names the poll before it."""
    from streaming.collector import Collector, CollectorConfig

    bootstrap = kafka_broker.bootstrap_servers
    prefix = unique("between")
    topic, group = f"{prefix}-t", f"{prefix}-g"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics({topic: {"num_partitions": 2, "replication_factor": 1}},
                            wait_for_metadata=True)  # fmt: skip
    finally:
        admin.close()

    def member(client_id: str) -> Member:
        started = Member(
            KafkaConsumer(
                topic,
                bootstrap_servers=bootstrap,
                group_id=group,
                client_id=client_id,
                enable_auto_commit=False,
                session_timeout_ms=6000,
                heartbeat_interval_ms=300,
            )
        )
        started.start()
        return started

    def settled(members: list[Member]) -> bool:
        return _groups_settled({group: members}, {(topic, 0), (topic, 1)})

    config = CollectorConfig(
        bootstrap_servers=bootstrap,
        topic=f"{prefix}.membership",
        cluster="itest",
        group_filter=f"{prefix}-.*",
        interval_s=1,
        describe_interval_s=3600,
        poll_event_interval_s=1,
    )
    collector = Collector(config)
    described: list[int] = []  # the groups each poll described
    members = [member("first")]
    try:

        def poll_until(done: Any, timeout_s: float) -> None:
            deadline = time.monotonic() + timeout_s
            while True:
                described.append(collector.snapshot_once().described_groups)
                if done():
                    return
                assert time.monotonic() < deadline, f"not done: {described}"
                time.sleep(1)

        deadline = time.monotonic() + 30
        while not settled(members):
            assert time.monotonic() < deadline, "the first member never settled"
            time.sleep(0.1)
        polls_before = 4
        poll_until(lambda: len(described) >= polls_before, 30)
        members[0].held.set()  # busy: it will not rejoin until released
        members.append(member("second"))
        # the hold counts from the second member's join, which a loaded machine can delay
        # past any fixed wait: until then the group has nothing to wait for
        lister = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            poll_until(lambda: _listed_state(lister, group) == "PreparingRebalance", 30)
        finally:
            lister.close()
        held_since = time.monotonic()
        poll_until(lambda: time.monotonic() - held_since > 4, 30)
        members[0].held.clear()
        poll_until(lambda: settled(members), 30)
        poll_until(lambda: True, 5)  # one more poll: the group settled, as described
        views = {v["member_id"]: v for v in (_consumer_view(m.consumer) for m in members)}
    finally:
        collector.close()
        for m in members:
            m.held.clear()
            m.stop()

    assert described[0] == 1  # the first poll describes every group
    assert described[1:polls_before] == [0] * (polls_before - 1)  # settled: not again
    assert sum(described[polls_before:]) >= 2  # rebalancing, then settled: described again
    events = [v for _k, _p, v in _read_all(bootstrap, config.topic) if v is not None]
    changes = [e for e in events if e["event_type"] == "group" and e["group_id"] == group]
    assert changes[1]["state"] in ("PreparingRebalance", "CompletingRebalance"), changes
    last = changes[-1]
    assert last["state"] == "Stable"
    got = {m["member_id"]: m for m in last["members"]}
    assert set(got) == set(views)
    for member_id, view in views.items():
        assigned = [(a["topic"], p) for a in got[member_id]["assignment"] for p in a["partitions"]]
        assert sorted(assigned) == view["assignment"]
    published = sorted({e["snapshot_ts_ms"] for e in events})
    for change in changes[1:]:  # each change names the poll before it (which may have
        # published nothing: a poll event only every poll event interval)
        ts = change["snapshot_ts_ms"]
        newest_published = published[published.index(ts) - 1]
        assert newest_published <= change["previous_poll_ts_ms"] < ts
        assert change["previous_digest"] == changes[changes.index(change) - 1]["digest"]


def _big_cluster(ts: int, topics: list[str], groups: list[str]) -> Any:
    """Admin answers of a cluster whose ``groups`` each consume a share of ``topics`` (20
    partitions each, replicas spread over 6 brokers in 3 racks, random 10-digit end offsets:
    JSON that compresses as a real cluster's does, not a hundredfold)."""
    import random

    from streaming.collector import AdminAnswers

    rng = random.Random(len(topics))
    brokers = [
        {"broker_id": b, "host": f"broker-{b}", "port": 9092, "rack": f"r{b % 3}"}
        for b in range(1, 7)
    ]
    metas = []
    for t in topics:
        partitions = []
        for q in range(20):
            replicas = rng.sample(range(1, 7), 3)
            partitions.append(
                {
                    "partition_index": q,
                    "leader_id": replicas[0],
                    "replica_nodes": replicas,
                    "isr_nodes": replicas,
                }
            )
        topic_id = uuid.UUID(int=rng.getrandbits(128))
        metas.append({"name": t, "error_code": 0, "topic_id": topic_id, "partitions": partitions})
    share = -(-len(topics) // len(groups))
    committed = {
        g: {(t, q): (q, "", 0) for t in topics[i * share : (i + 1) * share] for q in range(20)}
        for i, g in enumerate(groups)
    }
    return AdminAnswers(
        snapshot_ts_ms=ts,
        cluster={"cluster_id": "c1", "controller_id": 1, "brokers": brokers},
        groups=[{"group_id": g, "group_state": "Empty", "group_type": "classic"} for g in groups],
        committed=committed,
        topics=metas,
        end_offsets={(t, q): rng.randrange(10**9, 10**10) for t in topics for q in range(20)},
        end_offsets_ts_ms=ts,
    )


def test_events_past_the_brokers_limit_are_published_in_chunks_and_read_back_whole(
    kafka_broker: BrokerInfo,
) -> None:
    """A cluster whose groups consume 1,000 topics of 20 partitions, on a membership topic
    whose ``max.message.bytes`` is 64 KiB: the ``topics`` event (about 2.4 MB of JSON) and
    the ``end_offsets`` event (about 0.4 MB) are refused by the broker as one record each,
    even compressed; in chunks of at most 32 KiB of JSON they are accepted and read back
    whole, each chunk naming the groups of its topics. With fewer topics, fewer chunks: the
    keys past the last one get tombstones, on the same partition."""
    from streaming.collector import Collector, CollectorConfig
    from streaming.collector.changes import Changes, end_offsets_key, topics_key
    from streaming.collector.topic import TOPIC_CONFIGS

    bootstrap = kafka_broker.bootstrap_servers
    topic = f"{unique('big')}.membership"
    names = sorted(f"{unique('t')}-{i:04d}" for i in range(1000))
    groups = sorted(f"{unique('g')}-{i}" for i in range(10))
    ts = int(time.time() * 1000)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        from kafka.admin import NewTopic

        configs = {**TOPIC_CONFIGS, "max.message.bytes": str(64 * 1024)}
        admin.create_topics([NewTopic(topic, 3, 1, topic_configs=configs)])
    finally:
        admin.close()
    config = CollectorConfig(bootstrap_servers=bootstrap, topic=topic, chunk_bytes=32 * 1024)

    def changes(chunk_bytes: int) -> Changes:
        return Changes(
            cluster="big",
            heartbeat_interval_ms=60_000,
            full_interval_ms=600_000,
            chunk_bytes=chunk_bytes,
        )

    answers = _big_cluster(ts, names, groups)
    whole = changes(64 << 20).events(answers, snapshot_id="s0")
    split = changes(config.chunk_bytes)
    events = split.events(answers, snapshot_id="s1")
    collector = Collector(config)
    try:
        collector._ensure_topic(collector._admin_client())
        for kind in ("topics", "end_offsets"):
            [one] = [e for e in whole if e.value is not None and e.value["event_type"] == kind]
            with pytest.raises(kafka_errors.MessageSizeTooLargeError):
                collector.publish([one])
            collector.close()  # a fresh producer after the refusal
        assert collector.publish(events) == len(events)
        fewer = _big_cluster(ts + 30_000, names[:300], groups[:3])
        shrunk = split.events(fewer, snapshot_id="s2")
        assert collector.publish(shrunk) == len(shrunk)
    finally:
        collector.close()

    records = _read_all(bootstrap, topic)
    first = [(k, part, v) for k, part, v in records if v is not None and v["snapshot_id"] == "s1"]
    topics_chunks = [v for _, _, v in first if v["event_type"] == "topics"]
    ends_chunks = [v for _, _, v in first if v["event_type"] == "end_offsets"]
    assert len(topics_chunks) > 10 and len(ends_chunks) > 5
    assert [k for k, _, v in first if v["event_type"] == "topics"] == [
        topics_key("big", i) for i in range(len(topics_chunks))
    ]
    assert len({part for _, part, v in first if v["event_type"] != "group"}) == 1
    read = [t for chunk in topics_chunks for t in chunk["topics"]]
    assert [t["topic"] for t in read] == names
    assert sum(len(t["partitions"]) for t in read) == 20_000
    offsets = {
        (t["topic"], q): o
        for chunk in ends_chunks
        for t in chunk["topics"]
        for q, o in zip(t["partitions"], t["end_offsets"], strict=True)
    }
    assert offsets == answers.end_offsets
    assert [t for chunk in ends_chunks for t in chunk["covered_topics"]] == names
    for chunk in topics_chunks[1:] + ends_chunks:  # chunk 0 of topics: no idle group here
        listed = (
            chunk["covered_topics"]
            if chunk["event_type"] == "end_offsets"
            else [t["topic"] for t in chunk["topics"]]
        )
        touching = {
            g for g, tps in answers.committed.items() if {tp[0] for tp in tps} & set(listed)
        }
        assert set(chunk["group_ids"]) == touching
    # fewer chunks: tombstones for the keys past them, where the chunks are
    partition = {part for k, part, _ in records if k == "big"}
    latest: dict[str, Any] = {}
    for key, part, value in records:
        if key == "big" or key.startswith("big\x00"):
            assert {part} == partition
            latest[key] = value
    live = {k for k, v in latest.items() if v is not None and v["event_type"] != "poll"}
    now_topics = [v for k, v in latest.items() if v is not None and v["snapshot_id"] == "s2"]
    n_topics = {v["chunks"] for v in now_topics if v["event_type"] == "topics"}
    n_ends = {v["chunks"] for v in now_topics if v["event_type"] == "end_offsets"}
    assert len(n_topics) == len(n_ends) == 1
    assert live == {topics_key("big", i) for i in range(n_topics.pop())} | {
        end_offsets_key("big", i) for i in range(n_ends.pop())
    }
    gone = [k for k, v in latest.items() if v is None]
    assert len(gone) > 0 and len(live) + len(gone) == len(topics_chunks) + len(ends_chunks)
