"""``rebalance-monitor audit`` over a month of history: each subcommand timed from the command
to the answer.

**The month.** ``--groups`` groups (default 10,000), each rebalancing twice a day (12 h
apart, at its own time of day) for ``--days`` days (default 30) ending today, each rebalance
with 20 partitions. The rows are the tracker's row types (``to_row`` dicts) of the golden
captures' real rebalances (``tests/fixtures/golden``: five groups, one to three members, every
strategy's expected assignment), one capture per group in turn, renamed to the group
(``bench-g00042``, its own topic ``bench-g00042``, cluster ``bench``), and each rebalance's
``member_assignments`` widened from the capture's 7 partitions to 20 (partition ``p`` also
as ``p + 7`` and ``p + 14``). They go through the job's own path: the stateful step's rows
(:func:`tests.delta_rows.events_frame`), each table's frame
(:func:`streaming.sinks.micro_batch.table_frames`) and :class:`streaming.sinks.delta.DeltaSink`,
one micro-batch per day (the day's rows; batch id = day, so an interrupted build resumes where
it stopped: Delta skips the batches already written). The first day's rows of
``--python-groups`` groups (default 1,000) are built in Python and turned into the stateful
step's rows once; the JVM copies them to ``--groups`` (:func:`replicated`: group ids, topics
and event ids renamed, times kept) and each later day is the first shifted (:func:`shifted`:
event times, dates, event ids). Then the tables are compacted as the job's maintenance does
(:func:`compact`).

The month is kept under ``.cache/bench/audit-<groups>g-<days>d/`` with ``built.json``;
a rerun only times. ``--rebuild`` starts over.

**The timing.** Each command runs ``--runs`` times (default 3) as a subprocess,
``rebalance-monitor audit ... --format csv``, wall time from start to exit, p50 and max.
Ranges are absolute (the month's last day), so a month built on another day answers alike.
The table also gives each command's CPU time (user + sys of the process and its children:
Spark's JVM for ``sql``) and the load average: on a shared machine the wall time is mostly
waiting for a core.

Targets (issue 29): ``history G --since -1d`` and ``owner`` under 5 s on this machine; every
subcommand over the month under 30 s.

Run it::

    .venv/bin/python -m bench.audit                     # 10,000 groups, 30 days
    .venv/bin/python -m bench.audit --groups 2000 --days 7
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / ".cache" / "bench"
DAY_MS = 86_400_000
PARTITIONS = 20
CAPTURE_PARTITIONS = 7
CLUSTER = "bench"
APP_ID = "bench-audit"
#: The tables the audit subcommands read (``sql`` aside), compacted by :func:`compact`.
AUDIT_TABLES = ("rebalance_events", "member_assignments", "group_metrics")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- the month ------------------------------------------------------------------------------


def _templates() -> list[list[tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]]]:
    """Per golden capture: its rebalances that leave members, each with its
    ``member_assignments`` and ``group_metrics`` rows."""
    import importlib

    # the golden replay of the audit tests (a module of the test tree, which mypy does not
    # check: imported by name)
    conftest = importlib.import_module("tests.audit.conftest")
    out = []
    for rows in conftest.golden_rows().values():
        by_event: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
        for r in rows:
            if r["kind"] in ("member_assignment", "group_metrics"):
                ma, gm = by_event.setdefault(r["rebalance_event_id"], ([], []))
                (ma if r["kind"] == "member_assignment" else gm).append(r)
        rebalances = [
            (r, *by_event[r["event_id"]])
            for r in rows
            if r["kind"] == "rebalance" and r["members_after"] and r["event_id"] in by_event
        ]
        out.append(rebalances)
    return out


def day_rows(groups: int, day0_ms: int) -> list[dict[str, Any]]:
    """The tracker rows of the first day: two rebalances per group, 12 h apart."""
    templates = _templates()
    rows: list[dict[str, Any]] = []
    for i in range(groups):
        group = f"bench-g{i:05d}"
        captured = templates[i % len(templates)]
        offset_ms = (i * 7_919_003) % (DAY_MS // 2)
        for k in range(2):
            rebalance, assignments, metrics = captured[(i // len(templates) + k) % len(captured)]
            ts = day0_ms + offset_ms + k * (DAY_MS // 2)
            event_id = f"rebalance/{CLUSTER}/{group}/{k}"
            head = {"cluster": CLUSTER, "group_id": group, "event_ts_ms": ts}
            rows.append(
                {
                    **rebalance,
                    **head,
                    "event_id": event_id,
                    "completed_ts_ms": ts,
                    "source_partition": i % 50,
                    "source_offset": 2 * i + k,
                }
            )
            for m in metrics:
                rows.append(
                    {
                        **m,
                        **head,
                        "event_id": f"{event_id}/metrics/{m['strategy']}",
                        "rebalance_event_id": event_id,
                    }
                )
            for a in assignments:
                for p in range(a["partition"], PARTITIONS, CAPTURE_PARTITIONS):
                    rows.append(
                        {
                            **a,
                            **head,
                            "event_id": f"{event_id}/member/{a['member_id']}/{group}/{p}",
                            "rebalance_event_id": event_id,
                            "topic": group,
                            "partition": p,
                        }
                    )
    return rows


def shifted(frame: DataFrame, days: int) -> DataFrame:
    """``frame`` (a table's rows of the first day) ``days`` later: event times, the event
    time column, the date partition and the event ids (ids stay unique per day)."""
    from pyspark.sql import functions as F

    out = frame.withColumn("event_ts_ms", F.col("event_ts_ms") + F.lit(days * DAY_MS))
    out = out.withColumn("event_time", F.timestamp_millis("event_ts_ms"))
    out = out.withColumn("date", F.to_date("event_time"))
    suffix = F.lit(f"@{days}")
    out = out.withColumn("event_id", F.concat("event_id", suffix))
    if "rebalance_event_id" in frame.columns:
        out = out.withColumn("rebalance_event_id", F.concat("rebalance_event_id", suffix))
    if "completed_ts_ms" in frame.columns:
        out = out.withColumn("completed_ts_ms", F.col("event_ts_ms"))
    return out.select(*frame.columns)


def replicated(frame: DataFrame, copies: int, groups: int) -> DataFrame:
    """``frame`` (rows of groups ``bench-g00000`` .. of ``groups``) ``copies`` times: copy
    ``c`` of group ``i`` is group ``c * groups + i`` (its topic renamed alike, its event ids
    suffixed ``#c``)."""
    from pyspark.sql import functions as F

    out = frame.withColumn("__copy", F.explode(F.sequence(F.lit(0), F.lit(copies - 1))))
    index = F.substring("group_id", len("bench-g") + 1, 5).cast("int") + F.col("__copy") * groups
    out = out.withColumn("group_id", F.format_string("bench-g%05d", index))
    suffix = F.concat(F.lit("#"), F.col("__copy").cast("string"))
    out = out.withColumn("event_id", F.concat("event_id", suffix))
    if "rebalance_event_id" in frame.columns:
        out = out.withColumn("rebalance_event_id", F.concat("rebalance_event_id", suffix))
    if "topic" in frame.columns:
        out = out.withColumn("topic", F.col("group_id"))
    return out.select(*frame.columns)


def compact(
    spark: SparkSession, base: Path, end_day: dt.date, tables: tuple[str, ...] = AUDIT_TABLES
) -> None:
    """Maintain ``tables`` as the job does (:class:`streaming.sinks.maintenance.Maintenance`),
    on the day after ``end_day``: every built date is closed, so each is Z-ordered by
    ``group_id``; the retention keeps every day."""
    from streaming.sinks.maintenance import Maintenance, Settings

    maintenance = Maintenance(
        spark,
        str(base),
        Settings(audit_retention_days=0),
        tables=tables,
        progress=log,
        today=lambda: end_day + dt.timedelta(days=2),
    )
    started = time.monotonic()
    report = maintenance.cycle()
    if report.failed:
        raise RuntimeError(f"maintenance failed: {report.failed}")
    log(f"maintained {', '.join(tables)} in {time.monotonic() - started:.0f} s")


def build(base: Path, groups: int, days: int, end_day: dt.date, python_groups: int) -> None:
    """Write the month under ``base`` (module docstring), resuming a partial build."""
    from streaming.sinks.delta import DeltaSink
    from streaming.sinks.micro_batch import table_frames
    from streaming.spark.session import build_session
    from tests.delta_rows import events_frame

    day0 = end_day - dt.timedelta(days=days - 1)
    day0_ms = int(dt.datetime(day0.year, day0.month, day0.day, tzinfo=dt.UTC).timestamp() * 1000)
    spark = build_session(
        "bench-audit",
        conf={
            "spark.ui.showConsoleProgress": "false",
            "spark.databricks.delta.snapshotPartitions": "2",
            "spark.sql.shuffle.partitions": "8",
        },
        log_file=base.parent / "spark.log",
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        started = time.monotonic()
        python_groups = min(python_groups, groups)
        if groups % python_groups:
            raise SystemExit(f"--groups {groups} is no multiple of --python-groups {python_groups}")
        rows = day_rows(python_groups, day0_ms)
        log(f"{len(rows):,} tracker rows of {python_groups:,} groups' first day built in Python")
        kinds = {str(r["kind"]) for r in rows}
        first = {
            table: replicated(frame, groups // python_groups, python_groups).localCheckpoint()
            for table, frame in table_frames(events_frame(spark, rows), kinds, 0).items()
        }
        del rows
        log(f"the first day's frames in the JVM after {time.monotonic() - started:.0f} s")
        sink = DeltaSink(spark, str(base), APP_ID)
        sink.ensure_tables()
        for day in range(days):
            t0 = time.monotonic()
            sink.write_batch(day, {t: shifted(f, day) for t, f in first.items()})
            log(
                f"day {day + 1}/{days} ({day0 + dt.timedelta(days=day)}) written in "
                f"{time.monotonic() - t0:.0f} s"
            )
        compact(spark, base, end_day)
        sizes = _sizes(base)
        (base.parent / "built.json").write_text(
            json.dumps(
                {
                    "groups": groups,
                    "days": days,
                    "first_day": str(day0),
                    "last_day": str(end_day),
                    "build_s": round(time.monotonic() - started),
                    "tables": sizes,
                },
                indent=1,
            )
        )
        log(f"built in {time.monotonic() - started:.0f} s: {sizes}")
    finally:
        spark.stop()


def _sizes(base: Path) -> dict[str, dict[str, int]]:
    """Per table: live data files and their bytes, and rows (delta-rs)."""
    from deltalake import DeltaTable

    out = {}
    for table in AUDIT_TABLES:
        actions = DeltaTable(str(base / table)).get_add_actions(flatten=True)
        out[table] = {
            "files": actions.num_rows,
            "bytes": int(sum(actions.column("size_bytes").to_pylist())),
            "rows": int(sum(actions.column("num_records").to_pylist())),
        }
    return out


# -- the timing -----------------------------------------------------------------------------


def commands(built: Mapping[str, Any]) -> Iterator[tuple[str, list[str], float]]:
    """(label, audit argv, target seconds) of each command timed."""
    last = dt.date.fromisoformat(built["last_day"])
    first = dt.date.fromisoformat(built["first_day"])
    end = f"{last + dt.timedelta(days=1)}T00:00:00Z"
    day_before = f"{last}T00:00:00Z"
    month = ["--since", f"{first}", "--until", end]
    group = f"bench-g{built['groups'] // 2:05d}"
    yield "history G --since -1d", ["history", group, "--since", day_before, "--until", end], 5
    yield "owner T P --at end", ["owner", group, "7", "--at", end], 5
    yield "owner T P --at end --group G", ["owner", group, "7", "--at", end, "--group", group], 5
    yield "history G (month)", ["history", group, *month], 30
    yield "advise G (month)", ["advise", group, *month], 30
    yield "storms (month)", ["storms", *month], 30
    yield "top-churn (month)", ["top-churn", *month], 30
    yield "diverging (month)", ["diverging", *month], 30
    yield "diverging --strategy sticky (month)", ["diverging", "--strategy", "sticky", *month], 30
    yield (
        "sql count(*) (month, Spark)",
        ["sql", "SELECT count(*) AS n, count(DISTINCT group_id) AS g FROM rebalance_events"],
        30,
    )


def time_commands(base: Path, built: Mapping[str, Any], runs: int) -> list[dict[str, Any]]:
    exe = str(Path(sys.executable).with_name("rebalance-monitor"))
    results = []
    for label, argv, target in commands(built):
        walls, cpus = [], []
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            proc = subprocess.run(
                [exe, "audit", *argv, "--delta-path", str(base), "--format", "csv", "--limit", "0"],
                capture_output=True,
                text=True,
                cwd=REPO,
            )
            walls.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if proc.returncode != 0:
                raise SystemExit(f"{label}: exit {proc.returncode}: {proc.stderr.strip()}")
        answer_rows = max(0, len(proc.stdout.strip().splitlines()) - 1)
        p50, worst = statistics.median(walls), max(walls)
        results.append(
            {
                "verb": label,
                "p50_s": round(p50, 2),
                "max_s": round(worst, 2),
                "target_s": target,
                "met": worst < target,
                "rows": answer_rows,
                "cpu_p50_s": round(statistics.median(cpus), 2),
                "load": round(os.getloadavg()[0], 1),
            }
        )
        log(
            f"{label}: p50 {p50:.2f} s, max {worst:.2f} s, CPU p50 "
            f"{statistics.median(cpus):.2f} s ({answer_rows} rows)"
        )
    return results


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| verb | wall p50 | wall max | target | met? | CPU p50 (user+sys) | load | rows |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| `{r['verb']}` | {r['p50_s']:.2f} s | {r['max_s']:.2f} s | < {r['target_s']} s | "
            f"{'yes' if r['met'] else 'NO'} | {r['cpu_p50_s']:.2f} s | {r['load']} | {r['rows']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/audit.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--python-groups",
        type=int,
        default=1_000,
        help="groups built in Python, copied in the JVM to --groups (a divisor of it)",
    )
    parser.add_argument("--rebuild", action="store_true", help="drop the cached month first")
    parser.add_argument("--build-only", action="store_true", help="build the month, time nothing")
    args = parser.parse_args(argv)
    root = CACHE / f"audit-{args.groups}g-{args.days}d"
    base = root / "delta"
    if args.rebuild and root.exists():
        shutil.rmtree(root)
    done = root / "built.json"
    if not done.exists():
        root.mkdir(parents=True, exist_ok=True)
        log(f"building {args.days} days of {args.groups:,} groups under {base}")
        build(base, args.groups, args.days, dt.datetime.now(dt.UTC).date(), args.python_groups)
    built = json.loads(done.read_text())
    log(f"the month: {built}")
    if args.build_only:
        return 0
    results = time_commands(base, built, args.runs)
    (root / "timings.json").write_text(json.dumps(results, indent=1))
    print(table(results))
    return 0 if all(r["met"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
