"""``rebalance-monitor simulate`` (:func:`cli_simulate`): the command line of
:func:`~streaming.simulate.runner.run_scenario`.

Exit status: 0 when every scenario passed its checks, 1 when one failed, 2 on bad usage,
130 when interrupted (Ctrl-C or SIGTERM: every member is closed on the way out).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TextIO

from streaming.config import ENV_PREFIX, job_kafka_options_from_env, parse_key_value
from streaming.errors import EXIT_FAILED, EXIT_OK, ArgumentParser, ConfigError, cli_command
from streaming.kafka_connection import KafkaConnection
from streaming.simulate.report import JsonReporter, Reporter, TextReporter
from streaming.simulate.runner import DEFAULT_BOOTSTRAP, DEFAULT_LOG_DIR, run_scenario
from streaming.simulate.scenarios import (
    CLASSIC_ASSIGNORS,
    SCENARIOS,
    Scenario,
    describe_scenarios,
    get_scenario,
)

__all__ = ["KAFKA_OPTIONS_ENV", "build_parser", "cli_simulate", "connection_from_args"]

#: Ended by Ctrl-C or SIGTERM, as a shell reports a SIGINT.
EXIT_INTERRUPTED = 130


def build_parser(prog: str = "rebalance-monitor simulate") -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog=prog,
        description=(
            "Play scripted membership changes with real consumer processes (kafka-python "
            "members, Java members for KIP-848) against a broker, showing each step, the "
            "members and the assignment and generation each one reports."
        ),
        epilog="Scenarios:\n" + describe_scenarios(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("scenarios", nargs="*", metavar="SCENARIO", help="scenario names, or 'all'")
    p.add_argument("--list", action="store_true", help="describe the scenarios and exit")
    p.add_argument(
        "--bootstrap-server",
        default=DEFAULT_BOOTSTRAP,
        metavar="HOST:PORT",
        help=f"the broker (default: the local one, {DEFAULT_BOOTSTRAP})",
    )
    p.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka client setting of every client (repeatable), as `run` takes it: "
        "security.protocol=SASL_SSL, sasl.jaas.config=..., ssl.truststore.location=...; also "
        f"${KAFKA_OPTIONS_ENV} as a JSON object (flags win), which keeps passwords out of the "
        "process list",
    )
    p.add_argument(
        "--group-prefix",
        metavar="PREFIX",
        help="prefix of group and topic names (default: sim-<random>, unique per run)",
    )
    p.add_argument(
        "--assignor",
        choices=CLASSIC_ASSIGNORS,
        help="switch the Python members of scenarios that allow it to this assignor",
    )
    p.add_argument("--loop", action="store_true", help="repeat the scenarios until interrupted")
    p.add_argument("--json", action="store_true", help="JSON lines: steps, member reports, results")
    p.add_argument("--keep-topics", action="store_true", help="do not delete the run's topics")
    p.add_argument(
        "--timeout",
        type=float,
        default=180.0,
        metavar="S",
        help="give up on a scenario after S seconds (default: 180)",
    )
    p.add_argument(
        "--log-dir",
        type=Path,
        default=DEFAULT_LOG_DIR,
        metavar="DIR",
        help="where member logs go (default: .local/simulate)",
    )
    return p


def _selected(args: argparse.Namespace) -> list[Scenario]:
    names = list(args.scenarios)
    if names == ["all"]:
        names = list(SCENARIOS)
    chosen = [get_scenario(name) for name in names]
    if args.assignor is None:
        return chosen
    out = []
    for s in chosen:
        if args.assignor in s.assignor_choices:
            out.append(s.with_assignor(args.assignor))
        elif len(chosen) == 1:
            s.with_assignor(args.assignor)  # raises with the choices
        else:
            out.append(s)
    return out


#: The Kafka client settings from the environment, as the job reads them (a JSON object).
KAFKA_OPTIONS_ENV = ENV_PREFIX + "KAFKA_OPTIONS"


def connection_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> KafkaConnection:
    """``--bootstrap-server`` and the Java client's settings: ``$REBALANCE_MONITOR_KAFKA_OPTIONS``
    (the job's variable) < ``--kafka-option``; :class:`ConfigError` naming the bad one."""
    options = job_kafka_options_from_env(environ)
    options.update(parse_key_value(t, "--kafka-option") for t in args.kafka_option)
    try:
        return KafkaConnection(tuple(args.bootstrap_server.split(",")), options)
    except ConfigError as exc:
        raise ConfigError(f"--bootstrap-server/--kafka-option: {exc}") from None


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the simulator like Ctrl-C does: members are closed on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@cli_command("rebalance-monitor simulate")
def cli_simulate(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None) -> int:
    """``rebalance-monitor simulate``: returns 0 when every scenario passed its checks,
    1 when one failed, 2 on bad usage, 130 when interrupted."""
    out = stdout or sys.stdout
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list:
        out.write(describe_scenarios() + "\n")
        return EXIT_OK
    if not args.scenarios:
        parser.error("name a scenario (or 'all'); --list shows them")
    scenarios = _selected(args)  # ScenarioDefinitionError: exit 2 (errors.cli_command)
    connection = connection_from_args(args)
    reporter: Reporter = JsonReporter(out) if args.json else TextReporter(out)
    failed = False
    round_no = 0
    try:
        with _sigterm_as_interrupt():
            while True:
                round_no += 1
                prefix = args.group_prefix
                if prefix and round_no > 1:
                    prefix = f"{prefix}-r{round_no}"
                for scenario in scenarios:
                    result = run_scenario(
                        scenario,
                        connection=connection,
                        group_prefix=prefix,
                        reporter=reporter,
                        log_dir=args.log_dir,
                        keep_topics=args.keep_topics,
                        timeout_s=args.timeout,
                    )
                    failed = failed or not result.ok
                if not args.loop:
                    break
                time.sleep(1.0)
    except KeyboardInterrupt:
        sys.stderr.write("simulate: interrupted; every member was stopped\n")
        return EXIT_INTERRUPTED
    return EXIT_FAILED if failed else EXIT_OK
