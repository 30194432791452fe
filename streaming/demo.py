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
            -> the terminal summary below, refreshed every few seconds

It runs until Ctrl-C or ``--duration``; then it stops the simulator (which closes its
members), the collector, the job, and the broker if the demo started it. The job starts from
the latest offsets (``--from-earliest`` replays what the broker already holds), and the
scenarios and the collector only once its first micro-batch is done, so every group is seen
from its first record (``--duration`` counts from then); it keeps its
checkpoint and tables in ``.local/demo`` (cleared at start unless ``--keep-state``). Logs of
the helpers go to ``.local/demo/*.log``. ``--static`` prints the what-if comparison of the
source documents' scenarios instead (no broker, no Spark).
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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from streaming import kafka_local
from streaming.config import ENV_PREFIX, KAFKA_OPTIONS_ENV, KafkaConnection, load_config
from streaming.errors import ArgumentParser, ConfigError, cli_command
from streaming.kafka_security import SECURITY_MODES

REPO = Path(__file__).resolve().parents[1]
DEFAULT_STATE = REPO / ".local" / "demo"
PROG = "rebalance-monitor demo"
CLEAR = "\x1b[H\x1b[2J"


@dataclass
class GroupLine:
    """What the summary shows of one group (updated from the job's tracker rows)."""

    group: str
    strategy: str = "?"
    generation: int | None = None
    members: int = 0
    rebalances: int = 0
    cause: str = "-"
    last_ts_ms: int | None = None
    spread: int | None = None
    imbalance: float | None = None
    moved_total: int = 0
    last_moved: int | None = None
    divergent: bool | None = None
    state: str = "?"


@dataclass
class Summary:
    """The demo's live view: the job's rows folded per group (thread-safe)."""

    groups: dict[str, GroupLine] = field(default_factory=dict)
    events: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_events(self, rows: list[dict[str, Any]]) -> None:
        with self.lock:
            for row in rows:
                self.events += 1
                group = row.get("group_id")
                if not group:
                    continue
                line = self.groups.setdefault(group, GroupLine(group))
                kind = row.get("kind")
                if kind in ("rebalance", "rebalance_summary"):
                    self._rebalance(line, row)
                elif kind == "group_status":
                    line.state = str(row.get("state") or "?")
                    line.members = int(row.get("member_count") or 0)
                    if row.get("generation") is not None:
                        line.generation = int(row["generation"])
                elif kind == "group_deleted":
                    self.groups.pop(group, None)

    @staticmethod
    def _rebalance(line: GroupLine, row: Mapping[str, Any]) -> None:
        line.strategy = str(row.get("strategy") or line.strategy)
        line.generation = row.get("generation_after", line.generation)
        line.members = len(row.get("members_after") or [])
        line.last_ts_ms = row.get("completed_ts_ms") or row.get("event_ts_ms")
        if row.get("generation_before") is None:
            line.cause = "first seen"
        else:
            line.rebalances += 1
            line.cause = str(row.get("cause") or "unknown")
        skew = row.get("actual_skew") or {}
        line.spread = skew.get("spread_partitions")
        line.imbalance = skew.get("imbalance_ratio")
        churn = row.get("churn") or {}
        line.last_moved = churn.get("moved_partitions")
        line.moved_total += int(line.last_moved or 0)
        line.divergent = row.get("own_strategy_divergent")

    def render(self, *, now_s: float, header: str, limit: int = 20) -> str:
        with self.lock:
            lines = sorted(self.groups.values(), key=lambda g: g.last_ts_ms or 0, reverse=True)[
                :limit
            ]
            total, events = len(self.groups), self.events
        out = [header, f"{total} groups tracked, {events} tracker rows so far", ""]
        head = (
            f"{'group':<44} {'strategy':<18} {'gen':>4} {'mbrs':>4} {'rebal':>5}  "
            f"{'last cause':<22} {'ago':>6} {'skew':>4} {'imbal':>5} {'moved':>5} {'own≠':>4}"
        )
        out.append(head)
        out.append("-" * len(head))
        for g in lines:
            ago = "-" if g.last_ts_ms is None else f"{max(0.0, now_s - g.last_ts_ms / 1000):.0f}s"
            out.append(
                f"{g.group[-44:]:<44} {g.strategy[:18]:<18} {_fmt(g.generation):>4} "
                f"{g.members:>4} {g.rebalances:>5}  {g.cause[:22]:<22} {ago:>6} "
                f"{_fmt(g.spread):>4} {_fmt(g.imbalance):>5} {g.moved_total:>5} "
                f"{_flag(g.divergent):>4}"
            )
        if not lines:
            out.append("(waiting for the first rebalance: the simulator starts its groups)")
        return "\n".join(out)


def _fmt(value: float | int | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _flag(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


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
        default=5.0,
        metavar="SECONDS",
        help="seconds between summaries (default 5)",
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
        default=kafka_local.DEFAULT_FOLDER,
        help="the broker's folder (default .local/kafka)",
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
    from streaming.job import check_kafka, launch

    say = _say
    state: Path = args.state_dir
    if state.exists() and not args.keep_state:
        shutil.rmtree(state)
    state.mkdir(parents=True, exist_ok=True)

    broker_config = kafka_local.BrokerConfig(
        port=args.kafka_port,
        controller_port=args.kafka_controller_port,
        folder=args.kafka_folder,
        security=args.security,
    )
    broker = kafka_local.start(broker_config, progress=say)
    bootstrap = broker.bootstrap_servers
    config = load_config(
        environ={},
        overrides={
            "bootstrap_servers": bootstrap,
            "checkpoint_dir": str(state / "checkpoint"),
            "delta_path": str(state / "delta"),
            "metrics_host": "127.0.0.1",
            "metrics_port": args.metrics_port,
            "trigger_interval_s": 1.0,
            "starting_offsets": "earliest" if args.from_earliest else "latest",
            "kafka_options": dict(broker.kafka_options),
        },
    )
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
    try:
        # the job first, its first micro-batch done: it reads from the latest offsets, so
        # whatever the scenarios write after this is seen from a group's first record on
        say("starting the streaming job (local Spark; the first batch takes a while)")
        job = launch(config, progress=log, on_events=summary.on_events)
        try:
            job.await_backlog()
            started = time.monotonic()  # --duration: of the scenarios
            with (
                _process("collector", ["collect", "--bootstrap-server", bootstrap,
                                       "--topic", config.membership_topic, "--interval", "2"],
                         state, child_env) as collector,
                _process("simulate", ["simulate", "--loop", "--bootstrap-server", bootstrap,
                                      "--log-dir", str(state / "members"), *scenarios],
                         state, child_env) as simulator,
            ):  # fmt: skip
                url = job.metrics_url or "(exporter off)"
                say(f"metrics: {url}   tables: {config.delta_path}   logs: {state}")
                _watch(job, summary, args, started, url, (collector, simulator))
        except KeyboardInterrupt:
            say("\ninterrupted: stopping")
        finally:
            job.stop()
    except KeyboardInterrupt:
        say("\ninterrupted: stopping")
    finally:
        job_log.close()
        if not broker.already_running:
            kafka_local.stop(broker_config, progress=say)
        else:
            say(f"the broker on {bootstrap} was already running: left running")
    print(summary.render(now_s=time.time(), header="final summary"))
    return 0


def _watch(
    job: Any,
    summary: Summary,
    args: argparse.Namespace,
    started: float,
    url: str,
    helpers: Sequence[subprocess.Popen[bytes]],
) -> None:
    interactive = sys.stdout.isatty()
    deadline = None if args.duration is None else started + args.duration
    while deadline is None or time.monotonic() < deadline:
        time.sleep(
            args.refresh
            if deadline is None
            else max(0.0, min(args.refresh, deadline - time.monotonic()))
        )
        for query in job.queries:
            if not query.isActive:
                raise RuntimeError(f"query {query.name} stopped: {query.exception()}")
        stopped = [p.args[3] for p in helpers if p.poll() is not None]  # the subcommand
        stats = job.stats
        header = (
            f"rebalance-monitor demo — {time.monotonic() - started:.0f}s — metrics {url} — "
            f"records {stats.input_records}, bad {stats.bad_records} — Ctrl-C to stop"
            + (f" — exited: {', '.join(map(str, stopped))} (see its log)" if stopped else "")
        )
        text = summary.render(now_s=time.time(), header=header)
        print((CLEAR if interactive else "\n") + text, flush=True)


def _say(line: str) -> None:
    print(line, flush=True)


def main() -> None:
    sys.exit(cli_demo(sys.argv[1:]))


if __name__ == "__main__":
    main()
