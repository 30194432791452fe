"""Lag rules L1-L6 of ``streaming/tracking/lag.py``, as a commented correctness table."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streaming.tracking.lag import Point, add_point, lag_records, lag_seconds

pytestmark = pytest.mark.unit

# Five snapshots, one every 10 s; the end offset grows by 100 records per 10 s, then stalls.
H: tuple[Point, ...] = ((0, 1000), (10_000, 1100), (20_000, 1200), (30_000, 1300), (40_000, 1300))

LAG_TABLE = [
    # rule, history, committed, measured at, expected seconds, method
    # L2 caught up: committed at (or past) the newest end offset -> 0 s
    ("L2", H, 1300, 40_000, 0.0, "caught_up"),
    ("L2", H, 1350, 40_000, 0.0, "caught_up"),
    # L2 exactly on a point: the end offset reached 1100 at 10 s -> 30 s before 40 s
    ("L2", H, 1100, 40_000, 30.0, "interpolated"),
    # L2 between points: 1150 is half way from 10 s to 20 s -> 15 s -> 25 s ago
    ("L2", H, 1150, 40_000, 25.0, "interpolated"),
    # L2 the flat run at the end does not matter: 1250 is reached at 25 s
    ("L2", H, 1250, 40_000, 15.0, "interpolated"),
    # L3 below the history: rate 300 records / 40 s -> 900 was written 13.33 s before 0 s
    ("L3", H, 900, 40_000, 40.0 + 400 / 30, "extrapolated"),
    # L3 no progress at all: the age of the oldest point is a lower bound
    ("L3", ((0, 500), (10_000, 500)), 100, 10_000, 10.0, "lower_bound"),
    ("L3", ((5_000, 500),), 100, 10_000, 5.0, "lower_bound"),
    ("L3", (), 100, 10_000, None, "unknown"),
    # L4 measured before the interpolated time (a stale commit trigger): never negative
    ("L4", H, 1250, 20_000, 0.0, "interpolated"),
]


@pytest.mark.parametrize(("rule", "history", "committed", "at", "seconds", "method"), LAG_TABLE)
def test_lag_seconds_table(
    rule: str,
    history: tuple[Point, ...],
    committed: int,
    at: int,
    seconds: float | None,
    method: str,
) -> None:
    got, how = lag_seconds(history, committed, at)
    assert how == method, rule
    if seconds is None:
        assert got is None
    else:
        assert got == pytest.approx(seconds), rule


def test_l1_lag_records_is_never_negative() -> None:
    assert lag_records(1300, 1250) == 50
    assert lag_records(1300, 1400) == 0  # the end offset is older than the commit
    assert lag_records(None, 10) is None


ADD_TABLE = [
    # rule, history, (ts, end offset) added, max points, result
    # L5 a newer point is appended
    ("L5", ((0, 10),), (5, 20), 8, ((0, 10), (5, 20))),
    # L5 same timestamp replaces
    ("L5", ((0, 10), (5, 20)), (5, 25), 8, ((0, 10), (5, 25))),
    # L5 a flat run keeps its first and last point
    ("L5", ((0, 10), (5, 20), (9, 20)), (12, 20), 8, ((0, 10), (5, 20), (12, 20))),
    # L5 a decrease (topic re-created) restarts the history
    ("L5", ((0, 10), (5, 20)), (9, 3), 8, ((9, 3),)),
    # L5 a late point is inserted in time order ...
    ("L5", ((0, 10), (10, 30)), (5, 20), 8, ((0, 10), (5, 20), (10, 30))),
    # ... unless it contradicts its neighbours
    ("L5", ((0, 10), (10, 30)), (5, 40), 8, ((0, 10), (10, 30))),
    # L6 thinning drops an old interior point, keeps both ends
    ("L6", ((0, 0), (1, 1), (2, 2), (100, 3)), (101, 4), 4, ((0, 0), (2, 2), (100, 3), (101, 4))),
]


@pytest.mark.parametrize(("rule", "history", "point", "max_points", "result"), ADD_TABLE)
def test_add_point_table(
    rule: str,
    history: tuple[Point, ...],
    point: Point,
    max_points: int,
    result: tuple[Point, ...],
) -> None:
    assert add_point(history, point[0], point[1], max_points) == result, rule


@given(
    st.lists(
        st.tuples(st.integers(1, 10_000), st.integers(0, 1_000)),
        min_size=1,
        max_size=200,
    ),
    st.integers(2, 20),
)
def test_l6_history_stays_bounded_and_ordered(
    steps: list[tuple[int, int]], max_points: int
) -> None:
    history: tuple[Point, ...] = ()
    ts = end = 0
    for dt, d_off in steps:
        ts += dt
        end += d_off
        history = add_point(history, ts, end, max_points)
        assert len(history) <= max_points
        assert history[-1] == (ts, end)
        assert all(a[0] < b[0] and a[1] <= b[1] for a, b in itertools.pairwise(history))
