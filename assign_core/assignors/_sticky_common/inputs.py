"""The sticky assignors' inputs as ``AbstractStickyAssignor`` reads them.

The members' ``HashMap`` order, the owned partitions in the order each protocol serializes
them, ownership resolution by generation (``allSubscriptionsEqual``'s and
``getConsumerOwnedPartitions``' claims) and the rack information of KIP-881 (``RackInfo``).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, repeat

from assign_core.assignors._sticky_common.partitions import _consume, _Layout, _remove_first
from assign_core.javacompat import (
    compute_if_absent_order,
    java_str_key,
    spread,
    string_hash,
    string_hashes,
)
from assign_core.model import GroupSpec, Member, TopicPartition


def _member_order(ids: Sequence[str]) -> list[int]:
    """Indices of the members in the iteration order of the subscriptions ``HashMap``.

    A default ``HashMap`` filled in member order: buckets ascending, insertion order within
    a bucket (a stable sort by bucket).
    """
    cap = 16
    while len(ids) > cap * 3 // 4:
        cap *= 2
    mask = cap - 1
    buckets = [spread(h) & mask for h in string_hashes(list(ids))]
    return sorted(range(len(ids)), key=buckets.__getitem__)


def _sticky_user_data_order(owned: Sequence[TopicPartition]) -> list[TopicPartition]:
    """Owned partitions as the ``StickyAssignor`` user data lists them.

    ``serializeTopicPartitionAssignment`` groups them by topic with ``computeIfAbsent`` into
    a default ``HashMap`` (topics in that map's order, partitions in list order).
    """
    groups: dict[str, list[TopicPartition]] = {}
    for tp in owned:
        g = groups.get(tp.topic)
        if g is None:
            groups[tp.topic] = [tp]
        else:
            g.append(tp)
    if len(groups) <= 1:
        return list(owned)
    out: list[TopicPartition] = []
    for topic in compute_if_absent_order((tp.topic for tp in owned), string_hash):
        out.extend(groups[topic])
    return out


def _grouped_by_topic(
    pids: list[int], tid: list[int], spread_hash: list[int], buckets: dict[int, list[int]]
) -> list[int]:
    """:func:`_sticky_user_data_order` over ids of real partitions, with one stable sort.

    Topics sharing a bucket iterate newest first; the table has grown for every
    ``computeIfAbsent`` call made while the map was over its threshold, that is for all
    the topics seen before the last call.
    """
    tis = list(map(tid.__getitem__, pids))
    firsts = list(dict.fromkeys(tis))
    distinct = len(firsts)
    if distinct <= 1:
        return pids
    before_last = distinct - 1 if tis.count(tis[-1]) == 1 else distinct
    cap = 16
    while before_last > cap * 3 // 4:
        cap *= 2
    bucket = buckets.get(cap)
    if bucket is None:
        bucket = buckets[cap] = [h & (cap - 1) for h in spread_hash]
    firsts.reverse()  # newest first within a bucket
    topics = sorted(firsts, key=bucket.__getitem__)
    if distinct == len(pids):  # one partition per topic
        return list(map(dict(zip(tis, pids, strict=True)).__getitem__, topics))
    rank = dict(zip(topics, range(distinct), strict=True))
    keys = list(map(rank.__getitem__, tis))
    return list(map(pids.__getitem__, sorted(range(len(pids)), key=keys.__getitem__)))


def _protocol_order(owned: Sequence[TopicPartition]) -> list[TopicPartition]:
    """Owned partitions as ``ConsumerProtocol`` serializes them: by (topic, partition)."""
    return sorted(owned, key=lambda tp: (java_str_key(tp.topic), tp.partition))


def _claims(
    members: Sequence[Member], layout: _Layout, *, cooperative: bool, ordered: bool
) -> list[list[int]]:
    """Each member's ``memberData.partitions`` as ids; topics outside the metadata dropped.

    The order within a member matters only to the general builder (kept partitions stay in
    it); the constrained builder sorts them, so ``ordered=False`` skips the reordering.
    """
    index = layout.index
    offsets = layout.offsets
    counts = layout.counts
    off = dict(zip(layout.names, offsets, strict=True))
    cnt = dict(zip(layout.names, counts, strict=True))
    table = layout.table
    spread_hash: list[int] = []
    if ordered and not cooperative:
        spread_hash = [spread(string_hash(name)) for name in layout.names]
    buckets: dict[int, list[int]] = {}
    out: list[list[int]] = []
    for m in members:
        owned: Sequence[TopicPartition] = m.owned_partitions
        if not owned:
            out.append([])
            continue
        try:
            pids = [off[t] + p if 0 <= p < cnt[t] else -1 for t, p in owned]
        except KeyError:  # a topic outside the metadata
            pids = [-1]
        if -1 not in pids:
            _consume(map(table.__setitem__, pids, owned))
            if ordered:
                if cooperative:
                    pids.sort()  # ids follow (topic, partition)
                else:
                    pids = _grouped_by_topic(pids, layout.tid(), spread_hash, buckets)
            out.append(pids)
            continue
        if ordered:
            owned = _protocol_order(owned) if cooperative else _sticky_user_data_order(owned)
        pids = []
        for tp in owned:
            t, p = tp
            ti = index.get(t)
            if ti is None:
                continue
            pid = layout.pid(ti, p)
            if pid < layout.total:
                table[pid] = tp
            pids.append(pid)
        out.append(pids)
    return out


def _resolve_ownership(
    order: Sequence[int], claims: list[list[int]], gens: list[int], size: int
) -> tuple[list[list[int]], set[int]]:
    """``consumerToOwnedPartitions`` and ``partitionsWithMultiplePreviousOwners``."""
    owned: list[list[int]] = [[] for _ in claims]
    multi: set[int] = set()
    count = sum(map(len, claims))
    if len(set(chain.from_iterable(claims))) == count:  # nothing is claimed twice
        for m, pids in enumerate(claims):
            if pids:
                owned[m] = list(pids)
        return owned, multi
    owner = [-1] * size
    for m in order:
        pids = claims[m]
        if not pids:
            continue
        if max(map(owner.__getitem__, pids)) < 0 and len(set(pids)) == len(pids):
            owned[m] = list(pids)
            _consume(map(owner.__setitem__, pids, repeat(m)))
            continue
        lst = owned[m]
        g = gens[m]
        for pid in pids:
            o = owner[pid]
            if o < 0:
                lst.append(pid)
                owner[pid] = m
                continue
            og = gens[o]
            if g == og:
                multi.add(pid)
                _remove_first(owned[o], pid)
                owner[pid] = m
            elif g > og:
                lst.append(pid)
                _remove_first(owned[o], pid)
                owner[pid] = m
    return owned, multi


class _Racks:
    """``AbstractStickyAssignor.RackInfo`` over member indices and partition ids."""

    __slots__ = ("consumer", "enabled", "num_consumers", "partition")

    def __init__(self, spec: GroupSpec, layout: _Layout, order: Sequence[int]) -> None:
        members = spec.members
        by_rack: dict[str, int] = {}
        member_rack: list[str | None] = [None] * len(members)
        for m in order:
            r = members[m].rack
            if r:
                by_rack[r] = by_rack.get(r, 0) + 1
                member_rack[m] = r
        self.enabled = False
        self.consumer: list[int | None] = []
        self.partition: list[frozenset[int]] = []
        #: numConsumersByPartition (computed whenever any consumer has a rack)
        self.num_consumers: list[int] | None = None
        if not by_rack:
            return
        rack_id: dict[str, int] = {}
        partition_racks: list[frozenset[int]] = []
        empty: frozenset[int] = frozenset()
        for name, c in zip(layout.names, layout.counts, strict=True):
            per_p = spec.partition_racks.get(name)
            if per_p is None:
                partition_racks.extend(repeat(empty, c))
                continue
            cache: dict[tuple[str, ...], frozenset[int]] = {}
            for p in range(c):
                racks = per_p[p]
                fs = cache.get(racks)
                if fs is None:
                    fs = frozenset(rack_id.setdefault(r, len(rack_id)) for r in racks)
                    cache[racks] = fs
                partition_racks.append(fs)
        count_of_rack = [by_rack.get(r, 0) for r in rack_id]
        sums: dict[frozenset[int], int] = {}
        for fs in set(partition_racks):
            sums[fs] = sum(count_of_rack[r] for r in fs)
        if partition_racks:
            self.num_consumers = list(map(sums.__getitem__, partition_racks))
        if not any(r in rack_id for r in by_rack):  # consumer and replica racks disjoint
            return
        all_racks = frozenset(range(len(rack_id)))
        if all(fs == all_racks for fs in sums):
            return
        self.enabled = True
        self.consumer = [None if r is None else rack_id.get(r, -1) for r in member_rack]
        self.partition = partition_racks

    def mismatch(self, m: int, pid: int) -> bool:
        """``racksMismatch``: the member has a rack that hosts no replica of the partition."""
        r = self.consumer[m]
        if r is None:
            return False
        if pid >= len(self.partition):
            return True
        return r not in self.partition[pid]

    def next_consumer(self, pid: int, members: Sequence[int], first: int) -> int:
        """``nextRackConsumer``: first index from ``first`` (cyclic) on a replica's rack."""
        racks = self.partition[pid] if pid < len(self.partition) else None
        if not racks:
            return -1
        n = len(members)
        consumer = self.consumer
        for i in range(n):
            index = (first + i) % n
            r = consumer[members[index]]
            if r is not None and r in racks:
                return index
        return -1
