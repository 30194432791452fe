"""``rebalance-monitor audit SUBCOMMAND``: argument parsing, exit codes, output.

Parsing imports nothing but the standard library (``--help`` is instant). Every subcommand
but ``sql`` reads the tables with delta-rs in this process (:mod:`streaming.audit.lake`, no
Spark: a local session alone takes seconds to start); ``sql`` runs on Spark SQL
(:mod:`streaming.audit.queries`), as does any subcommand with ``--engine spark``, or with
``--engine auto`` when delta-rs cannot read the tables (a storage it lacks, a reader feature
it lacks). Spark starts only after every argument has been checked, and a local
``--delta-path`` without the tables fails before anything is read.

Ranges are bounded by default: without ``--since`` a subcommand reads the
:data:`DEFAULT_WINDOW` before ``--until`` (or now; ``owner``: before ``--at``), so no
command reads the whole history unasked.

Exit codes: 0 success (an unknown group is not an error: the output is empty and a note on
stderr says so); 1 Spark or delta-rs failed for another reason; 2 bad input (unparsable
time, missing table, bad SQL, time travel before the first version, unknown strategy), with
a one-line message on stderr naming what was wrong.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from streaming.audit import AuditError, MissingTableError
from streaming.audit.render import FORMATS
from streaming.audit.times import TIME_HELP, parse_time
from streaming.console import waiting
from streaming.errors import (
    EXIT_FAILED,
    EXIT_OK,
    ArgumentParser,
    RebalanceMonitorError,
    cli_command,
)

__all__ = ["PROG", "build_parser", "cli_audit"]

PROG = "rebalance-monitor audit"
EXIT_SPARK = EXIT_FAILED
DEFAULT_LIMIT = 1000
#: Without ``--since``: this long before ``--until``/now (``owner``: before ``--at``).
DEFAULT_WINDOW = "30d"
_DEFAULT_WINDOW_MS = 30 * 86_400_000
ENGINES = ("auto", "delta-rs", "spark")
#: Over :data:`streaming.spark.session.DEFAULT_CONF`: no progress bars on a terminal.
_SESSION_CONF = {"spark.ui.showConsoleProgress": "false"}
#: Where Spark's own lines go (``--log-file``): never the terminal.
REPO = Path(__file__).resolve().parents[2]
DEFAULT_LOG_FILE = REPO / ".local" / "audit" / "spark.log"

_TIME_OPTIONS = ("--since", "--until", "--at")
_RANGED = ("history", "advise", "storms", "diverging", "top-churn", "owner")
_NEGATIVE = re.compile(r"-\s*\d")
_REBALANCE_EVENTS = "rebalance_events"  # streaming.tables (which imports pyspark)
_MEMBER_ASSIGNMENTS = "member_assignments"
_TABLES_OF = {
    "history": (_REBALANCE_EVENTS,),
    "storms": (_REBALANCE_EVENTS,),
    "diverging": (_REBALANCE_EVENTS,),
    "top-churn": (_REBALANCE_EVENTS,),
    "owner": (_REBALANCE_EVENTS, _MEMBER_ASSIGNMENTS),
    "advise": (_REBALANCE_EVENTS, "group_metrics"),
    "sql": (),
}


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def _positive_int(text: str) -> int:
    value = _non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a positive integer, got 0")
    return value


def _positive_minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected minutes > 0, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected minutes > 0, got {text!r}")
    return value


def _common() -> ArgumentParser:
    p = ArgumentParser(add_help=False)
    g = p.add_argument_group("common options")
    g.add_argument(
        "--delta-path",
        metavar="PATH",
        help="base path of the Delta tables (default: the job's, from --config, "
        "$REBALANCE_MONITOR_DELTA_PATH or .local/job/delta)",
    )
    g.add_argument("--config", metavar="FILE", help="the job's TOML config (for --delta-path)")
    g.add_argument("--cluster", help="only this cluster label (default: every cluster)")
    g.add_argument(
        "--format", choices=FORMATS, default="table", help="output format (default: table)"
    )
    g.add_argument(
        "--limit",
        type=_non_negative_int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"at most N rows, a note says when more exist (default {DEFAULT_LIMIT}; 0: all)",
    )
    g.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="what reads the tables: delta-rs in this process (fast start), or Spark; "
        "auto: delta-rs when it can read them, else Spark (sql: always Spark)",
    )
    g.add_argument(
        "--master",
        default="local[*]",
        help="Spark master, when Spark runs (default: local[*]; 'none': spark-submit's)",
    )
    g.add_argument(
        "--log-file",
        type=Path,
        default=DEFAULT_LOG_FILE,
        metavar="FILE",
        help=f"where Spark's own lines go (default {DEFAULT_LOG_FILE.relative_to(REPO)})",
    )
    return p


def _range(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--since",
        metavar="T",
        help=f"from T, inclusive: {TIME_HELP} (default: {DEFAULT_WINDOW} before --until, "
        "else before now; give an early date for all history)",
    )
    p.add_argument("--until", metavar="T", help="up to T, exclusive (same forms; default: none)")


def build_parser() -> argparse.ArgumentParser:
    """The ``audit`` parser (argparse only)."""
    common = _common()
    parser = ArgumentParser(
        prog=PROG,
        description=(
            "Questions asked of the Delta tables the job wrote (docs/tables.md). Times T: "
            f"{TIME_HELP}. Ranges are since <= event time < until. Exit 2 on bad input."
        ),
    )
    sub = parser.add_subparsers(
        dest="command", metavar="SUBCOMMAND", required=True, parser_class=ArgumentParser
    )

    p = sub.add_parser(
        "history",
        parents=[common],
        help="a group's rebalances in order",
        description=(
            "The group's rebalances in event-time order: generation before/after, members "
            "before/after, cause, partitions moved and revoked, skew (max - min partitions "
            "per member), imbalance (max / mean) and the strategies whose expected "
            "assignment differs from the actual one."
        ),
    )
    p.add_argument("group", metavar="GROUP", help="the consumer group id")
    _range(p)
    p.add_argument(
        "--plot",
        metavar="FILE.png",
        help="also draw the assignment timeline (members x generations, partitions held) "
        "and the churn per rebalance into a PNG",
    )

    p = sub.add_parser(
        "advise",
        parents=[common],
        help="a group's rebalances replayed under every strategy, and advice",
        description=(
            "Replays the group's recorded rebalances under every strategy (docs/tracking.md, "
            "rules C1-C6 and A1-A6): partitions moved, paused partition-seconds (an eager "
            "rebalance pauses every partition for its duration, a cooperative one only the "
            "moved ones), mean and max skew, rebalances that needed a follow-up round. The "
            "server-side uniform and server-range rows are the KIP-848 migration what-if. "
            "Ends with a one-line recommendation against the group's own strategy (on "
            "stderr with --format csv/json)."
        ),
    )
    p.add_argument("group", metavar="GROUP", help="the consumer group id")
    _range(p)
    p.add_argument(
        "--plot",
        metavar="FILE.png",
        help="also draw each strategy's cumulative paused partition-seconds over time",
    )

    p = sub.add_parser(
        "storms",
        parents=[common],
        help="groups that rebalanced N times within M minutes",
        description=(
            "Groups with at least N rebalances within some window of M minutes (a window "
            "starts at each rebalance and spans [t, t + M)). Overlapping windows of a group "
            "merge into one storm: its first and last rebalance, the rebalances in it, the "
            "most in one window, and the partition-seconds its rebalances paused; the "
            "costliest storms first."
        ),
    )
    _range(p)
    p.add_argument("--min-rebalances", type=_positive_int, default=5, metavar="N", help="default 5")
    p.add_argument(
        "--window", type=_positive_minutes, default=10.0, metavar="MINUTES", help="default 10"
    )

    p = sub.add_parser(
        "diverging",
        parents=[common],
        help="groups whose latest assignment differs from what their strategy gives",
        description=(
            "Groups whose latest actual assignment (their most recent rebalance) differs "
            "from the expected assignment of their own strategy, or of --strategy S, with "
            "every strategy that differs. A group that ended empty does not diverge. "
            "Only the rebalances in the range count (its latest there is a group's latest)."
        ),
    )
    _range(p)
    p.add_argument(
        "--strategy",
        metavar="S",
        help="compare with this strategy: range, roundrobin, sticky, cooperative-sticky, "
        "uniform, server-range",
    )

    p = sub.add_parser(
        "top-churn",
        parents=[common],
        help="groups ranked by partitions moved",
        description="Groups ranked by partitions moved (then revoked) in the range.",
    )
    _range(p)

    p = sub.add_parser(
        "owner",
        parents=[common],
        help="who owned a topic-partition at time T",
        description=(
            "Who owned TOPIC-PARTITION at T, per group, from the rebalances at or before T "
            f"(event time) since --since (default {DEFAULT_WINDOW} before T: a group whose "
            "last rebalance is older is not seen). For each group that held the partition, "
            "its latest generation at or before T decides: status 'owner' when that "
            "generation assigns the partition (member_id owns it), 'released' when it does "
            "not (member_id is then the last owner, in owner_generation). --as-recorded reads "
            "the tables as they were at T instead (Delta time travel to the last commit at or "
            "before T: what the monitor knew then); T before the tables' first version, or a "
            "version whose files were vacuumed, is then an error."
        ),
    )
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("partition", metavar="PARTITION", type=_non_negative_int)
    p.add_argument("--at", required=True, metavar="T", help=TIME_HELP)
    p.add_argument(
        "--since",
        metavar="T",
        help=f"only rebalances from T on (default: {DEFAULT_WINDOW} before --at)",
    )
    p.add_argument("--group", metavar="G", help="only this group")
    p.add_argument(
        "--as-recorded",
        action="store_true",
        help="read the tables as they were at T (Delta time travel), not as they are now",
    )

    p = sub.add_parser(
        "sql",
        parents=[common],
        help="ad-hoc Spark SQL over the tables",
        description=(
            "Run one read-only Spark SQL statement (a query, SHOW, DESCRIBE or EXPLAIN, as "
            "Spark's own parser reads it; anything that would write is refused) with every "
            "table registered as a temporary view under its name: rebalance_events, "
            "member_assignments, group_metrics, offset_commits, "
            "partition_lag, bad_records (only the --cluster rows when given)."
        ),
    )
    p.add_argument("query", metavar="QUERY", help='e.g. "SELECT count(*) FROM rebalance_events"')
    return parser


# -- running ---------------------------------------------------------------------------------


def _delta_path(args: argparse.Namespace) -> str:
    if args.delta_path:
        return str(args.delta_path)
    from streaming.config import JobConfigError, load_config

    try:
        return load_config(config_file=args.config).delta_path
    except JobConfigError as e:
        raise AuditError(f"config: {e}") from None


def _local_dir(path: str) -> Path | None:
    """``path`` as a local directory, None for a URI Spark resolves (hdfs://, s3a://...)."""
    if path.startswith("file:"):
        return Path(path.removeprefix("file:").removeprefix("//"))
    if "://" in path:
        return None
    return Path(path)


def _precheck_tables(base: str, command: str) -> None:
    """Fail before Spark starts when a local base path lacks the tables a command reads."""
    local = _local_dir(base)
    if local is None:
        return
    if not local.is_dir():
        raise MissingTableError(f"--delta-path: {base} does not exist (no Delta tables there)")
    for table in _TABLES_OF[command]:
        if not (local / table / "_delta_log").is_dir():
            raise MissingTableError(
                f"--delta-path: no Delta table {table} at {local / table} "
                "(has the job written there? --delta-path names the tables' base)"
            )


def _times(args: argparse.Namespace, now_ms: int) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for name in ("since", "until", "at"):
        text = getattr(args, name, None)
        out[name] = None if text is None else parse_time(text, now_ms, option=f"--{name}")
    if out["since"] is not None and out["until"] is not None and out["since"] >= out["until"]:
        raise AuditError(f"--until: {args.until!r} is not after --since {args.since!r}")
    if out["since"] is None and args.command in _RANGED:
        anchor = out["at"] if args.command == "owner" else out["until"]
        out["since"] = (now_ms if anchor is None else anchor) - _DEFAULT_WINDOW_MS
    since, at = out["since"], out["at"]
    if args.command == "owner" and since is not None and at is not None and since > at:
        raise AuditError(f"--since: {args.since!r} is after --at {args.at!r}")
    return out


def _validate(args: argparse.Namespace) -> None:
    if getattr(args, "strategy", None) is not None:
        from assign_core.assignors.registry import STRATEGIES

        if args.strategy not in STRATEGIES:
            raise AuditError(
                f"--strategy: unknown strategy {args.strategy!r}; known: {', '.join(STRATEGIES)}"
            )
    if getattr(args, "query", None) is not None and not args.query.strip():
        raise AuditError("sql: the statement is empty")
    if getattr(args, "plot", None):
        parent = Path(args.plot).expanduser().resolve().parent
        if not parent.is_dir():
            raise AuditError(f"--plot: folder {parent} does not exist")


def _session(master: str, log_file: Path) -> tuple[Any, bool]:
    """The Spark session (reused when this process already has one) and whether it was
    started here (then it is stopped at the end)."""
    from pyspark.sql import SparkSession

    from streaming.spark.session import build_session

    _quiet_query_errors()
    existing = SparkSession.getActiveSession()
    if existing is not None:
        return existing, False
    chosen = None if master.strip().lower() in ("", "none") else master
    conf = dict(_SESSION_CONF)
    if chosen and chosen.startswith("local"):
        # Delta rebuilds a table's state in 50 tasks by default, sized for a cluster;
        # on one machine a few per core is as fast and far quicker for small tables
        conf["spark.databricks.delta.snapshotPartitions"] = str(2 * (os.cpu_count() or 1))
    session = build_session("rebalance-monitor-audit", master=chosen, conf=conf, log_file=log_file)
    session.sparkContext.setLogLevel("ERROR")
    return session, True


def _quiet_query_errors() -> None:
    """pyspark logs every SQL error with its JVM stack as JSON on stderr; the one-line
    message of :class:`QueryError` says it all."""
    import logging

    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


def _run(args: argparse.Namespace) -> int:
    from streaming.audit.render import render

    now_ms = time.time_ns() // 1_000_000
    times = _times(args, now_ms)
    _validate(args)
    base = _delta_path(args)
    _precheck_tables(base, args.command)

    result = None
    if args.engine != "spark" and args.command != "sql":
        from streaming.audit.lake import LakeAudit, LakeUnsupportedError

        try:
            lake = LakeAudit(base, cluster=args.cluster, limit=args.limit or None)
            result = _query(lake, args, times)
        except LakeUnsupportedError as e:
            if args.engine != "auto":
                raise AuditError(f"--engine delta-rs: cannot read the tables: {e}") from None
            print(f"{PROG}: delta-rs cannot read the tables ({e}); using Spark", file=sys.stderr)
    if result is None:
        with waiting("starting Spark", quiet_when_piped=True) as step:
            spark, started = _session(args.master, args.log_file)
            try:
                step(f"running {args.command}")
                from streaming.audit.queries import Audit

                audit = Audit(spark, base, cluster=args.cluster, limit=args.limit or None)
                result = _query(audit, args, times)
            finally:
                if started:
                    step("stopping Spark")
                    spark.stop()
    print(render(result, args.format))
    for note in result.notes:
        print(f"{PROG}: {note}", file=sys.stderr)
    if result.footer is not None and args.format != "table":
        print(f"{PROG}: {result.footer}", file=sys.stderr)
    return EXIT_OK


def _query(audit: Any, args: argparse.Namespace, times: dict[str, int | None]) -> Any:
    """The subcommand's result (:class:`streaming.audit.render.Result`), and its plot, from
    ``audit``: a :class:`~streaming.audit.lake.LakeAudit` or a Spark
    :class:`~streaming.audit.queries.Audit` (the same methods)."""
    command: str = args.command
    if command == "history":
        result = audit.history(args.group, since_ms=times["since"], until_ms=times["until"])
        if args.plot:
            _plot(audit, args, times)
        return result
    if command == "advise":
        rows, protocol = audit.cost_rows(
            args.group, since_ms=times["since"], until_ms=times["until"]
        )
        result = audit.advise(
            args.group,
            since_ms=times["since"],
            until_ms=times["until"],
            rows=rows,
            group_protocol=protocol,
        )
        if args.plot:
            _plot_advice(rows, args)
        return result
    if command == "storms":
        return audit.storms(
            since_ms=times["since"],
            until_ms=times["until"],
            min_rebalances=args.min_rebalances,
            window_ms=max(1, round(args.window * 60_000)),
        )
    if command == "diverging":
        return audit.diverging(
            strategy=args.strategy, since_ms=times["since"], until_ms=times["until"]
        )
    if command == "top-churn":
        return audit.top_churn(since_ms=times["since"], until_ms=times["until"])
    if command == "owner":
        assert times["at"] is not None  # --at is required
        return audit.owner(
            args.topic,
            args.partition,
            at_ms=times["at"],
            since_ms=times["since"],
            group=args.group,
            as_recorded=args.as_recorded,
        )
    return audit.sql(args.query)


def _plot_advice(rows: Any, args: argparse.Namespace) -> None:
    from streaming.audit.plot import plot_cumulative_paused

    if not rows:
        print(f"{PROG}: nothing to plot: no rebalances of {args.group!r}", file=sys.stderr)
        return
    where = f" ({args.cluster})" if args.cluster else ""
    out = plot_cumulative_paused(rows, args.plot, title=f"group {args.group}{where}")
    print(f"{PROG}: wrote {out}", file=sys.stderr)


def _plot(audit: Any, args: argparse.Namespace, times: dict[str, int | None]) -> None:
    from streaming.audit.plot import plot_timeline

    timeline = audit.timeline(args.group, since_ms=times["since"], until_ms=times["until"])
    if not timeline.generations:
        print(f"{PROG}: nothing to plot: no rebalances of {args.group!r}", file=sys.stderr)
        return
    where = f" ({args.cluster})" if args.cluster else ""
    out = plot_timeline(timeline, args.plot, title=f"group {args.group}{where}")
    print(f"{PROG}: wrote {out}", file=sys.stderr)


def _attach_relative_times(argv: Sequence[str]) -> list[str]:
    """``--since -1h`` -> ``--since=-1h``: argparse takes a value starting with ``-`` that is
    not a plain number for an option and would refuse it."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in _TIME_OPTIONS and i + 1 < len(argv) and _NEGATIVE.match(argv[i + 1]):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


@cli_command(PROG)
def cli_audit(argv: Sequence[str] | None = None) -> int:
    """``rebalance-monitor audit ...``; returns the exit code (module docstring)."""
    parser = build_parser()
    args = parser.parse_args(_attach_relative_times(sys.argv[1:] if argv is None else argv))
    try:
        return _run(args)  # AuditError: exit 2 (streaming.errors.cli_command)
    except (RebalanceMonitorError, BrokenPipeError):
        raise
    except Exception as e:  # Spark or delta-rs failed (not the input): one line, no traceback
        message = _lake_failure(e)
        if message is not None:
            print(f"{PROG}: delta-rs failed: {message}", file=sys.stderr)
            return EXIT_SPARK
        message = _spark_failure(e)
        if message is None:
            raise
        print(f"{PROG}: Spark failed: {message}", file=sys.stderr)
        return EXIT_SPARK


def _lake_failure(error: Exception) -> str | None:
    """One line for an error of delta-rs or Arrow reading the tables; None otherwise."""
    if "deltalake" not in sys.modules:
        return None
    import pyarrow as pa
    from deltalake.exceptions import DeltaError

    if isinstance(error, DeltaError | pa.ArrowException):
        text = str(error).strip()
        return text.splitlines()[0] if text else type(error).__name__
    return None


def _spark_failure(error: Exception) -> str | None:
    """One line for an error of Spark or its setup; None for anything else (a bug)."""
    from streaming.spark.session import SparkSetupError

    if isinstance(error, SparkSetupError):
        return str(error)
    if "pyspark" not in sys.modules:
        return None
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    if isinstance(error, PySparkException | Py4JError):
        text = str(error).strip()
        return text.splitlines()[0] if text else type(error).__name__
    return None


def main() -> None:
    sys.exit(cli_audit(sys.argv[1:]))


if __name__ == "__main__":
    main()
