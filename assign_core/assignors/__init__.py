"""Kafka's partition assignors, one module per assignor (see :mod:`.registry`)."""

from assign_core.assignors.registry import (
    CLIENT_STRATEGIES,
    SERVER_STRATEGIES,
    STRATEGIES,
    get_assignor,
)

__all__ = ["CLIENT_STRATEGIES", "SERVER_STRATEGIES", "STRATEGIES", "get_assignor"]
