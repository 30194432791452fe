"""``rebalance-monitor collect``: its flags, the configuration they make
(:func:`streaming.config.load_collector_config`: defaults < ``--config`` < environment <
flags) and the run (:func:`run_collect`)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from types import FrameType
from typing import Any

from streaming.collector.loop import Collector
from streaming.config import (
    DEFAULT_BOOTSTRAP_SERVERS,
    DEFAULT_CLUSTER,
    DEFAULT_MEMBERSHIP_TOPIC,
    KAFKA_OPTIONS_ENV,
    MAX_COLLECT_S,
    CollectorConfig,
    CollectorConfigError,
    load_collector_config,
    parse_kafka_option,
)
from streaming.errors import ArgumentParser, cli_command

log = logging.getLogger("streaming.collector")
DEFAULT_INTERVAL_S: float = CollectorConfig.interval_s
DEFAULT_TOPIC = DEFAULT_MEMBERSHIP_TOPIC


# --------------------------------------------------------------------------- command line


#: ``collect``'s flags of each setting (error messages name the flag a bad value came from).
FLAGS: dict[str, str] = {
    "bootstrap_servers": "--bootstrap-server",
    "interval_s": "--interval",
    "topic": "--topic",
    "cluster": "--cluster",
    "group_filter": "--group-filter",
    "kafka_options": "--kafka-option",
    "schema_version": "--schema-version",
    "heartbeat_interval_s": "--heartbeat-interval",
    "end_offsets_interval_s": "--end-offsets-interval",
    "describe_interval_s": "--describe-interval",
    "poll_event_interval_s": "--poll-event-interval",
    "chunk_bytes": "--chunk-bytes",
}


def add_collect_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``collect``'s arguments on ``parser`` (argparse only). A setting not given
    comes from ``--config``'s ``[collect]`` table, then ``REBALANCE_MONITOR_COLLECT_*``, then
    the default (:func:`streaming.config.load_collector_config`)."""
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="TOML config file: its [collect] table (or its top level) has the settings "
        "(streaming.config)",
    )
    parser.add_argument(
        "--bootstrap-server",
        default=None,
        metavar="HOST:PORT[,HOST:PORT]",
        help=f"brokers to bootstrap from (default {DEFAULT_BOOTSTRAP_SERVERS}, the local broker)",
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"time between snapshots (default {DEFAULT_INTERVAL_S:g})",
    )
    parser.add_argument(
        "--heartbeat-interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help="an unchanged group's heartbeat every this long (default "
        f"{CollectorConfig.heartbeat_interval_s:g}; schema version 2)",
    )
    parser.add_argument(
        "--end-offsets-interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help="the end offsets that moved every this long (default "
        f"{CollectorConfig.end_offsets_interval_s:g}; all of them every "
        f"{CollectorConfig.full_end_offsets_interval_s:g}; schema version 2)",
    )
    parser.add_argument(
        "--describe-interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help="DescribeGroups of every classic group every this long; in between only of "
        "groups new, unsettled or whose ListGroups state moved (default "
        f"{CollectorConfig.describe_interval_s:g}; schema version 2)",
    )
    parser.add_argument(
        "--poll-event-interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help="a poll event naming the unchanged groups every this long (default "
        f"{CollectorConfig.poll_event_interval_s:g}; schema version 2)",
    )
    parser.add_argument(
        "--chunk-bytes",
        type=int,
        default=None,
        metavar="BYTES",
        help="split a topics or end_offsets event into records of at most this much JSON "
        f"before compression (default {CollectorConfig.chunk_bytes}: under the broker's "
        "default 1 MiB max.message.bytes whatever zstd makes of it; schema version 2)",
    )
    parser.add_argument(
        "--schema-version",
        type=int,
        choices=(1, 2),
        default=None,
        help="the membership events' version: 2 (default) publishes changes; 1, a full copy "
        "of every group every interval, for a job older than this collector",
    )
    parser.add_argument(
        "--topic", default=None, help=f"topic to publish to (default {DEFAULT_TOPIC})"
    )
    parser.add_argument(
        "--cluster",
        default=None,
        metavar="NAME",
        help=f"cluster label written into every event (default {DEFAULT_CLUSTER})",
    )
    parser.add_argument(
        "--group-filter",
        default=None,
        metavar="REGEX",
        help="only groups whose whole id matches this regular expression (default: all)",
    )
    parser.add_argument(
        "--once", action="store_true", help="take one snapshot, publish it and exit"
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop after this long (with --once: keep retrying a failed snapshot this long)",
    )
    parser.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="client security option, repeatable: kafka-python's security_protocol, sasl_*, "
        "ssl_* (e.g. security_protocol=SASL_SSL) or the job's Java settings (sasl.jaas.config, "
        f"ssl.truststore.location...); also ${KAFKA_OPTIONS_ENV} as a JSON object, "
        "which keeps passwords out of the process list (flags win)",
    )
    parser.add_argument(
        "--broker-check-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long the check of the cluster before the first snapshot may take: "
        "unreachable, or a failed login, exits 2 naming the cause (default 30; 0: no check)",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="debug output, and kafka-python warnings"
    )


def config_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> CollectorConfig:
    """The collector's configuration: defaults < ``--config`` < environment < flags."""
    overrides: dict[str, Any] = {
        "bootstrap_servers": args.bootstrap_server,
        "interval_s": args.interval,
        "topic": args.topic,
        "cluster": args.cluster,
        "group_filter": args.group_filter,
        "schema_version": args.schema_version,
        "heartbeat_interval_s": args.heartbeat_interval,
        "end_offsets_interval_s": args.end_offsets_interval,
        "describe_interval_s": args.describe_interval,
        "poll_event_interval_s": args.poll_event_interval,
        "chunk_bytes": args.chunk_bytes,
    }
    if args.kafka_option:
        overrides["kafka_options"] = dict(parse_kafka_option(t) for t in args.kafka_option)
    return load_collector_config(
        config_file=getattr(args, "config", None),
        environ=environ,
        overrides=overrides,
        flags=FLAGS,
    )


def run_collect(args: argparse.Namespace) -> int:
    """Run ``collect`` with parsed arguments.

    Exit codes: 0 done (at least one snapshot published, or stopped with Ctrl-C / SIGTERM);
    1 no snapshot could be published; 2 invalid arguments, or the check before the first
    snapshot found the cluster unreachable or the login refused; 130 aborted by a second Ctrl-C.
    """
    if args.duration is not None and not (
        math.isfinite(args.duration) and 0 < args.duration <= MAX_COLLECT_S
    ):
        raise CollectorConfigError(
            f"--duration: expected seconds in (0, {MAX_COLLECT_S:g}], got {args.duration!r}"
        )
    if not (math.isfinite(args.broker_check_timeout) and args.broker_check_timeout >= 0):
        raise CollectorConfigError(
            f"--broker-check-timeout: expected seconds >= 0, got {args.broker_check_timeout!r}"
        )
    config = config_from_args(args)

    _setup_logging(verbose=bool(args.verbose))
    if args.broker_check_timeout > 0:
        from streaming.kafka_check import check_broker

        check_broker(
            config.bootstrap_servers, config.check_configs(), timeout_s=args.broker_check_timeout
        )
    stop = threading.Event()
    collector = Collector(config)
    with _stop_on_signals(stop):
        try:
            stats = collector.run(stop=stop, once=args.once, duration_s=args.duration)
        except KeyboardInterrupt:
            collector.close()
            log.warning("aborted")
            return 130
    if stats.snapshots == 0 and not stop.is_set():
        return 1
    return 0


@cli_command("rebalance-monitor collect")
def cli_collect(argv: Sequence[str] | None = None) -> int:
    """``rebalance-monitor collect [options]``; returns the exit code."""
    parser = ArgumentParser(
        prog="rebalance-monitor collect",
        description=(
            "Every --interval seconds, snapshot every consumer group with the admin API "
            "(state, assignor, members and their assignments, committed offsets, topic "
            "metadata and end offsets) and publish JSON events (docs/events.md) to --topic."
        ),
    )
    add_collect_arguments(parser)
    return run_collect(parser.parse_args(argv))


def _setup_logging(*, verbose: bool) -> None:
    if not logging.getLogger().handlers:
        logging.basicConfig(
            stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
    log.setLevel(logging.DEBUG if verbose else logging.INFO)
    # Our own log reports cluster errors once per snapshot; kafka-python's per-connection
    # warnings only with --verbose.
    logging.getLogger("kafka").setLevel(logging.WARNING if verbose else logging.CRITICAL)


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set ``stop`` (the loop ends after the current step); a second
    SIGINT raises ``KeyboardInterrupt``. Only in the main thread; restored on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()
        log.info("stopping after the current step (Ctrl-C again to abort)")

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
