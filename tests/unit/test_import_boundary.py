"""``assign_core`` is pure Python: importing any of its modules never loads Spark."""

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
