"""Lag status: is a partition's consumer keeping up? Burrow's verdicts, from the tracker's state.

The statuses are Burrow's (linkedin/Burrow, ``core/internal/evaluator``), so operators who know
them know these: a partition is ``OK``, ``WARN`` (committing, but the lag does not shrink),
``STOP`` (lagging and no longer committing), ``STALL`` (committing the same offset while
lagging) or ``REWIND`` (committed an offset below an earlier one and has not caught up with
it); a group is ``OK``, ``WARN`` or ``ERR`` (some partition is ``STOP``/``STALL``/``REWIND``).

The evaluation reads what the tracker already keeps per partition (no per-commit step): the
newest commits (``(commit_ts_ms, offset)``, at most ``commit_history`` of them, from the
commit lane's runs) and the end-offset history (``(ts_ms, end_offset)``, one point per
collector snapshot). It runs at a *record* time ``now_ms`` (a lag row's measurement time,
the group's logical now), never the wall clock, so a backfill gives the verdicts the live
job gave. The *window* is the commits with ``now_ms - window_ms < commit_ts_ms <= now_ms``;
``allowed_lag`` is the lag (records) still counted as caught up (Burrow's ``allowed-lag``).

The lag *at a commit* is the end offset at the commit's time, interpolated linearly between
the history's points (the newest point's value after it; unknown before the first point),
minus the committed offset, never negative. The current lag is the newest end offset at or
before ``now_ms`` minus the committed offset.

Rules, in order; the first that applies decides (``docs/tracking.md``, "Lag status"; proven
by the table in ``tests/unit/streaming/tracking/test_lag_status.py``):

S1. No end offset at or before ``now_ms``: no verdict (``None``).
S2. Current lag <= ``allowed_lag``: ``OK``.
S3. ``STOP`` when the consumer stopped committing: the window holds no commit, or the time
    since its last commit exceeds the time its commits span (``now - last > last - first``)
    -- unless the committed offset is at or past an end offset seen within the window (what
    was written a window ago is consumed: its time lag is shorter than the window).
S4. ``REWIND`` when a commit in the window is below the one before it and no later commit in
    the window gets back to that earlier offset.
S5. ``OK`` when the lag at some commit in the window was <= ``allowed_lag`` (it caught up
    within the window).
S6. ``STALL`` when the window holds two or more commits, all of the same offset.
S7. ``WARN`` when the lags at the window's commits (those known, at least one) never
    decrease from one to the next.
S8. Otherwise ``OK`` (the lag is shrinking).

The tracker records a partition's new status (``lag_transitions``) only once it has lasted
``lag_status_hold_ms`` (:func:`streaming.tracking.reducer._held`); this module judges the
moment.

Group status (G1): the worst of its partitions' statuses, ``STOP``/``STALL``/``REWIND``
counted as ``ERR`` (``OK`` < ``WARN`` < ``ERR``); ``None`` when no partition has a verdict.

Codes (the value of the ``kafka_consumergroup_status`` and
``kafka_consumergroup_partition_status`` gauges): Burrow's own numbers, :data:`STATUS_CODES`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from operator import itemgetter
from typing import Literal

__all__ = [
    "GROUP_STATUSES",
    "PARTITION_STATUSES",
    "STATUS_CODES",
    "GroupLagStatus",
    "PartitionLagStatus",
    "Verdict",
    "end_offset_at",
    "evaluate_partition",
    "group_status",
]

PartitionLagStatus = Literal["OK", "WARN", "STOP", "STALL", "REWIND"]
GroupLagStatus = Literal["OK", "WARN", "ERR"]

PARTITION_STATUSES: tuple[str, ...] = ("OK", "WARN", "STOP", "STALL", "REWIND")
GROUP_STATUSES: tuple[str, ...] = ("OK", "WARN", "ERR")
#: Burrow's ``StatusConstant`` numbers (0, ``NOTFOUND``, is never exported: no series).
STATUS_CODES: dict[str, int] = {
    "OK": 1,
    "WARN": 2,
    "ERR": 3,
    "STOP": 4,
    "STALL": 5,
    "REWIND": 6,
}
_GROUP_RANK = {"OK": 0, "WARN": 1, "ERR": 2}


@dataclass(frozen=True, slots=True)
class Verdict:
    """A partition's status and the rule (1-8, ``S<rule>``) that decided it."""

    status: PartitionLagStatus
    rule: int


_time = itemgetter(0)


def end_offset_at(history: Sequence[tuple[int, int]], ts_ms: int) -> float | None:
    """The end offset at ``ts_ms``: linear between the surrounding points, the newest
    point's value after it, ``None`` before the first point (``history`` oldest first, as
    :func:`~streaming.tracking.lag.add_point` keeps it; found by bisection)."""
    i = bisect_right(history, ts_ms, key=_time) - 1
    if i < 0:
        return None
    if i == len(history) - 1:
        return float(history[-1][1])
    (t0, o0), (t1, o1) = history[i], history[i + 1]
    return o0 + (o1 - o0) * (ts_ms - t0) / (t1 - t0)


#: One verdict per rule: values, shared by every partition judged.
_VERDICTS: dict[int, Verdict] = {
    2: Verdict("OK", 2),
    3: Verdict("STOP", 3),
    4: Verdict("REWIND", 4),
    5: Verdict("OK", 5),
    6: Verdict("STALL", 6),
    7: Verdict("WARN", 7),
    8: Verdict("OK", 8),
}


def evaluate_partition(
    commits: Sequence[tuple[int, int]],
    committed: int,
    end_offsets: Sequence[tuple[int, int]],
    now_ms: int,
    *,
    window_ms: int,
    allowed_lag: int = 0,
) -> Verdict | None:
    """The status of one partition at ``now_ms`` (module docstring, rules S1-S8).

    ``commits``: ``(commit_ts_ms, offset)`` oldest first (any length: the window is cut
    here); ``committed``: the partition's committed offset; ``end_offsets``: the end-offset
    history, oldest first (as ``add_point`` keeps it): the points known at ``now_ms`` are a
    prefix of it, and those within the window a suffix of that prefix."""
    if end_offsets and end_offsets[-1][0] <= now_ms:
        known = end_offsets
    else:
        known = end_offsets[: bisect_right(end_offsets, now_ms, key=_time)]
        if not known:
            return None  # S1
    if known[-1][1] - committed <= allowed_lag:
        return _VERDICTS[2]  # S2
    start = now_ms - window_ms
    window = [c for c in commits if start < c[0] <= now_ms]
    caught_up_lately = False  # an end offset seen within the window is consumed
    for t, end in reversed(known):
        if t <= start:
            break
        if end <= committed:
            caught_up_lately = True
            break
    if not caught_up_lately and (
        not window or now_ms - window[-1][0] > window[-1][0] - window[0][0]
    ):
        return _VERDICTS[3]  # S3
    offsets = [o for _t, o in window]
    for i in range(1, len(offsets)):
        if offsets[i] < offsets[i - 1]:
            if not any(later >= offsets[i - 1] for later in offsets[i:]):
                return _VERDICTS[4]  # S4
            break  # only the first rewind counts, as in Burrow
    lags: list[float] = []
    for t, o in window:
        end_at = end_offset_at(known, t)
        if end_at is not None:
            lag = max(0.0, end_at - o)
            if lag <= allowed_lag:
                return _VERDICTS[5]  # S5
            lags.append(lag)
    if len(offsets) >= 2 and len(set(offsets)) == 1:
        return _VERDICTS[6]  # S6
    if lags and all(b >= a for a, b in pairwise(lags)):
        return _VERDICTS[7]  # S7
    return _VERDICTS[8]  # S8


def group_status(statuses: Iterable[str | None]) -> GroupLagStatus | None:
    """G1: the worst partition status, ``STOP``/``STALL``/``REWIND`` as ``ERR``."""
    worst: GroupLagStatus | None = None
    for status in statuses:
        if status is None:
            continue
        g: GroupLagStatus = "OK" if status == "OK" else "WARN" if status == "WARN" else "ERR"
        if worst is None or _GROUP_RANK[g] > _GROUP_RANK[worst]:
            worst = g
    return worst
