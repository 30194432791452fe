"""Lag status rules S1-S8 and G1 of ``streaming/tracking/lag_status.py``, as a commented
correctness table: one row per edge of each rule (just inside, just outside)."""

from __future__ import annotations

import random
from collections import Counter
from itertools import pairwise
from typing import Any

import pytest

from streaming.tracking.lag_status import (
    STATUS_CODES,
    end_offset_at,
    evaluate_partition,
    group_status,
)

pytestmark = pytest.mark.unit

W = 60_000  # the window: 60 s
# End offsets: one snapshot every 10 s, 100 records per 10 s, from 0 s to 60 s.
E = tuple((t * 10_000, 1000 + t * 100) for t in range(7))  # (0, 1000) .. (60_000, 1600)
# A fast producer: 1000 records per 10 s (the consumer's offsets stay below every point).
F = tuple((t * 10_000, 1000 + t * 1000) for t in range(8))  # (0, 1000) .. (70_000, 8000)


def steady(start_ts: int, offsets: list[int], step_ms: int = 10_000) -> list[tuple[int, int]]:
    """Commits at ``start_ts``, ``start_ts + step_ms``, ... of ``offsets``."""
    return [(start_ts + i * step_ms, o) for i, o in enumerate(offsets)]


STATUS_TABLE = [
    # id, commits (ts, offset), committed, end offsets, now, allowed lag, status, rule
    # S1 no end offset at or before now -> no verdict (the first snapshot is at 0 s)
    ("S1 nothing known yet", [], 900, ((1_000, 1000),), 999, 0, None, None),
    # S1 edge: a point exactly at now is known
    ("S1 point at now", [], 1000, ((1_000, 1000),), 1_000, 0, "OK", 2),
    # S2 lag 0 -> OK whatever the commits look like (here: none at all)
    ("S2 caught up", [], 1600, E, 60_000, 0, "OK", 2),
    # S2 edge: lag 5 within allowed-lag 5 -> OK; allowed-lag 4 -> judged by the later rules
    ("S2 within allowed lag", [(55_000, 1595)], 1595, E, 60_000, 5, "OK", 2),
    (
        "S2 above allowed lag",
        steady(0, [1000, 1100, 1200, 1300, 1400, 1500, 1595]),
        1595,
        E,
        60_000,
        4,
        "OK",
        5,
    ),
    # S3 no commit in the window (last one 61 s ago), lagging -> STOP
    ("S3 no commit in window", [(0, 900)], 900, ((0, 1000), (61_000, 1600)), 61_000, 0, "STOP", 3),
    # S3 one commit, any time after it: now - last (10 s) > last - first (0 s) -> STOP
    ("S3 single old commit", [(50_000, 1050)], 1050, F, 60_000, 0, "STOP", 3),
    # S3 edge: now - last == last - first (20 s == 20 s) is not STOP; the lag grows -> WARN
    ("S3 edge not stopped", steady(20_000, [1100, 1200, 1300]), 1300, F, 60_000, 0, "WARN", 7),
    # S3 edge: one ms later now - last > last - first -> STOP
    ("S3 edge stopped", steady(20_000, [1100, 1200, 1300]), 1300, F, 60_001, 0, "STOP", 3),
    # S3 exception: an end offset seen in the window <= committed (the log end of 40 s is
    # consumed: the time lag is shorter than the window) -> not STOP;
    # its one commit had lag 0 at 40 s -> OK by S5
    ("S3 caught up lately", [(40_000, 1400)], 1400, E, 60_000, 0, "OK", 5),
    # S3 exception edge: the caught-up point fell out of the window -> STOP again
    ("S3 caught up too long ago", [(0, 1000)], 1000, E, 60_000, 0, "STOP", 3),
    # S4 a commit below its predecessor, never recovered within the window -> REWIND
    ("S4 rewind", steady(30_000, [1200, 1100, 1150, 1180]), 1180, E, 60_000, 0, "REWIND", 4),
    # S4 edge: a later commit gets back past the pre-rewind offset -> not REWIND; lags
    # 100, 300, 250, 50 shrink -> OK (S8)
    ("S4 recovered", steady(30_000, [1200, 1100, 1250, 1550]), 1550, E, 60_000, 0, "OK", 8),
    # S5 lag was 0 at one commit of the window (1200 at 20 s), lagging now -> OK
    (
        "S5 was caught up in window",
        steady(20_000, [1200, 1250, 1300, 1350, 1400]),
        1400,
        E,
        60_000,
        0,
        "OK",
        5,
    ),
    # S5 edge: that commit just left the window (ts 0 <= now - window) -> judged by S7
    (
        "S5 edge outside window",
        [(0, 1000), *steady(10_000, [1050, 1100, 1150, 1200, 1250, 1300])],
        1300,
        E,
        60_000,
        0,
        "WARN",
        7,
    ),
    # S6 the same offset committed again and again while lagging -> STALL
    ("S6 stall", steady(30_000, [1100, 1100, 1100, 1100]), 1100, E, 60_000, 0, "STALL", 6),
    # S6 edge: one offset differs -> not STALL; lags 200, 300, 399, 499 grow -> WARN
    ("S6 edge slow", steady(30_000, [1100, 1100, 1101, 1101]), 1101, E, 60_000, 0, "WARN", 7),
    # S7 offsets advance but the lag never decreases (100 more records per 10 s) -> WARN
    ("S7 falling behind", steady(30_000, [1200, 1250, 1300, 1350]), 1350, E, 60_000, 0, "WARN", 7),
    # S7 edge: equal lags count as not decreasing (lag 100 each time) -> WARN
    ("S7 flat lag", steady(30_000, [1200, 1300, 1400, 1500]), 1500, E, 60_000, 0, "WARN", 7),
    # S8 the lag shrinks at one step -> OK
    ("S8 catching up", steady(30_000, [1200, 1250, 1400, 1450]), 1450, E, 60_000, 0, "OK", 8),
    # S8 edge: no lag known at any commit (commits before the first end offset) -> OK
    (
        "S8 lags unknown",
        steady(-30_000, [900, 950, 990]),
        990,
        ((0, 1000), (5_000, 1100)),
        5_000,
        0,
        "OK",
        8,
    ),
]


@pytest.mark.parametrize(
    ("case", "commits", "committed", "ends", "now", "allowed", "status", "rule"),
    STATUS_TABLE,
    ids=[row[0] for row in STATUS_TABLE],
)
def test_partition_status_table(
    case: str,
    commits: list[tuple[int, int]],
    committed: int,
    ends: tuple[tuple[int, int], ...],
    now: int,
    allowed: int,
    status: str | None,
    rule: int | None,
) -> None:
    got = evaluate_partition(commits, committed, ends, now, window_ms=W, allowed_lag=allowed)
    if status is None:
        assert got is None, case
    else:
        assert got is not None, case
        assert (got.status, got.rule) == (status, rule), case


def test_window_length_changes_the_verdict() -> None:
    # The same history: within a 60 s window the 20 s commit shows the consumer caught up
    # (S5); a 30 s window no longer holds it, and the lag grows -> WARN.
    commits = steady(20_000, [1200, 1250, 1300, 1350, 1400])
    assert evaluate_partition(commits, 1400, E, 60_000, window_ms=60_000).status == "OK"
    narrow = evaluate_partition(commits, 1400, E, 60_000, window_ms=30_000)
    assert narrow is not None and (narrow.status, narrow.rule) == ("WARN", 7)


def test_commits_after_now_are_not_in_the_window() -> None:
    # evaluated at 30 s (a late snapshot): the 40 s and 50 s commits do not count yet
    commits = steady(20_000, [1100, 1150, 1600, 1600])
    got = evaluate_partition(commits, 1150, E, 30_000, window_ms=W)
    assert got is not None and (got.status, got.rule) == ("WARN", 7)


def test_end_offset_interpolation() -> None:
    assert end_offset_at(E, -1) is None
    assert end_offset_at(E, 0) == 1000
    assert end_offset_at(E, 15_000) == 1150
    assert end_offset_at(E, 90_000) == 1600  # after the newest point: its value


def _scanned(history: list[tuple[int, int]], ts_ms: int) -> float | None:
    """The interpolation's definition, point pair by point pair: the first pair around
    ``ts_ms``, the newest point's value after the last, nothing before the first."""
    if not history or ts_ms < history[0][0]:
        return None
    for (t0, o0), (t1, o1) in pairwise(history):
        if t0 <= ts_ms < t1:
            return o0 + (o1 - o0) * (ts_ms - t0) / (t1 - t0)
    return float(history[-1][1])


def test_end_offset_interpolation_is_its_definition_on_random_histories() -> None:
    """Histories as the tracker keeps them (oldest first, 1-16 points, times that repeat):
    the end offset at any time, the points' own and those between and around them, is the
    definition's, float for float."""
    rng = random.Random(20261130)
    checked = 0
    for _ in range(2_000):
        times = sorted(rng.choice(range(0, 200_000, 5_000)) for _ in range(rng.randint(1, 16)))
        offsets = sorted(rng.randint(0, 10_000) for _ in times)
        history = list(zip(times, offsets, strict=True))
        for ts in {
            *times,
            *(t + 1 for t in times),
            *(t - 1 for t in times),
            rng.randint(-10, 210_000),
        }:
            assert end_offset_at(history, ts) == _scanned(history, ts), (history, ts)
            checked += 1
    assert checked > 20_000


def _judged(
    commits: list[tuple[int, int]],
    committed: int,
    ends: list[tuple[int, int]],
    now: int,
    window_ms: int,
    allowed: int,
) -> tuple[str, int] | None:
    """Rules S1-S8 as the module docstring words them, each over whole lists: the points
    known at ``now``, the commits in the window, the lag at each of them by
    :func:`_scanned`; the first rule that applies decides."""
    known = [(t, o) for t, o in ends if t <= now]
    if not known:
        return None
    if known[-1][1] - committed <= allowed:
        return ("OK", 2)
    window = [(t, o) for t, o in commits if now - window_ms < t <= now]
    seen = any(o <= committed for t, o in known if now - window_ms < t)
    if not seen and (not window or now - window[-1][0] > window[-1][0] - window[0][0]):
        return ("STOP", 3)
    offsets = [o for _t, o in window]
    rewinds = [i for i in range(1, len(offsets)) if offsets[i] < offsets[i - 1]]
    if rewinds and not any(later >= offsets[rewinds[0] - 1] for later in offsets[rewinds[0] :]):
        return ("REWIND", 4)
    at = [_scanned(known, t) for t, _o in window]
    lags = [max(0.0, end - o) for end, (_t, o) in zip(at, window, strict=True) if end is not None]
    if any(lag <= allowed for lag in lags):
        return ("OK", 5)
    if len(offsets) >= 2 and len(set(offsets)) == 1:
        return ("STALL", 6)
    if lags and all(b >= a for a, b in pairwise(lags)):
        return ("WARN", 7)
    return ("OK", 8)


def test_the_verdicts_are_the_rules_on_random_partitions() -> None:
    """Partitions as the tracker keeps them (end offsets and commits oldest first, times
    that repeat, offsets that rewind, stall or run ahead of the points), judged at times
    before, among and after their points, with several windows and allowed lags: the
    verdict is the rules' (:func:`_judged`), and every rule decides some of them."""
    rng = random.Random(20261130)
    rules: Counter[int | None] = Counter()
    for _ in range(20_000):
        times = sorted(rng.choice(range(0, 120_000, 5_000)) for _ in range(rng.randint(0, 16)))
        ends = list(zip(times, sorted(rng.randint(0, 2_000) for _ in times), strict=True))
        commit_times = sorted(
            rng.choice(range(0, 120_000, 2_500)) for _ in range(rng.randint(0, 8))
        )
        level = rng.randint(0, 2_000)
        commits = []
        for t in commit_times:
            level = max(0, level + rng.choice((0, 0, -50, 10, 100, 400)))
            commits.append((t, level))
        committed = commits[-1][1] if commits and rng.random() < 0.8 else rng.randint(0, 2_000)
        now = rng.choice([*times, *commit_times, rng.randint(-1_000, 130_000)])
        window_ms = rng.choice((10_000, 30_000, 60_000, 600_000))
        allowed = rng.choice((0, 0, 5, 100))
        got = evaluate_partition(
            commits, committed, tuple(ends), now, window_ms=window_ms, allowed_lag=allowed
        )
        want = _judged(commits, committed, ends, now, window_ms, allowed)
        assert (None if got is None else (got.status, got.rule)) == want, (
            commits,
            committed,
            ends,
            now,
            window_ms,
            allowed,
        )
        rules[None if want is None else want[1]] += 1
    assert set(rules) == {None, 2, 3, 4, 5, 6, 7, 8}, rules


GROUP_TABLE = [
    # G1 worst partition; STOP, STALL and REWIND are ERR for the group
    ([], None),
    ([None, None], None),
    (["OK", None], "OK"),
    (["OK", "WARN"], "WARN"),
    (["WARN", "STOP", "OK"], "ERR"),
    (["STALL"], "ERR"),
    (["REWIND", "WARN"], "ERR"),
]


@pytest.mark.parametrize(("statuses", "expected"), GROUP_TABLE)
def test_group_status_table(statuses: list[str | None], expected: str | None) -> None:
    assert group_status(statuses) == expected


def test_codes_are_burrows() -> None:
    assert [STATUS_CODES[s] for s in ("OK", "WARN", "ERR", "STOP", "STALL", "REWIND")] == [
        1, 2, 3, 4, 5, 6,
    ]  # fmt: skip


# -- in the tracker: the lag rows and the group status carry the verdicts -------------------


def _tracker_run(
    stop_at_s: int, *, backfill: bool = False, export_ms: int = 0
) -> tuple[list[Any], list[Any]]:
    """Partition t-0 keeps up (commits the end offset), t-1 commits until ``stop_at_s``;
    the producer writes 10 records/s to each; a snapshot and commits every 5 s for 60 s,
    applied in one batch per 5 s (live) or all in one batch (``backfill``); the lag rows of
    the export interval ``export_ms`` (0: every measurement)."""
    from streaming.tracking.config import TrackerConfig
    from streaming.tracking.events import GroupStatus, PartitionLagRow
    from tests.unit.streaming.tracking.factories import Log, Tracker, commit, topics_snapshot

    config = TrackerConfig(lag_status_window_ms=30_000, lag_export_interval_ms=export_ms)
    tracker = Tracker(config=config)
    log = Log()
    for s in range(5, 65, 5):
        ts = s * 1000
        end = 10 * s
        log.rec(commit("t", 0, end, ts=ts), ts)
        if s <= stop_at_s:
            log.rec(commit("t", 1, end - 5, ts=ts), ts)  # 5 behind: lagging, not growing
        log.snap(topics_snapshot(ts, {"t": [end, end]}))
        if not backfill:
            tracker.feed(log.take())  # one batch per 5 s
    if backfill:
        tracker.feed(log.take())
    return tracker.of(PartitionLagRow), tracker.of(GroupStatus)


def test_the_tracker_judges_a_consumer_that_stops_and_one_that_keeps_up() -> None:
    lags, statuses = _tracker_run(stop_at_s=30)
    last = {r.partition: r for r in lags if r.trigger == "snapshot" and r.measured_ts_ms == 60_000}
    assert (last[0].status, last[0].status_rule) == ("OK", 2)
    # stopped at 30 s: by 60 s it has not committed for 30 s, longer than its commits span
    assert (last[1].status, last[1].status_rule) == ("STOP", 3)
    assert statuses[-1].lag_status == "ERR"
    # while both committed, t-1's constant 5-record lag never shrank: WARN (S7)
    at_25 = [
        r
        for r in lags
        if r.partition == 1 and r.trigger == "snapshot" and r.measured_ts_ms == 25_000
    ]
    assert [(r.status, r.status_rule) for r in at_25] == [("WARN", 7)]


def test_a_backfill_gives_the_statuses_the_live_job_gave() -> None:
    # record time, not wall time: one batch of everything (catching up on a backlog) judges
    # every snapshot as the live batches did
    live, _ = _tracker_run(stop_at_s=30)
    backfill, statuses = _tracker_run(stop_at_s=30, backfill=True)
    assert [(r.event_id, r.status, r.status_rule) for r in backfill] == [
        (r.event_id, r.status, r.status_rule) for r in live
    ]
    assert {r.status for r in backfill} == {"OK", "WARN", "STOP"}
    assert statuses[-1].lag_status == "ERR"


def test_a_batch_hands_on_each_partitions_newest_lag_and_the_stored_rows() -> None:
    # the export interval is record time: what the gauges end on and what partition_lag keeps
    # do not depend on how the records were cut into batches; a backlog's one batch hands on
    # one row per partition (and the stored ones), not one per export window
    live, _ = _tracker_run(stop_at_s=30, export_ms=30_000)
    backfill, _ = _tracker_run(stop_at_s=30, backfill=True, export_ms=30_000)

    def newest(rows: list[Any]) -> dict[int, tuple[str, str | None]]:
        return {r.partition: (r.event_id, r.status) for r in rows}

    def stored(rows: list[Any]) -> list[str]:
        return [r.event_id for r in rows if r.stored]

    assert newest(backfill) == newest(live)
    assert stored(backfill) == stored(live) != []
    assert {(r.event_id, r.status) for r in backfill} <= {(r.event_id, r.status) for r in live}
    assert Counter(r.partition for r in backfill if not r.stored) == {0: 1, 1: 1}
    every, _ = _tracker_run(stop_at_s=30)
    assert 0 < len(backfill) < len(live) < len(every)
    assert {r.status for r in live} == {"OK", "WARN", "STOP"}
