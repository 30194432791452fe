"""Lag of a committed offset, in records and in seconds, from the end-offset history.

A partition's *end-offset history* is a short list of ``(ts_ms, end_offset)`` points, one
per collector snapshot (ListOffsets ``LATEST`` read at ``end_offsets_ts_ms``), sorted by
time. Rules (numbered as in ``tests/unit/streaming/tracking/test_lag.py``):

L1. ``lag_records = max(0, end_offset - committed)`` with the newest end offset; never
    negative (the end offset may be older than the commit).
L2. ``lag_seconds`` is how long before the measurement time the partition's end offset
    passed the committed offset, i.e. ``measured_ts - t(committed)`` where ``t(o)`` is
    linear interpolation between the newest point with ``end_offset <= o`` and the next
    point (as kafka-lag-exporter does). Committed at or past the newest end offset:
    0 s (``caught_up``).
L3. Committed below every point: extrapolate ``t(o)`` backwards with the average rate of the
    whole history (``extrapolated``); with no rate (one point, or no progress), the age of
    the oldest point is a lower bound (``lower_bound``). No history: ``unknown``.
L4. ``lag_seconds`` is never negative.
L5. Adding a point: same timestamp replaces; an end offset below the previous one (topic
    re-created, log truncated) restarts the history; within a run of equal end offsets
    only the first and the last point are kept (the interpolation needs exactly those).
L6. Thinning: beyond ``max_points`` the interior point whose neighbours are closest in time
    *relative to its age* is dropped, so recent history stays dense and old history
    sparse; the oldest and newest points always stay.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from streaming.tracking.events import LagMethod

__all__ = ["Point", "add_point", "lag_records", "lag_seconds"]

Point = tuple[int, int]
"""``(ts_ms, end_offset)``."""


def lag_records(end_offset: int | None, committed: int) -> int | None:
    """L1: records between the committed offset and the end offset, never negative."""
    if end_offset is None:
        return None
    return max(0, end_offset - committed)


def _thin(points: list[Point]) -> None:
    newest = points[-1][0]
    best_i = 1
    best_score = float("inf")
    for i in range(1, len(points) - 1):
        span = points[i + 1][0] - points[i - 1][0]
        age = max(1, newest - points[i][0])
        score = span / age
        if score < best_score:
            best_score = score
            best_i = i
    del points[best_i]


def add_point(
    history: Sequence[Point], ts_ms: int, end_offset: int, max_points: int
) -> tuple[Point, ...]:
    """The history with one more point (L5, L6). Points older than the newest are inserted
    in time order (a late snapshot)."""
    points = list(history)
    if points and ts_ms > points[-1][0]:
        last_off = points[-1][1]
        if end_offset < last_off:
            return ((ts_ms, end_offset),)
        if end_offset == last_off and len(points) >= 2 and points[-2][1] == last_off:
            points[-1] = (ts_ms, end_offset)  # extend a flat run: keep first and last
        else:
            points.append((ts_ms, end_offset))
    else:
        # the first point, or a late one: insert it in time order unless it contradicts
        # its neighbours (end offsets never decrease within one history)
        i = bisect_left([t for t, _ in points], ts_ms)
        replace = i < len(points) and points[i][0] == ts_ms
        after = i + 1 if replace else i
        if (i > 0 and end_offset < points[i - 1][1]) or (
            after < len(points) and end_offset > points[after][1]
        ):
            return tuple(points)
        if replace:
            points[i] = (ts_ms, end_offset)
        else:
            points.insert(i, (ts_ms, end_offset))
    while len(points) > max_points:
        _thin(points)
    return tuple(points)


def lag_seconds(
    history: Sequence[Point], committed: int, measured_ts_ms: int
) -> tuple[float | None, LagMethod]:
    """L2-L4: seconds since the end offset passed ``committed``, and how it was found."""
    if not history:
        return None, "unknown"
    newest_ts, newest_off = history[-1]
    if committed >= newest_off:
        return 0.0, "caught_up"
    t_c: float
    method: LagMethod
    oldest_ts, oldest_off = history[0]
    if committed < oldest_off:
        if newest_off > oldest_off and newest_ts > oldest_ts:
            rate = (newest_off - oldest_off) / (newest_ts - oldest_ts)  # records per ms
            t_c = oldest_ts - (oldest_off - committed) / rate
            method = "extrapolated"
        else:
            t_c = oldest_ts
            method = "lower_bound"
    else:
        i = len(history) - 1
        while history[i][1] > committed:
            i -= 1
        left_ts, left_off = history[i]
        right_ts, right_off = history[i + 1]
        t_c = left_ts + (committed - left_off) * (right_ts - left_ts) / (right_off - left_off)
        method = "interpolated"
    return max(0.0, (measured_ts_ms - t_c) / 1000.0), method
