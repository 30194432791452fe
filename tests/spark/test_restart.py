"""Chaos: kill the job with SIGKILL again and again at random moments, restart it each time from
its checkpoint, and its tables still equal, row for row, those of an uninterrupted run over the
same backlog.

The killed runs are the real CLI (``rebalance-monitor run --once``), each in its own process
group, with a small ``--max-offsets-per-trigger`` so the backlog takes many micro-batches. The
reference run is the same job, uninterrupted, in the test session's Spark. Both read a frozen
copy of the backlog's ``__consumer_offsets`` records (``--offsets-topic``: same partitions,
keys, values and timestamps) and the membership topic: the live topic keeps growing between
the runs (the Spark sources' own consumer groups write to it), which would move the
micro-batch boundaries; with identical input both runs plan identical batches. (Reading the
real ``__consumer_offsets`` is the end-to-end test's business.)

Where the kills land (:class:`Kill`; the plan is drawn from a seeded RNG and printed, a batch
being one the reference run wrote, a table one that batch appends to):

* ``before-append`` / ``after-append`` / ``after-batch``: the sink held at that point
  (:mod:`streaming.sinks.pause`: the batch's other tables' appends go on), killed once it
  says it is there: some tables of the batch committed, others not; or all of them, with
  Spark's commit log not yet written;
* ``mid-write``: killed the moment a new data file appears in the table's folder, inside the
  Delta append (files written, the commit not yet in ``_delta_log``);
* ``timer``: killed a random fraction of a micro-batch after the batch before it ended
  (planning, the Kafka reads, the stateful step, a state store or checkpoint write, ...);
* ``startup``: killed a random fraction of the start-up time after launch (session, tables,
  checkpoint recovery); also every kill planned once the backlog is done.

Then one last run finishes the backlog, and every table must equal the reference's. Each run
also resumes where the one before stopped: at the last batch it printed (re-run) or the next,
never from scratch and never past a batch.

A second test kills the job inside its table maintenance (:mod:`streaming.sinks.maintenance`,
a cycle every few seconds): a moment into a cycle (an OPTIMIZE's files half written, a
VACUUM, a commit), and held after a compaction's commit; its tables too equal the reference's.

``make test`` runs :data:`KILLS` kills with a fixed seed; ``make chaos`` (``CHAOS_KILLS``,
``CHAOS_SEED``, ``CHAOS_MAX_OFFSETS``) the long version, a fresh seed by default.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import secrets
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from streaming import tables as t
from streaming.config import load_config
from streaming.job_log import message_of
from streaming.sinks.pause import MARKER_ENV, PAUSE_ENV
from streaming.tables import TABLE_NAMES
from tests.delta_rows import rows_diff, table_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.spark.backlog import Backlog

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]

#: The in-suite version (``make test``); ``make chaos`` sets the environment variables.
KILLS = int(os.environ.get("CHAOS_KILLS", "3"))
SEED = os.environ.get("CHAOS_SEED", "5")
MAX_OFFSETS = int(os.environ.get("CHAOS_MAX_OFFSETS", "100"))
#: One run's limit, from launch to its kill or end.
RUN_TIMEOUT_S = 900.0
POLL_S = 0.02

Kind = Literal["before-append", "after-append", "after-batch", "mid-write", "timer", "startup"]
KINDS: tuple[tuple[Kind, float], ...] = (
    ("before-append", 0.2),
    ("after-append", 0.2),
    ("after-batch", 0.1),
    ("mid-write", 0.2),
    ("timer", 0.2),
    ("startup", 0.1),
)


@dataclass(frozen=True)
class Kill:
    """One planned kill: ``kind`` (module docstring) in micro-batch ``batch`` or the first one
    the run reaches after it; ``pick`` chooses the table among the batch's (``None``: any
    table), ``fraction`` the moment (``timer``, ``startup``)."""

    kind: Kind
    batch: int
    pick: float | None
    fraction: float


@dataclass
class Run:
    """One launch of the job: its output lines (seconds since launch, text) read by a thread."""

    proc: subprocess.Popen[str]
    started: float = field(default_factory=time.monotonic)
    lines: list[tuple[float, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.monotonic() - self.started, message_of(line).rstrip()))

    def batches(self) -> list[int]:
        """The ids of the micro-batches this run finished (``[events] batch N:`` lines)."""
        return [
            int(text.split()[2].rstrip(":"))
            for _, text in list(self.lines)
            if text.startswith("[events] batch ")
        ]

    def said(self, prefix: str) -> bool:
        return any(text.startswith(prefix) for _, text in list(self.lines))

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)
        self.reader.join(timeout=30)

    def tail(self, n: int = 40) -> str:
        return "\n".join(text for _, text in self.lines[-n:])


@dataclass
class Outcome:
    """What one planned kill did: where it landed, the batches the run finished, its time."""

    kill: Kill
    landed: str
    batches: list[int]
    seconds: float


def _freeze_offsets(backlog: Backlog) -> str:
    """Copy the backlog groups' ``__consumer_offsets`` records to a topic of their own."""
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic

    from streaming.codec.decode import decode_record

    copy = f"{backlog.prefix}.offsets-copy"
    source = [TopicPartition("__consumer_offsets", p) for p in range(50)]
    consumer = KafkaConsumer(bootstrap_servers=backlog.bootstrap_servers, enable_auto_commit=False)
    consumer.assign(source)
    consumer.seek_to_beginning(*source)
    ends = consumer.end_offsets(source)
    admin = KafkaAdminClient(bootstrap_servers=backlog.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(copy, num_partitions=50, replication_factor=1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=backlog.bootstrap_servers, acks="all")
    copied = 0
    try:
        while any(consumer.position(tp) < ends[tp] for tp in source):
            for tp, records in consumer.poll(timeout_ms=1000).items():
                for r in records:
                    if r.offset >= ends[tp]:
                        continue
                    record = decode_record(r.key, r.value)
                    group = getattr(record, "group_id", None) or getattr(
                        getattr(record, "key", None), "group_id", ""
                    )
                    if str(group).startswith(backlog.prefix):
                        producer.send(
                            copy, key=r.key, value=r.value, partition=tp.partition,
                            timestamp_ms=r.timestamp,
                        )  # fmt: skip
                        copied += 1
        producer.flush()
    finally:
        producer.close()
        consumer.close()
    assert copied > 100, f"only {copied} records of the backlog's groups"
    return copy


def _settings(backlog: Backlog, offsets_topic: str, work: Path) -> dict[str, Any]:
    return {
        "bootstrap_servers": backlog.bootstrap_servers,
        "offsets_topic": offsets_topic,
        "membership_topic": backlog.membership_topic,
        "checkpoint_dir": str(work / "checkpoint"),
        "delta_path": str(work / "delta"),
        "metrics_port": 0,
        "max_offsets_per_trigger": MAX_OFFSETS,
    }


def _command(settings: dict[str, Any], log_file: Path, *, once: bool = True) -> list[str]:
    """``run --once`` (or running on, until killed) on the frozen backlog."""
    return [
        str(Path(sys.executable).with_name("rebalance-monitor")),
        "run",
        *(["--once"] if once else []),
        "--master", "local[2]",
        "--conf", "spark.driver.memory=1g",
        # a loaded machine: Python workers may take minutes to connect back to the JVM
        "--conf", "spark.python.authenticate.socketTimeout=600s",
        "--bootstrap-server", settings["bootstrap_servers"],
        "--membership-topic", settings["membership_topic"],
        "--offsets-topic", settings["offsets_topic"],
        "--checkpoint-dir", settings["checkpoint_dir"],
        "--delta-path", settings["delta_path"],
        "--metrics-port", "0",
        "--max-offsets-per-trigger", str(MAX_OFFSETS),
        "--log-file", str(log_file),
    ]  # fmt: skip


def _tables_by_batch(delta: Path) -> dict[int, list[str]]:
    """Batch id -> the tables it appended to, from each table's ``_delta_log`` (``txn``)."""
    out: dict[int, set[str]] = {}
    for table in TABLE_NAMES:
        for commit in sorted((delta / table / "_delta_log").glob("*.json")):
            for line in commit.read_text().splitlines():
                txn = json.loads(line).get("txn")
                if txn is not None:
                    out.setdefault(int(txn["version"]), set()).add(table)
    return {batch: sorted(tables) for batch, tables in sorted(out.items())}


def _last_batch(checkpoint: Path) -> int:
    """The id of the last micro-batch a query's checkpoint records as done."""
    return max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())


def _seed() -> int:
    return secrets.randbits(32) if SEED == "random" else int(SEED)


def _plan(rng: random.Random, kills: int, batches: int) -> list[Kill]:
    """``kills`` kills on batches drawn from all but the last, in order (several on one batch
    kill its re-runs)."""
    kinds, weights = zip(*KINDS, strict=True)
    targets = sorted(rng.randrange(max(1, batches - 1)) for _ in range(kills))
    plan = []
    for batch in targets:
        kind = rng.choices(kinds, weights)[0]
        pick, any_table, fraction = rng.random(), rng.random() < 0.25, rng.uniform(0.05, 0.95)
        if kind in ("after-batch", "timer", "startup") or (kind != "mid-write" and any_table):
            plan.append(Kill(kind, batch, None, fraction))
        else:
            plan.append(Kill(kind, batch, pick, fraction))
    return plan


def _data_files(table: Path) -> set[Path]:
    return {p for p in table.rglob("*.parquet") if "_delta_log" not in p.parts}


class Chaos:
    """Runs the planned kills on one checkpoint (one :class:`Run` each) and the last run."""

    def __init__(
        self,
        settings: dict[str, Any],
        work: Path,
        tables_by_batch: dict[int, list[str]],
        last_batch: int,
    ) -> None:
        self.settings = settings
        self.work = work
        self.tables_by_batch = tables_by_batch
        self.last_batch = last_batch
        self.highest = -1  # the highest batch id any run printed
        self.runs: list[Run] = []
        self.intervals: list[float] = []  # between a run's consecutive batches
        self.startups: list[float] = []  # launch to ``started:``

    def launch(self, env_extra: dict[str, str] | None = None, *, once: bool = True) -> Run:
        env = {k: v for k, v in os.environ.items() if k not in (PAUSE_ENV, MARKER_ENV)}
        env |= {"PYSPARK_PYTHON": sys.executable, "PYTHONUNBUFFERED": "1", **(env_extra or {})}
        proc = subprocess.Popen(
            _command(self.settings, self.work / "run.log", once=once),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            text=True,
        )
        run = Run(proc)
        self.runs.append(run)
        return run

    def _table(self, kill: Kill, batch: int) -> str | None:
        """The table ``kill.pick`` names among those of ``batch`` (or of the first batch
        after it that appends to any)."""
        later = [b for b in self.tables_by_batch if b >= batch]
        if kill.pick is None or not later:
            return None
        tables = self.tables_by_batch[min(later)]
        return tables[int(kill.pick * len(tables))]

    def execute(self, kill: Kill) -> Outcome:
        """Launch, kill where ``kill`` says, return where it landed."""
        # the first batch this run can reach: the next after the highest printed
        batch = max(kill.batch, self.highest + 1)
        kind: Kind = kill.kind if batch <= self.last_batch else "startup"
        table = self._table(kill, batch)
        marker = self.work / f"held-{len(self.runs)}.json"
        env = None
        if kind in ("before-append", "after-append", "after-batch"):
            spec = kind if kind == "after-batch" or table is None else f"{kind}:{table}"
            env = {PAUSE_ENV: f"{spec}@{batch}", MARKER_ENV: str(marker)}
        run = self.launch(env)
        landed = self._until_killed(run, kind, batch, table, kill.fraction, marker)
        self._account(run)
        return Outcome(kill, landed, run.batches(), time.monotonic() - run.started)

    def _until_killed(
        self, run: Run, kind: Kind, batch: int, table: str | None, fraction: float, marker: Path
    ) -> str:
        deadline = run.started + RUN_TIMEOUT_S
        startup = statistics.median(self.startups) if self.startups else 20.0
        interval = statistics.median(self.intervals) if self.intervals else 5.0
        gate_at: float | None = None  # when the batch before ``batch`` was done
        files: set[Path] | None = None
        table_dir = Path(self.settings["delta_path"]) / (table or "")
        while time.monotonic() < deadline:
            now = time.monotonic()
            if run.proc.poll() is not None:
                run.reader.join(timeout=30)
                assert run.proc.returncode == 0, f"run {len(self.runs)} failed:\n{run.tail()}"
                return "none: the run finished first"
            if kind == "startup":
                if now - run.started >= fraction * startup:
                    run.kill()
                    return f"{now - run.started:.1f} s after launch" + (
                        " (started)" if run.said("started:") else ""
                    )
            elif kind in ("before-append", "after-append", "after-batch"):
                if marker.exists():
                    held = json.loads(marker.read_text())
                    run.kill()
                    where = f"{held['point']} {held['table'] or ''}".strip()
                    return f"held at {where} in batch {held['batch_id']}"
            elif gate_at is None:
                before = batch - 1
                if run.said("started:") and (before <= self.highest or before in run.batches()):
                    gate_at = now
                    files = _data_files(table_dir) if kind == "mid-write" else None
            elif kind == "timer":
                if now - gate_at >= fraction * interval:
                    done = run.batches()
                    run.kill()
                    return f"{now - gate_at:.1f} s into batch {max(done, default=self.highest) + 1}"
            elif kind == "mid-write":
                assert files is not None
                new = _data_files(table_dir) - files
                if new:
                    run.kill()
                    logged = _logged_files(table_dir)
                    orphans = [p for p in new if p.relative_to(table_dir).as_posix() not in logged]
                    return (
                        f"new data file in {table} during batch "
                        f"{max(run.batches(), default=self.highest) + 1} "
                        f"({len(orphans)} of {len(new)} not committed)"
                    )
            time.sleep(POLL_S)
        run.kill()
        raise AssertionError(f"run {len(self.runs)} reached no {kind} in time:\n{run.tail()}")

    def _account(self, run: Run) -> None:
        """Check that ``run`` resumed where the last one stopped; keep its timings."""
        done = run.batches()
        if done:
            assert self.highest <= done[0] <= self.highest + 1, (
                f"run {len(self.runs)} began at batch {done[0]} after batch {self.highest} "
                f"was printed:\n{run.tail()}"
            )
            self.highest = max(self.highest, *done)
        times = [t for t, text in run.lines if text.startswith("[events] batch ")]
        self.intervals += [b - a for a, b in itertools.pairwise(times)]
        self.startups += [t for t, text in run.lines if text.startswith("started:")][:1]


def _logged_files(table: Path) -> set[str]:
    """The data files ``table``'s ``_delta_log`` adds (its committed files)."""
    paths: set[str] = set()
    for commit in (table / "_delta_log").glob("*.json"):
        for line in commit.read_text().splitlines():
            add = json.loads(line).get("add")
            if add is not None:
                paths.add(add["path"])
    return paths


@dataclass(frozen=True)
class Reference:
    """The frozen backlog's topic and the uninterrupted run over it (maintenance off)."""

    frozen: str
    folder: Path
    tables_by_batch: dict[int, list[str]]
    last_batch: int


@pytest.fixture(scope="module")
def reference(
    spark: SparkSession, backlog: Backlog, tmp_path_factory: pytest.TempPathFactory
) -> Reference:
    from streaming.job import run

    frozen = _freeze_offsets(backlog)
    folder = tmp_path_factory.mktemp("chaos") / "reference"
    settings = {**_settings(backlog, frozen, folder), "maintenance_interval_s": 0}
    run(load_config(environ={}, overrides=settings), once=True, spark=spark, progress=print)
    return Reference(
        frozen,
        folder,
        _tables_by_batch(folder / "delta"),
        _last_batch(folder / "checkpoint" / "events"),
    )


def test_killed_again_and_again_the_job_equals_an_uninterrupted_run(
    spark: SparkSession, backlog: Backlog, reference: Reference, tmp_path: Path
) -> None:
    began = time.monotonic()
    seed = _seed()
    print(f"chaos: seed={seed} kills={KILLS} max_offsets={MAX_OFFSETS}", flush=True)
    frozen, tables_by_batch, last_batch = (
        reference.frozen,
        reference.tables_by_batch,
        reference.last_batch,
    )
    plan = _plan(random.Random(seed), KILLS, last_batch + 1)
    print(f"chaos: {last_batch + 1} batches; plan: {plan}", flush=True)

    # the same backlog, killed again and again on one checkpoint ...
    work = tmp_path / "interrupted"
    work.mkdir()
    chaos = Chaos(_settings(backlog, frozen, work), work, tables_by_batch, last_batch)
    outcomes = []
    for n, kill in enumerate(plan, 1):
        outcome = chaos.execute(kill)
        outcomes.append(outcome)
        print(
            f"chaos: kill {n}/{len(plan)} {kill.kind}@{kill.batch}: {outcome.landed}; "
            f"batches {outcome.batches} in {outcome.seconds:.1f} s",
            flush=True,
        )
    # ... and a last run that finishes the backlog
    last = chaos.launch()
    assert last.proc.wait(timeout=RUN_TIMEOUT_S) == 0, last.tail()
    last.reader.join(timeout=30)
    chaos._account(last)
    made = sum(not o.landed.startswith("none") for o in outcomes)
    summary = (
        f"seed={seed}: {made} kills of {len(plan)} planned, {len(chaos.runs)} runs, "
        f"{time.monotonic() - began:.0f} s"
    )
    print(f"chaos: {summary}", flush=True)
    assert chaos.highest == last_batch, summary
    # a timer may outlast the backlog's last batches; every other kill must have landed
    missed = [o for o in outcomes if o.landed.startswith("none") and o.kill.kind != "timer"]
    assert not missed, summary + "\n" + "\n".join(f"{o.kill}: {o.landed}" for o in missed)

    _assert_equal(spark, backlog, reference, work, summary)


def _assert_equal(
    spark: SparkSession, backlog: Backlog, reference: Reference, work: Path, summary: str
) -> None:
    """Every table of the run in ``work`` equals the reference's, row for row."""
    expected = table_rows(spark, reference.folder / "delta")
    actual = table_rows(spark, work / "delta")
    groups = {json.loads(r)["group_id"] for r in expected["rebalance_events"]}
    assert set(backlog.groups) <= groups, "the reference run missed groups of the backlog"
    assert expected["bad_records"], "the garbage record was not quarantined"
    differ = {t: rows_diff(expected[t], actual[t]) for t in TABLE_NAMES if actual[t] != expected[t]}
    assert not differ, summary + "\n" + "\n".join(f"{t}: {d}" for t, d in differ.items())


#: The maintenance kills' runs: a cycle every few seconds (the first as soon).
MAINTENANCE_ENV = {"REBALANCE_MONITOR_MAINTENANCE_INTERVAL_S": "3"}


def _kill_in_cycle(chaos: Chaos, cycle: int, fraction: float, cycle_s: float) -> str:
    """Launch with maintenance every few seconds, running on after the backlog (no
    ``--once``: the cycles go on); once cycle ``cycle`` has started, kill the job
    ``fraction`` of ``cycle_s`` later (inside an OPTIMIZE, a VACUUM, a commit...)."""
    run = chaos.launch(MAINTENANCE_ENV, once=False)
    deadline = run.started + RUN_TIMEOUT_S
    started: float | None = None
    while time.monotonic() < deadline:
        if run.proc.poll() is not None:
            run.reader.join(timeout=30)
            chaos._account(run)
            return "none: the run finished first"
        if started is None and run.said(f"[maintenance] cycle {cycle}:"):
            started = time.monotonic()
        if started is not None and time.monotonic() - started >= fraction * cycle_s:
            lines = [text for _, text in run.lines if text.startswith("[maintenance]")]
            run.kill()
            chaos._account(run)
            return f"{fraction * cycle_s:.1f} s into cycle {cycle}, after: {lines[-1]!r}"
        time.sleep(POLL_S)
    run.kill()
    raise AssertionError(f"cycle {cycle} did not start in time:\n{run.tail()}")


def _kill_after_compaction(chaos: Chaos, table: str, cycle: int, marker: Path) -> str:
    """Launch with maintenance every few seconds (running on after the backlog), held after
    cycle ``cycle`` committed ``table``'s compaction (:mod:`streaming.sinks.pause`); kill it
    there."""
    env = {**MAINTENANCE_ENV, PAUSE_ENV: f"maintenance:{table}@{cycle}", MARKER_ENV: str(marker)}
    run = chaos.launch(env, once=False)
    deadline = run.started + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        if run.proc.poll() is not None:
            run.reader.join(timeout=30)
            chaos._account(run)
            return "none: the run finished first"
        if marker.exists():
            held = json.loads(marker.read_text())
            run.kill()
            chaos._account(run)
            return f"held after the compaction of {held['table']} in cycle {held['batch_id']}"
        time.sleep(POLL_S)
    run.kill()
    raise AssertionError(f"no maintenance hold in time:\n{run.tail()}")


def test_killed_during_maintenance_the_job_equals_an_uninterrupted_run(
    spark: SparkSession, backlog: Backlog, reference: Reference, tmp_path: Path
) -> None:
    """The job maintains its tables every few seconds while it works through the backlog; it
    is killed inside a cycle (a moment into it, and held after a compaction's commit), then
    finishes: its tables equal the uninterrupted run's, and the compactions happened."""
    work = tmp_path / "maintained"
    work.mkdir()
    chaos = Chaos(
        _settings(backlog, reference.frozen, work),
        work,
        reference.tables_by_batch,
        reference.last_batch,
    )
    # the first run appends the backlog's batches while its first cycle reaches offset_commits
    landed = [
        _kill_after_compaction(chaos, t.OFFSET_COMMITS, 0, work / "held.json"),
        _kill_in_cycle(chaos, 0, 1.5, 8.0),
        _kill_in_cycle(chaos, 0, 0.3, 8.0),
    ]
    print(f"chaos: maintenance kills: {landed}", flush=True)
    assert not [w for w in landed if w.startswith("none")], landed
    # the last run on the defaults (no cycle before the backlog is done): it finishes on
    # what the killed cycles left
    last = chaos.launch()
    assert last.proc.wait(timeout=RUN_TIMEOUT_S) == 0, last.tail()
    last.reader.join(timeout=30)
    chaos._account(last)
    assert chaos.highest == reference.last_batch
    optimized = [
        table
        for table in TABLE_NAMES
        if spark.sql(f"DESCRIBE HISTORY delta.`{work / 'delta' / table}`")
        .where("operation = 'OPTIMIZE'")
        .count()
    ]
    assert optimized, f"no compaction committed: {landed}"
    _assert_equal(spark, backlog, reference, work, f"maintenance kills: {landed}")
