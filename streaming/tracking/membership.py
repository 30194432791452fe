"""Parse the collector's membership events (JSON objects) into the frozen model.

:func:`parse_membership_event` takes one decoded JSON object (``json.loads`` of a record
value of the membership topic) and returns a :class:`~streaming.tracking.model.GroupSnapshot`,
a :class:`~streaming.tracking.model.TopicsSnapshot`, or an
:class:`~streaming.tracking.model.UnsupportedEvent` for an unknown ``schema_version`` or
``event_type`` (readers skip and count those, ``docs/events.md`` *Versioning*).

Tolerance follows the schema's versioning rules: properties this reader does not know are
ignored (additive changes keep version 1); a nullable property that is missing reads as
null, a missing list as empty. A property with the wrong type, or a missing non-nullable
one, raises :class:`~streaming.tracking.errors.MembershipEventError` naming it as a JSON path
(``members[2].assignment[0].partitions``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from assign_core.model import TopicPartition
from streaming.tracking.errors import MembershipEventError
from streaming.tracking.model import (
    CollectorIssue,
    GroupSnapshot,
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

SUPPORTED_SCHEMA_VERSIONS = frozenset({1})

_MISSING = object()


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int(obj: Mapping[str, Any], key: str, path: str) -> int:
    v = obj.get(key, _MISSING)
    if v is _MISSING:
        raise MembershipEventError(f"{path}{key}", "missing")
    if not _is_int(v):
        raise MembershipEventError(f"{path}{key}", f"expected an integer, got {v!r}")
    out: int = v
    return out


def _opt_int(obj: Mapping[str, Any], key: str, path: str) -> int | None:
    v = obj.get(key)
    if v is None:
        return None
    if not _is_int(v):
        raise MembershipEventError(f"{path}{key}", f"expected an integer or null, got {v!r}")
    out: int = v
    return out


def _str(obj: Mapping[str, Any], key: str, path: str, *, default: str | None = None) -> str:
    v = obj.get(key, _MISSING)
    if v is _MISSING or v is None:
        if default is not None:
            return default
        raise MembershipEventError(f"{path}{key}", "missing")
    if not isinstance(v, str):
        raise MembershipEventError(f"{path}{key}", f"expected a string, got {v!r}")
    return v


def _opt_str(obj: Mapping[str, Any], key: str, path: str) -> str | None:
    v = obj.get(key)
    if v is None:
        return None
    if not isinstance(v, str):
        raise MembershipEventError(f"{path}{key}", f"expected a string or null, got {v!r}")
    return v


def _opt_bool(obj: Mapping[str, Any], key: str, path: str) -> bool | None:
    v = obj.get(key)
    if v is None:
        return None
    if not isinstance(v, bool):
        raise MembershipEventError(f"{path}{key}", f"expected a boolean or null, got {v!r}")
    return v


def _list(obj: Mapping[str, Any], key: str, path: str, *, nullable: bool) -> list[Any] | None:
    v = obj.get(key)
    if v is None:
        return None if nullable else []
    if not isinstance(v, list):
        raise MembershipEventError(f"{path}{key}", f"expected a list, got {type(v).__name__}")
    return v


def _obj(v: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        raise MembershipEventError(path, f"expected an object, got {type(v).__name__}")
    return v


def _strings(obj: Mapping[str, Any], key: str, path: str, *, nullable: bool) -> Any:
    items = _list(obj, key, path, nullable=nullable)
    if items is None:
        return None
    for i, s in enumerate(items):
        if not isinstance(s, str):
            raise MembershipEventError(f"{path}{key}[{i}]", f"expected a string, got {s!r}")
    return tuple(items)


def _ints(obj: Mapping[str, Any], key: str, path: str) -> tuple[int, ...]:
    items = _list(obj, key, path, nullable=False) or []
    for i, v in enumerate(items):
        if not _is_int(v):
            raise MembershipEventError(f"{path}{key}[{i}]", f"expected an integer, got {v!r}")
    return tuple(items)


def _topic_partitions(
    obj: Mapping[str, Any], key: str, path: str
) -> tuple[TopicPartition, ...] | None:
    items = _list(obj, key, path, nullable=True)
    if items is None:
        return None
    out: list[TopicPartition] = []
    for i, raw in enumerate(items):
        here = f"{path}{key}[{i}]"
        entry = _obj(raw, here)
        topic = _str(entry, "topic", f"{here}.")
        out.extend(TopicPartition(topic, p) for p in _ints(entry, "partitions", f"{here}."))
    return tuple(out)


def _issues(obj: Mapping[str, Any]) -> tuple[CollectorIssue, ...]:
    out = []
    for i, raw in enumerate(_list(obj, "errors", "", nullable=False) or []):
        path = f"errors[{i}]."
        e = _obj(raw, path[:-1])
        out.append(
            CollectorIssue(
                stage=_str(e, "stage", path),
                message=_str(e, "message", path, default=""),
                group_id=_opt_str(e, "group_id", path),
                topic=_opt_str(e, "topic", path),
            )
        )
    return tuple(out)


def _member(raw: Any, path: str) -> SnapshotMember:
    m = _obj(raw, path[:-1])
    return SnapshotMember(
        member_id=_str(m, "member_id", path),
        group_instance_id=_opt_str(m, "group_instance_id", path),
        client_id=_str(m, "client_id", path, default=""),
        client_host=_str(m, "client_host", path, default=""),
        rack_id=_opt_str(m, "rack_id", path),
        subscribed_topics=_strings(m, "subscribed_topics", path, nullable=True),
        owned_partitions=_topic_partitions(m, "owned_partitions", path),
        subscription_generation_id=_opt_int(m, "subscription_generation_id", path),
        assignment=_topic_partitions(m, "assignment", path),
        assigned_partition_count=_opt_int(m, "assigned_partition_count", path),
    )


def _offset(raw: Any, path: str) -> SnapshotOffset:
    o = _obj(raw, path[:-1])
    return SnapshotOffset(
        topic=_str(o, "topic", path),
        partition=_int(o, "partition", path),
        offset=_int(o, "offset", path),
        leader_epoch=_opt_int(o, "leader_epoch", path),
        metadata=_opt_str(o, "metadata", path),
        end_offset=_opt_int(o, "end_offset", path),
        lag=_opt_int(o, "lag", path),
    )


def _group_event(obj: Mapping[str, Any], envelope: dict[str, Any]) -> GroupSnapshot:
    raw_members = _list(obj, "members", "", nullable=True)
    members = (
        None
        if raw_members is None
        else tuple(_member(m, f"members[{i}].") for i, m in enumerate(raw_members))
    )
    raw_offsets = _list(obj, "committed_offsets", "", nullable=True)
    offsets = (
        None
        if raw_offsets is None
        else tuple(_offset(o, f"committed_offsets[{i}].") for i, o in enumerate(raw_offsets))
    )
    return GroupSnapshot(
        **envelope,
        group_id=_str(obj, "group_id", ""),
        group_type=_opt_str(obj, "group_type", ""),
        protocol_type=_opt_str(obj, "protocol_type", ""),
        state=_opt_str(obj, "state", ""),
        protocol_name=_opt_str(obj, "protocol_name", ""),
        membership_source=_str(obj, "membership_source", "", default="describe_groups"),
        member_count=_opt_int(obj, "member_count", ""),
        members=members,
        topics=_strings(obj, "topics", "", nullable=False),
        committed_offsets=offsets,
        session_timeout_ms=_opt_int(obj, "session_timeout_ms", ""),
    )


def _partition(raw: Any, path: str) -> SnapshotPartition:
    p = _obj(raw, path[:-1])
    racks_raw = _list(p, "replica_racks", path, nullable=False) or []
    for i, r in enumerate(racks_raw):
        if r is not None and not isinstance(r, str):
            raise MembershipEventError(f"{path}replica_racks[{i}]", f"expected a string, got {r!r}")
    leader = _opt_int(p, "leader_id", path)
    return SnapshotPartition(
        partition=_int(p, "partition", path),
        leader_id=-1 if leader is None else leader,
        replicas=_ints(p, "replicas", path),
        isr=_ints(p, "isr", path),
        offline_replicas=_ints(p, "offline_replicas", path),
        replica_racks=tuple(racks_raw),
        end_offset=_opt_int(p, "end_offset", path),
    )


def _topic(raw: Any, path: str) -> SnapshotTopic:
    t = _obj(raw, path[:-1])
    parts = _list(t, "partitions", path, nullable=False) or []
    return SnapshotTopic(
        topic=_str(t, "topic", path),
        topic_id=_opt_str(t, "topic_id", path),
        is_internal=_opt_bool(t, "is_internal", path),
        partition_count=_opt_int(t, "partition_count", path),
        error=_opt_str(t, "error", path),
        partitions=tuple(_partition(p, f"{path}partitions[{i}].") for i, p in enumerate(parts)),
    )


def _broker(raw: Any, path: str) -> SnapshotBroker:
    b = _obj(raw, path[:-1])
    return SnapshotBroker(
        broker_id=_int(b, "broker_id", path),
        host=_str(b, "host", path, default=""),
        port=_opt_int(b, "port", path) or 0,
        rack=_opt_str(b, "rack", path),
        is_fenced=_opt_bool(b, "is_fenced", path),
    )


def _topics_event(obj: Mapping[str, Any], envelope: dict[str, Any]) -> TopicsSnapshot:
    brokers = _list(obj, "brokers", "", nullable=False) or []
    topics = _list(obj, "topics", "", nullable=False) or []
    return TopicsSnapshot(
        **envelope,
        group_ids=_strings(obj, "group_ids", "", nullable=False),
        controller_id=_opt_int(obj, "controller_id", ""),
        brokers=tuple(_broker(b, f"brokers[{i}].") for i, b in enumerate(brokers)),
        end_offsets_ts_ms=_opt_int(obj, "end_offsets_ts_ms", ""),
        topics=tuple(_topic(t, f"topics[{i}].") for i, t in enumerate(topics)),
    )


def parse_membership_event(obj: Any) -> MembershipPayload:
    """One membership event (a decoded JSON object) -> its model object (module docstring)."""
    event = _obj(obj, "$")
    version = event.get("schema_version")
    event_type = event.get("event_type")
    if not _is_int(version):
        raise MembershipEventError("schema_version", f"expected an integer, got {version!r}")
    if not isinstance(event_type, str):
        raise MembershipEventError("event_type", f"expected a string, got {event_type!r}")
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        return UnsupportedEvent(version, event_type, f"schema_version {version} is not supported")
    if event_type not in ("group", "topics"):
        return UnsupportedEvent(version, event_type, f"unknown event_type {event_type!r}")
    envelope: dict[str, Any] = {
        "schema_version": version,
        "cluster": _str(event, "cluster", ""),
        "kafka_cluster_id": _opt_str(event, "kafka_cluster_id", ""),
        "snapshot_id": _str(event, "snapshot_id", ""),
        "snapshot_ts_ms": _int(event, "snapshot_ts_ms", ""),
        "errors": _issues(event),
    }
    if event_type == "group":
        return _group_event(event, envelope)
    return _topics_event(event, envelope)


def parse_membership_json(value: bytes | str) -> MembershipPayload:
    """:func:`parse_membership_event` of a record value (UTF-8 JSON text)."""
    try:
        obj = json.loads(value)
    except (ValueError, UnicodeDecodeError) as e:
        raise MembershipEventError("$", f"not JSON: {e}") from None
    return parse_membership_event(obj)
