"""The streaming job against a plain kafka-python loop that only reads and decodes the same
records: backlog catch-up rate, detection latency, driver memory.

The backlog: real coordinator records (the golden captures in ``tests/fixtures/golden``:
joins, syncs, leaves and commits of range, roundrobin, sticky, cooperative-sticky and KIP-848
groups, as the broker wrote them) replayed for ``--groups`` groups, each a copy of one
capture under its own group id (only the key's group id is rewritten; values are byte for
byte what the broker wrote), produced to a 50-partition topic on the coordinator's
partition, with the group's original timing. The job reads that topic through
``--offsets-topic`` (``__consumer_offsets`` itself cannot be written by clients).

1. **Catch-up**: records/s of the job with ``--once`` (decode on the executors, per-group
   tracker on RocksDB, the six Delta tables, the exporter) over the whole backlog, against
   records/s of one kafka-python consumer reading the same topic from the beginning and
   decoding every record with the same codec. Ratio = job / loop (target >= 1.0).
2. **Driver memory** after the job tracked every group: peak RSS of the Spark JVM (local
   mode: driver and executors in one JVM, heap capped by ``spark.driver.memory=2g``) plus
   the driver's Python process; target < 2 GiB with 10,000 groups.
3. **Detection latency**: the job running with a 1 s trigger on a fresh topic; each trial
   produces the first record of a new group and times how long until the exporter serves
   the group's ``kafka_consumergroup_generation`` (scraped every 50 ms), while a kafka-python
   loop on the same topic times how long until it has read and decoded that record. p50 /
   p95 of each, ratio = job / loop; target p95 <= 2 s.

    make bench-stream                                   # 10,000 groups, 20 latency trials
    .venv/bin/python bench/stream.py --groups 2000 --trials 10

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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from assign_core.placement import coordinator_partition  # noqa: E402
from streaming import kafka_local  # noqa: E402
from streaming.codec.decode import decode_record  # noqa: E402
from streaming.config import load_config  # noqa: E402

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
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=50, batch_size=512 * 1024, acks=1
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


# -- memory ---------------------------------------------------------------------------------


def _vm_hwm_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def reset_peak(pid: int) -> None:
    """Reset the process's peak RSS (``VmHWM``): writing 5 to ``clear_refs`` (Linux)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def jvm_pid(spark: Any) -> int:
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


# -- the phases -----------------------------------------------------------------------------


def _job_config(bootstrap: str, topic: str, membership: str, work: Path, port: int) -> Any:
    """The job on the bench topics: trigger 1 s, state under ``work``, exporter on ``port``."""
    return load_config(
        environ={},
        overrides={
            "bootstrap_servers": bootstrap,
            "offsets_topic": topic,
            "membership_topic": membership,
            "checkpoint_dir": str(work / "checkpoint"),
            "delta_path": str(work / "delta"),
            "metrics_port": port,
            "trigger_interval_s": 1.0,
        },
    )


@dataclass
class CatchUp:
    records: int
    job_s: float
    loop_s: float
    jvm_peak: int
    python_peak: int
    groups_exported: int

    @property
    def job_rate(self) -> float:
        return self.records / self.job_s

    @property
    def loop_rate(self) -> float:
        return self.records / self.loop_s


def catch_up(spark: Any, bootstrap: str, groups: int, work: Path) -> CatchUp:
    from streaming.job import launch
    from tests.conftest import free_ports

    topic, membership = "bench.offsets", "bench.membership"
    create_topics(bootstrap, (topic, PARTITIONS), (membership, 1))
    print(f"producing the backlog of {groups:,} groups ...", flush=True)
    records = produce_backlog(bootstrap, topic, groups, "bench")
    print(f"backlog: {records:,} records on {PARTITIONS} partitions", flush=True)

    print("reference: kafka-python read + decode ...", flush=True)
    seen, loop_s = reference_catch_up(bootstrap, topic, records)
    print(f"  {seen:,} records in {loop_s:.1f} s = {seen / loop_s:,.0f} records/s", flush=True)

    config = _job_config(bootstrap, topic, membership, work / "catchup", free_ports(1)[0])
    print("the job: --once over the backlog ...", flush=True)
    # peaks of the job alone, not of producing the backlog or of the reference loop
    reset_peak(os.getpid())
    reset_peak(jvm_pid(spark))
    batches: list[str] = []
    job = launch(config, once=True, spark=spark, progress=batches.append)
    started = time.perf_counter()
    job.wait()
    job_s = time.perf_counter() - started
    job.stop()
    stats = job.stats
    for line in batches:
        if line.startswith("[records]"):
            print("  " + line, flush=True)
    print(
        f"  {stats.input_records:,} records in {job_s:.1f} s = "
        f"{stats.input_records / job_s:,.0f} records/s",
        flush=True,
    )
    if stats.input_records != records:
        raise SystemExit(f"the job read {stats.input_records} records, not {records}")
    assert job.sinks.prometheus is not None
    exported = {
        s.labels["group"]
        for family in job.sinks.prometheus.registry.collect()
        if family.name == "kafka_consumergroup_generation"
        for s in family.samples
    }
    return CatchUp(
        records=records,
        job_s=job_s,
        loop_s=loop_s,
        jvm_peak=_vm_hwm_bytes(jvm_pid(spark)),
        python_peak=_vm_hwm_bytes(os.getpid()),
        groups_exported=len(exported),
    )


@dataclass
class Latency:
    job_ms: list[float]
    loop_ms: list[float]


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def latency(spark: Any, bootstrap: str, trials: int, work: Path) -> Latency:
    import random

    from kafka import KafkaProducer

    from streaming.job import launch
    from tests.conftest import free_ports

    topic, membership = "bench.latency.offsets", "bench.latency.membership"
    create_topics(bootstrap, (topic, PARTITIONS), (membership, 1))
    produce_backlog(bootstrap, topic, 100, "warm")
    (port,) = free_ports(1)
    config = _job_config(bootstrap, topic, membership, work / "latency", port)
    job = launch(config, spark=spark, progress=lambda _line: None)
    watcher = ReferenceWatcher(bootstrap, topic)
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, acks=1)
    template = next(t for t in load_templates() if t.name == "range")
    _dt, key, value = next(r for r in template.records if struct.unpack_from(">h", r[1])[0] == 2)
    url = job.metrics_url
    assert url is not None
    result = Latency([], [])
    try:
        job.await_backlog()
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
    args = parser.parse_args(argv)

    from streaming.spark.session import build_session

    shutil.rmtree(STATE, ignore_errors=True)
    STATE.mkdir(parents=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    print(f"machine: {os.cpu_count()} cores", flush=True)
    with _broker(STATE / "kafka") as bootstrap:
        spark = build_session("rebalance-monitor-bench", master="local[*]")
        try:
            c = catch_up(spark, bootstrap, args.groups, STATE)
            lat = None if args.skip_latency else latency(spark, bootstrap, args.trials, STATE)
        finally:
            spark.stop()
    shutil.rmtree(STATE, ignore_errors=True)

    gib = 1024**3
    print()
    print(f"catch-up, {c.records:,} records of {args.groups:,} groups")
    print(f"  kafka-python read+decode loop  {c.loop_rate:>10,.0f} records/s  ({c.loop_s:.1f} s)")
    print(f"  the job (--once, all sinks)    {c.job_rate:>10,.0f} records/s  ({c.job_s:.1f} s)")
    print(f"  ratio job / loop               {c.job_rate / c.loop_rate:>10.2f}   (target >= 1.0)")
    print(f"driver memory with {c.groups_exported:,} groups tracked")
    print(f"  Spark JVM peak RSS             {c.jvm_peak / gib:>10.2f} GiB")
    print(f"  driver Python peak RSS         {c.python_peak / gib:>10.2f} GiB")
    total = (c.jvm_peak + c.python_peak) / gib
    print(f"  total                          {total:>10.2f} GiB   (target < 2 GiB)")
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
