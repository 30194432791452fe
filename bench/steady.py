"""The steady-state backlog: the job beside Burrow, KMinion and a kafka-python loop, all
reading the same real ``__consumer_offsets``.

A real ``__consumer_offsets`` is almost all offset commits: every consumer commits every
partition it owns every few seconds, rebalances are rare (issue 12). This bench builds such a
backlog, writes it to the real topic of a broker it starts, and times four readers of it:

* **the job**, ``python -m streaming.cli run --once --offsets-topic __consumer_offsets`` as
  its own process (what an operator runs, with the job's defaults; ``--job-arg`` adds or
  changes arguments), timed from its ``started:`` line to its ``stopped after`` line (and
  apart, from process start: Spark's start-up included), with the memory peaks of its
  processes (:class:`stream.Memory`: each one's RSS, and the whole tree's at once with each
  page counted once, PSS: the forked workers share their daemon's pages). It must have
  read every record (a few more: Spark's driver consumer joins a group of its own,
  ``spark-kafka-source-...-driver-0``, whose records the coordinator writes to the same
  topic while the job runs), and its ``offset_commits`` Delta table must hold what its
  ``--offset-commits-history`` promises (read back with a small Spark job at the end):
  every partition's last committed offset, or with ``kept`` over several micro-batches
  (``--max-offsets-per-trigger``) a commit of every partition (:func:`missing_commits`). A
  rate of a job that dropped commits would be worthless.
* **the kafka-python loop** of ``bench/stream.py`` (:func:`stream.reference_catch_up`): one
  consumer reading the topic from the beginning and decoding every record with our codec.
* **Burrow** 1.9.5 and **KMinion** 2.3.5 (``scrapeMode: offsetsTopic``), built from
  ``../shared/peers`` by ``build.sh`` into ``.cache/peers`` (skipped with a message when
  there is no Go), each with a configuration written by the bench, pointed only at the
  loopback broker. Each is timed from its process start until every group's last commit is
  visible through its HTTP API (Burrow: ``/v3/kafka/local/consumer/<group>``, the newest
  stored offset of each partition) or its metrics (KMinion:
  ``kminion_kafka_consumer_group_topic_offset_sum`` of every group and topic equals the sum
  of the last offsets). KMinion exports offsets only once it judges itself caught up, which
  it checks every 15 s (12 s sleep, 3 s grace); so its time is also shown to the moment its
  ``offset_consumer_records_consumed_total`` reached the backlog (read, decoded, stored).

Records/s = backlog records / time. Ratios: job / Burrow, job / KMinion, job / loop.

**The backlog.** ``--groups`` groups (default 1,000; the issue also asks for 10,000), each:

1. one real rebalance from a golden capture (``tests/fixtures/golden``, the five captures in
   turn): the capture's records before its first offset commit, i.e. the group forming and
   its first stable generation (classic: ``GroupMetadata`` generations 0 to the first with an
   assignment; KIP-848: member, epoch, target assignment and current assignment records),
   byte for byte as Kafka 4.4.0 wrote them, the key's group id rewritten
   (:func:`stream.rekey`), with the capture's own timing;
2. then, every 5 s of record time for ``--duration-s`` (default 150 s: 30 rounds, so 1,000
   groups make ~603,000 records, 99.5 % commits, as in the issue), one commit of each of the
   20 partitions the group owns, all with the round's timestamp (one OffsetCommit request),
   the offsets growing by a fixed per-partition step each round.

The owned partitions: the captures' groups own 7 (``<capture>-orders`` 0-3 and
``<capture>-audit`` 0-2, the whole assignment of the first stable generation); the bench
adds partitions of the same two topics, alternately, to reach 20 (``audit`` 0-9, ``orders``
0-9) and creates those topics with 10 partitions each before anything reads (Burrow drops
commits of topics it does not know). The rebalance records still name the 7 captured
partitions only; the other 13 are committed without appearing in an assignment.

Keys are ``OffsetCommitKey`` type 1; values ``OffsetCommitValue`` **v4** as Kafka 4.4 writes
it (:func:`offset_commit_value_v4`: offset, leader epoch 0, compact-string metadata ``""``,
commit timestamp = record timestamp, tagged fields with tag 0 = the capture's topic id, so
commits and the KIP-848 records agree). Before anything else the bench rebuilds every v4
commit value of the golden captures with that function and stops unless each equals the
captured bytes. Timestamps end a minute before the bench starts; group ``i`` commits at
``i * 5 s / G`` into each 5 s interval, and records are written in time order, each to its
group's coordinator partition (``coordinator_partition(group, 50)``).

**Writing ``__consumer_offsets``.** Clients may not produce to internal topics, except a
producer whose ``client.id`` is ``__admin_client``. Kafka 4.4.0 accepts that from the Java
producer (kafka-python refuses, for lack of the internal topic's metadata), so the Python
side writes the records to a file and ``bench/java/BacklogProducer.java`` (compiled on first
use with ``javac`` against ``.cache/jars/clients`` into ``.cache/bench-classes``) produces
them, idempotent, ``acks=all``. The broker's own group coordinator does not replay records
written by others while it owns the partitions (it loads them only when it becomes the
coordinator, e.g. after a restart), and logs ``Execution of HighWatermarkUpdate failed``
errors while the end of a partition is past its own last write; they are harmless here (it
goes on writing other groups' records to those partitions) and the bench counts and prints
the broker log's ERROR lines after the produce. After a restart the broker loads the
backlog's groups without an error ("Loaded classic group steady-00002 with 1 members", same
for the consumer groups), then expires their members and writes their new generations: the
bench does not restart it, so that the topic holds the same records for every reader. The
loop proves a plain consumer reads the whole topic.

Run it::

    make bench-steady                                  # 1,000 groups, everything
    make bench-steady ARGS="--groups 10000"
    .venv/bin/python bench/steady.py --groups 100 --skip-job --json out.json
    .venv/bin/python bench/steady.py --job-arg=--max-offsets-per-trigger --job-arg=50000

It starts its own broker (free ports, folder ``.local/bench-steady``, removed at the end
unless ``--keep``; the job's, Burrow's and KMinion's logs and configs are there).

The same workload produced live, at its real rate (record time = wall time), with detection
latency trials among the commits: ``bench/live.py`` (``make bench-live``).

This script stays one file (~1,100 lines) on purpose: it is one measurement, whose sections
(the v4 value, the backlog, the broker and producer, Burrow, KMinion, the job, the report)
read top to bottom in the order they run, and ``bench/live.py`` imports its parts as one
module (``import steady``); no package code imports it.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import stream  # noqa: E402  (bench/stream.py: templates, rekey, the loop, the job runner)

from assign_core.placement import coordinator_partition  # noqa: E402
from streaming.codec.decode import decode_record  # noqa: E402
from streaming.codec.model import OffsetCommit  # noqa: E402

GOLDEN = REPO / "tests" / "fixtures" / "golden"
STATE = REPO / ".local" / "bench-steady"
PEERS = REPO / ".cache" / "peers"
PEERS_BUILD = REPO.parent / "shared" / "peers" / "build.sh"
CLIENT_JARS = REPO / ".cache" / "jars" / "clients"
JAVA_SOURCE = REPO / "bench" / "java" / "BacklogProducer.java"
JAVA_CLASSES = REPO / ".cache" / "bench-classes"
OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTITIONS = 50
PARTITIONS_PER_GROUP = 20
COMMIT_INTERVAL_MS = 5_000
BURROW_CLUSTER = "local"


# -- the v4 commit value ----------------------------------------------------------------------


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    """``OffsetCommitKey`` (record type 1): group, topic (int16-length strings), partition."""
    g, t = group.encode(), topic.encode()
    return (
        struct.pack(">hh", 1, len(g))
        + g
        + struct.pack(">h", len(t))
        + t
        + struct.pack(">i", partition)
    )


def offset_commit_value_v4(
    offset: int, leader_epoch: int, metadata: str, commit_ts_ms: int, topic_id: bytes
) -> bytes:
    """``OffsetCommitValue`` v4 as Kafka 4.4 writes it: version, offset i64, leader epoch
    i32, metadata as a compact string (unsigned varint length + 1), commit timestamp i64,
    then the tagged fields: tag 0, the topic id (16 bytes), present unless all zero."""
    meta = metadata.encode()
    tags = (
        _uvarint(0)
        if topic_id == bytes(16)
        else _uvarint(1) + _uvarint(0) + _uvarint(16) + topic_id
    )
    return (
        struct.pack(">hqi", 4, offset, leader_epoch)
        + _uvarint(len(meta) + 1)
        + meta
        + struct.pack(">q", commit_ts_ms)
        + tags
    )


def topic_id_bytes(topic_id: str) -> bytes:
    """Kafka's ``Uuid.toString`` (URL-safe base64, no padding) as its 16 bytes."""
    return base64.urlsafe_b64decode(topic_id + "==")


def check_golden_v4() -> int:
    """Rebuild every v4 commit value of the golden captures; raise unless each equals the
    captured bytes. Returns how many were checked."""
    checked = 0
    for path in sorted(GOLDEN.glob("*.json")):
        for r in json.loads(path.read_text())["records"]:
            if r["value"] is None:
                continue
            key, value = bytes.fromhex(r["key"]), bytes.fromhex(r["value"])
            if struct.unpack_from(">h", key)[0] > 1 or struct.unpack_from(">h", value)[0] != 4:
                continue
            c = decode_record(key, value)
            assert isinstance(c, OffsetCommit)
            rebuilt = offset_commit_value_v4(
                c.offset, c.leader_epoch, c.metadata, c.commit_ts_ms, topic_id_bytes(c.topic_id)
            )
            if rebuilt != value or offset_commit_key(c.group_id, c.topic, c.partition) != key:
                raise SystemExit(
                    f"{path.name} offset {r['offset']}: the v4 builder wrote {rebuilt.hex()}, "
                    f"Kafka wrote {value.hex()}"
                )
            checked += 1
    if not checked:
        raise SystemExit(f"no v4 commit values in {GOLDEN}")
    return checked


# -- the backlog ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Capture:
    """What the backlog takes from one golden capture: its first rebalance (records before
    the first commit, as (ms since the first record, key, value)) and the partitions the
    group commits (the stable assignment, extended to 20), with the capture's topic ids."""

    name: str
    rebalance: tuple[tuple[int, bytes, bytes | None], ...]
    assigned: tuple[tuple[str, int], ...]
    owned: tuple[tuple[str, int], ...]
    topic_ids: dict[str, bytes]


def load_captures(partitions: int = PARTITIONS_PER_GROUP) -> list[Capture]:
    out = []
    for path in sorted(GOLDEN.glob("*.json")):
        doc = json.loads(path.read_text())
        recs = sorted(doc["records"], key=lambda r: (r["timestamp_ms"], r["offset"]))
        t0 = recs[0]["timestamp_ms"]
        rebalance = []
        for r in recs:
            key = bytes.fromhex(r["key"])
            if struct.unpack_from(">h", key)[0] <= 1:  # the first offset commit
                break
            value = None if r["value"] is None else bytes.fromhex(r["value"])
            rebalance.append((r["timestamp_ms"] - t0, key, value))
        first_stable = doc["reports"]["stable"][0]
        counts: dict[str, int] = {}
        for member in first_stable["members"]:
            for topic, parts in member["assignment"].items():
                counts[topic] = max(counts.get(topic, 0), max(parts) + 1)
        assigned = sorted(
            (t, p) for m in first_stable["members"] for t, ps in m["assignment"].items() for p in ps
        )
        if len(assigned) != sum(counts.values()):
            raise SystemExit(f"{path.name}: the first stable assignment is not partitions 0..n-1")
        topics = sorted(counts)
        i = 0
        while sum(counts.values()) < partitions:  # extra partitions of the same topics, in turn
            counts[topics[i % len(topics)]] += 1
            i += 1
        owned = tuple((t, p) for t in topics for p in range(counts[t]))
        ids = {t: topic_id_bytes(doc["topics"][t]["topic_id"]) for t in topics}
        out.append(Capture(doc["name"], tuple(rebalance), tuple(assigned), owned, ids))
    return out


@dataclass
class Backlog:
    """The backlog as written: its records and, per group, the last committed offset of each
    owned partition (what every reader must end up showing)."""

    groups: int
    rounds: int
    records: int
    commits: int
    rebalance_records: int
    first_ts_ms: int
    last_ts_ms: int
    topics: dict[str, int]  # topic -> partitions to create
    sentinels: list[str]  # the group written last to each coordinator partition
    last: dict[str, dict[tuple[str, int], int]] = field(repr=False)

    def offset_sums(self) -> dict[tuple[str, str], int]:
        """(group, topic) -> the sum of the last committed offsets (KMinion's metric)."""
        out: dict[tuple[str, str], int] = {}
        for group, parts in self.last.items():
            for (topic, _), offset in parts.items():
                out[group, topic] = out.get((group, topic), 0) + offset
        return out


def group_name(i: int) -> str:
    return f"steady-{i:05d}"


def write_backlog(
    path: Path, groups: int, duration_s: int, *, now_ms: int | None = None
) -> Backlog:
    """Build the backlog and write it to ``path`` in ``BacklogProducer``'s input format:
    ``int32 partition, int64 timestamp, int32 key length, key, int32 value length (-1 =
    null), value``, in time order."""
    captures = load_captures()
    rounds = max(1, duration_s * 1000 // COMMIT_INTERVAL_MS)
    span = max(dt for c in captures for dt, _, _ in c.rebalance)
    first_round = span + COMMIT_INTERVAL_MS + 1_000  # after every group's rebalance
    now_ms = now_ms or int(time.time() * 1000)
    base = now_ms - 60_000 - first_round - rounds * COMMIT_INTERVAL_MS
    header = struct.Struct(">iqi")
    length = struct.Struct(">i")
    last: dict[str, dict[tuple[str, int], int]] = {}
    topics: dict[str, int] = {}
    # per group: (coordinator partition, phase, capture, [(topic, partition, key, id, start, step)])
    plan = []
    for i in range(groups):
        group = group_name(i)
        capture = captures[i % len(captures)]
        owned = []
        for j, (topic, partition) in enumerate(capture.owned):
            topics[topic] = max(topics.get(topic, 0), partition + 1)
            start = 1_000 + 37 * j + i % 97
            step = 20 + (7 * i + 13 * j) % 80
            key = offset_commit_key(group, topic, partition)
            owned.append((topic, partition, key, capture.topic_ids[topic], start, step))
        plan.append(
            (
                group,
                coordinator_partition(group, OFFSETS_PARTITIONS),
                i * COMMIT_INTERVAL_MS // groups,
                capture,
                owned,
            )
        )
    with path.open("wb") as out:
        pending = []
        for group, part, phase, capture, _ in plan:
            for dt, key, value in capture.rebalance:
                pending.append((base + phase + dt, part, stream.rekey(key, group), value))
        pending.sort(key=lambda r: r[0])
        for ts, part, key, value in pending:
            out.write(header.pack(part, ts, len(key)) + key)
            out.write(length.pack(-1) if value is None else length.pack(len(value)) + value)
        rebalance_records = len(pending)
        for k in range(rounds):
            for _group, part, phase, _, owned in plan:
                ts = base + first_round + phase + k * COMMIT_INTERVAL_MS
                chunks = []
                for _topic, _partition, key, topic_id, start, step in owned:
                    value = offset_commit_value_v4(start + k * step, 0, "", ts, topic_id)
                    chunks.append(
                        header.pack(part, ts, len(key)) + key + length.pack(len(value)) + value
                    )
                out.write(b"".join(chunks))
        for group, _, _, _, owned in plan:
            last[group] = {(t, p): start + (rounds - 1) * step for t, p, _, _, start, step in owned}
    commits = rounds * sum(len(owned) for *_, owned in plan)
    records = rebalance_records + commits
    last_phase = (groups - 1) * COMMIT_INTERVAL_MS // groups
    last_ts = base + first_round + last_phase + (rounds - 1) * COMMIT_INTERVAL_MS
    sentinels = sorted({part: group for group, part, _, _, _ in plan}.values())
    return Backlog(
        groups, rounds, records, commits, rebalance_records, base, last_ts, topics, sentinels, last
    )


# -- the broker and the producer --------------------------------------------------------------


def compile_producer() -> Path:
    """Compile ``BacklogProducer.java`` once per source version; returns its classes folder."""
    from streaming.simulate.model import SetupError
    from streaming.simulate.runner import compile_client_java

    if not any(CLIENT_JARS.glob("kafka-clients-*.jar")):
        raise SystemExit(f"no kafka-clients jars in {CLIENT_JARS}: run `make setup`")
    try:
        return compile_client_java(JAVA_SOURCE, JAVA_CLASSES)
    except SetupError as e:
        raise SystemExit(str(e)) from e


def ensure_offsets_topic(bootstrap: str, timeout_s: float = 120) -> None:
    """Have the broker create ``__consumer_offsets`` (a FindCoordinator request does) and
    wait until its coordinators answer. A new admin client per try: one whose first
    connection failed (a loaded machine) can keep answering ``NodeNotReadyError``."""
    from kafka import KafkaAdminClient

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            admin = KafkaAdminClient(bootstrap_servers=bootstrap)
            try:
                admin.list_group_offsets("steady-bootstrap")
                return
            finally:
                admin.close()
        except Exception as e:  # CoordinatorNotAvailable while the topic is created
            if time.monotonic() > deadline:
                raise SystemExit(f"__consumer_offsets never became available: {e!r}") from e
            time.sleep(0.5)


def produce(bootstrap: str, backlog_file: Path) -> float:
    """Run ``BacklogProducer`` on the file; returns its seconds."""
    classes = compile_producer()
    cmd = [
        "java",
        "-Xmx512m",
        "-cp",
        f"{classes}{os.pathsep}{CLIENT_JARS}/*",
        "BacklogProducer",
        "--bootstrap-server",
        bootstrap,
        "--input",
        str(backlog_file),
    ]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"BacklogProducer failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    print("  " + done.stdout.strip(), flush=True)
    return time.perf_counter() - started


def end_offsets_total(bootstrap: str) -> int:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        parts = [TopicPartition(OFFSETS_TOPIC, p) for p in range(OFFSETS_PARTITIONS)]
        return sum(consumer.end_offsets(parts).values())
    finally:
        consumer.close()


def broker_errors(log: Path, since: int) -> list[str]:
    """The ERROR lines the broker logged after byte ``since`` of its log."""
    with log.open("rb") as f:
        f.seek(since)
        text = f.read().decode(errors="replace")
    return [line for line in text.splitlines() if " ERROR " in line]


# -- processes --------------------------------------------------------------------------------


class Process:
    """A peer as its own process, output to ``log``, its peak RSS (``VmHWM``) sampled."""

    def __init__(self, cmd: Sequence[str], log: Path, **kwargs: Any) -> None:
        self.log = log
        self._out = log.open("w")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            list(cmd), stdout=self._out, stderr=subprocess.STDOUT, **kwargs
        )
        self.peak_rss = 0
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self) -> None:
        while self.proc.poll() is None:
            self.peak_rss = max(self.peak_rss, stream._status_kib(self.proc.pid, "VmHWM") * 1024)
            time.sleep(0.2)

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
            raise SystemExit(f"{self.log.stem} exited with {self.proc.returncode}:\n{tail}")

    def stop(self) -> None:
        self.peak_rss = max(self.peak_rss, stream._status_kib(self.proc.pid, "VmHWM") * 1024)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()


def _get(url: str, timeout_s: float = 10) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:
        data: bytes = resp.read()
        return data


@dataclass
class Reader:
    """One reader's result: seconds until every group's last commit was visible (from the
    process start; the job: from its ``started:`` line), and extras."""

    name: str
    seconds: float
    records: int
    peak_rss: int = 0
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return self.seconds == self.seconds  # not NaN (timed out)

    @property
    def rate(self) -> float:
        return self.records / self.seconds


def ensure_peers() -> tuple[Path, Path] | None:
    """``.cache/peers/{burrow,kminion}``, built by ``../shared/peers/build.sh`` if missing;
    None (with a message) without Go or the script."""
    burrow, kminion = PEERS / "burrow", PEERS / "kminion"
    if burrow.exists() and kminion.exists():
        return burrow, kminion
    go = shutil.which("go") or (
        "/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None
    )
    if go is None:
        print("peers skipped: no Go on PATH (or /usr/local/go/bin/go) to build Burrow and KMinion")
        return None
    if not PEERS_BUILD.exists():
        print(f"peers skipped: no {PEERS_BUILD}")
        return None
    print(f"building the peers: {PEERS_BUILD} {PEERS}", flush=True)
    done = subprocess.run([str(PEERS_BUILD), str(PEERS)], env={**os.environ, "GO": go}, check=False)
    if done.returncode != 0 or not (burrow.exists() and kminion.exists()):
        print(f"peers skipped: build.sh failed ({done.returncode})")
        return None
    return burrow, kminion


# -- Burrow -----------------------------------------------------------------------------------


def burrow_config(bootstrap: str, port: int, intervals: int) -> str:
    servers = json.dumps([bootstrap])
    return f"""# written by bench/steady.py: the loopback broker only
[general]
pidfile = "burrow.pid"

[logging]
level = "info"

[client-profile.bench]
client-id = "burrow-bench"
kafka-version = "3.6.0"

[cluster.{BURROW_CLUSTER}]
class-name = "kafka"
client-profile = "bench"
servers = {servers}
topic-refresh = 5
offset-refresh = 1
groups-reaper-refresh = 0

[consumer.{BURROW_CLUSTER}]
class-name = "kafka"
cluster = "{BURROW_CLUSTER}"
client-profile = "bench"
servers = {servers}
offsets-topic = "{OFFSETS_TOPIC}"
start-latest = false
group-allowlist = ""
group-denylist = ""

[storage.default]
class-name = "inmemory"
workers = 20
intervals = {intervals}
expire-group = 604800
min-distance = 0

[evaluator.default]
class-name = "caching"
expire-cache = 10

[httpserver.default]
address = "127.0.0.1:{port}"
"""


class _Http:
    """GETs on one host over a kept-alive connection per thread (a new TCP connection per
    request would cost the peer more than the answer)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._local = threading.local()

    def get(self, path: str) -> tuple[int, bytes]:
        import http.client

        for attempt in (0, 1):
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._local.conn = http.client.HTTPConnection(
                    self.host, self.port, timeout=30
                )
            try:
                conn.request("GET", path)
                resp = conn.getresponse()
                return resp.status, resp.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")


def _burrow_group_done(http: _Http, group: str, last: dict[tuple[str, int], int]) -> bool:
    status, body = http.get(f"/v3/kafka/{BURROW_CLUSTER}/consumer/{group}")
    if status == 404:
        return False
    if status != 200:
        raise SystemExit(f"Burrow answered {status} for {group}: {body[:200]!r}")
    newest: dict[tuple[str, int], int] = {}
    for topic, partitions in json.loads(body).get("topics", {}).items():
        for p, partition in enumerate(partitions or []):
            offsets = [o["offset"] for o in (partition or {}).get("offsets") or [] if o]
            if offsets:
                newest[topic, p] = max(offsets)
    return all(newest.get(tp) == offset for tp, offset in last.items())


@dataclass
class Visible:
    """When a peer showed every group's last commit, in seconds from its process start.

    ``sentinels_s``: the moment the groups written last to each ``__consumer_offsets``
    partition all showed theirs (a lower bound); ``seconds``: the send time of the last
    successful check (an upper bound: the checks of 10,000 groups take a while, and compete
    with the peer's own work). ``missing``: groups never complete (timed out)."""

    seconds: float
    sentinels_s: float
    missing: int = 0


def _until_visible(
    proc: Process, backlog: Backlog, check: Any, timeout_s: float, workers: int = 4
) -> Visible:
    """Poll ``check(group) -> bool`` (the group's last commits are all visible) until it
    holds for every group. While the sentinels (the last group written to each coordinator
    partition) are not all visible, a round checks only those (at most 50 requests); then
    every pending group is checked by ``workers`` threads, again after 0.1 s for those not
    yet visible."""
    from concurrent.futures import ThreadPoolExecutor

    deadline = proc.started + timeout_s
    sentinels = list(backlog.sentinels)
    pending = sorted(backlog.last)
    sentinels_s = 0.0
    last_ok = proc.started

    def one(group: str) -> tuple[str, bool, float]:
        at = time.perf_counter()
        return group, check(group), at

    with ThreadPoolExecutor(workers) as pool:
        while pending:
            proc.check_alive()
            if time.perf_counter() > deadline:
                print(
                    f"  {len(pending):,} groups still without their last commit after "
                    f"{timeout_s:.0f} s, e.g. {pending[:3]} (log {proc.log})",
                    flush=True,
                )
                return Visible(float("nan"), sentinels_s, len(pending))
            round_started = time.perf_counter()
            batch = sentinels or pending
            still = []
            for group, ok, at in pool.map(one, batch):
                if ok:
                    last_ok = max(last_ok, at)
                else:
                    still.append(group)
            if sentinels:
                sentinels = still
                if not sentinels:
                    sentinels_s = round_started - proc.started
                    continue
            else:
                pending = still
            time.sleep(0.1)
    return Visible(last_ok - proc.started, sentinels_s)


def run_burrow(
    binary: Path, bootstrap: str, backlog: Backlog, work: Path, timeout_s: float
) -> Reader:
    from tests.conftest import free_ports

    work.mkdir(parents=True, exist_ok=True)
    (port,) = free_ports(1)
    (work / "burrow.toml").write_text(burrow_config(bootstrap, port, max(10, backlog.rounds)))
    base = f"http://127.0.0.1:{port}/v3/kafka/{BURROW_CLUSTER}"
    proc = Process([str(binary), "--config-dir", str(work)], work / "burrow.log", cwd=work)
    try:
        # the first moment every group is listed (as in issue 12), then the last commits
        listed_s = None
        while listed_s is None:
            proc.check_alive()
            with contextlib.suppress(OSError, ValueError):
                consumers = set(json.loads(_get(f"{base}/consumer")).get("consumers", []))
                if consumers >= backlog.last.keys():
                    listed_s = time.perf_counter() - proc.started
                    break
            if time.perf_counter() - proc.started > timeout_s:
                raise SystemExit(f"Burrow never listed every group (log {proc.log})")
            time.sleep(0.1)
        http = _Http("127.0.0.1", port)
        visible = _until_visible(
            proc, backlog, lambda g: _burrow_group_done(http, g, backlog.last[g]), timeout_s
        )
    finally:
        proc.stop()
    notes = {
        "all_listed_s": listed_s,
        "sentinels_s": visible.sentinels_s,
        "missing_groups": visible.missing,
    }
    return Reader("Burrow", visible.seconds, backlog.records, proc.peak_rss, notes)


# -- KMinion ----------------------------------------------------------------------------------


def kminion_config(bootstrap: str, port: int) -> str:
    return f"""# written by bench/steady.py: the loopback broker only
logger:
  level: info
kafka:
  brokers: [ "{bootstrap}" ]
  clientId: "kminion-bench"
minion:
  consumerGroups:
    enabled: true
    scrapeMode: offsetsTopic
    granularity: partition
    allowedGroups: [ ".*" ]
  topics:
    enabled: false
  logDirs:
    enabled: false
  endToEnd:
    enabled: false
exporter:
  namespace: "kminion"
  host: "127.0.0.1"
  port: {port}
"""


_METRIC = re.compile(r"^(\w+)\{([^}]*)\} (\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def scrape(url: str, *names: str) -> list[tuple[str, dict[str, str], float]]:
    out: list[tuple[str, dict[str, str], float]] = []
    for line in _get(url, timeout_s=60).decode().splitlines():
        if not line.startswith(names):
            continue
        m = _METRIC.match(line)
        if m is None:  # no labels
            name, _, value = line.partition(" ")
            out.append((name, {}, float(value)))
        else:
            out.append((m.group(1), dict(_LABEL.findall(m.group(2))), float(m.group(3))))
    return out


def run_kminion(
    binary: Path, bootstrap: str, backlog: Backlog, work: Path, timeout_s: float
) -> Reader:
    from tests.conftest import free_ports

    work.mkdir(parents=True, exist_ok=True)
    (port,) = free_ports(1)
    config = work / "kminion.yaml"
    config.write_text(kminion_config(bootstrap, port))
    url = f"http://127.0.0.1:{port}/metrics"
    sums = backlog.offset_sums()
    consumed_name = "kminion_exporter_offset_consumer_records_consumed_total"
    sum_name = "kminion_kafka_consumer_group_topic_offset_sum"
    env = {**os.environ, "CONFIG_FILEPATH": str(config)}
    proc = Process([str(binary)], work / "kminion.log", cwd=work, env=env)
    consumed_s = seconds = None
    try:
        while seconds is None:
            proc.check_alive()
            if time.perf_counter() - proc.started > timeout_s:
                print(f"  not every group's last commit after {timeout_s:.0f} s (log {proc.log})")
                seconds = float("nan")
                break
            sent = time.perf_counter()
            try:
                metrics = scrape(url, consumed_name, sum_name)
            except OSError:
                time.sleep(0.1)
                continue
            if consumed_s is None and any(
                n == consumed_name and v >= backlog.records for n, _, v in metrics
            ):
                consumed_s = sent - proc.started
            seen = {
                (labels["group_id"], labels["topic_name"]): int(v)
                for n, labels, v in metrics
                if n == sum_name
            }
            if all(seen.get(k) == v for k, v in sums.items()):
                seconds = sent - proc.started
            else:
                time.sleep(0.2)
    finally:
        proc.stop()
    return Reader(
        "KMinion", seconds, backlog.records, proc.peak_rss, {"records_consumed_s": consumed_s}
    )


# -- the job ----------------------------------------------------------------------------------


def job_last_offsets(delta: Path) -> dict[str, dict[tuple[str, int], int]]:
    """The newest offset of each (group, topic, partition) in the job's ``offset_commits``."""
    from pyspark.sql import functions as F

    from streaming.spark.session import build_session

    spark = build_session("bench-steady-check", master="local[2]")
    try:
        rows = (
            spark.read.format("delta")
            .load(str(delta / "offset_commits"))
            .where(F.col("offset").isNotNull())
            .groupBy("group_id", "topic", "partition")
            .agg(F.max("offset").alias("offset"))
            .collect()
        )
    finally:
        spark.stop()
    out: dict[str, dict[tuple[str, int], int]] = {}
    for r in rows:
        out.setdefault(r["group_id"], {})[r["topic"], r["partition"]] = r["offset"]
    return out


def offset_commits_history(job_args: Sequence[str]) -> str:
    """The ``offset_commits_history`` the job runs with, given its extra arguments: as the
    job resolves it (its arguments over the environment and its defaults)."""
    from streaming.job import build_parser, config_from_args

    return config_from_args(build_parser().parse_args(list(job_args))).offset_commits_history


def missing_commits(
    expected: dict[str, dict[tuple[str, int], int]],
    seen: dict[str, dict[tuple[str, int], int]],
    *,
    last: bool,
) -> list[tuple[str, tuple[str, int], int, int | None]]:
    """The backlog's partitions (``expected``: each one's last commit) the job's
    ``offset_commits`` (``seen``: each one's newest offset) does not hold as it should:
    with ``last``, their last commit (what ``latest`` and ``every`` keep, and ``kept`` when
    the backlog is one micro-batch: its one run per partition is kept as its last commit);
    without, any commit (``kept`` over several micro-batches keeps a partition's first run
    and an hourly sample, not its last)."""
    return [
        (g, tp, offset, seen.get(g, {}).get(tp))
        for g, parts in expected.items()
        for tp, offset in parts.items()
        if (seen.get(g, {}).get(tp) != offset if last else tp not in seen.get(g, {}))
    ]


def run_job(bootstrap: str, backlog: Backlog, work: Path, extra: Sequence[str]) -> Reader:
    from tests.conftest import free_ports

    membership = "steady.membership"
    stream.create_topics(bootstrap, (membership, 1))
    spawned = time.perf_counter()
    job = stream.JobProcess(
        bootstrap, OFFSETS_TOPIC, membership, work, free_ports(1)[0], "--once", *extra
    )
    started, _ = job.first("started:")
    code = job.wait()
    ended, summary = job.first("stopped after")
    for _, line in job.lines:
        if line.startswith(("[records]", "stopped")):
            print("  " + line, flush=True)
    if code != 0:
        raise SystemExit(f"the job exited with {code} (log {job.log})")
    match = re.search(r"(\d+) records", summary)
    # more than the backlog: Spark's driver consumer joins a group of its own
    # (spark-kafka-source-...-driver-0), whose records the coordinator writes to the same topic
    if match is None or int(match.group(1)) < backlog.records:
        raise SystemExit(f"the job did not read the {backlog.records} records: {summary}")
    own = int(match.group(1)) - backlog.records
    exported = re.search(r"(\d+) groups in the exporter", summary)
    batches = sum(1 for _, line in job.lines if line.startswith("[records] batch"))
    last_kept = offset_commits_history(extra) != "kept" or batches == 1
    what = "every partition's last commit" if last_kept else "a commit of every partition"
    print(f"  checking offset_commits: {what} ...", flush=True)
    missing = missing_commits(backlog.last, job_last_offsets(work / "delta"), last=last_kept)
    if missing:
        raise SystemExit(
            f"the job's offset_commits lacks {what}: {len(missing):,} of "
            f"{len(backlog.last) * PARTITIONS_PER_GROUP:,} partitions, e.g. (group, partition, "
            f"expected, found) {missing[:3]}"
        )
    m = job.memory
    return Reader(
        "job",
        ended - started,
        backlog.records,
        m.jvm + m.driver_python + m.workers,
        {
            "with_startup_s": ended - spawned,
            "jvm_peak": m.jvm,
            "driver_python_peak": m.driver_python,
            "workers_peak": m.workers,
            "total_pss_peak": m.total,
            "groups_exported": None if exported is None else int(exported.group(1)),
            "own_group_records": own,
        },
    )


def run_floor(bootstrap: str, backlog: Backlog, work: Path, extra: Sequence[str]) -> Reader:
    """``bench/spark_floor.py`` in its own process: the least a Spark job does with this
    backlog (read, decode commits in the JVM, keep each partition's last offset), timed from
    its query's start; its result checked against the backlog's last commits."""
    work.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.spark_floor",
            bootstrap,
            "--topic",
            OFFSETS_TOPIC,
            "--checkpoint",
            str(work / "checkpoint"),
            *extra,
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=(work / "floor.log").open("wb"),
        text=True,
    )
    memory = stream.Memory()
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.5):
            with contextlib.suppress(OSError, ValueError):
                memory.sample(proc.pid)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(
            f"the Spark floor exited with {proc.returncode} (log {work / 'floor.log'})"
        )
    result = json.loads(out.strip().splitlines()[-1])
    found = result["last"]
    missing = [
        (g, tp, offset)
        for g, parts in backlog.last.items()
        for tp, offset in parts.items()
        if found.get(g, {}).get(f"{tp[0]}/{tp[1]}") != offset
    ]
    if missing:
        raise SystemExit(f"the Spark floor lacks {len(missing):,} last commits, e.g. {missing[:3]}")
    return Reader(
        "floor",
        result["seconds"],
        backlog.records,
        memory.jvm + memory.driver_python,
        {
            "with_startup_s": result["with_startup_s"],
            "records_read": result["records"],
            "jvm_peak": memory.jvm,
            "driver_python_peak": memory.driver_python,
        },
    )


# -- main -------------------------------------------------------------------------------------


def _loadavg() -> str:
    with contextlib.suppress(OSError):
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return "?"


@contextlib.contextmanager
def _broker(folder: Path) -> Iterator[tuple[str, Path]]:
    with stream._broker(folder) as bootstrap:
        yield bootstrap, folder / "logs" / "server.log"


def add_run_options(parser: argparse.ArgumentParser, job_example: str, state: Path) -> None:
    """The options every steady-workload bench takes (here and ``bench/live.py``): extra job
    arguments, a JSON copy of the results, keeping the bench's folder."""
    parser.add_argument(
        "--job-arg",
        action="append",
        default=[],
        metavar="ARG",
        help=f"an extra argument of `rebalance-monitor run` (repeatable), e.g. {job_example}",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results here")
    parser.add_argument("--keep", action="store_true", help=f"keep {state} (logs, configs)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=1_000, help="groups in the backlog")
    parser.add_argument(
        "--duration-s",
        type=int,
        default=150,
        help="record time of commits per group, one round of 20 every 5 s (default 150: "
        "30 rounds, ~603,000 records with 1,000 groups)",
    )
    parser.add_argument("--skip-job", action="store_true")
    parser.add_argument("--skip-loop", action="store_true")
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument(
        "--skip-floor", action="store_true", help="skip the Spark floor (bench/spark_floor.py)"
    )
    parser.add_argument(
        "--floor-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="an extra argument of bench/spark_floor.py (repeatable), e.g. "
        "--floor-arg=--conf --floor-arg=spark.eventLog.enabled=true",
    )
    parser.add_argument(
        "--peer-timeout-s", type=float, default=600, help="give up on a peer after this long"
    )
    add_run_options(parser, "--job-arg=--max-offsets-per-trigger --job-arg=50000", STATE)
    args = parser.parse_args(argv)

    print("checking the v4 builder against the golden captures ...", flush=True)
    print(f"  {check_golden_v4()} v4 commit values rebuilt byte for byte", flush=True)
    shutil.rmtree(STATE, ignore_errors=True)
    STATE.mkdir(parents=True)
    print(f"machine: {os.cpu_count()} cores, load average {_loadavg()}", flush=True)
    peers = None if args.skip_peers else ensure_peers()
    load_before = _loadavg()
    readers: list[Reader] = []
    with _broker(STATE / "kafka") as (bootstrap, broker_log):
        ensure_offsets_topic(bootstrap)
        backlog_file = STATE / "backlog.bin"
        t0 = time.perf_counter()
        backlog = write_backlog(backlog_file, args.groups, args.duration_s)
        print(
            f"backlog: {args.groups:,} groups, {backlog.records:,} records "
            f"({backlog.rebalance_records:,} rebalance, {backlog.commits:,} commits in "
            f"{backlog.rounds} rounds of {PARTITIONS_PER_GROUP}), built in "
            f"{time.perf_counter() - t0:.1f} s; topics {backlog.topics}",
            flush=True,
        )
        stream.create_topics(bootstrap, *backlog.topics.items())
        log_mark = broker_log.stat().st_size
        print(f"producing to {OFFSETS_TOPIC} (client.id __admin_client, Java) ...", flush=True)
        produce(bootstrap, backlog_file)
        backlog_file.unlink()
        total = end_offsets_total(bootstrap)
        if total != backlog.records:
            raise SystemExit(
                f"{OFFSETS_TOPIC} holds {total:,} records, expected {backlog.records:,}"
            )
        time.sleep(2)
        errors = broker_errors(broker_log, log_mark)
        kinds = sorted({re.sub(r"\d+", "N", e.split("] ", 2)[-1])[:160] for e in errors})
        print(f"  broker log: {len(errors)} ERROR lines since the produce", flush=True)
        for kind in kinds:
            print(f"    {kind}", flush=True)

        if not args.skip_loop:
            print("the kafka-python read+decode loop ...", flush=True)
            seen, loop_s = stream.reference_catch_up(bootstrap, OFFSETS_TOPIC, backlog.records)
            readers.append(Reader("loop", loop_s, seen))
            print(
                f"  {seen:,} records in {loop_s:.1f} s = {seen / loop_s:,.0f} records/s", flush=True
            )
        if peers is not None:
            burrow, kminion = peers
            print("Burrow ...", flush=True)
            r = run_burrow(burrow, bootstrap, backlog, STATE / "burrow", args.peer_timeout_s)
            readers.append(r)
            print(
                f"  all groups listed after {r.notes['all_listed_s']:.1f} s, the last groups' "
                f"last commits after {r.notes['sentinels_s']:.1f} s, every group's after "
                f"{r.seconds:.1f} s = {r.rate:,.0f} records/s",
                flush=True,
            )
            print("KMinion ...", flush=True)
            r = run_kminion(kminion, bootstrap, backlog, STATE / "kminion", args.peer_timeout_s)
            readers.append(r)
            consumed = r.notes["records_consumed_s"] or float("nan")
            print(
                f"  records consumed after {consumed:.1f} s, every last commit exported after "
                f"{r.seconds:.1f} s = {r.rate:,.0f} records/s",
                flush=True,
            )
        if not args.skip_floor:
            print("the Spark floor: read, decode in the JVM, last offset each ...", flush=True)
            r = run_floor(bootstrap, backlog, STATE / "floor", args.floor_arg)
            readers.append(r)
            print(
                f"  {r.records:,} records in {r.seconds:.1f} s = {r.rate:,.0f} records/s "
                f"({r.notes['with_startup_s']:.1f} s with Spark's start-up)",
                flush=True,
            )
        if not args.skip_job:
            print("the job: rebalance-monitor run --once (its own process) ...", flush=True)
            r = run_job(bootstrap, backlog, STATE / "job", args.job_arg)
            readers.append(r)
            print(
                f"  {r.records:,} records in {r.seconds:.1f} s = {r.rate:,.0f} records/s",
                flush=True,
            )
    load_after = _loadavg()

    report(args, backlog, readers, errors, load_before, load_after)
    if args.json:
        doc = {
            "groups": args.groups,
            "duration_s": args.duration_s,
            "backlog": {k: v for k, v in asdict(backlog).items() if k != "last"},
            "broker_errors": len(errors),
            "broker_error_kinds": kinds,
            "cores": os.cpu_count(),
            "load_before": load_before,
            "load_after": load_after,
            "job_args": args.job_arg,
            "readers": {
                r.name: {**asdict(r), "rate": r.rate if r.complete else None}
                | ({} if r.complete else {"seconds": None})
                for r in readers
            },
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    if not args.keep:
        shutil.rmtree(STATE, ignore_errors=True)
    return 0


def report(
    args: argparse.Namespace,
    backlog: Backlog,
    readers: list[Reader],
    errors: list[str],
    load_before: str,
    load_after: str,
) -> None:
    gib = 1024**3
    by = {r.name: r for r in readers}
    print()
    print(
        f"steady backlog: {backlog.records:,} records of {backlog.groups:,} groups "
        f"({backlog.commits / backlog.records:.1%} commits, v4), {os.cpu_count()} cores, "
        f"load {load_before} -> {load_after}"
    )
    print(f"  {'':34} {'records/s':>10}  {'seconds':>8}  {'peak RSS':>9}")
    labels = {
        "job": "the job (run --once)",
        "loop": "kafka-python read+decode loop",
        "Burrow": "Burrow 1.9.5",
        "KMinion": "KMinion 2.3.5 (offsetsTopic)",
        "floor": "Spark floor (bench/spark_floor.py)",
    }
    for name in ("job", "loop", "Burrow", "KMinion", "floor"):
        r = by.get(name)
        if r is None:
            print(f"  {labels[name]:34} {'skipped':>10}")
            continue
        rss = f"{r.peak_rss / gib:.2f} GiB" if r.peak_rss else ""
        if not r.complete:
            print(f"  {labels[name]:34} {'incomplete':>10}  (timed out: {r.notes})")
            continue
        print(f"  {labels[name]:34} {r.rate:>10,.0f}  {r.seconds:>8.1f}  {rss:>9}")
    job = by.get("job")
    if job is not None:
        n = job.notes
        with_startup = backlog.records / n["with_startup_s"]
        print(
            f"  {'the job, Spark start-up included':34} {with_startup:>10,.0f}  "
            f"{n['with_startup_s']:>8.1f}"
        )
        print(
            f"  job memory: JVM {n['jvm_peak'] / gib:.2f} GiB, driver Python "
            f"{n['driver_python_peak'] / gib:.2f} GiB, workers {n['workers_peak'] / gib:.2f} GiB "
            f"(RSS peaks); all at once, each page once (PSS) {n['total_pss_peak'] / gib:.2f} GiB "
            f"(target < 2 GiB at 10,000 groups); {n['groups_exported']} groups in the exporter"
        )
        for name, target in (
            ("Burrow", "target >= 2.0"),
            ("KMinion", "target >= 1.0"),
            ("loop", ""),
            ("floor", "(the most a Spark job reaches here)"),
        ):
            other = by.get(name)
            if other is not None and other.complete:
                print(f"  ratio job / {name:<8} {job.rate / other.rate:>6.2f}   {target}")
    kminion = by.get("KMinion")
    if kminion is not None and kminion.notes.get("records_consumed_s"):
        consumed_s = kminion.notes["records_consumed_s"]
        consumed_rate = backlog.records / consumed_s
        print(
            f"  KMinion exports offsets only once its catch-up check passes (every 15 s); it "
            f"had consumed every record after {consumed_s:.1f} s = {consumed_rate:,.0f} records/s"
            + ("" if job is None else f", job / that {job.rate / consumed_rate:.2f}")
        )
    if errors:
        print(f"  broker: {len(errors)} ERROR lines after the produce (see above)")


if __name__ == "__main__":
    sys.exit(main())
