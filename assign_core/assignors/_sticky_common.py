"""The shared core of Kafka's ``sticky`` and ``cooperative-sticky`` assignors.

This is ``AbstractStickyAssignor`` of kafka-clients 4.4.0 step by step, with Java's iteration
orders reproduced (:mod:`assign_core.javacompat`):

1. **Ownership resolution.** Members are visited in the leader's subscriptions ``HashMap``
   order. A claimed partition of a topic in the metadata (its number is *not* checked) goes
   to its first claimer; a later claimer with a higher generation takes it over; one with
   the same generation makes it *doubly claimed*: it is taken from the previous holder and
   not given to the new one. The previous holder's generation is its subscription's protocol
   generation, the claimer's comes from its ``memberData``; for the inputs here both are
   ``Member.generation`` (``-1`` when absent).
2. **Rack info** (KIP-881): rack-aware logic runs only when the gate of
   ``AbstractPartitionAssignor.useRackAwareAssignment`` passes, but unassigned partitions
   are ordered by their number of rack-local consumers whenever any consumer has a rack.
3. **The builder.** If all members subscribe the same topics (members with an empty
   subscription met before the first non-empty one are ignored), the
   ``ConstrainedAssignmentBuilder``: in map order (which decides who keeps the extra
   partition) members keep up to their quota of owned partitions ordered by (partition,
   topic); the rest is dealt round-robin to the members under quota, sorted by member id.
   Otherwise the ``GeneralAssignmentBuilder``: members keep the owned partitions they still
   subscribe to; each unassigned partition (topics by number of subscribers, then name)
   goes to the least loaded subscriber (a ``TreeSet`` by assignment size, then member id);
   partitions are then moved off overloaded members until ``isBalanced``, and the moves are
   undone unless the balance score improved.

Partitions are integer ids: topic ``i`` of the metadata topics sorted by name owns the ids
``offsets[i] .. offsets[i] + counts[i] - 1``. A claim of a partition number outside the topic
(Java keeps it, with odd consequences that are reproduced) gets an id after all real ones.
Work that Java does one partition at a time is done in bulk where the outcome is known:
whole round-robin passes and water-filling runs are list slices.

Java behaviours reproduced on purpose (all checked against the 4.4.0 jar):

* ``sticky`` user data groups owned partitions by topic with ``HashMap.computeIfAbsent``
  (newest first within a bucket, table grown lazily); ``cooperative-sticky`` owned
  partitions arrive sorted by ``ConsumerProtocol``. The general builder keeps them in that
  order.
* A member with an empty subscription met first in map order does not break "all equal",
  and the constrained builder then deals it partitions of topics it does not read.
* A kept claim beyond a topic's partition count stays in the member's list; Java's walk over
  the sorted kept partitions then treats every later partition as unassigned, which can hand
  out a partition twice or end in ``IllegalStateException``.
* A previous owner (older generation) set aside as a "fixed" member makes the general
  builder throw ``NullPointerException``.

Where Java throws (``IllegalStateException``, ``NullPointerException``, division by zero),
:class:`~assign_core.errors.AssignmentError` is raised.
"""

from __future__ import annotations

import gc
import math
from bisect import bisect_left, bisect_right, insort
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from itertools import chain, compress, repeat
from operator import is_

from assign_core.errors import AssignmentError
from assign_core.javacompat import (
    JavaHashOrder,
    capacity_for_initial,
    compute_if_absent_order,
    hash_order,
    java_str_key,
    spread,
    string_hash,
    tp_hash,
)
from assign_core.model import GroupSpec, Member, TopicPartition
from assign_core.partition_cache import clear_cache, topic_partitions

__all__ = ["StickyOutcome", "StickyState", "clear_cache", "run_sticky"]


def _consume(it: Iterator[object]) -> None:
    deque(it, maxlen=0)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC: a run allocates millions of acyclic objects it would rescan."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class StickyState:
    """What a Java ``AbstractStickyAssignor`` instance remembers between calls.

    ``maxGeneration`` is a field of the assignor instance that only grows, so a leader that
    keeps its assignor compares generations against the highest it has ever seen.
    """

    __slots__ = ("max_generation",)

    def __init__(self) -> None:
        self.max_generation = -1


class StickyOutcome:
    """One run: per-member partition lists (``spec.members`` order) and the withheld ones."""

    __slots__ = ("assignment", "transferring")

    def __init__(
        self, assignment: dict[str, list[TopicPartition]], transferring: dict[TopicPartition, str]
    ) -> None:
        self.assignment = assignment
        self.transferring = transferring


# --------------------------------------------------------------------------- partition ids


class _Layout:
    """Integer ids of the partitions of ``partitionsPerTopic`` (topics sorted by name)."""

    __slots__ = (
        "_tid",
        "counts",
        "extra",
        "extra_tp",
        "index",
        "names",
        "offsets",
        "table",
        "total",
    )

    def __init__(self, names: list[str], counts: list[int]) -> None:
        self.names = names
        self.counts = counts
        offsets = []
        total = 0
        for c in counts:
            offsets.append(total)
            total += c
        self.offsets = offsets
        self.total = total
        self.index = {name: i for i, name in enumerate(names)}
        self.extra: dict[tuple[int, int], int] = {}
        self.extra_tp: list[tuple[int, int]] = []
        #: a TopicPartition per real id, taken from the input where it has one
        self.table: list[TopicPartition | None] = [None] * total
        self._tid: list[int] | None = None

    @property
    def size(self) -> int:
        """Number of ids, real and out of range."""
        return self.total + len(self.extra_tp)

    def pid(self, ti: int, p: int) -> int:
        if 0 <= p < self.counts[ti]:
            return self.offsets[ti] + p
        key = (ti, p)
        e = self.extra.get(key)
        if e is None:
            e = self.total + len(self.extra_tp)
            self.extra[key] = e
            self.extra_tp.append(key)
        return e

    def tid(self) -> list[int]:
        """The topic of every real id."""
        if self._tid is None:
            tid: list[int] = []
            for ti, c in enumerate(self.counts):
                tid.extend(repeat(ti, c))
            self._tid = tid
        return self._tid

    def topic_of(self, pid: int) -> int:
        if pid < self.total:
            return bisect_right(self.offsets, pid) - 1
        return self.extra_tp[pid - self.total][0]

    def topic_part(self, pid: int) -> tuple[int, int]:
        if pid < self.total:
            ti = bisect_right(self.offsets, pid) - 1
            return ti, pid - self.offsets[ti]
        return self.extra_tp[pid - self.total]

    def hash_of(self, pid: int) -> int:
        """``TopicPartition.hashCode()``."""
        ti, p = self.topic_part(pid)
        return tp_hash(self.names[ti], p)

    def tp(self, pid: int) -> TopicPartition:
        if pid < self.total:
            found = self.table[pid]
            if found is not None:
                return found
        ti, p = self.topic_part(pid)
        return TopicPartition(self.names[ti], p)

    def fill_table(self) -> None:
        """Complete the table with the TopicPartitions the input did not provide."""
        table = self.table
        for name, off, c in zip(self.names, self.offsets, self.counts, strict=True):
            segment = table[off : off + c]
            if None not in segment:
                continue
            tps = topic_partitions(name, c)
            if segment.count(None) == c:
                table[off : off + c] = tps if len(tps) == c else tps[:c]
            else:
                for pid in compress(range(off, off + c), map(is_, segment, repeat(None))):
                    table[pid] = tps[pid - off]

    def tps(self, pids: list[int]) -> list[TopicPartition]:
        """The TopicPartitions of ``pids`` (after :meth:`fill_table`)."""
        if not self.extra_tp or max(pids, default=0) < self.total:
            return list(map(self.table.__getitem__, pids))  # type: ignore[arg-type]
        return [self.tp(pid) for pid in pids]


# --------------------------------------------------------------------------- inputs


def _member_order(ids: Sequence[str]) -> list[int]:
    """Indices of the members in the iteration order of the subscriptions ``HashMap``.

    A default ``HashMap`` filled in member order: buckets ascending, insertion order within
    a bucket (a stable sort by bucket).
    """
    cap = 16
    while len(ids) > cap * 3 // 4:
        cap *= 2
    mask = cap - 1
    buckets = [spread(string_hash(i)) & mask for i in ids]
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


def _remove_first(lst: list[int], pid: int) -> None:
    """``List.remove(Object)``: drop the first occurrence, if any."""
    with suppress(ValueError):
        lst.remove(pid)


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


# --------------------------------------------------------------------------- main entry


def run_sticky(spec: GroupSpec, *, cooperative: bool, state: StickyState) -> StickyOutcome:
    """``assignPartitions`` of ``StickyAssignor`` (``cooperative=False``) or
    ``CooperativeStickyAssignor`` (``cooperative=True``, including ``adjustAssignment``)."""
    with _gc_paused():
        return _run(spec, cooperative, state)


def _run(spec: GroupSpec, cooperative: bool, state: StickyState) -> StickyOutcome:
    members = spec.members
    ids = [m.member_id for m in members]
    if len(set(ids)) != len(ids):
        raise AssignmentError("two members share a member id")
    order = _member_order(ids)

    subscribed: set[str] = set()
    for member in members:
        subscribed.update(member.topics)
    topics_meta = spec.topics
    names = [t for t in subscribed if topics_meta.get(t, 0) > 0]
    names.sort(key=java_str_key)
    layout = _Layout(names, [topics_meta[t] for t in names])

    # All subscriptions equal? (map order; an empty subscription before the first
    # non-empty one does not count)
    equal = True
    ref: set[str] = set()
    ref_tuple: tuple[str, ...] = ()
    for m in order:
        topics = members[m].topics
        if not ref:
            ref.update(topics)
            ref_tuple = topics
        elif topics != ref_tuple and (len(topics) != len(ref) or not ref.issuperset(topics)):
            equal = False
            break

    gens = [-1 if member.generation is None else member.generation for member in members]
    state.max_generation = max([state.max_generation, *gens])

    claims = _claims(members, layout, cooperative=cooperative, ordered=not equal)
    owned, multi = _resolve_ownership(order, claims, gens, layout.size)
    racks = _Racks(spec, layout, order)

    transferring: dict[int, int] = {}
    if equal:
        builder = _Constrained(layout, racks, order, ids, owned, multi)
        builder.build()
        layout.fill_table()
        tp_lists = builder.materialize()
        if cooperative:
            transferring = builder.transferring
            for pid, m in transferring.items():
                with suppress(ValueError):
                    tp_lists[m].remove(layout.tp(pid))
    else:
        general = _General(spec, layout, racks, order, ids, owned, claims, gens, state)
        lists = general.build()
        if cooperative:
            transferring = _transferring_general(lists, claims, general.map_order())
            for pid, m in transferring.items():
                _remove_first(lists[m], pid)
        layout.fill_table()
        tp_lists = [layout.tps(lst) for lst in lists]

    assignment = dict(zip(ids, tp_lists, strict=True))
    withheld = {layout.tp(pid): ids[m] for pid, m in transferring.items()} if cooperative else {}
    return StickyOutcome(assignment, withheld)


def _transferring_general(
    lists: list[list[int]], claims: list[list[int]], assign_order: Sequence[int]
) -> dict[int, int]:
    """``computePartitionsTransferringOwnership``: newly assigned *and* revoked elsewhere.

    A partition in two lists (possible after an out-of-range claim) is "added" for the last
    of them in ``assign_order``, the iteration order of the assignment map.
    """
    revoked: set[int] = set()
    for m in assign_order:
        owned = claims[m]
        if owned and owned != lists[m]:
            assigned_set = set(lists[m])
            revoked.update(pid for pid in owned if pid not in assigned_set)
    if not revoked:
        return {}
    mark = bytearray(max(revoked) + 1)
    _consume(map(mark.__setitem__, revoked, repeat(1)))
    size = len(mark)
    added: dict[int, int] = {}
    for m in assign_order:
        assigned = lists[m]
        if not assigned or claims[m] == assigned:
            continue
        owned_set = set(claims[m])
        candidates = [pid for pid in assigned if pid < size and mark[pid]]
        for pid in candidates:
            if pid not in owned_set:
                added[pid] = m
    return added


def _out_of_range_cut(extras: list[tuple[int, int]], position: Callable[[int], int]) -> int:
    """Where Java's walk over all partitions gets stuck on a kept out-of-range claim.

    Returns ``2 * position(topic) + (1 if the claim sorts after the topic's partitions)``
    for the first such claim in (topic position, partition) order.
    """
    ti, p = min(extras, key=lambda e: (position(e[0]), e[1]))
    return 2 * position(ti) + (1 if p >= 0 else 0)


# --------------------------------------------------------------------------- constrained


class _Constrained:
    """``ConstrainedAssignmentBuilder`` (all members subscribe the same topics).

    A member's assignment is recorded as chunks: lists of ids (kept, or handed out one at a
    time) and ``range`` objects of positions in the unassigned sequence (whole round-robin
    passes), turned into TopicPartition lists at the end by slicing.
    """

    def __init__(
        self,
        layout: _Layout,
        racks: _Racks,
        order: Sequence[int],
        ids: Sequence[str],
        owned: list[list[int]],
        multi: set[int],
    ) -> None:
        self.layout = layout
        self.racks = racks
        self.order = order
        self.ids = ids
        self.owned = owned
        self.multi = multi
        n = len(order)
        total = layout.total
        if n == 0:
            raise AssignmentError("no members to assign to (Java: ArithmeticException: / by zero)")
        self.min_quota = math.floor(total / n)
        self.max_quota = math.ceil(total / n)
        self.expected = total % n
        self.current = 0
        self.count = [0] * len(owned)
        self.chunks: list[list[list[int] | range]] = [[] for _ in owned]
        self.unassigned: Sequence[int] = range(0)
        self.maybe_revoked: dict[int, int] = {}
        self.transferring: dict[int, int] = {}
        self.under: list[int] = []
        self.exactly: list[int] = []

    def build(self) -> None:
        kept = self._assign_owned()
        unassigned = self._unassigned(kept)
        id_key = [java_str_key(i) for i in self.ids]
        self.under.sort(key=id_key.__getitem__)
        self.exactly.sort(key=id_key.__getitem__)
        num = self.racks.num_consumers
        if num is not None:
            unassigned = sorted(unassigned, key=num.__getitem__)
        if self.racks.enabled:
            unassigned = self._rack_round_robin(unassigned)
        self.unassigned = unassigned
        self._round_robin(unassigned)
        self._verify()

    def materialize(self) -> list[list[TopicPartition]]:
        """The members' TopicPartition lists (after :meth:`_Layout.fill_table`)."""
        table = self.layout.table
        unassigned = self.unassigned
        seq: Sequence[TopicPartition | None]
        if isinstance(unassigned, range) and unassigned.start == 0 and unassigned.step == 1:
            seq = table
        elif any(isinstance(c, range) for chunks in self.chunks for c in chunks):
            seq = list(map(table.__getitem__, unassigned))
        else:
            seq = []
        out: list[list[TopicPartition]] = []
        for chunks in self.chunks:
            lst: list[TopicPartition | None] = []
            for c in chunks:
                if isinstance(c, range):
                    lst.extend(seq[c.start : c.stop : c.step])
                else:
                    lst.extend(self.layout.tps(c))
            out.append(lst)  # type: ignore[arg-type]  # the table is full
        return out

    def _sort_key(self) -> list[int]:
        """(partition, topic) order as one int per real id."""
        layout = self.layout
        nt = len(layout.names)
        key: list[int] = []
        for ti, c in enumerate(layout.counts):
            key.extend(range(ti, ti + c * nt, nt))
        return key

    def _sorted(self, own: list[int], key: list[int]) -> list[int]:
        layout = self.layout
        total = layout.total
        if not layout.extra_tp or max(own) < total:
            return sorted(own, key=key.__getitem__)
        nt = len(layout.names)

        def k(pid: int) -> int:
            if pid < total:
                return key[pid]
            ti, p = layout.extra_tp[pid - total]
            return p * nt + ti

        return sorted(own, key=k)

    def _assign_owned(self) -> list[int]:
        racks = self.racks
        multi = self.multi
        maybe_revoked = self.maybe_revoked
        min_q, max_q, expected = self.min_quota, self.max_quota, self.expected
        kept: list[int] = []
        key: list[int] | None = None
        for m in self.order:
            own = self.owned[m]
            if own:
                if racks.enabled:
                    keep = []
                    for pid in own:
                        if racks.mismatch(m, pid):
                            maybe_revoked[pid] = m
                        else:
                            keep.append(pid)
                    own = keep
                if own:
                    if key is None:
                        key = self._sort_key()
                    own = self._sorted(own, key)
                if multi:
                    own = [pid for pid in own if pid not in multi]
            size = len(own)
            if size < min_q:
                quota = size
                self.under.append(m)
            elif size >= max_q and self.current < expected:
                self.current += 1
                if self.current == expected:
                    self.exactly.clear()
                quota = max_q
            else:
                quota = min_q
                if self.current < expected:
                    self.exactly.append(m)
            if quota:
                keep = own[:quota] if quota < size else own
                self.chunks[m].append(keep)
                self.count[m] = quota
                kept.extend(keep)
            for pid in own[quota:]:
                maybe_revoked[pid] = m
        return kept

    def _unassigned(self, kept: list[int]) -> Sequence[int]:
        """All partitions by (topic, partition) minus the kept ones (``getUnassignedPartitions``).

        Java walks the sorted kept list alongside all partitions; a kept out-of-range claim
        never matches, so from there on every partition counts as unassigned, kept or not.
        """
        layout = self.layout
        total = layout.total
        if not kept:
            return range(total)
        cut = total
        if layout.extra_tp:
            extras = [layout.extra_tp[pid - total] for pid in kept if pid >= total]
            if extras:
                c = _out_of_range_cut(extras, lambda ti: ti)
                ti = c // 2
                cut = layout.offsets[ti] + (layout.counts[ti] if c % 2 else 0)
                kept = [pid for pid in kept if pid < cut]
        free = bytearray(b"\x01") * cut
        _consume(map(free.__setitem__, kept, repeat(0)))
        out = list(compress(range(cut), free))
        out.extend(range(cut, total))
        return out

    def _note_transfer(self, pid: int, m: int) -> None:
        prev = self.maybe_revoked.get(pid)
        if (prev is not None and prev != m) or pid in self.multi:
            self.transferring[pid] = m

    def _assign_new(self, pid: int, m: int) -> int:
        """``assignNewPartition``; returns the member's new assignment size."""
        chunks = self.chunks[m]
        if chunks and isinstance(chunks[-1], list):
            chunks[-1].append(pid)
        else:
            chunks.append([pid])
        self._note_transfer(pid, m)
        self.count[m] += 1
        return self.count[m]

    def _rack_round_robin(self, unassigned: Sequence[int]) -> list[int]:
        """``assignRackAwareRoundRobin``; returns the partitions it left unassigned."""
        racks = self.racks
        under = self.under
        exactly = self.exactly
        count = self.count
        min_q, max_q, expected = self.min_quota, self.max_quota, self.expected
        next_index = 0
        remaining: list[int] = []
        for pid in unassigned:
            consumer = -1
            i = racks.next_consumer(pid, under, next_index)
            if i >= 0:
                consumer = under[i]
                new_count = count[consumer] + 1
                if new_count >= min_q:
                    del under[i]
                    if new_count < max_q and self.current < expected:
                        exactly.append(consumer)
                else:
                    i += 1
                next_index = i % len(under) if under else 0
            elif exactly:
                j = racks.next_consumer(pid, exactly, 0)
                if j >= 0:
                    consumer = exactly[j]
                    if count[consumer] + 1 == max_q:
                        del exactly[j]
                        self.current += 1
                        if self.current == expected:
                            exactly.clear()
            if consumer < 0:
                remaining.append(pid)
            else:
                self._assign_new(pid, consumer)
        return remaining

    def _round_robin(self, unassigned: Sequence[int]) -> None:
        """``assignRoundRobin``, with whole passes over the unfilled members as slices.

        An iterator walks the members under ``minQuota`` (sorted by id); a member reaching
        ``minQuota`` leaves (and joins the FIFO of members at exactly ``minQuota``). An
        exhausted iterator restarts; once nobody is under ``minQuota`` the FIFO head takes
        the partition. Passes in which nobody reaches ``minQuota`` are recorded at once.
        """
        under = self.under
        exactly = self.exactly
        count = self.count
        chunks = self.chunks
        min_q, max_q = self.min_quota, self.max_quota
        check = bool(self.maybe_revoked) or bool(self.multi)
        total = len(unassigned)
        i = 0
        pos = 0  # the iterator's next index in ``under``
        fresh = True  # the iterator has returned nothing yet
        while i < total:
            if under and pos == len(under):
                pos = 0  # the exhausted iterator is replaced by a fresh one
                fresh = True
            if fresh and under:
                fresh = False
                n = len(under)
                deficit = min_q - max(count[m] for m in under)
                passes = min(deficit - 1, (total - i) // n)
                if passes > 0:
                    stop = i + passes * n
                    for j, m in enumerate(under):
                        chunks[m].append(range(i + j, stop, n))
                        count[m] += passes
                    if check:
                        for j in range(i, stop):
                            self._note_transfer(unassigned[j], under[(j - i) % n])
                    i = stop
                    fresh = True
                    continue
            pid = unassigned[i]
            i += 1
            if pos < len(under):
                consumer = under[pos]
                pos += 1
                from_iterator = True
            else:
                if not exactly:
                    raise AssignmentError("No more unfilled consumers to be assigned.")
                consumer = exactly.pop(0)
                from_iterator = False
            new_count = self._assign_new(pid, consumer)
            if new_count == min_q:
                if not from_iterator:  # Iterator.remove() after the element was removed
                    raise AssignmentError("IllegalStateException in assignRoundRobin")
                pos -= 1
                del under[pos]
                exactly.append(consumer)
            elif new_count == max_q:
                self.current += 1

    def _verify(self) -> None:
        """``verifyUnfilledMembers``."""
        if not self.under:
            return
        if self.current != self.expected:
            raise AssignmentError(
                "We haven't reached the expected number of members with more than the minQuota "
                "partitions, but no more partitions to be assigned"
            )
        for m in self.under:
            if self.count[m] != self.min_quota:
                raise AssignmentError(
                    f"Consumer: [{self.ids[m]}] doesn't reach minQuota partitions, and no more "
                    "partitions to be assigned"
                )


# --------------------------------------------------------------------------- general


class _SortedMembers:
    """The ``TreeSet`` of members ordered by (assignment size, member id).

    Buckets per size, each a sorted list of member-id ranks; a member is filed under the
    size it had when added (Java removes a member before its size changes and re-adds it).
    """

    __slots__ = ("buckets", "by_rank", "key", "lists", "rank", "sizes")

    def __init__(self, lists: list[list[int]], ids: Sequence[str]) -> None:
        self.lists = lists
        ranked = sorted(range(len(ids)), key=lambda i: java_str_key(ids[i]))
        self.by_rank = ranked
        self.rank = [0] * len(ids)
        for r, m in enumerate(ranked):
            self.rank[m] = r
        self.buckets: dict[int, list[int]] = {}
        self.sizes: list[int] = []
        self.key: dict[int, int] = {}  # member -> the size it is filed under

    def add(self, m: int) -> None:
        if m in self.key:
            return
        s = len(self.lists[m])
        self.key[m] = s
        b = self.buckets.get(s)
        if b is None:
            self.buckets[s] = [self.rank[m]]
            insort(self.sizes, s)
        else:
            insort(b, self.rank[m])

    def remove(self, m: int) -> None:
        s = self.key.pop(m, None)
        if s is None:
            return
        b = self.buckets[s]
        del b[bisect_left(b, self.rank[m])]
        if not b:
            del self.buckets[s]
            del self.sizes[bisect_left(self.sizes, s)]

    def first(self) -> int:
        return self.by_rank[self.buckets[self.sizes[0]][0]]

    def last(self) -> int:
        return self.by_rank[self.buckets[self.sizes[-1]][-1]]

    def __iter__(self) -> Iterator[int]:
        by_rank = self.by_rank
        buckets = self.buckets
        for s in self.sizes:
            for r in buckets[s]:
                yield by_rank[r]


class _Movements:
    """``PartitionMovements``: recorded moves, so that a move back undoes an earlier one."""

    def __init__(self, layout: _Layout) -> None:
        self.layout = layout
        self.by_topic: dict[int, dict[tuple[int, int], JavaHashOrder[int]]] = {}
        self.moves: dict[int, tuple[int, int]] = {}

    def _remove_record(self, pid: int) -> tuple[int, int]:
        pair = self.moves.pop(pid)
        topic = self.layout.topic_of(pid)
        per_topic = self.by_topic[topic]
        s = per_topic[pair]
        s.remove(pid)
        if not len(s):
            del per_topic[pair]
        if not per_topic:
            del self.by_topic[topic]
        return pair

    def _add_record(self, pid: int, pair: tuple[int, int]) -> None:
        self.moves[pid] = pair
        topic = self.layout.topic_of(pid)
        per_topic = self.by_topic.setdefault(topic, {})
        s = per_topic.get(pair)
        if s is None:
            s = per_topic[pair] = JavaHashOrder(self.layout.hash_of)
        s.add(pid)

    def move(self, pid: int, old: int, new: int) -> None:
        """``movePartition``."""
        if pid in self.moves:
            src, _ = self._remove_record(pid)
            if src != new:
                self._add_record(pid, (src, new))
        else:
            self._add_record(pid, (old, new))

    def actual(self, pid: int, old: int, new: int) -> int:
        """``getTheActualPartitionToBeMoved``: a partition that moved new -> old, if any.

        It is the first element of a ``HashSet<TopicPartition>``.
        """
        per_topic = self.by_topic.get(self.layout.topic_of(pid))
        if per_topic is None:
            return pid
        rec = self.moves.get(pid)
        if rec is not None:
            old = rec[0]
        s = per_topic.get((new, old))
        if s is None:
            return pid
        return s.ordered()[0]


def _npe(what: str) -> AssignmentError:
    return AssignmentError(f"NullPointerException in the general sticky builder: {what}")


class _Subscriptions:
    """Per member: subscribed metadata topics; per topic: its subscribers in map order.

    Members with the same subscription share one entry, topics with the same subscribers
    share one list object (callers must not mutate them).
    """

    def __init__(self, members: Sequence[Member], layout: _Layout, order: Sequence[int]) -> None:
        index = layout.index
        counts = layout.counts
        groups: dict[tuple[str, ...], list[int]] = {}
        for m in order:
            groups.setdefault(members[m].topics, []).append(m)
        self.topics_of: list[list[int]] = [[] for _ in members]
        self.subscribed: list[frozenset[int]] = [frozenset()] * len(members)
        self.max_size: list[int] = [0] * len(members)
        self.raw: list[frozenset[str]] = [frozenset()] * len(members)
        topic_groups: dict[int, list[int]] = {}
        group_members = list(groups.values())
        for g, (topics, ms) in enumerate(groups.items()):
            tis = sorted(index[t] for t in topics if t in index)
            fs = frozenset(tis)
            raw = frozenset(topics)
            max_size = sum(counts[ti] for ti in tis)
            for m in ms:
                self.topics_of[m] = tis
                self.subscribed[m] = fs
                self.max_size[m] = max_size
                self.raw[m] = raw
            for ti in tis:
                topic_groups.setdefault(ti, []).append(g)
        position = {m: i for i, m in enumerate(order)}
        merged: dict[tuple[int, ...], list[int]] = {}
        empty: list[int] = []
        self.consumers: list[list[int]] = [empty] * len(layout.names)
        for ti, gs in topic_groups.items():
            key = tuple(gs)
            lst = merged.get(key)
            if lst is None:
                if len(gs) == 1:
                    lst = group_members[gs[0]]
                else:
                    lst = sorted(
                        (m for g in gs for m in group_members[g]), key=position.__getitem__
                    )
                merged[key] = lst
            self.consumers[ti] = lst


class _General:
    """``GeneralAssignmentBuilder`` (members subscribe different topics)."""

    def __init__(
        self,
        spec: GroupSpec,
        layout: _Layout,
        racks: _Racks,
        order: Sequence[int],
        ids: Sequence[str],
        owned: list[list[int]],
        claims: list[list[int]],
        gens: list[int],
        state: StickyState,
    ) -> None:
        self.spec = spec
        self.layout = layout
        self.racks = racks
        self.order = order
        self.ids = ids
        self.claims = claims
        self.gens = gens
        self.state = state
        self.subs = _Subscriptions(spec.members, layout, order)
        self.consumers = self.subs.consumers
        self.subscribed = self.subs.subscribed
        nt = len(layout.names)
        consumers = self.consumers
        self.sorted_topics = sorted(range(nt), key=lambda ti: (len(consumers[ti]), ti))
        #: currentAssignment as it stood when the builder was made (currentPartitionConsumer
        #: is built from it)
        self.initial = owned
        self.lists = list(owned)  # currentAssignment
        self.in_map = [True] * len(owned)  # fixed members leave currentAssignment for a while
        self._member_hash: Callable[[int], int] = lambda m: string_hash(ids[m])
        self.amap: JavaHashOrder[int] = JavaHashOrder(self._member_hash)
        self.amap.add_all(order)
        self.tree = _SortedMembers(self.lists, ids)
        self.movements = _Movements(layout)
        self.revocation_required = False
        self.kept_len: list[int] = []
        self._cpc: list[int] | None = None
        self._prev: dict[int, tuple[int, int]] | None = None
        self.fixed: list[int] = []
        #: isBalanced's partition -> owner map (last list in map order holding it), kept up
        #: to date across moves while no partition is in two lists
        self._owner: list[int] | None = None
        self._map_order: list[int] | None = None

    def map_order(self) -> list[int]:
        """Iteration order of ``currentAssignment`` at the end."""
        return self.amap.ordered()

    # -- build

    def build(self) -> list[list[int]]:
        kept = self._assign_owned()
        segments = self._unassigned(kept)
        for m in self.order:
            self.tree.add(m)
        self._balance(segments)
        return self.lists

    def _assign_owned(self) -> list[int]:
        """``assignOwnedPartitions``: drop what the member no longer subscribes to or whose
        racks do not match."""
        kept: list[int] = []
        layout = self.layout
        racks = self.racks
        names = layout.names
        n_topics = len(names)
        subs = self.subs
        tid: list[int] | None = None
        for m in self.order:
            lst = self.lists[m]
            if not lst:
                continue
            raw = subs.raw[m]
            all_subscribed = len(subs.topics_of[m]) == n_topics
            if all_subscribed and not racks.enabled:
                kept.extend(lst)
                continue
            if tid is None:
                tid = layout.tid()
            total = layout.total
            keep = []
            for pid in lst:
                ti = tid[pid] if pid < total else layout.topic_of(pid)
                if (not all_subscribed and names[ti] not in raw) or (
                    racks.enabled and racks.mismatch(m, pid)
                ):
                    self.revocation_required = True
                    continue
                keep.append(pid)
            if len(keep) != len(lst):
                self.lists[m] = keep
            kept.extend(keep)
        return kept

    def _unassigned(self, kept: list[int]) -> list[tuple[int, list[int]]]:
        """``getUnassignedPartitions`` as (topic, partitions) segments in sorted order.

        All partitions are sorted by (topic's number of subscribers, topic, partition); a
        kept out-of-range claim makes Java's walk count everything after it as unassigned.
        """
        layout = self.layout
        total = layout.total
        offsets = layout.offsets
        counts = layout.counts
        order = self.sorted_topics
        if not kept:
            return [(ti, list(range(offsets[ti], offsets[ti] + counts[ti]))) for ti in order]
        cut = 2 * len(order)
        if layout.extra_tp:
            extras = [layout.extra_tp[pid - total] for pid in kept if pid >= total]
            if extras:
                position = {ti: i for i, ti in enumerate(order)}
                cut = _out_of_range_cut(extras, position.__getitem__)
                kept = [pid for pid in kept if pid < total]
        free = bytearray(b"\x01") * total
        _consume(map(free.__setitem__, kept, repeat(0)))
        out: list[tuple[int, list[int]]] = []
        for i, ti in enumerate(order):
            off = offsets[ti]
            c = counts[ti]
            if 2 * i + 1 <= cut:
                out.append((ti, list(compress(range(off, off + c), free[off : off + c]))))
            else:
                out.append((ti, list(range(off, off + c))))
        return out

    # -- the TreeSet walk

    def _first_subscriber(self, ti: int, pid: int, rack_check: bool) -> int:
        subscribed = self.subscribed
        racks = self.racks
        for m in self.tree:
            if ti in subscribed[m] and not (rack_check and racks.mismatch(m, pid)):
                return m
        return -1

    def _maybe_assign_racks(self, partitions: list[int]) -> list[int]:
        """``maybeAssign`` with rack check: returns the partitions left unassigned."""
        layout = self.layout
        tree = self.tree
        lists = self.lists
        tid = layout.tid()
        left: list[int] = []
        for pid in partitions:
            ti = tid[pid]
            m = self._first_subscriber(ti, pid, True) if self.consumers[ti] else -1
            if m < 0:
                left.append(pid)
                continue
            tree.remove(m)
            lists[m].append(pid)
            tree.add(m)
        return left

    def _maybe_assign(self, segments: list[tuple[int, list[int]]]) -> None:
        """``maybeAssign`` without rack check, one run of same-subscriber topics at a time.

        Each partition goes to the least loaded subscriber (size, then member id): a
        water-filling of the subscribers that is done level by level with slices.
        """
        consumers = self.consumers
        run: list[int] = []
        run_subs: list[int] | None = None
        for ti, pids in segments:
            if not pids:
                continue
            subs = consumers[ti]
            if subs is not run_subs:
                if run_subs:
                    self._fill(run, run_subs)
                run = []
                run_subs = subs
            run.extend(pids)
        if run_subs:
            self._fill(run, run_subs)

    def _fill(self, pids: list[int], subs: list[int]) -> None:
        lists = self.lists
        tree = self.tree
        rank = tree.rank
        by_rank = tree.by_rank
        for m in subs:
            tree.remove(m)
        order = sorted(subs, key=lambda m: (len(lists[m]), rank[m]))
        sizes = [len(lists[m]) for m in order]
        k = len(pids)
        i = 0
        joined = 0
        active: list[int] = []  # ranks of the members at the current level
        level = sizes[0]
        while i < k:
            while joined < len(order) and sizes[joined] <= level:
                insort(active, rank[order[joined]])
                joined += 1
            n = len(active)
            passes = (k - i) // n
            if joined < len(order):
                passes = min(passes, sizes[joined] - level)
            if passes == 0:
                for j in range(k - i):
                    lists[by_rank[active[j]]].append(pids[i + j])
                break
            block = pids[i : i + passes * n]
            for j, r in enumerate(active):
                lists[by_rank[r]].extend(block[j::n])
            i += passes * n
            level += passes
        for m in subs:
            tree.add(m)

    # -- balance

    def _size(self, m: int) -> int:
        if m < 0 or not self.in_map[m]:
            raise _npe("a member outside the current assignment")
        return len(self.lists[m])

    def _can_participate(self, m: int) -> bool:
        size = len(self.lists[m])
        if size < self.subs.max_size[m]:
            return True
        layout = self.layout
        consumers = self.consumers
        return any(len(consumers[layout.topic_of(pid)]) >= 2 for pid in self.lists[m])

    def _balance(self, segments: list[tuple[int, list[int]]]) -> None:
        tree = self.tree
        lists = self.lists
        initializing = not lists[tree.last()]
        self.kept_len = [len(lst) for lst in lists]
        if self.racks.enabled:
            flat = [pid for _, pids in segments for pid in pids]
            left = self._maybe_assign_racks(flat)
            tid = self.layout.tid()
            self._maybe_assign([(tid[pid], [pid]) for pid in left])
        else:
            self._maybe_assign(segments)

        layout = self.layout
        offsets = layout.offsets
        counts = layout.counts
        movable = [len(self.consumers[ti]) >= 2 for ti in range(len(layout.names))]
        all_partitions: list[int] = []
        for ti in self.sorted_topics:
            if movable[ti]:
                all_partitions.extend(range(offsets[ti], offsets[ti] + counts[ti]))
        unassigned = [pid for ti, pids in segments if movable[ti] for pid in pids]

        # consumer2AllPotentialTopics is a HashMap(n) filled in map order; the fixed members
        # wait in a default HashMap and return to currentAssignment in its order.
        n = len(self.order)
        fixed = [
            m
            for m in hash_order(self.order, self._member_hash, capacity_for_initial(n))
            if not self._can_participate(m)
        ]
        for m in fixed:
            tree.remove(m)
            self.in_map[m] = False
            self.amap.remove(m)
        fixed = hash_order(fixed, self._member_hash)
        self.fixed = fixed

        snapshot_order = self.amap.ordered()
        self._map_order = snapshot_order
        snapshot = [(m, list(lists[m])) for m in snapshot_order]
        if not self.revocation_required:
            self._perform_reassignments(unassigned)
        performed = self._perform_reassignments(all_partitions)
        if (
            not initializing
            and performed
            and _balance_score([len(lists[m]) for m in snapshot_order])
            >= _balance_score([len(lst) for _, lst in snapshot])
        ):
            for m, lst in snapshot:
                lists[m] = lst
            self._owner = None
            restored: JavaHashOrder[int] = JavaHashOrder(self._member_hash, self.amap.capacity)
            restored.add_all(hash_order(snapshot_order, self._member_hash))
            self.amap = restored
        for m in fixed:
            self.in_map[m] = True
            self.amap.add(m)

    def _currently(self) -> list[int]:
        """``currentPartitionConsumer``, built on first use.

        Made from the assignment the builder started with, then every partition handed out
        by ``maybeAssign`` (the members' list tails beyond what they kept).
        """
        if self._cpc is None:
            cpc = [-1] * self.layout.size
            for m in self.order:
                _consume(map(cpc.__setitem__, self.initial[m], repeat(m)))
            for m in self.order:
                tail = self.lists[m][self.kept_len[m] :]
                _consume(map(cpc.__setitem__, tail, repeat(m)))
            self._cpc = cpc
        return self._cpc

    def _prev_assignment(self) -> dict[int, tuple[int, int]]:
        """``prepopulateCurrentAssignments``: owners from earlier generations (built on
        first use)."""
        if self._prev is None:
            max_gen = self.state.max_generation
            prev: dict[int, tuple[int, int]] = {}
            members = self.spec.members
            for m in self.order:
                g = self.gens[m]
                if members[m].generation is not None:
                    if g >= max_gen:
                        continue
                elif max_gen <= -1:
                    continue
                for pid in self.claims[m]:
                    e = prev.get(pid)
                    if e is None or g > e[1]:
                        prev[pid] = (m, g)
            self._prev = prev
        return self._prev

    def _is_balanced(self) -> bool:
        tree = self.tree
        lists = self.lists
        min_size = len(lists[tree.first()])
        max_size = len(lists[tree.last()])
        if min_size >= max_size - 1:
            return True
        layout = self.layout
        owner = self._owner
        if owner is None:
            owner = [-1] * layout.size
            map_order = self._map_order or self.amap.ordered()
            for m in map_order:
                _consume(map(owner.__setitem__, lists[m], repeat(m)))
            held = sum(len(lists[m]) for m in map_order)
            if held == layout.size - owner.count(-1):  # every partition in one list at most
                self._owner = owner
        sizes = list(map(len, lists))
        sizes.append(-1)  # owner -1: no owner
        offsets = layout.offsets
        counts = layout.counts
        top: dict[int, int] = {}
        for c in tree:
            size = sizes[c]
            if size == self.subs.max_size[c]:
                continue
            own: set[int] | None = None
            for ti in self.subs.topics_of[c]:
                off = offsets[ti]
                end = off + counts[ti]
                t = top.get(ti)
                if t is None:
                    block = owner[off:end]
                    t = -2 if -1 in block else max(map(sizes.__getitem__, block))
                    top[ti] = t
                if t != -2 and t <= size + 1:
                    continue
                if own is None:
                    own = set(lists[c])
                for pid in range(off, end):
                    if pid in own:
                        continue
                    o = owner[pid]
                    if o < 0:
                        raise _npe("a partition without owner in isBalanced")
                    if size + 1 < sizes[o]:
                        return False
        return True

    def _perform_reassignments(self, partitions: list[int]) -> bool:
        performed = False
        racks = self.racks
        size = self._size
        tid: list[int] | None = None
        while True:
            modified = False
            for pid in partitions:
                if self._is_balanced():
                    break
                if tid is None:
                    tid = self.layout.tid()
                cpc = self._currently()
                prev = self._prev_assignment()
                consumer = cpc[pid]
                e = prev.get(pid)
                if e is not None and size(consumer) > size(e[0]) + 1:
                    self._reassign_to(pid, e[0])
                    performed = modified = True
                    continue
                ti = tid[pid]
                if racks.enabled and consumer >= 0:
                    crack = racks.consumer[consumer]
                    pracks = racks.partition[pid]
                    if crack is not None and pracks and crack in pracks:
                        found = False
                        for other in self.consumers[ti]:
                            orack = racks.consumer[other]
                            if orack is None or orack not in pracks:
                                continue
                            if size(consumer) <= size(other) + 1:
                                continue
                            self._reassign(pid, ti)
                            performed = modified = found = True
                            break
                        if found:
                            continue
                if not self.fixed:
                    # nobody left currentAssignment: "some subscriber is lighter by 2 or more"
                    lightest = min(map(len, map(self.lists.__getitem__, self.consumers[ti])))
                    if size(consumer) > lightest + 1:
                        self._reassign(pid, ti)
                        performed = modified = True
                    continue
                for other in self.consumers[ti]:
                    if size(consumer) <= size(other) + 1:
                        continue
                    self._reassign(pid, ti)
                    performed = modified = True
                    break
            if not modified:
                return performed

    def _reassign(self, pid: int, ti: int) -> None:
        """Move to the least loaded subscriber of the topic."""
        new = self._first_subscriber(ti, pid, False)
        if new < 0:
            raise _npe("no member to move a partition to")
        self._reassign_to(pid, new)

    def _reassign_to(self, pid: int, new: int) -> None:
        old = self._currently()[pid]
        if old < 0:
            raise _npe("a partition without consumer")
        self._process_movement(self.movements.actual(pid, old, new), new)

    def _process_movement(self, pid: int, new: int) -> None:
        cpc = self._currently()
        old = cpc[pid]
        if old < 0 or not self.in_map[old] or not self.in_map[new]:
            raise _npe("a move from or to a member outside the current assignment")
        tree = self.tree
        tree.remove(old)
        tree.remove(new)
        self.movements.move(pid, old, new)
        _remove_first(self.lists[old], pid)
        self.lists[new].append(pid)
        cpc[pid] = new
        if self._owner is not None:
            self._owner[pid] = new
        tree.add(new)
        tree.add(old)


def _balance_score(sizes: list[int]) -> int:
    """``getBalanceScore``: the sum over unordered pairs of ``|size_i - size_j|``."""
    sizes = sorted(sizes)
    n = len(sizes)
    return sum(s * (2 * i - (n - 1)) for i, s in enumerate(sizes))
