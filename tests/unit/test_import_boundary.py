"""Import boundaries: ``assign_core`` is pure Python (importing any of its modules never loads
Spark); the Spark adapter does not reach into the sinks."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import assign_core

pytestmark = pytest.mark.unit


def _modules() -> list[str]:
    root = Path(assign_core.__file__).parent
    return [m.name for m in pkgutil.walk_packages([str(root)], prefix="assign_core.")]


def test_assign_core_modules_exist() -> None:
    assert "assign_core.model" in _modules()


def test_importing_assign_core_never_loads_spark() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_no_spark_import_statement_in_assign_core() -> None:
    root = Path(assign_core.__file__).parent
    offenders = [
        str(p)
        for p in root.rglob("*.py")
        if any(
            line.lstrip().startswith(
                ("import pyspark", "from pyspark", "import delta", "from delta")
            )
            for line in p.read_text().splitlines()
        )
    ]
    assert offenders == []


def _imported_names(path: Path) -> list[str]:
    """Every module an ``import`` or ``from ... import`` of ``path`` names, at any depth."""
    import ast

    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return names


def test_the_spark_adapter_never_imports_the_sinks() -> None:
    """``streaming.spark`` turns records into rows; the sinks take rows on to Delta and
    Prometheus. The rows' types are :mod:`streaming.tables`', shared by both."""
    import streaming.spark

    root = Path(streaming.spark.__file__).parent
    offenders = {
        f"{p.name}: {name}"
        for p in root.rglob("*.py")
        for name in _imported_names(p)
        if name == "streaming.sinks" or name.startswith("streaming.sinks.")
    }
    assert offenders == set()
    code = (
        "import importlib, pkgutil, sys, streaming.spark as s\n"
        "for m in pkgutil.walk_packages(s.__path__, 'streaming.spark.'):\n"
        "    importlib.import_module(m.name)\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith('streaming.sinks'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
