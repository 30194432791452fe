"""The job's maintenance measured: the streaming checkpoint's size by its retention, the tables'
files with and without maintenance, and what a maintenance cycle costs the micro-batches
beside it.

On a broker it starts, the bench writes the steady backlog of ``bench/steady.py`` (``--groups``
groups, 20 partitions each, a round of commits every 5 s over ``--duration-s`` of record
time) to the real ``__consumer_offsets``, then runs the job (``rebalance-monitor run --once
--max-offsets-per-trigger N``, so the backlog takes some hundreds of micro-batches) twice, side
by side on one machine:

* **before**: ``spark.sql.streaming.minBatchesToRetain=100`` (Spark's default) and no
  maintenance (``--maintenance-interval 0``): what the job did before it maintained anything;
* **after**: the job's defaults (``minBatchesToRetain`` 10) and a maintenance cycle every
  ``--interval-s`` seconds.

For each: the checkpoint's bytes and files, each table's live and on-disk data files and
``_delta_log`` files at the end, and the micro-batches' durations (the ``[events] batch N
... in X s`` lines), for "after" split into the batches that overlapped a maintenance cycle
(between its ``[maintenance] cycle N:`` and ``... done`` lines) and the others.

    .venv/bin/python bench/maintenance.py --groups 200 --duration-s 300 --max-offsets 4000
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import steady  # noqa: E402  (bench/steady.py: the backlog, the broker)
import stream  # noqa: E402  (bench/stream.py: the job runner)

STATE = REPO / ".local" / "bench-maintenance"
_BATCH = re.compile(r"\[events\] batch (\d+): .* in ([\d.]+) s \(")


def folder_size(path: Path) -> tuple[int, int]:
    """Bytes and files under ``path``."""
    files = [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def table_files(delta: Path) -> dict[str, dict[str, int]]:
    """Per table: data files on disk, live data files (the log's), ``_delta_log`` files."""
    out: dict[str, dict[str, int]] = {}
    for table in sorted(p for p in delta.iterdir() if (p / "_delta_log").is_dir()):
        on_disk = [p for p in table.rglob("*.parquet") if "_delta_log" not in p.parts]
        live: set[str] = set()
        log = table / "_delta_log"
        commits = sorted(log.glob("*.json"))
        for commit in commits:
            for line in commit.read_text().splitlines():
                action = json.loads(line)
                if "add" in action:
                    live.add(action["add"]["path"])
                elif "remove" in action:
                    live.discard(action["remove"]["path"])
        out[table.name] = {
            "data_files_on_disk": len(on_disk),
            "live_data_files_in_json_commits": len(live),
            "delta_log_files": sum(1 for p in log.rglob("*") if p.is_file()),
        }
    return out


def batch_durations(lines: list[tuple[float, str]]) -> dict[str, Any]:
    """The micro-batches' durations, split by whether a maintenance cycle ran meanwhile."""
    cycles: list[tuple[float, float]] = []
    began: float | None = None
    for at, text in lines:
        if re.match(r"\[maintenance\] cycle \d+: ", text):
            began = at
        elif re.match(r"\[maintenance\] cycle \d+ done", text) and began is not None:
            cycles.append((began, at))
            began = None
    during: list[float] = []
    outside: list[float] = []
    for at, text in lines:
        m = _BATCH.match(text)
        if m is None:
            continue
        seconds = float(m.group(2))
        start = at - seconds
        overlaps = any(start < end and at > begin for begin, end in cycles)
        (during if overlaps else outside).append(seconds)

    def summary(values: list[float]) -> dict[str, float | int]:
        if not values:
            return {"batches": 0}
        ordered = sorted(values)
        return {
            "batches": len(values),
            "p50_s": round(statistics.median(ordered), 2),
            "p95_s": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
            "max_s": round(ordered[-1], 2),
        }

    return {
        "cycles": len(cycles),
        "cycle_s": [round(end - begin, 1) for begin, end in cycles],
        "during_a_cycle": summary(during),
        "outside_cycles": summary(outside),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--duration-s", type=int, default=300, help="record time of commits")
    parser.add_argument("--max-offsets", type=int, default=4000, help="records per micro-batch")
    parser.add_argument("--interval-s", type=float, default=30.0, help="maintenance interval")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results here")
    args = parser.parse_args(argv)

    import shutil

    from tests.conftest import free_ports

    shutil.rmtree(STATE, ignore_errors=True)
    STATE.mkdir(parents=True)
    results: dict[str, Any] = {"groups": args.groups, "max_offsets": args.max_offsets}
    with steady._broker(STATE / "kafka") as (bootstrap, _):
        steady.ensure_offsets_topic(bootstrap)
        backlog_file = STATE / "backlog.bin"
        backlog = steady.write_backlog(backlog_file, args.groups, args.duration_s)
        stream.create_topics(bootstrap, *backlog.topics.items())
        steady.produce(bootstrap, backlog_file)
        stream.create_topics(bootstrap, ("steady.membership", 1))
        print(f"backlog: {backlog.records:,} records, {args.groups} groups", flush=True)
        common = ["--once", "--max-offsets-per-trigger", str(args.max_offsets)]
        variants = {
            "before": [
                *common,
                "--maintenance-interval", "0",
                "--conf", "spark.sql.streaming.minBatchesToRetain=100",
            ],
            "after": [*common, "--maintenance-interval", str(args.interval_s)],
        }  # fmt: skip
        jobs = {}
        ports = free_ports(len(variants))
        for (name, extra), port in zip(variants.items(), ports, strict=True):
            work = STATE / name
            work.mkdir()
            jobs[name] = (
                work,
                stream.JobProcess(
                    bootstrap, steady.OFFSETS_TOPIC, "steady.membership", work, port, *extra
                ),
            )
        began = time.monotonic()
        for name, (work, job) in jobs.items():
            code = job.wait()
            if code != 0:
                raise SystemExit(f"{name}: the job exited with {code} (log {job.log})")
            ckpt_bytes, ckpt_files = folder_size(work / "checkpoint")
            durations = batch_durations(job.lines)
            batches = sum(1 for _, text in job.lines if _BATCH.match(text))
            results[name] = {
                "batches": batches,
                "checkpoint_bytes": ckpt_bytes,
                "checkpoint_files": ckpt_files,
                "tables": table_files(work / "delta"),
                "batch_durations": durations,
            }
            print(f"{name} ({time.monotonic() - began:.0f} s): {json.dumps(results[name])}")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
