"""``rebalance-monitor maintain``: one maintenance cycle of the job's Delta tables, now.

For operators who schedule maintenance themselves (cron, a Kubernetes CronJob) and run the job
with ``--maintenance-interval 0``; the cycle is the one the job runs
(:mod:`streaming.sinks.maintenance`): the tables' retention and checkpoint properties, old
dates deleted, open dates compacted, closed dates clustered by group, VACUUM. It may run while
the job appends (Delta's optimistic commits; ``docs/operations.md``, Maintenance).

It reads the job's settings (``--config``, ``REBALANCE_MONITOR_*``: ``delta_path``, the
retention settings, ``spark_conf``, ``spark_master``), prints a line per step that did
something and a last line with the totals.

Exit codes: 0 every step done; 1 a step or Spark failed (the step's line says which and why,
the trace in ``--log-file``); 2 invalid settings, an unknown ``--table``, or no Delta table
of the job at a local ``--delta-path``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlparse

from streaming.errors import (
    EXIT_FAILED,
    EXIT_OK,
    ArgumentParser,
    RebalanceMonitorError,
    cli_command,
)
from streaming.job_log import DEFAULT_LOG_FORMAT, LOG_FORMATS, JobLog
from streaming.version import version_line

__all__ = ["PROG", "build_parser", "cli_maintain"]

PROG = "rebalance-monitor maintain"
#: The job's tables (:data:`streaming.tables.TABLE_NAMES`, which imports pyspark).
_TABLES = (
    "rebalance_events",
    "member_assignments",
    "group_metrics",
    "offset_commits",
    "partition_lag",
    "group_lag",
    "lag_transitions",
    "bad_records",
)


class MaintainUsageError(RebalanceMonitorError):
    """Bad input to ``maintain`` (exit 2); the message names what was wrong."""


def build_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog=PROG,
        description=(
            "Maintain the job's Delta tables once: delete the dates past their retention, "
            "compact today's and yesterday's small files, cluster older dates by group_id "
            "(Z-order), VACUUM. Safe beside a running job."
        ),
    )
    p.add_argument("--config", metavar="FILE", help="the job's TOML config file")
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting (repeatable)",
    )
    p.add_argument("--delta-path", help="base path of the Delta tables (the job's)")
    p.add_argument("--master", dest="spark_master", help="Spark master ('none': spark-submit's)")
    p.add_argument(
        "--table",
        action="append",
        default=[],
        metavar="NAME",
        help=f"only this table (repeatable; default: all of {', '.join(_TABLES)})",
    )
    p.add_argument("--log-format", choices=LOG_FORMATS, default=DEFAULT_LOG_FORMAT)
    p.add_argument(
        "--log-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="where Spark's log and the trace of a failure go (default .local/job/maintain.log)",
    )
    p.add_argument("--version", action="version", version=version_line())
    return p


def _local_folder(path: str) -> Path | None:
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return Path(parsed.path if parsed.scheme else path)
    return None


@cli_command(PROG)
def cli_maintain(argv: Sequence[str] | None = None) -> int:
    """``rebalance-monitor maintain [options]``; the exit code (module docstring)."""
    from streaming.config import DEFAULT_JOB_DIR, load_config, parse_key_value

    args = build_parser().parse_args(argv)
    overrides: dict[str, object] = {
        "delta_path": args.delta_path,
        "spark_master": args.spark_master,
    }
    if args.conf:
        overrides["spark_conf"] = dict(parse_key_value(t, "--conf") for t in args.conf)
    config = load_config(config_file=args.config, overrides=overrides)  # JobConfigError: 2
    unknown = [t for t in args.table if t not in _TABLES]
    if unknown:
        raise MaintainUsageError(
            f"--table: {', '.join(unknown)} is not a table of the job ({', '.join(_TABLES)})"
        )
    tables = list(dict.fromkeys(args.table)) or list(_TABLES)
    folder = _local_folder(config.delta_path)
    if folder is not None:
        present = [t for t in tables if (folder / t / "_delta_log").is_dir()]
        if not present:
            raise MaintainUsageError(
                f"--delta-path: no Delta table of the job under {config.delta_path} "
                "(has the job written there? --delta-path names the tables' base)"
            )
        tables = present
    log = JobLog(args.log_format)
    log_file: Path = args.log_file or DEFAULT_JOB_DIR / "maintain.log"
    log.info(f"{PROG}: {version_line()}")
    began = time.monotonic()
    try:
        from streaming.job import _runtime_conf, session_for
        from streaming.sinks.maintenance import Settings, run_cycle

        spark = session_for(config, log_file=log_file)
        _runtime_conf(spark, config)
        report = run_cycle(spark, config.delta_path, Settings.of(config), tables, log.info)
    except Exception as e:
        from streaming.job import _first_line, _log_failure

        where = _log_failure(log_file, e)
        print(f"{PROG}: failed: {_first_line(e)}{where}", file=sys.stderr, flush=True)
        return EXIT_FAILED
    failed = report.failed
    removed = sum(s.removed for s in report.steps if s.error is None)
    log.info(
        f"{PROG}: {len(tables)} tables in {time.monotonic() - began:.1f} s, "
        f"{removed} files removed from the tables"
        + (f", {len(failed)} steps FAILED" if failed else "")
    )
    if failed:
        for step in failed:
            print(f"{PROG}: {step.table}: {step.step} failed: {step.error}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK
