"""The streaming job against a plain kafka-python loop that only reads and decodes the same
records: backlog catch-up rate, detection latency, driver memory.

The backlog: real coordinator records (the golden captures in ``tests/fixtures/golden``:
joins, syncs, leaves and commits of range, roundrobin, sticky, cooperative-sticky and KIP-848
groups, as the broker wrote them) replayed for ``--groups`` groups, each a copy of one
capture under its own group id (only the key's group id is rewritten; values are byte for
byte what the broker wrote), produced to a 50-partition topic on the coordinator's
partition, with the group's original timing. The job reads that topic through
``--offsets-topic`` (``__consumer_offsets`` itself cannot be written by clients).

The job runs as its own process, ``python -m streaming.cli run`` (what an operator runs),
with the job's defaults; ``--job-arg`` adds arguments (e.g. ``--job-arg=--conf
--job-arg=spark.driver.memory=1g``).

1. **Catch-up**: records/s of the job with ``--once`` (decode on the executors, per-group
   tracker on RocksDB, the six Delta tables, the exporter) over the whole backlog, timed
   from its ``started:`` line to its ``stopped after`` line (Spark's start-up excluded),
   against records/s of one kafka-python consumer reading the same topic from the
   beginning and decoding every record with the same codec. Ratio = job / loop (target
   >= 1.0). Beside it, the **ceiling**: the tracker alone (:func:`tracker_alone`: the
   same records decoded into observations and through the reducer, one process, no Spark,
   no sinks), its records/s on one core times the cores. That is what the job would reach
   if Spark, Arrow, RocksDB, Delta and the exporter cost nothing and the work split
   perfectly; the reducer's share spent in the what-if assignors is shown.
2. **Driver memory** of that run: the peak RSS (``VmHWM``) of the job's Python process and
   of its JVM (local mode: driver and executors in one JVM), sampled from ``/proc``; target
   < 2 GiB with 10,000 groups. The Python workers (executor side) are shown apart.
3. **Detection latency**: the job running with a 1 s trigger on a fresh topic; each trial
   produces the first record of a new group and times how long until the exporter serves
   the group's ``kafka_consumergroup_generation`` (scraped every 50 ms), while a kafka-python
   loop on the same topic times how long until it has read and decoded that record. p50 /
   p95 of each, ratio = job / loop; target p95 <= 2 s.

    make bench-stream                                   # 10,000 groups, 20 latency trials
    .venv/bin/python bench/stream.py --groups 2000 --trials 10 --skip-latency
    .venv/bin/python bench/stream.py --groups 2000 --ceiling-only 3   # loop vs tracker alone

It starts its own broker (free ports, folder ``.local/bench-stream``, removed at the end).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import struct
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from unittest import mock

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from assign_core.placement import coordinator_partition  # noqa: E402
from streaming import kafka_local  # noqa: E402
from streaming.codec.decode import decode_record  # noqa: E402
from streaming.job_log import message_of  # noqa: E402

GOLDEN = REPO / "tests" / "fixtures" / "golden"
STATE = REPO / ".local" / "bench-stream"
PARTITIONS = 50


# -- the backlog ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """One capture: its records as (ms since the capture's first record, key, value)."""

    name: str
    records: tuple[tuple[int, bytes, bytes | None], ...]


def load_templates() -> list[Template]:
    out = []
    for path in sorted(GOLDEN.glob("*.json")):
        doc = json.loads(path.read_text())
        recs = sorted(doc["records"], key=lambda r: (r["timestamp_ms"], r["offset"]))
        t0 = recs[0]["timestamp_ms"]
        out.append(
            Template(
                doc["name"],
                tuple(
                    (
                        r["timestamp_ms"] - t0,
                        bytes.fromhex(r["key"]),
                        None if r["value"] is None else bytes.fromhex(r["value"]),
                    )
                    for r in recs
                ),
            )
        )
    return out


def rekey(key: bytes, group: str) -> bytes:
    """The key with its group id replaced: every coordinator key is ``int16 type`` then the
    group id as a non-flexible ``int16``-length string, then the rest."""
    (length,) = struct.unpack_from(">h", key, 2)
    name = group.encode()
    return key[:2] + struct.pack(">h", len(name)) + name + key[4 + length :]


def produce_backlog(bootstrap: str, topic: str, groups: int, prefix: str) -> int:
    from kafka import KafkaProducer

    templates = load_templates()
    # idempotent (acks=all): a retried batch never lands after a later one, so each group's
    # records keep their order and every run reads the same backlog (``acks=1`` silently
    # turns idempotence off; a retry, e.g. while the new topic's leaders are elected, could
    # then put a generation after its successor: a "recreated" group)
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        linger_ms=50,
        batch_size=512 * 1024,
        acks="all",
        enable_idempotence=True,
    )
    base = int(time.time() * 1000) - groups * 10 - 600_000
    sent = 0
    for i in range(groups):
        group = f"{prefix}-{i:05d}"
        template = templates[i % len(templates)]
        partition = coordinator_partition(group, PARTITIONS)
        for dt, key, value in template.records:
            producer.send(
                topic,
                key=rekey(key, group),
                value=value,
                partition=partition,
                timestamp_ms=base + i * 10 + dt,
            )
            sent += 1
        if i % 1000 == 999:
            print(f"  produced {i + 1:,} groups ({sent:,} records)", flush=True)
    producer.flush()
    producer.close()
    return sent


def create_topics(bootstrap: str, *topics: tuple[str, int]) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics(
            [NewTopic(t, num_partitions=n, replication_factor=1) for t, n in topics]
        )
    finally:
        admin.close()


# -- the reference loop ----------------------------------------------------------------------


def _consumer(bootstrap: str, topic: str) -> Any:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(parts)
    consumer.seek_to_beginning(*parts)
    return consumer, parts


def reference_catch_up(bootstrap: str, topic: str, expected: int) -> tuple[int, float]:
    """kafka-python: read the topic from the beginning and decode every record."""
    consumer, parts = _consumer(bootstrap, topic)
    ends = consumer.end_offsets(parts)
    total = sum(ends.values())
    assert total == expected, (total, expected)
    seen = 0
    started = time.perf_counter()
    while seen < total:
        for records in consumer.poll(timeout_ms=500, max_records=10_000).values():
            for r in records:
                decode_record(r.key, r.value)
                seen += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    return seen, elapsed


@dataclass
class Tracker:
    """The job's own per-record work without Spark (:func:`tracker_alone`), in seconds of
    one core: decoding into observations, the reducer (of which the what-if assignors)."""

    records: int
    decode_s: float
    reduce_s: float
    what_if_s: float

    def rate(self, cores: int) -> float:
        """Records/s of ``cores`` cores doing nothing but this work, perfectly parallel."""
        return cores * self.records / (self.decode_s + self.reduce_s)


def tracker_alone(bootstrap: str, topic: str, expected: int) -> Tracker:
    """What the job cannot avoid, measured without Spark, Arrow, RocksDB, Delta or the
    exporter: every record decoded into an observation (as the stateful step does), then each
    group's observations through the reducer in one call (one micro-batch) from a new state,
    the state serialized after it. Reading is not counted (Spark reads in the JVM). The time
    inside ``run_strategies`` (the expected assignment under every applicable strategy, with
    its skew and churn) is counted apart."""
    from streaming.spark.buckets import logical_now_ms
    from streaming.spark.decode import observation_of
    from streaming.tracking import classic
    from streaming.tracking import consumer as kip848
    from streaming.tracking.expected import run_strategies
    from streaming.tracking.model import Observation, routing_keys
    from streaming.tracking.reducer import apply
    from streaming.tracking.state import GroupState

    reader, parts = _consumer(bootstrap, topic)
    total = sum(reader.end_offsets(parts).values())
    assert total == expected, (total, expected)
    raw: list[tuple[int, int, int, bytes, bytes | None]] = []
    while len(raw) < total:
        for records in reader.poll(timeout_ms=500, max_records=10_000).values():
            raw += [(r.partition, r.offset, r.timestamp, r.key, r.value) for r in records]
    reader.close()

    started = time.perf_counter()
    groups: dict[str, list[Observation]] = {}
    for partition, offset, ts_ms, key, value in raw:
        obs = observation_of(
            "offsets", key, value, partition=partition, offset=offset, timestamp_ms=ts_ms
        )
        for group in routing_keys(obs.payload):
            groups.setdefault(group, []).append(obs)
    decode_s = time.perf_counter() - started

    spent = [0.0]

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return run_strategies(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - t0

    # the name each tracker module imported from streaming.tracking.expected
    with (
        mock.patch.object(classic, "run_strategies", timed),
        mock.patch.object(kip848, "run_strategies", timed),
    ):
        started = time.perf_counter()
        for group, observations in groups.items():
            state = GroupState.new("local", group)
            state, _events = apply(state, observations, logical_now_ms(state, observations))
            state.to_json()
        reduce_s = time.perf_counter() - started
    return Tracker(len(raw), decode_s, reduce_s, spent[0])


class ReferenceWatcher:
    """A kafka-python loop in a thread: read and decode, note when each group's first
    record was decoded."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer, _ = _consumer(bootstrap, topic)
        self.seen: dict[str, float] = {}
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for records in self.consumer.poll(timeout_ms=100).values():
                for r in records:
                    record = decode_record(r.key, r.value)
                    group = getattr(record, "group_id", None)
                    if group is not None and group not in self.seen:
                        self.seen[group] = time.perf_counter()

    def close(self) -> None:
        self._stop.set()
        self.thread.join(timeout=5)
        self.consumer.close()


# -- the job as its own process ------------------------------------------------------------


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            out += [int(c) for c in task.read_text().split()]
    return out


def _status_kib(pid: int, field: str) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


def cpu_seconds(driver_pid: int) -> dict[str, float]:
    """CPU time (user + system) of the job's process tree so far, in seconds, by process
    (``jvm``, ``driver`` Python, Python ``workers``): every live process's own, and what its
    exited children had (a worker the daemon forked and reaped counts in the daemon's).
    Measured under any load: the wall time of a 2-core machine shared with a producer, a
    broker and other work is not the job's cost."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {"jvm": 0.0, "driver": 0.0, "workers": 0.0}
    stack = [driver_pid]
    while stack:
        pid = stack.pop()
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
            if pid == driver_pid:
                kind = "driver"  # its reaped children are none of the others' (cutime: 0)
            elif "java" in _cmdline(pid).split(" ", 1)[0]:
                kind = "jvm"
            else:
                kind = "workers"
            out[kind] += ticks / tick
        stack += _children(pid)
    return out


@dataclass
class Memory:
    """Peaks of the job's processes, in bytes: the driver's Python, its JVM (local mode:
    driver and executors in one JVM) and the sum of the Python workers at any one time, each
    as resident memory (RSS); and ``total``, the most the whole process tree held at once
    with each page counted once (the sum of the processes' PSS, sampled every
    ``pss_every``-th call: reading it costs the kernel a walk of each process's pages).

    The workers are forked from one daemon and share its pages (pyspark, pandas, pyarrow
    imported before the fork), so their RSS summed counts those pages once per worker: at
    10,000 groups ~0.7 GiB summed, ~0.5 GiB as PSS. A container's memory limit charges a
    page once, as ``total`` does (page cache aside)."""

    driver_python: int = 0
    jvm: int = 0
    workers: int = 0
    total: int = 0
    pss_every: ClassVar[int] = 4
    _calls: int = field(default=0, init=False, repr=False)

    def sample(self, driver_pid: int) -> None:
        self.driver_python = max(self.driver_python, _status_kib(driver_pid, "VmHWM") * 1024)
        workers = 0
        tree = [driver_pid]
        stack = _children(driver_pid)
        while stack:
            pid = stack.pop()
            tree.append(pid)
            cmd = _cmdline(pid)
            if "java" in cmd.split(" ", 1)[0]:
                self.jvm = max(self.jvm, _status_kib(pid, "VmHWM") * 1024)
            elif "pyspark" in cmd or "python" in cmd:
                workers += _status_kib(pid, "VmRSS") * 1024
            stack += _children(pid)
        self.workers = max(self.workers, workers)
        if self._calls % self.pss_every == 0:  # every 2 s with JobProcess's 500 ms
            self.total = max(self.total, sum(_pss_kib(pid) for pid in tree) * 1024)
        self._calls += 1


def _pss_kib(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


class SparkProcess:
    """A Spark program as its own process (``python -m`` ``args``, from the repository), its
    output written to ``log``, its lines timestamped as they arrive and its memory sampled
    every 500 ms (peaks: ``VmHWM``, so none is missed)."""

    def __init__(self, args: Sequence[str], log: Path) -> None:
        import subprocess

        self.lines: list[tuple[float, str]] = []
        self.memory = Memory()
        self.log = log
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.log.open("w") as log:
            for line in self.proc.stdout:
                log.write(line)
                self.lines.append((time.perf_counter(), message_of(line)))

    def _sample(self) -> None:
        while self.proc.poll() is None:
            self.memory.sample(self.proc.pid)
            time.sleep(0.5)

    def first(self, prefix: str, timeout_s: float = 300) -> tuple[float, str]:
        """The first line starting with ``prefix`` (waits for it)."""
        deadline = time.perf_counter() + timeout_s
        while time.perf_counter() < deadline:
            for at, line in list(self.lines):
                if line.startswith(prefix):
                    return at, line
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        tail = "\n".join(line for _, line in self.lines[-30:])
        raise SystemExit(
            f"the job printed no {prefix!r} line; its last lines:\n{tail}\n(all: {self.log})"
        )

    def wait(self) -> int:
        code = self.proc.wait()
        self._reader.join(timeout=5)
        return code

    def stop(self) -> None:
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except Exception:
                self.proc.kill()
        self._reader.join(timeout=5)


class JobProcess(SparkProcess):
    """``python -m streaming.cli run`` on the bench topics (trigger 1 s, the exporter on
    ``port``, ``extra`` arguments after), its whole output in ``<work>.log``."""

    def __init__(
        self, bootstrap: str, topic: str, membership: str, work: Path, port: int, *extra: str
    ) -> None:
        cmd = [
            "streaming.cli",
            "run",
            "--bootstrap-server",
            bootstrap,
            "--offsets-topic",
            topic,
            "--membership-topic",
            membership,
            "--checkpoint-dir",
            str(work / "checkpoint"),
            "--delta-path",
            str(work / "delta"),
            "--metrics-port",
            str(port),
            "--trigger-interval",
            "1",
            *extra,
        ]
        super().__init__(cmd, work.parent / f"{work.name}.log")


# -- the phases -----------------------------------------------------------------------------


@dataclass
class CatchUp:
    records: int
    job_s: float
    loop_s: float
    memory: Memory
    groups_exported: int
    tracker: Tracker

    @property
    def job_rate(self) -> float:
        return self.records / self.job_s

    @property
    def loop_rate(self) -> float:
        return self.records / self.loop_s


def ceiling(bootstrap: str, groups: int, rounds: int) -> None:
    """Only the loop and the tracker alone (no Spark job), ``rounds`` times alternately on
    one backlog: the ceiling as a ratio within each round (a loaded machine moves both)."""
    topic = "bench.offsets"
    create_topics(bootstrap, (topic, PARTITIONS))
    records = produce_backlog(bootstrap, topic, groups, "bench")
    cores = os.cpu_count() or 1
    print(f"backlog: {records:,} records of {groups:,} groups; {cores} cores", flush=True)
    for i in range(rounds):
        seen, loop_s = reference_catch_up(bootstrap, topic, records)
        t = tracker_alone(bootstrap, topic, records)
        per_record = 1e6 / records
        print(
            f"  round {i + 1}: loop {seen / loop_s:,.0f} records/s; tracker alone, one core "
            f"{t.rate(1):,.0f} records/s (per record: decode {t.decode_s * per_record:.0f} us, "
            f"reducer {t.reduce_s * per_record:.0f} us, of which what-if assignors "
            f"{t.what_if_s * per_record:.0f} us); ceiling on {cores} cores "
            f"{t.rate(cores):,.0f} records/s, ratio {t.rate(cores) * loop_s / seen:.2f}",
            flush=True,
        )


def catch_up(bootstrap: str, groups: int, work: Path, *extra: str) -> CatchUp:
    import re

    from tests.conftest import free_ports

    topic, membership = "bench.offsets", "bench.membership"
    create_topics(bootstrap, (topic, PARTITIONS), (membership, 1))
    print(f"producing the backlog of {groups:,} groups ...", flush=True)
    records = produce_backlog(bootstrap, topic, groups, "bench")
    print(f"backlog: {records:,} records on {PARTITIONS} partitions", flush=True)

    print("reference: kafka-python read + decode ...", flush=True)
    seen, loop_s = reference_catch_up(bootstrap, topic, records)
    print(f"  {seen:,} records in {loop_s:.1f} s = {seen / loop_s:,.0f} records/s", flush=True)

    print("the tracker alone (decode + reducer, no Spark, one core) ...", flush=True)
    tracker = tracker_alone(bootstrap, topic, records)
    print(
        f"  decode {tracker.decode_s:.1f} s, reducer {tracker.reduce_s:.1f} s "
        f"(what-if assignors {tracker.what_if_s:.1f} s)",
        flush=True,
    )

    print("the job: rebalance-monitor run --once over the backlog (its own process) ...")
    job = JobProcess(
        bootstrap, topic, membership, work / "catchup", free_ports(1)[0], "--once", *extra
    )
    started, _ = job.first("started:")
    code = job.wait()
    ended, summary = job.first("stopped after")
    for _, line in job.lines:
        if line.startswith(("[records]", "[events]", "stopped")):
            print("  " + line, flush=True)
    if code != 0:
        raise SystemExit(f"the job exited with {code}")
    match = re.search(r": (\d+) records .*, (\d+) groups in the exporter", summary)
    if match is None or int(match.group(1)) != records:
        raise SystemExit(f"the job did not read the {records} records: {summary}")
    job_s = ended - started
    print(f"  {records:,} records in {job_s:.1f} s = {records / job_s:,.0f} records/s", flush=True)
    return CatchUp(records, job_s, loop_s, job.memory, int(match.group(2)), tracker)


@dataclass
class Latency:
    job_ms: list[float]
    loop_ms: list[float]


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def latency(bootstrap: str, trials: int, work: Path, *extra: str) -> Latency:
    import random

    from kafka import KafkaProducer

    from tests.conftest import free_ports

    topic, membership = "bench.latency.offsets", "bench.latency.membership"
    create_topics(bootstrap, (topic, PARTITIONS), (membership, 1))
    produce_backlog(bootstrap, topic, 100, "warm")
    (port,) = free_ports(1)
    job = JobProcess(bootstrap, topic, membership, work / "latency", port, *extra)
    url = f"http://127.0.0.1:{port}/metrics"
    watcher = ReferenceWatcher(bootstrap, topic)
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, acks=1)
    template = next(t for t in load_templates() if t.name == "range")
    _dt, key, value = next(r for r in template.records if struct.unpack_from(">h", r[1])[0] == 2)
    result = Latency([], [])
    try:
        job.first("[events] batch 0")  # the warm-up backlog is processed
        print(f"latency: {trials} trials, trigger 1 s, exporter {url}", flush=True)
        for n in range(trials):
            time.sleep(random.uniform(0.5, 1.5))  # land anywhere in the trigger interval
            group = f"latency-{n:03d}"
            needle = f'kafka_consumergroup_generation{{cluster="local",group="{group}"}}'
            producer.send(
                topic,
                key=rekey(key, group),
                value=value,
                partition=coordinator_partition(group, PARTITIONS),
            ).get(timeout=10)
            sent = time.perf_counter()
            deadline = sent + 60
            while time.perf_counter() < deadline:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    if needle in resp.read().decode():
                        break
                time.sleep(0.05)
            else:
                raise SystemExit(f"{group} never reached the exporter")
            job_ms = (time.perf_counter() - sent) * 1000
            while group not in watcher.seen and time.perf_counter() < deadline:
                time.sleep(0.01)
            loop_ms = (watcher.seen[group] - sent) * 1000
            result.job_ms.append(job_ms)
            result.loop_ms.append(loop_ms)
            print(f"  {group}: job {job_ms:6.0f} ms   loop {loop_ms:6.0f} ms", flush=True)
    finally:
        producer.close()
        watcher.close()
        job.stop()
    return result


# -- main -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _broker(folder: Path) -> Iterator[str]:
    from tests.conftest import free_ports

    port, controller = free_ports(2)
    config = kafka_local.BrokerConfig(port=port, controller_port=controller, folder=folder)
    info = kafka_local.start(config, progress=lambda line: print("  " + line, flush=True))
    try:
        yield info.bootstrap_servers
    finally:
        kafka_local.stop(config)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=10_000, help="groups in the backlog")
    parser.add_argument("--trials", type=int, default=20, help="detection-latency trials")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-catch-up", action="store_true")
    parser.add_argument(
        "--ceiling-only",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="only the loop and the tracker alone (no Spark job, no latency), ROUNDS times",
    )
    parser.add_argument(
        "--job-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="an extra argument of `rebalance-monitor run` (repeatable), e.g. --job-arg=--conf "
        "--job-arg=spark.driver.memory=1g",
    )
    args = parser.parse_args(argv)

    shutil.rmtree(STATE, ignore_errors=True)
    STATE.mkdir(parents=True)
    print(f"machine: {os.cpu_count()} cores", flush=True)
    c = lat = None
    with _broker(STATE / "kafka") as bootstrap:
        if args.ceiling_only:
            ceiling(bootstrap, args.groups, args.ceiling_only)
            args.skip_catch_up = args.skip_latency = True
        if not args.skip_catch_up:
            c = catch_up(bootstrap, args.groups, STATE, *args.job_arg)
        if not args.skip_latency:
            lat = latency(bootstrap, args.trials, STATE, *args.job_arg)
    shutil.rmtree(STATE, ignore_errors=True)

    gib = 1024**3
    print()
    if c is not None:
        m = c.memory
        print(f"catch-up, {c.records:,} records of {args.groups:,} groups")
        print(
            f"  kafka-python read+decode loop  {c.loop_rate:>10,.0f} records/s  ({c.loop_s:.1f} s)"
        )
        print(f"  the job (--once, all sinks)    {c.job_rate:>10,.0f} records/s  ({c.job_s:.1f} s)")
        print(
            f"  ratio job / loop               {c.job_rate / c.loop_rate:>10.2f}   (target >= 1.0)"
        )
        t, cores = c.tracker, os.cpu_count() or 1
        per_record = 1e6 / c.records
        print(
            f"  the tracker alone, one core    {t.rate(1):>10,.0f} records/s  "
            f"(per record: decode {t.decode_s * per_record:.0f} us, reducer "
            f"{t.reduce_s * per_record:.0f} us, of which what-if assignors "
            f"{t.what_if_s * per_record:.0f} us)"
        )
        print(
            f"  ceiling on {cores} cores              {t.rate(cores):>10,.0f} records/s  "
            f"ratio {t.rate(cores) / c.loop_rate:.2f}   (the tracker alone, perfectly "
            "parallel: no Spark, no sinks)"
        )
        print(f"driver memory with {c.groups_exported:,} groups tracked (the job's own process)")
        print(f"  driver JVM peak RSS            {m.jvm / gib:>10.2f} GiB  (local: with executors)")
        print(f"  driver Python peak RSS         {m.driver_python / gib:>10.2f} GiB")
        total = (m.jvm + m.driver_python) / gib
        print(f"  driver total                   {total:>10.2f} GiB   (target < 2 GiB)")
        print(f"  Python workers, peak sum       {m.workers / gib:>10.2f} GiB  (executor side)")
        print(
            f"  all at once, each page once    {m.total / gib:>10.2f} GiB  (PSS of the driver, "
            "its JVM and the workers)"
        )
    if lat is not None:
        jp50, jp95 = statistics.median(lat.job_ms), _p(lat.job_ms, 0.95)
        lp50, lp95 = statistics.median(lat.loop_ms), _p(lat.loop_ms, 0.95)
        print(f"detection latency, {len(lat.job_ms)} trials (record produced -> visible)")
        print(f"  kafka-python loop (decoded)    p50 {lp50:7.0f} ms   p95 {lp95:7.0f} ms")
        print(f"  the job (exporter, trigger 1s) p50 {jp50:7.0f} ms   p95 {jp95:7.0f} ms")
        print(
            f"  ratio job / loop (p95)         {jp95 / lp95:>10.2f}   (target: job p95 <= 2000 ms)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
