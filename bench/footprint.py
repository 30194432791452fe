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
modelled ``--hours`` (default 1: every group's rebalance, 30 heartbeats, 6 full end-offset
events); version 1, whose every poll is a full copy, runs ``--v1-minutes`` (default 5). Each
is scaled to a day (its bytes x 86,400 s / the modelled seconds) and to one group, and
extrapolated to 10,000 groups from the measured per-group rate.

Version 2 runs twice: ``poll`` events at the collector's default cadence
(``poll_event_interval_s``, 20 s), and at every poll, as the collector published them before
that setting.

**Requests.** ``--request-groups`` real groups on the broker (offsets committed with the
admin API; no live members, so they are ``Empty``: each is listed, described and fetched as
a settled group is), then one watcher at a time against them, each counted on the broker
(its request logger, ``kafka.request.logger`` at DEBUG, set through the admin API: one line
per request with the client id and the API) over ``--request-seconds`` after
``--request-warmup`` seconds, and in 5 s buckets of that window (the peak bucket: a burst).
The broker keeps ``--broker-log-files`` rolled 50 MB files of its log (at 10,000 groups the
request logger fills one in about 20 s); a count whose window they no longer reach stops
the bench rather than come out short.
Each watcher runs under each condition of the groups, so the rows compare:

* **settled**: nothing changes (the collector's floor);
* **churn** (``--churn``, on by default): real members make the groups rebalance, one
  rebalance per group an hour (``--rebalances-per-hour`` ``r``): every
  ``3600 / (groups r)`` s a classic-protocol member (Java kafka-clients,
  ``group.protocol=classic``, the client's defaults) joins a random settled group on the
  group's topic, so the group goes Empty, PreparingRebalance (the broker keeps Kafka's default 3 s
  ``group.initial.rebalance.delay.ms``), CompletingRebalance, Stable; it stays
  ``--churn-dwell`` seconds (12; at least 6 s Stable, so a 5 s poll sees it), then closes
  (LeaveGroup: Empty again). The visits run from the watcher's start, through its warm-up
  and window, the same for every watcher (``--churn-seed``);
* **storm** (``--storm``, on by default): the same churn, and 10 % of the groups joined at
  one moment mid-window (their consumers built 10 s before, so the joins go out together);
  the row gives the requests of the 5 s buckets from the storm's joins to a poll after its
  members left, beside the median of the window's other buckets.

All the members run in one JVM (``bench/java/ChurnConsumers.java``, commanded on its stdin;
its peak RSS and most members at once are reported); their client ids start with
``footprint-churn-``, which no watcher's does, so the counts leave them out (each row notes
how many joined). The watchers:

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

Five watchers under three conditions are 15 windows of ``--request-warmup`` +
``--request-seconds`` (75 s by default: about 19 minutes); ``--no-churn --no-storm``
measures the settled groups only.

A watcher's bytes written to Kafka are the records it produces (Produce) and the offsets it
commits (OffsetCommit): the broker counts both requests; neither peer sends any.

Run it::

    .venv/bin/python -m bench.footprint --groups 1000 --request-groups 1000
    .venv/bin/python -m bench.footprint --groups 1000 --request-groups 10000 --hours 0.25

It prints the requests table (a row per watcher and condition) and the same as one row per
watcher (settled, churn, storm: requests/s and the peak 5 s bucket; the storm's polls).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import heapq
import json
import random
import re
import statistics
import tempfile
import threading
import time
import urllib.request
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
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

#: a churn member's stay in its group: the broker's initial rebalance delay (Kafka's default,
#: 3 s, which this bench's broker keeps), then Stable long enough for a 5 s poll to see
CHURN_DWELL_S = 12.0
#: a group settles (no member) at least this long between two visits: a poll sees it Empty
SETTLED_GAP_S = 2.0 * POLL_S
#: a member stays at least this long after it had its partitions: a 5 s poll sees it Stable
STABLE_MIN_S = 6.0
#: a member's consumer is built this long before it joins (the storm's join at one moment)
PREPARE_LEAD_S = 10.0
#: the request counts' time buckets: the storm's polls stand out in them
BUCKET_S = float(POLL_S)
CHURN_CLIENT_PREFIX = "footprint-churn-"
CHURN_JAVA = Path(__file__).resolve().parent / "java" / "ChurnConsumers.java"
#: one JVM for up to a storm's members: a serial collector and the C1 compiler (a small,
#: shared machine), a heap for a thousand consumers
CHURN_JVM_OPTIONS = ("-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
#: the broker's group.initial.rebalance.delay.ms: Kafka's default, as on a real cluster
INITIAL_REBALANCE_DELAY_MS = 3000


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
                (topic, p): (self.end_offset(topic, p, poll) - 10, "", 0) for p in parts
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
            (t, p): self.end_offset(t, p, poll)
            for t in self.topics()
            for p in range(self.partitions)
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
    def end_offset(topic: str, partition: int, poll: int) -> int:
        """A producer moving every partition, each at its own pace: a partition's offsets
        start anywhere below 10^10 (a topic's age) and grow by 1 to 100 records a second
        (its share of the traffic), a little unevenly from poll to poll, as a real
        cluster's do (offsets alike across partitions would compress better than any real
        cluster's)."""
        seed = zlib.crc32(f"{topic}/{partition}".encode())
        base = seed * 2 % 10_000_000_000
        rate = 1 + seed % 100
        jitter = zlib.crc32(poll.to_bytes(8, "little"), seed) % rate
        return base + poll * POLL_S * rate + jitter


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


def parse_request(line: str) -> tuple[float, str, str] | None:
    """One line of the broker's request logger: (its wall time, the client id, the API), or
    None for any other line."""
    if "Completed request" not in line:
        return None
    m = _REQUEST.match(line)
    if m is None:
        return None
    ts = datetime.datetime.strptime(m["ts"], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return ts, m["client"] or "", m["api"]


def bucket_counts(
    times: Sequence[float], since_s: float, until_s: float, bucket_s: float
) -> list[int]:
    """How many of ``times`` fall in each whole ``bucket_s`` bucket of ``[since_s, until_s)``,
    the first starting at ``since_s``; a shorter bucket left at the end is not counted (its
    count would not compare with the others')."""
    n = int((until_s - since_s) // bucket_s) if bucket_s > 0 else 0
    if n <= 0:
        raise ValueError(f"no whole bucket of {bucket_s} s in [{since_s}, {until_s})")
    out = [0] * n
    for t in times:
        i = int((t - since_s) // bucket_s)
        if since_s <= t and i < n:
            out[i] += 1
    return out


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

    def requests(
        self, client_prefix: str, since_s: float, until_s: float
    ) -> list[tuple[float, str]]:
        """(wall time, API) of the requests of clients whose id starts with
        ``client_prefix``, completed within ``[since_s, until_s)``. A rolled file last written
        before the window is not read; when none is and the oldest request read is after the
        window's start, the log rolled past it and the counts would miss requests: that
        stops the bench."""
        out: list[tuple[float, str]] = []
        oldest = float("inf")
        files = sorted(self.log_path.parent.glob(self.log_path.name + "*"))
        reaches_back = False
        for path in files:
            if path.stat().st_mtime < since_s:
                reaches_back = True
                continue
            with path.open(encoding="utf-8", errors="replace") as f:
                for line in f:
                    r = parse_request(line)
                    if r is None:
                        continue
                    oldest = min(oldest, r[0])
                    if r[1].startswith(client_prefix) and since_s <= r[0] < until_s:
                        out.append((r[0], r[2]))
        if not reaches_back and len(files) > 1 and oldest > since_s:
            raise SystemExit(
                f"{self.log_path}: its oldest request is {oldest - since_s:.1f} s after the "
                "window's start; the rolled files before it are gone (raise --broker-log-files)"
            )
        return sorted(out)

    def counts(self, client_prefix: str, since_s: float, until_s: float) -> dict[str, int]:
        """The requests of clients whose id starts with ``client_prefix`` completed within
        ``[since_s, until_s)`` (wall time), by API."""
        return dict(
            collections.Counter(api for _, api in self.requests(client_prefix, since_s, until_s))
        )


def request_group(g: int) -> str:
    """The request bench's group ``g``."""
    return f"req-group-{g:05d}"


def request_topic(g: int) -> str:
    """The topic group ``g`` consumes (20 groups a topic)."""
    return f"req-topic-{g // 20:03d}"


#: Records (a topic, each of its partitions) one CreateTopics request creates at most here.
CREATE_RECORDS_PER_REQUEST = 5_000


def make_groups(bootstrap: str, n: int, partitions: int) -> None:
    """``n`` groups with committed offsets (Empty), each on its topic's partitions."""
    from kafka import KafkaAdminClient, KafkaProducer, OffsetAndMetadata, TopicPartition
    from kafka.errors import CoordinatorNotAvailableError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        topics = sorted({request_topic(g) for g in range(n)})
        # the controller refuses a request that creates more than ~10,000 records at once
        # ("excessively large batch operation"): a topic and each of its partitions are one
        per_request = max(1, CREATE_RECORDS_PER_REQUEST // (partitions + 1))
        for i in range(0, len(topics), per_request):
            admin.create_topics(
                {
                    t: {"num_partitions": partitions, "replication_factor": 1}
                    for t in topics[i : i + per_request]
                }
            )
        deadline = time.monotonic() + 300
        while missing := set(topics) - set(admin.list_topics()):  # thousands take a while
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(missing)} of {len(topics)} topics not created in 300 s")
            time.sleep(1)
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50)
        for t in topics:
            for p in range(partitions):
                producer.send(t, b"x" * 10, partition=p)
        producer.flush()
        producer.close()
        for g in range(n):
            offsets = {
                TopicPartition(request_topic(g), p): OffsetAndMetadata(0, "", -1)
                for p in range(partitions)
            }
            deadline = time.monotonic() + 120
            while True:  # the first commit creates __consumer_offsets: wait for its leaders
                try:
                    admin.alter_group_offsets(request_group(g), offsets)
                    break
                except CoordinatorNotAvailableError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(1)
    finally:
        admin.close()


# -- churn: real members making the groups rebalance ---------------------------------------


@dataclass(frozen=True)
class Visit:
    """A member in group ``group`` (``request_group``'s index) from ``join_s`` to
    ``leave_s``, seconds after its watcher started; ``storm``: one of the storm's."""

    group: int
    join_s: float
    leave_s: float
    storm: bool = False


def churn_schedule(
    groups: int,
    span_s: float,
    *,
    per_hour: float = 1.0,
    dwell_s: float = CHURN_DWELL_S,
    storm_at_s: float | None = None,
    seed: int = 0,
) -> list[Visit]:
    """The visits that make ``groups`` groups rebalance ``per_hour`` times each an hour over
    ``span_s`` seconds: one every ``3600 / (groups * per_hour)`` s from a random first one,
    each to a random group settled for ``SETTLED_GAP_S`` before and after it, a member
    staying ``dwell_s``; with ``storm_at_s``, also ``STORM_FRACTION`` of the groups (at least
    one, among those settled then) joined at that moment. The same arguments give the same
    visits, sorted by time; the churn's are the same with or without the storm."""
    if groups <= 0 or span_s <= 0 or per_hour < 0 or dwell_s <= 0:
        raise ValueError(
            f"churn needs groups > 0, span_s > 0, per_hour >= 0, dwell_s > 0: got {groups}, "
            f"{span_s}, {per_hour}, {dwell_s}"
        )
    if storm_at_s is not None and not 0 <= storm_at_s < span_s:
        raise ValueError(f"the storm at {storm_at_s} s is outside the span [0, {span_s})")
    rng = random.Random(seed)
    visits: list[Visit] = []
    busy: dict[int, list[tuple[float, float]]] = collections.defaultdict(list)

    def free(g: int, start: float, end: float) -> bool:
        return all(end + SETTLED_GAP_S <= a or b + SETTLED_GAP_S <= start for a, b in busy[g])

    def add(g: int, at: float, storm: bool) -> None:
        visits.append(Visit(g, at, at + dwell_s, storm))
        busy[g].append((at, at + dwell_s))

    if per_hour > 0:
        interval = 3600 / (groups * per_hour)
        first = rng.uniform(0, interval)
        n = 0
        while (at := first + n * interval) < span_s:
            picks = (rng.randrange(groups) for _ in range(64))
            pick = next((g for g in picks if free(g, at, at + dwell_s)), None)
            if pick is None:  # most groups busy: choose among the free ones
                candidates = [g for g in range(groups) if free(g, at, at + dwell_s)]
                if not candidates:
                    raise ValueError(f"no group of {groups} is settled at {at:.1f} s")
                pick = rng.choice(candidates)
            add(pick, at, False)
            n += 1
    if storm_at_s is not None:  # after the churn, which is then the same with or without it
        size = max(1, round(groups * STORM_FRACTION))
        settled = [g for g in range(groups) if free(g, storm_at_s, storm_at_s + dwell_s)]
        if len(settled) < size:
            raise ValueError(f"{len(settled)} of {groups} groups settled for a storm of {size}")
        for g in sorted(rng.sample(settled, size)):
            add(g, storm_at_s, True)
    return sorted(visits, key=lambda v: (v.join_s, v.group))


def storm_share(
    buckets: Sequence[int], storm_offset_s: float, dwell_s: float, bucket_s: float = BUCKET_S
) -> tuple[int, int, float]:
    """The storm's requests out of a window's per-bucket counts: (the requests of the buckets
    from the one the storm starts in through the one a poll after its members left, how many
    buckets that is, the median of the other buckets)."""
    first = int(storm_offset_s // bucket_s)
    last = int((storm_offset_s + dwell_s + POLL_S) // bucket_s)
    if not 0 <= first < len(buckets):
        raise ValueError(f"the storm at {storm_offset_s} s is outside the {len(buckets)} buckets")
    inside = buckets[first : last + 1]
    others = [*buckets[:first], *buckets[last + 1 :]]
    median = float(statistics.median(others)) if others else 0.0
    return sum(inside), len(inside), median


class ChurnError(RuntimeError):
    """The churn members' JVM failed: it did not start, died, or a member did not leave."""


@dataclass
class Playback:
    """One watcher's visits as played: what the members did, from their acknowledgements."""

    visits: int = 0
    storm_members: int = 0
    joined_ms: list[int] = field(default_factory=list)
    left: int = 0
    errors: list[str] = field(default_factory=list)
    #: joins whose leave came before the member had its partitions
    unassigned: int = 0
    most_members: int = 0

    def summary(self) -> dict[str, Any]:
        ms = sorted(self.joined_ms)
        return {
            "visits": self.visits,
            "storm_members": self.storm_members,
            "joined": len(ms),
            "join_ms_median": ms[len(ms) // 2] if ms else None,
            "join_ms_max": ms[-1] if ms else None,
            "left": self.left,
            "unassigned": self.unassigned,
            "errors": self.errors[:5],
            "most_members": self.most_members,
        }


class ChurnDriver:
    """``bench/java/ChurnConsumers.java``: every churn member in one JVM, commanded through
    its stdin (members' client ids start with ``CHURN_CLIENT_PREFIX``, which no watcher's
    does, so the request counts leave them out)."""

    def __init__(self, bootstrap: str, log: Path) -> None:
        import os
        import subprocess

        steady = _steady()
        from streaming.simulate.model import SetupError
        from streaming.simulate.runner import compile_client_java

        if not any(steady.CLIENT_JARS.glob("kafka-clients-*.jar")):
            raise ChurnError(f"no kafka-clients jars in {steady.CLIENT_JARS}: run `make setup`")
        try:
            classes = compile_client_java(CHURN_JAVA, steady.JAVA_CLASSES)
        except SetupError as e:
            raise ChurnError(str(e)) from e
        self._stderr = log.open("w")
        self.proc = subprocess.Popen(
            ["java", *CHURN_JVM_OPTIONS, "-cp", f"{classes}{os.pathsep}{steady.CLIENT_JARS}/*",
             "ChurnConsumers", "--bootstrap-server", bootstrap,
             "--client-prefix", CHURN_CLIENT_PREFIX],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
            bufsize=1,
        )  # fmt: skip
        self.log = log
        self.peak_rss = 0
        self.peak_members = 0
        self._cond = threading.Condition()
        self._lines: list[str] = []
        self._playback: Playback | None = None
        self._joined_at: dict[str, float] = {}  # group -> monotonic time it was assigned
        self._out: set[str] = set()  # groups whose member has left (or failed)
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._sample, daemon=True).start()
        self._wait(lambda: "ready" in self._lines, 60, "to start")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            words = raw.split()
            if not words:
                continue
            with self._cond:
                self._lines.append(raw.strip())
                pb = self._playback
                if words[0] == "joined" and pb is not None:
                    pb.joined_ms.append(int(words[2]))
                    self._joined_at[words[1]] = time.monotonic()
                elif words[0] in ("left", "error") and pb is not None:
                    if words[0] == "error":
                        pb.errors.append(raw.strip())
                    else:
                        pb.left += 1
                    self._out.add(words[1])
                elif words[0] == "stats":
                    fields = dict(w.split("=", 1) for w in words[1:])
                    self.peak_members = max(self.peak_members, int(fields["peak"]))
                self._cond.notify_all()

    def _sample(self) -> None:
        status_kib = _steady().stream._status_kib
        while self.proc.poll() is None:
            self.peak_rss = max(self.peak_rss, status_kib(self.proc.pid, "VmHWM") * 1024)
            time.sleep(0.5)

    def _wait(self, done: Any, timeout_s: float, what: str) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: done() or self.proc.poll() is not None, timeout_s):
                raise ChurnError(
                    f"ChurnConsumers did not {what} within {timeout_s:g} s; see {self.log}"
                )
            if not done():
                code = self.proc.returncode
                raise ChurnError(
                    f"ChurnConsumers exited with {code} waiting {what}; see {self.log}"
                )

    def _send(self, line: str) -> None:
        assert self.proc.stdin is not None
        if self.proc.poll() is not None:
            raise ChurnError(f"ChurnConsumers exited with {self.proc.returncode}; see {self.log}")
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def play(self, visits: Sequence[Visit], span_s: float, stop: threading.Event) -> Playback:
        """Send the visits' commands at their times (from now) until ``span_s`` or ``stop``,
        then have every member still in a group leave and wait for all of them. A member
        leaves no sooner than ``STABLE_MIN_S`` after it had its partitions (a loaded broker
        can take longer than the initial rebalance delay to complete a join): every visit
        is seen Stable by a poll."""
        started = time.monotonic()
        commands: list[tuple[float, int, int, str]] = []  # (at, order, group, verb)
        for v in visits:
            if v.join_s >= span_s:
                continue
            commands.append((max(0.0, v.join_s - PREPARE_LEAD_S), 0, v.group, "prepare"))
            commands.append((v.join_s, 1, v.group, "join"))
            commands.append((v.leave_s, 2, v.group, "leave"))
        heapq.heapify(commands)
        storm = {v.group for v in visits if v.storm}
        pb = Playback()
        with self._cond:
            self._playback = pb
            self._out = set()
            self._joined_at = {}
        touched: set[str] = set()
        left: set[str] = set()
        try:
            while commands and commands[0][0] < span_s:
                at, order, g, verb = heapq.heappop(commands)
                if stop.wait(max(0.0, started + at - time.monotonic())):
                    break
                group = request_group(g)
                if verb == "leave":
                    with self._cond:
                        joined = self._joined_at.get(group)
                        gone = group in self._out
                    now = time.monotonic() - started
                    stable_until = None if joined is None else joined - started + STABLE_MIN_S
                    if not gone and (stable_until is None or stable_until > now):
                        later = now + 0.5 if stable_until is None else stable_until
                        heapq.heappush(commands, (later, order, g, verb))
                        continue
                    if not gone:
                        self._send(f"leave {group}")
                    left.add(group)
                else:
                    self._send(f"{verb} {group} {request_topic(g)}")
                    if verb == "prepare":
                        touched.add(group)
                        pb.most_members = max(pb.most_members, len(touched - left))
                    else:
                        pb.visits += 1
                        pb.storm_members += g in storm
            stop.wait(max(0.0, started + span_s - time.monotonic()))
        finally:
            for group in sorted(touched - left):
                self._send(f"leave {group}")
            self._wait(lambda: touched <= self._out, 120, f"let {len(touched)} members leave")
            self._send("stats")
            with self._cond:
                self._playback = None
        pb.unassigned = pb.visits - len(pb.joined_ms)
        return pb

    def close(self) -> None:
        """Quit the JVM (its members leave) and wait for it."""
        import subprocess

        if self.proc.poll() is None:
            try:
                self._send("quit")
                self.proc.wait(timeout=90)
            except (ChurnError, OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()


@dataclass(frozen=True)
class Condition:
    """What the groups do while a watcher is measured: ``settled`` (nothing: Empty groups),
    ``churn`` (``visits``: one rebalance per group an hour), ``storm`` (the churn's visits and
    a storm's at ``storm_at_s``, seconds after the watcher started)."""

    name: str
    visits: tuple[Visit, ...] = ()
    storm_at_s: float | None = None


@dataclass
class Requests:
    """One watcher's requests on the broker over ``seconds`` (after its warm-up) under
    ``condition``; ``buckets``: its reads in each ``BUCKET_S`` of the window; the churn
    members' own requests in the window apart (``members``)."""

    name: str
    seconds: float
    counts: dict[str, int]
    note: str = ""
    condition: str = "settled"
    buckets: list[int] = field(default_factory=list)
    #: the storm's start, seconds into the window
    storm_offset_s: float | None = None
    churn: dict[str, Any] | None = None
    members: dict[str, int] = field(default_factory=dict)

    #: what writes to Kafka: records produced, offsets committed
    WRITES = ("PRODUCE", "OFFSET_COMMIT")

    def rate(self) -> float:
        return sum(v for k, v in self.counts.items() if k not in self.WRITES) / self.seconds


class Window:
    """A watcher's measured window: its warm-up, then ``seconds`` counted, while the
    condition's members (if any) join and leave from the watcher's start on."""

    def __init__(
        self,
        broker: BrokerRequests,
        client_id: str,
        warmup_s: float,
        seconds: float,
        condition: Condition,
        driver: ChurnDriver | None,
    ) -> None:
        if condition.visits and driver is None:
            raise ValueError(f"condition {condition.name!r} has visits but no churn driver")
        self.broker, self.client_id = broker, client_id
        self.warmup_s, self.seconds, self.condition = warmup_s, seconds, condition
        self.driver = driver

    def run(self, name: str, alive: Any = None, note: Any = None) -> Requests:
        """Play the condition and count; ``alive()`` raises when the watcher died (checked
        after the warm-up and at the end), ``note()`` a text for the row."""
        stop = threading.Event()
        played: list[Playback] = []
        failed: list[ChurnError] = []
        started = time.time()

        def play() -> None:
            assert self.driver is not None
            try:
                span = self.warmup_s + self.seconds
                played.append(self.driver.play(self.condition.visits, span, stop))
            except ChurnError as e:
                failed.append(e)

        player = None
        if self.condition.visits:
            player = threading.Thread(target=play, daemon=True)
            player.start()
        try:
            time.sleep(self.warmup_s)
            if alive is not None:
                alive()
            since = time.time()
            time.sleep(self.seconds)
            until = time.time()
            if alive is not None:
                alive()
        finally:
            stop.set()
            if player is not None:
                player.join(240)
        if failed:
            raise failed[0]
        reads = self.broker.requests(self.client_id, since, until)
        at = self.condition.storm_at_s
        return Requests(
            name,
            self.seconds,
            dict(collections.Counter(api for _, api in reads)),
            note() if note is not None else "",
            self.condition.name,
            bucket_counts(
                [t for t, api in reads if api not in Requests.WRITES], since, until, BUCKET_S
            ),
            None if at is None else started + at - since,
            played[0].summary() if played else None,
            self.broker.counts(CHURN_CLIENT_PREFIX, since, until) if played else {},
        )


def measure_collector(window: Window, name: str, config: CollectorConfig) -> Requests:
    """The real collector (``Collector.run``) for the window."""
    stop = threading.Event()
    collector = Collector(config)
    thread = threading.Thread(target=lambda: collector.run(stop=stop), daemon=True)
    thread.start()

    def alive() -> None:
        if not thread.is_alive():
            raise SystemExit(f"the collector ({name}) stopped during its window")

    try:
        return window.run(name, alive)
    finally:
        stop.set()
        thread.join(60)


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
    window: Window,
    name: str,
    cmd: list[str],
    work: Path,
    env: dict[str, str],
    scrape: tuple[str, float] | None = None,
) -> Requests:
    """A peer process for the window; ``scrape``: (its metrics URL, a GET of it every this
    many seconds, as Prometheus would)."""
    import os

    steady = _steady()
    log = work / f"{window.client_id}-{window.condition.name}.log"
    proc = steady.Process(cmd, log, cwd=work, env={**os.environ, **env})
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
        return window.run(
            name,
            proc.check_alive,
            lambda: f"{scrapes} scrapes" if scrape is not None else "",
        )
    finally:
        stop.set()
        if thread is not None:
            thread.join(30)
        proc.stop()


def conditions(
    groups: int, warmup_s: float, seconds: float, *, churn: bool, storm: bool,
    per_hour: float, dwell_s: float, seed: int,
) -> list[Condition]:  # fmt: skip
    """The conditions each watcher is measured under: settled, then (``churn``) the churn's
    visits over its warm-up and window, then (``storm``) the same with a storm centred in
    the window so that its polls fall inside it. The same visits for every watcher."""
    span = warmup_s + seconds
    out = [Condition("settled")]
    if churn:
        visits = churn_schedule(groups, span, per_hour=per_hour, dwell_s=dwell_s, seed=seed)
        out.append(Condition("churn", tuple(visits)))
    if storm:
        at = warmup_s + max(0.0, (seconds - dwell_s - POLL_S) / 2)
        visits = churn_schedule(
            groups, span, per_hour=per_hour, dwell_s=dwell_s, storm_at_s=at, seed=seed
        )
        out.append(Condition("storm", tuple(visits), at))
    return out


def measure_requests(
    bootstrap: str, broker: BrokerRequests, tmp: Path, warmup_s: float, seconds: float,
    kminion_scrape_s: float, conds: Sequence[Condition], driver: ChurnDriver | None,
) -> list[Requests]:  # fmt: skip
    """The collector's three shapes, then Burrow and KMinion if they can be built, each
    under every condition."""
    from tests.conftest import free_ports

    out: list[Requests] = []

    def done(r: Requests) -> None:
        churn = f", members {r.churn}" if r.churn else ""
        print(f"{r.name} [{r.condition}]: {r.counts}{churn}", flush=True)
        out.append(r)

    shapes = (
        ("collector, schema 1", 1, None),
        ("collector, schema 2, DescribeGroups every poll", 2, float(POLL_S)),
        ("collector, schema 2 (defaults)", 2, None),
    )
    for i, (label, version, describe_s) in enumerate(shapes):
        for cond in conds:
            client_id = f"footprint-collector-{i}"
            config = CollectorConfig(
                bootstrap_servers=bootstrap,
                topic=f"footprint-requests-{i}",
                schema_version=version,
                group_filter="req-group-.*",
                client_id=client_id,
                describe_interval_s=describe_s or CollectorConfig.describe_interval_s,
            )
            window = Window(broker, client_id, warmup_s, seconds, cond, driver)
            done(measure_collector(window, label, config))

    peers = _steady().ensure_peers()
    if peers is None:
        return out
    burrow, kminion = peers
    for cond in conds:
        (port,) = free_ports(1)
        work = tmp / f"burrow-{cond.name}"
        work.mkdir()
        (work / "burrow.toml").write_text(burrow_defaults(bootstrap, port), encoding="utf-8")
        window = Window(broker, "footprint-burrow", warmup_s, seconds, cond, driver)
        done(
            measure_peer(
                window,
                "Burrow 1.9.5 (defaults)",
                [str(burrow), "--config-dir", str(work)],
                work,
                {},
            )
        )
    for cond in conds:
        (port,) = free_ports(1)
        work = tmp / f"kminion-{cond.name}"
        work.mkdir()
        config_path = work / "kminion.yaml"
        config_path.write_text(kminion_defaults(bootstrap, port), encoding="utf-8")
        window = Window(broker, "footprint-kminion", warmup_s, seconds, cond, driver)
        done(
            measure_peer(
                window,
                f"KMinion 2.3.5 (defaults, scraped every {kminion_scrape_s:g} s)",
                [str(kminion)],
                work,
                {"CONFIG_FILEPATH": str(config_path)},
                scrape=(f"http://127.0.0.1:{port}/metrics", kminion_scrape_s),
            )
        )
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
        lines += _requests_report(results)
    return "\n".join(lines)


def _storm_text(r: dict[str, Any], dwell_s: float) -> str:
    if r.get("storm_offset_s") is None or not r.get("buckets"):
        return "-"
    total, n, median = storm_share(r["buckets"], r["storm_offset_s"], dwell_s)
    return (
        f"{total:,} in its {n} buckets ({n * BUCKET_S:g} s; the others' median {median:g} a bucket)"
    )


def _requests_report(results: dict[str, Any]) -> list[str]:
    """The requests table (a row per watcher and condition), then the same per watcher."""
    churn = results.get("churn") or {}
    dwell_s = churn.get("dwell_s", CHURN_DWELL_S)
    lines = ["", f"requests to the broker, {results['request_groups']:,} groups "
             "(counted by the broker; writes apart):", ""]  # fmt: skip
    if churn:
        lines[-2] += (
            f" churn: {churn['per_hour']:g} rebalance(s) per group an hour, a member staying "
            f"{dwell_s:g} s; storm: {STORM_FRACTION:.0%} of the groups joined at once"
        )
    lines.append(
        "| watcher | condition | requests/s | of which Fetch | peak 5 s | storm's polls | "
        "by API, per second | members (joined / visits, join ms median) | written to Kafka |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for r in results["requests"]:
        reads = {k: v for k, v in r["counts"].items() if k not in Requests.WRITES}
        by_api = ", ".join(
            f"{k} {v / r['seconds']:.2f}" for k, v in sorted(reads.items(), key=lambda x: -x[1])
        )
        total = sum(reads.values()) / r["seconds"]
        note = f" ({r['note']})" if r.get("note") else ""
        peak = max(r["buckets"]) if r.get("buckets") else 0
        c = r.get("churn")
        members = (
            f"{c['joined']} / {c['visits']}, {c['join_ms_median']} ms"
            + (f", {len(c['errors'])} errors" if c["errors"] else "")
            if c
            else "-"
        )
        lines.append(
            f"| {r['name']}{note} | {r.get('condition', 'settled')} | {total:.2f} | "
            f"{reads.get('FETCH', 0) / r['seconds']:.2f} | {peak} | {_storm_text(r, dwell_s)} | "
            f"{by_api} | {members} | {_writes_per_day(results, r)} |"
        )
    names = list(dict.fromkeys(r["name"] for r in results["requests"]))
    conds = list(dict.fromkeys(r.get("condition", "settled") for r in results["requests"]))
    if len(conds) > 1:
        lines += ["", "requests/s per watcher (peak 5 s bucket):", ""]
        head = " | ".join(conds)
        lines.append(f"| watcher | {head} | storm's polls |")
        lines.append("|---" * (len(conds) + 2) + "|")
        for name in names:
            rows = {
                r.get("condition", "settled"): r for r in results["requests"] if r["name"] == name
            }
            cells = []
            for cond in conds:
                r = rows.get(cond)
                if r is None:
                    cells.append("-")
                    continue
                reads = sum(v for k, v in r["counts"].items() if k not in Requests.WRITES)
                peak = max(r["buckets"]) if r.get("buckets") else 0
                cells.append(f"{reads / r['seconds']:.2f} ({peak})")
            storm = rows.get("storm")
            lines.append(
                f"| {name} | {' | '.join(cells)} | "
                f"{_storm_text(storm, dwell_s) if storm else '-'} |"
            )
    if churn.get("driver"):
        d = churn["driver"]
        lines += ["", f"churn members: one JVM, at most {d['peak_members']:,} members at once, "
                  f"peak RSS {_mb(d['peak_rss'])}"]  # fmt: skip
    return lines


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
    parser.add_argument(
        "--churn",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also measure each watcher while real members make the groups rebalance",
    )
    parser.add_argument(
        "--storm",
        action=argparse.BooleanOptionalAction,
        default=True,
        help=f"also measure each watcher under the churn plus {STORM_FRACTION * 100:g} %% of the "
        "groups joined at once",
    )
    parser.add_argument(
        "--rebalances-per-hour", type=float, default=1.0, metavar="N", help="per group"
    )
    parser.add_argument(
        "--churn-dwell",
        type=float,
        default=CHURN_DWELL_S,
        metavar="S",
        help="a member's stay in its group",
    )
    parser.add_argument("--churn-seed", type=int, default=0)
    parser.add_argument(
        "--broker-log-files",
        type=int,
        default=40,
        help="rolled 50 MB files of the broker log kept (its request logger at DEBUG fills "
        "one in about 20 s at 10,000 groups; the counts need the whole window)",
    )
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
        config = kafka_local.BrokerConfig(
            port=port,
            controller_port=controller,
            folder=Path(tmp),
            extra_properties={"group.initial.rebalance.delay.ms": str(INITIAL_REBALANCE_DELAY_MS)},
            log_backups=args.broker_log_files,
        )
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
                conds = conditions(
                    args.request_groups, args.request_warmup, args.request_seconds,
                    churn=args.churn, storm=args.storm, per_hour=args.rebalances_per_hour,
                    dwell_s=args.churn_dwell, seed=args.churn_seed,
                )  # fmt: skip
                driver = None
                if len(conds) > 1:
                    driver = ChurnDriver(bootstrap, Path(tmp) / "churn-consumers.log")
                try:
                    measured = measure_requests(
                        bootstrap, broker, Path(tmp), args.request_warmup,
                        args.request_seconds, args.kminion_scrape, conds, driver,
                    )  # fmt: skip
                finally:
                    if driver is not None:
                        driver.close()
                        results["churn"] = {
                            "per_hour": args.rebalances_per_hour,
                            "dwell_s": args.churn_dwell,
                            "seed": args.churn_seed,
                            "driver": {
                                "peak_members": driver.peak_members,
                                "peak_rss": driver.peak_rss,
                            },
                        }
                versions = {
                    "collector, schema 1": (1, 0.0),
                    "collector, schema 2, DescribeGroups every poll": (2, float(POLL_S)),
                    "collector, schema 2 (defaults)": (2, args.poll_event_interval),
                }
                for r in measured:
                    row = {k: v for k, v in r.__dict__.items()}
                    if r.name in versions:  # the collector's: its bytes at the same cadence
                        row["version"], row["poll_event_s"] = versions[r.name]
                    results["requests"].append(row)
        finally:
            kafka_local.stop(config)
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
