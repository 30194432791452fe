"""The per-group reducer: ``apply(state, observations, now_ms) -> (state, events)``.

Pure: the input state is not modified (a cheap copy is worked on), no clock, no I/O. One
call per group per micro-batch; the Spark adapter only converts rows to observations and
the state to and from its JSON form.

Order. Observations of one source partition are applied in offset order; the two sources
are merged by the time they describe (record timestamp for ``__consumer_offsets``,
``snapshot_ts_ms`` for collector events), so a snapshot taken before a rebalance is seen
before it even if it was read later in the batch. An observation at or below the last
applied offset of its source partition is a duplicate and skipped: re-applying records
emits nothing twice.

Dispatch:

==================================  ========================================================
payload                             handler
==================================  ========================================================
GroupMetadata / tombstone           :mod:`~streaming.tracking.classic`
KIP-848 records 3-8, 16 / tombstones  :mod:`~streaming.tracking.consumer`
OffsetCommit / tombstone, CommitRun committed offset (+ PartitionLagRow); the
                                    ``offset_commits`` rows are the commit lane's
GroupSnapshot (collector)           state history, member sightings, committed offsets
                                    the log has not shown yet (version 1)
GroupHeartbeat, GroupsPolled        version 2: polls that found the group unchanged, applied
                                    as a snapshot of the newest group event's content
TopicsSnapshot (collector)          partition counts, racks, topic ids and (version 1) end
                                    offsets of the topics the group touches; PartitionLagRow
                                    per committed partition
EndOffsetsSnapshot (collector)      version 2: end offsets (those not repeated, of the topics
                                    the event or chunk covers, kept theirs);
                                    PartitionLagRow per committed partition
share / streams records, Unknown    skipped, counted
==================================  ========================================================

A tombstone that deletes the group empties its state there (rule F1 of
:mod:`~streaming.tracking.forget`): the adapter drops a state left empty.

Freshness. End offsets come only from the collector (``topics`` events of version 1,
``end_offsets`` events of version 2). Lag measured more than ``config.end_offsets_max_age_ms``
after a partition's newest end offset (a commit row's commit time, a status's ``now_ms``) is
unknown: the row has no lag, method
``unknown`` and no status, and the group's totals and lag status are None, never 0 or OK.

After the observations, a KIP-848 rebalance that has waited for reconciliation longer than
``reconcile_timeout_ms`` (measured against ``now_ms``) is emitted as ``timed_out``, and if
anything changed a :class:`~streaming.tracking.events.GroupStatus` closes the event list.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import NamedTuple

from assign_core.model import TopicPartition
from streaming.codec.model import (
    ConsumerGroupMemberMetadata,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupRegularExpression,
    GroupMetadata,
    GroupMetadataTombstone,
    OffsetCommit,
    OffsetCommitTombstone,
    Tombstone,
    Unknown,
)
from streaming.codec.reader import ZERO_UUID
from streaming.tracking.classic import apply_group_metadata, apply_group_tombstone
from streaming.tracking.config import DEFAULT_CONFIG, TrackerConfig
from streaming.tracking.consumer import (
    apply_consumer_record,
    flush_timeout,
    note_topic_ids,
    settle_deferred,
)
from streaming.tracking.context import Context
from streaming.tracking.errors import ObservationError
from streaming.tracking.events import (
    GroupLagRow,
    GroupStatus,
    KeepReason,
    LagMethod,
    LagTransitionRow,
    OffsetCommitRow,
    PartitionLagRow,
    TrackerEvent,
    event_id,
)
from streaming.tracking.forget import forgets
from streaming.tracking.keep import keep_reason
from streaming.tracking.lag import add_point, lag_records, lag_seconds
from streaming.tracking.lag_status import Verdict, evaluate_partition, group_status
from streaming.tracking.model import (
    KIP848_RECORDS,
    KIP848_TOMBSTONE_TYPES,
    CommitRun,
    EndOffsetsSnapshot,
    GroupHeartbeat,
    GroupSeen,
    GroupSnapshot,
    GroupsPolled,
    Observation,
    TopicsSnapshot,
    UnsupportedEvent,
    group_id_of,
)
from streaming.tracking.state import CommitEntry, GroupState, TopicMeta

__all__ = ["apply", "interest_of", "ordered"]

_SOURCE_RANK = {"offsets": 0, "membership": 1}


def ordered(observations: Iterable[Observation]) -> list[Observation]:
    """Offset order within each source partition, merged by :attr:`logical_ts_ms`."""
    streams: dict[tuple[str, int], list[Observation]] = {}
    for o in observations:
        streams.setdefault((o.source, o.partition), []).append(o)
    if len(streams) == 1:
        (only,) = streams.values()
        return sorted(only, key=lambda o: o.offset)
    runs: list[Iterator[tuple[int, int, int, int, Observation]]] = []
    for (source, partition), obs in sorted(streams.items()):
        obs.sort(key=lambda o: o.offset)
        rank = _SOURCE_RANK[source]
        runs.append(iter([(o.logical_ts_ms, rank, partition, o.offset, o) for o in obs]))
    return [item[4] for item in heapq.merge(*runs, key=lambda t: t[:4])]


def interest_of(state: GroupState, observations: Iterable[Observation]) -> set[str]:
    """The topics the group touches: subscriptions, assignments, commits, what the
    collector listed, and the same in this batch's observations."""
    topics: set[str] = set(state.collector.topics)
    topics.update(tp.topic for tp in state.commits)
    if state.classic is not None:
        for m in state.classic.members:
            topics.update(m.topics)
            topics.update(tp.topic for tp in m.partitions)
    cg = state.consumer
    if cg is not None:
        for cm in cg.members.values():
            topics.update(cm.topics)
        for ts in cg.regex_topics.values():
            topics.update(ts)
        topics.update(cg.partition_metadata)
        for mi in cg.last_members:
            topics.update(mi.topics)
    for o in observations:
        p = o.payload
        if isinstance(p, OffsetCommit | OffsetCommitTombstone | CommitRun):
            topics.add(p.topic)
        elif isinstance(p, GroupMetadata):
            for mm in p.members:
                if mm.subscription is not None:
                    topics.update(mm.subscription.topics)
                if mm.assignment is not None:
                    topics.update(e.topic for e in mm.assignment.assigned_partitions)
        elif isinstance(p, GroupSnapshot):
            topics.update(p.topics)
        elif isinstance(p, ConsumerGroupMemberMetadata):
            topics.update(p.subscribed_topic_names)
        elif isinstance(p, ConsumerGroupPartitionMetadata):
            topics.update(t.topic_name for t in p.topics)
        elif isinstance(p, ConsumerGroupRegularExpression):
            topics.update(p.topics)
    return topics


def apply(
    state: GroupState,
    observations: Iterable[Observation],
    now_ms: int,
    *,
    config: TrackerConfig = DEFAULT_CONFIG,
) -> tuple[GroupState, list[TrackerEvent]]:
    """Apply one batch of observations of one group (module docstring)."""
    batch = ordered(observations)
    work = state.copy()
    ctx = Context(
        state=work, config=config, now_ms=now_ms, interest=interest_of(work, batch), upcoming=batch
    )
    transition = False
    for i, obs in enumerate(batch):
        ctx.index = i
        key = f"{obs.source}:{obs.partition}"
        last = work.positions.get(key)
        if last is not None and obs.offset <= last:
            ctx.skip("duplicate")
            continue
        work.positions[key] = obs.offset
        emitted = len(ctx.events)
        partitions = len(work.commits)
        _dispatch(ctx, obs)
        if any(forgets(e) for e in ctx.events[emitted:]):
            work = ctx.state = _after_tombstone(work)
        transition = transition or (
            partitions != len(work.commits)
            or any(isinstance(e, LagTransitionRow) for e in ctx.events[emitted:])
        )
        if _chunk_follows(batch, i):
            continue  # the group's status and rollup once the poll's chunks are all applied
        if transition:
            _group_transition(ctx, obs.logical_ts_ms)
            transition = False
        _rollup(ctx, obs.logical_ts_ms)
    if transition:
        _group_transition(ctx, batch[-1].logical_ts_ms)
    flush_timeout(ctx)
    if ctx.changed:
        ctx.emit(_status(work, now_ms, config))
    if config.lag_export_interval_ms:
        return work, _newest_lag(ctx.events)
    return work, ctx.events


def _newest_lag(events: list[TrackerEvent]) -> list[TrackerEvent]:
    """``events`` without the lag rows only the exporter takes that a newer row of the same
    partition follows in the batch: the gauges show the newest, so a batch that spans many
    export windows (a backlog, a slow batch) hands on one row per partition, not one per
    window. Stored rows stay (``partition_lag`` keeps them)."""
    last: dict[tuple[str, int], int] = {}
    rows = 0
    for i, e in enumerate(events):
        if type(e) is PartitionLagRow:
            last[(e.topic, e.partition)] = i
            rows += 1
    if len(last) == rows:
        return events
    return [
        e
        for i, e in enumerate(events)
        if type(e) is not PartitionLagRow or e.stored or last[(e.topic, e.partition)] == i
    ]


def _chunk_follows(batch: list[Observation], i: int) -> bool:
    """Whether ``batch[i]`` is a chunk of a collector event (``topics``, ``end_offsets``) and
    the next observation another chunk of the same poll's event: the event split in records
    (:mod:`streaming.collector.chunks`) is judged, as one record would be, after its last."""
    if i + 1 >= len(batch):
        return False
    this, after = batch[i].payload, batch[i + 1].payload
    return (
        isinstance(this, TopicsSnapshot | EndOffsetsSnapshot)
        and type(after) is type(this)
        and after.snapshot_id == this.snapshot_id
        and after.cluster == this.cluster
    )


def _after_tombstone(state: GroupState) -> GroupState:
    """Rule F1 (:mod:`~streaming.tracking.forget`): a deleted group's state starts again
    empty; only the source positions stay (what follows is still read in offset order)."""
    fresh = GroupState.new(state.cluster, state.group_id)
    fresh.positions = state.positions
    return fresh


def _dispatch(ctx: Context, obs: Observation) -> None:
    p = obs.payload
    gid = group_id_of(p)
    if gid is not None and gid != ctx.state.group_id:
        raise ObservationError(
            f"an observation of group {gid!r} was applied to group {ctx.state.group_id!r}"
        )
    if isinstance(p, OffsetCommit | CommitRun) and p.topic_id != ZERO_UUID:
        # Kafka 4.x names the topic id of every commit: KIP-848 targets name topics by id
        note_topic_ids(ctx, {p.topic: p.topic_id})
    if obs.source == "offsets":
        ts = obs.timestamp_ms
        if ctx.state.last_record_ts_ms is None or ts > ctx.state.last_record_ts_ms:
            ctx.state.last_record_ts_ms = ts
    if isinstance(p, CommitRun):
        _commit_run(ctx, obs, p)
    elif isinstance(p, OffsetCommit):
        _commit(ctx, obs, p)
    elif isinstance(p, OffsetCommitTombstone):
        _commit_deleted(ctx, obs, p)
    elif isinstance(p, GroupMetadata):
        apply_group_metadata(ctx, obs, p)
    elif isinstance(p, GroupMetadataTombstone):
        apply_group_tombstone(ctx, obs, p)
    elif isinstance(p, KIP848_RECORDS) or (
        isinstance(p, Tombstone) and p.record_type in KIP848_TOMBSTONE_TYPES
    ):
        apply_consumer_record(ctx, obs, p)  # type: ignore[arg-type]
    elif isinstance(p, GroupSnapshot):
        _group_snapshot(ctx, p)
    elif isinstance(p, GroupHeartbeat):
        _seen(ctx, GroupSeen(p.group_id, p.snapshot_ts_ms, p.state, p.digest))
    elif isinstance(p, GroupsPolled):
        _seen(ctx, GroupSeen(ctx.state.group_id, p.snapshot_ts_ms, None, None))
    elif isinstance(p, TopicsSnapshot):
        _topics_snapshot(ctx, p)
    elif isinstance(p, EndOffsetsSnapshot):
        _end_offsets_snapshot(ctx, p)
    elif isinstance(p, UnsupportedEvent):
        ctx.skip("unsupported_event")
    elif isinstance(p, Unknown):
        ctx.skip("unknown_record")
    else:  # share and streams groups
        if ctx.state.kind is None:
            ctx.state.kind = "share" if 10 <= p.record_type <= 15 else "streams"
        ctx.skip("unsupported_group_type")


# -- offsets and lag ---------------------------------------------------------------------------


def _verdict(
    config: TrackerConfig,
    entry: CommitEntry | None,
    end_offsets: tuple[tuple[int, int], ...],
    now_ms: int,
) -> Verdict | None:
    """A partition's lag status at ``now_ms`` from its commit entry and end-offset history
    (:mod:`~streaming.tracking.lag_status`); None without a commit or a verdict."""
    if entry is None:
        return None
    return evaluate_partition(
        entry.history,
        entry.offset,
        end_offsets,
        now_ms,
        window_ms=config.lag_status_window_ms,
        allowed_lag=config.lag_status_allowed_records,
    )


def _stale(config: TrackerConfig, history: tuple[tuple[int, int], ...], now_ms: int) -> bool:
    """Whether the newest end offset is older than ``end_offsets_max_age_ms`` at ``now_ms``:
    the lag measured against it is unknown (the collector stopped reporting)."""
    return bool(history) and now_ms - history[-1][0] > config.end_offsets_max_age_ms


def _measure(
    ctx: Context, tp: TopicPartition, committed: int, measured_ts_ms: int, trigger: str
) -> list[TrackerEvent]:
    """The partition's lag row at ``measured_ts_ms`` when it is exported (the first of its
    ``lag_export_interval_ms`` window, or a change of the recorded or pending status;
    ``stored`` when it is the first of its ``lag_interval_ms`` window), and a
    ``LagTransitionRow`` before it when the row's status is recorded (:func:`_held`); the
    partition's entry notes both (``lag_ts_ms``: the last exported measurement, which is
    also the last stored one's window since every stored row is exported). With a hold only
    the collector's snapshots are judged (H3): which commits are measured depends on how the
    log's commits were grouped into runs (:class:`~streaming.tracking.model.CommitRun`)."""
    state, config = ctx.state, ctx.config
    row = _lag_row(ctx, tp, committed, measured_ts_ms, trigger)
    entry = state.commits.get(tp)
    if entry is None:
        return [row]
    interval, every = config.lag_interval_ms, config.lag_export_interval_ms
    last = entry.lag_ts_ms
    stored = interval == 0 or last is None or measured_ts_ms // interval > last // interval
    out: list[TrackerEvent] = []
    hold = config.lag_status_hold_ms
    if hold == 0 or trigger == "snapshot":
        held = _held(entry, row.status, measured_ts_ms, hold)
    else:
        held = _Held(entry.status, entry.pending_status, entry.pending_since_ts_ms, None)
    since = held.since
    if since is not None:
        out.append(
            LagTransitionRow(
                event_id=event_id(
                    "lag_transition", state.cluster, state.group_id, tp.topic, tp.partition, since
                ),
                cluster=state.cluster,
                group_id=state.group_id,
                event_ts_ms=since,
                scope="partition",
                topic=tp.topic,
                partition=tp.partition,
                status_before=entry.status,
                status_after=row.status,
                rule=row.status_rule,
                lag_records=row.lag_records,
                lag_seconds=row.lag_seconds,
            )
        )
    exported = (
        last is None
        or stored
        or every == 0
        or measured_ts_ms // every > last // every
        or held[:3] != (entry.status, entry.pending_status, entry.pending_since_ts_ms)
    )
    if exported:
        state.commits[tp] = replace(
            entry,
            lag_ts_ms=measured_ts_ms if last is None else max(last, measured_ts_ms),
            status=held.status,
            pending_status=held.pending_status,
            pending_since_ts_ms=held.pending_since_ts_ms,
        )
    if exported:
        out.append(row if stored else replace(row, stored=False))
    return out


class _Held(NamedTuple):
    """A partition's recorded status and pending one after a measurement; ``since``: when
    the status it confirmed began (None: nothing confirmed)."""

    status: str | None
    pending_status: str | None
    pending_since_ts_ms: int | None
    since: int | None


def _held(entry: CommitEntry, status: str | None, ts_ms: int, hold_ms: int) -> _Held:
    """The hold (``docs/tracking.md``, "Lag status", H1-H2): a measured ``status`` other than
    the recorded one waits as pending from its first measurement (a different pending one
    starts again there) and is recorded at the first measurement showing it ``hold_ms`` or
    more after that; a measurement of the recorded status drops what was pending. Record
    time only, so the result does not depend on how the records were cut into batches."""
    if status == entry.status:
        return _Held(entry.status, None, None, None)
    since = entry.pending_since_ts_ms
    if since is None or entry.pending_status != status:
        since = ts_ms
    if ts_ms - since >= hold_ms:
        return _Held(status, None, None, since)
    return _Held(entry.status, status, since, None)


def _lag_row(
    ctx: Context, tp: TopicPartition, committed: int, measured_ts_ms: int, trigger: str
) -> PartitionLagRow:
    state = ctx.state
    history = state.end_offsets.get(tp, ())
    end = history[-1][1] if history else None
    end_ts = history[-1][0] if history else None
    records: int | None
    seconds: float | None
    method: LagMethod
    verdict: Verdict | None
    if _stale(ctx.config, history, measured_ts_ms):
        records, seconds, method, verdict = None, None, "unknown", None
    else:
        records = lag_records(end, committed)
        seconds, method = lag_seconds(history, committed, measured_ts_ms)
        verdict = _verdict(ctx.config, state.commits.get(tp), history, measured_ts_ms)
    return PartitionLagRow(
        event_id=event_id(
            "lag", state.cluster, state.group_id, tp.topic, tp.partition, measured_ts_ms, trigger
        ),
        cluster=state.cluster,
        group_id=state.group_id,
        event_ts_ms=measured_ts_ms,
        topic=tp.topic,
        partition=tp.partition,
        committed_offset=committed,
        end_offset=end,
        end_offset_ts_ms=end_ts,
        lag_records=records,
        lag_seconds=seconds,
        lag_seconds_method=method,
        measured_ts_ms=measured_ts_ms,
        trigger=trigger,
        status=None if verdict is None else verdict.status,
        status_rule=None if verdict is None else verdict.rule,
    )


def _commit(ctx: Context, obs: Observation, rec: OffsetCommit) -> None:
    _committed(
        ctx,
        obs,
        TopicPartition(rec.topic, rec.partition),
        rec.offset,
        rec.leader_epoch,
        rec.commit_ts_ms,
        ((rec.commit_ts_ms, rec.offset),),
        rec.metadata,
        rec.expire_ts_ms,
    )


def run_commits(run: CommitRun) -> tuple[tuple[int, int], ...]:
    """A run's ``(commit_ts_ms, offset)`` as the tracker applies them: its history, or its
    last commit."""
    return run.history or ((run.commit_ts_ms, run.offset),)


def _commit_run(ctx: Context, obs: Observation, run: CommitRun) -> None:
    tp = TopicPartition(run.topic, run.partition)
    _committed(
        ctx,
        obs,
        tp,
        run.offset,
        run.leader_epoch,
        run.commit_ts_ms,
        run_commits(run),
        run.metadata,
        run.expire_ts_ms,
    )


def _committed(
    ctx: Context,
    obs: Observation,
    tp: TopicPartition,
    offset: int,
    leader_epoch: int,
    commit_ts_ms: int,
    history: tuple[tuple[int, int], ...],
    metadata: str | None,
    expire_ts_ms: int,
) -> None:
    """The partition's committed offset after one commit or a run of them (``history``:
    their ``(commit_ts_ms, offset)``, oldest first). With ``config.commit_rows`` the
    ``offset_commits`` row of the last one when the table keeps it
    (:mod:`~streaming.tracking.keep`); otherwise the table's rows are the commit lane's
    (:mod:`streaming.spark.commits`)."""
    state, config = ctx.state, ctx.config
    old = state.commits.get(tp)
    reason = commit_kept(state, old, history, obs.timestamp_ms, config)
    state.commits[tp] = committed_entry(
        old,
        offset,
        leader_epoch,
        commit_ts_ms,
        history,
        obs.timestamp_ms,
        kept=reason is not None,
        commit_history=config.commit_history,
    )
    ctx.interest.add(tp.topic)
    ctx.changed = True
    if reason is not None:
        ctx.emit(
            _commit_row(
                ctx,
                obs,
                tp,
                offset=offset,
                leader_epoch=None if leader_epoch < 0 else leader_epoch,
                metadata=metadata,
                commit_ts_ms=commit_ts_ms,
                expire_ts_ms=None if expire_ts_ms < 0 else expire_ts_ms,
                reason=reason,
            )
        )
    if config.emit_lag_on_commit and tp in state.end_offsets:
        ctx.emit(*_measure(ctx, tp, offset, obs.timestamp_ms, "commit"))


def commit_kept(
    state: GroupState,
    old: CommitEntry | None,
    history: tuple[tuple[int, int], ...],
    record_ts_ms: int,
    config: TrackerConfig,
) -> KeepReason | None:
    """Why ``offset_commits`` keeps a commit or run of the group (``old``: its partition's
    entry before it), or None: also when the tracker keeps no rows (``commit_rows`` off)."""
    if not config.commit_rows:
        return None
    return keep_reason(
        old,
        history,
        record_ts_ms,
        state.last_rebalance_ts_ms,
        sample_ms=config.commit_sample_ms,
        jump_records=config.commit_jump_records,
    )


def committed_entry(
    old: CommitEntry | None,
    offset: int,
    leader_epoch: int,
    commit_ts_ms: int,
    history: tuple[tuple[int, int], ...],
    record_ts_ms: int,
    *,
    kept: bool,
    commit_history: int,
) -> CommitEntry:
    """A partition's entry after a commit or a run (``history``: its ``(commit_ts_ms,
    offset)``, oldest first) read at ``record_ts_ms``; ``kept``: ``offset_commits`` keeps
    it. The history goes on from a log entry's (a snapshot's starts again); what the lag
    rows and statuses noted carries over."""
    before = old.history if old is not None and old.source == "log" else ()
    return CommitEntry(
        offset=offset,
        commit_ts_ms=commit_ts_ms,
        record_ts_ms=record_ts_ms,
        leader_epoch=leader_epoch,
        history=(*before, *history)[-commit_history:],
        source="log",
        kept_ts_ms=record_ts_ms if kept else None if old is None else old.kept_ts_ms,
        lag_ts_ms=None if old is None else old.lag_ts_ms,
        status=None if old is None else old.status,
        pending_status=None if old is None else old.pending_status,
        pending_since_ts_ms=None if old is None else old.pending_since_ts_ms,
    )


def _commit_row(
    ctx: Context,
    obs: Observation,
    tp: TopicPartition,
    *,
    offset: int | None,
    leader_epoch: int | None,
    metadata: str | None,
    commit_ts_ms: int | None,
    expire_ts_ms: int | None,
    reason: str,
) -> OffsetCommitRow:
    """An ``offset_commits`` row the tracker keeps, with the commit lane's event id (the
    record's source partition and offset)."""
    state = ctx.state
    return OffsetCommitRow(
        event_id=event_id("commit", state.cluster, state.group_id, f"{obs.partition}:{obs.offset}"),
        cluster=state.cluster,
        group_id=state.group_id,
        event_ts_ms=obs.timestamp_ms,
        topic=tp.topic,
        partition=tp.partition,
        offset=offset,
        leader_epoch=leader_epoch,
        metadata=metadata,
        commit_ts_ms=commit_ts_ms,
        expire_ts_ms=expire_ts_ms,
        deleted=offset is None,
        source_partition=obs.partition,
        source_offset=obs.offset,
        reason=reason,
    )


def _commit_deleted(ctx: Context, obs: Observation, rec: OffsetCommitTombstone) -> None:
    state = ctx.state
    tp = TopicPartition(rec.topic, rec.partition)
    if state.commits.pop(tp, None) is None:
        ctx.skip("unknown_offset_tombstone")
    state.end_offsets.pop(tp, None)
    ctx.changed = True
    if ctx.config.commit_rows:
        ctx.emit(
            _commit_row(
                ctx,
                obs,
                tp,
                offset=None,
                leader_epoch=None,
                metadata=None,
                commit_ts_ms=None,
                expire_ts_ms=None,
                reason="tombstone",
            )
        )


# -- collector events --------------------------------------------------------------------------


def _note_state(ctx: Context, ts: int, name: str | None) -> bool:
    """Record the group's state at a poll; whether the poll is the newest seen."""
    col, config = ctx.state.collector, ctx.config
    newest = col.last_ts_ms is None or ts >= col.last_ts_ms
    if name is not None:
        states = [s for s in col.states if s[0] != ts]
        states.append((ts, name))
        states.sort()
        col.states = tuple(states[-config.snapshot_history :])
    return newest


def _sighting(state: GroupState, ts: int, listed: set[str]) -> None:
    """A poll at ``ts`` listed these members (and no other of the current generation)."""
    col = state.collector
    current: set[str] = set(listed)
    if state.classic is not None:
        current.update(m.member_id for m in state.classic.members)
    seen = {k: v for k, v in col.member_seen.items() if k in current}
    for member_id in listed:
        if seen.get(member_id, -1) < ts:
            seen[member_id] = ts
    col.member_seen = seen
    # members of the generation this snapshot no longer lists: removed by ``ts`` (a
    # LeaveGroup, a session timeout); the first such snapshot after the last listing
    gone = {k: v for k, v in col.member_gone.items() if k in current and v > seen.get(k, -1)}
    for member_id in current - listed:
        if ts > seen.get(member_id, -1) and ts < gone.get(member_id, ts + 1):
            gone[member_id] = ts
    col.member_gone = gone


def _seen(ctx: Context, ev: GroupSeen) -> None:
    """A poll that found the group as its newest ``group`` event described it: applied as
    that event's content would be at ``ev.ts_ms``. A heartbeat naming another digest (its
    ``group`` event was not read) gives the state and the time only."""
    col = ctx.state.collector
    same = ev.digest is None or ev.digest == col.digest
    newest = _note_state(ctx, ev.ts_ms, ev.state if ev.state is not None else col.state)
    if newest:
        col.last_ts_ms = ev.ts_ms
        if ev.state is not None:
            col.state = ev.state
    if same and col.listed is not None:
        _sighting(ctx.state, ev.ts_ms, set(col.listed))
    ctx.interest.update(col.topics)
    ctx.changed = True


def _group_snapshot(ctx: Context, ev: GroupSnapshot) -> None:
    state = ctx.state
    col = state.collector
    ts = ev.snapshot_ts_ms
    prev = ev.previous_poll_ts_ms
    if (
        prev is not None
        and prev < ts
        and ev.previous_digest is not None
        and ev.previous_digest == col.digest
        and (col.last_ts_ms is None or prev > col.last_ts_ms)
    ):
        # the poll before the change, which no ``poll`` event may have named: the group as
        # the tracker holds it, then (its state, its members last listed)
        _seen(ctx, GroupSeen(ev.group_id, prev, col.state, ev.previous_digest))
    newest = _note_state(ctx, ts, ev.state)
    if newest:
        if ev.session_timeout_ms is not None:
            col.session_timeout_ms = ev.session_timeout_ms
        col.last_ts_ms = ts
        col.state = ev.state
        col.protocol_type = ev.protocol_type
        col.protocol_name = ev.protocol_name
        col.group_type = ev.group_type
        col.membership_source = ev.membership_source
        col.topics = tuple(sorted(set(ev.topics)))
        if ev.schema_version >= 2:  # what its heartbeats refer to
            col.digest = ev.digest
            col.listed = None if ev.members is None else tuple(m.member_id for m in ev.members)
    if ev.members is not None:
        _sighting(state, ts, {m.member_id for m in ev.members})
    if state.kind is None and ev.group_type in ("classic", "consumer"):
        state.kind = ev.group_type
    # OffsetFetch answers fill in partitions the log has not shown a commit for, unless the
    # log was read past the snapshot (then the log knows better: deleted, or never committed)
    log_is_newer = state.last_record_ts_ms is not None and state.last_record_ts_ms >= ts
    for o in () if log_is_newer else ev.committed_offsets or ():
        tp = TopicPartition(o.topic, o.partition)
        if tp not in state.commits and o.offset >= 0:
            state.commits[tp] = CommitEntry(
                offset=o.offset,
                commit_ts_ms=ts,
                record_ts_ms=ts,
                leader_epoch=-1 if o.leader_epoch is None else o.leader_epoch,
                history=(),
                source="snapshot",
            )
    ctx.interest.update(ev.topics)
    ctx.changed = True


def _topics_snapshot(ctx: Context, ev: TopicsSnapshot) -> None:
    state, config = ctx.state, ctx.config
    interest = ctx.interest
    ts = ev.snapshot_ts_ms
    measured = ev.end_offsets_ts_ms if ev.end_offsets_ts_ms is not None else ts
    for t in list(state.topics):
        if t not in interest:
            del state.topics[t]
    for tp in [tp for tp in state.end_offsets if tp.topic not in interest]:
        del state.end_offsets[tp]
    rows: list[TrackerEvent] = []
    for topic in ev.topics:
        name = topic.topic
        if name not in interest or topic.error is not None:
            continue
        old = state.topics.get(name)
        counts = old.counts if old is not None else ()
        if topic.partition_count is not None and (
            not counts or (counts[-1][1] != topic.partition_count and ts > counts[-1][0])
        ):
            counts = (*counts, (ts, topic.partition_count))[-config.topic_count_history :]
        racks: tuple[tuple[str, ...], ...] | None = None
        if any(r is not None for p in topic.partitions for r in p.replica_racks):
            by_p = {
                p.partition: tuple(r for r in p.replica_racks if r is not None)
                for p in topic.partitions
            }
            n = max(by_p) + 1
            racks = tuple(by_p.get(i, ()) for i in range(n))
        elif old is not None and old.racks is not None and not topic.partitions:
            racks = old.racks
        state.topics[name] = TopicMeta(
            topic_id=topic.topic_id or (old.topic_id if old is not None else None),
            counts=counts,
            racks=racks,
        )
        for p in topic.partitions:
            if p.end_offset is None:
                continue
            tp = TopicPartition(name, p.partition)
            history = state.end_offsets.get(tp, ())
            newest = not history or measured >= history[-1][0]
            state.end_offsets[tp] = add_point(
                history, measured, p.end_offset, config.end_offset_history
            )
            entry = state.commits.get(tp)
            if entry is not None and newest:
                rows += _measure(ctx, tp, entry.offset, measured, "snapshot")
    if ev.schema_version == 1 and (
        state.end_offsets_ts_ms is None or measured > state.end_offsets_ts_ms
    ):
        state.end_offsets_ts_ms = measured
    ctx.emit(*rows)
    ctx.changed = True
    settle_deferred(ctx)  # a KIP-848 target epoch may have waited for these topic ids


def _end_offsets_snapshot(ctx: Context, ev: EndOffsetsSnapshot) -> None:
    """Version 2's end offsets: a point per partition of the topics the group touches, the
    partitions not repeated (unless ``full``) at the end offset they had, except on topics
    whose end offsets could not be read and, for a chunk of the event, on topics it does
    not cover (another chunk's); a lag row per committed partition.

    A change (``moves``) applies to the end offset the group had as of the previous event
    (``previous_end_offsets_ts_ms``). A partition whose newest point is not of that event
    (the group missed it) is neither moved nor repeated: its end offset ages until a
    ``full`` event gives it again, rather than being carried on from a base the collector
    did not count from."""
    state, config, interest = ctx.state, ctx.config, ctx.interest
    measured = ev.end_offsets_ts_ms
    for tp in [tp for tp in state.end_offsets if tp.topic not in interest]:
        del state.end_offsets[tp]
    given = {TopicPartition(t, p): o for t, p, o in ev.offsets if t in interest}
    if not ev.full:
        previous = ev.previous_end_offsets_ts_ms
        for t, p, change in ev.moves:
            if t not in interest:
                continue
            tp = TopicPartition(t, p)
            history = state.end_offsets.get(tp)
            if history and history[-1][0] == previous:
                given[tp] = history[-1][1] + change
        failed = {i.topic for i in ev.errors if i.topic is not None}
        covered = ev.covered_topics
        for tp, history in state.end_offsets.items():
            if (
                tp not in given
                and tp.topic not in failed
                and (covered is None or tp.topic in covered)
                and history
                and (previous is None or history[-1][0] == previous)
            ):
                given[tp] = history[-1][1]
    rows: list[TrackerEvent] = []
    for tp, offset in sorted(given.items()):
        history = state.end_offsets.get(tp, ())
        newest = not history or measured >= history[-1][0]
        state.end_offsets[tp] = add_point(history, measured, offset, config.end_offset_history)
        entry = state.commits.get(tp)
        if entry is not None and newest:
            rows += _measure(ctx, tp, entry.offset, measured, "snapshot")
    if state.end_offsets_ts_ms is None or measured > state.end_offsets_ts_ms:
        state.end_offsets_ts_ms = measured
    ctx.emit(*rows)
    ctx.changed = True


# -- status ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _GroupLag:
    """The group's partitions' lag at one time: the sums and worsts the status and the
    rollup report (``unknown``: some partition's end offset is stale)."""

    partitions: int
    measured: int
    stale: int
    total: int | None
    max_records: int | None
    worst_seconds: float | None
    statuses: tuple[str | None, ...]

    @property
    def unknown(self) -> bool:
        return self.stale > 0


def _group_lag(state: GroupState, now_ms: int, config: TrackerConfig) -> _GroupLag:
    total: int | None = None
    max_records: int | None = None
    worst: float | None = None
    statuses: list[str | None] = []
    measured = stale = 0
    for tp, entry in state.commits.items():
        history = state.end_offsets.get(tp)
        if not history:
            statuses.append(None)  # no end offset: no lag, no verdict (S1)
            continue
        if _stale(config, history, now_ms):
            stale += 1  # the end offset is too old: lag and verdict unknown
            statuses.append(None)
            continue
        measured += 1
        lag = lag_records(history[-1][1], entry.offset)
        if lag is not None:
            total = (total or 0) + lag
            max_records = lag if max_records is None else max(max_records, lag)
        seconds, _method = lag_seconds(history, entry.offset, history[-1][0])
        if seconds is not None and (worst is None or seconds > worst):
            worst = seconds
        verdict = _verdict(config, entry, history, now_ms)
        statuses.append(None if verdict is None else verdict.status)
    return _GroupLag(
        len(state.commits), measured, stale, total, max_records, worst, tuple(statuses)
    )


def _group_transition(ctx: Context, ts_ms: int) -> None:
    """The group's ``lag_transitions`` row when the worst of its partitions' recorded
    statuses (G1 over what the hold let through, H4) is not the group's last one: judged
    after each observation that recorded a partition's status or changed the set of its
    partitions, so the rows do not depend on how the records were cut into micro-batches."""
    state = ctx.state
    worst = group_status(entry.status for entry in state.commits.values())
    if worst == state.lag_status:
        return
    lag = _group_lag(state, ts_ms, ctx.config)
    ctx.emit(
        LagTransitionRow(
            event_id=event_id("lag_transition", state.cluster, state.group_id, ts_ms),
            cluster=state.cluster,
            group_id=state.group_id,
            event_ts_ms=ts_ms,
            scope="group",
            topic=None,
            partition=None,
            status_before=state.lag_status,
            status_after=worst,
            rule=None,
            lag_records=None if lag.unknown else lag.total,
            lag_seconds=None if lag.unknown else lag.worst_seconds,
        )
    )
    state.lag_status = worst


def rollup_due(state: GroupState, ts_ms: int, config: TrackerConfig) -> bool:
    """Whether the group's ``group_lag`` row is due at ``ts_ms`` (its logical time): the
    first of its ``group_lag_interval_ms`` window, for a group with a lag to report."""
    if not rollup_window_opens(state.group_lag_ts_ms, ts_ms, config.group_lag_interval_ms):
        return False
    ends = state.end_offsets
    return bool(ends) and any(tp in ends for tp in state.commits)


def rollup_window_opens(last_ts_ms: int | None, ts_ms: int, interval_ms: int) -> bool:
    """Whether ``ts_ms`` is in a later ``interval_ms`` window (aligned to the epoch) than
    the last rollup's (``last_ts_ms``; None: none yet)."""
    return interval_ms > 0 and (
        last_ts_ms is None or ts_ms // interval_ms > last_ts_ms // interval_ms
    )


def status_from_collector(state: GroupState) -> bool:
    """Whether the group's status names the collector's state (no record newer than its
    last snapshot) rather than the one its records derive."""
    col = state.collector
    return collector_names_status(col.state, col.last_ts_ms, state.last_record_ts_ms)


def collector_names_status(
    collector_state: str | None, collector_ts_ms: int | None, last_record_ts_ms: int | None
) -> bool:
    """:func:`status_from_collector` of its fields: the collector's last state and snapshot
    time, the group's last record time."""
    return collector_state is not None and (
        last_record_ts_ms is None
        or (collector_ts_ms is not None and collector_ts_ms >= last_record_ts_ms)
    )


def _rollup(ctx: Context, ts_ms: int) -> None:
    """The group's ``group_lag`` row, at its first observation (``ts_ms``: its logical time)
    in each window of ``group_lag_interval_ms``, for a group some of whose partitions have
    an end offset (a lag to report)."""
    state, config = ctx.state, ctx.config
    if not rollup_due(state, ts_ms, config):
        return
    interval = config.group_lag_interval_ms
    lag = _group_lag(state, ts_ms, config)
    state.group_lag_ts_ms = ts_ms
    counts = {"OK": 0, "WARN": 0, "ERR": 0}
    for s in lag.statuses:
        if s is not None:
            counts["OK" if s == "OK" else "WARN" if s == "WARN" else "ERR"] += 1
    window = ts_ms - ts_ms % interval
    ctx.emit(
        GroupLagRow(
            event_id=event_id("group_lag", state.cluster, state.group_id, window),
            cluster=state.cluster,
            group_id=state.group_id,
            event_ts_ms=ts_ms,
            interval_ts_ms=window,
            partitions=lag.partitions,
            partitions_measured=lag.measured,
            partitions_unknown=lag.stale,
            total_lag_records=None if lag.unknown else lag.total,
            max_lag_records=None if lag.unknown else lag.max_records,
            max_lag_seconds=None if lag.unknown else lag.worst_seconds,
            status=group_status(lag.statuses),
            partitions_ok=counts["OK"],
            partitions_warn=counts["WARN"],
            partitions_err=counts["ERR"],
        )
    )


def _status(
    state: GroupState,
    now_ms: int,
    config: TrackerConfig = DEFAULT_CONFIG,
    lag: _GroupLag | None = None,
) -> GroupStatus:
    if lag is None:
        lag = _group_lag(state, now_ms, config)
    col = state.collector
    cg = state.consumer
    classic = state.classic
    generation: int | None = None
    group_epoch: int | None = None
    members = 0
    strategy: str | None = None
    protocol_type: str | None = col.protocol_type
    rebalance_protocol: str | None = None
    derived: str
    if cg is not None:
        current = [m for m in cg.members.values() if m.has_metadata]
        members = len(current)
        generation = cg.assignment_epoch
        group_epoch = cg.group_epoch
        protocol_type = "consumer"
        rebalance_protocol = "cooperative"
        named = [m.server_assignor for m in current if m.server_assignor]
        strategy = named[0] if named else None
        if not current:
            derived = "Empty"
        elif (cg.group_epoch or 0) > (cg.assignment_epoch or 0):
            derived = "Assigning"
        elif any(
            m.member_epoch != cg.assignment_epoch or m.state != 0 or m.pending_revocation
            for m in current
        ):
            derived = "Reconciling"
        else:
            derived = "Stable"
    elif classic is not None:
        members = len(classic.members)
        generation = classic.generation
        strategy = classic.protocol
        protocol_type = classic.protocol_type or protocol_type
        rebalance_protocol = classic.rebalance_protocol
        derived = "Stable" if classic.members else "Empty"
    else:
        derived = "Empty" if state.commits else "Unknown"
    use_collector = status_from_collector(state)
    return GroupStatus(
        event_id=event_id("status", state.cluster, state.group_id),
        cluster=state.cluster,
        group_id=state.group_id,
        event_ts_ms=now_ms,
        as_of_ts_ms=now_ms,
        group_protocol=state.kind,
        protocol_type=protocol_type,
        strategy=strategy,
        state=col.state if use_collector and col.state is not None else derived,
        state_source="collector" if use_collector else "records",
        generation=generation,
        group_epoch=group_epoch,
        member_count=members,
        rebalance_protocol=rebalance_protocol,
        last_rebalance_ts_ms=state.last_rebalance_ts_ms,
        last_cause=state.last_cause,
        committed_partitions=len(state.commits),
        total_lag_records=None if lag.unknown else lag.total,
        max_lag_seconds=None if lag.unknown else lag.worst_seconds,
        collector_seen_ts_ms=col.last_ts_ms,
        skipped_records=sum(state.counters.values()),
        lag_status=group_status(lag.statuses),
    )
