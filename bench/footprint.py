"""The collector's footprint on the cluster it watches: bytes a day written to Kafka and admin
requests a second, the full copies of schema version 1 beside the changes of version 2.

Two measurements, both against a real broker this bench starts (``kafka_local``):

**Bytes.** The collector's own event code (``build_events`` for version 1,
:class:`~streaming.collector.changes.Changes` for version 2) turns a modelled cluster's
polls into records, which its own :class:`~streaming.collector.Collector` publishes with its
producer settings (version 1: uncompressed, into a topic with the broker's defaults, as
before; version 2: zstd, into the compacted topic the collector creates). The bytes are the
partitions' log segments on the broker's disk (before replication; nothing is compacted
within the run: ``min.compaction.lag.ms`` is an hour). The modelled cluster, polled every
5 s: ``--groups`` classic groups of one member each (a member id, a client id, a host, a
subscription and an assignment), each consuming ``--partitions`` partitions of its own topic
(``--topics-shared``: the groups share ``groups / 20`` topics), a producer moving every
partition at every poll, each group committing every partition; each group rebalances once an
hour (one poll PreparingRebalance, then Stable under a new member id), at its own time in the
hour; and one **storm** poll where 10 % of the groups rebalance at once. Version 2 runs the
modelled ``--hours`` (default 1: every group's rebalance, 60 heartbeats, 6 full end-offset
events); version 1, whose every poll is a full copy, runs ``--v1-minutes`` (default 5). Each
is scaled to a day (its bytes x 86,400 s / the modelled seconds) and to one group, and
extrapolated to 10,000 groups from the measured per-group rate.

**Requests.** ``--request-groups`` real groups on the broker (offsets committed with the
admin API; no live members, so they are ``Empty``: each is listed, described and
fetched as a stable group is) and the real collector (``Collector.run``) at its default
5 s interval for ``--request-seconds``, once per schema version, each request counted on
the wire by its API (kafka-python's connection, patched in this process).

Run it::

    .venv/bin/python -m bench.footprint --groups 1000 --request-groups 1000
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streaming.collector import AdminAnswers, Collector, CollectorConfig, build_events
from streaming.collector.changes import Changes
from streaming.collector.events import MembershipEvent

POLL_S = 5
DAY_S = 86_400
STORM_FRACTION = 0.10
TARGET_DAY_BYTES_10K = 2e9
TARGET_GROUP_DAY_BYTES = 200e3


# -- the modelled cluster -------------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    groups: int
    partitions: int
    shared_topics: bool

    def topic(self, g: int) -> str:
        return f"topic-{g // 20 if self.shared_topics else g:05d}"

    def topics(self) -> list[str]:
        return sorted({self.topic(g) for g in range(self.groups)})

    def answers(self, poll: int, *, end_offsets: bool, storm_poll: int | None) -> AdminAnswers:
        """The admin answers of poll ``poll`` (kafka-python's shapes)."""
        ts = 1_800_000_000_000 + poll * POLL_S * 1000
        per_hour = 3600 // POLL_S
        groups, descriptions, committed = [], {}, {}
        for g in range(self.groups):
            group_id = f"group-{g:05d}"
            at = (g * 7919) % per_hour  # the group's own poll of the hour
            since = (poll - at) % per_hour
            generation = (poll - at) // per_hour + 1
            unstable = since == 0
            if storm_poll is not None and g % int(1 / STORM_FRACTION) == 0:
                if poll == storm_poll:
                    unstable = True
                if poll >= storm_poll:
                    generation += 1000
            state = "PreparingRebalance" if unstable else "Stable"
            topic = self.topic(g)
            parts = list(range(self.partitions))
            groups.append(
                {"group_id": group_id, "group_state": state, "group_type": "classic",
                 "protocol_type": "consumer"}
            )  # fmt: skip
            descriptions[group_id] = {
                "group_id": group_id,
                "group_state": state,
                "protocol_type": "consumer",
                "protocol_data": "" if unstable else "range",
                "error": None,
                "members": [
                    {
                        "member_id": f"consumer-{group_id}-1-{generation:08d}-4f2a-9c1b-7e3d5a6b",
                        "group_instance_id": None,
                        "client_id": f"consumer-{group_id}-1",
                        "client_host": f"/10.0.{g // 250}.{g % 250}",
                        "member_metadata": {"topics": [topic]},
                        "member_assignment": None
                        if unstable
                        else {"assigned_partitions": [{"topic": topic, "partitions": parts}]},
                    }
                ],
            }
            committed[group_id] = {
                (topic, p): (self.end_offset(p, poll) - 10, "", 0) for p in parts
            }
        metas = [
            {
                "name": t,
                "error_code": 0,
                "is_internal": False,
                "topic_id": None,
                "partitions": [
                    {
                        "partition_index": p,
                        "leader_id": 1,
                        "replica_nodes": [1],
                        "isr_nodes": [1],
                        "offline_replicas": [],
                    }
                    for p in range(self.partitions)
                ],
            }
            for t in self.topics()
        ]
        offsets = {
            (t, p): self.end_offset(p, poll) for t in self.topics() for p in range(self.partitions)
        }
        return AdminAnswers(
            snapshot_ts_ms=ts,
            cluster={"cluster_id": "bench-cluster-00000000", "controller_id": 1,
                     "brokers": [{"broker_id": 1, "host": "127.0.0.1", "port": 9092}]},
            groups=groups,
            descriptions=descriptions,
            committed=committed,
            topics=metas,
            end_offsets=offsets if end_offsets else {},
            end_offsets_ts_ms=ts + 12 if end_offsets else None,
        )  # fmt: skip

    @staticmethod
    def end_offset(partition: int, poll: int) -> int:
        """A producer moving every partition: ~40 records a second each."""
        return 5_000_000 + partition * 1_000 + poll * (200 + partition % 7)


# -- bytes ----------------------------------------------------------------------------------


@dataclass
class Bytes:
    version: int
    modelled_s: int
    records: int
    bytes: int
    storm_bytes: int
    storm_records: int

    def per_day(self) -> float:
        return self.bytes * DAY_S / self.modelled_s


def _log_bytes(data_dir: Path, topic: str) -> int:
    return sum(f.stat().st_size for d in data_dir.glob(f"{topic}-*") for f in d.glob("*.log"))


def measure_bytes(
    bootstrap: str, data_dir: Path, model: Model, version: int, polls: int, heartbeat_s: float
) -> Bytes:
    """Publish ``polls`` polls of the model as ``version``'s events through the collector."""
    topic = f"footprint-v{version}"
    config = CollectorConfig(
        bootstrap_servers=bootstrap, topic=topic, schema_version=version, cluster="bench"
    )
    collector = Collector(config)
    if version == 1:
        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:  # as earlier releases created it: the broker's defaults
            admin.create_topics(
                {topic: {"num_partitions": 1, "replication_factor": 1,
                         "configs": {"max.message.bytes": "52428800"}}}
            )  # fmt: skip
        finally:
            admin.close()
        producer_configs = {**config.producer_configs(), "max_request_size": 50_000_000}
        producer_configs.pop("compression_type")
        from kafka import KafkaProducer

        collector._producer = KafkaProducer(**producer_configs)
    admin = collector._admin_client()
    collector._ensure_topic(admin)
    changes = Changes(
        cluster="bench",
        heartbeat_interval_ms=int(heartbeat_s * 1000 - POLL_S * 500),
        full_interval_ms=597_500,
    )  # the loop's cadences less half a poll
    storm_poll = polls // 2
    records = 0
    storm_before = storm_records = 0
    storm_bytes = 0
    for poll in range(polls):
        due = version == 1 or poll % (30 // POLL_S) == 0
        answers = model.answers(poll, end_offsets=due, storm_poll=storm_poll)
        events: list[MembershipEvent]
        if version == 1:
            events = build_events(answers, cluster="bench", snapshot_id=f"{poll:032x}")
        else:
            events = changes.events(answers, snapshot_id=f"{poll:032x}")
        if poll == storm_poll:
            collector._producer_client().flush()
            storm_before = _log_bytes(data_dir, topic)
        collector.publish(events)
        records += len(events)
        if poll == storm_poll:
            storm_bytes = _log_bytes(data_dir, topic) - storm_before
            storm_records = len(events)
    collector.close()
    time.sleep(1)
    return Bytes(
        version, polls * POLL_S, records, _log_bytes(data_dir, topic), storm_bytes, storm_records
    )


# -- requests -------------------------------------------------------------------------------


class RequestCounter:
    """Counts the requests kafka-python sends in this process, by API."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def patched(self) -> Iterator[None]:
        from kafka.net.connection import KafkaConnection

        original = KafkaConnection._send_request

        def counting(conn: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.counts[type(request).__name__.removesuffix("Request")] += 1
            return original(conn, request, *args, **kwargs)

        KafkaConnection._send_request = counting
        try:
            yield
        finally:
            KafkaConnection._send_request = original


def make_groups(bootstrap: str, n: int, partitions: int) -> None:
    """``n`` groups with committed offsets (Empty), each on its own topic's partitions."""
    from kafka import KafkaAdminClient, KafkaProducer, OffsetAndMetadata, TopicPartition
    from kafka.errors import CoordinatorNotAvailableError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        topics = [f"req-topic-{i:03d}" for i in range((n + 19) // 20)]
        admin.create_topics(
            {t: {"num_partitions": partitions, "replication_factor": 1} for t in topics},
            wait_for_metadata=True,
        )
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50)
        for t in topics:
            for p in range(partitions):
                producer.send(t, b"x" * 10, partition=p)
        producer.flush()
        producer.close()
        for g in range(n):
            topic = topics[g // 20]
            offsets = {
                TopicPartition(topic, p): OffsetAndMetadata(0, "", -1) for p in range(partitions)
            }
            deadline = time.monotonic() + 120
            while True:  # the first commit creates __consumer_offsets: wait for its leaders
                try:
                    admin.alter_group_offsets(f"req-group-{g:05d}", offsets)
                    break
                except CoordinatorNotAvailableError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(1)
    finally:
        admin.close()


def measure_requests(bootstrap: str, version: int, seconds: float) -> tuple[dict[str, int], int]:
    counter = RequestCounter()
    config = CollectorConfig(
        bootstrap_servers=bootstrap,
        topic=f"footprint-requests-v{version}",
        schema_version=version,
        group_filter="req-group-.*",
    )
    collector = Collector(config)
    with counter.patched():
        stats = collector.run(duration_s=seconds)
    return dict(counter.counts), stats.snapshots


# -- the run --------------------------------------------------------------------------------


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e5 else f"{n / 1e3:,.1f} KB"


def report(results: dict[str, Any]) -> str:
    lines = ["", "bytes written to Kafka (log segments, before replication):", ""]
    lines.append(
        "| schema | groups | modelled | records | bytes | per day | per group per day | "
        "10,000 groups per day (extrapolated) | storm poll |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for b in results["bytes"]:
        per_day = b["bytes"] * DAY_S / b["modelled_s"]
        per_group = per_day / results["groups"]
        lines.append(
            f"| {b['version']} | {results['groups']:,} | {b['modelled_s'] // 60} min | "
            f"{b['records']:,} | {_mb(b['bytes'])} | {_mb(per_day)} | {per_group / 1e3:,.1f} KB | "
            f"{_mb(per_group * 10_000)} | {b['storm_records']:,} records, "
            f"{_mb(b['storm_bytes'])} |"
        )
    lines += ["", f"targets: <= {_mb(TARGET_DAY_BYTES_10K)} a day at 10,000 groups, "
              f"<= {_mb(TARGET_GROUP_DAY_BYTES)} per stable group per day"]  # fmt: skip
    if results.get("requests"):
        lines += ["", f"admin requests against {results['request_groups']:,} groups:", ""]
        lines.append("| schema | polls | seconds | requests/s | by API (per poll) |")
        lines.append("|---|---|---|---|---|")
        for r in results["requests"]:
            admin = {k: v for k, v in r["counts"].items() if k not in ("Produce",)}
            per_poll = ", ".join(
                f"{k} {v / max(r['polls'], 1):.1f}" for k, v in sorted(admin.items())
            )
            lines.append(
                f"| {r['version']} | {r['polls']} | {r['seconds']:g} | "
                f"{sum(admin.values()) / r['seconds']:.1f} | {per_poll} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--topics-shared", action="store_true", help="20 groups per topic")
    parser.add_argument("--hours", type=float, default=1.0, help="modelled time, version 2")
    parser.add_argument("--v1-minutes", type=float, default=5.0, help="modelled time, version 1")
    parser.add_argument(
        "--heartbeat", type=float, default=CollectorConfig.heartbeat_interval_s, metavar="S"
    )
    parser.add_argument("--request-groups", type=int, default=1000, help="0: no requests run")
    parser.add_argument("--request-seconds", type=float, default=60.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    from streaming import kafka_local
    from tests.conftest import free_ports

    model = Model(args.groups, args.partitions, args.topics_shared)
    results: dict[str, Any] = {
        "groups": args.groups,
        "partitions": args.partitions,
        "shared_topics": args.topics_shared,
        "request_groups": args.request_groups,
        "bytes": [],
        "requests": [],
    }
    with tempfile.TemporaryDirectory(prefix="footprint-") as tmp:
        port, controller = free_ports(2)
        config = kafka_local.BrokerConfig(port=port, controller_port=controller, folder=Path(tmp))
        info = kafka_local.start(config)
        try:
            bootstrap = info.bootstrap_servers
            data_dir = Path(tmp) / "data"
            for version, minutes in ((2, args.hours * 60), (1, args.v1_minutes)):
                started = time.monotonic()
                polls = int(minutes * 60 / POLL_S)
                b = measure_bytes(bootstrap, data_dir, model, version, polls, args.heartbeat)
                results["bytes"].append(b.__dict__)
                print(
                    f"v{version}: {polls} polls, {b.records:,} records, {_mb(b.bytes)} "
                    f"in {time.monotonic() - started:.0f} s",
                    flush=True,
                )
            if args.request_groups:
                make_groups(bootstrap, args.request_groups, args.partitions)
                for version in (1, 2):
                    counts, polls = measure_requests(bootstrap, version, args.request_seconds)
                    results["requests"].append(
                        {"version": version, "counts": counts, "polls": polls,
                         "seconds": args.request_seconds}
                    )  # fmt: skip
                    print(f"v{version} requests: {counts}", flush=True)
        finally:
            kafka_local.stop(config)
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
