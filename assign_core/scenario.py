"""The scenario JSON format: parse and validate it into a :class:`GroupSpec`, and back.

::

    {"topics": {"t0": 3, "t1": 2},
     "topic_ids": {"t0": "<22-char base64 uuid>"},          # server-side strategies only
     "members": [{"member_id": "c-0b6e...", "group_instance_id": null,
                  "topics": ["t0", "t1"], "owned_partitions": [["t0", 0]],
                  "generation": 3, "rack": "r1"}],
     "partition_racks": {"t0": [["r1", "r2"], ["r2", "r3"], ["r3", "r1"]]}}

``topic_ids`` may also name a topic that is not in ``topics``: a vanished (deleted) topic
whose id a KIP-848 member's current assignment still holds. A topic without an id gets
:func:`default_topic_id` of its name.

Every validation error is a :class:`ScenarioError` naming the offending field.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from assign_core.errors import ScenarioError
from assign_core.javacompat import uuid_bits, uuid_to_string
from assign_core.model import AssignmentResult, GroupSpec, Member, TopicPartition
from assign_core.partition_cache import CACHE_LIMIT, topic_partitions

_MEMBER_FIELDS = {
    "member_id",
    "group_instance_id",
    "topics",
    "owned_partitions",
    "generation",
    "rack",
}
_TOP_FIELDS = {"topics", "topic_ids", "members", "partition_racks"}

INT32_MAX = 2**31 - 1


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _str(v: Any, field: str, *, nullable: bool = False) -> str | None:
    if v is None and nullable:
        return None
    if not isinstance(v, str):
        raise ScenarioError(field, f"expected a string, got {type(v).__name__}")
    return v


def default_topic_id(topic: str) -> str:
    """A stable topic id for scenarios that give none: derived from the topic name."""
    return uuid_to_string(hashlib.sha256(topic.encode("utf-8")).digest()[:16])


def parse_scenario(obj: Any) -> GroupSpec:
    """Validate a decoded scenario JSON object and build the :class:`GroupSpec`."""
    if not isinstance(obj, Mapping):
        raise ScenarioError("$", "the scenario must be a JSON object")
    unknown = set(obj) - _TOP_FIELDS
    if unknown:
        raise ScenarioError(sorted(unknown)[0], "unknown field")

    raw_topics = obj.get("topics")
    if not isinstance(raw_topics, Mapping):
        raise ScenarioError("topics", "expected an object of topic name -> partition count")
    topics: dict[str, int] = {}
    for name, count in raw_topics.items():
        if not name:
            raise ScenarioError("topics", "a topic name must not be empty")
        if not _is_int(count) or not 0 <= count <= INT32_MAX:
            raise ScenarioError(f"topics.{name}", f"expected a partition count >= 0, got {count!r}")
        topics[name] = count

    topic_ids: dict[str, str] = {}
    raw_ids = obj.get("topic_ids") or {}
    if not isinstance(raw_ids, Mapping):
        raise ScenarioError("topic_ids", "expected an object of topic name -> uuid")
    for name, tid in raw_ids.items():
        field = f"topic_ids.{name}"
        if not name:
            raise ScenarioError("topic_ids", "a topic name must not be empty")
        if not isinstance(tid, str):
            raise ScenarioError(field, "expected a 22-character base64 Kafka Uuid")
        try:
            uuid_bits(tid)
        except (ValueError, TypeError):
            raise ScenarioError(field, f"not a 22-character base64 Kafka Uuid: {tid!r}") from None
        topic_ids[name] = tid
    for name in topics:
        topic_ids.setdefault(name, default_topic_id(name))
    if len(set(topic_ids.values())) != len(topic_ids):
        raise ScenarioError("topic_ids", "two topics share one topic id")

    racks: dict[str, tuple[tuple[str, ...], ...]] = {}
    raw_racks = obj.get("partition_racks") or {}
    if not isinstance(raw_racks, Mapping):
        raise ScenarioError("partition_racks", "expected an object of topic -> list of rack lists")
    for name, per_partition in raw_racks.items():
        field = f"partition_racks.{name}"
        if name not in topics:
            raise ScenarioError(field, "topic is not listed in 'topics'")
        if not isinstance(per_partition, list) or len(per_partition) != topics[name]:
            raise ScenarioError(
                field, f"expected a list of {topics[name]} rack lists, one per partition"
            )
        entries = []
        for p, rack_list in enumerate(per_partition):
            if not isinstance(rack_list, list) or not all(isinstance(r, str) for r in rack_list):
                raise ScenarioError(f"{field}[{p}]", "expected a list of rack names")
            entries.append(tuple(rack_list))
        racks[name] = tuple(entries)

    raw_members = obj.get("members")
    if not isinstance(raw_members, list):
        raise ScenarioError("members", "expected a list of members")
    members: list[Member] = []
    seen: set[str] = set()
    instances: set[str] = set()
    # one object per topic name, per subscription and per partition of a listed topic: the
    # assignors then compare them by identity first (see assign_core.partition_cache)
    names = {name: name for name in topics}
    subscriptions: dict[tuple[str, ...], tuple[str, ...]] = {}
    shared: dict[str, list[TopicPartition]] = {}
    for i, m in enumerate(raw_members):
        base = f"members[{i}]"
        if not isinstance(m, Mapping):
            raise ScenarioError(base, "expected an object")
        extra = set(m) - _MEMBER_FIELDS
        if extra:
            raise ScenarioError(f"{base}.{sorted(extra)[0]}", "unknown field")
        member_id = _str(m.get("member_id"), f"{base}.member_id")
        assert member_id is not None
        if not member_id:
            raise ScenarioError(f"{base}.member_id", "must not be empty")
        if member_id in seen:
            raise ScenarioError(f"{base}.member_id", f"duplicate member id {member_id!r}")
        seen.add(member_id)
        instance = _str(m.get("group_instance_id"), f"{base}.group_instance_id", nullable=True)
        if instance is not None:
            if instance in instances:
                raise ScenarioError(
                    f"{base}.group_instance_id", f"duplicate instance id {instance!r}"
                )
            instances.add(instance)
        subs = m.get("topics", [])
        if not isinstance(subs, list) or not all(isinstance(t, str) for t in subs):
            raise ScenarioError(f"{base}.topics", "expected a list of topic names")
        if len(set(subs)) != len(subs):
            raise ScenarioError(f"{base}.topics", "a topic is listed twice")
        listed: list[str] = subs
        sub = tuple([names.get(t, t) for t in listed])
        owned_raw = m.get("owned_partitions", [])
        if not isinstance(owned_raw, list):
            raise ScenarioError(f"{base}.owned_partitions", "expected a list of [topic, partition]")
        owned: list[TopicPartition] = []
        for j, tp in enumerate(owned_raw):
            f = f"{base}.owned_partitions[{j}]"
            if (
                not isinstance(tp, list)
                or len(tp) != 2
                or not isinstance(tp[0], str)
                or not _is_int(tp[1])
                or not 0 <= tp[1] <= INT32_MAX
            ):
                raise ScenarioError(f, "expected [topic, partition >= 0]")
            topic: str = tp[0]
            partition: int = tp[1]
            if partition < topics.get(topic, 0) <= CACHE_LIMIT:
                tps = shared.get(topic)
                if tps is None:
                    tps = shared[topic] = topic_partitions(names[topic], topics[topic])
                owned.append(tps[partition])
            else:
                owned.append(TopicPartition(names.get(topic, topic), partition))
        if len(set(owned)) != len(owned):
            raise ScenarioError(f"{base}.owned_partitions", "a partition is listed twice")
        generation = m.get("generation")
        if generation is not None and (
            not _is_int(generation) or not -1 <= generation <= INT32_MAX
        ):
            raise ScenarioError(
                f"{base}.generation", f"expected an int32 >= -1 or null, got {generation!r}"
            )
        if generation == -1:
            generation = None
        rack = _str(m.get("rack"), f"{base}.rack", nullable=True)
        members.append(
            Member(
                member_id=member_id,
                topics=subscriptions.setdefault(sub, sub),
                group_instance_id=instance,
                owned_partitions=tuple(owned),
                generation=generation,
                rack=rack,
            )
        )
    return GroupSpec(
        topics=topics, members=tuple(members), partition_racks=racks, topic_ids=topic_ids
    )


def scenario_to_json(spec: GroupSpec) -> dict[str, Any]:
    """The scenario JSON object of a :class:`GroupSpec` (inverse of :func:`parse_scenario`)."""
    out: dict[str, Any] = {
        "topics": dict(spec.topics),
        "topic_ids": dict(spec.topic_ids),
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "topics": list(m.topics),
                "owned_partitions": [[tp.topic, tp.partition] for tp in m.owned_partitions],
                "generation": m.generation,
                "rack": m.rack,
            }
            for m in spec.members
        ],
    }
    if spec.partition_racks:
        out["partition_racks"] = {
            t: [list(r) for r in per_p] for t, per_p in spec.partition_racks.items()
        }
    return out


def result_to_json(result: AssignmentResult) -> dict[str, Any]:
    """``{"strategy": NAME, "assignment": {member_id: [[topic, partition], ...]}}``."""
    return {
        "strategy": result.strategy,
        "assignment": {
            m: [[tp.topic, tp.partition] for tp in tps] for m, tps in result.assignment.items()
        },
    }
