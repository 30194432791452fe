"""One exception root for ``streaming``, and one place mapping errors to exit codes."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import streaming
from streaming.errors import (
    EXIT_FAILED,
    EXIT_USAGE,
    ConfigError,
    RebalanceMonitorError,
    cli_command,
)

pytestmark = pytest.mark.unit

PACKAGE = Path(streaming.__file__).resolve().parent


def _error_classes() -> list[tuple[str, str]]:
    """(module, class) of every class named ``*Error`` defined in ``streaming``."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Error"):
                found.append((module, node.name))
    return found


def test_every_error_derives_from_the_root() -> None:
    classes = _error_classes()
    assert len(classes) > 30
    for module, name in classes:
        if module.startswith(("streaming.spark", "streaming.job", "streaming.audit.queries")):
            pytest.importorskip("pyspark")
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, RebalanceMonitorError), f"{module}.{name}"


def test_config_errors_stay_value_errors() -> None:
    from streaming.collector import CollectorConfigError
    from streaming.config import JobConfigError
    from streaming.sinks.web_config import WebConfigError

    for cls in (JobConfigError, CollectorConfigError, WebConfigError):
        assert issubclass(cls, ConfigError) and issubclass(cls, ValueError)


def test_cli_command_maps_errors_to_one_line_and_a_status(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from streaming.collector import SnapshotError
    from streaming.kafka_check import BrokerCheckError

    cases: list[tuple[BaseException, int, str]] = [
        (ConfigError("--x: bad\nmore"), EXIT_USAGE, "prog: error: --x: bad"),
        (BrokerCheckError("h:1: connection refused"), EXIT_USAGE, "prog: error: kafka: h:1: "),
        (SnapshotError("publish failed"), EXIT_FAILED, "prog: error: publish failed"),
    ]
    for error, status, line in cases:

        @cli_command("prog")
        def fail(error: BaseException = error) -> int:
            raise error

        assert fail() == status
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(line), err


def test_a_bug_keeps_its_traceback() -> None:
    @cli_command("prog")
    def fail() -> int:
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        fail()
