"""The coordinator's ``range`` assignor (KIP-848), registered here as ``server-range``.

Bit-identical to kafka-group-coordinator 4.4. Worked example (Kafka's
``testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions``): topics T1 (3
partitions, id ``T1-A4s3VTwiI5CTbEp6POw``), T2 (3, ``T2-B4s3VTwiI5YHbPp6YUe``) and T3 (2,
``T3-CU8fVTLCz5YMkLoDQsa``); A subscribes [T1, T2], B [T3], C [T2, T3]::

    A: T2-0 T2-1 T1-0 T1-1 T1-2
    B: T3-0
    C: T2-2 T3-1

The members are sorted (members with a group instance id first, by instance id, then the
others by member id) and every topic's partitions are cut into contiguous ranges over its
subscribers in that order: ``P / S`` each, the first ``P % S`` subscribers one more. Not
sticky (the current assignment is ignored), no racks, never throws for a scenario (topics
missing from the metadata are not subscribed). Each member's map is a ``new HashMap<>((int)
(n / 0.75f + 1))`` of ``RangeSet`` objects (ascending), ``n`` being the number of topics
(homogeneous) or of the member's subscribed topic names (heterogeneous); in the example T2
(bin 1 of 4) iterates before T1 (bin 2).
"""

from __future__ import annotations

from collections import deque
from itertools import chain, compress, repeat
from operator import eq, getitem
from typing import Any

from assign_core.assignors._client_common import gc_paused
from assign_core.assignors._server_common import (
    Piece,
    ServerGroup,
    ServerNumbers,
    TopicPartitionLists,
    TopicTable,
)
from assign_core.javacompat import java_str_key, table_size_for
from assign_core.javacompat.hashmap import float_capacity
from assign_core.model import AssignmentResult, GroupSpec, Member, Side, TopicPartition


def _sorted_members(members: tuple[Member, ...]) -> list[int]:
    """Members with an instance id first (by instance id), then the others by member id."""
    if all(m.group_instance_id is None for m in members):
        ids = [m.member_id for m in members]
        if "".join(ids).isascii():
            return sorted(range(len(ids)), key=ids.__getitem__)
        keys: list[Any] = [java_str_key(i) for i in ids]
    else:
        keys = [
            (1, java_str_key(m.member_id))
            if m.group_instance_id is None
            else (0, java_str_key(m.group_instance_id))
            for m in members
        ]
    return sorted(range(len(members)), key=keys.__getitem__)


class _MapOrders:
    """Iteration orders of the per-member ``HashMap<Uuid, Set<Integer>>`` (puts only)."""

    def __init__(self, topics: TopicTable) -> None:
        self._topics = topics
        self._full: dict[tuple[tuple[int, ...], int], tuple[list[int], bool]] = {}

    def full(self, topics: list[int], pending_capacity: int) -> tuple[list[int], bool]:
        """The order after ``put`` of all ``topics``, and whether every subsequence of
        ``topics`` keeps that relative order (no resize, no overfull bin)."""
        key = (tuple(topics), pending_capacity)
        entry = self._full.get(key)
        if entry is None:
            table = self._topics
            entry = self._full[key] = (
                table.hash_order(topics, pending_capacity),
                table.put_is_plain(topics, pending_capacity),
            )
        return entry

    def order(self, topics: list[int], present: list[int], pending_capacity: int) -> list[int]:
        """Order of the map after ``put`` of ``present`` (a subsequence of ``topics``)."""
        ordered, plain = self.full(topics, pending_capacity)
        if len(present) == len(topics):
            return ordered
        if plain:
            keep = set(present)
            return [t for t in ordered if t in keep]
        return self._topics.hash_order(present, pending_capacity)


class ServerRangeAssignor:
    """``org.apache.kafka.coordinator.group.assignor.RangeAssignor`` (4.4.0)."""

    name: str = "server-range"
    side: Side = "server"

    @gc_paused
    def assign(self, spec: GroupSpec) -> AssignmentResult:
        members = spec.members
        if not members:
            return AssignmentResult(self.name, {})
        g = ServerGroup(spec)
        ranked = _sorted_members(members)
        ids = [m.member_id for m in members]
        if g.homogeneous:
            numbers = ServerNumbers(g.topics, ids, _homogeneous(g, ranked))
            return AssignmentResult(self.name, numbers=numbers)
        lists = _heterogeneous(g, ranked)
        return AssignmentResult(self.name, dict(zip(ids, lists, strict=True)))


def _homogeneous(g: ServerGroup, ranked: list[int]) -> list[list[Piece]]:
    """Every member gets, of every topic, the range of its rank: ``P / M`` partitions, one
    more for the first ``P % M`` ranks. With one partition count that is the same range of
    every topic: one block per member."""
    table = g.topics
    n_members = len(ranked)
    out: list[list[Piece]] = [[] for _ in ranked]
    topics = g.subscription(ranked[0])
    if not topics:
        return out
    cap = table_size_for(float_capacity(len(topics)))
    orders = _MapOrders(table)
    ordered, plain = orders.full(topics, cap)
    counts = [table.counts[t] for t in ordered]
    distinct = sorted(set(counts))
    quotas = [divmod(c, n_members) for c in distinct]
    if len(distinct) == 1:  # one partition count: the same range of every topic
        q, extra = quotas[0]
        for k, i in enumerate(ranked):
            start = k * q + (k if k < extra else extra)
            size = q + (1 if k < extra else 0)
            if size:
                out[i] = [(ordered, range(start, start + size))]
        return out
    group_of = [distinct.index(c) for c in counts]
    for k, i in enumerate(ranked):
        ranges = []
        for q, extra in quotas:
            start = k * q + (k if k < extra else extra)
            ranges.append(range(start, start + q + (1 if k < extra else 0)))
        per_topic = [ranges[x] for x in group_of]
        present = [t for t, r in zip(ordered, per_topic, strict=True) if r]
        if not plain and len(present) < len(ordered):
            keep = set(present)
            present = orders.order(topics, [t for t in topics if t in keep], cap)
        range_of = dict(zip(ordered, per_topic, strict=True))
        out[i] = [(t, range_of[t]) for t in present]
    return out


def _topic_bounds(count: int, n_subscribers: int) -> tuple[list[int], list[int]]:
    """Start and stop of a topic's ranges, subscribers in rank order: ``P / S`` partitions
    each, one more for the first ``P % S``."""
    q, e = divmod(count, n_subscribers)
    big = e * (q + 1)
    rest = n_subscribers - e
    if q:
        starts = list(range(0, big, q + 1)) + list(range(big, big + rest * q, q))
    else:
        starts = list(range(big)) + [big] * rest
    stops = starts[1:]
    stops.append(count)
    return starts, stops


def _heterogeneous(g: ServerGroup, ranked: list[int]) -> list[list[TopicPartition]]:
    """Per topic, the ranges go to its subscribers in rank order."""
    table = g.topics
    counts = table.counts
    members = g.spec.members
    orders = _MapOrders(table)
    # group the members by subscription; a plan is the map order of its topics (a member's
    # ranks do not depend on the order its topics are visited in) and whether the order of
    # any subset follows it
    plan_of: dict[tuple[str, ...], int] = {}
    plans: list[tuple[list[int], bool]] = []
    ranks_of_plan: list[list[int]] = []
    member_plan = [0] * len(ranked)
    for rank, i in enumerate(ranked):
        names = members[i].topics
        k = plan_of.get(names)
        if k is None:
            k = plan_of[names] = len(plans)
            cap = table_size_for(float_capacity(len(names)))
            plans.append(orders.full(g.subscription(i), cap))
            ranks_of_plan.append([])
        ranks_of_plan[k].append(rank)
        member_plan[rank] = k
    n_plans = len(plans)
    # a topic's subscribers in rank order, tagged with their plan: rank * n_plans + plan
    tagged = [[r * n_plans + k for r in ranks] for k, ranks in enumerate(ranks_of_plan)]
    plans_of_topic: dict[int, list[int]] = {}
    for k, (order, _) in enumerate(plans):
        for t in order:
            plans_of_topic.setdefault(t, []).append(k)
    # per (plan, topic): the ranges of the plan's members, in rank order
    columns: dict[tuple[int, int], tuple[list[int], list[int]]] = {}
    short: set[int] = set()  # topics with fewer partitions than subscribers
    for t, ks in plans_of_topic.items():
        n_subscribers = sum(len(tagged[k]) for k in ks)
        if counts[t] < n_subscribers:
            short.add(t)
        starts, stops = _topic_bounds(counts[t], n_subscribers)
        if len(ks) == 1:
            columns[ks[0], t] = (starts, stops)
            continue
        plan_ids = list(map(n_plans.__rmod__, sorted(chain.from_iterable(tagged[k] for k in ks))))
        for k in ks:
            mine = list(map(eq, plan_ids, repeat(k)))
            columns[k, t] = (list(compress(starts, mine)), list(compress(stops, mine)))
    # fill the members' lists topic by topic, in their map order (reads each topic's
    # partitions in order: much kinder to the memory than member by member)
    tp_lists = TopicPartitionLists(table)
    tp_lists.prefetch(plans_of_topic)
    out: list[list[TopicPartition]] = [[] for _ in ranked]
    for k, ((order, plain), ranks) in enumerate(zip(plans, ranks_of_plan, strict=True)):
        lists = [out[ranked[r]] for r in ranks]
        if not plain and not short.isdisjoint(order):
            # a member may miss a topic, and this map order may not hold for the others
            _fill_one_by_one(g, orders, ranked, ranks, order, columns, k, lists, tp_lists)
            continue
        for t in order:
            starts, stops = columns[k, t]
            table_t = tp_lists.get(t)
            deque(map(_extend, lists, map(getitem, repeat(table_t), map(slice, starts, stops))), 0)
    return out


_extend = list.extend


def _fill_one_by_one(
    g: ServerGroup,
    orders: _MapOrders,
    ranked: list[int],
    ranks: list[int],
    order: list[int],
    columns: dict[tuple[int, int], tuple[list[int], list[int]]],
    k: int,
    lists: list[list[TopicPartition]],
    tp_lists: TopicPartitionLists,
) -> None:
    """Members whose map order depends on which of their topics gave them partitions."""
    members = g.spec.members
    for j, (rank, out) in enumerate(zip(ranks, lists, strict=True)):
        i = ranked[rank]
        bounds = {t: (columns[k, t][0][j], columns[k, t][1][j]) for t in order}
        present = [t for t in order if bounds[t][0] < bounds[t][1]]
        if len(present) < len(order):
            sub = g.subscription(i)
            cap = table_size_for(float_capacity(len(members[i].topics)))
            keep = set(present)
            present = orders.order(sub, [t for t in sub if t in keep], cap)
        for t in present:
            a, b = bounds[t]
            out += tp_lists.get(t)[a:b]
