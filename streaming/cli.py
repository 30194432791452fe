"""The ``rebalance-monitor`` command line (placeholder, filled in by assign_core CLI work)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("rebalance-monitor: no command yet", file=sys.stderr)
    return 2
