"""``rebalance-monitor demo``: everything on the embedded default, live.

::

    local KRaft broker (127.0.0.1:19092, .local/kafka)        streaming.kafka_local
      ▲            ▲                 ▲
      │            │                 └── rebalance-monitor simulate --loop   (the scenarios,
      │            │                     real consumer processes, new groups every round)
      │            └── rebalance-monitor collect --interval 2   (membership snapshots)
      └── the Structured Streaming job (local Spark, this process)
            -> Delta tables under .local/demo/delta
            -> Prometheus exporter on http://127.0.0.1:9108/metrics
            -> the terminal: a table of the groups redrawn in place (rich), each
               group's rebalances counted by cause; off a terminal one line per
               rebalance, and the table once at the end

It runs until Ctrl-C or ``--duration``; then it stops the simulator (which closes its
members), the collector, the job, and the broker if the demo started it. The job starts from
the latest offsets (``--from-earliest`` replays what the broker already holds), and the
scenarios and the collector only once its first micro-batch is done, so every group is seen
from its first record (``--duration`` counts from then); it keeps its
checkpoint and tables in ``.local/demo`` (cleared at start unless ``--keep-state``). Logs of
the helpers go to ``.local/demo/*.log``: the job's progress lines to ``job.log``, everything
Spark's JVM and its Python workers print to ``spark.log`` (never to the terminal,
:func:`streaming.spark.session.launch_jvm`). While Spark starts, creates the tables and runs
its first micro-batch (a minute or more on a busy machine) a spinner says which, with the
time elapsed (:func:`streaming.console.waiting`). Groups known only from the collector's
snapshots (no coordinator record yet, such as the Kafka source's own consumer) are named
under the table with what is known of them, not given a row. ``--static`` prints the what-if
comparison of the source documents' scenarios instead (no broker, no Spark).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, cast

from streaming import kafka_local
from streaming.config import (
    ENV_PREFIX,
    KAFKA_OPTIONS_ENV,
    JobConfig,
    KafkaConnection,
    load_config,
)
from streaming.console import is_terminal, waiting
from streaming.errors import ArgumentParser, ConfigError, cli_command
from streaming.kafka_security import SECURITY_MODES

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

REPO = Path(__file__).resolve().parents[1]
DEFAULT_STATE = REPO / ".local" / "demo"
PROG = "rebalance-monitor demo"
#: Rows of the live table (the groups with the latest rebalances first).
TABLE_ROWS = 20
#: Width of the table when stdout is not a terminal (the final summary in a log).
PLAIN_WIDTH = 200


@dataclass
class GroupLine:
    """What the summary shows of one group (updated from the job's tracker rows); None:
    not known (yet)."""

    group: str
    strategy: str | None = None
    generation: int | None = None
    members: int | None = None
    state: str | None = None
    causes: Counter[str] = field(default_factory=Counter)
    seen_rebalance: bool = False  # a rebalance row (coordinator records) named the group
    last_ts_ms: int | None = None
    spread: int | None = None
    imbalance: float | None = None
    moved_total: int = 0
    divergent: bool | None = None

    @property
    def rebalances(self) -> int:
        return sum(self.causes.values())

    def causes_text(self) -> str:
        """Each cause with its count, the most frequent first: ``join 3, crash 1``."""
        return ", ".join(f"{cause.replace('_', ' ')} {n}" for cause, n in self.causes.most_common())


@dataclass
class Summary:
    """The demo's live view: the job's rows folded per group (thread-safe); the rebalances
    also as one line each (:meth:`take_lines`) for output that is not a terminal."""

    groups: dict[str, GroupLine] = field(default_factory=dict)
    events: int = 0
    lines: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_events(self, rows: list[dict[str, Any]]) -> None:
        with self.lock:
            for row in rows:
                self.events += 1
                group = row.get("group_id")
                if not group:
                    continue
                kind = row.get("kind")
                if kind == "group_deleted":
                    self.groups.pop(group, None)
                    self.lines.append(f"{_clock(row.get('event_ts_ms'))}  {group}  deleted")
                    continue
                line = self.groups.setdefault(group, GroupLine(group))
                if kind in ("rebalance", "rebalance_summary"):
                    self._rebalance(line, row)
                    self.lines.append(_event_line(line, row))
                elif kind == "group_status":
                    line.state = row.get("state") or line.state
                    line.strategy = row.get("strategy") or line.strategy
                    if row.get("member_count") is not None:
                        line.members = int(row["member_count"])
                    if row.get("generation") is not None:
                        line.generation = int(row["generation"])

    @staticmethod
    def _rebalance(line: GroupLine, row: Mapping[str, Any]) -> None:
        line.seen_rebalance = True
        line.strategy = row.get("strategy") or line.strategy
        line.generation = row.get("generation_after", line.generation)
        line.members = len(row.get("members_after") or [])
        line.last_ts_ms = row.get("completed_ts_ms") or row.get("event_ts_ms")
        if row.get("generation_before") is not None and row.get("is_rebalance", True):
            line.causes[str(row.get("cause") or "unknown")] += 1
        skew = row.get("actual_skew") or {}
        line.spread = skew.get("spread_partitions")
        line.imbalance = skew.get("imbalance_ratio")
        churn = row.get("churn") or {}
        line.moved_total += int(churn.get("moved_partitions") or 0)
        line.divergent = row.get("own_strategy_divergent")

    def take_lines(self) -> list[str]:
        """The event lines since the last call."""
        with self.lock:
            out, self.lines = self.lines, []
        return out

    def render(self, *, now_s: float, header: str, limit: int = TABLE_ROWS) -> RenderableType:
        """The header, a table of the groups with rebalances (latest first) and a line
        naming the groups known only from the collector's snapshots."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        with self.lock:
            seen = [g for g in self.groups.values() if g.seen_rebalance]
            others = sorted(g.group for g in self.groups.values() if not g.seen_rebalance)
            snapshot_only = [self.groups[name] for name in others]
            events = self.events
        seen.sort(key=lambda g: g.last_ts_ms or 0, reverse=True)
        table = Table(box=None, pad_edge=False, header_style="bold")
        for name, justify in COLUMNS:
            table.add_column(name, justify=justify, no_wrap=True)
        for g in seen[:limit]:
            ago = "" if g.last_ts_ms is None else f"{max(0.0, now_s - g.last_ts_ms / 1000):.0f}s"
            table.add_row(
                g.group,
                g.strategy or "",
                _fmt(g.generation),
                _fmt(g.members),
                str(g.rebalances),
                g.causes_text() or "first seen",
                ago,
                _fmt(g.spread),
                _fmt(g.imbalance),
                str(g.moved_total),
                "" if g.divergent is None else ("yes" if g.divergent else "no"),
            )
        parts: list[RenderableType] = [
            Text(header, style="bold"),
            Text(f"{len(seen)} groups with coordinator records, {events} tracker rows so far"),
            Text(""),
        ]
        if seen:
            parts.append(table)
            if len(seen) > limit:
                parts.append(Text(f"… and {len(seen) - limit} more"))
        else:
            parts.append(Text("(waiting for the first rebalance: the simulator starts its groups)"))
        if snapshot_only:
            named = ", ".join(_known(g) for g in snapshot_only[:5])
            more = f" and {len(snapshot_only) - 5} more" if len(snapshot_only) > 5 else ""
            parts.append(Text(f"only in the collector's snapshots so far: {named}{more}"))
        return Group(*parts)


#: The live table's columns (name, alignment).
COLUMNS: tuple[tuple[str, Literal["left", "right"]], ...] = (
    ("group", "left"),
    ("strategy", "left"),
    ("gen", "right"),
    ("members", "right"),
    ("rebalances", "right"),
    ("causes", "left"),
    ("last", "right"),
    ("skew", "right"),
    ("imbal", "right"),
    ("moved", "right"),
    ("own≠", "right"),
)


def _event_line(line: GroupLine, row: Mapping[str, Any]) -> str:
    """One rebalance as a line: time, group, what happened, the group's causes so far."""
    first = row.get("generation_before") is None
    what = "first seen" if first else str(row.get("cause") or "unknown").replace("_", " ")
    moved = int((row.get("churn") or {}).get("moved_partitions") or 0)
    return (
        f"{_clock(line.last_ts_ms)}  {line.group}  {what}: {line.strategy or 'strategy unknown'}"
        f", generation {_fmt(line.generation)}, {_fmt(line.members)} members, {moved} moved"
        + ("" if first else f"; so far {line.causes_text()}")
    )


def _known(g: GroupLine) -> str:
    facts = [x for x in (g.state, None if g.members is None else f"{g.members} members") if x]
    return f"{g.group} ({', '.join(facts)})" if facts else g.group


def _clock(ts_ms: Any) -> str:
    if not isinstance(ts_ms, int):
        return "--:--:--"
    return time.strftime("%H:%M:%S", time.localtime(ts_ms / 1000))


def _fmt(value: float | int | None) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


# -- the helper processes ---------------------------------------------------------------------


@contextlib.contextmanager
def _process(
    name: str, argv: Sequence[str], log_dir: Path, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A ``rebalance-monitor`` subcommand in its own session, logging to ``<name>.log``;
    interrupted (SIGINT, then SIGKILL) on exit. ``env`` is added to the environment."""
    command = [sys.executable, "-m", "streaming.cli", *argv]
    log: IO[bytes] = open(log_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        command,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=REPO,
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )
    try:
        yield proc
    finally:
        for sig, wait_s in ((signal.SIGINT, 30.0), (signal.SIGKILL, 10.0)):
            if proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=wait_s)
        log.close()


def _ensure_topic(kafka: KafkaConnection, topic: str) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=kafka.servers, **kafka.kafka_python())
    try:
        if topic not in set(admin.list_topics()):
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    finally:
        admin.close()


# -- the demo ---------------------------------------------------------------------------------


def default_kafka_folder(security: str) -> Path:
    """``.local/kafka``, or ``.local/kafka-MODE`` for a secured broker: a broker folder's
    storage is formatted for one mode (:func:`streaming.kafka_local.folder_mode`)."""
    folder = kafka_local.DEFAULT_FOLDER
    return folder if security == "plaintext" else folder.with_name(f"{folder.name}-{security}")


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog=PROG,
        description=(
            "Run everything on the embedded default: the local broker, the simulator looping "
            "over the scenarios, the collector and the streaming job, with a live summary of "
            "the groups and the Prometheus metrics. Ctrl-C stops it."
        ),
    )
    p.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this long")
    p.add_argument(
        "--refresh",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="seconds between redraws of the table on a terminal (default 2)",
    )
    p.add_argument(
        "--kafka-port",
        type=int,
        default=kafka_local.DEFAULT_PORT,
        help=f"broker port (default {kafka_local.DEFAULT_PORT})",
    )
    p.add_argument("--kafka-controller-port", type=int, default=kafka_local.DEFAULT_CONTROLLER_PORT)
    p.add_argument(
        "--kafka-folder",
        type=Path,
        help="the broker's folder (default .local/kafka, .local/kafka-MODE with --security: "
        "a folder keeps the mode it was formatted for)",
    )
    p.add_argument(
        "--security",
        choices=SECURITY_MODES,
        default="plaintext",
        help="the local broker's listener (as `kafka start --security`); the job, the "
        "collector and the simulator connect with its client settings (default plaintext)",
    )
    p.add_argument(
        "--metrics-port", type=int, default=9108, help="Prometheus exporter port (default 9108)"
    )
    p.add_argument(
        "--broker-check-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long the check of the broker before Spark starts may take (default 30)",
    )
    p.add_argument(
        "--state-dir",
        type=Path,
        default=DEFAULT_STATE,
        help="checkpoint, tables and logs (default .local/demo)",
    )
    p.add_argument(
        "--keep-state",
        action="store_true",
        help="go on from the previous demo's checkpoint and tables",
    )
    p.add_argument(
        "--from-earliest",
        action="store_true",
        help="replay what the broker already holds (default: from now)",
    )
    p.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="NAME",
        help="scenarios to loop over (repeatable; default all)",
    )
    p.add_argument(
        "--static",
        action="store_true",
        help="only the what-if comparison of the source documents' scenarios",
    )
    return p


@cli_command(PROG)
def cli_demo(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.static:
        from streaming.demo_static import run as static

        print(static())
        return 0
    if args.duration is not None and not (math.isfinite(args.duration) and args.duration > 0):
        raise ConfigError("--duration: must be a positive number of seconds")
    from streaming.job import QueryFailedError

    try:  # BrokerError (exit 1), BrokerCheckError (exit 2): streaming.errors.cli_command
        return run_demo(args)
    except QueryFailedError as exc:  # the job's log in --state-dir has the rest
        print(f"{PROG}: failed: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1


def run_demo(args: argparse.Namespace) -> int:
    from rich.console import Console

    from streaming.job import check_kafka, launch, session_for

    interactive = is_terminal(sys.stdout)
    console = Console(file=sys.stdout, highlight=False, width=None if interactive else PLAIN_WIDTH)
    say = _say
    state: Path = args.state_dir
    if state.exists() and not args.keep_state:
        shutil.rmtree(state)
    state.mkdir(parents=True, exist_ok=True)

    broker_config = kafka_local.BrokerConfig(
        port=args.kafka_port,
        controller_port=args.kafka_controller_port,
        folder=args.kafka_folder or default_kafka_folder(args.security),
        security=args.security,
    )
    _job_config(args, broker_config.bootstrap_servers, {})  # ConfigError before the broker
    broker = kafka_local.start(broker_config, progress=say)
    bootstrap = broker.bootstrap_servers
    config = _job_config(args, bootstrap, broker.kafka_options)
    # the children get the client settings in their environment, not on their command line
    secured = json.dumps(config.kafka.java())
    child_env = {KAFKA_OPTIONS_ENV: secured, f"{ENV_PREFIX}KAFKA_OPTIONS": secured}
    try:
        check_kafka(config, progress=say)  # BrokerCheckError: exit 2, before Spark starts
    except BaseException:
        if not broker.already_running:
            kafka_local.stop(broker_config, progress=say)
        raise
    _ensure_topic(config.kafka, config.membership_topic)
    summary = Summary()
    job_log = open(state / "job.log", "a", encoding="utf-8")  # noqa: SIM115 - closed below

    def log(line: str) -> None:
        job_log.write(line + "\n")
        job_log.flush()

    scenarios = args.scenario or ["all"]
    spark_log = state / "spark.log"
    try:
        # the job first, its first micro-batch done: it reads from the latest offsets, so
        # whatever the scenarios write after this is seen from a group's first record on
        t0 = time.monotonic()
        with waiting(f"starting Spark (a local JVM, its log: {spark_log})", stream=sys.stdout):
            spark = session_for(config, log_file=spark_log)
        say(f"Spark started in {time.monotonic() - t0:.0f} s")
        with waiting("creating the Delta tables and starting the query", stream=sys.stdout):
            job = launch(config, spark=spark, progress=log, on_events=summary.on_events)
        try:
            with waiting("first micro-batch (it compiles the query)", stream=sys.stdout):
                job.await_backlog()
            say(f"first micro-batch done, {time.monotonic() - t0:.0f} s after the start of Spark")
            started = time.monotonic()  # --duration: of the scenarios
            with (
                # every poll named: the scenarios' short sessions (docs/operations.md,
                # poll_event_interval_s)
                _process("collector", ["collect", "--bootstrap-server", bootstrap,
                                       "--topic", config.membership_topic, "--interval", "2",
                                       "--poll-event-interval", "2"],
                         state, child_env) as collector,
                _process("simulate", ["simulate", "--loop", "--bootstrap-server", bootstrap,
                                      "--log-dir", str(state / "members"), *scenarios],
                         state, child_env) as simulator,
            ):  # fmt: skip
                url = job.metrics_url or "(exporter off)"
                say(f"metrics: {url}   tables: {config.delta_path}   logs: {state}")
                _watch(job, summary, args, started, url, (collector, simulator), console)
        except KeyboardInterrupt:
            say("\ninterrupted: stopping")
        finally:
            with waiting("stopping the job", stream=sys.stdout, quiet_when_piped=True):
                job.stop()
    except KeyboardInterrupt:
        say("\ninterrupted: stopping")
    finally:
        job_log.close()
        if not broker.already_running:
            kafka_local.stop(broker_config, progress=say)
        else:
            say(f"the broker on {bootstrap} was already running: left running")
    console.print(summary.render(now_s=time.time(), header="final summary"))
    return 0


def _job_config(
    args: argparse.Namespace, bootstrap: str, kafka_options: Mapping[str, str]
) -> JobConfig:
    """The job's settings for the demo's broker (:class:`ConfigError` naming a bad one)."""
    return load_config(
        environ={},
        overrides={
            "bootstrap_servers": bootstrap,
            "checkpoint_dir": str(args.state_dir / "checkpoint"),
            "delta_path": str(args.state_dir / "delta"),
            "metrics_host": "127.0.0.1",
            "metrics_port": args.metrics_port,
            "trigger_interval_s": 1.0,
            "starting_offsets": "earliest" if args.from_earliest else "latest",
            "kafka_options": dict(kafka_options),
            "broker_check_timeout_s": args.broker_check_timeout,
        },
    )


def _watch(
    job: Any,
    summary: Summary,
    args: argparse.Namespace,
    started: float,
    url: str,
    helpers: Sequence[subprocess.Popen[bytes]],
    console: Console,
) -> None:
    """Until ``--duration`` or Ctrl-C: on a terminal the table redrawn in place every
    ``--refresh`` seconds; elsewhere one line per rebalance as it comes."""
    from rich.live import Live

    interactive = console.is_terminal
    deadline = None if args.duration is None else started + args.duration
    reported: set[str] = set()

    def frame() -> RenderableType:
        stopped = [_name(p) for p in helpers if p.poll() is not None]
        stats = job.stats
        header = (
            f"rebalance-monitor demo — {time.monotonic() - started:.0f}s — metrics {url} — "
            f"records {stats.input_records}, bad {stats.bad_records} — Ctrl-C to stop"
            + (f" — exited: {', '.join(stopped)} (see its log)" if stopped else "")
        )
        return summary.render(now_s=time.time(), header=header)

    live = Live(frame(), console=console, auto_refresh=False, transient=True)
    with live if interactive else contextlib.nullcontext():
        while deadline is None or time.monotonic() < deadline:
            time.sleep(
                args.refresh
                if deadline is None
                else max(0.0, min(args.refresh, deadline - time.monotonic()))
            )
            for query in job.queries:
                if not query.isActive:  # job.stop() raises the failure Spark or the guard saw
                    from streaming.job import QueryFailedError

                    error = query.exception() or (job.guard and job.guard.failure)
                    raise QueryFailedError(f"query {query.name} stopped: {error or 'no cause'}")
            if interactive:
                summary.take_lines()  # the table shows them
                live.update(frame(), refresh=True)
                continue
            for line in summary.take_lines():
                print(line, flush=True)
            for p in helpers:
                name = _name(p)
                if p.poll() is not None and name not in reported:
                    reported.add(name)
                    print(f"{name} exited with {p.returncode} (see {name}.log)", flush=True)


def _name(helper: subprocess.Popen[bytes]) -> str:
    """The subcommand a helper runs (``python -m streaming.cli NAME ...``)."""
    return str(cast("Sequence[str]", helper.args)[3])


def _say(line: str) -> None:
    print(line, flush=True)


def main() -> None:
    sys.exit(cli_demo(sys.argv[1:]))


if __name__ == "__main__":
    main()
