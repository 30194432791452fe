"""The README's layout section names every package, module and benchmark of the tree, and
no Python file or folder that is not in it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def _layout() -> str:
    readme = (REPO / "README.md").read_text()
    found = re.search(r"^## Layout\n+```\n(.*?)^```", readme, re.M | re.S)
    assert found is not None, "README.md has no ## Layout block"
    return found.group(1)


def _tracked() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    return [Path(line) for line in out.splitlines()]


def _names() -> list[str]:
    """What the layout must name: each subpackage of assign_core and streaming (``name/``),
    each of their modules (its stem; those of a private package such as ``_sticky_common/``
    need not be named), each bench script."""
    out: list[str] = []
    for path in _tracked():
        if path.parts[0] in ("assign_core", "streaming") and path.suffix == ".py":
            if path.name == "__init__.py":
                if len(path.parts) > 2:
                    out.append(path.parent.name + "/")
            elif not path.parent.name.startswith("_"):
                out.append(path.stem)
        elif path.parts[0] == "bench" and path.suffix == ".py":
            out.append(path.name)
    return out


def test_the_layout_names_every_package_module_and_benchmark() -> None:
    layout = _layout()
    missing = [
        name for name in _names() if not re.search(rf"(?<![\w/]){re.escape(name)}(?!\w)", layout)
    ]
    assert missing == []


def test_the_layout_names_nothing_that_is_gone() -> None:
    """Each ``name.py`` and ``name/`` the layout spells (a path's first part; not the
    untracked ``.cache/``) is a tracked file's stem or folder."""
    named = set(re.findall(r"(?<![\w./])([a-z_][a-z0-9_]*)(?:\.py\b|/)", _layout()))
    assert "assign_core" in named and "job" in named
    stems = {p.stem for p in _tracked() if p.suffix == ".py"}
    folders = {part for p in _tracked() for part in p.parts[:-1]}
    assert sorted(named - stems - folders) == []
