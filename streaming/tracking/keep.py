"""What ``offset_commits`` keeps of a partition's commits: the ones that matter, and a sample.

With ``offset_commits_history=kept`` (the job's default) the tracker decides, per commit it
applies (a single commit, or a run: the commits of one partition between two of the group's
other records in a micro-batch, :class:`~streaming.tracking.model.CommitRun`), whether the
table keeps it, and why. The rules, in order; the first that applies names the reason:

``tombstone``
    An offset tombstone (the partition's committed offset deleted): always kept
    (:mod:`~streaming.tracking.reducer`, not here).
``first``
    The first commit of a partition the tracker holds no committed offset of: a new group or
    partition, or the first after a tombstone.
``rewind``
    An offset below the commit before it (the previous committed offset, or a commit earlier
    in the run): a reset to an earlier offset, a replay, a consumer that lost its position.
``jump``
    An offset above the commit before it by at least ``commit_jump_records`` records *and*
    by more than :data:`JUMP_FACTOR` times the largest step between the partition's previous
    commits (its last ``commit_history``, at least two of them known): a reset to a later
    offset (``--to-latest``, ``auto.offset.reset=latest`` after lost offsets), records
    skipped rather than consumed.
``rebalance``
    The partition's first commit after a rebalance of its group (the previous commit's
    record time before the rebalance's, this one's at or after it): who picked it up, and
    where.
``sample``
    The partition's first commit in a window of ``commit_sample_ms`` of record time (windows
    aligned to the epoch) in which no other of its commits was kept: at least one row per
    partition per window it committed in, whatever else happened.

A run is judged as a whole: its last commit is the row kept (the only one the tracker is
handed with its record position and metadata), with the reason of the first rule any of its
commits meets. A run holds the last ``commit_history`` commits of its partition in the
micro-batch (1-2 live, where the trigger is shorter than the commit interval): a rewind or
jump among older commits of a long run (a backfill's micro-batch) shows only as the run's net
move against the previous committed offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from streaming.tracking.events import KeepReason
from streaming.tracking.state import CommitEntry

__all__ = ["JUMP_FACTOR", "entry_keep_reason", "keep_reason"]

#: A jump moves the offset by more than this many times the partition's largest recent step.
JUMP_FACTOR = 10


def keep_reason(
    old: CommitEntry | None,
    commits: Sequence[tuple[int, int]],
    record_ts_ms: int,
    last_rebalance_ts_ms: int | None,
    *,
    sample_ms: int,
    jump_records: int,
) -> KeepReason | None:
    """Why ``offset_commits`` keeps the last of ``commits`` (module docstring), or None.

    ``old``: the partition's entry before them (None: no committed offset known);
    ``commits``: ``(commit_ts_ms, offset)`` of the commit or run, oldest first, ending with
    the one judged; ``record_ts_ms``: its record time."""
    if old is None:
        return "first"
    return entry_keep_reason(
        old.offset,
        [o for _t, o in old.history],
        old.record_ts_ms,
        old.kept_ts_ms,
        [o for _t, o in commits],
        record_ts_ms,
        last_rebalance_ts_ms,
        sample_ms=sample_ms,
        jump_records=jump_records,
    )


def entry_keep_reason(
    offset: int,
    history_offsets: Sequence[int],
    entry_record_ts_ms: int,
    kept_ts_ms: int | None,
    offsets: Sequence[int],
    record_ts_ms: int,
    last_rebalance_ts_ms: int | None,
    *,
    sample_ms: int,
    jump_records: int,
) -> KeepReason | None:
    """:func:`keep_reason` of a known partition, given its entry's fields (``offset``, the
    offsets of its ``history``, its ``record_ts_ms`` and ``kept_ts_ms``) and the run's
    ``offsets``, oldest first: what the fold of encoded states reads
    (:func:`streaming.tracking.fold.fold_encoded`)."""
    steps = []
    previous = offset
    for o in offsets:
        if o < previous:
            return "rewind"
        steps.append(o - previous)
        previous = o
    if len(history_offsets) > 1 and max(steps) >= jump_records:
        usual = max(0, *(b - a for a, b in pairwise(history_offsets)))
        if any(step >= jump_records and step > JUMP_FACTOR * usual for step in steps):
            return "jump"
    rebalanced = last_rebalance_ts_ms
    if rebalanced is not None and entry_record_ts_ms < rebalanced <= record_ts_ms:
        return "rebalance"
    if kept_ts_ms is None or record_ts_ms // sample_ms > kept_ts_ms // sample_ms:
        return "sample"
    return None
