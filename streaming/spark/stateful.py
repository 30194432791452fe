"""The Spark adapter of the tracker: per-group state on RocksDB, rows in, tracker events out.

::

    good rows (streaming.spark.decode)         source, partition, offset, timestamp_ms, key,
        │  groupBy("group_id")                 value, group_id (routed rows only)
        ▼
    transformWithStateInPandas(GroupTracker)   per group: ValueState ``group`` = the
        │                                      GroupState JSON (GroupState.to_json); rows ->
        │                                      Observations -> reducer.apply -> events
        ▼
    EVENTS_SCHEMA rows                         cluster, group_id, kind, event_id,
                                               event_ts_ms, payload (to_row as JSON)

Why ``transformWithStateInPandas`` and not ``applyInPandasWithState``: it is the
RocksDB-backed state API v2 (state variables have their own schema and can be changed and
evicted independently), it is the API Spark develops (v1 is frozen), and it is known to
work on this stack (pyspark 4.2.0, RocksDB, protobuf).

Time is the records' time, not the clock (``timeMode="None"``, no timers). The reducer's
``now_ms`` is the latest logical time of the group's observations (record timestamp, or a
collector snapshot's time), so a KIP-848 reconciliation that exceeds
``reconcile_timeout_ms`` is emitted as ``timed_out`` with the group's next observation past
the deadline (the collector snapshots every group every few seconds, so that is soon after
it) and always with ``completed_ts_ms`` = the deadline. Two reasons against processing-time
timers, both measured on this stack: in ``ProcessingTime`` mode Spark's
``TransformWithStateExec.shouldRunAnotherBatch`` is always true, so the query runs an empty
micro-batch at every trigger forever (a core kept busy on an idle cluster, and
``processAllAvailable``/``availableNow`` never finish); and a wall-clock ``now`` makes the
output depend on when the records are processed (a backfill would judge every old
reconciliation as timed out), while record time gives the same rows live, on backfill and
after a restart from the checkpoint.

The adapter only converts (STYLE habit 8): rows -> :class:`~streaming.tracking.model.
Observation` (re-decoding the raw bytes, see :mod:`streaming.spark.decode` for the
measurement), the stored JSON <-> :class:`~streaming.tracking.state.GroupState`, and events
-> rows with :func:`~streaming.tracking.events.to_row`. Ordering is the reducer's job
(``reducer.ordered``: offset order per source partition, merged by logical time), so rows
are handed over as Spark delivers them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from streaming.spark.decode import observation_of
from streaming.tracking.config import DEFAULT_CONFIG, TrackerConfig
from streaming.tracking.events import to_row
from streaming.tracking.model import Observation
from streaming.tracking.state import GroupState

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.stateful_processor import StatefulProcessorHandle, TimerValues

__all__ = [
    "EVENTS_SCHEMA",
    "STATE_SCHEMA",
    "Reducer",
    "event_row",
    "events_to_rows",
    "load_reducer",
    "logical_now_ms",
    "rows_to_observations",
    "track",
]

EVENTS_SCHEMA = (
    "cluster string, group_id string, kind string, event_id string, "
    "event_ts_ms bigint, payload string"
)
_EVENT_COLUMNS = ("cluster", "group_id", "kind", "event_id", "event_ts_ms", "payload")
STATE_SCHEMA = "state string"

#: ``apply(state, observations, now_ms) -> (state, events)``, the pure reducer.
Reducer = Callable[[GroupState, Sequence[Observation], int], tuple[GroupState, Sequence[Any]]]


def load_reducer(config: TrackerConfig = DEFAULT_CONFIG) -> Reducer:
    """:func:`streaming.tracking.reducer.apply` with ``config`` bound."""
    from streaming.tracking.reducer import apply

    def bound(
        state: GroupState, observations: Sequence[Observation], now_ms: int
    ) -> tuple[GroupState, Sequence[Any]]:
        return apply(state, observations, now_ms, config=config)

    return bound


# -- pure conversions ------------------------------------------------------------------------


def rows_to_observations(frames: Iterable[pd.DataFrame]) -> tuple[list[Observation], int]:
    """Observations of the decoded rows, and how many could not be rebuilt (the decode
    stage quarantined them already; a mismatch here means a code change between stages)."""
    out: list[Observation] = []
    failed = 0
    for frame in frames:
        for source, partition, offset, ts_ms, key, value in zip(
            frame["source"],
            frame["partition"],
            frame["offset"],
            frame["timestamp_ms"],
            frame["key"],
            frame["value"],
            strict=True,
        ):
            try:
                out.append(
                    observation_of(
                        source,
                        None if key is None else bytes(key),
                        None if value is None else bytes(value),
                        partition=int(partition),
                        offset=int(offset),
                        timestamp_ms=int(ts_ms),
                    )
                )
            except Exception:
                failed += 1
    return out, failed


def event_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """One tracker row (``to_row`` dict) as an :data:`EVENTS_SCHEMA` dict (payload: the row
    as JSON)."""
    return {
        "cluster": row.get("cluster"),
        "group_id": row.get("group_id"),
        "kind": row["kind"],
        "event_id": row["event_id"],
        "event_ts_ms": int(row["event_ts_ms"]),
        "payload": json.dumps(row, separators=(",", ":"), default=str),
    }


def events_to_rows(events: Iterable[Any]) -> list[dict[str, Any]]:
    """Tracker events -> :data:`EVENTS_SCHEMA` dicts."""
    return [event_row(to_row(event)) for event in events]


def logical_now_ms(state: GroupState, observations: Sequence[Observation]) -> int:
    """The group's "now": the latest logical time of its observations, never before the
    last record the state has seen."""
    latest = max((o.logical_ts_ms for o in observations), default=0)
    return max(latest, state.last_record_ts_ms or 0)


# -- the processor ---------------------------------------------------------------------------


def _processor_class() -> type:
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class GroupTracker(StatefulProcessor):
        """One group's tracker: its state in a ValueState, time from its records."""

        def __init__(self, cluster: str, config: TrackerConfig) -> None:
            self._cluster = cluster
            self._config = config

        def init(self, handle: StatefulProcessorHandle) -> None:
            self._handle = handle
            self._state = handle.getValueState("group", STATE_SCHEMA)
            self._apply = load_reducer(self._config)

        def handleInputRows(
            self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
        ) -> Iterator[pd.DataFrame]:
            observations, _failed = rows_to_observations(rows)
            yield self._step(key[0], observations)

        def close(self) -> None:
            pass

        def _step(self, group_id: str, observations: list[Observation]) -> Any:
            import pandas as pd  # type: ignore[import-untyped, unused-ignore]

            stored = self._state.get() if self._state.exists() else None
            state = (
                GroupState.from_json(stored[0])
                if stored
                else GroupState.new(self._cluster, group_id)
            )
            state, events = self._apply(state, observations, logical_now_ms(state, observations))
            if state.is_empty():
                self._state.clear()
            else:
                self._state.update((state.to_json(),))
            return pd.DataFrame(events_to_rows(events), columns=list(_EVENT_COLUMNS))

    return GroupTracker


def track(good: DataFrame, *, cluster: str, config: TrackerConfig = DEFAULT_CONFIG) -> DataFrame:
    """The routed good rows -> tracker events (:data:`EVENTS_SCHEMA`), state per group id."""
    from pyspark.sql import functions as F

    routed = good.where(F.col("group_id").isNotNull()).select(
        "group_id", "source", "partition", "offset", "timestamp_ms", "key", "value"
    )
    processor = _processor_class()(cluster, config)
    return routed.groupBy("group_id").transformWithStateInPandas(
        statefulProcessor=processor,
        outputStructType=EVENTS_SCHEMA,
        outputMode="Append",
        timeMode="None",
    )
