"""The ``rebalance-monitor`` command line.

::

    rebalance-monitor assign --strategy NAME --input FILE      one assignor, JSON out
    rebalance-monitor assign --strategy all --input FILE [--format table|json]
    rebalance-monitor coordinator GROUP [--partitions N]       __consumer_offsets partition
    rebalance-monitor partition-for KEY --partitions N [--hex] producer partition of a key
    rebalance-monitor demo [--duration S] [--static]           everything live (or the what-if)
    rebalance-monitor kafka start|stop|status                  a local single-node KRaft broker
    rebalance-monitor collect [--once] ...                     membership snapshots -> topic
    rebalance-monitor decode --key-hex K [--value-hex V]       one __consumer_offsets record
    rebalance-monitor simulate SCENARIO | --list               scripted groups, real consumers
    rebalance-monitor maintain [--table T]                     the tables' maintenance, once
    rebalance-monitor --version                                what runs (and on which runtimes)

Each subcommand is a pair of functions here: ``_add_<name>`` declares its arguments (argparse
only, so ``--help`` imports nothing else) and ``_run_<name>`` imports what it needs when it
runs. A new subcommand adds one pair and one entry in ``_SUBCOMMANDS``. Nothing here imports
pyspark.

Exit codes: 0 success; 1 the assignor cannot assign this input (Java would throw);
2 bad input or usage (unreadable file, invalid JSON, invalid scenario, unknown strategy),
with a one-line message on stderr naming the offending field.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from streaming.errors import (
    EXIT_FAILED,
    EXIT_OK,
    ArgumentParser,
    RebalanceMonitorError,
    cli_command,
)
from streaming.version import version_line

PROG = "rebalance-monitor"

EXIT_ASSIGNMENT = EXIT_FAILED


class UsageError(RebalanceMonitorError):
    """Bad input to a subcommand: ``field: message`` on stderr, exit 2."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")


# --- assign -----------------------------------------------------------------------------------


def _add_assign(sub: Any) -> None:
    p = sub.add_parser(
        "assign",
        help="run an assignor (or all of them) on a scenario JSON file",
        description=(
            "Run one assignor on a scenario and print its assignment as JSON, or compare "
            "every assignor (--strategy all) as a table or JSON. Strategies: range, "
            "roundrobin, sticky, cooperative-sticky (client side), uniform, server-range "
            "(server side, KIP-848)."
        ),
    )
    p.add_argument("--strategy", required=True, metavar="NAME", help="strategy name or 'all'")
    p.add_argument(
        "--input", required=True, metavar="FILE", help="scenario JSON file, '-' for stdin"
    )
    p.add_argument(
        "--format",
        choices=("table", "json"),
        default=None,
        help="output of --strategy all (default: table); a single strategy always prints JSON",
    )
    p.add_argument(
        "--max-input-bytes",
        type=_positive_int,
        default=DEFAULT_MAX_INPUT_BYTES,
        metavar="N",
        help=f"read at most this much of --input (default {DEFAULT_MAX_INPUT_BYTES}, 8 MiB); "
        "a larger input exits 2",
    )
    p.add_argument(
        "--max-members",
        type=_positive_int,
        default=DEFAULT_MAX_MEMBERS,
        metavar="N",
        help=f"largest group assigned (default {DEFAULT_MAX_MEMBERS}); more exits 2",
    )
    p.add_argument(
        "--max-partitions",
        type=_positive_int,
        default=DEFAULT_MAX_PARTITIONS,
        metavar="N",
        help=f"most partitions over all topics (default {DEFAULT_MAX_PARTITIONS}); more exits 2",
    )
    p.set_defaults(run=_run_assign)


#: ``assign``'s limits (``--max-input-bytes``, ``--max-members``, ``--max-partitions``): a
#: scenario beyond them exits 2 before any assignor runs (10^6 members with ``--strategy
#: all`` would run for minutes in gigabytes; ``--input /dev/zero`` would read forever).
DEFAULT_MAX_INPUT_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_MEMBERS = 10_000
DEFAULT_MAX_PARTITIONS = 200_000


def _check_scenario_size(spec: Any, args: argparse.Namespace) -> None:
    members = len(spec.members)
    if members > args.max_members:
        raise UsageError(
            "members", f"{members} members is more than --max-members {args.max_members}"
        )
    partitions = sum(spec.topics.values())
    if partitions > args.max_partitions:
        raise UsageError(
            "topics",
            f"{partitions} partitions in all is more than --max-partitions {args.max_partitions}",
        )


def _read_scenario(path: str, max_bytes: int = DEFAULT_MAX_INPUT_BYTES) -> Any:
    """The JSON in ``path`` (``-``: stdin), of which at most ``max_bytes`` are read."""
    import json

    try:
        if path == "-":
            stdin = getattr(sys.stdin, "buffer", None)  # a text-only stdin (tests): chars
            raw = stdin.read(max_bytes + 1) if stdin else sys.stdin.read(max_bytes + 1).encode()
        else:
            with open(path, "rb") as f:
                raw = f.read(max_bytes + 1)
        if len(raw) > max_bytes:
            raise UsageError(
                "input", f"{path} is larger than --max-input-bytes {max_bytes}: not read further"
            )
        text = raw.decode("utf-8")
    except OSError as e:
        raise UsageError("input", f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise UsageError("input", f"{path} is not UTF-8 text: {e.reason}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(
            "input", f"invalid JSON in {path} at line {e.lineno} column {e.colno}: {e.msg}"
        ) from None
    except RecursionError:
        raise UsageError("input", f"JSON in {path} is nested too deeply") from None


def _run_assign(args: argparse.Namespace) -> int:
    import json

    from assign_core.assignors.registry import get_assignor
    from assign_core.scenario import parse_scenario, result_to_json

    strategy: str = args.strategy
    if strategy == "all":
        # validate the input before anything else, like a single strategy does
        spec = parse_scenario(_read_scenario(args.input, args.max_input_bytes))
        _check_scenario_size(spec, args)
        from assign_core.whatif import compare, render_json, render_table

        whatif = compare(spec)
        print(render_json(whatif) if args.format == "json" else render_table(whatif))
        return EXIT_OK
    if args.format == "table":
        raise UsageError("format", "a table needs --strategy all; one strategy prints JSON")
    assignor = get_assignor(strategy)  # ScenarioError("strategy") when unknown
    spec = parse_scenario(_read_scenario(args.input, args.max_input_bytes))
    _check_scenario_size(spec, args)
    result = assignor.assign(spec)
    print(json.dumps(result_to_json(result)))
    return EXIT_OK


# --- coordinator, partition-for ---------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _add_coordinator(sub: Any) -> None:
    p = sub.add_parser(
        "coordinator",
        help="the __consumer_offsets partition (coordinator) of a group id",
        description=(
            "Print the __consumer_offsets partition that owns GROUP: "
            "Utils.abs(GROUP.hashCode()) %% N. Its leader broker is the group coordinator."
        ),
    )
    p.add_argument("group", metavar="GROUP", help="the group id")
    p.add_argument(
        "--partitions",
        type=_positive_int,
        default=50,
        metavar="N",
        help="offsets.topic.num.partitions (default: 50)",
    )
    p.set_defaults(run=_run_coordinator)


def _run_coordinator(args: argparse.Namespace) -> int:
    from assign_core.placement import coordinator_partition

    print(coordinator_partition(args.group, args.partitions))
    return EXIT_OK


def _add_partition_for(sub: Any) -> None:
    p = sub.add_parser(
        "partition-for",
        help="the partition the Java producer picks for a record key",
        description=(
            "Print toPositive(murmur2(KEY)) %% N, the partition the Java producer's default "
            "partitioner picks for a record with this key (UTF-8, or hex with --hex)."
        ),
    )
    p.add_argument("key", metavar="KEY", help="the record key")
    p.add_argument(
        "--partitions",
        type=_positive_int,
        required=True,
        metavar="N",
        help="the topic's partitions",
    )
    p.add_argument("--hex", action="store_true", help="KEY is hex-encoded bytes")
    p.set_defaults(run=_run_partition_for)


def _run_partition_for(args: argparse.Namespace) -> int:
    from assign_core.placement import partition_for_key

    key: bytes | str = args.key
    if args.hex:
        try:
            key = bytes.fromhex(args.key)
        except ValueError:
            raise UsageError("key", f"not hex: {args.key!r}") from None
    print(partition_for_key(key, args.partitions))
    return EXIT_OK


# --- delegated subcommands -----------------------------------------------------------------
#
# These own their argument parsing (``cli_main(argv)`` in their module); the parser here only
# lists them, and ``main`` hands the rest of the command line over unchanged.

_DELEGATED: dict[str, tuple[str, str, str]] = {
    "kafka": ("streaming.kafka_local", "cli_main", "start, stop or show a local KRaft broker"),
    "collect": (
        "streaming.collector",
        "cli_collect",
        "publish admin-API membership snapshots to a topic",
    ),
    "decode": ("streaming.codec.cli", "cli_decode", "decode one __consumer_offsets record"),
    "simulate": (
        "streaming.simulate.cli",
        "cli_simulate",
        "play a scripted membership scenario with real consumers",
    ),
    "run": ("streaming.job", "cli_run", "run the Structured Streaming job"),
    "maintain": (
        "streaming.maintain",
        "cli_maintain",
        "maintain the Delta tables once: retention, compaction, clustering, VACUUM",
    ),
    "demo": (
        "streaming.demo",
        "cli_demo",
        "everything live on the local broker: simulator, collector, job, metrics "
        "(--static: the what-if comparison only)",
    ),
    "audit": (
        "streaming.audit.cli",
        "cli_audit",
        "audit the Delta tables: history, storms, diverging, top-churn, owner, sql",
    ),
}


def _add_delegated(sub: Any) -> None:
    for name, (_, _, help_text) in _DELEGATED.items():
        sub.add_parser(name, help=help_text, add_help=False)


def _run_delegated(name: str, argv: Sequence[str]) -> int:
    from importlib import import_module

    module_name, function, _ = _DELEGATED[name]
    code: int = getattr(import_module(module_name), function)(list(argv))
    return code


# --- entry point ------------------------------------------------------------------------------

_SUBCOMMANDS: tuple[Callable[[Any], None], ...] = (
    _add_assign,
    _add_coordinator,
    _add_partition_for,
    _add_delegated,
)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog=PROG,
        description=(
            "Watches Kafka consumer-group rebalances: actual vs. expected assignments, "
            "skew and churn."
        ),
    )
    parser.add_argument("--version", action="version", version=version_line())
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=ArgumentParser
    )
    for add in _SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in _DELEGATED:
        return _run_delegated(argv[0], argv[1:])
    args = build_parser().parse_args(argv)  # a usage error: SystemExit(2), one line
    return _run(args)


@cli_command(PROG)
def _run(args: argparse.Namespace) -> int:
    """The subcommands declared here; errors map to exit codes in :mod:`streaming.errors`."""
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
