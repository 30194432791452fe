"""The collector's membership events (JSON objects) -> the tracker's frozen model.

The event format is one model, :mod:`streaming.membership_event` (the collector encodes it,
the published JSON Schema is generated from it); this module decodes with it and converts
the events into :class:`~streaming.tracking.model.GroupSnapshot` and
:class:`~streaming.tracking.model.TopicsSnapshot` (partitions as
:class:`~assign_core.model.TopicPartition` tuples), or an
:class:`~streaming.tracking.model.UnsupportedEvent` for an unknown ``schema_version`` or
``event_type`` (readers skip and count those, ``docs/events.md`` *Versioning*).

Tolerance follows the schema's versioning rules: properties this reader does not know are
ignored (additive changes keep version 1); a nullable property that is missing reads as
null, a missing list as empty. A property with the wrong type, or a missing required one,
raises :class:`~streaming.tracking.errors.MembershipEventError` naming it as a JSON path
(``members[2].assignment[0].partitions[0]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from assign_core.model import TopicPartition
from streaming import membership_event as wire
from streaming.tracking.errors import MembershipEventError
from streaming.tracking.model import (
    CollectorIssue,
    EndOffsetsSnapshot,
    GroupHeartbeat,
    GroupSnapshot,
    GroupsPolled,
    MembershipPayload,
    SnapshotBroker,
    SnapshotMember,
    SnapshotOffset,
    SnapshotPartition,
    SnapshotTopic,
    TopicsSnapshot,
    UnsupportedEvent,
)

__all__ = ["SUPPORTED_SCHEMA_VERSIONS", "parse_membership_event", "parse_membership_json"]

SUPPORTED_SCHEMA_VERSIONS = frozenset(wire.SCHEMA_VERSIONS)


def _partitions(
    entries: Sequence[wire.TopicPartitions] | None,
) -> tuple[TopicPartition, ...] | None:
    if entries is None:
        return None
    return tuple(TopicPartition(e.topic, p) for e in entries for p in e.partitions)


def _member(m: wire.Member) -> SnapshotMember:
    return SnapshotMember(
        member_id=m.member_id,
        group_instance_id=m.group_instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        rack_id=m.rack_id,
        subscribed_topics=None if m.subscribed_topics is None else tuple(m.subscribed_topics),
        owned_partitions=_partitions(m.owned_partitions),
        subscription_generation_id=m.subscription_generation_id,
        assignment=_partitions(m.assignment),
        assigned_partition_count=m.assigned_partition_count,
    )


def _offset(o: wire.CommittedOffset) -> SnapshotOffset:
    return SnapshotOffset(
        topic=o.topic,
        partition=o.partition,
        offset=o.offset,
        leader_epoch=o.leader_epoch,
        metadata=o.metadata,
        end_offset=o.end_offset,
        lag=o.lag,
    )


def _envelope(e: wire.Event) -> dict[str, Any]:
    return {
        "schema_version": e.schema_version,
        "cluster": e.cluster,
        "kafka_cluster_id": e.kafka_cluster_id,
        "snapshot_id": e.snapshot_id,
        "snapshot_ts_ms": e.snapshot_ts_ms,
        "errors": tuple(
            CollectorIssue(i.stage, i.message, i.group_id, i.topic)
            for i in getattr(e, "errors", ())
        ),
    }


def _group(e: wire.GroupEvent | wire.GroupEventV2) -> GroupSnapshot:
    """A ``group`` event of either version: version 1 carries the committed offsets, version
    2 the digest its heartbeats name."""
    committed, digest = (
        (e.committed_offsets, None) if isinstance(e, wire.GroupEvent) else (None, e.digest)
    )
    previous = (
        (None, None)
        if isinstance(e, wire.GroupEvent)
        else (
            e.previous_poll_ts_ms,
            e.previous_digest,
        )
    )
    return GroupSnapshot(
        **_envelope(e),
        group_id=e.group_id,
        group_type=e.group_type,
        protocol_type=e.protocol_type,
        state=e.state,
        protocol_name=e.protocol_name,
        membership_source=e.membership_source,
        member_count=e.member_count,
        members=None if e.members is None else tuple(_member(m) for m in e.members),
        topics=tuple(e.topics),
        committed_offsets=None if committed is None else tuple(_offset(o) for o in committed),
        session_timeout_ms=e.session_timeout_ms,
        digest=digest,
        previous_poll_ts_ms=previous[0],
        previous_digest=previous[1],
    )


def _topic(t: wire.Topic | wire.TopicV2) -> SnapshotTopic:
    """A topic of a ``topics`` event; version 2 sends end offsets apart (``end_offsets``)."""
    return SnapshotTopic(
        topic=t.topic,
        topic_id=t.topic_id,
        is_internal=t.is_internal,
        partition_count=t.partition_count,
        error=t.error,
        partitions=tuple(
            SnapshotPartition(
                partition=p.partition,
                leader_id=p.leader_id,
                replicas=tuple(p.replicas),
                isr=tuple(p.isr),
                offline_replicas=tuple(p.offline_replicas),
                replica_racks=tuple(p.replica_racks),
                end_offset=p.end_offset if isinstance(p, wire.Partition) else None,
            )
            for p in t.partitions
        ),
    )


def _topics(e: wire.TopicsEvent | wire.TopicsEventV2) -> TopicsSnapshot:
    return TopicsSnapshot(
        **_envelope(e),
        group_ids=tuple(e.group_ids),
        controller_id=e.controller_id,
        brokers=tuple(
            SnapshotBroker(b.broker_id, b.host, b.port, b.rack, b.is_fenced) for b in e.brokers
        ),
        end_offsets_ts_ms=e.end_offsets_ts_ms if isinstance(e, wire.TopicsEvent) else None,
        topics=tuple(_topic(t) for t in e.topics),
    )


def _heartbeat(e: wire.HeartbeatEvent) -> GroupHeartbeat:
    return GroupHeartbeat(
        **_envelope(e),
        group_id=e.group_id,
        state=e.state,
        digest=e.digest,
    )


def _end_offsets(e: wire.EndOffsetsEvent) -> EndOffsetsSnapshot:
    offsets: list[tuple[str, int, int]] = []
    moves: list[tuple[str, int, int]] = []
    for i, t in enumerate(e.topics):
        if len(t.partitions) != len(t.end_offsets):
            raise MembershipEventError(
                f"topics[{i}].end_offsets",
                f"{len(t.end_offsets)} end offsets for {len(t.partitions)} partitions",
            )
        if len(t.moved_partitions) != len(t.moved_by):
            raise MembershipEventError(
                f"topics[{i}].moved_by",
                f"{len(t.moved_by)} changes for {len(t.moved_partitions)} partitions",
            )
        offsets.extend((t.topic, p, o) for p, o in zip(t.partitions, t.end_offsets, strict=True))
        moves.extend((t.topic, p, d) for p, d in zip(t.moved_partitions, t.moved_by, strict=True))
    if moves and (e.full or e.previous_end_offsets_ts_ms is None):
        raise MembershipEventError(
            "previous_end_offsets_ts_ms",
            "changes (moved_by) need the previous event's time, and a full event has none",
        )
    return EndOffsetsSnapshot(
        **_envelope(e),
        group_ids=tuple(e.group_ids),
        end_offsets_ts_ms=e.end_offsets_ts_ms,
        full=e.full,
        offsets=tuple(offsets),
        covered_topics=None if e.covered_topics is None else frozenset(e.covered_topics),
        moves=tuple(moves),
        previous_end_offsets_ts_ms=None if e.full else e.previous_end_offsets_ts_ms,
    )


def parse_membership_event(obj: Any) -> MembershipPayload:
    """One membership event (a decoded JSON object) -> its model object (module docstring)."""
    try:
        event = wire.decode(obj)
    except wire.EventFormatError as e:
        raise MembershipEventError(e.field, e.message) from None
    if isinstance(event, wire.Unsupported):
        return UnsupportedEvent(event.schema_version, event.event_type, event.reason)
    if isinstance(event, wire.GroupEvent | wire.GroupEventV2):
        return _group(event)
    if isinstance(event, wire.TopicsEvent | wire.TopicsEventV2):
        return _topics(event)
    if isinstance(event, wire.HeartbeatEvent):
        return _heartbeat(event)
    if isinstance(event, wire.PollEvent):
        return GroupsPolled(**_envelope(event), group_ids=tuple(event.group_ids))
    return _end_offsets(event)


def parse_membership_json(value: bytes | str | None) -> MembershipPayload:
    """:func:`parse_membership_event` of a record value (UTF-8 JSON text). A tombstone (no
    value: the collector's way to let compaction forget a group that is gone) is an
    :class:`UnsupportedEvent` the reader skips."""
    if value is None:
        return UnsupportedEvent(None, None, "a tombstone (a group the collector no longer lists)")
    try:
        obj = msgspec.json.decode(value)
    except (msgspec.DecodeError, UnicodeDecodeError) as e:
        raise MembershipEventError("$", f"not JSON: {e}") from None
    return parse_membership_event(obj)
