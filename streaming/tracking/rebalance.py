"""Assemble a :class:`~streaming.tracking.events.RebalanceEvent` and its rows.

Shared by the classic and the KIP-848 handlers: given the members before and after (each
with the partitions it held), the verdict of :mod:`~streaming.tracking.causes`, the times
and the expected assignments, :func:`build_event` derives the actual assignment, churn
(identity-aware), skew, the paused partitions and divergence; :func:`rows_of` derives the
member-assignment and metrics rows of an event.

Paused partitions: with the eager protocol every member revokes everything before
rejoining, so every partition owned before the rebalance is paused. With the cooperative
protocol (cooperative-sticky, KIP-848) a member keeps consuming what it keeps: only the
partitions that leave their owner (moved to another member, or held back for a follow-up
round, or owned by a departed member) are paused. A static member replaced within a
generation pauses nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from assign_core.model import TopicPartition
from streaming.tracking.causes import CauseFacts, CauseVerdict
from streaming.tracking.cost import (
    pause_ms,
    paused_partition_seconds,
    paused_partitions_of,
    protocol_of,
)
from streaming.tracking.events import (
    Completion,
    ExpectedAssignment,
    GroupMetricsRow,
    GroupProtocol,
    MemberAssignmentRow,
    MemberInfo,
    RebalanceEvent,
    RebalanceProtocol,
    event_id,
    quoted,
)
from streaming.tracking.expected import churn_figures, skew_figures

__all__ = ["Timing", "build_event", "identities", "paused_partitions", "rows_of"]


@dataclass(frozen=True, slots=True)
class Timing:
    started_ts_ms: int | None = None
    completed_ts_ms: int = 0
    duration_ms: int | None = None
    duration_max_ms: int | None = None
    duration_source: str | None = None
    assignment_duration_ms: int | None = None
    completion: Completion = "completed"


def identities(*groups: Sequence[MemberInfo]) -> dict[str, str]:
    """Member id -> identity over several member lists."""
    return {m.member_id: m.identity for ms in groups for m in ms}


def paused_partitions(
    protocol: RebalanceProtocol,
    before: Sequence[MemberInfo],
    after: Sequence[MemberInfo],
    is_rebalance: bool,
) -> tuple[TopicPartition, ...]:
    """The partitions this rebalance stops (module docstring)."""
    if not is_rebalance:
        return ()
    if protocol == "eager":
        return tuple(sorted({tp for m in before for tp in m.partitions}))
    kept: dict[str, set[TopicPartition]] = {}
    for m in after:
        kept.setdefault(m.identity, set()).update(m.partitions)
    paused: set[TopicPartition] = set()
    for m in before:
        held = kept.get(m.identity, set())
        paused.update(tp for tp in m.partitions if tp not in held)
    return tuple(sorted(paused))


def build_event(
    *,
    cluster: str,
    group_id: str,
    event_ts_ms: int,
    group_protocol: GroupProtocol,
    protocol_type: str | None,
    strategy: str | None,
    rebalance_protocol: RebalanceProtocol,
    is_rebalance: bool,
    generation_before: int | None,
    generation_after: int,
    leader_before: str | None,
    leader_after: str | None,
    members_before: tuple[MemberInfo, ...],
    members_after: tuple[MemberInfo, ...],
    facts: CauseFacts,
    verdict: CauseVerdict,
    timing: Timing,
    counts: Mapping[str, int],
    count_sources: Mapping[str, str],
    expected: tuple[ExpectedAssignment, ...],
    source_partition: int,
    source_offset: int,
) -> RebalanceEvent:
    actual = {m.member_id: m.partitions for m in members_after}
    before = {m.member_id: m.partitions for m in members_before}
    ids = identities(members_before, members_after)
    divergent = {e.strategy: e.divergent for e in expected if e.divergent is not None}
    own = next((e for e in expected if e.own), None)
    joined_ids = set(facts.joined)
    return RebalanceEvent(
        event_id=event_id(
            "rebalance", cluster, group_id, generation_after, f"{source_partition}:{source_offset}"
        ),
        cluster=cluster,
        group_id=group_id,
        event_ts_ms=event_ts_ms,
        group_protocol=group_protocol,
        protocol_type=protocol_type,
        strategy=strategy,
        rebalance_protocol=rebalance_protocol,
        is_rebalance=is_rebalance,
        generation_before=generation_before,
        generation_after=generation_after,
        leader_before=leader_before,
        leader_after=leader_after,
        members_before=members_before,
        members_after=members_after,
        joined=tuple(m.member_id for m in members_after if m.identity in joined_ids),
        left=tuple(d.member_id for d in facts.departures),
        static_rejoins=facts.static_rejoins,
        departures=facts.departures,
        cause=verdict.cause,
        cause_rule=verdict.rule,
        cause_detail=verdict.detail,
        cause_factors=verdict.factors,
        started_ts_ms=timing.started_ts_ms,
        completed_ts_ms=timing.completed_ts_ms,
        duration_ms=timing.duration_ms,
        duration_max_ms=timing.duration_max_ms,
        duration_source=timing.duration_source,
        assignment_duration_ms=timing.assignment_duration_ms,
        completion=timing.completion,
        actual=actual,
        actual_skew=skew_figures(actual),
        churn=churn_figures(before, actual, ids),
        paused_partitions=paused_partitions(
            rebalance_protocol, members_before, members_after, is_rebalance
        ),
        topic_partition_counts=dict(counts),
        topic_partition_count_sources=dict(count_sources),
        expected=expected,
        divergent=divergent,
        own_strategy_divergent=None if own is None else own.divergent,
        own_strategy_implementation=None if own is None else own.implementation,
        source_partition=source_partition,
        source_offset=source_offset,
    )


def rows_of(event: RebalanceEvent) -> list[MemberAssignmentRow | GroupMetricsRow]:
    """The member-assignment rows and the metrics rows of one rebalance event."""
    rows: list[MemberAssignmentRow | GroupMetricsRow] = []
    gen = event.generation_after
    for m in event.members_after:
        member = quoted(m.member_id)
        for tp in m.partitions:
            rows.append(
                MemberAssignmentRow(
                    event_id=f"{event.event_id}/member/{member}/{quoted(tp.topic)}/{tp.partition}",
                    cluster=event.cluster,
                    group_id=event.group_id,
                    event_ts_ms=event.event_ts_ms,
                    rebalance_event_id=event.event_id,
                    generation=gen,
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    topic=tp.topic,
                    partition=tp.partition,
                )
            )
    s, c = event.actual_skew, event.churn
    duration = (
        pause_ms(event.duration_ms, event.assignment_duration_ms) if event.is_rebalance else None
    )
    own = next((e for e in event.expected if e.own), None)
    actual_paused = len(event.paused_partitions)
    rows.append(
        GroupMetricsRow(
            event_id=f"{event.event_id}/metrics/actual",
            cluster=event.cluster,
            group_id=event.group_id,
            event_ts_ms=event.event_ts_ms,
            rebalance_event_id=event.event_id,
            generation=gen,
            strategy="actual",
            is_actual=True,
            is_own_strategy=False,
            error=None,
            member_count=s.members,
            partition_count=s.partitions,
            min_partitions=s.min_partitions,
            max_partitions=s.max_partitions,
            spread_partitions=s.spread_partitions,
            imbalance_ratio=s.imbalance_ratio,
            cv=s.cv,
            moved_partitions=c.moved_partitions,
            revoked_partitions=c.revoked_partitions,
            assigned_partitions=c.assigned_partitions,
            moved_fraction=c.moved_fraction,
            divergent=None,
            divergent_member_count=0,
            rebalance_protocol=event.rebalance_protocol,
            paused_partitions=actual_paused,  # C5
            paused_partition_seconds=paused_partition_seconds(actual_paused, duration),
            needs_followup=event.is_rebalance and own is not None and bool(own.withheld),
        )
    )
    for e in event.expected:
        es, ec = e.skew, e.churn
        protocol = protocol_of(e.strategy)
        paused = (
            0
            if ec is None
            else paused_partitions_of(
                protocol,
                owned_before=ec.owned_before_partitions,
                moved=ec.moved_partitions,
                withheld=len(e.withheld),
                is_rebalance=event.is_rebalance,
            )
        )
        rows.append(
            GroupMetricsRow(
                event_id=f"{event.event_id}/metrics/{quoted(e.strategy)}",
                cluster=event.cluster,
                group_id=event.group_id,
                event_ts_ms=event.event_ts_ms,
                rebalance_event_id=event.event_id,
                generation=gen,
                strategy=e.strategy,
                is_actual=False,
                is_own_strategy=e.own,
                error=e.error,
                member_count=es.members if es else len(event.members_after),
                partition_count=es.partitions if es else 0,
                min_partitions=es.min_partitions if es else 0,
                max_partitions=es.max_partitions if es else 0,
                spread_partitions=es.spread_partitions if es else 0,
                imbalance_ratio=es.imbalance_ratio if es else 1.0,
                cv=es.cv if es else 0.0,
                moved_partitions=ec.moved_partitions if ec else 0,
                revoked_partitions=ec.revoked_partitions if ec else 0,
                assigned_partitions=ec.assigned_partitions if ec else 0,
                moved_fraction=ec.moved_fraction if ec else 0.0,
                divergent=e.divergent,
                divergent_member_count=len(e.divergent_members),
                rebalance_protocol=protocol,
                paused_partitions=paused,
                paused_partition_seconds=paused_partition_seconds(
                    paused,
                    duration,
                    extra_rounds=len(e.withheld) if protocol == "cooperative" else 0,
                ),
                needs_followup=event.is_rebalance and bool(e.withheld),
            )
        )
    return rows
