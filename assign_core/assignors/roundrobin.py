"""Kafka's client-side ``roundrobin`` assignor (``RoundRobinAssignor``).

All partitions of all subscribed topics are laid out on one line (topics sorted by name,
partitions ascending) and dealt out one by one to the members in ``MemberInfo`` order (static
members by instance id, then dynamic members by member id), going round in a circle. A member
not subscribed to a partition's topic is skipped and loses its turn. The deal does not restart
per topic: each topic continues where the previous one stopped.

The canonical example (Order with 7 partitions, Stock with 5, consumers C1..C3 subscribing
both, then C3 crashes)::

    >>> from assign_core.model import GroupSpec, Member
    >>> topics = {"Order": 7, "Stock": 5}
    >>> group = [Member(c, ("Order", "Stock")) for c in ("C1", "C2", "C3")]
    >>> def show(members):
    ...     result = RoundRobinAssignor().assign(GroupSpec(topics=topics, members=tuple(members)))
    ...     for member_id, partitions in result.assignment.items():
    ...         print(member_id, " ".join(map(str, partitions)))
    >>> show(group)
    C1 Order-0 Order-3 Order-6 Stock-2
    C2 Order-1 Order-4 Stock-0 Stock-3
    C3 Order-2 Order-5 Stock-1 Stock-4
    >>> show(group[:2])
    C1 Order-0 Order-2 Order-4 Order-6 Stock-1 Stock-3
    C2 Order-1 Order-3 Order-5 Stock-0 Stock-2 Stock-4

Each member's list is in assignment order, which is (topic, partition) order.

Within one topic the deal is a plain rotation over that topic's subscribers: if the first
partition goes to the ``j``-th subscriber, partition ``i`` goes to subscriber ``(j + i) % n``.
The implementation uses this to hand out a whole topic at once.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from itertools import cycle, islice

from assign_core.assignors._client_common import (
    gc_paused,
    in_member_order,
    member_info_order,
    subscribers_by_topic,
    topic_partitions,
)
from assign_core.errors import AssignmentError
from assign_core.javacompat import java_sorted_strings
from assign_core.model import AssignmentResult, GroupSpec, Side, TopicPartition

__all__ = ["RoundRobinAssignor"]


class RoundRobinAssignor:
    """``org.apache.kafka.clients.consumer.RoundRobinAssignor`` (protocol name ``roundrobin``)."""

    name = "roundrobin"
    side: Side = "client"

    @gc_paused
    def assign(self, spec: GroupSpec) -> AssignmentResult:
        members = spec.members
        if not members:
            # Java builds its circular iterator over the members before anything else.
            raise AssignmentError(
                "IllegalArgumentException: CircularIterator can only be used on non-empty lists"
            )
        order = member_info_order(members)
        subscribers = subscribers_by_topic(members, order)
        lists: list[list[TopicPartition]] = [[] for _ in order]
        circles: dict[int, list[list[TopicPartition]]] = {}

        head = 0  # position (in MemberInfo order) of the member whose turn it is
        for topic in java_sorted_strings(subscribers):
            count = spec.topics.get(topic, 0)
            if count <= 0:
                continue  # no partitions in the metadata: the topic is skipped
            positions = subscribers[topic]
            circle = circles.get(id(positions))
            if circle is None:
                circle = circles[id(positions)] = [lists[pos] for pos in positions]
            n = len(positions)
            first = bisect_left(positions, head) % n
            targets = islice(cycle(circle), first, first + count)
            deque(map(list.append, targets, topic_partitions(topic, count)), 0)
            head = (positions[(first + count - 1) % n] + 1) % len(order)
        return AssignmentResult(
            strategy=self.name,
            assignment=in_member_order(members, order, lists),
        )
