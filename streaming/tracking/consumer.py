"""KIP-848 consumer groups: records 3-8 and 16 -> rebalance events.

What the coordinator writes (``kafka-internals.md`` §2.5, §8.2) and what the tracker makes
of it:

=============================================  ==========================================
record                                         tracker
=============================================  ==========================================
MemberMetadata (5)                             member joins / changes subscription
ConsumerGroupMetadata (3), epoch + 1           a rebalance starts (``started_ts_ms``);
                                               a rebalance still reconciling is emitted as
                                               ``superseded``
PartitionMetadata (4) / metadata hash          partition counts the coordinator used
TargetAssignmentMember (7) per changed member  the member's new target
TargetAssignmentMetadata (6), new epoch        the target is complete: the rebalance
                                               event is built (held until reconciled)
CurrentMemberAssignment (8)                    a member's reconciliation progress; when
                                               every member is STABLE at the target epoch
                                               the held event is emitted (``completed``)
tombstones 8, 7, 5 for one member              the member left (or was fenced)
tombstone 3 (after all others)                 GroupDeleted
=============================================  ==========================================

A static member that comes back under a new member id within one epoch (its predecessor's
records tombstoned, its own written, no epoch bump) gives a static-rejoin event without
rebalance once its CurrentMemberAssignment is written.

Target assignments name topics by id; names come from the partition metadata (<= 4.0) or
the collector's topics events; an id that cannot be resolved stands for its own name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

from assign_core.javacompat import string_hash, string_hash_order, timeline_slot
from assign_core.model import Member, TopicPartition
from streaming.codec.model import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupRegularExpression,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    GroupMetadata,
    MemberKey,
    RegularExpressionKey,
    Tombstone,
    TopicIdPartitions,
)
from streaming.codec.reader import ZERO_UUID
from streaming.tracking.causes import CauseFacts, DepartureEvidence, classify, judge_departure
from streaming.tracking.context import (
    Context,
    commit_interval_ms,
    counts_for,
    last_commit_ts_ms,
    racks_for,
    topic_ids_for,
)
from streaming.tracking.events import (
    Completion,
    Departure,
    GroupDeleted,
    MemberInfo,
    RebalanceEvent,
    StaticRejoin,
    event_id,
    from_row,
    to_row,
)
from streaming.tracking.expected import (
    KIP848_ASSIGNORS,
    consumer_spec,
    failures,
    run_strategies,
)
from streaming.tracking.model import Observation, group_id_of
from streaming.tracking.rebalance import Timing, build_event, identities, rows_of
from streaming.tracking.state import (
    ConsumerGroupState,
    ConsumerMember,
    DeferredTarget,
    DepartedMember,
    IdPartition,
    PendingRebalance,
)

__all__ = ["apply_consumer_record", "flush_timeout", "note_topic_ids", "settle_deferred"]

ConsumerRecord = (
    ConsumerGroupMetadata
    | ConsumerGroupPartitionMetadata
    | ConsumerGroupMemberMetadata
    | ConsumerGroupTargetAssignmentMetadata
    | ConsumerGroupTargetAssignmentMember
    | ConsumerGroupCurrentMemberAssignment
    | ConsumerGroupRegularExpression
    | Tombstone
)

_STABLE = 0


def _id_partitions(entries: tuple[TopicIdPartitions, ...]) -> tuple[IdPartition, ...]:
    return tuple((e.topic_id, p) for e in entries for p in e.partitions)


def _names(ctx: Context, cg: ConsumerGroupState) -> dict[str, str]:
    """Topic id -> name from everything that carries the mapping: offset commits (Kafka 4.x
    writes the topic id in the OffsetCommit value), the collector's topics events and the
    PartitionMetadata record (written up to Kafka 4.0)."""
    names = dict(cg.topic_names)
    names.update({meta.topic_id: t for t, meta in ctx.state.topics.items() if meta.topic_id})
    names.update({tid: t for t, (tid, _n) in cg.partition_metadata.items()})
    return names


def _renamed(m: MemberInfo, names: dict[str, str]) -> MemberInfo:
    """``m`` with partitions that still carry a topic id renamed (resolved since)."""
    if not any(tp.topic in names for tp in m.partitions):
        return m
    return replace(
        m,
        partitions=tuple(
            TopicPartition(names.get(tp.topic, tp.topic), tp.partition) for tp in m.partitions
        ),
    )


def _unresolved_ids(
    members: Sequence[ConsumerMember],
    before: Sequence[MemberInfo],
    departed: Sequence[DepartedMember],
    names: dict[str, str],
) -> list[str]:
    """Topic ids of the targets (after) and of the partitions held before that have no name:
    a partition whose topic its member does not subscribe can only be an unresolved id."""
    ids = {tid for m in members for tid, _p in m.target or () if tid not in names}
    for info in (*before, *(d.info for d in departed)):
        ids.update(
            tp.topic for tp in info.partitions if names.get(tp.topic, tp.topic) not in info.topics
        )
    return sorted(ids)


def note_topic_ids(ctx: Context, ids: Mapping[str, str]) -> None:
    """Topic name -> id pairs seen in the records (OffsetCommit values): remembered for the
    group, and a target epoch waiting for names is built if they are all known now."""
    cg = ctx.state.consumer
    if cg is None:
        return
    for name, tid in ids.items():
        if tid and tid != ZERO_UUID and cg.topic_names.get(tid) != name:
            cg.topic_names[tid] = name
            ctx.changed = True
    settle_deferred(ctx)


def _resolve(
    ids: tuple[IdPartition, ...] | None, names: dict[str, str]
) -> tuple[TopicPartition, ...]:
    if not ids:
        return ()
    return tuple(TopicPartition(names.get(tid, tid), p) for tid, p in ids)


def _subscribed(m: ConsumerMember, cg: ConsumerGroupState) -> tuple[str, ...]:
    topics = set(m.topics)
    if m.regex is not None:
        topics.update(cg.regex_topics.get(m.regex, ()))
    return tuple(sorted(topics))


def _info(
    ctx: Context, m: ConsumerMember, cg: ConsumerGroupState, names: dict[str, str]
) -> MemberInfo:
    return MemberInfo(
        member_id=m.member_id,
        group_instance_id=m.instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        rack=m.rack,
        topics=_subscribed(m, cg),
        partitions=_resolve(m.target, names),
        session_timeout_ms=m.session_timeout_ms or _session_timeout_ms(ctx),
        rebalance_timeout_ms=m.rebalance_timeout_ms if m.rebalance_timeout_ms >= 0 else None,
    )


def _session_timeout_ms(ctx: Context) -> int:
    """The group's KIP-848 session timeout: as the broker reported it to the collector
    (DescribeConfigs: the group's ``consumer.session.timeout.ms``, else the broker's
    ``group.consumer.session.timeout.ms``), else the tracker's per-cluster setting."""
    reported = ctx.state.collector.session_timeout_ms
    return reported if reported is not None else ctx.config.consumer_session_timeout_ms


def _placeholder(cg: ConsumerGroupState, member_id: str, ts: int) -> ConsumerMember:
    member = ConsumerMember(
        member_id=member_id,
        instance_id=None,
        rack=None,
        client_id="",
        client_host="",
        topics=(),
        regex=None,
        server_assignor=None,
        rebalance_timeout_ms=-1,
        session_timeout_ms=None,
        target=None,
        member_epoch=0,
        state=_STABLE,
        current=(),
        pending_revocation=(),
        seen_ts_ms=ts,
        order=cg.next_order,
        has_metadata=False,
    )
    cg.next_order += 1
    # the coordinator's TimelineHashMap grows before an insertion past 3/4 of its slots
    if (len(cg.members) + 1) * 0.75 > cg.table_capacity:
        cg.table_capacity *= 2
    return member


def _member(cg: ConsumerGroupState, member_id: str, ts: int) -> ConsumerMember:
    m = cg.members.get(member_id)
    return m if m is not None else _placeholder(cg, member_id, ts)


def apply_consumer_record(ctx: Context, obs: Observation, rec: ConsumerRecord) -> None:
    state = ctx.state
    if state.classic is not None:
        state.classic = None  # converted from a classic group (its tombstone was missed)
    if state.consumer is None:
        if isinstance(rec, Tombstone):
            ctx.skip("unknown_group_tombstone")
            return
        state.consumer = ConsumerGroupState()
    state.kind = "consumer"
    ctx.changed = True
    cg = state.consumer
    ts = obs.timestamp_ms
    if isinstance(rec, ConsumerGroupMetadata):
        if cg.pending is not None and rec.epoch > cg.pending.epoch:
            _flush(ctx, "superseded", ts)
        if cg.group_epoch is None or rec.epoch > cg.group_epoch:
            # written with the heartbeat that bumped the epoch: members whose metadata came
            # with it are not yet in the coordinator's member table when it assigns
            cg.joining = tuple(
                m.member_id for m in cg.members.values() if m.has_metadata and m.target is None
            )
        cg.group_epoch = rec.epoch
        cg.epoch_ts_ms = ts
        cg.metadata_hash = rec.metadata_hash
    elif isinstance(rec, ConsumerGroupPartitionMetadata):
        cg.partition_metadata = {t.topic_name: (t.topic_id, t.num_partitions) for t in rec.topics}
        settle_deferred(ctx)
    elif isinstance(rec, ConsumerGroupMemberMetadata):
        _member_metadata(ctx, cg, rec, ts)
    elif isinstance(rec, ConsumerGroupTargetAssignmentMember):
        m = _member(cg, rec.member_id, ts)
        cg.members[rec.member_id] = replace(m, target=_id_partitions(rec.topic_partitions))
    elif isinstance(rec, ConsumerGroupTargetAssignmentMetadata):
        cg.assignment_epoch = rec.assignment_epoch
        cg.assignment_ts_ms = ts
        if rec.assignment_epoch > 0 and (
            cg.last_epoch is None or rec.assignment_epoch > cg.last_epoch
        ):
            _target_complete(ctx, obs, cg, rec.assignment_epoch)
    elif isinstance(rec, ConsumerGroupCurrentMemberAssignment):
        m = _member(cg, rec.member_id, ts)
        cg.members[rec.member_id] = replace(
            m,
            member_epoch=rec.member_epoch,
            state=rec.state,
            current=_id_partitions(rec.assigned_partitions),
            pending_revocation=_id_partitions(rec.partitions_pending_revocation),
            seen_ts_ms=ts,
        )
        _static_replacement_done(ctx, obs, cg, rec.member_id)
        _note_reconciled(cg, ts)
        _maybe_complete(ctx, cg, ts)
    elif isinstance(rec, ConsumerGroupRegularExpression):
        cg.regex_topics[rec.regular_expression] = rec.topics
    else:
        _tombstone(ctx, obs, cg, rec)


def _member_metadata(
    ctx: Context, cg: ConsumerGroupState, rec: ConsumerGroupMemberMetadata, ts: int
) -> None:
    existing = cg.members.get(rec.member_id)
    if (existing is None or not existing.has_metadata) and rec.instance_id is not None:
        # a static member under a new member id: its predecessor is still listed (static
        # leave, epoch -2) or was tombstoned since the last epoch
        old = next(
            (
                m.member_id
                for m in cg.members.values()
                if m.instance_id == rec.instance_id and m.member_id != rec.member_id
            ),
            None,
        )
        if old is None:
            old = next(
                (
                    d.info.member_id
                    for d in cg.departed
                    if d.info.group_instance_id == rec.instance_id
                ),
                None,
            )
        if old is None:
            old = next(
                (
                    m.member_id
                    for m in cg.last_members
                    if m.group_instance_id == rec.instance_id and m.member_id not in cg.members
                ),
                None,
            )
        if old is not None:
            cg.replacements = (*cg.replacements, StaticRejoin(rec.instance_id, old, rec.member_id))
    m = existing if existing is not None else _placeholder(cg, rec.member_id, ts)
    classic = rec.classic_member_metadata
    cg.members[rec.member_id] = replace(
        m,
        instance_id=rec.instance_id,
        rack=rec.rack_id or None,
        client_id=rec.client_id,
        client_host=rec.client_host,
        topics=tuple(rec.subscribed_topic_names),
        regex=rec.subscribed_topic_regex or None,
        server_assignor=rec.server_assignor,
        rebalance_timeout_ms=rec.rebalance_timeout_ms,
        session_timeout_ms=classic.session_timeout_ms
        if classic is not None and classic.session_timeout_ms > 0
        else None,
        seen_ts_ms=ts,
        has_metadata=True,
    )


def _tombstone(ctx: Context, obs: Observation, cg: ConsumerGroupState, rec: Tombstone) -> None:
    ts = obs.timestamp_ms
    key = rec.key
    member_id = key.member_id if isinstance(key, MemberKey) else None
    t = rec.record_type
    if t == 3:
        _group_deleted(ctx, obs)
    elif t == 4:
        cg.partition_metadata = {}
    elif t == 6:
        cg.assignment_epoch = None
    elif t == 16 and isinstance(key, RegularExpressionKey):
        cg.regex_topics.pop(key.regular_expression, None)
    elif member_id is not None and member_id in cg.members:
        m = cg.members[member_id]
        if t == 8:
            cg.members[member_id] = replace(m, member_epoch=-1, pending_revocation=())
        elif t == 7:
            cg.members[member_id] = replace(m, target=None)
        elif t == 5:
            del cg.members[member_id]
            if m.has_metadata:
                names = _names(ctx, cg)
                last = next((x for x in cg.last_members if x.member_id == member_id), None)
                info = _info(ctx, m, cg, names)
                held = tuple(
                    dict.fromkeys(_resolve(m.current, names) + (last.partitions if last else ()))
                )
                info = replace(info, partitions=held)
                alive = max(m.seen_ts_ms, last_commit_ts_ms(ctx.state, held) or m.seen_ts_ms)
                cg.departed = (*cg.departed, DepartedMember(info, alive, ts))
        else:
            ctx.skip("unsupported")
    else:
        ctx.skip("unknown_member_tombstone")


def _group_deleted(ctx: Context, obs: Observation) -> None:
    state = ctx.state
    cg = state.consumer
    assert cg is not None
    settle_deferred(ctx, force=True)
    if cg.pending is not None:
        _flush(ctx, "deleted", obs.timestamp_ms)
    converted = any(
        isinstance(o.payload, GroupMetadata) and group_id_of(o.payload) == state.group_id
        for o in ctx.ahead()
    )
    ctx.emit(
        GroupDeleted(
            event_id=event_id(
                "deleted", state.cluster, state.group_id, f"{obs.partition}:{obs.offset}"
            ),
            cluster=state.cluster,
            group_id=state.group_id,
            event_ts_ms=obs.timestamp_ms,
            group_protocol="consumer",
            last_generation=cg.last_epoch,
            reason="converted" if converted else "deleted",
            source_partition=obs.partition,
            source_offset=obs.offset,
        )
    )
    state.consumer = None
    state.kind = None


def _own_assignor(ctx: Context, members: list[ConsumerMember]) -> str:
    named = Counter(m.server_assignor for m in members if m.server_assignor)
    if not named:
        return ctx.config.default_server_assignor
    top = max(named.values())
    return next(name for name in named if named[name] == top)


def _target_complete(ctx: Context, obs: Observation, cg: ConsumerGroupState, epoch: int) -> None:
    """A new target assignment epoch: take its inputs, and build its rebalance event now or,
    if some topic ids have no name yet, as soon as they have (:func:`settle_deferred`)."""
    ts = obs.timestamp_ms
    if cg.pending is not None:
        _flush(ctx, "superseded", ts)
    if cg.deferred is not None:  # the previous epoch never got its names: build it as it is
        settle_deferred(ctx, force=True)
        if cg.pending is not None:
            _flush(ctx, "superseded", ts)
    current = tuple(
        sorted((m for m in cg.members.values() if m.has_metadata), key=lambda m: m.order)
    )
    target = DeferredTarget(
        epoch=epoch,
        target_ts_ms=ts,
        source_partition=obs.partition,
        source_offset=obs.offset,
        # the first epoch seen is a baseline unless the group is visibly new: no member had
        # reached an epoch yet (a compacted log shows established members' assignments)
        first=cg.last_epoch is None and any(m.member_epoch > 0 or m.current for m in current),
        started_ts_ms=cg.epoch_ts_ms if cg.group_epoch == epoch else None,
        metadata_hash=cg.metadata_hash,
        members=current,
        departed=cg.departed,
        replacements=cg.replacements,
        assignor_order=_assignor_order(cg, current),
    )
    cg.departed = ()
    cg.replacements = ()
    if _unresolved_ids(current, cg.last_members, target.departed, _names(ctx, cg)):
        cg.deferred = target
        return
    _build(ctx, cg, target)
    _maybe_complete(ctx, cg, ts)


def _assignor_order(cg: ConsumerGroupState, current: Sequence[ConsumerMember]) -> tuple[str, ...]:
    """The order in which the coordinator put the members into the assignor's ``HashMap``
    (``TargetAssignmentBuilder.build``): the group's members in the iteration order of its
    ``TimelineHashMap`` (slots ascending, the latest insertion first within a slot; the
    table has ``table_capacity`` slots), then the members that joined with this epoch.
    Members that share a ``HashMap`` bin keep this order, and the server assignors give
    quotas and partitions in ``memberIds()`` order, so it decides ties."""
    joining = set(cg.joining)
    cap = cg.table_capacity
    settled = sorted(
        (m for m in current if m.member_id not in joining),
        key=lambda m: (timeline_slot(string_hash(m.member_id), cap), -m.order),
    )
    new = [m.member_id for m in current if m.member_id in joining]
    return (*(m.member_id for m in settled), *string_hash_order(new))


def settle_deferred(ctx: Context, *, force: bool = False) -> None:
    """Build the rebalance event of a target epoch that waited for topic names, once every
    id it holds (after and before) resolves, or now with ``force`` (a newer epoch, the
    group's deletion, the timeout): then ids without a name stand for themselves and the
    expected assignments carry the error "topic ids not resolved"."""
    cg = ctx.state.consumer
    if cg is None or cg.deferred is None:
        return
    d = cg.deferred
    if not force and _unresolved_ids(d.members, cg.last_members, d.departed, _names(ctx, cg)):
        return
    cg.deferred = None
    ctx.changed = True
    _build(ctx, cg, d)
    if d.reconciled_ts_ms is not None:
        _flush(ctx, "completed", d.reconciled_ts_ms)


def _note_reconciled(cg: ConsumerGroupState, ts: int) -> None:
    """Remember when the members reached a target epoch that still waits for names."""
    d = cg.deferred
    if d is None or d.reconciled_ts_ms is not None:
        return
    for m in cg.members.values():
        if m.has_metadata and (
            m.member_epoch < d.epoch or m.state != _STABLE or m.pending_revocation
        ):
            return
    cg.deferred = replace(d, reconciled_ts_ms=ts)


def _build(ctx: Context, cg: ConsumerGroupState, target: DeferredTarget) -> None:
    """Build and hold the rebalance event of ``target`` (names resolved on both sides: the
    previous epoch's members are renamed too, so churn and the owned partitions handed to
    the assignors compare like with like)."""
    state, config = ctx.state, ctx.config
    ts = target.target_ts_ms
    epoch = target.epoch
    first = target.first
    names = _names(ctx, cg)
    current = list(target.members)
    after = tuple(_info(ctx, m, cg, names) for m in current)
    before = tuple(_renamed(m, names) for m in cg.last_members)
    departed_members = tuple(replace(d, info=_renamed(d.info, names)) for d in target.departed)

    subscribed = sorted({t for m in after for t in m.topics})
    authoritative = {t: n for t, (_tid, n) in cg.partition_metadata.items()}
    counts, sources = counts_for(
        state, subscribed, ts, [tp for m in after for tp in m.partitions], authoritative
    )

    b_ids = {m.identity: m for m in before}
    a_ids = {m.identity: m for m in after}
    departures: tuple[Departure, ...] = ()
    joined: tuple[str, ...] = ()
    sub_changed: tuple[str, ...] = ()
    counts_changed: tuple[str, ...] = ()
    if cg.last_epoch is None:
        joined = () if first else tuple(a_ids)
    else:
        departed = {d.info.identity: d for d in departed_members}
        # a member removed since the last epoch and back under the same member id (KIP-848
        # clients keep theirs: fenced, then a new join) left and joined in between
        back = {
            i
            for i, d in departed.items()
            if i in a_ids and i in b_ids and a_ids[i].member_id == d.info.member_id
        }
        deps = []
        for identity, m in b_ids.items():
            if identity in a_ids and identity not in back:
                continue
            d = departed.get(identity)
            deps.append(
                judge_departure(
                    DepartureEvidence(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        session_timeout_ms=m.session_timeout_ms or _session_timeout_ms(ctx),
                        last_alive_ts_ms=None if d is None else d.last_alive_ts_ms,
                        removed_after_ts_ms=None if d is None else d.removed_ts_ms,
                        removed_by_ts_ms=None if d is None else d.removed_ts_ms,
                        commit_interval_ms=commit_interval_ms(
                            state, d.info.partitions if d is not None else m.partitions
                        ),
                    ),
                    config.crash_session_fraction,
                )
            )
        departures = tuple(deps)
        joined = tuple(i for i in a_ids if i not in b_ids or i in back)
        sub_changed = tuple(
            i for i, m in a_ids.items() if i in b_ids and set(b_ids[i].topics) != set(m.topics)
        )
        old_topics = {t for m in before for t in m.topics}
        # the server assignors hand out every partition of a subscribed topic they know: a
        # topic subscribed before whose partitions the previous target gave nobody, and the
        # new one gives, had no partitions at the coordinator then (created a moment before
        # the members joined), whatever count the collector read later
        held_before = {tp.topic for m in before for tp in m.partitions}
        appeared = {tp.topic for m in after for tp in m.partitions} - held_before
        counts_changed = tuple(
            sorted(
                t
                for t, n in counts.items()
                if t in old_topics
                and (t in appeared or (t in cg.last_counts and cg.last_counts[t][0] != n))
            )
        )
    old_static = {m.group_instance_id: m for m in before if m.group_instance_id}
    rejoins = tuple(
        StaticRejoin(m.group_instance_id, old_static[m.group_instance_id].member_id, m.member_id)
        for m in after
        if m.group_instance_id
        and m.group_instance_id in old_static
        and old_static[m.group_instance_id].member_id != m.member_id
    )
    facts = CauseFacts(
        first_observation=first,
        joined=joined,
        departures=departures,
        static_rejoins=rejoins,
        subscription_changed=sub_changed,
        partition_counts_changed=counts_changed,
        metadata_changed=cg.last_metadata_hash != 0
        and target.metadata_hash != cg.last_metadata_hash,
    )
    verdict = classify(facts)

    started = target.started_ts_ms
    own_name = _own_assignor(ctx, current)
    own = KIP848_ASSIGNORS.get(own_name, own_name)
    actual = {m.member_id: m.partitions for m in after}
    prev_by_identity = {m.identity: m.partitions for m in before}
    rank = {member_id: i for i, member_id in enumerate(target.assignor_order)}
    spec = consumer_spec(
        [
            Member(
                member_id=m.member_id,
                topics=m.topics,
                group_instance_id=m.group_instance_id,
                owned_partitions=tuple(
                    tp for tp in prev_by_identity.get(m.identity, ()) if tp.topic in counts
                ),
                generation=None,
                rack=m.rack,
            )
            for m in sorted(after, key=lambda m: rank.get(m.member_id, len(rank)))
        ],
        topics=counts,
        racks=racks_for(state, counts),
        topic_ids=topic_ids_for(
            state,
            counts,
            {
                **{t: tid for tid, t in names.items()},
                **{t: tid for t, (tid, _n) in cg.partition_metadata.items()},
            },
        ),
    )
    unresolved = _unresolved_ids(current, before, departed_members, names)
    if unresolved:
        expected = failures(
            own,
            config.consumer_strategies,
            f"topic ids not resolved to names (no offset commit, partition metadata record "
            f"or collector topics event named them): {', '.join(unresolved)}",
        )
    elif not after:
        expected = ()
    else:
        expected = run_strategies(
            own=own,
            own_spec=spec,
            whatif_spec=spec,
            strategies=config.consumer_strategies,
            actual=actual,
            before={m.member_id: m.partitions for m in before},
            identities=identities(before, after),
            max_members=config.max_expected_members,
            max_partitions=config.max_expected_partitions,
        )
    event = build_event(
        cluster=state.cluster,
        group_id=state.group_id,
        event_ts_ms=ts,
        group_protocol="consumer",
        protocol_type="consumer",
        strategy=own_name,
        rebalance_protocol="cooperative",
        is_rebalance=True,
        generation_before=cg.last_epoch if cg.last_epoch is not None else (None if first else 0),
        generation_after=epoch,
        leader_before=None,
        leader_after=None,
        members_before=before,
        members_after=after,
        facts=facts,
        verdict=verdict,
        timing=Timing(
            started_ts_ms=started,
            completed_ts_ms=ts,
            assignment_duration_ms=None if started is None else ts - started,
            duration_source="records",
        ),
        counts=counts,
        count_sources=sources,
        expected=expected,
        source_partition=target.source_partition,
        source_offset=target.source_offset,
    )
    cg.pending = PendingRebalance(epoch, ts, to_row(event))
    cg.last_epoch = epoch
    cg.last_members = after
    cg.last_counts = {t: (n, sources[t]) for t, n in counts.items()}
    cg.last_metadata_hash = target.metadata_hash


def _maybe_complete(ctx: Context, cg: ConsumerGroupState, ts: int) -> None:
    p = cg.pending
    if p is None:
        return
    for m in cg.members.values():
        if not m.has_metadata:
            continue
        if m.member_epoch < p.epoch or m.state != _STABLE or m.pending_revocation:
            return
    _flush(ctx, "completed", ts)


def _flush(ctx: Context, completion: Completion, ts: int) -> None:
    """Emit the held rebalance event of a KIP-848 group."""
    state = ctx.state
    cg = state.consumer
    assert cg is not None and cg.pending is not None
    event = from_row(RebalanceEvent, cg.pending.event)
    done = completion == "completed"
    event = replace(
        event,
        completed_ts_ms=ts,
        completion=completion,
        duration_ms=ts - event.started_ts_ms if done and event.started_ts_ms is not None else None,
        duration_source="records" if done and event.started_ts_ms is not None else None,
    )
    cg.pending = None
    ctx.emit(event, *rows_of(event))
    state.last_rebalance_ts_ms = ts
    state.last_cause = event.cause
    ctx.changed = True


def flush_timeout(ctx: Context) -> None:
    """Emit a held rebalance whose members did not all reconcile (or whose topic ids were
    not all named) in time."""
    cg = ctx.state.consumer
    if cg is None:
        return
    d = cg.deferred
    if d is not None and ctx.now_ms >= d.target_ts_ms + ctx.config.reconcile_timeout_ms:
        settle_deferred(ctx, force=True)
    if cg.pending is None:
        return
    deadline = cg.pending.target_ts_ms + ctx.config.reconcile_timeout_ms
    if ctx.now_ms >= deadline:
        _flush(ctx, "timed_out", deadline)


def _static_replacement_done(
    ctx: Context, obs: Observation, cg: ConsumerGroupState, member_id: str
) -> None:
    """A static member's replacement without epoch bump is complete: emit it."""
    r = next((r for r in cg.replacements if r.new_member_id == member_id), None)
    if r is None:
        return
    settle_deferred(ctx, force=True)  # the replacement follows on from the last epoch
    bumped = (
        cg.group_epoch is not None and cg.last_epoch is not None and cg.group_epoch > cg.last_epoch
    )
    if bumped:
        return  # the coming rebalance reports it
    cg.replacements = tuple(x for x in cg.replacements if x is not r)
    cg.departed = tuple(d for d in cg.departed if d.info.member_id != r.old_member_id)
    if cg.last_epoch is None:
        return
    state = ctx.state
    names = _names(ctx, cg)
    new = cg.members.get(member_id)
    if new is None or not new.has_metadata:
        return
    old = next((m for m in cg.last_members if m.member_id == r.old_member_id), None)
    info = _info(ctx, new, cg, names)
    if not info.partitions and old is not None:
        info = replace(info, partitions=old.partitions)
    before = cg.last_members
    after = tuple(info if m.member_id == r.old_member_id else m for m in before)
    if old is None:
        after = (*after, info)
    facts = CauseFacts(same_generation=True, static_rejoins=(r,))
    event = build_event(
        cluster=state.cluster,
        group_id=state.group_id,
        event_ts_ms=obs.timestamp_ms,
        group_protocol="consumer",
        protocol_type="consumer",
        strategy=_own_assignor(ctx, [m for m in cg.members.values() if m.has_metadata]),
        rebalance_protocol="cooperative",
        is_rebalance=False,
        generation_before=cg.last_epoch,
        generation_after=cg.last_epoch,
        leader_before=None,
        leader_after=None,
        members_before=before,
        members_after=after,
        facts=facts,
        verdict=classify(facts),
        timing=Timing(
            started_ts_ms=obs.timestamp_ms, completed_ts_ms=obs.timestamp_ms, duration_ms=0
        ),
        counts={t: n for t, (n, _s) in cg.last_counts.items()},
        count_sources={t: s for t, (_n, s) in cg.last_counts.items()},
        expected=(),
        source_partition=obs.partition,
        source_offset=obs.offset,
    )
    rows = [row for row in rows_of(event) if getattr(row, "member_id", None) == member_id]
    ctx.emit(event, *rows)
    cg.last_members = after
