"""The bench scripts (``bench/*.py``, not a package) loaded as modules for their tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]


def load_bench(name: str) -> ModuleType:
    """``bench/<name>.py`` as the module ``bench_<name>``."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def steady() -> ModuleType:
    return load_bench("steady")


@pytest.fixture(scope="module")
def stream() -> ModuleType:
    return load_bench("stream")


@pytest.fixture(scope="module")
def live() -> ModuleType:
    return load_bench("live")


@pytest.fixture(scope="module")
def spark_floor() -> ModuleType:
    return load_bench("spark_floor")
