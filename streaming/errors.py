"""The one exception root of ``streaming``, and the one place a command line turns an error
into an exit status and a line on stderr.

Every error ``streaming`` raises on purpose derives from :class:`RebalanceMonitorError`
(``assign_core`` keeps its own root, :class:`assign_core.errors.AssignCoreError`). Where
callers (or the standard library) catch a built-in class, it stays a second base::

    RebalanceMonitorError                      exit_status 2 unless said otherwise
    ├── ConfigError             (ValueError)   an invalid setting or input; names it
    │   ├── config.JobConfigError              the job's settings (file, environment, flags)
    │   ├── collector.CollectorConfigError     the collector's settings (also CollectorError)
    │   ├── sinks.web_config.WebConfigError    the exporter's --web-config-file
    │   ├── spark.sources.SourceConfigError    a Kafka source's options
    │   └── simulate.ScenarioDefinitionError   a scenario (also SimulationError)
    ├── cli.UsageError                         bad input to a subcommand (``field: message``)
    ├── kafka_check.BrokerCheckError  (ConnectionError)  the cluster cannot be used
    │                                          (line: ``kafka: <cause>``)
    ├── kafka_security.SecurityError  (RuntimeError)     keystores, SCRAM users  [1]
    ├── kafka_local.BrokerError                the local broker would not start/stop  [1]
    ├── codec.CodecError                       codec.DecodeError (ValueError) and its kinds
    ├── tracking.TrackingError                 tracking.errors: config, observations,
    │                                          membership events, state (ValueError)
    ├── collector.CollectorError               collector: SnapshotError  [1]
    ├── sinks.SinkError                        TableSchemaError, maintenance.MaintenanceError
    ├── tables.UnknownTableError  (KeyError)     a table name that is not one of the tables'
    ├── simulate.SimulationError               SetupError, MemberFailedError, StepTimeoutError  [1]
    ├── audit.AuditError                       BadTimeError (ValueError), MissingTableError,
    │                                          TimeTravelError, QueryError
    ├── spark.session.SparkSetupError (RuntimeError)     a jar is missing  [1]
    ├── spark.checkpoint.CheckpointFileError  (ValueError)  a job file in the checkpoint
    │   └── spark.buckets.CheckpointLayoutError             its bucket layout
    ├── spark.checkpoint.CheckpointMismatchError         the checkpoint's app id and the
    │                                          tables' Delta transactions disagree
    ├── job.QueryFailedError          (RuntimeError)     the streaming query failed  [1]
    └── spark.stopping.BatchInterrupted                  a stop ended a micro-batch (raised
                                               into Spark, never to a command line)  [1]

    [1] exit_status 1: the input was fine, running it failed.

:func:`cli_command` wraps each subcommand's ``cli_*(argv) -> int`` entry: an argparse usage
error or ``--help`` returns its code, a :class:`RebalanceMonitorError` (or
``assign_core``'s) prints ``<prog>: error: <first line>`` and returns its ``exit_status``,
a broken pipe (``| head``) ends quietly. :class:`ArgumentParser` is the parser every
subcommand uses: its usage errors are one line too (exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from collections.abc import Callable
from typing import NoReturn, ParamSpec

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "ArgumentParser",
    "ConfigError",
    "RebalanceMonitorError",
    "cli_command",
    "error_line",
    "exit_status",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class RebalanceMonitorError(Exception):
    """Root of ``streaming``'s errors. ``exit_status`` is what a command exits with when
    this error ends it (2: bad input or usage; 1: running failed); ``label``, when set,
    goes before the message (``kafka: connection refused``)."""

    exit_status: int = EXIT_USAGE
    label: str | None = None


class ConfigError(RebalanceMonitorError, ValueError):
    """An invalid setting or input; the message starts with the setting's name."""


def _first_line(error: BaseException) -> str:
    for line in str(error).splitlines():
        if line.strip():
            return line.strip()
    return type(error).__name__


def exit_status(error: BaseException) -> int | None:
    """The exit status a command ends with for ``error``; None for an error that is not
    ours (a bug: its traceback is left to Python)."""
    if isinstance(error, RebalanceMonitorError):
        return error.exit_status
    from assign_core.errors import AssignCoreError, AssignmentError

    if isinstance(error, AssignmentError):
        return EXIT_FAILED  # the assignor cannot assign this input (Java would throw)
    if isinstance(error, AssignCoreError):
        return EXIT_USAGE
    return None


def error_line(prog: str, error: BaseException) -> str:
    """``<prog>: error: [label: ]<first line>`` (``cannot assign`` for an assignor's refusal)."""
    from assign_core.errors import AssignmentError

    if isinstance(error, AssignmentError):
        return f"{prog}: cannot assign: {_first_line(error)}"
    label = getattr(error, "label", None)
    return f"{prog}: error: {label + ': ' if label else ''}{_first_line(error)}"


class ArgumentParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (exit 2), no usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


P = ParamSpec("P")


def cli_command(prog: str) -> Callable[[Callable[P, int]], Callable[P, int]]:
    """Decorate a subcommand's entry ``(argv, ...) -> int`` (module docstring)."""

    def wrap(run: Callable[P, int]) -> Callable[P, int]:
        @functools.wraps(run)
        def entry(*args: P.args, **kwargs: P.kwargs) -> int:
            try:
                return run(*args, **kwargs)
            except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
                if exc.code is None:
                    return EXIT_OK
                return exc.code if isinstance(exc.code, int) else EXIT_USAGE
            except BrokenPipeError:  # e.g. piped into `head`: stop quietly
                with contextlib.suppress(OSError, ValueError):
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return EXIT_OK
            except Exception as exc:
                status = exit_status(exc)
                if status is None:
                    raise
                print(error_line(prog, exc), file=sys.stderr, flush=True)
                return status

        return entry

    return wrap
