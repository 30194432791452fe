"""Pure: one snapshot's admin answers -> its membership events (``build_events``).

The events are :mod:`streaming.membership_event`'s model (one model: the collector
encodes it, the tracker decodes it, the schema is generated from it). No I/O, no clock.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import kafka.errors as kafka_errors
import msgspec

from streaming import membership_event as wire
from streaming.membership_event import SCHEMA_PATHS, Issue

#: Group types whose membership DescribeGroups reports (ListGroups v5 ``group_type``;
#: ``""`` when the broker is older than Kafka 4.0 and does not say).
_CLASSIC_TYPES = frozenset({"", "classic", "unknown"})
#: Group types OffsetFetch does not serve.
_NO_OFFSETS_TYPES = frozenset({"share"})

Json = dict[str, Any]


# --------------------------------------------------------------------------- admin answers


#: (offset, metadata, leader_epoch): kafka-python's ``OffsetAndMetadata`` is such a tuple.
Committed = tuple[int, str | None, int | None]


@dataclass(frozen=True, kw_only=True)
class AdminAnswers:
    """What the admin calls of one snapshot answered, in kafka-python's shapes.

    ``cluster`` is ``describe_cluster()``; ``groups`` the ``list_groups()`` entries that
    pass the filter; ``descriptions`` the ``describe_groups()`` values by group id;
    ``committed`` ``list_group_offsets()`` by group id, keyed by ``(topic, partition)``
    (kafka-python's ``TopicPartition`` is such a tuple); ``topics`` ``describe_topics()``;
    ``end_offsets`` the LATEST offsets of ``list_partition_offsets()``. Groups, topics and
    partitions missing from a mapping were not answered; ``issues`` says why.
    """

    snapshot_ts_ms: int
    cluster: Mapping[str, Any] | None
    groups: Sequence[Mapping[str, Any]]
    descriptions: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    committed: Mapping[str, Mapping[tuple[str, int], Committed]] = field(default_factory=dict)
    topics: Sequence[Mapping[str, Any]] = ()
    end_offsets: Mapping[tuple[str, int], int] = field(default_factory=dict)
    end_offsets_ts_ms: int | None = None
    session_timeouts: Mapping[str, int] = field(default_factory=dict)
    """KIP-848 group id -> its ``consumer.session.timeout.ms`` (DescribeConfigs: the
    group's own setting, else the broker's ``group.consumer.session.timeout.ms``)."""
    issues: Sequence[Issue] = ()
    described: Sequence[str] = ()
    """The groups DescribeGroups was asked for at this poll; the other ``descriptions`` are
    earlier answers the collector reused (:func:`streaming.collector.admin.to_describe`)."""


@dataclass(frozen=True)
class MembershipEvent:
    """One record for the membership topic: ``key`` (str) and ``value`` (the event as its
    JSON object, :func:`streaming.membership_event.to_json`; None for a tombstone).
    ``partition_key``: the key whose partition the record goes to (default: ``key``), so
    that a group's heartbeat follows its ``group`` events on one partition."""

    key: str
    value: Json | None
    partition_key: str | None = None

    @classmethod
    def of(
        cls, key: str, event: wire.Event, *, partition_key: str | None = None
    ) -> MembershipEvent:
        return cls(key, wire.to_json(event), partition_key)

    @classmethod
    def tombstone(cls, key: str, *, partition_key: str | None = None) -> MembershipEvent:
        """A record without a value: compaction drops every record of ``key``."""
        return cls(key, None, partition_key)

    def encode(self) -> tuple[bytes, bytes | None]:
        """The record's key and value bytes (UTF-8; compact JSON; None for a tombstone)."""
        value = None if self.value is None else msgspec.json.encode(self.value)
        return self.key.encode("utf-8"), value


def is_classic(listed: Mapping[str, Any]) -> bool:
    """Whether DescribeGroups can report this ``list_groups()`` entry's members."""
    return str(listed.get("group_type") or "").lower() in _CLASSIC_TYPES


def serves_offsets(listed: Mapping[str, Any]) -> bool:
    return str(listed.get("group_type") or "").lower() not in _NO_OFFSETS_TYPES


def group_topics(
    description: Mapping[str, Any] | None,
    committed: Mapping[tuple[str, int], Committed] | None,
) -> set[str]:
    """The topics a group touches: subscriptions, assignments, owned and committed."""
    topics: set[str] = {tp[0] for tp in (committed or {})}
    if description is None or description.get("error") is not None:
        return topics
    if (description.get("protocol_type") or "") != "consumer":
        return topics
    for raw in description.get("members") or ():
        subscription = raw.get("member_metadata")
        if isinstance(subscription, Mapping):
            topics.update(str(t) for t in subscription.get("topics") or ())
            topics.update(str(e["topic"]) for e in subscription.get("owned_partitions") or ())
        assignment = raw.get("member_assignment")
        if isinstance(assignment, Mapping):
            topics.update(str(e["topic"]) for e in assignment.get("assigned_partitions") or ())
    return topics


def consumed_partitions(
    descriptions: Mapping[str, Mapping[str, Any]],
    committed: Mapping[str, Mapping[tuple[str, int], Committed]],
) -> dict[str, set[tuple[str, int]]]:
    """Group id -> the partitions it consumes: those it has committed offsets for, and those
    assigned to its members (groups consuming nothing left out)."""
    out: dict[str, set[tuple[str, int]]] = {}
    for group_id, offsets in committed.items():
        if offsets:
            out.setdefault(group_id, set()).update(offsets)
    for group_id, description in descriptions.items():
        if description.get("error") is not None:
            continue
        for raw in description.get("members") or ():
            assignment = raw.get("member_assignment")
            if isinstance(assignment, Mapping):
                for entry in assignment.get("assigned_partitions") or ():
                    parts = {(str(entry["topic"]), int(p)) for p in entry["partitions"] or ()}
                    if parts:
                        out.setdefault(group_id, set()).update(parts)
    return out


# --------------------------------------------------------------------------- pure: events


def poll_envelope(answers: AdminAnswers, version: int, cluster: str, snapshot_id: str) -> Json:
    """The fields every event of one poll carries."""
    return {
        "schema_version": version,
        "cluster": cluster,
        "kafka_cluster_id": (answers.cluster or {}).get("cluster_id"),
        "snapshot_id": snapshot_id,
        "snapshot_ts_ms": answers.snapshot_ts_ms,
    }


def split_issues(issues: Iterable[Issue]) -> tuple[dict[str, list[Issue]], list[Issue]]:
    """A poll's issues: those about one group, by group id, and the others."""
    by_group: dict[str, list[Issue]] = {}
    others: list[Issue] = []
    for issue in issues:
        if issue.group_id is not None:
            by_group.setdefault(issue.group_id, []).append(issue)
        else:
            others.append(issue)
    return by_group, others


def build_events(answers: AdminAnswers, *, cluster: str, snapshot_id: str) -> list[MembershipEvent]:
    """Turn one snapshot's admin answers into its version 1 events (a full copy;
    :mod:`streaming.collector.changes` makes version 2's, the changes).

    One ``group`` event per listed group (sorted by group id, key = group id), then one
    ``topics`` event (key = ``cluster``) describing the topics the groups touch, the
    brokers, and the partitions' end offsets. Errors about one group go into that group's
    event; all others into the ``topics`` event. Pure: no I/O, no clock.
    """
    envelope = poll_envelope(answers, 1, cluster, snapshot_id)
    group_issues, other_issues = split_issues(answers.issues)

    listed_by_id = {str(g["group_id"]): g for g in answers.groups}
    events: list[MembershipEvent] = []
    touched: set[str] = set()
    for group_id in sorted(listed_by_id):
        event, topics = group_event_v1(
            envelope,
            listed_by_id[group_id],
            answers.descriptions.get(group_id),
            answers.committed.get(group_id),
            answers.end_offsets,
            group_issues.get(group_id, []),
            answers.session_timeouts.get(group_id),
        )
        touched.update(topics)
        events.append(MembershipEvent.of(group_id, event))

    # Issues naming a group that was not listed (should not happen) still get reported.
    for group_id, issues in sorted(group_issues.items()):
        if group_id not in listed_by_id:
            other_issues.extend(issues)

    topics_event = topics_event_v1(envelope, answers, touched, other_issues, sorted(listed_by_id))
    events.append(MembershipEvent.of(cluster, topics_event))
    return events


def group_event_v1(
    envelope: Json,
    listed: Mapping[str, Any],
    description: Mapping[str, Any] | None,
    committed: Mapping[tuple[str, int], Committed] | None,
    end_offsets: Mapping[tuple[str, int], int],
    issues: list[Issue],
    session_timeout_ms: int | None = None,
) -> tuple[wire.GroupEvent, set[str]]:
    group_id = str(listed["group_id"])
    issues = list(issues)
    classic = is_classic(listed)
    described = description is not None and description.get("error") is None
    if classic and description is not None and not described:
        issues.append(Issue("describe_groups", str(description["error"]), group_id=group_id))
        # Brokers older than Kafka 4.0 do not report group_type: a KIP-848 group shows
        # itself only through this error (GROUP_ID_NOT_FOUND, "... not a classic group").
        if "not a classic group" in str(description["error"]):
            classic = False

    members: list[wire.Member] | None = None
    if described:
        assert description is not None
        protocol_type = _none_if_empty(description.get("protocol_type"))
        state = _none_if_empty(description.get("group_state"))
        protocol_name = _none_if_empty(description.get("protocol_data"))
        members = []
        for raw in description.get("members") or ():
            member, problem = _member(raw, protocol_type)
            members.append(member)
            if problem:
                issues.append(Issue("decode_member", problem, group_id=group_id))
    else:
        protocol_type = _none_if_empty(listed.get("protocol_type"))
        state = _none_if_empty(listed.get("group_state"))
        protocol_name = None

    offsets: list[wire.CommittedOffset] | None = None
    if committed is not None:
        offsets = []
        for (topic, partition), entry in sorted(committed.items()):
            offset, metadata, epoch = int(entry[0]), entry[1], entry[2]
            end = end_offsets.get((topic, partition))
            offsets.append(
                wire.CommittedOffset(
                    topic=topic,
                    partition=partition,
                    offset=offset,
                    leader_epoch=None if epoch is None or epoch < 0 else epoch,
                    metadata=metadata,
                    end_offset=end,
                    lag=end - offset if end is not None and offset >= 0 else None,
                )
            )

    topics = group_topics(description if described else None, committed)
    event = wire.GroupEvent(
        **envelope,
        event_type="group",
        group_id=group_id,
        group_type=_none_if_empty(listed.get("group_type")),
        protocol_type=protocol_type,
        state=state,
        protocol_name=protocol_name,
        membership_source="describe_groups" if classic else "consumer_offsets",
        member_count=None if members is None else len(members),
        members=members,
        topics=sorted(topics),
        committed_offsets=offsets,
        session_timeout_ms=session_timeout_ms,
        errors=issues,
    )
    return event, topics


def _member(raw: Mapping[str, Any], protocol_type: str | None) -> tuple[wire.Member, str | None]:
    """One DescribeGroups member -> event member, and a decode problem if any."""
    member_id = str(raw.get("member_id") or "")
    common: Json = {
        "member_id": member_id,
        "group_instance_id": raw.get("group_instance_id"),
        "client_id": str(raw.get("client_id") or ""),
        "client_host": str(raw.get("client_host") or ""),
    }
    if protocol_type != "consumer":
        return wire.Member(**common), None  # connect and other protocols: opaque metadata
    problems: list[str] = []
    subscription = raw.get("member_metadata")
    if isinstance(subscription, Mapping):
        common["subscribed_topics"] = sorted({str(t) for t in subscription.get("topics") or ()})
        if "owned_partitions" in subscription:  # subscription v1+
            common["owned_partitions"] = _topic_partitions(subscription["owned_partitions"])
        if "generation_id" in subscription:  # v2+
            common["subscription_generation_id"] = subscription["generation_id"]
        common["rack_id"] = subscription.get("rack_id")  # v3+
    elif subscription:  # kafka-python could not decode it and left the raw bytes
        problems.append(f"member {member_id}: undecodable subscription")
    assignment = raw.get("member_assignment")
    if isinstance(assignment, Mapping):
        parts = _topic_partitions(assignment.get("assigned_partitions") or ())
        common["assignment"] = parts
        common["assigned_partition_count"] = sum(len(e.partitions) for e in parts)
    elif assignment:
        problems.append(f"member {member_id}: undecodable assignment")
    return wire.Member(**common), "; ".join(problems) or None


def _topic_partitions(entries: Iterable[Mapping[str, Any]]) -> list[wire.TopicPartitions]:
    merged: dict[str, set[int]] = {}
    for entry in entries:
        merged.setdefault(str(entry["topic"]), set()).update(
            int(p) for p in entry["partitions"] or ()
        )
    return [
        wire.TopicPartitions(topic=t, partitions=sorted(ps)) for t, ps in sorted(merged.items())
    ]


def topics_event_v1(
    envelope: Json,
    answers: AdminAnswers,
    touched: set[str],
    issues: list[Issue],
    group_ids: list[str],
) -> wire.TopicsEvent:
    cluster_info = answers.cluster or {}
    brokers = sorted(
        (
            wire.Broker(
                broker_id=int(b["broker_id"]),
                host=str(b.get("host") or ""),
                port=int(b.get("port") or 0),
                rack=b.get("rack"),
                is_fenced=b.get("is_fenced"),
            )
            for b in cluster_info.get("brokers") or ()
        ),
        key=lambda b: b.broker_id,
    )
    racks = {b.broker_id: b.rack for b in brokers}
    described = {str(t["name"]): t for t in answers.topics if t.get("name")}
    topics: list[wire.Topic] = []
    for name in sorted(touched | set(described)):
        meta = described.get(name)
        if meta is None:
            topics.append(_topic_entry(name, error="not described in this snapshot"))
            continue
        code = int(meta.get("error_code") or 0)
        if code:
            topics.append(_topic_entry(name, error=kafka_errors.for_code(code).__name__, meta=meta))
            continue
        partitions = [
            wire.Partition(
                partition=int(p["partition_index"]),
                leader_id=int(p.get("leader_id", -1)),
                replicas=[int(r) for r in p.get("replica_nodes") or ()],
                isr=[int(r) for r in p.get("isr_nodes") or ()],
                offline_replicas=[int(r) for r in p.get("offline_replicas") or ()],
                replica_racks=[racks.get(int(r)) for r in p.get("replica_nodes") or ()],
                end_offset=answers.end_offsets.get((name, int(p["partition_index"]))),
            )
            for p in sorted(meta.get("partitions") or (), key=lambda p: p["partition_index"])
        ]
        topics.append(_topic_entry(name, meta=meta, partitions=partitions))
    return wire.TopicsEvent(
        **envelope,
        event_type="topics",
        group_ids=group_ids,
        controller_id=cluster_info.get("controller_id"),
        brokers=brokers,
        end_offsets_ts_ms=answers.end_offsets_ts_ms,
        topics=topics,
        errors=issues,
    )


def _topic_entry(
    name: str,
    *,
    error: str | None = None,
    meta: Mapping[str, Any] | None = None,
    partitions: list[wire.Partition] | None = None,
) -> wire.Topic:
    meta = meta or {}
    return wire.Topic(
        topic=name,
        topic_id=_kafka_uuid(meta.get("topic_id")),
        is_internal=meta.get("is_internal"),
        partition_count=None if partitions is None else len(partitions),
        error=error,
        partitions=partitions or [],
    )


def _kafka_uuid(value: Any) -> str | None:
    """A topic id in Kafka's text form (22-character URL-safe base64); null for zero."""
    if value is None:
        return None
    try:
        parsed = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        return str(value)
    if parsed.int == 0:
        return None
    return base64.urlsafe_b64encode(parsed.bytes).decode("ascii").rstrip("=")


def _none_if_empty(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def load_schema(version: int = wire.SCHEMA_VERSION) -> Json:
    """The JSON Schema (draft 2020-12) of one version's events,
    ``membership_event_v<version>.json`` (generated from :mod:`streaming.membership_event`)."""
    schema: Json = json.loads(SCHEMA_PATHS[version].read_text(encoding="utf-8"))
    return schema
