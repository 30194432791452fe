"""``rebalance-monitor demo`` (static): every assignor on the source documents' scenarios.

A guided what-if comparison, no Kafka needed:

1. Document 004: topics Order (7 partitions) and Stock (5), consumers C1..C3 subscribed to
   both; then C3 crashes and each strategy rebalances from its own previous result.
2. Document 001: one topic with 4 partitions, three clients joining one at a time.

A later version replaces this with the live streaming demo.
"""

from __future__ import annotations

from assign_core.model import GroupSpec
from assign_core.placement import coordinator_partition
from assign_core.scenario import parse_scenario
from assign_core.whatif import LEGEND, compare, compare_next, render_table

# Document 001: each client runs in its own JVM, so all three get client.id
# "consumer-demo-1" and the coordinator makes the member ids unique with a random UUID
# suffix. Range orders members by member id, i.e. by that UUID: these UUIDs sort
# client-3 < client-2 < client-1, which reproduces the article's log (client-2 gets 0,1 when
# it joins; client-3 gets 0,1 when it joins).
CLIENT_IDS = {
    "consumer-demo-1-f3b1c2d4-1111-4a0e-9c1e-5e2b6a7c8d90": "client-1",
    "consumer-demo-1-8a2e4c6f-2222-4b1f-8d2a-6f3c7b8d9e01": "client-2",
    "consumer-demo-1-2c9d7e5a-3333-4c2a-9e3b-7a4d8c9eaf12": "client-3",
}


def _spec(topics: dict[str, int], members: list[str]) -> GroupSpec:
    return parse_scenario(
        {"topics": topics, "members": [{"member_id": m, "topics": list(topics)} for m in members]}
    )


def _section(title: str) -> list[str]:
    return ["", title, "=" * len(title)]


def run() -> str:
    """The whole guided demo as text."""
    out = [
        "rebalance-monitor demo: the same membership through every assignor",
        "(client side: range, roundrobin, sticky, cooperative-sticky; server side, KIP-848:",
        "uniform, server-range). Results are those of the Java assignors.",
        "",
        LEGEND,
    ]

    order_stock = {"Order": 7, "Stock": 5}
    out += _section("1. Document 004: C1, C2, C3 consume Order (7 partitions) and Stock (5)")
    out += [
        "Range splits each topic on its own, so C1 gets the extra partition of both topics",
        "(5 / 4 / 3). RoundRobin lays all 12 partitions on one circle (the article restarts",
        "it per topic; Java does not).",
        "",
    ]
    first = compare(_spec(order_stock, ["C1", "C2", "C3"]))
    out.append(render_table(first, detail=True, legend=False))

    out += _section("1b. C3 crashes: C1 and C2 rebalance, each strategy from its own result")
    out += [
        "C3's partitions must move; 'moved' also counts partitions taken from C1 or C2.",
        "sticky, cooperative-sticky and uniform keep what C1 and C2 had; range and",
        "roundrobin recompute from scratch. (The article's Range result after the crash",
        "lists Stock P5, P6, which do not exist, and its Sticky result lists partitions",
        "twice.)",
        "",
    ]
    out.append(
        render_table(
            compare_next(first, _spec(order_stock, ["C1", "C2"])), detail=True, legend=False
        )
    )

    one_topic = {"test": 4}
    ids = list(CLIENT_IDS)
    out += _section("2. Document 001: 4 partitions, clients join one at a time")
    out += [
        "The member ids differ only in their random UUID suffix (same client.id in every",
        "JVM), and range orders members by id: that is why, in the article, client-2 and",
        "then client-3 take partitions 0 and 1 when they join. Compare 'moved': range",
        "reshuffles, the sticky assignors move only what the newcomer needs.",
    ]
    step = compare(_spec(one_topic, ids[:1]))
    for n in (2, 3):
        step = compare_next(step, _spec(one_topic, ids[:n]))
        out += [
            "",
            f"-- {n} clients --",
            render_table(step, labels=CLIENT_IDS, detail=True, legend=False),
        ]

    out += _section("3. Which broker coordinates the group?")
    out += [
        "coordinator = Utils.abs(groupId.hashCode()) % 50 (offsets.topic.num.partitions);",
        "the leader of that __consumer_offsets partition is the group coordinator.",
    ]
    for group in ("G1", "demo-group", "polygenelubricants"):
        out.append(f"  {group!r:22} -> __consumer_offsets partition {coordinator_partition(group)}")
    out += [
        "('polygenelubricants' hashes to Integer.MIN_VALUE: Utils.abs maps it to 0; the",
        "article's abs(groupId.hashCode() % 50) would give 48 for it, and agrees otherwise.)",
    ]
    return "\n".join(out)
