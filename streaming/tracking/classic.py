"""Classic groups: GroupMetadata records -> rebalance events.

What the coordinator writes (``kafka-internals.md`` §8.1) and what the tracker makes of it:

==========================================  ===============================================
record                                      tracker
==========================================  ===============================================
GroupMetadata, generation > last            a rebalance: last generation -> this one
GroupMetadata, same generation, a static    a static rejoin without rebalance
member under a new member id                (``is_rebalance`` False)
GroupMetadata, same generation, same ids    nothing (a rewrite)
GroupMetadata, generation 0, no members     a new empty group: remembered, no event
GroupMetadata, lower generation             stale (skipped), unless generation <= 1: the
                                            group was re-created (GroupDeleted, then new)
GroupMetadata tombstone                     GroupDeleted (``converted`` when consumer-group
                                            records follow in the same batch)
==========================================  ===============================================

The record of generation ``g`` is written at the leader's SyncGroup, while the group is
still CompletingRebalance: its ``currentStateTimestamp`` is when the join phase ended (all
members had joined) and its log timestamp is when the group became Stable.
"""

from __future__ import annotations

from dataclasses import replace

from assign_core.assignors.registry import CLIENT_STRATEGIES
from assign_core.model import TopicPartition
from streaming.codec.model import GroupMetadata, GroupMetadataTombstone, MemberMetadata
from streaming.tracking.causes import (
    CauseFacts,
    DepartureEvidence,
    classify,
    judge_departure,
)
from streaming.tracking.context import (
    Context,
    collector_window,
    commit_interval_ms,
    counts_for,
    last_commit_ts_ms,
    racks_for,
    snapshot_interval_ms,
    topic_ids_for,
)
from streaming.tracking.events import (
    Departure,
    ExpectedAssignment,
    GroupDeleted,
    MemberInfo,
    RebalanceProtocol,
    StaticRejoin,
    event_id,
)
from streaming.tracking.expected import (
    classic_specs,
    flatten,
    leader_implementation,
    run_strategies,
)
from streaming.tracking.model import KIP848_RECORDS, Observation, group_id_of
from streaming.tracking.rebalance import Timing, build_event, identities, rows_of
from streaming.tracking.state import ClassicGeneration

__all__ = ["apply_group_metadata", "apply_group_tombstone", "member_info"]

CONSUMER = "consumer"
#: Kafka Connect protocols that rebalance incrementally (KIP-415).
_CONNECT_COOPERATIVE = frozenset({"compatible", "sessioned"})


def member_info(m: MemberMetadata) -> MemberInfo:
    sub, asg = m.subscription, m.assignment
    return MemberInfo(
        member_id=m.member_id,
        group_instance_id=m.group_instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        rack=sub.rack_id if sub is not None and sub.rack_id else None,
        topics=tuple(sorted(set(sub.topics))) if sub is not None else (),
        partitions=flatten(asg.assigned_partitions) if asg is not None else (),
        session_timeout_ms=m.session_timeout_ms,
        rebalance_timeout_ms=m.rebalance_timeout_ms
        if m.rebalance_timeout_ms >= 0
        else m.session_timeout_ms,
    )


def _rebalance_protocol(
    rec: GroupMetadata,
    prev: ClassicGeneration | None,
    before: tuple[MemberInfo, ...],
    after: tuple[MemberInfo, ...],
) -> RebalanceProtocol:
    """Eager or cooperative, from what the members sent (``docs/tracking.md``)."""
    if not rec.members and prev is not None:
        # everyone left: the record has no protocol (null) and nobody sent anything; the
        # group rebalanced the way its last generation did
        return "cooperative" if prev.rebalance_protocol == "cooperative" else "eager"
    if rec.protocol_type != CONSUMER:
        return "cooperative" if rec.protocol in _CONNECT_COOPERATIVE else "eager"
    if any(m.subscription is not None and m.subscription.owned_partitions for m in rec.members):
        return "cooperative"  # only cooperative members report what they still own
    held_before = {m.identity for m in before if m.partitions}
    if any(m.identity in held_before for m in after):
        return "eager"  # a member that held partitions revoked them all before rejoining
    return "cooperative" if rec.protocol == "cooperative-sticky" else "eager"


def _held_back(
    rec: GroupMetadata,
    before: tuple[MemberInfo, ...],
    after: tuple[MemberInfo, ...],
    expected: tuple[ExpectedAssignment, ...],
) -> set[TopicPartition]:
    """The partitions a cooperative round took from a member without giving them to anyone
    yet: each such member revokes them and rejoins at once (a follow-up round, rule 11).

    A member owns what it claimed in this generation's subscription (a member that rejoined
    before it received the previous generation's assignment still claims its older
    partitions) or, without claims, what the previous record gave it. What it owns and was
    not assigned back is revoked (``ConsumerCoordinator.onJoinComplete``); so is whatever the
    group's own strategy withheld for another member.
    """
    assigned = {m.member_id: set(m.partitions) for m in after}
    previous = {m.identity: m.partitions for m in before}
    revoked: set[TopicPartition] = set()
    for mm, info in zip(rec.members, after, strict=True):
        claimed = flatten(mm.subscription.owned_partitions) if mm.subscription is not None else ()
        owned = set(claimed) | set(previous.get(info.identity, ()))
        revoked |= owned - assigned[mm.member_id]
    own = next((e for e in expected if e.own), None)
    if own is not None:
        revoked |= {TopicPartition(w.topic, w.partition) for w in own.withheld}
    return revoked


def _counts_changed(
    before: dict[str, tuple[int, str]], now: dict[str, int], sources: dict[str, str]
) -> tuple[str, ...]:
    changed = []
    for t, n in now.items():
        old = before.get(t)
        if old is None or old[0] == n:
            continue
        # an inferred count (highest partition assigned or owned, + 1) is a lower bound: a
        # lower inferred count does not prove a decrease. A higher count does prove an
        # increase: the assignors hand out every partition, and cooperative members report
        # the ones held back as owned.
        if n < old[0] and sources[t] == "inferred":
            continue
        changed.append(t)
    return tuple(sorted(changed))


def _departure(
    ctx: Context,
    prev: ClassicGeneration,
    m: MemberInfo,
    removed_by: int,
) -> Departure:
    state = ctx.state
    gen_start = prev.current_state_ts_ms if prev.current_state_ts_ms >= 0 else prev.record_ts_ms
    alive = max(
        gen_start,
        prev.alive_ts_ms.get(m.member_id, gen_start),
        last_commit_ts_ms(state, m.partitions) or gen_start,
    )
    seen = state.collector.member_seen.get(m.member_id)
    gone = state.collector.member_gone.get(m.member_id)
    if gone is not None and alive < gone < removed_by:
        # a snapshot without it: removed by then (LeaveGroup), whatever the next
        # generation's join phase waited for (a static member's session, slow members)
        removed_by = gone
    removed_after = seen if seen is not None and alive < seen <= removed_by else None
    return judge_departure(
        DepartureEvidence(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            session_timeout_ms=m.session_timeout_ms,
            last_alive_ts_ms=alive,
            removed_after_ts_ms=removed_after,
            removed_by_ts_ms=removed_by,
            commit_interval_ms=commit_interval_ms(state, m.partitions),
            snapshot_interval_ms=snapshot_interval_ms(state),
        ),
        ctx.config.crash_session_fraction,
    )


def _static_rejoins(
    before: tuple[MemberInfo, ...], after: tuple[MemberInfo, ...]
) -> tuple[StaticRejoin, ...]:
    old = {m.group_instance_id: m for m in before if m.group_instance_id}
    return tuple(
        StaticRejoin(m.group_instance_id, old[m.group_instance_id].member_id, m.member_id)
        for m in after
        if m.group_instance_id
        and m.group_instance_id in old
        and old[m.group_instance_id].member_id != m.member_id
    )


def apply_group_metadata(ctx: Context, obs: Observation, rec: GroupMetadata) -> None:
    state = ctx.state
    prev = state.classic
    if state.kind == "consumer" or state.consumer is not None:
        # converted from a consumer group: its tombstones came first
        state.consumer = None
    if prev is not None and rec.generation < prev.generation:
        if rec.generation > 1:
            ctx.skip("stale")
            return
        _deleted(ctx, obs, "recreated")
        prev = None
    state.kind = "classic"
    ctx.changed = True
    after = tuple(member_info(m) for m in rec.members)
    if prev is not None and rec.generation == prev.generation:
        _same_generation(ctx, obs, rec, prev, after)
        return
    if prev is None and rec.generation == 0:
        state.classic = ClassicGeneration(
            generation=0,
            protocol_type=rec.protocol_type,
            protocol=rec.protocol,
            leader=rec.leader,
            current_state_ts_ms=rec.current_state_ts_ms,
            record_ts_ms=obs.timestamp_ms,
            members=after,
            rebalance_protocol="eager",
            topic_counts={},
            awaiting_followup=False,
            alive_ts_ms={},
        )
        return
    _new_generation(ctx, obs, rec, prev, after)


def _new_generation(
    ctx: Context,
    obs: Observation,
    rec: GroupMetadata,
    prev: ClassicGeneration | None,
    after: tuple[MemberInfo, ...],
) -> None:
    state, config = ctx.state, ctx.config
    ts = obs.timestamp_ms
    before = prev.members if prev is not None else ()
    first = prev is None and rec.generation > 1

    # partition counts as the leader saw them
    subscribed = sorted({t for m in after for t in m.topics})
    evidence: list[TopicPartition] = [tp for m in after for tp in m.partitions]
    for mm in rec.members:
        if mm.subscription is not None:
            evidence.extend(flatten(mm.subscription.owned_partitions))
    exact = rec.protocol in CLIENT_STRATEGIES
    counts, sources = counts_for(state, subscribed, ts, evidence, exact=exact)

    # facts
    b_ids = {m.identity: m for m in before}
    a_ids = {m.identity: m for m in after}
    removed_by = rec.current_state_ts_ms if rec.current_state_ts_ms >= 0 else ts
    departures: tuple[Departure, ...] = ()
    joined: tuple[str, ...] = ()
    sub_changed: tuple[str, ...] = ()
    counts_changed: tuple[str, ...] = ()
    if not first and prev is not None:
        departures = tuple(
            _departure(ctx, prev, m, removed_by) for i, m in b_ids.items() if i not in a_ids
        )
        joined = tuple(i for i in a_ids if i not in b_ids)
        sub_changed = tuple(
            i for i, m in a_ids.items() if i in b_ids and set(b_ids[i].topics) != set(m.topics)
        )
        old_topics = {t for m in before for t in m.topics}
        counts_changed = _counts_changed(
            {t: v for t, v in prev.topic_counts.items() if t in old_topics},
            counts,
            sources,
        )
    elif prev is None:
        joined = tuple(a_ids) if not first else ()
    rejoins = _static_rejoins(before, after)
    prev_leader = prev.leader if prev is not None else None
    facts = CauseFacts(
        first_observation=first,
        joined=joined,
        after_metadata_change=prev is not None
        and not first
        and state.last_cause in ("partition_count_change", "subscription_change"),
        departures=departures,
        static_rejoins=rejoins,
        static_rejoin_can_start=any(
            r.old_member_id == prev_leader or r.new_member_id == rec.leader for r in rejoins
        ),
        subscription_changed=sub_changed,
        partition_counts_changed=counts_changed,
        followup=prev.awaiting_followup if prev is not None else False,
    )
    verdict = classify(facts)

    # times
    duration = duration_max = started = None
    source: str | None = None
    after_ts = prev.record_ts_ms if prev is not None else None
    seen_unstable, last_settled = collector_window(state, after_ts, ts)
    if seen_unstable is not None:
        started, source = seen_unstable, "collector"
        duration = ts - seen_unstable
        floor = (
            max(x for x in (after_ts, last_settled) if x is not None)
            if (after_ts is not None or last_settled is not None)
            else None
        )
        duration_max = None if floor is None else ts - floor
    timing = Timing(
        started_ts_ms=started,
        completed_ts_ms=ts,
        duration_ms=duration,
        duration_max_ms=duration_max,
        duration_source=source,
        assignment_duration_ms=ts - rec.current_state_ts_ms
        if rec.current_state_ts_ms >= 0
        else None,
    )
    protocol = _rebalance_protocol(rec, prev, before, after)

    # expected assignments
    expected: tuple[ExpectedAssignment, ...] = ()
    actual = {m.member_id: m.partitions for m in after}
    if rec.protocol_type == CONSUMER and rec.members:
        previous = {m.identity: m.partitions for m in before}
        leader = next((m for m in rec.members if m.member_id == rec.leader), None)
        leader_subscription = None if leader is None else leader.subscription
        implementation = leader_implementation(rec.protocol, leader_subscription)
        own_spec, whatif_spec = classic_specs(
            rec,
            topics=counts,
            racks=racks_for(state, counts),
            topic_ids=topic_ids_for(state, counts),
            previous=previous,
            previous_generation=prev.generation if prev is not None else None,
            implementation=implementation,
        )
        expected = run_strategies(
            own=rec.protocol,
            own_implementation=implementation,
            leader_version=None if leader_subscription is None else leader_subscription.version,
            own_spec=own_spec,
            whatif_spec=whatif_spec,
            strategies=config.classic_strategies,
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
        group_protocol="classic",
        protocol_type=rec.protocol_type or None,
        # the record of an emptied group has no protocol; the group's strategy is unchanged
        strategy=rec.protocol if rec.members or prev is None else prev.protocol,
        rebalance_protocol=protocol,
        is_rebalance=True,
        generation_before=prev.generation if prev is not None else (0 if not first else None),
        generation_after=rec.generation,
        leader_before=prev.leader if prev is not None else None,
        leader_after=rec.leader,
        members_before=before,
        members_after=after,
        facts=facts,
        verdict=verdict,
        timing=timing,
        counts=counts,
        count_sources=sources,
        expected=expected,
        source_partition=obs.partition,
        source_offset=obs.offset,
    )
    ctx.emit(event, *rows_of(event))
    state.last_rebalance_ts_ms = ts
    state.last_cause = verdict.cause

    awaiting = protocol == "cooperative" and bool(_held_back(rec, before, after, expected))
    none_source = "assignment" if exact else "inferred"
    state.classic = ClassicGeneration(
        generation=rec.generation,
        protocol_type=rec.protocol_type,
        protocol=rec.protocol,
        leader=rec.leader,
        current_state_ts_ms=rec.current_state_ts_ms,
        record_ts_ms=ts,
        members=after,
        rebalance_protocol=protocol,
        # a subscribed topic with no count: the leader had no metadata for it (count 0),
        # e.g. a client that joined before fetching it
        topic_counts={
            **{t: (0, none_source) for t in subscribed if t not in counts},
            **{t: (n, sources[t]) for t, n in counts.items()},
        },
        awaiting_followup=awaiting,
        alive_ts_ms={},
    )


def _same_generation(
    ctx: Context,
    obs: Observation,
    rec: GroupMetadata,
    prev: ClassicGeneration,
    after: tuple[MemberInfo, ...],
) -> None:
    state = ctx.state
    if {m.member_id for m in after} == {m.member_id for m in prev.members}:
        ctx.skip("rewrite")
        return
    ts = obs.timestamp_ms
    rejoins = _static_rejoins(prev.members, after)
    b_ids = {m.identity for m in prev.members}
    a_ids = {m.identity for m in after}
    facts = CauseFacts(
        same_generation=True,
        joined=tuple(i for i in a_ids if i not in b_ids),
        static_rejoins=rejoins,
    )
    verdict = classify(facts)
    event = build_event(
        cluster=state.cluster,
        group_id=state.group_id,
        event_ts_ms=ts,
        group_protocol="classic",
        protocol_type=rec.protocol_type or None,
        strategy=rec.protocol,
        rebalance_protocol="cooperative" if prev.rebalance_protocol == "cooperative" else "eager",
        is_rebalance=False,
        generation_before=prev.generation,
        generation_after=rec.generation,
        leader_before=prev.leader,
        leader_after=rec.leader,
        members_before=prev.members,
        members_after=after,
        facts=facts,
        verdict=verdict,
        timing=Timing(started_ts_ms=ts, completed_ts_ms=ts, duration_ms=0),
        counts={t: n for t, (n, _src) in prev.topic_counts.items()},
        count_sources={t: src for t, (_n, src) in prev.topic_counts.items()},
        expected=(),
        source_partition=obs.partition,
        source_offset=obs.offset,
    )
    replaced = {r.new_member_id for r in rejoins}
    rows = [r for r in rows_of(event) if getattr(r, "member_id", None) in replaced]
    ctx.emit(event, *rows)
    alive = dict(prev.alive_ts_ms)
    alive.update(dict.fromkeys(replaced, ts))
    state.classic = replace(prev, members=after, leader=rec.leader, alive_ts_ms=alive)


def _deleted(ctx: Context, obs: Observation, reason: str) -> None:
    state = ctx.state
    last = state.classic.generation if state.classic is not None else None
    ctx.emit(
        GroupDeleted(
            event_id=event_id(
                "deleted", state.cluster, state.group_id, f"{obs.partition}:{obs.offset}"
            ),
            cluster=state.cluster,
            group_id=state.group_id,
            event_ts_ms=obs.timestamp_ms,
            group_protocol="classic",
            last_generation=last,
            reason=reason,
            source_partition=obs.partition,
            source_offset=obs.offset,
        )
    )
    state.classic = None
    state.kind = None
    ctx.changed = True


def apply_group_tombstone(ctx: Context, obs: Observation, rec: GroupMetadataTombstone) -> None:
    converted = any(
        isinstance(o.payload, KIP848_RECORDS) and group_id_of(o.payload) == rec.group_id
        for o in ctx.ahead()
    )
    if ctx.state.classic is None and ctx.state.kind != "classic":
        ctx.skip("unknown_group_tombstone")
        return
    _deleted(ctx, obs, "converted" if converted else "deleted")
