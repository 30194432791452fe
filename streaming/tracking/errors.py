"""Errors raised by ``streaming.tracking``.

Hierarchy::

    TrackingError                  root of every error of this package
    ├── TrackerConfigError         (also ValueError) an invalid TrackerConfig
    ├── ObservationError           (also ValueError) an envelope that cannot be applied: wrong
    │                              source/payload pairing, or a record of another group
    ├── MembershipEventError       (also ValueError) a collector JSON event that does not
    │                              parse; names the offending field
    └── StateFormatError           (also ValueError) a serialized GroupState that cannot be
                                   read (unknown version, bad field); names the field

Records that are valid but not useful (unknown record types, share/streams groups, stale or
duplicate records, events of an unknown schema version) are not errors: the reducer skips
them and counts them in ``GroupState.counters``.
"""

from __future__ import annotations

from streaming.errors import RebalanceMonitorError

__all__ = [
    "MembershipEventError",
    "ObservationError",
    "StateFormatError",
    "TrackerConfigError",
    "TrackingError",
]


class TrackingError(RebalanceMonitorError):
    """Root of every error raised by ``streaming.tracking``."""


class TrackerConfigError(TrackingError, ValueError):
    """A :class:`~streaming.tracking.config.TrackerConfig` value is invalid."""


class ObservationError(TrackingError, ValueError):
    """An observation cannot be applied to this group (an adapter bug, not bad data)."""


class _FieldError(TrackingError, ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class MembershipEventError(_FieldError):
    """A membership event (collector JSON) is malformed; ``field`` names where."""


class StateFormatError(_FieldError):
    """A serialized group state is unreadable; ``field`` names where."""
