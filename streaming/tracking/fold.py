"""Commit runs the reducer would only record: whether a run is one, and its state alone.

A group that only commits mostly gives the reducer nothing to judge: each run moves a
partition's committed offset and commit history, and :func:`~streaming.tracking.reducer.apply`
emits nothing but the group's status. :func:`quiet` tells such a run from one that makes a
row (an ``offset_commits`` row kept, a lag row exported or stored, a ``group_lag`` rollup, a
KIP-848 rebalance settled or timed out) or changes more than the partition's entry (a
duplicate counted, a topic id learnt); :func:`fold` is what applying a quiet run leaves,
without the reducer. Applying the quiet runs of a group with :func:`fold` and its next other
observations with the reducer gives the reducer's rows and state, the status rows in between
aside (``tests/unit/streaming/tracking/test_fold.py`` checks both on random streams).

The rules are the reducer's, read off :func:`~streaming.tracking.reducer.apply`:

* the run's record is newer than the group's position in its source partition (an older one
  is a duplicate, counted);
* the partition has a committed offset from the log (a first commit is kept; one over a
  collector snapshot's offset starts the history again);
* :func:`~streaming.tracking.keep.keep_reason` keeps nothing (``commit_rows`` on);
* a partition with end offsets (lag measured at each commit) was exported in the commit's
  export window and stored in its storage window, and a hold judges only snapshots
  (``lag_status_hold_ms`` > 0);
* the group's rollup window of the commit was rolled up, or the group has no lag to roll up;
* no KIP-848 rebalance waits (a commit may settle it or time it out), and the run's topic id
  is none or one the group knows by that name;
* the group's status already goes by its records (a record newer than the collector's last
  snapshot of it), so that it does not change with the run.

The status row the reducer would emit for a quiet run differs from the group's last one only
in its time and what moves with lag (totals, the lag status): the group's next step emits
it, with its next lag row (within the export window, for a group with end offsets) or its
next other record.
"""

from __future__ import annotations

from collections.abc import Sequence

from assign_core.model import TopicPartition
from streaming.codec.reader import ZERO_UUID
from streaming.tracking.config import DEFAULT_CONFIG, TrackerConfig
from streaming.tracking.model import CommitRun, Observation
from streaming.tracking.reducer import (
    commit_kept,
    committed_entry,
    ordered,
    rollup_due,
    run_commits,
    status_from_collector,
)
from streaming.tracking.state import GroupState

__all__ = ["fold", "fold_all", "quiet"]


def quiet(state: GroupState, obs: Observation, config: TrackerConfig = DEFAULT_CONFIG) -> bool:
    """Whether the reducer, given ``obs`` (a ``CommitRun`` observation) alone, would emit
    nothing but the group's status and change nothing but what :func:`fold` changes."""
    run = obs.payload
    if type(run) is not CommitRun or obs.source != "offsets":
        return False
    last = state.positions.get(f"{obs.source}:{obs.partition}")
    if last is not None and obs.offset <= last:
        return False
    tp = TopicPartition(run.topic, run.partition)
    old = state.commits.get(tp)
    if old is None or old.source != "log":
        return False
    cg = state.consumer
    if cg is not None and (
        cg.pending is not None
        or cg.deferred is not None
        or (run.topic_id != ZERO_UUID and cg.topic_names.get(run.topic_id) != run.topic)
    ):
        return False
    ts = obs.timestamp_ms
    if commit_kept(state, old, run_commits(run), ts, config) is not None:
        return False
    if config.emit_lag_on_commit and tp in state.end_offsets:
        every, interval, lag = config.lag_export_interval_ms, config.lag_interval_ms, old.lag_ts_ms
        if (
            config.lag_status_hold_ms <= 0
            or lag is None
            or every <= 0
            or interval <= 0
            or ts // every > lag // every
            or ts // interval > lag // interval
        ):
            return False
    # a status from the collector's state would switch to the records' with this commit
    return not rollup_due(state, ts, config) and not status_from_collector(state)


def fold(state: GroupState, obs: Observation, config: TrackerConfig = DEFAULT_CONFIG) -> None:
    """Apply a :func:`quiet` run to ``state`` in place, as the reducer would: the source
    position, the last record time and the partition's entry (offset, times, epoch,
    history; what the tables kept of it unchanged)."""
    run = obs.payload
    assert type(run) is CommitRun
    state.positions[f"{obs.source}:{obs.partition}"] = obs.offset
    ts = obs.timestamp_ms
    if state.last_record_ts_ms is None or ts > state.last_record_ts_ms:
        state.last_record_ts_ms = ts
    tp = TopicPartition(run.topic, run.partition)
    state.commits[tp] = committed_entry(
        state.commits[tp],
        run.offset,
        run.leader_epoch,
        run.commit_ts_ms,
        run_commits(run),
        ts,
        kept=False,
        commit_history=config.commit_history,
    )


def fold_all(
    state: GroupState, observations: Sequence[Observation], config: TrackerConfig = DEFAULT_CONFIG
) -> GroupState | None:
    """``state`` after ``observations`` when each, in the reducer's order, is quiet on the
    state the ones before it left (a new state; ``state`` is unchanged), else None: the
    reducer must apply them."""
    if any(type(obs.payload) is not CommitRun for obs in observations):
        return None  # the reducer's, without ordering them twice
    work: GroupState | None = None
    for obs in ordered(observations):
        if not quiet(work or state, obs, config):
            return None
        if work is None:
            work = state.copy()
        fold(work, obs, config)
    return work
