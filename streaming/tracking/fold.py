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

:func:`quiet`, :func:`fold` and :func:`fold_all` state the rules on the tracker's objects.
The stateful step applies them with :func:`fold_encoded`: on the group's stored bytes and the
decode stage's run columns (:class:`~streaming.tracking.model.CommitRuns`), so that a group
that only commits costs no object per run and no decoding of its whole state. The same test
checks that it folds exactly what :func:`fold_all` folds, into the same bytes.

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
from typing import Any

from assign_core.model import TopicPartition
from streaming.codec.reader import ZERO_UUID
from streaming.tracking.config import DEFAULT_CONFIG, TrackerConfig
from streaming.tracking.keep import entry_keep_reason
from streaming.tracking.model import CommitRun, CommitRuns, Observation
from streaming.tracking.reducer import (
    collector_names_status,
    commit_kept,
    committed_entry,
    ordered,
    rollup_due,
    rollup_window_opens,
    run_commits,
    status_from_collector,
)
from streaming.tracking.state import COMMIT_ENTRY_FIELDS, GroupState, dict_encoded, encoded_dict

__all__ = ["fold", "fold_all", "fold_encoded", "quiet"]


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
    if (
        config.emit_lag_on_commit
        and tp in state.end_offsets
        and _lag_due(old.lag_ts_ms, ts, config)
    ):
        return False
    # a status from the collector's state would switch to the records' with this commit
    return not rollup_due(state, ts, config) and not status_from_collector(state)


def _lag_due(lag_ts_ms: int | None, ts_ms: int, config: TrackerConfig) -> bool:
    """Whether a commit at ``ts_ms`` of a partition with end offsets makes a lag row or
    judges its status: the partition's last lag row (``lag_ts_ms``) is in an earlier export
    or storage window, or none was made, or every commit judges (no hold)."""
    every, interval = config.lag_export_interval_ms, config.lag_interval_ms
    return (
        config.lag_status_hold_ms <= 0
        or lag_ts_ms is None
        or every <= 0
        or interval <= 0
        or ts_ms // every > lag_ts_ms // every
        or ts_ms // interval > lag_ts_ms // interval
    )


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


#: Where a ``commits`` entry holds the fields the fold reads and writes: the first nine of
#: :data:`~streaming.tracking.state.COMMIT_ENTRY_FIELDS`, in its order.
_PARTITION, _OFFSET, _COMMIT_TS, _RECORD_TS, _EPOCH, _SOURCE, _HISTORY, _KEPT, _LAG_TS = range(9)
assert COMMIT_ENTRY_FIELDS[_LAG_TS] == "lag_ts_ms", "the fold reads another commits layout"


def fold_encoded(
    blob: bytes, runs: Sequence[CommitRuns], config: TrackerConfig = DEFAULT_CONFIG
) -> tuple[bytes, int] | None:
    """:func:`fold_all` of a group's encoded state (:meth:`GroupState.encode`) and its
    micro-batch's runs, read from their columns: the new encoded state and the group's last
    sighting (:func:`~streaming.tracking.forget.last_activity_ms`), or None when a run is not
    quiet (or the runs come from more than one source partition, or the bytes are not this
    version's msgpack): the reducer must apply them. The rules are :func:`quiet`'s and
    :func:`fold`'s, read off the state's dict form (:meth:`GroupState.to_dict`) instead of
    its objects, which a group that only commits would otherwise decode and encode whole in
    every micro-batch."""
    state = encoded_dict(blob)
    if state is None or len({r.source_partition for r in runs}) != 1:
        return None
    positions, commits = state.get("pos"), state.get("commits")
    last_record = state.get("last_rec")
    if positions is None or commits is None or last_record is None:
        return None
    cg = state.get("cg")
    names: dict[str, str] = {}
    if cg is not None:
        if "pending" in cg or "defer" in cg:
            return None
        names = cg.get("names", {})
    ends: dict[str, list[Any]] = state.get("eo", {})
    ended = {t: {e[0] for e in entries} for t, entries in ends.items()}
    # rollup_due: a group with a lag to report (its end offsets meet its commits)
    has_lag = bool(ended) and any(
        e[_PARTITION] in ended.get(t, ()) for t, entries in commits.items() for e in entries
    )
    collector = state.get("col", {})
    collector_state, collector_ts = collector.get("state"), collector.get("ts")
    rollup_ts, interval = state.get("glag"), config.group_lag_interval_ms
    rebalanced = state.get("last_rb")
    entry_at: dict[str, dict[int, int]] = {}
    key = f"offsets:{runs[0].source_partition}"
    keep, lag_on_commit, depth = (
        config.commit_rows,
        config.emit_lag_on_commit,
        config.commit_history,
    )
    sample_ms, jump_records = config.commit_sample_ms, config.commit_jump_records
    for (
        source_offset,
        ts,
        topic,
        partition,
        offset,
        epoch,
        commit_ts,
        hist_ts,
        hist_offsets,
        topic_id,
    ) in sorted(
        (r for each in runs for r in zip(*_folded_columns(each), strict=True)),
        key=lambda r: r[0],
    ):
        last = positions.get(key)
        if last is not None and source_offset <= last:
            return None
        at = entry_at.get(topic)
        if at is None:
            at = entry_at[topic] = {e[_PARTITION]: i for i, e in enumerate(commits.get(topic, ()))}
        i = at.get(partition)
        if i is None:
            return None
        old = commits[topic][i]
        if old[_SOURCE] != "log":
            return None
        if topic_id != ZERO_UUID and cg is not None and names.get(topic_id) != topic:
            return None
        flat_old = old[_HISTORY]
        lag_ts = old[_LAG_TS] if len(old) > _LAG_TS else None
        if (
            (
                keep
                and entry_keep_reason(
                    old[_OFFSET],
                    flat_old[1::2],
                    old[_RECORD_TS],
                    old[_KEPT] if len(old) > _KEPT else None,
                    hist_offsets or (offset,),
                    ts,
                    rebalanced,
                    sample_ms=sample_ms,
                    jump_records=jump_records,
                )
                is not None
            )
            or (
                lag_on_commit
                and ended
                and partition in ended.get(topic, ())
                and _lag_due(lag_ts, ts, config)
            )
            or (has_lag and rollup_window_opens(rollup_ts, ts, interval))
            or collector_names_status(collector_state, collector_ts, last_record)
        ):
            return None
        positions[key] = source_offset
        last_record = max(last_record, ts)
        if hist_offsets:
            flat_new = [v for pair in zip(hist_ts, hist_offsets, strict=True) for v in pair]
        else:
            flat_new = [commit_ts, offset]
        entry = [
            partition,
            offset,
            commit_ts,
            ts,
            epoch,
            "log",
            (flat_old + flat_new)[-2 * depth :],
            *(*old[_KEPT:10], None, None, None)[:3],
        ]
        if len(old) > 11 and old[11] is not None:
            entry += old[10:12]
        commits[topic][i] = entry
    state["last_rec"] = last_record
    seen = last_record if collector_ts is None else max(last_record, collector_ts)
    return dict_encoded(state), seen


def _folded_columns(runs: CommitRuns) -> tuple[list[Any], ...]:
    """The columns of ``runs`` the fold reads, source offset first (the order it sorts by)."""
    return (
        runs.source_offset,
        runs.timestamp_ms,
        runs.topic,
        runs.partition,
        runs.offset,
        runs.leader_epoch,
        runs.commit_ts_ms,
        runs.history_ts_ms,
        runs.history_offsets,
        runs.topic_id,
    )
