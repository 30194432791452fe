"""A test hook: hold the Delta sink at a named point, so a test can kill the job exactly there.

Off unless ``REBALANCE_MONITOR_SINK_PAUSE`` is set (read when a
:class:`~streaming.sinks.delta.DeltaSink` is made); then nothing but a lock and a counter::

    REBALANCE_MONITOR_SINK_PAUSE=<point>[:<table>][@<batch>]   e.g. after-append:partition_lag@7
    REBALANCE_MONITOR_SINK_PAUSE_MARKER=<file>                the file the hook writes

========================  =========================================================================
point                     where the sink is
========================  =========================================================================
``before-append``         a table's Delta append is about to start; the batch's other tables go on
``after-append``          a table's append has committed (its ``txnVersion`` too); the others go on
``after-batch``           every table of the batch has committed; Spark has not yet recorded the
                          batch as done (its commit log), so a restart re-runs it
``maintenance``           a maintenance cycle (:mod:`streaming.sinks.maintenance`) has committed a
                          table's compaction and not yet clustered or vacuumed it; ``@<n>`` counts
                          the run's cycles from 0, not micro-batches; the micro-batches go on
========================  =========================================================================

The first time the point is reached, for ``table`` (or for any table) in a micro-batch whose
id is ``batch`` or more (default 0), the hook writes the marker (one JSON object: point,
table, batch id, pid; written beside it and renamed, so a reader never sees half of it) and
sleeps until the process is killed. ``tests/spark/test_restart.py`` kills the job there with
SIGKILL and checks that the restarted job's tables equal an uninterrupted run's.

Errors: :class:`PauseSpecError` (a :class:`~streaming.sinks.SinkError`) names the variable
and the part of it that is wrong.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from streaming.sinks import SinkError

__all__ = ["MARKER_ENV", "PAUSE_ENV", "POINTS", "PausePoint", "PauseSpecError", "Pauser"]

PAUSE_ENV = "REBALANCE_MONITOR_SINK_PAUSE"
MARKER_ENV = "REBALANCE_MONITOR_SINK_PAUSE_MARKER"

Point = Literal["before-append", "after-append", "after-batch", "maintenance"]
POINTS: tuple[Point, ...] = ("before-append", "after-append", "after-batch", "maintenance")


class PauseSpecError(SinkError, ValueError):
    """``REBALANCE_MONITOR_SINK_PAUSE`` (or its marker) is malformed; the message says how."""


@dataclass(frozen=True)
class PausePoint:
    """Where to hold the sink: at ``point``, for ``table`` (``None``: any), in the first
    micro-batch from ``batch_id`` on that reaches it."""

    point: Point
    table: str | None = None
    batch_id: int = 0

    @classmethod
    def parse(cls, spec: str) -> PausePoint:
        """``<point>[:<table>][@<batch>]`` (module docstring)."""
        rest, at, batch_text = spec.strip().partition("@")
        point, _, table = rest.partition(":")
        if point not in POINTS:
            raise PauseSpecError(
                f"{PAUSE_ENV}={spec!r}: point {point!r} is not one of {', '.join(POINTS)}"
            )
        if point == "after-batch" and table:
            raise PauseSpecError(f"{PAUSE_ENV}={spec!r}: after-batch takes no table")
        batch_id = 0
        if at:
            try:
                batch_id = int(batch_text)
            except ValueError:
                batch_id = -1
            if batch_id < 0:
                raise PauseSpecError(f"{PAUSE_ENV}={spec!r}: @{batch_text} is not a batch id >= 0")
        return cls(point, table or None, batch_id)


class Pauser:
    """Holds the sink once, where :class:`PausePoint` says (or never)."""

    def __init__(self, where: PausePoint | None = None, marker: Path | None = None) -> None:
        if where is not None and marker is None:
            raise PauseSpecError(f"{PAUSE_ENV} is set but {MARKER_ENV} is not")
        self.where = where
        self.marker = marker
        self._held = False
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Pauser:
        """The pauser the environment asks for (module docstring); a no-op when unset."""
        env = os.environ if environ is None else environ
        spec = env.get(PAUSE_ENV, "")
        if not spec:
            return cls()
        marker = env.get(MARKER_ENV, "")
        return cls(PausePoint.parse(spec), Path(marker) if marker else None)

    def reach(self, point: Point, batch_id: int, table: str | None = None) -> None:
        """The sink is at ``point`` (of ``table``) in micro-batch ``batch_id`` (maintenance:
        in cycle ``batch_id``): return at once, unless this is the occurrence to hold (then
        never return)."""
        where = self.where
        if where is None or where.point != point or batch_id < where.batch_id:
            return
        if where.table is not None and where.table != table:
            return
        with self._lock:  # the appends run side by side: one of them holds, the rest go on
            if self._held:
                return
            self._held = True
        self._hold(point, batch_id, table)

    def _hold(self, point: Point, batch_id: int, table: str | None) -> None:
        assert self.marker is not None  # __init__
        text = json.dumps(
            {"point": point, "table": table, "batch_id": batch_id, "pid": os.getpid()}
        )
        partial = self.marker.with_name(f".{self.marker.name}.{os.getpid()}")
        partial.write_text(text + "\n", encoding="utf-8")
        partial.replace(self.marker)
        while True:  # until SIGKILL
            time.sleep(3600)
