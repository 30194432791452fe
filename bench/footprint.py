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

Version 2 runs twice: ``poll`` events at the collector's default cadence
(``poll_event_interval_s``, 30 s), and at every poll, as the collector published them before
that setting.

**Requests.** ``--request-groups`` real groups on the broker (offsets committed with the
admin API; no live members, so they are ``Empty``: each is listed, described and fetched as
a settled group is), then one watcher at a time against them, each counted on the broker
(its request logger, ``kafka.request.logger`` at DEBUG, set through the admin API: one line
per request with the client id and the API) over ``--request-seconds`` after
``--request-warmup`` seconds:

* the collector (``Collector.run``) at its defaults (5 s polls): schema version 1; version
  2 describing every classic group every poll (``describe_interval_s`` = the interval, as
  before that setting); version 2 at its defaults (DescribeGroups every 30 s, and in
  between for groups new, unsettled or whose ListGroups state moved);
* **Burrow** 1.9.5 and **KMinion** 2.3.5 at their defaults, built from the archives in
  ``../shared/peers`` into ``.cache/peers`` (``bench/steady.py``'s ``ensure_peers``): Burrow
  reads ``__consumer_offsets`` and asks for every partition's end offset every 10 s
  (``offset-refresh``) and the metadata every 60 s (``topic-refresh``); KMinion's default
  ``scrapeMode: adminApi`` asks the cluster at each Prometheus scrape of its ``/metrics``,
  which this bench makes every ``--kminion-scrape`` seconds (15 s: Prometheus's example
  scrape interval).

A watcher's bytes written to Kafka are the records it produces (Produce) and the offsets it
commits (OffsetCommit): the broker counts both requests; neither peer sends any.

Run it::

    .venv/bin/python -m bench.footprint --groups 1000 --request-groups 1000
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import random
import re
import tempfile
import threading
import time
import urllib.request
from collections.abc import Sequence
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


def snapshot_id(poll: int) -> str:
    """A poll's snapshot id as the collector makes them (``uuid4().hex``: 32 random hex
    digits, which no compression packs), the same at every run."""
    return f"{random.Random(poll).getrandbits(128):032x}"


@dataclass
class Bytes:
    version: int
    poll_event_s: float
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
    bootstrap: str,
    data_dir: Path,
    model: Model,
    version: int,
    polls: int,
    heartbeat_s: float,
    poll_event_s: float,
) -> Bytes:
    """Publish ``polls`` polls of the model as ``version``'s events through the collector
    (version 2: a ``poll`` event every ``poll_event_s``)."""
    topic = f"footprint-v{version}-{poll_event_s:g}"
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
        poll_event_interval_ms=int(poll_event_s * 1000 - POLL_S * 500),
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
            events = build_events(answers, cluster="bench", snapshot_id=snapshot_id(poll))
        else:
            events = changes.events(answers, snapshot_id=snapshot_id(poll))
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
        version,
        poll_event_s,
        polls * POLL_S,
        records,
        _log_bytes(data_dir, topic),
        storm_bytes,
        storm_records,
    )


# -- requests -------------------------------------------------------------------------------


_REQUEST = re.compile(
    r'^\[(?P<ts>[^\]]+)\] DEBUG Completed request:\{.*?"clientId":(?:"(?P<client>[^"]*)"|null),'
    r'"requestApiKeyName":"(?P<api>\w+)"'
)


class BrokerRequests:
    """Counts requests on the broker by client id and API: its request logger at DEBUG logs
    one ``Completed request`` line per request (``kafka.request.logger``, set through the
    admin API with IncrementalAlterConfigs on the broker's loggers)."""

    def __init__(self, bootstrap: str, log_path: Path) -> None:
        self.bootstrap = bootstrap
        self.log_path = log_path

    def enable(self) -> None:
        from kafka import KafkaAdminClient
        from kafka.admin import ConfigResource, ConfigResourceType

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="footprint-setup")
        try:
            for broker in admin.describe_cluster()["brokers"]:
                resource = ConfigResource(
                    ConfigResourceType.BROKER_LOGGER,
                    str(broker["node_id"] if "node_id" in broker else broker["broker_id"]),
                    configs={"kafka.request.logger": "DEBUG"},
                )
                answer = admin.alter_configs([resource])
                if "OK" not in json.dumps(answer):
                    raise SystemExit(f"cannot turn the broker's request logger on: {answer}")
        finally:
            admin.close()

    def counts(self, client_prefix: str, since_s: float, until_s: float) -> dict[str, int]:
        """The requests of clients whose id starts with ``client_prefix`` completed within
        ``[since_s, until_s)`` (wall time), by API."""
        out: collections.Counter[str] = collections.Counter()
        files = sorted(self.log_path.parent.glob(self.log_path.name + "*"))
        if any(f.name.endswith(".3") for f in files):
            print(f"  warning: {self.log_path} rolled over 3 times: older requests are lost")
        for path in files:
            with path.open(encoding="utf-8", errors="replace") as f:
                for line in f:
                    if "Completed request" not in line:
                        continue
                    m = _REQUEST.match(line)
                    if m is None or not (m["client"] or "").startswith(client_prefix):
                        continue
                    ts = datetime.datetime.strptime(m["ts"], "%Y-%m-%d %H:%M:%S,%f").timestamp()
                    if since_s <= ts < until_s:
                        out[m["api"]] += 1
        return dict(out)


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


@dataclass
class Requests:
    """One watcher's requests on the broker over ``seconds`` (after its warm-up)."""

    name: str
    seconds: float
    counts: dict[str, int]
    note: str = ""

    #: what writes to Kafka: records produced, offsets committed
    WRITES = ("PRODUCE", "OFFSET_COMMIT")

    def rate(self) -> float:
        return sum(v for k, v in self.counts.items() if k not in self.WRITES) / self.seconds


def measure_collector(
    broker: BrokerRequests,
    name: str,
    client_id: str,
    config: CollectorConfig,
    warmup_s: float,
    seconds: float,
) -> Requests:
    """The real collector (``Collector.run``) for ``warmup_s + seconds``."""
    stop = threading.Event()
    collector = Collector(config)
    thread = threading.Thread(target=lambda: collector.run(stop=stop), daemon=True)
    thread.start()
    try:
        time.sleep(warmup_s)
        since = time.time()
        time.sleep(seconds)
        until = time.time()
    finally:
        stop.set()
        thread.join(60)
    return Requests(name, seconds, broker.counts(client_id, since, until))


def _steady() -> Any:
    """``bench/steady.py`` (the peers' build and process handling), imported as the other
    benches import it: from the ``bench`` folder."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import steady

    return steady


def burrow_defaults(bootstrap: str, port: int) -> str:
    """Burrow's configuration: the broker and its HTTP port; every interval its default."""
    return f"""# written by bench/footprint.py: the loopback broker, Burrow's defaults
[general]
pidfile = "burrow.pid"

[logging]
level = "info"

[client-profile.footprint]
client-id = "footprint-burrow"
kafka-version = "3.6.0"

[cluster.local]
class-name = "kafka"
client-profile = "footprint"
servers = {json.dumps([bootstrap])}

[consumer.local]
class-name = "kafka"
cluster = "local"
client-profile = "footprint"
servers = {json.dumps([bootstrap])}

[storage.default]
class-name = "inmemory"

[evaluator.default]
class-name = "caching"

[httpserver.default]
address = "127.0.0.1:{port}"
"""


def kminion_defaults(bootstrap: str, port: int) -> str:
    """KMinion's configuration: the broker, its client id and port; the rest its defaults
    (consumer groups ``scrapeMode: adminApi``, topics and log dirs on, end-to-end off)."""
    return f"""# written by bench/footprint.py: the loopback broker, KMinion's defaults
kafka:
  brokers: [ "{bootstrap}" ]
  clientId: "footprint-kminion"
exporter:
  host: "127.0.0.1"
  port: {port}
"""


def measure_peer(
    broker: BrokerRequests,
    name: str,
    client_id: str,
    cmd: list[str],
    work: Path,
    env: dict[str, str],
    warmup_s: float,
    seconds: float,
    scrape: tuple[str, float] | None = None,
) -> Requests:
    """A peer process for ``warmup_s + seconds``; ``scrape``: (its metrics URL, a GET of it
    every this many seconds, as Prometheus would)."""
    import os

    steady = _steady()
    proc = steady.Process(cmd, work / f"{client_id}.log", cwd=work, env={**os.environ, **env})
    stop = threading.Event()
    scrapes = 0

    def scraper(url: str, every_s: float) -> None:
        nonlocal scrapes
        while not stop.wait(every_s):
            try:
                with urllib.request.urlopen(url, timeout=every_s) as resp:
                    resp.read()
                scrapes += 1
            except OSError:
                pass  # not up yet: the next scrape

    thread = None
    if scrape is not None:
        thread = threading.Thread(target=scraper, args=scrape, daemon=True)
        thread.start()
    try:
        time.sleep(warmup_s)
        proc.check_alive()
        since = time.time()
        time.sleep(seconds)
        until = time.time()
        proc.check_alive()
    finally:
        stop.set()
        if thread is not None:
            thread.join(30)
        proc.stop()
    note = f"{scrapes} scrapes" if scrape is not None else ""
    return Requests(name, seconds, broker.counts(client_id, since, until), note)


def measure_requests(
    bootstrap: str, broker: BrokerRequests, tmp: Path, warmup_s: float, seconds: float,
    kminion_scrape_s: float,
) -> list[Requests]:  # fmt: skip
    """The collector's three shapes, then Burrow and KMinion if they can be built."""
    from tests.conftest import free_ports

    out: list[Requests] = []
    for label, version, describe_s in (
        ("collector, schema 1", 1, None),
        ("collector, schema 2, DescribeGroups every poll", 2, float(POLL_S)),
        ("collector, schema 2 (defaults)", 2, None),
    ):
        client_id = f"footprint-collector-{len(out)}"
        config = CollectorConfig(
            bootstrap_servers=bootstrap,
            topic=f"footprint-requests-{len(out)}",
            schema_version=version,
            group_filter="req-group-.*",
            client_id=client_id,
            describe_interval_s=describe_s or CollectorConfig.describe_interval_s,
        )
        r = measure_collector(broker, label, client_id, config, warmup_s, seconds)
        print(f"{label}: {r.counts}", flush=True)
        out.append(r)

    peers = _steady().ensure_peers()
    if peers is None:
        return out
    burrow, kminion = peers
    (port,) = free_ports(1)
    work = tmp / "burrow"
    work.mkdir()
    (work / "burrow.toml").write_text(burrow_defaults(bootstrap, port), encoding="utf-8")
    r = measure_peer(
        broker, "Burrow 1.9.5 (defaults)", "footprint-burrow",
        [str(burrow), "--config-dir", str(work)], work, {}, warmup_s, seconds,
    )  # fmt: skip
    print(f"{r.name}: {r.counts}", flush=True)
    out.append(r)
    (port,) = free_ports(1)
    work = tmp / "kminion"
    work.mkdir()
    config_path = work / "kminion.yaml"
    config_path.write_text(kminion_defaults(bootstrap, port), encoding="utf-8")
    r = measure_peer(
        broker, f"KMinion 2.3.5 (defaults, scraped every {kminion_scrape_s:g} s)",
        "footprint-kminion", [str(kminion)], work, {"CONFIG_FILEPATH": str(config_path)},
        warmup_s, seconds, scrape=(f"http://127.0.0.1:{port}/metrics", kminion_scrape_s),
    )  # fmt: skip
    print(f"{r.name}: {r.counts}", flush=True)
    out.append(r)
    return out


# -- the run --------------------------------------------------------------------------------


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e5 else f"{n / 1e3:,.1f} KB"


def _writes_per_day(results: dict[str, Any], r: dict[str, Any]) -> str:
    """Bytes a watcher writes to Kafka a day at the request bench's group count: the
    collector's from the bytes bench when it modelled as many groups, a peer's none when it
    sent no Produce and no OffsetCommit."""
    writes = sum(r["counts"].get(k, 0) for k in Requests.WRITES)
    if r.get("version") is None:
        return "0 B (no Produce, no OffsetCommit)" if writes == 0 else f"{writes} write requests"
    if results["groups"] != results["request_groups"]:
        return "-"
    for b in results["bytes"]:
        if b["version"] == r["version"] and b["poll_event_s"] == r["poll_event_s"]:
            return _mb(b["bytes"] * DAY_S / b["modelled_s"]) + " a day"
    return "-"


def report(results: dict[str, Any]) -> str:
    lines = ["", "bytes written to Kafka (log segments, before replication):", ""]
    lines.append(
        "| schema | poll events | groups | modelled | records | bytes | per day | "
        "per group per day | 10,000 groups per day (extrapolated) | storm poll |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for b in results["bytes"]:
        per_day = b["bytes"] * DAY_S / b["modelled_s"]
        per_group = per_day / results["groups"]
        every = "-" if b["version"] == 1 else f"every {b['poll_event_s']:g} s"
        lines.append(
            f"| {b['version']} | {every} | {results['groups']:,} | {b['modelled_s'] // 60} min | "
            f"{b['records']:,} | {_mb(b['bytes'])} | {_mb(per_day)} | {per_group / 1e3:,.1f} KB | "
            f"{_mb(per_group * 10_000)} | {b['storm_records']:,} records, "
            f"{_mb(b['storm_bytes'])} |"
        )
    lines += ["", f"targets: <= {_mb(TARGET_DAY_BYTES_10K)} a day at 10,000 groups, "
              f"<= {_mb(TARGET_GROUP_DAY_BYTES)} per stable group per day"]  # fmt: skip
    if results.get("requests"):
        lines += ["", f"requests to the broker, {results['request_groups']:,} groups "
                  "(counted by the broker; writes apart):", ""]  # fmt: skip
        lines.append("| watcher | requests/s | of which Fetch | by API, per second | "
                     "written to Kafka |")  # fmt: skip
        lines.append("|---|---|---|---|---|")
        for r in results["requests"]:
            reads = {k: v for k, v in r["counts"].items() if k not in Requests.WRITES}
            by_api = ", ".join(
                f"{k} {v / r['seconds']:.2f}" for k, v in sorted(reads.items(), key=lambda x: -x[1])
            )
            total = sum(reads.values()) / r["seconds"]
            note = f" ({r['note']})" if r.get("note") else ""
            lines.append(
                f"| {r['name']}{note} | {total:.2f} | {reads.get('FETCH', 0) / r['seconds']:.2f} | "
                f"{by_api} | {_writes_per_day(results, r)} |"
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
    parser.add_argument(
        "--poll-event-interval",
        type=float,
        default=CollectorConfig.poll_event_interval_s,
        metavar="S",
        help="version 2's poll events (also measured at every poll)",
    )
    parser.add_argument("--request-groups", type=int, default=1000, help="0: no requests run")
    parser.add_argument("--request-seconds", type=float, default=60.0)
    parser.add_argument("--request-warmup", type=float, default=15.0, metavar="S")
    parser.add_argument("--kminion-scrape", type=float, default=15.0, metavar="S")
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
            runs = [
                (2, args.hours * 60, args.poll_event_interval),
                (2, args.hours * 60, float(POLL_S)),
                (1, args.v1_minutes, 0.0),
            ]
            for version, minutes, poll_event_s in runs:
                started = time.monotonic()
                polls = int(minutes * 60 / POLL_S)
                b = measure_bytes(
                    bootstrap, data_dir, model, version, polls, args.heartbeat, poll_event_s
                )
                results["bytes"].append(b.__dict__)
                print(
                    f"v{version} (poll events every {poll_event_s:g} s): {polls} polls, "
                    f"{b.records:,} records, {_mb(b.bytes)} in {time.monotonic() - started:.0f} s",
                    flush=True,
                )
            if args.request_groups:
                make_groups(bootstrap, args.request_groups, args.partitions)
                broker = BrokerRequests(bootstrap, config.log_path)
                broker.enable()
                measured = measure_requests(
                    bootstrap, broker, Path(tmp), args.request_warmup, args.request_seconds,
                    args.kminion_scrape,
                )  # fmt: skip
                versions = [(1, 0.0), (2, float(POLL_S)), (2, args.poll_event_interval)]
                for i, r in enumerate(measured):
                    row = {"name": r.name, "seconds": r.seconds, "counts": r.counts,
                           "note": r.note}  # fmt: skip
                    if i < len(versions):  # the collector's: its bytes at the same cadence
                        row["version"], row["poll_event_s"] = versions[i]
                    results["requests"].append(row)
        finally:
            kafka_local.stop(config)
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
