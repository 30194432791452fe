"""Pure per-group tracking: ``__consumer_offsets`` records and collector events in,
rebalance events, assignment/metrics rows, offset and lag rows out.

Pipeline of one ``apply`` call (one group, one micro-batch)::

    Observation(source, partition, offset, timestamp_ms, payload)      model.py
      payload: codec Record (streaming.codec) | GroupSnapshot | TopicsSnapshot
               (membership.parse_membership_event)
        │
    apply(state, observations, now_ms, config=...)                      reducer.py
      ├─ order: offset order per source partition, merged by time; skip re-applied
      ├─ GroupMetadata (classic)            classic.py ─┐
      ├─ KIP-848 records 3-8, 16            consumer.py ─┤→ causes.py   (rule table)
      │                                                  ├→ expected.py (assign_core)
      │                                                  └→ rebalance.py (event, rows)
      ├─ OffsetCommit / tombstones, collector snapshots  → lag.py, keep.py
      └─ GroupStatus
        │
    (GroupState, [RebalanceEvent | MemberAssignmentRow | GroupMetricsRow |
                  OffsetCommitRow | PartitionLagRow | GroupLagRow | LagTransitionRow |
                  GroupDeleted | GroupStatus])
                                                                        state.py, events.py

A group's observations that are all quiet commit runs (the reducer would only record them)
may skip ``apply``: ``fold.py`` says which, and leaves the state ``apply`` would.

``GroupState`` serializes to a compact, versioned JSON-able dict (``to_dict``/``from_dict``,
``to_json``/``from_json``); the Spark adapter keys it by group id and keeps it as a string.
No pyspark import anywhere in this package. ``docs/tracking.md`` documents the rules.

Exceptions (``errors.py``)::

    TrackingError                  root
    ├── TrackerConfigError         an invalid TrackerConfig (also ValueError)
    ├── ObservationError           an envelope that cannot be applied (adapter bug)
    ├── MembershipEventError       a malformed collector event; names the field
    └── StateFormatError           an unreadable serialized state; names the field
"""

from streaming.tracking.config import DEFAULT_CONFIG, TrackerConfig
from streaming.tracking.errors import (
    MembershipEventError,
    ObservationError,
    StateFormatError,
    TrackerConfigError,
    TrackingError,
)
from streaming.tracking.events import (
    GroupDeleted,
    GroupLagRow,
    GroupMetricsRow,
    GroupStatus,
    LagTransitionRow,
    MemberAssignmentRow,
    OffsetCommitRow,
    PartitionLagRow,
    RebalanceEvent,
    TrackerEvent,
    from_row,
    to_row,
)
from streaming.tracking.membership import parse_membership_event, parse_membership_json
from streaming.tracking.model import (
    GroupSnapshot,
    Observation,
    TopicsSnapshot,
    UnsupportedEvent,
    group_id_of,
    routing_keys,
)
from streaming.tracking.reducer import apply
from streaming.tracking.state import STATE_VERSION, GroupState

__all__ = [
    "DEFAULT_CONFIG",
    "STATE_VERSION",
    "GroupDeleted",
    "GroupLagRow",
    "GroupMetricsRow",
    "GroupSnapshot",
    "GroupState",
    "GroupStatus",
    "LagTransitionRow",
    "MemberAssignmentRow",
    "MembershipEventError",
    "Observation",
    "ObservationError",
    "OffsetCommitRow",
    "PartitionLagRow",
    "RebalanceEvent",
    "StateFormatError",
    "TopicsSnapshot",
    "TrackerConfig",
    "TrackerConfigError",
    "TrackerEvent",
    "TrackingError",
    "UnsupportedEvent",
    "apply",
    "from_row",
    "group_id_of",
    "parse_membership_event",
    "parse_membership_json",
    "routing_keys",
    "to_row",
]
