"""librdkafka's ``range`` assignor (``rdkafka_range_assignor.c``), including its rack pass.

The same contiguous ranges as Java's ``range``, per topic, over the topic's subscribers in
librdkafka's member order (:mod:`assign_core.assignors._librdkafka_common`). Where they
differ from Java's:

* member order: Java puts every static member before every dynamic one; librdkafka compares
  group instance ids only between two static members and member ids otherwise;
* each member's list is in the order the partitions were handed out: topics are visited in
  the order of their subscribers' member ids (then subscriber count, then partition count,
  then the metadata order, ``GroupSpec.topics``), not in Java's ``HashMap`` order, and the
  lists are never re-sorted after a rack pass;
* the rack pass groups topics with the same subscribers and partition count
  (co-partitioned) without asking whether they need it.

The canonical example: the static member ``D`` (instance id ``static-d``) and the dynamic
``A`` read Order (7 partitions). Java orders ``D`` first; librdkafka compares the member ids
``A...`` and ``D...`` and orders ``A`` first::

    >>> from assign_core.model import GroupSpec, Member
    >>> spec = GroupSpec(topics={"Order": 7}, members=(
    ...     Member("D-1", ("Order",), group_instance_id="static-d"), Member("A-1", ("Order",))))
    >>> for member_id, partitions in LibrdkafkaRangeAssignor().assign(spec).assignment.items():
    ...     print(member_id, *map(str, partitions))
    D-1 Order-4 Order-5 Order-6
    A-1 Order-0 Order-1 Order-2 Order-3
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from assign_core.assignors._client_common import consumer_rack, use_rack_aware_assignment
from assign_core.assignors._librdkafka_common import glibc_msort, sorted_members, str_cmp
from assign_core.model import AssignmentResult, GroupSpec, Member, Side, TopicPartition

__all__ = ["LibrdkafkaRangeAssignor"]


class _TopicState:
    """``rd_kafka_topic_assignment_state_t``: one topic's subscribers and what is left."""

    def __init__(self, topic: str, count: int, consumers: list[Member], spec: GroupSpec) -> None:
        self.topic = topic
        self.count = count
        self.consumers = consumers
        self.quota, self.extra = divmod(count, len(consumers))
        self.assigned: dict[str, int] = {m.member_id: 0 for m in consumers}
        self.unassigned = [True] * count
        self.left = count
        racks = spec.partition_racks.get(topic) or ()
        self.racks: list[frozenset[str]] = [
            frozenset(racks[p]) if p < len(racks) else frozenset() for p in range(count)
        ]
        consumer_racks = {r for m in consumers if (r := consumer_rack(m)) is not None}
        all_racks = frozenset().union(*self.racks)
        self.needs_rack_aware = bool(all_racks) and use_rack_aware_assignment(
            consumer_racks, all_racks, self.racks
        )

    def room(self, member: Member) -> int:
        """How many more partitions of this topic ``member`` may take now."""
        return self.quota + (self.extra > 0) - self.assigned[member.member_id]


def _state_cmp(a: _TopicState, b: _TopicState) -> int:
    """``rd_kafka_topic_assignment_state_cmp``: subscribers' member ids, then their count,
    then the partition count."""
    for ma, mb in zip(a.consumers, b.consumers, strict=False):
        c = str_cmp(ma.member_id, mb.member_id)
        if c:
            return c
    if len(a.consumers) != len(b.consumers):
        return (len(a.consumers) > len(b.consumers)) - (len(a.consumers) < len(b.consumers))
    return (a.count > b.count) - (a.count < b.count)


class LibrdkafkaRangeAssignor:
    """librdkafka's ``range`` (``rd_kafka_range_assignor_assign_cb``), librdkafka 2.x."""

    name = "range"
    side: Side = "client"
    implementation = "librdkafka"

    def assign(self, spec: GroupSpec) -> AssignmentResult:
        members = spec.members
        lists: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
        states: list[_TopicState] = []
        for topic, count in spec.topics.items():
            subscribers = [m for m in members if topic in m.topics]
            if subscribers:
                states.append(_TopicState(topic, count, sorted_members(subscribers), spec))
        states = glibc_msort(states, _state_cmp)

        def give(member: Member, state: _TopicState, p: int) -> None:
            lists[member.member_id].append(TopicPartition(state.topic, p))
            state.unassigned[p] = False
            state.left -= 1
            state.assigned[member.member_id] += 1
            if state.assigned[member.member_id] > state.quota:
                state.extra -= 1

        buckets: list[list[_TopicState]] = []
        for s in states:
            if buckets and _state_cmp(s, buckets[-1][0]) == 0:
                buckets[-1].append(s)
            else:
                buckets.append([s])
        for bucket in buckets:
            if len(bucket) > 1:
                _assign_co_partitioned(bucket, give)
            elif bucket[0].needs_rack_aware:
                _assign_ranges(bucket[0], give, rack_local=True)
        for s in states:
            _assign_ranges(s, give, rack_local=False)
        return AssignmentResult(strategy=self.name, assignment=lists)


_Give = Callable[[Member, _TopicState, int], None]


def _assign_ranges(state: _TopicState, give: _Give, *, rack_local: bool) -> None:
    """``rd_kafka_assign_ranges``: each subscriber in turn takes the lowest unassigned
    partitions up to its room (``rack_local``: only partitions with a replica on its rack,
    when it has a rack)."""
    for member in state.consumers:
        if state.left == 0:
            break
        room = state.room(member)
        if room <= 0:
            continue
        rack = consumer_rack(member) if rack_local else None
        picks: list[int] = []
        for p in range(state.count):
            if not state.unassigned[p]:
                continue
            if room <= 0:
                break
            if rack is not None and rack not in state.racks[p]:
                continue
            picks.append(p)
            room -= 1
        for p in picks:
            give(member, state, p)


def _assign_co_partitioned(bucket: Sequence[_TopicState], give: _Give) -> None:
    """``rd_kafka_assign_co_partitioned``: partition ``p`` of every topic of the bucket goes
    to the first subscriber whose rack hosts ``p`` in all of them and who has room in all."""
    first = bucket[0]
    for p in range(first.count):
        for member in first.consumers:
            rack = consumer_rack(member)
            if rack is not None and all(rack in s.racks[p] and s.room(member) > 0 for s in bucket):
                for s in bucket:
                    give(member, s, p)
                break
