"""Errors raised by ``assign_core``.

Hierarchy::

    AssignCoreError
    ├── ScenarioError          bad input: names the offending field (CLI exit 2)
    └── AssignmentError        the assignor cannot assign (Java: IllegalStateException,
                               PartitionAssignorException)
"""

from __future__ import annotations


class AssignCoreError(Exception):
    """Root of every error raised by ``assign_core``."""


class ScenarioError(AssignCoreError, ValueError):
    """A scenario (group membership description) is invalid.

    ``field`` is a JSON-path-like name of the offending field, e.g. ``members[2].topics``.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class AssignmentError(AssignCoreError):
    """The assignor cannot produce an assignment for this input (Java would throw)."""
