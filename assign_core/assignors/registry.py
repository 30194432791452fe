"""The assignors, registered under their Kafka protocol names.

Client side (classic protocol, run by the group leader): ``range``, ``roundrobin``,
``sticky``, ``cooperative-sticky``. Server side (KIP-848 ``consumer`` protocol, run by the
group coordinator): ``uniform``, ``server-range`` (Kafka calls it ``range`` too; the prefix
keeps the two apart here).
"""

from __future__ import annotations

from importlib import import_module

from assign_core.errors import ScenarioError
from assign_core.model import Assignor

CLIENT_STRATEGIES: tuple[str, ...] = ("range", "roundrobin", "sticky", "cooperative-sticky")
SERVER_STRATEGIES: tuple[str, ...] = ("uniform", "server-range")
STRATEGIES: tuple[str, ...] = CLIENT_STRATEGIES + SERVER_STRATEGIES

_MODULES = {
    "range": ("assign_core.assignors.range", "RangeAssignor"),
    "roundrobin": ("assign_core.assignors.roundrobin", "RoundRobinAssignor"),
    "sticky": ("assign_core.assignors.sticky", "StickyAssignor"),
    "cooperative-sticky": ("assign_core.assignors.cooperative_sticky", "CooperativeStickyAssignor"),
    "uniform": ("assign_core.assignors.uniform", "UniformAssignor"),
    "server-range": ("assign_core.assignors.server_range", "ServerRangeAssignor"),
}


def get_assignor(name: str) -> Assignor:
    """A fresh assignor instance for a strategy name (assignors may keep per-call state)."""
    try:
        module_name, class_name = _MODULES[name]
    except KeyError:
        raise ScenarioError(
            "strategy", f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}"
        ) from None
    cls = getattr(import_module(module_name), class_name)
    assignor: Assignor = cls()
    return assignor
