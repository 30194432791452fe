"""Seeded generator of realistic assignment scenarios for the differential tests.

Member ids look like the coordinator's (``<client.id or instance>-<uuid>`` on the classic
protocol, a 22-character base64 Uuid on KIP-848); subscriptions are equal or random; owned
partitions come from an earlier assignment with mixed generations, including stale and
doubly claimed ones, partitions of topics the owner no longer subscribes to, of topics gone
from the metadata (vanished; KIP-848 members keep their topic id) and beyond a topic's
partition count; some scenarios have racks and static members.
"""

from __future__ import annotations

import base64
import random
import uuid
from typing import Any

SERVER = {"uniform", "server-range"}
TOPIC_WORDS = ["orders", "stock", "payments", "clicks", "audit", "events", "logs", "users"]
VANISHED_WORDS = ["deleted-topic", "old-orders", "tmp-migration"]


def _uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def _kafka_uuid(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(_uuid(rng).bytes).decode().rstrip("=")


def scenario(rng: random.Random, strategy: str) -> dict[str, Any]:
    server = strategy in SERVER
    n_topics = rng.choice([1, 1, 2, 2, 3, 4, 5, 8])
    names = rng.sample(TOPIC_WORDS, min(n_topics, len(TOPIC_WORDS)))
    if rng.random() < 0.3:
        names = [f"t{i}" for i in range(n_topics)]
    topics = {name: rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 24]) for name in names}
    if rng.random() < 0.85:  # partitionless topics are rare
        for name in names:
            topics[name] = max(topics[name], 1)
    n_members = rng.choice([1, 2, 2, 3, 3, 4, 5, 6, 8, 10, 13])

    equal = rng.random() < 0.5
    common = rng.sample(names, rng.randint(1, len(names)))
    ghost = "missing-topic" if rng.random() < 0.05 else None  # subscribed, not in metadata

    racked = rng.random() < 0.3
    rack_names = [f"rack-{c}" for c in "abc"[: rng.randint(1, 3)]]
    partition_racks: dict[str, list[list[str]]] = {}
    if racked:
        rf = rng.randint(1, len(rack_names))
        for name, count in topics.items():
            partition_racks[name] = [rng.sample(rack_names, rf) for _ in range(count)]

    members: list[dict[str, Any]] = []
    static_share = rng.choice([0.0, 0.0, 0.3, 1.0])
    instances = rng.sample(range(100), n_members)
    for i in range(n_members):
        static = rng.random() < static_share
        instance = f"instance-{instances[i]}" if static else None
        if server:
            member_id = _kafka_uuid(rng)
        else:
            prefix = instance if instance else rng.choice(["consumer", "client", "app-1"])
            member_id = f"{prefix}-{_uuid(rng)}"
        subs = list(common) if equal else rng.sample(names, rng.randint(0, len(names)))
        if rng.random() < 0.3:
            rng.shuffle(subs)
        if ghost and rng.random() < 0.5:
            subs.append(ghost)
        rack = None
        if rng.random() < (0.8 if racked else 0.1):
            rack = rng.choice(rack_names + (["rack-z"] if rng.random() < 0.1 else []))
        members.append(
            {
                "member_id": member_id,
                "group_instance_id": instance,
                "topics": subs,
                "owned_partitions": [],
                "generation": None,
                "rack": rack,
            }
        )

    # Owned partitions: an earlier (random) assignment of every topic, so also of topics the
    # owner no longer subscribes to (and sometimes of vanished topics and partitions).
    vanished: dict[str, int] = {}
    if rng.random() < 0.75:
        all_tps = [[t, p] for t, c in topics.items() for p in range(c)]
        rng.shuffle(all_tps)
        base_gen = rng.randint(1, 20)
        for m in members:
            if rng.random() < 0.2:
                continue  # a new member: owns nothing
            if server:
                m["generation"] = None
            else:
                m["generation"] = rng.choice([base_gen, base_gen, base_gen, base_gen - 1, None])
        owners = [m for m in members if m["generation"] is not None or server]
        if owners:
            for tp in all_tps:
                if rng.random() < 0.15:
                    continue  # nobody owned it
                holder = rng.choice(owners)
                holder["owned_partitions"].append(tp)
                if not server and rng.random() < 0.04:  # a double claim
                    other = rng.choice(owners)
                    if other is not holder:
                        other["owned_partitions"].append(tp)
            # partitions of topics gone from the metadata (deleted since the last assignment)
            if rng.random() < 0.25:
                for name in rng.sample(VANISHED_WORDS, rng.randint(1, 2)):
                    vanished[name] = rng.choice([1, 2, 3, 5, 8])
                    for p in range(vanished[name]):
                        if rng.random() < 0.85:
                            rng.choice(owners)["owned_partitions"].append([name, p])
        if rng.random() < 0.15:  # claims beyond the topic's partition count (vanished)
            for m in rng.sample(members, rng.randint(1, min(2, len(members)))):
                t = rng.choice(names)
                tp = [t, topics[t] + rng.randint(0, 2)]
                if tp not in m["owned_partitions"]:
                    m["owned_partitions"].append(tp)
        for m in members:
            if server:
                m["owned_partitions"].sort(key=lambda tp: rng.random())
            # a member that owns nothing may still report a generation (it held nothing)
    out: dict[str, Any] = {"topics": topics, "members": members}
    out["topic_ids"] = {name: _kafka_uuid(rng) for name in topics}
    for name in vanished:  # the id a deleted topic had (else scenario.default_topic_id)
        if rng.random() < 0.5:
            out["topic_ids"][name] = _kafka_uuid(rng)
    if partition_racks:
        out["partition_racks"] = partition_racks
    return out


def scenarios(strategy: str, seed: int, count: int) -> list[dict[str, Any]]:
    """``count`` scenarios for ``strategy``, the same for the same seed."""
    rng = random.Random(f"{strategy}:{seed}")
    return [scenario(rng, strategy) for _ in range(count)]
