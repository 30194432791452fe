"""Kafka's client-side ``range`` assignor (``RangeAssignor``), including the KIP-881 rack pass.

Topic by topic, the partitions are cut into contiguous ranges, one per subscriber of the topic
in ``MemberInfo`` order (static members by instance id, then dynamic members by member id):
with ``P`` partitions and ``C`` subscribers, the first ``P % C`` subscribers get ``P // C + 1``
partitions and the others ``P // C``. Each topic is cut separately, so the first subscribers
of every topic get the extra partitions and the imbalance adds up across topics.

The canonical example (Order with 7 partitions, Stock with 5, consumers C1..C3 subscribing
both, then C3 crashes)::

    >>> from assign_core.model import GroupSpec, Member
    >>> topics = {"Order": 7, "Stock": 5}
    >>> group = [Member(c, ("Order", "Stock")) for c in ("C1", "C2", "C3")]
    >>> def show(members):
    ...     result = RangeAssignor().assign(GroupSpec(topics=topics, members=tuple(members)))
    ...     for member_id, partitions in result.assignment.items():
    ...         print(member_id, " ".join(map(str, partitions)))
    >>> show(group)
    C1 Order-0 Order-1 Order-2 Stock-0 Stock-1
    C2 Order-3 Order-4 Stock-2 Stock-3
    C3 Order-5 Order-6 Stock-4
    >>> show(group[:2])
    C1 Order-0 Order-1 Order-2 Order-3 Stock-0 Stock-1 Stock-2
    C2 Order-4 Order-5 Order-6 Stock-3 Stock-4

Each member's list follows the iteration order of Java's ``partitionsPerTopic`` ``HashMap``
(partitions ascending within a topic), which is not alphabetical in general: topics ``t1`` to
``t6`` come out as ``t4, t5, t6, t1, t2, t3``. When the rack pass ran, every list is sorted by
(topic, partition) instead.

Rack pass (KIP-881), used only when some topic passes the rack-aware gate
(:func:`~assign_core.assignors._client_common.use_rack_aware_assignment`): topics with the
same subscribers (and racks) and the same partition count are *co-partitioned*; partition
``p`` of all of them goes to the first remaining subscriber whose rack hosts a replica of
``p`` in every one of those topics and who still has room in each. A topic alone in its group
that needs rack-awareness gives each subscriber, in order, up to its quota of rack-local
partitions. The plain range pass then hands out whatever is left.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from itertools import chain, repeat
from typing import TypeVar

from assign_core.assignors._client_common import (
    consumer_rack,
    gc_paused,
    in_member_order,
    java_string_key,
    member_info_order,
    partitions_per_topic,
    subscribers_by_topic,
    topic_partitions,
    use_rack_aware_assignment,
)
from assign_core.model import AssignmentResult, GroupSpec, Side, TopicPartition

__all__ = ["RangeAssignor"]

_NO_RACKS: frozenset[str] = frozenset()
_T = TypeVar("_T")


class _TopicState:
    """One topic's ``TopicAssignmentState``: quotas, who got what, replica racks.

    Consumers are referred to by their index in ``consumers`` (ascending positions).
    """

    __slots__ = (
        "assigned",
        "consumer_racks",
        "consumers",
        "count",
        "extra",
        "needs_rack_aware",
        "owner",
        "partition_racks",
        "quota",
        "topic",
    )

    def __init__(
        self,
        topic: str,
        count: int,
        consumers: list[int],
        racks: Sequence[str | None],
        replica_racks: Sequence[Sequence[str]] | None,
    ) -> None:
        self.topic = topic
        self.count = count
        self.consumers = consumers
        self.consumer_racks = [racks[pos] for pos in consumers]
        self.quota, self.extra = divmod(count, len(consumers))
        self.assigned = [0] * len(consumers)
        self.owner = [-1] * count
        rack_set = {r for r in self.consumer_racks if r is not None}
        if rack_set:
            # Java: the set of replica racks of every partition, computed only when some
            # subscriber has a rack. Equal rack lists share one frozenset.
            per_partition: Sequence[Sequence[str]] = replica_racks or ()
            if len(per_partition) != count:
                per_partition = [
                    per_partition[p] if p < len(per_partition) else () for p in range(count)
                ]
            as_set = {rs: frozenset(rs) for rs in set(map(tuple, per_partition))}
            self.partition_racks = list(map(as_set.__getitem__, map(tuple, per_partition)))
            distinct = set(as_set.values())
            self.needs_rack_aware = use_rack_aware_assignment(
                rack_set, frozenset().union(*distinct), distinct
            )
        else:
            self.partition_racks = []
            self.needs_rack_aware = False

    def group_key(self) -> tuple[tuple[int, ...], int]:
        """Java groups states by their consumer map, then by ``partitionRacks.size()``."""
        return tuple(self.consumers), len(self.partition_racks)

    def max_assignable(self, c: int) -> int:
        return max(0, self.quota + (1 if self.extra > 0 else 0) - self.assigned[c])

    def racks_match(self, c: int, p: int) -> bool:
        rack = self.consumer_racks[c]
        return rack is None or rack in self.partition_racks[p]

    def on_assigned(self, c: int, partitions: list[int]) -> None:
        for p in partitions:
            self.owner[p] = c
        self.assigned[c] += len(partitions)
        if self.assigned[c] > self.quota:
            self.extra -= 1

    def assign_ranges(self) -> None:
        """The plain pass: each consumer in order takes up to its quota of the unassigned
        partitions, lowest first. Last pass: it fills ``owner`` only."""
        owner = self.owner
        if not any(self.assigned):
            # nothing taken by the rack pass: the contiguous ranges
            consumers = range(len(self.consumers))
            owner[:] = _each_repeated(consumers[: self.extra], self.quota + 1)
            owner += _each_repeated(consumers[self.extra :], self.quota)
            return
        unassigned = [p for p in range(self.count) if owner[p] < 0]
        start = 0
        for c in range(len(self.consumers)):
            if start == len(unassigned):
                break
            limit = self.max_assignable(c)
            if limit:
                taken = unassigned[start : start + limit]
                self.on_assigned(c, taken)
                start += len(taken)

    def assign_rack_local_ranges(self) -> None:
        """The rack pass of a topic alone in its group: each consumer in order takes up to its
        quota of the unassigned partitions with a replica on its rack (any partition if it
        has no rack), lowest first.

        Partitions are never handed back, so one cursor per rack over the partitions of
        that rack (ascending) only moves forward, skipping those already taken.
        """
        local: dict[str | None, list[int]] = {None: list(range(self.count))}
        for rack in self.consumer_racks:
            if rack not in local:
                local[rack] = [p for p, racks in enumerate(self.partition_racks) if rack in racks]
        cursor = dict.fromkeys(local, 0)
        owner = self.owner
        unassigned = owner.count(-1)
        for c, rack in enumerate(self.consumer_racks):
            if unassigned == 0:
                break
            limit = self.max_assignable(c)
            if limit == 0:
                continue
            candidates = local[rack]
            i = cursor[rack]
            taken: list[int] = []
            while i < len(candidates) and len(taken) < limit:
                if owner[candidates[i]] < 0:
                    taken.append(candidates[i])
                i += 1
            cursor[rack] = i
            if taken:
                self.on_assigned(c, taken)
                unassigned -= len(taken)


def _each_repeated(items: Sequence[_T], times: int) -> Iterator[_T]:
    """``a, a, b, b, ...`` for ``items = [a, b, ...]`` and ``times = 2``, looping in C."""
    return chain.from_iterable(zip(*repeat(items, times), strict=True))


def _assign_co_partitioned(states: list[_TopicState], count: int) -> None:
    """Partition ``p`` of every co-partitioned topic to one rack-local consumer.

    Java keeps a list of "remaining" consumers and, for each ``p``, picks the first one that
    still has room in every topic and whose rack hosts a replica of ``p`` in every topic
    (or that has no rack). A consumer leaves the list only once it has no room left, and room
    never comes back, so this is the first such consumer in consumer order. Consumers are
    queued by rack; a queue drops its head for good once the head has no room.
    """
    first = states[0]
    queues: dict[str | None, list[int]] = {}
    for c, rack in enumerate(first.consumer_racks):
        queues.setdefault(rack, []).append(c)
    heads = dict.fromkeys(queues, 0)
    no_rack: frozenset[str | None] = frozenset([None]) if None in queues else frozenset()

    def has_room(c: int) -> bool:
        return all(t.max_assignable(c) > 0 for t in states)

    def head(rack: str | None) -> int | None:
        queue = queues[rack]
        i = heads[rack]
        while i < len(queue) and not has_room(queue[i]):
            i += 1
        heads[rack] = i
        return queue[i] if i < len(queue) else None

    for p in range(count):
        racks = frozenset.intersection(*(t.partition_racks[p] for t in states))
        heads_here = [head(r) for r in no_rack | racks.intersection(queues)]
        candidates = [c for c in heads_here if c is not None]
        if candidates:
            chosen = min(candidates)
            for t in states:
                t.on_assigned(chosen, [p])


class RangeAssignor:
    """``org.apache.kafka.clients.consumer.RangeAssignor`` (protocol name ``range``)."""

    name = "range"
    side: Side = "client"

    @gc_paused
    def assign(self, spec: GroupSpec) -> AssignmentResult:
        members = spec.members
        order = member_info_order(members)
        subscribers = subscribers_by_topic(members, order)
        topics = partitions_per_topic(spec)
        lists: list[list[TopicPartition]] = [[] for _ in order]

        racks = [consumer_rack(members[i]) for i in order]
        states: list[_TopicState] = []
        if any(r is not None for r in racks):
            states = [
                _TopicState(t, n, subscribers[t], racks, spec.partition_racks.get(t))
                for t, n in topics.items()
            ]
        if any(s.needs_rack_aware for s in states):
            self._assign_rack_aware(states, lists)
        else:
            self._assign_plain(topics, subscribers, lists)
        return AssignmentResult(
            strategy=self.name,
            assignment=in_member_order(members, order, lists),
        )

    @staticmethod
    def _assign_plain(
        topics: dict[str, int],
        subscribers: dict[str, list[int]],
        lists: list[list[TopicPartition]],
    ) -> None:
        """No rack pass: contiguous ranges, appended topic by topic in ``topics`` order."""
        # The list each partition goes to, shared by topics with the same subscribers and
        # partition count; appending through map() keeps the per-partition loop in C.
        targets_cache: dict[tuple[int, int], list[list[TopicPartition]]] = {}
        for topic, count in topics.items():
            consumers = subscribers[topic]
            key = (id(consumers), count)
            targets = targets_cache.get(key)
            if targets is None:
                quota, extra = divmod(count, len(consumers))
                owners = list(map(lists.__getitem__, consumers))
                # the first `extra` consumers take quota + 1 partitions, the others quota
                targets = list(_each_repeated(owners[:extra], quota + 1))
                targets += _each_repeated(owners[extra:], quota)
                targets_cache[key] = targets
            deque(map(list.append, targets, topic_partitions(topic, count)), 0)

    @staticmethod
    def _assign_rack_aware(states: list[_TopicState], lists: list[list[TopicPartition]]) -> None:
        """Rack pass, plain pass, then every list sorted by (topic, partition)."""
        groups: dict[tuple[tuple[int, ...], int], list[_TopicState]] = {}
        for s in states:
            groups.setdefault(s.group_key(), []).append(s)
        for (_, count), group in groups.items():
            if len(group) > 1:
                _assign_co_partitioned(group, count)
            elif group[0].needs_rack_aware:
                group[0].assign_rack_local_ranges()
        for s in states:
            s.assign_ranges()

        key = java_string_key(s.topic for s in states)
        for s in sorted(states, key=lambda s: key(s.topic)):
            tps = topic_partitions(s.topic, s.count)
            targets = [lists[pos] for pos in s.consumers]
            if -1 in s.owner:  # cannot happen (the quotas add up); Java would skip it too
                for p, c in enumerate(s.owner):
                    if c >= 0:
                        targets[c].append(tps[p])
            else:
                deque(map(list.append, map(targets.__getitem__, s.owner), tps), 0)
