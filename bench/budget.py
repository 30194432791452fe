"""What the tables keep a day on the job's defaults: rows and bytes per table, against 2 GB.

The workload of the budget (issue 29): ``--partitions`` (20) partitions per group, every
partition committed every 5 s, the collector's end offsets every 5 s, two rebalances per
group per day, producers moving each partition by ~1 record per 5 s (``bench/live.py``'s
8,000 records/s at 2,000 groups); a tenth of the groups fall behind now and then (their
consumer pauses for ``--stall`` minutes every hour: lag statuses change).

How it is measured:

1. **Rows.** ``--groups`` modelled groups run through the tracker
   (:func:`streaming.tracking.reducer.apply`, the job's :class:`TrackerConfig` on its
   defaults) for ``--hours`` of record time after ``--warmup-minutes``, one call per group
   per 5 s with the observations the job's stateful step hands it (a ``CommitRun`` per
   partition, an ``end_offsets`` event, a ``GroupMetadata`` record per rebalance). Every
   group rebalances once in the measured span, at its own time. The rows of each table are
   counted: those a rebalance causes (the audit tables, ``offset_commits`` with reason
   ``rebalance``) scaled to two rebalances per group per day, the others to 24 hours.
2. **Bytes.** The rows are written through the job's own path from the stateful step on
   (:func:`streaming.spark.step_rows.events_to_rows`, the step's schema,
   :func:`streaming.sinks.micro_batch.table_frames`, :class:`streaming.sinks.delta.DeltaSink`:
   real Spark, real Delta) in micro-batches of the rows a batch holds at each scale
   (``--batch-seconds`` of a day's rows, one file per table per batch; at most
   ``--max-batches``, so the rare rebalance tables get bigger files than live):
   **as written**. Then each table is compacted once, ``OPTIMIZE ... ZORDER BY
   (group_id)`` (what the job's maintenance does), and measured again: **compacted** (the
   same files whatever the batches were). Bytes are the table's live files (Delta's
   ``sizeInBytes``), the ``_delta_log`` not counted.
3. Rows per day x bytes per row, at 1,000 and 10,000 groups; the budget is the compacted
   figure at 10,000 groups.

Run it::

    .venv/bin/python -m bench.budget --groups 40 --hours 1
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streaming import tables as t
from streaming.codec.model import (
    Assignment,
    GroupMetadata,
    MemberMetadata,
    Subscription,
    TopicPartitions,
)
from streaming.tracking.config import TrackerConfig
from streaming.tracking.events import (
    GroupStatus,
    OffsetCommitRow,
    PartitionLagRow,
    TrackerEvent,
)
from streaming.tracking.model import CommitRun, EndOffsetsSnapshot, Observation
from streaming.tracking.reducer import apply
from streaming.tracking.state import GroupState

STEP_MS = 5_000
DAY_MS = 86_400_000
HOUR_MS = 3_600_000
REBALANCES_PER_DAY = 2
BUDGET_BYTES = 2e9
SCALES = (1_000, 10_000)
CLUSTER = "local"
#: A fixed start (UTC midnight): the sampling windows are aligned to the epoch.
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
#: What a rebalance causes; the other rows come with time.
REBALANCE_TABLES = (t.REBALANCE_EVENTS, t.MEMBER_ASSIGNMENTS, t.GROUP_METRICS)


# -- the modelled groups ----------------------------------------------------------------------


@dataclass
class Group:
    """One modelled group: its topic's partitions, their end and committed offsets."""

    group_id: str
    topic: str
    partitions: int
    source_partition: int
    rebalance_at_ms: int
    lagging: bool
    rng: random.Random
    end: list[int] = field(default_factory=list)
    committed: list[int] = field(default_factory=list)
    generation: int = 0
    log_offset: int = 0
    membership_offset: int = 0
    state: GroupState | None = None

    def __post_init__(self) -> None:
        self.end = [self.rng.randrange(1_000, 100_000) for _ in range(self.partitions)]
        self.committed = list(self.end)
        self.state = GroupState.new(CLUSTER, self.group_id)


def plan(groups: int, partitions: int, span_ms: int, warmup_ms: int, seed: int) -> list[Group]:
    rng = random.Random(seed)
    out = []
    for g in range(groups):
        out.append(
            Group(
                group_id=f"budget-group-{g:05d}",
                topic=f"budget-topic-{g:05d}",
                partitions=partitions,
                source_partition=g % 50,
                rebalance_at_ms=START_MS + warmup_ms + (g * span_ms) // groups + 2_500,
                lagging=g % 10 == 0,
                rng=random.Random(rng.random()),
            )
        )
    return out


def _members(group: Group, generation: int) -> tuple[MemberMetadata, ...]:
    """Two members, half the partitions each; a new member id for the second each
    generation (it restarted)."""
    halves = [list(range(group.partitions))[i::2] for i in range(2)]
    members = []
    for i, owned in enumerate(halves):
        member_id = f"consumer-{i}-{0 if i == 0 else generation:08d}"
        members.append(
            MemberMetadata(
                member_id=member_id,
                group_instance_id=None,
                client_id=f"consumer-{i}",
                client_host="/10.0.0.1",
                rebalance_timeout_ms=300_000,
                session_timeout_ms=45_000,
                subscription=Subscription(3, (group.topic,), None, (), generation - 1, None, None),
                assignment=Assignment(3, (TopicPartitions(group.topic, tuple(owned)),), None),
                subscription_bytes=None,
                assignment_bytes=None,
            )
        )
    return tuple(members)


def _rebalance(group: Group, ts_ms: int) -> Observation:
    group.generation += 1
    record = GroupMetadata(
        group_id=group.group_id,
        value_version=3,
        protocol_type="consumer",
        generation=group.generation,
        protocol="range",
        leader="consumer-0-00000000",
        current_state_ts_ms=ts_ms - 200,
        members=_members(group, group.generation),
    )
    return _log(group, ts_ms, record)


def _log(group: Group, ts_ms: int, payload: Any) -> Observation:
    group.log_offset += 1
    return Observation("offsets", group.source_partition, group.log_offset, ts_ms, payload)


def step(group: Group, ts_ms: int) -> list[Observation]:
    """One 5 s of the group: producers move each partition, the consumer commits (unless a
    lagging group's consumer is paused), the collector reports the end offsets."""
    obs: list[Observation] = []
    due = group.rebalance_at_ms <= ts_ms < group.rebalance_at_ms + STEP_MS
    if group.generation == 0 or due:  # the first generation, then the span's rebalance
        obs.append(_rebalance(group, ts_ms))
    rng = group.rng
    minute = (ts_ms // 60_000) % 60
    paused = group.lagging and minute < STALL_MINUTES
    for p in range(group.partitions):
        if not paused:
            # caught up to what was written before the last poll, a few records behind
            group.committed[p] = max(group.committed[p], group.end[p] - rng.randrange(0, 3))
            run = CommitRun(
                group.group_id,
                group.topic,
                p,
                group.committed[p],
                0,
                ts_ms + 10,
                1,
                ((ts_ms + 10, group.committed[p]),),
                metadata="",
            )
            obs.append(_log(group, ts_ms + 10, run))
        group.end[p] += rng.choice((0, 1, 1, 2))
    group.membership_offset += 1
    snapshot = EndOffsetsSnapshot(
        cluster=CLUSTER,
        kafka_cluster_id="cluster-id",
        snapshot_id=f"eo-{ts_ms}",
        snapshot_ts_ms=ts_ms + 20,
        errors=(),
        group_ids=(group.group_id,),
        end_offsets_ts_ms=ts_ms + 20,
        full=True,
        offsets=tuple((group.topic, p, e) for p, e in enumerate(group.end)),
    )
    obs.append(Observation("membership", 0, group.membership_offset, ts_ms + 25, snapshot))
    return obs


STALL_MINUTES = 10


@dataclass
class Rows:
    """The measured span's table rows (tracker rows as the sinks take them)."""

    by_table: dict[str, list[TrackerEvent]] = field(default_factory=dict)
    from_rebalances: Counter[str] = field(default_factory=Counter)
    rebalances: int = 0
    exporter_lag_rows: int = 0


def run_model(groups: list[Group], config: TrackerConfig, warmup_ms: int, span_ms: int) -> Rows:
    rows = Rows()
    end_ms = START_MS + warmup_ms + span_ms
    for ts in range(START_MS, end_ms, STEP_MS):
        measured = ts >= START_MS + warmup_ms
        for group in groups:
            observations = step(group, ts)
            assert group.state is not None
            group.state, events = apply(group.state, observations, ts + 25, config=config)
            if not measured:
                continue
            for e in events:
                if isinstance(e, GroupStatus):
                    continue
                if isinstance(e, PartitionLagRow):
                    rows.exporter_lag_rows += 1
                    if not e.stored:
                        continue
                table = t.KIND_TO_TABLE.get(e.kind)
                if table is None:
                    continue
                rows.by_table.setdefault(table, []).append(e)
                if table in REBALANCE_TABLES or (
                    isinstance(e, OffsetCommitRow) and e.reason == "rebalance"
                ):
                    rows.from_rebalances[table] += 1
                if table == t.REBALANCE_EVENTS:
                    rows.rebalances += 1
    return rows


def rows_per_day(rows: Rows, groups: int, span_ms: int, scale: int) -> dict[str, float]:
    """Each table's rows a day at ``scale`` groups: time-driven rows x 24 h / span,
    rebalance-driven rows x (2 rebalances a group a day / the span's rebalances)."""
    out: dict[str, float] = {}
    per_rebalance_day = REBALANCES_PER_DAY * scale / max(1, rows.rebalances)
    for table in t.TABLE_NAMES:
        n = len(rows.by_table.get(table, ()))
        by_rebalance = rows.from_rebalances.get(table, 0)
        by_time = n - by_rebalance
        out[table] = by_time * (DAY_MS / span_ms) * scale / groups + (
            by_rebalance * per_rebalance_day
        )
    return out


# -- bytes ------------------------------------------------------------------------------------


def write_tables(
    spark: Any, base: Path, rows: Rows, batch_rows: dict[str, int], max_batches: int
) -> None:
    """The rows through the job's sinks in record-time order, ``batch_rows[table]`` rows of
    each table a micro-batch (one file per table per batch), at most ``max_batches``
    batches (a table with fewer rows a batch than that allows gets bigger files: the
    rebalance tables, whose files are few either way)."""
    from streaming.sinks.delta import DeltaSink
    from streaming.sinks.micro_batch import table_frames
    from streaming.spark.step_rows import EVENTS_SCHEMA, events_to_rows

    sink = DeltaSink(spark, str(base), "bench-budget")
    sink.ensure_tables()
    chunks: dict[str, list[list[TrackerEvent]]] = {}
    for table, events in rows.by_table.items():
        size = max(1, batch_rows[table], -(-len(events) // max_batches))
        chunks[table] = [events[i : i + size] for i in range(0, len(events), size)]
    for batch_id in range(max(len(c) for c in chunks.values())):
        chunk = [e for c in chunks.values() if batch_id < len(c) for e in c[batch_id]]
        df = spark.createDataFrame(events_to_rows(chunk), EVENTS_SCHEMA).coalesce(1)
        sink.write_batch(batch_id, table_frames(df, {e.kind for e in chunk}, batch_id))


def table_bytes(spark: Any, path: Path) -> tuple[int, int]:
    """The live files' bytes and count of the Delta table at ``path``."""
    from delta.tables import DeltaTable

    detail = DeltaTable.forPath(spark, str(path)).detail().collect()[0]
    return int(detail["sizeInBytes"]), int(detail["numFiles"])


def compact(spark: Any, path: Path) -> None:
    spark.sql(f"OPTIMIZE delta.`{path}` ZORDER BY (group_id)")


@dataclass
class Measured:
    rows: int
    written_bytes: int
    written_files: int
    compacted_bytes: int
    compacted_files: int


def measure(
    spark: Any,
    work: Path,
    rows: Rows,
    batch_rows: dict[str, int],
    *,
    compacted: bool,
    max_batches: int,
) -> dict[str, Measured]:
    """Each table's bytes as written and (``compacted``) after one Z-order compaction (the
    same files whatever the batches were: measured once)."""
    base = work / "delta"
    if base.exists():
        shutil.rmtree(base)
    write_tables(spark, base, rows, batch_rows, max_batches)
    out: dict[str, Measured] = {}
    for table, events in sorted(rows.by_table.items()):
        path = base / table
        written = table_bytes(spark, path)
        packed = (0, 0)
        if compacted:
            compact(spark, path)
            packed = table_bytes(spark, path)
        out[table] = Measured(len(events), *written, *packed)
    return out


# -- report -----------------------------------------------------------------------------------


def _gb(n: float) -> str:
    return f"{n / 1e9:.3f}"


def report(
    per_day: dict[int, dict[str, float]],
    measured: dict[int, dict[str, Measured]],
) -> tuple[str, dict[int, float]]:
    lines = [
        "| table | B/row written (1k / 10k) | B/row compacted | "
        + " | ".join(
            f"rows/day {s:,} | GB/day {s:,} written | GB/day {s:,} compacted" for s in SCALES
        )
        + " |",
        "|---|---|---|" + "---|---|---|" * len(SCALES),
    ]
    totals = {s: [0.0, 0.0] for s in SCALES}
    compacted_total: dict[int, float] = {}
    for table in t.TABLE_NAMES:
        cells = []
        m_small = measured[SCALES[0]].get(table)
        m_big = measured[SCALES[1]].get(table)
        if m_small is None or m_big is None or m_big.rows == 0:
            written_b = f"{'-'} / {'-'}"
            compacted_b = "-"
        else:
            small = m_small.written_bytes / m_small.rows
            written_b = f"{small:.1f} / {m_big.written_bytes / m_big.rows:.1f}"
            compacted_b = f"{m_big.compacted_bytes / m_big.rows:.1f}"
        for s in SCALES:
            n = per_day[s][table]
            m = measured[s].get(table)
            written = 0.0 if m is None or m.rows == 0 else n * m.written_bytes / m.rows
            packed = 0.0 if m is None or m.rows == 0 else n * m.compacted_bytes / m.rows
            totals[s][0] += written
            totals[s][1] += packed
            cells.append(f"{n:,.0f} | {_gb(written)} | {_gb(packed)}")
        lines.append(f"| {table} | {written_b} | {compacted_b} | " + " | ".join(cells) + " |")
    cells = []
    for s in SCALES:
        compacted_total[s] = totals[s][1]
        cells += ["", f"**{_gb(totals[s][0])}**", f"**{_gb(totals[s][1])}**"]
    lines.append("| **total** | | | " + " | ".join(cells) + " |")
    return "\n".join(lines), compacted_total


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.budget", description=__doc__.split("\n")[0])
    p.add_argument("--groups", type=int, default=40, help="modelled groups (default 40)")
    p.add_argument("--partitions", type=int, default=20)
    p.add_argument("--hours", type=float, default=1.0, help="measured record time (default 1)")
    p.add_argument(
        "--warmup-minutes", type=float, default=10.0, help="record time before (default 10)"
    )
    p.add_argument("--batch-seconds", type=float, default=5.0, help="a micro-batch's span")
    p.add_argument(
        "--max-batches",
        type=int,
        default=8,
        help="micro-batches written per scale (each a Delta commit per table; default 8)",
    )
    p.add_argument("--seed", type=int, default=29)
    p.add_argument("--work", type=Path, default=None, help="keep the tables here")
    args = p.parse_args(argv)

    config = TrackerConfig(commit_rows=True)  # the job's defaults (offset_commits_history=kept)
    span_ms = round(args.hours * HOUR_MS)
    warmup_ms = round(args.warmup_minutes * 60_000)
    groups = plan(args.groups, args.partitions, span_ms, warmup_ms, args.seed)
    started = time.monotonic()
    rows = run_model(groups, config, warmup_ms, span_ms)
    modelled = time.monotonic() - started
    per_day = {s: rows_per_day(rows, args.groups, span_ms, s) for s in SCALES}
    print(
        f"modelled {args.groups} groups x {args.partitions} partitions for {args.hours:g} h "
        f"(+{args.warmup_minutes:g} min warm-up) in {modelled:.0f} s: "
        f"{rows.rebalances} rebalances, "
        f"{sum(len(v) for v in rows.by_table.values()):,} table rows "
        f"({rows.exporter_lag_rows:,} lag measurements for the exporter)",
        flush=True,
    )

    from streaming.spark.session import build_session

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-budget-"))
    spark = build_session("bench-budget", master="local[2]", log_file=work / "spark.log")
    measured: dict[int, dict[str, Measured]] = {}
    try:
        for s in SCALES:
            batch_rows = {
                table: round(per_day[s][table] * args.batch_seconds / 86_400)
                for table in t.TABLE_NAMES
            }
            last = s == SCALES[-1]
            measured[s] = measure(
                spark,
                work / f"scale-{s}",
                rows,
                batch_rows,
                compacted=last,
                max_batches=args.max_batches,
            )
            print(f"wrote the tables at {s:,} groups' batch sizes", flush=True)
        for s in SCALES[:-1]:  # compacted: the same files at every scale
            for table, m in measured[s].items():
                done = measured[SCALES[-1]][table]
                m.compacted_bytes, m.compacted_files = done.compacted_bytes, done.compacted_files
    finally:
        spark.stop()
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    table, compacted = report(per_day, measured)
    print(table)
    big = compacted[SCALES[-1]]
    verdict = "within" if big <= BUDGET_BYTES else "OVER"
    print(
        f"\nbudget: {_gb(big)} GB a day compacted at {SCALES[-1]:,} groups, {verdict} "
        f"{_gb(BUDGET_BYTES)} GB"
    )
    return 0 if big <= BUDGET_BYTES else 1


if __name__ == "__main__":
    sys.exit(main())
