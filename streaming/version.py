"""What runs: this package's version and those of the runtimes it depends on, from the
installed distributions' metadata (``rebalance-monitor --version``, the
``rebalance_monitor_build_info`` metric, the job's first line)."""

from __future__ import annotations

import platform
from functools import cache
from importlib import metadata

__all__ = ["build_info", "version", "version_line"]

DISTRIBUTION = "rebalance-monitor"


def _installed(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


def version() -> str:
    """This package's version (``unknown`` when it runs without being installed)."""
    return _installed(DISTRIBUTION)


@cache
def build_info() -> dict[str, str]:
    """The labels of ``rebalance_monitor_build_info``: version, python_version,
    pyspark_version, delta_version (the ``delta-spark`` distribution)."""
    return {
        "version": version(),
        "python_version": platform.python_version(),
        "pyspark_version": _installed("pyspark"),
        "delta_version": _installed("delta-spark"),
    }


def version_line() -> str:
    """``rebalance-monitor 0.1.0 (python 3.11.9, pyspark 4.2.0, delta-spark 4.4.1)``."""
    info = build_info()
    return (
        f"{DISTRIBUTION} {info['version']} (python {info['python_version']}, "
        f"pyspark {info['pyspark_version']}, delta-spark {info['delta_version']})"
    )
