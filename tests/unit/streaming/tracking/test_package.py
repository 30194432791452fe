"""Package boundaries: no Spark import, one exception root, validated configuration."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import streaming.tracking as tracking
from streaming.tracking import (
    MembershipEventError,
    ObservationError,
    StateFormatError,
    TrackerConfig,
    TrackerConfigError,
    TrackingError,
)

pytestmark = pytest.mark.unit

PACKAGE = Path(tracking.__file__).resolve().parent


def test_no_pyspark_import() -> None:
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n.split(".")[0] in ("pyspark", "kafka") for n in names), path.name


def test_one_exception_root() -> None:
    for cls in (TrackerConfigError, ObservationError, MembershipEventError, StateFormatError):
        assert issubclass(cls, TrackingError)
        assert issubclass(cls, ValueError)


def test_exports_exist() -> None:
    for name in tracking.__all__:
        assert hasattr(tracking, name), name


@pytest.mark.parametrize(
    "kwargs",
    [
        {"classic_strategies": ("range", "nope")},
        {"classic_strategies": ["range"]},
        {"consumer_strategies": ("uniform", "uniform")},
        {"crash_session_fraction": 0.0},
        {"crash_session_fraction": 1.5},
        {"default_server_assignor": "server-range"},
        {"reconcile_timeout_ms": 0},
        {"commit_history": 1},
        {"end_offset_history": 5000},
        {"max_expected_members": True},
    ],
)
def test_config_is_validated(kwargs: dict[str, object]) -> None:
    with pytest.raises(TrackerConfigError):
        TrackerConfig(**kwargs)  # type: ignore[arg-type]
