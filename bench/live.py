"""Detection latency while the job consumes the steady workload live, at its real rate.

Issue 12's target: p95 <= 2 s with a 1 s trigger while a 10,000-group steady backlog is
consumed live. ``bench/steady.py`` builds that backlog ahead of time and times catch-up; this
bench produces the same workload **as it happens** and measures what an operator sees:

1. a broker of its own (free loopback ports, folder ``.local/bench-live``, removed at the end
   unless ``--keep``), ``__consumer_offsets`` created, the commits' topics and the job's
   membership topic created (as ``bench/steady.py`` does);
2. ``BacklogProducer`` (``bench/java``, ``client.id`` ``__admin_client``) in its paced mode,
   reading records from its stdin and sending each no earlier than its timestamp;
3. the prelude: each of ``--groups`` groups' one real rebalance, taken from a golden capture
   and rekeyed (:func:`steady.load_captures`, :func:`stream.rekey`), stamped just before now;
4. the job, ``python -m streaming.cli run`` as its own process (:class:`stream.JobProcess`:
   trigger 1 s, exporter on a free loopback port, every extra ``--job-arg`` passed on),
   started and given the time to process the prelude (its first micro-batch);
5. then for ``--duration-s`` of wall time the steady commits: every group commits each of its
   20 owned partitions every 5 s (v4 values, :func:`steady.offset_commit_value_v4`), group
   ``i`` at ``i * 5 s / G`` into each interval, stamped with the moment they are due, so
   record time is wall time: 10,000 groups make 40,000 records/s. The records are generated
   in Python a little ahead of time (``LEAD_MS``) and streamed to the producer's stdin;
6. meanwhile, from ``--warmup-s`` on, every ``--trial-every-s`` a **latency trial**: the first
   ``GroupMetadata`` record of a new group (the ``range`` capture's, rekeyed to
   ``live-NNN``, as ``bench/stream.py`` does) is put among the commits, marked, on its
   group's coordinator partition. Its latency is from the producer's acknowledgement of
   that record to the first scrape of the exporter that serves the group's
   ``kafka_consumergroup_generation`` (``/metrics?name[]=kafka_consumergroup_generation``,
   polled every ``--scrape-interval-ms``, default 50, while a trial is pending; the time a
   scrape takes is reported: it is part of the resolution, and with 10,000 groups each
   scrape walks every series of the exporter);
7. at the end: the produce stops, and the bench waits up to ``--drain-s`` for the job to have
   read every record of the topic (the lag at the end, in records and in seconds to drain);
8. then the reference run (``--floor-s``, default 120; 0: none): ``bench/spark_floor.py
   --live``, the least a Spark job does with the same commits live (read, decode in the JVM,
   each partition's last offset to the driver, the same 1 s trigger), on the same broker,
   fed the same workload for ``--warmup-s`` (not measured) and then ``--floor-s``. Its CPU,
   memory, micro-batches and how old each batch's oldest record is when the batch reaches
   the driver are reported beside the job's, and the job's CPU as a ratio of it.

Reported: produce rate achieved (and how late the producer ever was against the records'
timestamps); the trials' p50 / p95 / max (target: p95 <= 2,000 ms); the job's micro-batches
during the live phase, from its ``[records] batch N: ...`` lines (records per batch, the
interval between consecutive lines: a batch's wall time when it exceeds the 1 s trigger);
the job's input rate against the produce rate and its lag at the end (kept up: it had read
every record within ``--kept-up-s``, default 10 s, of the produce's end); the
memory peaks of its processes (:class:`stream.Memory`: JVM, driver Python, workers; all at
once as PSS), and the machine's load average before, during (max) and after.

Run it::

    make bench-live                                            # 10,000 groups, 120 s
    make bench-live ARGS="--groups 500 --duration-s 60"        # development
    .venv/bin/python bench/live.py --groups 500 --duration-s 60 --json out.json \\
        --job-arg=--conf --job-arg=spark.driver.memory=1g
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import steady  # noqa: E402  (bench/steady.py: captures, v4 builder, producer, broker)
import stream  # noqa: E402  (bench/stream.py: rekey, the job runner, memory sampling)

from assign_core.placement import coordinator_partition  # noqa: E402

STATE = REPO / ".local" / "bench-live"
OFFSETS_TOPIC = steady.OFFSETS_TOPIC
OFFSETS_PARTITIONS = steady.OFFSETS_PARTITIONS
COMMIT_INTERVAL_MS = steady.COMMIT_INTERVAL_MS
LEAD_MS = 1_000  # how far ahead of their timestamps records are written to the producer
GENERATION = "kafka_consumergroup_generation"

_HEADER = struct.Struct(">iqi")  # partition, timestamp, key length
_LENGTH = struct.Struct(">i")
_V4_HEAD = struct.Struct(">ihqiBq")  # value length; version, offset, leader epoch, "", commit ts


def _now_ms() -> int:
    return int(time.time() * 1000)


def _loadavg() -> float:
    with contextlib.suppress(OSError, ValueError):
        return float(Path("/proc/loadavg").read_text().split()[0])
    return float("nan")


def _p(values: Sequence[float], q: float) -> float:
    return stream._p(list(values), q) if values else float("nan")


# -- the workload ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Owned:
    """One partition a group commits: its record prefix (key) and v4 tags, and its offsets."""

    key: bytes
    tags: bytes
    start: int
    step: int


@dataclass(frozen=True)
class Group:
    name: str
    coordinator: int  # its __consumer_offsets partition
    phase_ms: int  # when in each 5 s interval it commits
    capture: steady.Capture
    owned: tuple[Owned, ...]


def plan_groups(groups: int) -> list[Group]:
    """The groups of ``bench/steady.py``'s backlog, same names, partitions and offsets."""
    captures = steady.load_captures()
    out = []
    for i in range(groups):
        name = steady.group_name(i)
        capture = captures[i % len(captures)]
        owned = []
        for j, (topic, partition) in enumerate(capture.owned):
            # the tagged fields of offset_commit_value_v4: tag 0, the topic id
            tags = steady.offset_commit_value_v4(0, 0, "", 0, capture.topic_ids[topic])[23:]
            owned.append(
                Owned(
                    steady.offset_commit_key(name, topic, partition),
                    tags,
                    1_000 + 37 * j + i % 97,
                    20 + (7 * i + 13 * j) % 80,
                )
            )
        out.append(
            Group(
                name,
                coordinator_partition(name, OFFSETS_PARTITIONS),
                i * COMMIT_INTERVAL_MS // groups,
                capture,
                tuple(owned),
            )
        )
    return out


def encode(partition: int, ts_ms: int, key: bytes, value: bytes | None) -> bytes:
    """One record in ``BacklogProducer``'s input format."""
    head = _HEADER.pack(partition, ts_ms, len(key)) + key
    return head + (_LENGTH.pack(-1) if value is None else _LENGTH.pack(len(value)) + value)


def prelude(groups: Sequence[Group], now_ms: int) -> list[bytes]:
    """Every group's rebalance, in time order, the last record stamped ``now_ms``."""
    span = max(dt for g in groups for dt, _, _ in g.capture.rebalance)
    base = now_ms - span - COMMIT_INTERVAL_MS
    pending = sorted(
        (base + g.phase_ms + dt, g.coordinator, stream.rekey(key, g.name), value)
        for g in groups
        for dt, key, value in g.capture.rebalance
    )
    return [encode(part, min(ts, now_ms), key, value) for ts, part, key, value in pending]


def commits(group: Group, round_: int, ts_ms: int) -> bytes:
    """One round of a group's commits: each owned partition's v4 commit, stamped ``ts_ms``
    (the value is :func:`steady.offset_commit_value_v4`'s, built from its parts)."""
    chunks = []
    for o in group.owned:
        chunks.append(_HEADER.pack(group.coordinator, ts_ms, len(o.key)) + o.key)
        offset = o.start + round_ * o.step
        chunks.append(_V4_HEAD.pack(23 + len(o.tags), 4, offset, 0, 1, ts_ms) + o.tags)
    return b"".join(chunks)


def check_commits(group: Group) -> None:
    """:func:`commits` writes what ``bench/steady.py`` writes (byte for byte)."""
    got = commits(group, 3, 1_700_000_000_123)
    want = b"".join(
        encode(
            group.coordinator,
            1_700_000_000_123,
            o.key,
            steady.offset_commit_value_v4(
                o.start + 3 * o.step,
                0,
                "",
                1_700_000_000_123,
                o.tags[3:] if len(o.tags) > 1 else bytes(16),
            ),
        )
        for o in group.owned
    )
    if got != want:
        raise SystemExit(f"the live commits of {group.name} differ from bench/steady.py's")


def trial_record(n: int, ts_ms: int) -> tuple[str, bytes]:
    """The ``n``-th trial: the first ``GroupMetadata`` record of the ``range`` capture,
    rekeyed to a new group, marked (negative partition) so the producer reports its ack."""
    template = next(t for t in stream.load_templates() if t.name == "range")
    _dt, key, value = next(r for r in template.records if struct.unpack_from(">h", r[1])[0] == 2)
    group = f"live-{n:03d}"
    partition = coordinator_partition(group, OFFSETS_PARTITIONS)
    return group, encode(-1 - partition, ts_ms, stream.rekey(key, group), value)


# -- the producer -----------------------------------------------------------------------------


@dataclass
class Ack:
    sent_ms: int
    acked_ms: int


@dataclass
class ProducerStats:
    """What ``BacklogProducer`` said: its progress lines (Unix ms, records acknowledged, how
    late its worst record of the second was) and the marked records' acknowledgements."""

    progress: list[tuple[int, int, int]] = field(default_factory=list)
    acks: dict[int, Ack] = field(default_factory=dict)
    summary: str = ""


class PacedProducer:
    """``BacklogProducer --input - --paced`` as its own process; records are written to its
    stdin (:meth:`write`), its stdout parsed by a thread."""

    def __init__(self, bootstrap: str, log: Path) -> None:
        classes = steady.compile_producer()
        cmd = [
            "java",
            "-Xmx512m",
            "-cp",
            f"{classes}{os.pathsep}{steady.CLIENT_JARS}/*",
            "BacklogProducer",
            "--bootstrap-server",
            bootstrap,
            "--input",
            "-",
            "--paced",
        ]
        self.log = log
        self._err = log.open("w")
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err
        )
        assert self.proc.stdin is not None
        self.stdin: IO[bytes] = self.proc.stdin
        self.stats = ProducerStats()
        self.acked = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in io.TextIOWrapper(self.proc.stdout):
            line = raw.strip()
            if m := re.match(r"progress (\d+) acked=(\d+) sent=\d+ behind_ms=(\d+)", line):
                self.stats.progress.append((int(m[1]), int(m[2]), int(m[3])))
            elif m := re.match(r"marked (\d+) sent_ms=(\d+) acked_ms=(\d+)", line):
                with self.acked:
                    self.stats.acks[int(m[1])] = Ack(int(m[2]), int(m[3]))
                    self.acked.notify_all()
            elif line.startswith("sent "):
                self.stats.summary = line

    def write(self, data: bytes) -> None:
        self.stdin.write(data)

    def flush(self) -> None:
        self.stdin.flush()

    def close(self, timeout_s: float = 300) -> None:
        """End of input: the producer flushes and exits."""
        with contextlib.suppress(BrokenPipeError):
            self.stdin.close()
        try:
            code = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._reader.join(timeout=5)
        self._err.close()
        if code != 0:
            raise SystemExit(
                f"BacklogProducer failed ({code}): {self.log.read_text(errors='replace')[-2000:]}"
            )

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise SystemExit(
                f"BacklogProducer exited with {self.proc.returncode}: "
                f"{self.log.read_text(errors='replace')[-2000:]}"
            )


# -- the live phase ---------------------------------------------------------------------------


def begin(bootstrap: str, groups: Sequence[Group], log: Path) -> tuple[PacedProducer, int]:
    """The groups' topics created and their prelude written (each group's generation):
    the paced producer, ready for the commits, and the prelude's records."""
    topics: dict[str, int] = {}
    for g in groups:
        for t, p in g.capture.owned:
            topics[t] = max(topics.get(t, 0), p + 1)
    stream.create_topics(bootstrap, *topics.items())
    producer = PacedProducer(bootstrap, log)
    pre = prelude(groups, _now_ms())
    producer.write(b"".join(pre))
    producer.flush()
    print(f"prelude: {len(pre):,} rebalance records of {len(groups):,} groups", flush=True)
    return producer, len(pre)


@dataclass
class Trial:
    group: str
    due_ms: int  # its record's timestamp
    acked_ms: int | None = None
    seen_ms: int | None = None  # the end of the first scrape that served the generation

    @property
    def latency_ms(self) -> float | None:
        if self.acked_ms is None or self.seen_ms is None:
            return None
        return float(self.seen_ms - self.acked_ms)


class Writer(threading.Thread):
    """Streams the live workload to the producer: round after round of every group's
    commits, each stamped when it is due, written up to ``LEAD_MS`` ahead; the trials'
    records among them at their own times."""

    def __init__(
        self,
        producer: PacedProducer,
        groups: Sequence[Group],
        start_ms: int,
        end_ms: int,
        trial_times_ms: Sequence[int],
    ) -> None:
        super().__init__(daemon=True)
        self.producer, self.groups = producer, groups
        self.start_ms, self.end_ms = start_ms, end_ms
        self.trials = [Trial(trial_record(n, t)[0], t) for n, t in enumerate(trial_times_ms)]
        self._trial_records = [trial_record(n, t)[1] for n, t in enumerate(trial_times_ms)]
        self.written = 0  # records
        self.trials_written = 0
        self.late_ms = 0  # the most the writer itself was behind a record's due time
        self.error: BaseException | None = None
        self._halt = threading.Event()

    def stop(self) -> None:
        self._halt.set()

    def run(self) -> None:
        try:
            self._run()
        except BaseException as e:  # reported by the main thread
            self.error = e

    def _run(self) -> None:
        per_round = len(self.groups[0].owned) if self.groups else 0
        next_trial = 0
        round_ = 0
        buffered: list[bytes] = []
        while not self._halt.is_set():
            round_start = self.start_ms + round_ * COMMIT_INTERVAL_MS
            if round_start >= self.end_ms:
                break
            for g in self.groups:
                due = round_start + g.phase_ms
                if due >= self.end_ms or self._halt.is_set():
                    break
                while next_trial < len(self.trials) and self.trials[next_trial].due_ms <= due:
                    buffered.append(self._trial_records[next_trial])
                    next_trial += 1
                    self.trials_written = next_trial
                wait_ms = due - LEAD_MS - _now_ms()
                if wait_ms > 0:
                    self._flush(buffered)
                    time.sleep(wait_ms / 1000)
                else:
                    self.late_ms = max(self.late_ms, -wait_ms - LEAD_MS)
                buffered.append(commits(g, round_, due))
                self.written += per_round
            round_ += 1
        self._flush(buffered)

    def _flush(self, buffered: list[bytes]) -> None:
        if buffered:
            self.producer.write(b"".join(buffered))
            buffered.clear()
        self.producer.flush()


class Scraper(threading.Thread):
    """Polls the exporter's ``kafka_consumergroup_generation`` while a trial is pending and
    notes, per trial group, the end of the first scrape that served it (an upper bound: the
    exporter served it somewhere within that scrape)."""

    def __init__(self, url: str, trials: Sequence[Trial], interval_s: float) -> None:
        super().__init__(daemon=True)
        self.url = f"{url}?name[]={GENERATION}"
        self.trials, self.interval_s = trials, interval_s
        self.scrape_s: list[float] = []
        self.errors = 0
        self._halt = threading.Event()

    def stop(self) -> None:
        self._halt.set()

    def run(self) -> None:
        while not self._halt.is_set():
            pending = [t for t in self.trials if t.seen_ms is None and t.due_ms <= _now_ms()]
            if not pending:
                time.sleep(0.01)
                continue
            t0 = time.perf_counter()
            try:
                with urllib.request.urlopen(self.url, timeout=30) as resp:
                    body = resp.read().decode()
            except OSError:
                self.errors += 1
                time.sleep(self.interval_s)
                continue
            ended_ms = _now_ms()
            self.scrape_s.append(time.perf_counter() - t0)
            for t in pending:
                if f'{GENERATION}{{cluster="local",group="{t.group}"}}' in body:
                    t.seen_ms = ended_ms
            time.sleep(self.interval_s)


@dataclass
class Batch:
    at: float  # perf_counter when the line arrived
    batch: int
    records: int
    total: int


def batches(job: stream.JobProcess) -> list[Batch]:
    out = []
    for at, line in list(job.lines):
        m = re.match(r"\[records\] batch (\d+): (\d+) records.*totals: records=(\d+)", line)
        if m:
            out.append(Batch(at, int(m[1]), int(m[2]), int(m[3])))
    return out


def job_total(job: stream.JobProcess) -> int:
    got = batches(job)
    return got[-1].total if got else 0


# -- main -------------------------------------------------------------------------------------


class LoadSampler(threading.Thread):
    """The machine's 1-minute load average, every second: its maximum while running."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.max = 0.0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(1.0):
            self.max = max(self.max, _loadavg())

    def stop(self) -> None:
        self._halt.set()


def _batch_seconds(url: str) -> tuple[float, float] | None:
    """The job's own ``rebalance_monitor_batch_duration_seconds``: (sum, count)."""
    name = "rebalance_monitor_batch_duration_seconds"
    with contextlib.suppress(OSError, ValueError):
        with urllib.request.urlopen(
            f"{url}?name[]={name}_sum&name[]={name}_count", timeout=30
        ) as r:
            body = r.read().decode()
        got = dict(line.split(" ", 1) for line in body.splitlines() if line.startswith(f"{name}_"))
        return float(got[f"{name}_sum"]), float(got[f"{name}_count"])
    return None


def _note_acks(trials: Sequence[Trial], stats: ProducerStats) -> None:
    for n, t in enumerate(trials):
        ack = stats.acks.get(n)
        if ack is not None:
            t.acked_ms = ack.acked_ms


def _wait_for(
    predicate: Callable[[], bool], timeout_s: float, job: stream.JobProcess, what: str
) -> None:
    deadline = time.perf_counter() + timeout_s
    while not predicate():
        if job.proc.poll() is not None:
            tail = "\n".join(line for _, line in job.lines[-30:])
            raise SystemExit(f"the job exited with {job.proc.returncode}:\n{tail}")
        if time.perf_counter() > deadline:
            raise SystemExit(f"{what} not within {timeout_s:.0f} s (log {job.log})")
        time.sleep(0.2)


@dataclass
class FloorBatch:
    at: float  # perf_counter when the line arrived
    batch: int
    records: int
    oldest_ms: int  # its oldest record's age when its rows reached the floor's driver


@dataclass
class FloorRun:
    """The Spark floor's live run: ``seconds`` of produce and its drain, what it read and
    its CPU over them (``jvm``, ``driver``), its micro-batches and memory peaks."""

    seconds: float
    records: int
    cpu: dict[str, float]
    kept_up: bool
    batches: list[FloorBatch]
    memory: stream.Memory

    @property
    def cpu_s(self) -> float:
        return sum(self.cpu.values())

    @property
    def cores(self) -> float:
        return self.cpu_s / self.seconds


def floor_batches(floor: stream.SparkProcess) -> list[FloorBatch]:
    out = []
    for at, line in list(floor.lines):
        if m := re.match(r"\[floor\] batch (\d+): (\d+) records, oldest (-?\d+) ms", line):
            out.append(FloorBatch(at, int(m[1]), int(m[2]), int(m[3])))
    return out


def run_floor(
    bootstrap: str,
    groups: Sequence[Group],
    seconds: int,
    *,
    warmup_s: int,
    drain_s: float,
    kept_up_s: float,
) -> FloorRun:
    """``bench/spark_floor.py --live`` (its own process, reading from the topic's end) fed the
    live workload for ``warmup_s`` (its JVM warms up, as the job's does on the prelude and
    before the first trial; not measured) and then ``seconds``, then given up to ``drain_s``
    to read it all (kept up: within ``kept_up_s``, as the job)."""
    floor = stream.SparkProcess(
        [
            "bench.spark_floor",
            bootstrap,
            "--topic",
            OFFSETS_TOPIC,
            "--checkpoint",
            str(STATE / "floor" / "checkpoint"),
            "--live",
        ],
        STATE / "floor.log",
    )
    producer = PacedProducer(bootstrap, STATE / "floor-producer.log")
    writer = None
    try:
        floor.first("started:", timeout_s=600)
        time.sleep(5)  # its first micro-batches: the query's offsets at the topic's end
        start_ms = (_now_ms() // 1000 + 2) * 1000
        measured_ms = start_ms + warmup_s * 1000
        writer = Writer(producer, groups, start_ms, measured_ms + seconds * 1000, [])
        writer.start()
        while _now_ms() < measured_ms:
            time.sleep(0.05)
        started = time.perf_counter()
        cpu_at_start = stream.cpu_seconds(floor.proc.pid)
        read_at_start = sum(b.records for b in floor_batches(floor))
        while writer.is_alive():
            producer.check_alive()
            if floor.proc.poll() is not None:
                raise SystemExit(f"the floor exited with {floor.proc.returncode} ({floor.log})")
            writer.join(timeout=1)
        if writer.error is not None:
            raise SystemExit(f"the writer failed: {writer.error!r}")
        producer.close()
        ended = time.perf_counter()
        deadline = ended + drain_s
        while sum(b.records for b in floor_batches(floor)) < writer.written:
            if time.perf_counter() >= deadline:
                break
            time.sleep(0.2)
        drained = time.perf_counter() - ended
        cpu_at_end = stream.cpu_seconds(floor.proc.pid)
        read = sum(b.records for b in floor_batches(floor))
        caught_up = read >= writer.written
    finally:
        if writer is not None:
            writer.stop()
        with contextlib.suppress(SystemExit):
            producer.close(timeout_s=30)
        floor.stop()
    return FloorRun(
        seconds=ended - started + drained,
        records=read - read_at_start,
        cpu={k: cpu_at_end[k] - cpu_at_start[k] for k in ("jvm", "driver")},
        kept_up=caught_up and drained <= kept_up_s,
        batches=[b for b in floor_batches(floor) if b.at >= started],
        memory=floor.memory,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=10_000, help="groups committing live")
    parser.add_argument(
        "--duration-s", type=int, default=120, help="wall time of the live commits (default 120)"
    )
    parser.add_argument(
        "--warmup-s", type=int, default=10, help="live seconds before the first trial"
    )
    parser.add_argument("--trial-every-s", type=float, default=5, help="one trial this often")
    parser.add_argument("--scrape-interval-ms", type=int, default=50)
    parser.add_argument(
        "--drain-s", type=float, default=120, help="after the produce: wait this long at most"
    )
    parser.add_argument(
        "--kept-up-s",
        type=float,
        default=10,
        help="the job kept up if it read everything within this long after the produce",
    )
    parser.add_argument(
        "--floor-s",
        type=int,
        default=120,
        help="wall time of the Spark floor's live reference run after the job's (0: none)",
    )
    steady.add_run_options(parser, "--job-arg=--conf --job-arg=spark.driver.memory=1g", STATE)
    args = parser.parse_args(argv)
    import random

    from tests.conftest import free_ports

    print("checking the v4 builder against the golden captures ...", flush=True)
    print(f"  {steady.check_golden_v4()} v4 commit values rebuilt byte for byte", flush=True)
    groups = plan_groups(args.groups)
    for g in groups[:5]:
        check_commits(g)
    per_s = sum(len(g.owned) for g in groups) * 1000 / COMMIT_INTERVAL_MS
    shutil.rmtree(STATE, ignore_errors=True)
    STATE.mkdir(parents=True)
    load_before = _loadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load_before:.1f}", flush=True)
    load = LoadSampler()
    membership = "live.membership"
    with steady._broker(STATE / "kafka") as (bootstrap, _broker_log):
        steady.ensure_offsets_topic(bootstrap)
        stream.create_topics(bootstrap, (membership, 1))
        producer, prelude_records = begin(bootstrap, groups, STATE / "producer.log")

        (port,) = free_ports(1)
        url = f"http://127.0.0.1:{port}/metrics"
        print(f"the job: rebalance-monitor run, trigger 1 s, exporter {url} ...", flush=True)
        job = stream.JobProcess(
            bootstrap, OFFSETS_TOPIC, membership, STATE / "job", port, *args.job_arg
        )
        writer = scraper = None
        try:
            job.first("started:", timeout_s=600)
            _wait_for(lambda: job_total(job) >= prelude_records, 600, job, "the prelude read")
            print(f"  prelude processed (batch {batches(job)[-1].batch})", flush=True)

            start_ms = (_now_ms() // 1000 + 2) * 1000
            end_ms = start_ms + args.duration_s * 1000
            every_ms = int(args.trial_every_s * 1000)
            trial_times = [
                t + random.randrange(1000)  # anywhere in the trigger interval
                for t in range(start_ms + args.warmup_s * 1000, end_ms - 1000, every_ms)
            ]
            writer = Writer(producer, groups, start_ms, end_ms, trial_times)
            scraper = Scraper(url, writer.trials, args.scrape_interval_ms / 1000)
            print(
                f"live: {len(groups):,} groups x {len(groups[0].owned)} partitions every "
                f"{COMMIT_INTERVAL_MS // 1000} s = {per_s:,.0f} records/s for "
                f"{args.duration_s} s; {len(trial_times)} trials, one every "
                f"{args.trial_every_s:g} s from {args.warmup_s} s",
                flush=True,
            )
            load.start()
            writer.start()
            scraper.start()
            while _now_ms() < start_ms:
                time.sleep(0.05)
            live_started = time.perf_counter()
            read_at_start = job_total(job)
            cpu_at_start = stream.cpu_seconds(job.proc.pid)
            next_print = live_started + 10
            while writer.is_alive():
                producer.check_alive()
                _note_acks(writer.trials, producer.stats)
                if job.proc.poll() is not None:
                    raise SystemExit(f"the job exited with {job.proc.returncode} (log {job.log})")
                if time.perf_counter() >= next_print:
                    next_print += 10
                    done = [t.latency_ms for t in writer.trials if t.latency_ms is not None]
                    acked = producer.stats.progress[-1][1] if producer.stats.progress else 0
                    print(
                        f"  {time.perf_counter() - live_started:4.0f} s: written "
                        f"{writer.written:,}, acked {acked:,}, job read {job_total(job):,}; "
                        f"trials {len(done)}"
                        + (f", last {done[-1]:.0f} ms" if done else "")
                        + f"; load {_loadavg():.1f}",
                        flush=True,
                    )
                writer.join(timeout=1)
            if writer.error is not None:
                raise SystemExit(f"the writer failed: {writer.error!r}")
            producer.close()
            produce_ended = time.perf_counter()
            load.stop()
            _note_acks(writer.trials, producer.stats)
            end_total = steady.end_offsets_total(bootstrap)
            read_at_end = job_total(job)
            print(
                f"produce ended: {producer.stats.summary}; topic {end_total:,} records, "
                f"the job had read {read_at_end:,}",
                flush=True,
            )
            drained_s = None
            deadline = produce_ended + args.drain_s
            while time.perf_counter() < deadline:
                if job_total(job) >= end_total and all(
                    t.seen_ms is not None for t in writer.trials
                ):
                    drained_s = time.perf_counter() - produce_ended
                    break
                time.sleep(0.2)
                end_total = steady.end_offsets_total(bootstrap)
            read_after = job_total(job)
            cpu_at_end = stream.cpu_seconds(job.proc.pid)
            cpu = {k: cpu_at_end[k] - cpu_at_start[k] for k in cpu_at_end}
            cpu_s = sum(cpu.values())
            batch_s = _batch_seconds(url)
        finally:
            if scraper is not None:
                scraper.stop()
            if writer is not None:
                writer.stop()
            with contextlib.suppress(SystemExit):
                producer.close(timeout_s=30)
            job.stop()
        floor = None
        if args.floor_s > 0:
            print(f"the Spark floor (bench/spark_floor.py --live) for {args.floor_s} s ...")
            floor = run_floor(
                bootstrap,
                groups,
                args.floor_s,
                warmup_s=args.warmup_s,
                drain_s=args.drain_s,
                kept_up_s=args.kept_up_s,
            )
    load_after = _loadavg()

    # -- figures
    assert writer is not None and scraper is not None
    lat = [t.latency_ms for t in writer.trials if t.latency_ms is not None]
    missed = [t.group for t in writer.trials if t.latency_ms is None]
    prog = [p for p in producer.stats.progress if p[0] >= start_ms]
    produced = writer.written + writer.trials_written
    produce_rate = (
        (prog[-1][1] - prog[0][1]) / ((prog[-1][0] - prog[0][0]) / 1000)
        if len(prog) >= 2 and prog[-1][0] > prog[0][0]
        else float("nan")
    )
    behind_ms = max((p[2] for p in prog), default=0)
    behind = [float(p[2]) for p in prog]  # the worst record of each second
    # the batches whose lines came after the live start (the drain's included)
    live = [b for b in batches(job) if b.at >= live_started]
    input_rate = (read_at_end - read_at_start) / (produce_ended - live_started)
    gaps = [b.at - a.at for a, b in itertools.pairwise(live)]
    sizes = [b.records for b in live]
    lag_records = end_total - read_at_end
    m = job.memory
    gib = 1024**3
    # kept up: at the end it was at most --kept-up-s behind (the input rate over a short run
    # is coarse: the totals move a batch at a time)
    kept_up = drained_s is not None and drained_s <= args.kept_up_s

    print()
    print(
        f"live steady workload: {len(groups):,} groups, {per_s:,.0f} records/s due, "
        f"{args.duration_s} s ({produced:,} records written), {os.cpu_count()} cores, load "
        f"{load_before:.1f} -> max {load.max:.1f} -> {load_after:.1f}"
    )
    print(
        f"  produce rate achieved       {produce_rate:>10,.0f} records/s (producer acks; behind "
        f"the records' timestamps, worst of each second: p50 {_p(behind, 0.5):.0f} ms, p95 "
        f"{_p(behind, 0.95):.0f} ms, max {behind_ms} ms; writer at most {writer.late_ms} ms late)"
    )
    print(
        f"  the job's input rate        {input_rate:>10,.0f} records/s: "
        + ("kept up" if kept_up else "did NOT keep up")
        + f" (read everything within {args.kept_up_s:g} s of the produce's end or not)"
    )
    print(
        f"  micro-batches (live, drain) {len(live)}: records per batch p50 "
        f"{_p(sizes, 0.5):,.0f} max {max(sizes, default=0):,}; interval between batches "
        f"p50 {_p(gaps, 0.5):.2f} s p95 {_p(gaps, 0.95):.2f} s max {max(gaps, default=0):.2f} s"
    )
    if batch_s is not None and batch_s[1]:
        print(
            f"  the job's batch handler     mean {batch_s[0] / batch_s[1]:.2f} s over "
            f"{batch_s[1]:.0f} batches (rebalance_monitor_batch_duration_seconds)"
        )
    drain = "never (within --drain-s)" if drained_s is None else f"{drained_s:.1f} s"
    print(
        f"  lag when the produce ended  {lag_records:,} records; read everything after {drain} "
        f"(read {read_after:,} of {end_total:,})"
    )
    print(
        f"  detection latency, {len(lat)} trials (ack -> exporter serves the generation): "
        f"p50 {_p(lat, 0.5):.0f} ms  p95 {_p(lat, 0.95):.0f} ms  max {max(lat, default=0):.0f} "
        f"ms  (target p95 <= 2000 ms)" + (f"; never seen: {missed}" if missed else "")
    )
    print(
        f"  exporter scrapes            {len(scraper.scrape_s)}: p50 "
        f"{_p(scraper.scrape_s, 0.5) * 1000:.0f} ms, max "
        f"{max(scraper.scrape_s, default=0) * 1000:.0f} ms ({scraper.errors} errors)"
    )
    read_live = read_after - read_at_start
    print(
        f"  job CPU (live and drain)    {cpu_s:.1f} core-s for {read_live:,} records: "
        f"{cpu_s * 1e6 / max(1, read_live):.1f} us per record, "
        f"{read_live / max(cpu_s, 1e-9):,.0f} records per core-second (JVM {cpu['jvm']:.1f}, "
        f"driver Python {cpu['driver']:.1f}, workers {cpu['workers']:.1f})"
    )
    print(
        f"  job memory peaks            JVM {m.jvm / gib:.2f} GiB, driver Python "
        f"{m.driver_python / gib:.2f} GiB, workers {m.workers / gib:.2f} GiB (RSS; summed "
        f"{(m.jvm + m.driver_python + m.workers) / gib:.2f} GiB); all at once, each page "
        f"once (PSS) {m.total / gib:.2f} GiB (target < 2 GiB)"
    )
    job_cores = cpu_s / (
        produce_ended - live_started + (args.drain_s if drained_s is None else drained_s)
    )
    if floor is not None:
        f_lat = [b.oldest_ms for b in floor.batches]
        f_gaps = [b.at - a.at for a, b in itertools.pairwise(floor.batches)]
        print(
            f"  Spark floor, same workload  {floor.cpu_s:.1f} core-s for {floor.records:,} "
            f"records in {floor.seconds:.0f} s: {floor.cores:.2f} cores, "
            f"{floor.cpu_s * 1e6 / max(1, floor.records):.1f} us per record (JVM "
            f"{floor.cpu['jvm']:.1f}, driver Python {floor.cpu['driver']:.1f}); "
            + ("kept up" if floor.kept_up else "did NOT keep up")
        )
        print(
            f"                              {len(floor.batches)} micro-batches, interval p50 "
            f"{_p(f_gaps, 0.5):.2f} s p95 {_p(f_gaps, 0.95):.2f} s; a batch's oldest record "
            f"at the driver after p50 {_p(f_lat, 0.5):.0f} ms p95 {_p(f_lat, 0.95):.0f} ms; "
            f"memory (PSS) {floor.memory.total / gib:.2f} GiB"
        )
        print(
            f"  the job against the floor   {job_cores / floor.cores:.2f}x the cores "
            f"({job_cores:.2f} against {floor.cores:.2f}), "
            f"{(cpu_s / max(1, read_live)) / (floor.cpu_s / max(1, floor.records)):.2f}x the "
            f"CPU per record, {m.total / max(1, floor.memory.total):.2f}x the memory"
        )
    if args.json:
        doc = {
            "groups": len(groups),
            "duration_s": args.duration_s,
            "due_rate": per_s,
            "written": produced,
            "produce_rate": produce_rate,
            "producer_behind_ms": {
                "p50": _p(behind, 0.5),
                "p95": _p(behind, 0.95),
                "max": behind_ms,
            },
            "writer_late_ms": writer.late_ms,
            "job_input_rate": input_rate,
            "kept_up": kept_up,
            "lag_records_at_end": lag_records,
            "drained_s": drained_s,
            "batches": [asdict(b) for b in live],
            "batch_handler_s": batch_s,
            "trials": [asdict(t) | {"latency_ms": t.latency_ms} for t in writer.trials],
            "latency_ms": {
                "p50": _p(lat, 0.5),
                "p95": _p(lat, 0.95),
                "max": max(lat, default=None),
            },
            "scrape_s": {
                "p50": _p(scraper.scrape_s, 0.5),
                "max": max(scraper.scrape_s, default=None),
            },
            "memory": {
                "jvm": m.jvm,
                "driver_python": m.driver_python,
                "workers": m.workers,
                "total": m.total,
            },
            "cpu_s": cpu,
            "records_read": read_live,
            "cores": os.cpu_count(),
            "load": {"before": load_before, "max": load.max, "after": load_after},
            "job_args": args.job_arg,
            "job_cores": job_cores,
            "floor": None
            if floor is None
            else {
                "seconds": floor.seconds,
                "records": floor.records,
                "cpu_s": floor.cpu,
                "cores": floor.cores,
                "kept_up": floor.kept_up,
                "batches": [asdict(b) for b in floor.batches],
                "memory_total": floor.memory.total,
            },
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    if not args.keep:
        shutil.rmtree(STATE, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
