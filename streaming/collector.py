"""The membership collector: admin-API snapshots of every consumer group -> a Kafka topic.

``rebalance-monitor collect`` (``cli_collect``) asks the cluster, every ``interval_s``
seconds, what its groups look like, and publishes the answer as JSON events (schema
``streaming/schemas/membership_event_v1.json``, documented in ``docs/events.md``) to an
ordinary topic, ``rebalance-monitor.membership`` by default, created if absent::

    gather_answers(admin, config)      I/O: describe_cluster, list_groups (filtered by the
        │                              group regex), describe_groups (classic groups only),
        │                              list_group_offsets, describe_configs (KIP-848 groups:
        │                              the session timeout), describe_topics (the topics the
        │                              groups touch; every topic while a KIP-848 group has
        │                              committed nothing), list_partition_offsets (LATEST)
        ▼
    AdminAnswers                       plain data: what the admin calls answered, and the
        │                              calls that failed (``Issue``)
        ▼
    build_events(answers, ...)         pure: one ``group`` event per group (key: group id)
        │                              and one ``topics`` event (key: the cluster label)
        ▼
    Collector.publish(events)          I/O: KafkaProducer, acks=all, flushed per snapshot

``Collector.run`` loops: one snapshot per interval, a progress line per snapshot, failures
logged and retried with exponential backoff (``backoff_initial_s`` doubling up to
``backoff_max_s``) on fresh clients; the loop only ends when ``stop`` is set, ``duration_s``
has passed or, with ``once``, after the first successful snapshot.

What the admin API cannot give. kafka-python 3.0 speaks only the classic group protocol:
DescribeGroups on a KIP-848 ``consumer``-protocol group answers error 69
(``GroupIdNotFoundError: Group <id> is not a classic group.``, state ``Dead``, no members),
and ConsumerGroupDescribe (API 69) is not implemented. ListGroups v5 reports such groups
with ``group_type == "consumer"`` and their state (``Stable``, ``Assigning``,
``Reconciling``, ``Empty``); OffsetFetch returns their committed offsets. Their events
carry that, ``members: null`` and ``membership_source: "consumer_offsets"``: membership
must come from the KIP-848 records in ``__consumer_offsets`` (``streaming.codec.kip848``).
The session timeout of a KIP-848 group is not in its records either (it is a group config,
not a member's): DescribeConfigs on the group gives it (``session_timeout_ms``). The
membership of ``share`` and ``streams`` groups is not described either (share groups get no
committed offsets: OffsetFetch does not serve them).

Exceptions::

    CollectorError                   root of this module's errors (a RebalanceMonitorError)
    ├── CollectorConfigError         (also ConfigError) an invalid CollectorConfig or option
    └── SnapshotError                a snapshot could not be taken or published; the loop
                                     logs it and retries with backoff
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import logging
import math
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Literal

import kafka.errors as kafka_errors
import msgspec  # type: ignore[import-untyped]
from kafka import (
    KafkaAdminClient,
    KafkaProducer,
    OffsetSpec,
    TopicPartition,
)
from kafka.admin import ConfigResource, ConfigResourceType  # type: ignore[import-untyped]

from streaming import membership_event as wire
from streaming.config import (
    DEFAULT_BOOTSTRAP_SERVERS,
    DEFAULT_CLUSTER,
    DEFAULT_MEMBERSHIP_TOPIC,
    KAFKA_OPTION_KEYS,
    KAFKA_OPTIONS_ENV,
    MAX_COLLECT_S,
    CollectorConfig,
    CollectorConfigError,
    kafka_options_from_env,
    load_collector_config,
    parse_kafka_option,
)
from streaming.errors import EXIT_FAILED, ArgumentParser, RebalanceMonitorError, cli_command
from streaming.membership_event import SCHEMA_PATH, SCHEMA_VERSION, Issue, Stage

__all__ = [
    "DEFAULT_BOOTSTRAP_SERVERS",
    "DEFAULT_CLUSTER",
    "DEFAULT_INTERVAL_S",
    "DEFAULT_TOPIC",
    "KAFKA_OPTIONS_ENV",
    "KAFKA_OPTION_KEYS",
    "SCHEMA_PATH",
    "SCHEMA_VERSION",
    "AdminAnswers",
    "Collector",
    "CollectorConfig",
    "CollectorConfigError",
    "CollectorError",
    "Issue",
    "MembershipEvent",
    "RunStats",
    "SnapshotError",
    "SnapshotReport",
    "add_collect_arguments",
    "build_events",
    "cli_collect",
    "gather_answers",
    "group_topics",
    "is_classic",
    "kafka_options_from_env",
    "load_schema",
    "parse_kafka_option",
    "run_collect",
]

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 5.0
DEFAULT_TOPIC = DEFAULT_MEMBERSHIP_TOPIC
DEFAULT_CLIENT_ID = "rebalance-monitor-collector"

#: Group types whose membership DescribeGroups reports (ListGroups v5 ``group_type``;
#: ``""`` when the broker is older than Kafka 4.0 and does not say).
_CLASSIC_TYPES = frozenset({"", "classic", "unknown"})
#: Group types OffsetFetch does not serve.
_NO_OFFSETS_TYPES = frozenset({"share"})

#: Errors meaning "the cluster is unreachable": they fail the whole snapshot (and so get
#: the loop's backoff) instead of being recorded against one group or topic.
_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    kafka_errors.KafkaConnectionError,
    kafka_errors.KafkaTimeoutError,
    kafka_errors.NodeNotReadyError,
    kafka_errors.RequestTimedOutError,
    ConnectionError,
    TimeoutError,
)

_BATCH = 200  # groups per DescribeGroups / OffsetFetch / DescribeConfigs round
#: The KIP-848 group config (and, prefixed ``group.``, the broker default) of the session.
SESSION_TIMEOUT_CONFIG = "consumer.session.timeout.ms"

Json = dict[str, Any]


# --------------------------------------------------------------------------- errors


class CollectorError(RebalanceMonitorError):
    """Root of the collector's errors."""


class SnapshotError(CollectorError):
    """A snapshot could not be taken or published."""

    exit_status = EXIT_FAILED


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


@dataclass(frozen=True)
class MembershipEvent:
    """One record for the membership topic: ``key`` (str) and ``value`` (the event as its
    JSON object, :func:`streaming.membership_event.to_json`)."""

    key: str
    value: Json

    @classmethod
    def of(cls, key: str, event: wire.GroupEvent | wire.TopicsEvent) -> MembershipEvent:
        return cls(key, wire.to_json(event))

    def encode(self) -> tuple[bytes, bytes]:
        """The record's key and value bytes (UTF-8; compact JSON)."""
        return self.key.encode("utf-8"), msgspec.json.encode(self.value)


def is_classic(listed: Mapping[str, Any]) -> bool:
    """Whether DescribeGroups can report this ``list_groups()`` entry's members."""
    return str(listed.get("group_type") or "").lower() in _CLASSIC_TYPES


def _serves_offsets(listed: Mapping[str, Any]) -> bool:
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


# --------------------------------------------------------------------------- pure: events


def build_events(answers: AdminAnswers, *, cluster: str, snapshot_id: str) -> list[MembershipEvent]:
    """Turn one snapshot's admin answers into its events (:mod:`streaming.membership_event`).

    One ``group`` event per listed group (sorted by group id, key = group id), then one
    ``topics`` event (key = ``cluster``) describing the topics the groups touch, the
    brokers, and the partitions' end offsets. Errors about one group go into that group's
    event; all others into the ``topics`` event. Pure: no I/O, no clock.
    """
    cluster_info = answers.cluster or {}
    envelope: Json = {
        "schema_version": SCHEMA_VERSION,
        "cluster": cluster,
        "kafka_cluster_id": cluster_info.get("cluster_id"),
        "snapshot_id": snapshot_id,
        "snapshot_ts_ms": answers.snapshot_ts_ms,
    }
    group_issues: dict[str, list[Issue]] = {}
    other_issues: list[Issue] = []
    for issue in answers.issues:
        if issue.group_id is not None:
            group_issues.setdefault(issue.group_id, []).append(issue)
        else:
            other_issues.append(issue)

    listed_by_id = {str(g["group_id"]): g for g in answers.groups}
    events: list[MembershipEvent] = []
    touched: set[str] = set()
    for group_id in sorted(listed_by_id):
        event, topics = _group_event(
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

    topics_event = _topics_event(envelope, answers, touched, other_issues, sorted(listed_by_id))
    events.append(MembershipEvent.of(cluster, topics_event))
    return events


def _group_event(
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


def _topics_event(
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


def load_schema() -> Json:
    """The JSON Schema (draft 2020-12) of the events, ``membership_event_v1.json``
    (generated from :mod:`streaming.membership_event`)."""
    schema: Json = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


# --------------------------------------------------------------------------- I/O: gather


def gather_answers(
    admin: Any, config: CollectorConfig, *, clock: Callable[[], float] = time.time
) -> AdminAnswers:
    """Ask the cluster (through a ``KafkaAdminClient``) everything one snapshot needs.

    ListGroups must succeed (else the snapshot fails); the other calls are batched, fall
    back to one call per group or topic when a batch fails, and record what still fails as
    an ``Issue``. Connection-level errors always propagate.
    """
    snapshot_ts_ms = int(clock() * 1000)
    issues: list[Issue] = []
    cluster: Mapping[str, Any] | None = None
    try:
        cluster = admin.describe_cluster()
    except _CONNECTION_ERRORS:
        raise
    except kafka_errors.KafkaError as exc:  # e.g. no DESCRIBE on the cluster: carry on
        issues.append(Issue("describe_cluster", _describe_error(exc)))
    pattern = config.group_pattern
    listed: dict[str, Mapping[str, Any]] = {}
    for entry in admin.list_groups():
        group_id = str(entry["group_id"])
        if pattern.fullmatch(group_id):
            listed.setdefault(group_id, entry)
    groups = [listed[g] for g in sorted(listed)]

    classic_ids = [str(g["group_id"]) for g in groups if is_classic(g)]
    descriptions: dict[str, Mapping[str, Any]] = {}
    for chunk in _chunks(classic_ids, _BATCH):
        descriptions.update(
            _with_fallback(admin.describe_groups, chunk, "describe_groups", issues, by="group")
        )

    offset_ids = [str(g["group_id"]) for g in groups if _serves_offsets(g)]
    committed: dict[str, Mapping[tuple[str, int], Committed]] = {}
    for chunk in _chunks(offset_ids, _BATCH):
        answer = _with_fallback(
            admin.list_group_offsets, chunk, "list_group_offsets", issues, by="group"
        )
        for group_id, offsets in answer.items():
            committed[group_id] = {
                (str(tp[0]), int(tp[1])): (int(om[0]), om[1], om[2]) for tp, om in offsets.items()
            }

    consumer_ids = [str(g["group_id"]) for g in groups if _is_consumer_protocol(g)]
    session_timeouts: dict[str, int] = {}
    for chunk in _chunks(consumer_ids, _BATCH):
        session_timeouts.update(
            _with_fallback(
                lambda ids: _session_timeouts(admin, ids),
                chunk,
                "describe_configs",
                issues,
                by="group",
            )
        )

    touched: set[str] = set()
    for group_id in listed:
        touched |= group_topics(descriptions.get(group_id), committed.get(group_id))
    if any(not group_topics(None, committed.get(g)) for g in consumer_ids):
        # a KIP-848 group that has not committed yet: nothing here says which topics it
        # subscribes, and its records name them by id. Every topic is described, so the
        # tracker can name the ids of its first target (it keeps the subscribed ones).
        try:
            touched |= {str(t) for t in admin.list_topics() if not str(t).startswith("__")}
        except _CONNECTION_ERRORS:
            raise
        except kafka_errors.KafkaError as exc:
            issues.append(Issue("describe_topics", _describe_error(exc)))
    topics: list[Mapping[str, Any]] = []
    if touched:
        try:
            topics = list(admin.describe_topics(sorted(touched)))
        except _CONNECTION_ERRORS:
            raise
        except kafka_errors.KafkaError as exc:
            issues.append(Issue("describe_topics", _describe_error(exc)))

    specs: dict[str, list[tuple[str, int]]] = {}
    for meta in topics:
        if int(meta.get("error_code") or 0) == 0 and meta.get("name"):
            name = str(meta["name"])
            specs[name] = [(name, int(p["partition_index"])) for p in meta.get("partitions") or ()]
    end_offsets: dict[tuple[str, int], int] = {}
    end_offsets_ts_ms: int | None = None
    if specs:
        end_offsets_ts_ms = int(clock() * 1000)
        end_offsets = _latest_offsets(admin, specs, issues)
    return AdminAnswers(
        snapshot_ts_ms=snapshot_ts_ms,
        cluster=cluster,
        groups=groups,
        descriptions=descriptions,
        committed=committed,
        topics=topics,
        end_offsets=end_offsets,
        end_offsets_ts_ms=end_offsets_ts_ms,
        session_timeouts=session_timeouts,
        issues=issues,
    )


def _is_consumer_protocol(listed: Mapping[str, Any]) -> bool:
    return str(listed.get("group_type") or "").lower() == "consumer"


def _session_timeouts(admin: Any, group_ids: Sequence[str]) -> dict[str, int]:
    """DescribeConfigs of KIP-848 groups: the session timeout in effect for each (the
    group's dynamic config, else the broker's default, ``config_filter="all"``)."""
    resources = [
        ConfigResource(ConfigResourceType.GROUP, g, configs=[SESSION_TIMEOUT_CONFIG])
        for g in group_ids
    ]
    answer = admin.describe_configs(resources, config_filter="all").get("group", {})
    out: dict[str, int] = {}
    for group_id, configs in answer.items():
        value = (configs.get(SESSION_TIMEOUT_CONFIG) or {}).get("value")
        if value is not None and str(value).isdigit():
            out[str(group_id)] = int(value)
    return out


def _latest_offsets(
    admin: Any, specs: Mapping[str, list[tuple[str, int]]], issues: list[Issue]
) -> dict[tuple[str, int], int]:
    def latest(topics: Sequence[str]) -> dict[tuple[str, int], int]:
        request = {TopicPartition(*tp): OffsetSpec.LATEST for t in topics for tp in specs[t]}
        answer = admin.list_partition_offsets(request)
        return {(str(tp[0]), int(tp[1])): int(o.offset) for tp, o in answer.items()}

    return _with_fallback(latest, sorted(specs), "list_partition_offsets", issues, by="topic")


def _with_fallback(
    call: Callable[[list[str]], Mapping[Any, Any]],
    keys: list[str],
    stage: Stage,
    issues: list[Issue],
    *,
    by: Literal["group", "topic"],
) -> dict[Any, Any]:
    """``call(keys)``; if that fails, ``call([key])`` for each key, recording failures."""
    if not keys:
        return {}
    try:
        return dict(call(keys))
    except _CONNECTION_ERRORS:
        raise
    except kafka_errors.KafkaError as exc:
        if len(keys) == 1:
            issues.append(_issue(stage, exc, keys[0], by))
            return {}
        log.debug("%s failed for %d keys (%s); retrying one by one", stage, len(keys), exc)
    results: dict[Any, Any] = {}
    for key in keys:
        try:
            results.update(call([key]))
        except _CONNECTION_ERRORS:
            raise
        except kafka_errors.KafkaError as exc:
            issues.append(_issue(stage, exc, key, by))
    return results


def _issue(stage: Stage, exc: BaseException, key: str, by: str) -> Issue:
    if by == "group":
        return Issue(stage, _describe_error(exc), group_id=key)
    return Issue(stage, _describe_error(exc), topic=key)


def _describe_error(exc: BaseException) -> str:
    text = str(exc)
    name = type(exc).__name__
    return text if text.startswith(name) or name in text else f"{name}: {text}"


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# --------------------------------------------------------------------------- I/O: loop


@dataclass(frozen=True, kw_only=True)
class SnapshotReport:
    """What one successful snapshot did."""

    snapshot_id: str
    groups: int
    offsets_only_groups: int
    topics: int
    events_published: int
    errors: tuple[str, ...]
    elapsed_s: float


@dataclass(kw_only=True)
class RunStats:
    """Totals of a ``Collector.run``."""

    snapshots: int = 0
    failed_snapshots: int = 0
    events_published: int = 0
    errors: int = 0
    last_error: str | None = None


AdminFactory = Callable[[CollectorConfig], Any]
ProducerFactory = Callable[[CollectorConfig], Any]


def _default_admin(config: CollectorConfig) -> Any:
    return KafkaAdminClient(**config.admin_configs())


def _default_producer(config: CollectorConfig) -> Any:
    return KafkaProducer(**config.producer_configs())


class Collector:
    """Takes snapshots and publishes them; owns one admin client and one producer.

    Clients are created on first use and dropped after a failed snapshot, so the next
    attempt reconnects. ``admin_factory`` and ``producer_factory`` exist for tests.
    """

    def __init__(
        self,
        config: CollectorConfig,
        *,
        admin_factory: AdminFactory = _default_admin,
        producer_factory: ProducerFactory = _default_producer,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self._admin_factory = admin_factory
        self._producer_factory = producer_factory
        self._clock = clock
        self._admin: Any = None
        self._producer: Any = None
        self._topic_ready = False
        self._reported: frozenset[str] = frozenset()

    # -- one snapshot

    def snapshot_once(self) -> SnapshotReport:
        """Take one snapshot and publish its events; ``SnapshotError`` if that fails."""
        t0 = time.monotonic()
        try:
            admin = self._admin_client()
            self._ensure_topic(admin)
            answers = gather_answers(admin, self.config, clock=self._clock)
            snapshot_id = uuid.uuid4().hex
            events = build_events(answers, cluster=self.config.cluster, snapshot_id=snapshot_id)
            published = self.publish(events)
        except SnapshotError:
            raise
        except Exception as exc:
            raise SnapshotError(_describe_error(exc)) from exc
        return SnapshotReport(
            snapshot_id=snapshot_id,
            groups=len(answers.groups),
            offsets_only_groups=sum(
                1
                for e in events
                if e.value["event_type"] == "group"
                and e.value["membership_source"] == "consumer_offsets"
            ),
            topics=len(events[-1].value["topics"]),
            events_published=published,
            errors=tuple(
                f"{err['stage']} ({err['group_id'] or err['topic'] or 'cluster'}): {err['message']}"
                for e in events
                for err in e.value["errors"]
            ),
            elapsed_s=time.monotonic() - t0,
        )

    def publish(self, events: Sequence[MembershipEvent]) -> int:
        """Send the events to the membership topic and wait until all are acknowledged."""
        producer = self._producer_client()
        futures = []
        for event in events:
            key, value = event.encode()
            futures.append(producer.send(self.config.topic, key=key, value=value))
        timeout_s = self.config.request_timeout_ms / 1000
        producer.flush(timeout=timeout_s)
        for future in futures:
            future.get(timeout=timeout_s)  # raises the send's KafkaError
        return len(futures)

    # -- the loop

    def run(
        self,
        *,
        stop: threading.Event | None = None,
        once: bool = False,
        duration_s: float | None = None,
    ) -> RunStats:
        """Snapshot every ``interval_s`` until ``stop`` is set or ``duration_s`` has passed.

        With ``once``, stop after the first successful snapshot (retrying a failure with
        backoff only while ``duration_s`` allows; without ``duration_s``, one attempt).
        """
        stop = stop or threading.Event()
        stats = RunStats()
        deadline = None if duration_s is None else time.monotonic() + duration_s
        backoff = self.config.backoff_initial_s
        log.info(
            "collecting from %s every %g s into %s (cluster %r, groups matching %r)%s",
            ",".join(self.config.bootstrap_servers),
            self.config.interval_s,
            self.config.topic,
            self.config.cluster,
            self.config.group_filter,
            f", options {self.config.redacted_options()}" if self.config.kafka_options else "",
        )
        try:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    report = self.snapshot_once()
                except SnapshotError as exc:
                    stats.failed_snapshots += 1
                    stats.last_error = str(exc)
                    self.close()
                    # A traceback only for what is not a plain Kafka or network error.
                    cause = exc.__cause__
                    trace = cause is not None and not isinstance(
                        cause, kafka_errors.KafkaError | OSError
                    )
                    if once and deadline is None:
                        log.error("snapshot failed: %s", exc, exc_info=trace)
                        break
                    log.warning(
                        "snapshot failed: %s; retrying in %.1f s", exc, backoff, exc_info=trace
                    )
                    wait_s = backoff
                    backoff = min(backoff * 2, self.config.backoff_max_s)
                else:
                    stats.snapshots += 1
                    stats.events_published += report.events_published
                    stats.errors += len(report.errors)
                    backoff = self.config.backoff_initial_s
                    self._log_errors(report.errors)
                    log.info(
                        "snapshot %d: %d groups (%d without DescribeGroups membership), "
                        "%d topics, %d events published in %.2f s, %d errors "
                        "[totals: %d events, %d errors, %d failed snapshots]",
                        stats.snapshots,
                        report.groups,
                        report.offsets_only_groups,
                        report.topics,
                        report.events_published,
                        report.elapsed_s,
                        len(report.errors),
                        stats.events_published,
                        stats.errors,
                        stats.failed_snapshots,
                    )
                    if once:
                        break
                    wait_s = max(0.0, self.config.interval_s - (time.monotonic() - started))
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or wait_s >= remaining:
                        break
                stop.wait(wait_s)
        finally:
            self.close()
        log.info(
            "collector stopped after %d snapshots: %d events published, %d errors, "
            "%d failed snapshots",
            stats.snapshots,
            stats.events_published,
            stats.errors,
            stats.failed_snapshots,
        )
        return stats

    def _log_errors(self, errors: tuple[str, ...]) -> None:
        """Each partial error at WARNING when it first appears, at DEBUG while it repeats."""
        for message in errors:
            level = logging.DEBUG if message in self._reported else logging.WARNING
            log.log(level, "snapshot error: %s", message)
        self._reported = frozenset(errors)

    def close(self) -> None:
        """Close the clients (idempotent); the next snapshot creates new ones."""
        for name in ("_producer", "_admin"):
            client = getattr(self, name)
            setattr(self, name, None)
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close()
        self._topic_ready = False

    # -- clients

    def _admin_client(self) -> Any:
        if self._admin is None:
            self._admin = self._admin_factory(self.config)
        return self._admin

    def _producer_client(self) -> Any:
        if self._producer is None:
            self._producer = self._producer_factory(self.config)
        return self._producer

    def _ensure_topic(self, admin: Any) -> None:
        """Create the membership topic if it does not exist (once per connection)."""
        if self._topic_ready:
            return
        topic = self.config.topic
        [meta] = admin.describe_topics([topic])
        code = int(meta.get("error_code") or 0)
        if code == kafka_errors.UnknownTopicOrPartitionError.errno:
            spec = {
                "num_partitions": self.config.topic_partitions or -1,
                "replication_factor": self.config.topic_replication_factor or -1,
            }
            answer = admin.create_topics({topic: spec}, raise_errors=False)
            [created] = answer["topics"]
            created_code = int(created.get("error_code") or 0)
            if created_code not in (0, kafka_errors.TopicAlreadyExistsError.errno):
                error = kafka_errors.for_code(created_code)
                raise SnapshotError(f"cannot create topic {topic}: {error.__name__}")
            admin.wait_for_topics([topic], timeout_ms=self.config.request_timeout_ms)
            log.info("created topic %s", topic)
        elif code:
            error = kafka_errors.for_code(code)
            raise SnapshotError(f"cannot use topic {topic}: {error.__name__}")
        self._topic_ready = True


# --------------------------------------------------------------------------- command line


#: ``collect``'s flags of each setting (error messages name the flag a bad value came from).
FLAGS: dict[str, str] = {
    "bootstrap_servers": "--bootstrap-server",
    "interval_s": "--interval",
    "topic": "--topic",
    "cluster": "--cluster",
    "group_filter": "--group-filter",
    "kafka_options": "--kafka-option",
}


def add_collect_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``collect``'s arguments on ``parser`` (argparse only). A setting not given
    comes from ``--config``'s ``[collect]`` table, then ``REBALANCE_MONITOR_COLLECT_*``, then
    the default (:func:`streaming.config.load_collector_config`)."""
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="TOML config file: its [collect] table (or its top level) has the settings "
        "(streaming.config)",
    )
    parser.add_argument(
        "--bootstrap-server",
        default=None,
        metavar="HOST:PORT[,HOST:PORT]",
        help=f"brokers to bootstrap from (default {DEFAULT_BOOTSTRAP_SERVERS}, the local broker)",
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"time between snapshots (default {DEFAULT_INTERVAL_S:g})",
    )
    parser.add_argument(
        "--topic", default=None, help=f"topic to publish to (default {DEFAULT_TOPIC})"
    )
    parser.add_argument(
        "--cluster",
        default=None,
        metavar="NAME",
        help=f"cluster label written into every event (default {DEFAULT_CLUSTER})",
    )
    parser.add_argument(
        "--group-filter",
        default=None,
        metavar="REGEX",
        help="only groups whose whole id matches this regular expression (default: all)",
    )
    parser.add_argument(
        "--once", action="store_true", help="take one snapshot, publish it and exit"
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop after this long (with --once: keep retrying a failed snapshot this long)",
    )
    parser.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="client security option, repeatable: kafka-python's security_protocol, sasl_*, "
        "ssl_* (e.g. security_protocol=SASL_SSL) or the job's Java settings (sasl.jaas.config, "
        f"ssl.truststore.location...); also ${KAFKA_OPTIONS_ENV} as a JSON object, "
        "which keeps passwords out of the process list (flags win)",
    )
    parser.add_argument(
        "--broker-check-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long the check of the cluster before the first snapshot may take: "
        "unreachable, or a failed login, exits 2 naming the cause (default 30; 0: no check)",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="debug output, and kafka-python warnings"
    )


def config_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> CollectorConfig:
    """The collector's configuration: defaults < ``--config`` < environment < flags."""
    overrides: dict[str, Any] = {
        "bootstrap_servers": args.bootstrap_server,
        "interval_s": args.interval,
        "topic": args.topic,
        "cluster": args.cluster,
        "group_filter": args.group_filter,
    }
    if args.kafka_option:
        overrides["kafka_options"] = dict(parse_kafka_option(t) for t in args.kafka_option)
    return load_collector_config(
        config_file=getattr(args, "config", None),
        environ=environ,
        overrides=overrides,
        flags=FLAGS,
    )


def run_collect(args: argparse.Namespace) -> int:
    """Run ``collect`` with parsed arguments.

    Exit codes: 0 done (at least one snapshot published, or stopped with Ctrl-C / SIGTERM);
    1 no snapshot could be published; 2 invalid arguments, or the check before the first
    snapshot found the cluster unreachable or the login refused; 130 aborted by a second Ctrl-C.
    """
    if args.duration is not None and not (
        math.isfinite(args.duration) and 0 < args.duration <= MAX_COLLECT_S
    ):
        raise CollectorConfigError(
            f"--duration: expected seconds in (0, {MAX_COLLECT_S:g}], got {args.duration!r}"
        )
    if not (math.isfinite(args.broker_check_timeout) and args.broker_check_timeout >= 0):
        raise CollectorConfigError(
            f"--broker-check-timeout: expected seconds >= 0, got {args.broker_check_timeout!r}"
        )
    config = config_from_args(args)

    _setup_logging(verbose=bool(args.verbose))
    if args.broker_check_timeout > 0:
        from streaming.kafka_check import check_broker

        check_broker(
            config.bootstrap_servers, config.check_configs(), timeout_s=args.broker_check_timeout
        )
    stop = threading.Event()
    collector = Collector(config)
    with _stop_on_signals(stop):
        try:
            stats = collector.run(stop=stop, once=args.once, duration_s=args.duration)
        except KeyboardInterrupt:
            collector.close()
            log.warning("aborted")
            return 130
    if stats.snapshots == 0 and not stop.is_set():
        return 1
    return 0


@cli_command("rebalance-monitor collect")
def cli_collect(argv: Sequence[str] | None = None) -> int:
    """``rebalance-monitor collect [options]``; returns the exit code."""
    parser = ArgumentParser(
        prog="rebalance-monitor collect",
        description=(
            "Every --interval seconds, snapshot every consumer group with the admin API "
            "(state, assignor, members and their assignments, committed offsets, topic "
            "metadata and end offsets) and publish JSON events (docs/events.md) to --topic."
        ),
    )
    add_collect_arguments(parser)
    return run_collect(parser.parse_args(argv))


def _setup_logging(*, verbose: bool) -> None:
    if not logging.getLogger().handlers:
        logging.basicConfig(
            stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
    log.setLevel(logging.DEBUG if verbose else logging.INFO)
    # Our own log reports cluster errors once per snapshot; kafka-python's per-connection
    # warnings only with --verbose.
    logging.getLogger("kafka").setLevel(logging.WARNING if verbose else logging.CRITICAL)


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set ``stop`` (the loop ends after the current step); a second
    SIGINT raises ``KeyboardInterrupt``. Only in the main thread; restored on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()
        log.info("stopping after the current step (Ctrl-C again to abort)")

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
