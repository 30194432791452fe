"""When the tracker forgets a group: its state dropped, its series removed.

A long-running job keeps a state per group it has seen; groups come and go (console
consumers, a Spark source's own ``spark-kafka-source-*`` group after every restart), so a
dead group's state must go, or every micro-batch keeps paying for it. Time is record time
(:mod:`streaming.spark.stateful`): no wall clock, so the rules give the same result live, on a
backfill and on a replayed batch.

====  =======================================================  ==============================
rule  when                                                     then
====  =======================================================  ==============================
F1    a group tombstone deletes the group (``GroupDeleted``,   the state starts again empty at
      reason ``deleted``: DeleteGroups or expiry)              the tombstone (a group made
                                                               after it in the batch is new);
                                                               with nothing after it, the
                                                               state is dropped
F2    the tombstone converts the group to the other protocol   kept (the group goes on)
      (``converted``) or a new group restarts the generations
      (``recreated``)
F3    no record of the group in ``__consumer_offsets`` and no  dropped, with a ``GroupDeleted``
      collector snapshot listing it for ``idle_ms`` of record  (reason ``forgotten``) so the
      time (the newest record time of the batch that holds    exporter removes its series
      the group's bucket); ``idle_ms``:
      ``TrackerConfig.group_idle_ms``, a week; 0: never
F4    a record or a snapshot within ``idle_ms``                kept
====  =======================================================  ==============================
"""

from __future__ import annotations

from streaming.tracking.events import GroupDeleted, GroupProtocol, event_id
from streaming.tracking.state import GroupState

__all__ = [
    "FORGOTTEN",
    "forgets",
    "forgotten",
    "is_idle",
    "last_activity_ms",
]

#: The ``GroupDeleted`` reason of F3.
FORGOTTEN = "forgotten"


def forgets(event: object) -> bool:
    """F1/F2: whether ``event`` is a tombstone after which the group's state starts again."""
    return isinstance(event, GroupDeleted) and event.reason == "deleted"


def last_activity_ms(state: GroupState) -> int | None:
    """The record time the group was last seen: its newest ``__consumer_offsets`` record or
    the newest collector snapshot listing it (None: neither)."""
    seen = [t for t in (state.last_record_ts_ms, state.collector.last_ts_ms) if t is not None]
    return max(seen) if seen else None


def is_idle(last_ms: int | None, now_ms: int, idle_ms: int) -> bool:
    """F3/F4: a group last seen at ``last_ms`` is forgotten at ``now_ms``."""
    return idle_ms > 0 and last_ms is not None and now_ms - last_ms >= idle_ms


def forgotten(state: GroupState, now_ms: int) -> GroupDeleted:
    """F3's event for ``state``'s group, forgotten at ``now_ms`` (the same id on a replay)."""
    last = last_activity_ms(state)
    protocol: GroupProtocol = "consumer" if state.kind == "consumer" else "classic"
    generation = (
        state.consumer.last_epoch
        if state.consumer is not None
        else state.classic.generation
        if state.classic is not None
        else None
    )
    return GroupDeleted(
        event_id=event_id(FORGOTTEN, state.cluster, state.group_id, last),
        cluster=state.cluster,
        group_id=state.group_id,
        event_ts_ms=now_ms,
        group_protocol=protocol,
        last_generation=generation,
        reason=FORGOTTEN,
        source_partition=-1,
        source_offset=-1,
    )
