"""Go programs of the test tiers (``tests/franzgo``, ``tests/sarama``): built with ``go`` into
``.cache``, the module and build caches there too; a test that needs one is skipped without
``go``."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def build(module: str, binary: str, package: str = ".") -> Path:
    """``go build`` of ``package`` of the Go module ``tests/<module>`` into
    ``.cache/<binary>``; the calling test is skipped without ``go``."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not installed")
    env = {
        **os.environ,
        "GOFLAGS": "-mod=mod",
        "GOPATH": str(ROOT / ".cache" / "go"),
        "GOCACHE": str(ROOT / ".cache" / "go-build"),
    }
    out = ROOT / ".cache" / binary
    subprocess.run(
        [go, "build", "-o", str(out), package],
        cwd=ROOT / "tests" / module,
        env=env,
        check=True,
        timeout=600,
    )
    return out
