"""``UniformHeterogeneousAssignmentBuilder`` of the coordinator's ``uniform`` assignor (see
:mod:`assign_core.assignors.uniform`): revoke unsubscribed topics, assign the unassigned
partitions topic by topic (most partitions per subscriber first) round-robin over the least
loaded subscribers, then move partitions from the most to the least loaded subscribers until
balanced (at most 16 passes over the topics).

Every member's target assignment is kept as the list of its changes and replayed on the Java
collections' model at the end; the members that owned nothing are ordered together, with
numpy, where their maps and sets provably iterate by bin. The changes of the round-robin over
the unassigned partitions, most of them, stay numpy arrays (a topic's recipients are prefixes
of its subscribers sorted by size, one index array per topic); the members read with numpy
(:meth:`~assign_core.assignors._server_common.ServerGroup._flat_many`) are revoked from their
arrays too, and one that keeps its assignment answers with it as the input gave it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import cached_property
from itertools import chain, compress, repeat
from operator import and_, eq, getitem, gt, invert, le, mul, ne, not_, or_, rshift
from operator import sub as sub_
from typing import Any

import numpy as np

from assign_core.assignors._server_common import (
    MapModel,
    OwnedFlat,
    Pairs,
    Piece,
    ServerGroup,
    ServerNumbers,
    TopicPartitionLists,
    TopicTable,
    _Olds,
)
from assign_core.errors import AssignmentError
from assign_core.javacompat import table_size_for
from assign_core.javacompat.hashmap import (
    adds_iterate_by_bin,
    float_capacity,
    grown_capacity,
    hashset_copy_capacity,
    int_set_order,
)
from assign_core.model import TopicPartition

#: numpy integers: member positions, partitions, changes
_Ints = np.ndarray[Any, np.dtype[np.int64]]

_MAX_ITERATION_COUNT = 16
#: A map that never held this many keys has no bin that ``computeIfAbsent`` treeifies.
_CIA_LIMIT = 8
#: A set that received fewer additions than this never had a bin to treeify.
_SET_BIN_LIMIT = 9


class _Balancer:
    """``MemberAssignmentBalancer``: round-robins over the least and the most loaded."""

    __slots__ = (
        "least_count",
        "least_end",
        "most_count",
        "most_end",
        "most_start",
        "next_least",
        "next_most",
        "sizes",
        "sorted",
    )

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.sorted: list[int] = []
        self.least_end = 0
        self.least_count = -1
        self.next_least = 0
        self.most_start = 0
        self.most_end = 0
        self.most_count = 1
        self.next_most = -1

    def initialize(self, ordered: list[int]) -> int:
        """``ordered``: the subscribers sorted by (size, index)."""
        sizes = self.sizes
        self.sorted = s = ordered
        n = len(s)
        self.least_end = 0
        self.least_count = sizes[s[0]] - 1
        self.next_least = 0
        self.most_start = n
        self.most_end = n
        self.most_count = sizes[s[-1]] + 1
        self.next_most = n - 1
        return sizes[s[-1]] - sizes[s[0]]

    def next_least_loaded(self) -> int:
        s = self.sorted
        if self.next_least >= self.least_end:
            self.least_count += 1
            sizes = self.sizes
            while self.least_end < len(s) and sizes[s[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        m = s[self.next_least]
        self.next_least += 1
        return m

    def next_most_loaded(self) -> int:
        s = self.sorted
        sizes = self.sizes
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = sizes[s[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and sizes[s[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        m = s[self.next_most]
        self.next_most -= 1
        return m

    def exclude_most_loaded(self) -> None:
        s = self.sorted
        i = self.next_most + 1
        j = self.most_end - 1
        s[i], s[j] = s[j], s[i]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


_SHIFT = 32
_tuple_new = tuple.__new__
_LOW = (1 << _SHIFT) - 1


class _Hetero:
    """``UniformHeterogeneousAssignmentBuilder`` with every member's target assignment kept as
    the list of its changes (``topic << 32 | partition`` added, ``~`` that removed), replayed
    on the Java collections' model at the end: those of :meth:`assign_remaining` as arrays per
    topic (``handed``), the later ones per member (``events``), both in :attr:`changes`."""

    def __init__(self, g: ServerGroup, olds: _Olds) -> None:
        self.g = g
        self.olds = olds
        self.topics: TopicTable = g.topics
        n = len(g.order)
        self.sizes = [0] * n
        # members by subscription (a parser shares equal ones), in order of their first
        # member: each topic's subscribers ascending, the topics in order of first appearance
        distinct: dict[int, int] = {}
        subscriptions: list[list[int]] = []
        kinds = [0] * n
        for pos, sub in enumerate(map(g.subscription, g.order)):
            kind = distinct.get(id(sub))
            if kind is None:
                kind = distinct[id(sub)] = len(subscriptions)
                subscriptions.append(sub)
            kinds[pos] = kind
        subscribes = np.zeros((len(subscriptions), len(self.topics.counts)), dtype=bool)
        for kind, sub in enumerate(subscriptions):
            subscribes[kind, sub] = True
        member_kinds = np.array(kinds, dtype=np.int64)
        #: per position the member's subscription, and which topics each subscribes
        self.kinds = member_kinds
        self.subscribes = subscribes
        self.subscribers: dict[int, _Ints] = {
            t: np.flatnonzero(subscribes[:, t][member_kinds])
            for t in dict.fromkeys(chain.from_iterable(subscriptions))
        }
        # the changes of assign_remaining, per topic in its order: (recipients, changes)
        self.handed: list[tuple[_Ints, _Ints]] = []
        # the later changes (balance's moves), per member
        self.events: list[list[int]] = [[] for _ in range(n)]
        # unsubscribed topics removed from the copy, in the current map's order
        self.dropped: dict[int, list[int]] = {}
        # per topic the position of each partition's owner (-1: none)
        self.owners: dict[int, _Ints] = {}
        self._sizes_np: _Ints | None = None
        self._grown: dict[tuple[int, int], int] = {}
        self._roomy_cache: dict[int, bool] = {}

    def topic_key(self, t: int) -> tuple[float, int, tuple[int, int]]:
        s = len(self.subscribers[t])
        return (-(self.topics.counts[t] / s), s, self.topics.cmp_keys[t])

    def _drop(self, pos: int, t: int) -> None:
        self.dropped.setdefault(pos, []).append(t)

    def revoke(self) -> None:
        """``maybeRevokePartitions``: sizes and owners from the subscribed topics of the
        current assignments (a later member overwrites an earlier one's ownership)."""
        g = self.g
        counts = self.topics.counts
        sizes = self.sizes
        # one table of every subscribed topic's owners, each topic's a view of it
        topics = list(self.subscribers)
        offsets = np.zeros(len(counts), dtype=np.int64)
        offsets[topics] = np.cumsum([0] + [counts[t] for t in topics[:-1]])
        table = np.full(sum(counts[t] for t in topics), -1, dtype=np.int64)
        owners = self.owners = {
            t: table[at : at + counts[t]]
            for t, at in zip(topics, offsets[topics].tolist(), strict=True)
        }
        # members read by ServerGroup._flat_many and subscribed to all their topics: read
        # here with numpy, their partitions written at the end (a later member's write wins:
        # the highest position); the others below, one by one
        n = len(g.spec.members)
        position = np.empty(n, dtype=np.int64)
        position[g.order] = np.arange(n)
        known_counts = np.array(counts[: self.topics.known], dtype=np.int64)
        done = np.zeros(n, dtype=bool)
        beyond = np.zeros(n, dtype=bool)
        bulk_sizes = np.zeros(n, dtype=np.int64)  # by position
        writes: list[tuple[_Ints, _Ints]] = []
        for members, member_topics, parts in g.bulk_chunks():
            at = position[members]
            subscribed = self.subscribes[self.kinds[at], member_topics]
            covered = np.ones(n, dtype=bool)
            covered[members[~subscribed]] = False
            mine = covered[members]
            done[members[mine]] = True
            beyond[members[mine & (parts >= known_counts[member_topics])]] = True
            writes.append((offsets[member_topics[mine]] + parts[mine], at[mine]))
            bulk_sizes += np.bincount(at[mine], minlength=n)
        first_beyond = int(position[beyond].min()) if beyond.any() else n
        skip: list[bool] = done.tolist()
        subscribed_sets: dict[int, set[int]] = {}
        for pos, i in enumerate(g.order):
            if pos >= first_beyond:
                break
            owned = g.current[i]
            if not owned or skip[i]:
                continue
            sub = g.subscription(i)
            subscribed_set = subscribed_sets.get(id(sub))
            if subscribed_set is None:
                subscribed_set = subscribed_sets[id(sub)] = set(sub)
            if isinstance(owned, tuple):
                t, lo, hi, _ = owned
                if t in subscribed_set:
                    sizes[pos] += hi - lo + 1
                    owners[t][lo : hi + 1] = pos
                else:
                    self._drop(pos, t)
                continue
            if isinstance(owned, OwnedFlat) and subscribed_set.issuperset(owned.topics):
                st = owned.starts
                group_sizes = list(map(sub_, st[1:], st[:-1]))
                per_partition = chain.from_iterable(
                    map(repeat, [owners[t] for t in owned.topics], group_sizes)
                )
                try:
                    for owners_of_topic, p in zip(per_partition, owned.parts, strict=True):
                        owners_of_topic[p] = pos
                except IndexError:
                    raise _beyond(self.topics, owned.topics, owned.parts) from None
                sizes[pos] += len(owned.parts)
                continue
            for o in self.olds(i):
                t = o.topic
                if t in subscribed_set:
                    if max(o.partitions) >= counts[t]:
                        raise _beyond(self.topics, [t], o.partitions)
                    sizes[pos] += len(o.partitions)
                    owners[t][o.partitions] = pos
                else:
                    self._drop(pos, t)
        if first_beyond < n:
            flat = g.current[g.order[first_beyond]]
            assert isinstance(flat, OwnedFlat)
            raise _beyond(self.topics, flat.topics, flat.parts)
        for where, who in writes:
            np.maximum.at(table, where, who)
        self.sizes = (np.array(sizes, dtype=np.int64) + bulk_sizes).tolist()

    def assign_remaining(self) -> None:
        """Each topic's unassigned partitions, ascending, to ``nextLeastLoadedMember()``:
        with the subscribers sorted by (size, index), round ``r`` serves, in order, the
        prefix of those whose size was at most ``base + r`` (``base``: the least size); a
        member served is one partition larger, as it would be after the round."""
        sizes = np.array(self.sizes, dtype=np.int64)
        n = len(sizes)
        unassigned: dict[int, _Ints] = {}
        for t, owners in self.owners.items():
            free = np.flatnonzero(owners == -1)
            if len(free):
                unassigned[t] = free
        for t in sorted(unassigned, key=self.topic_key):
            free = unassigned[t]
            subscribers = self.subscribers[t]
            subscriber_sizes = sizes[subscribers]
            by_size = np.argsort(subscriber_sizes, kind="stable")
            recipients = subscribers[by_size][_served(subscriber_sizes[by_size], len(free))]
            self.owners[t][free] = recipients
            sizes += np.bincount(recipients, minlength=n)
            self.handed.append((recipients, free | t << _SHIFT))
        self.sizes = sizes.tolist()

    def move(self, t: int, p: int, pos: int) -> None:
        """``assignPartition``."""
        key = t << _SHIFT | p
        owners = self.owners[t]
        old = int(owners[p])
        self._sizes_np = None
        if old != -1:
            self.events[old].append(~key)
            self.sizes[old] -= 1
        self.events[pos].append(key)
        owners[p] = pos
        self.sizes[pos] += 1

    def balance(self) -> None:
        topic_ids = [t for t, subs in self.subscribers.items() if len(subs) >= 2]
        if not topic_ids:
            return
        ordered = sorted(topic_ids, key=self.topic_key)
        last = -1
        balancer = _Balancer(self.sizes)
        for _ in range(_MAX_ITERATION_COUNT):
            for index, t in enumerate(ordered):
                if index == last:
                    return
                moved = self.balance_topic(t, balancer)
                if moved > 0 or last == -1:
                    last = index

    def balance_topic(self, t: int, balancer: _Balancer) -> int:
        sizes = self._sizes_np
        if sizes is None:
            sizes = self._sizes_np = np.array(self.sizes, dtype=np.int64)
        subscribers = self.subscribers[t]
        subscriber_sizes = sizes[subscribers]
        if int(subscriber_sizes.max()) - int(subscriber_sizes.min()) <= 1:
            return 0  # balanced: initialize() would say so
        balancer.initialize(subscribers[np.argsort(subscriber_sizes, kind="stable")].tolist())
        owners = self.owners[t]
        # partitions by (owner, partition); each owner's range [start, end)
        by_partition = np.argsort(owners, kind="stable")
        partitions: list[int] = by_partition.tolist()
        by_owner: list[int] = owners[by_partition].tolist()
        if by_owner:
            firsts = [0, *compress(range(1, len(by_owner)), map(ne, by_owner, by_owner[1:]))]
            heads = list(map(by_owner.__getitem__, firsts))
            start = dict(zip(heads, firsts, strict=True))
            end = dict(zip(heads, [*firsts[1:], len(by_owner)], strict=True))
        else:
            start = {}
            end = {}
        moved = 0
        while not balancer.is_balanced():
            while True:
                most = balancer.next_most_loaded()
                if most == -1 or (most in end and end[most] - start[most] > 0):
                    break
                balancer.exclude_most_loaded()
            if most == -1:
                break
            p = partitions[end[most] - 1]
            end[most] -= 1
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self.move(t, p, least)
            moved += 1
        return moved

    # -- the result ---------------------------------------------------------------------------

    def numbers(self) -> ServerNumbers:
        """Every member's target as numbers in iteration order (:class:`ServerNumbers`): the
        members that owned nothing as :class:`Pairs` of one numpy sort; the few others as
        lists (their replay looks the objects up as it goes)."""
        g = self.g
        members = g.spec.members
        current = g.current
        by_member: list[list[Piece]] = [[] for _ in members]
        changed = self.changed
        batched = self._fresh_batch(
            [pos for pos, i in enumerate(g.order) if not current[i] and changed[pos]]
        )
        lists: TopicPartitionLists | None = None
        tables: dict[int, list[TopicPartition]] = {}
        for pos, i in enumerate(g.order):
            owned = current[i]
            done = batched.get(pos)
            if done is not None:
                by_member[i] = [done]
                continue
            if not changed[pos] and pos not in self.dropped:
                if isinstance(owned, tuple):
                    by_member[i] = [owned[3]]
                elif isinstance(owned, OwnedFlat):
                    by_member[i] = [owned]
                elif owned:
                    by_member[i] = [[tp for o in self.olds(i) for tp in o.tps]]
                continue
            if lists is None:
                lists = TopicPartitionLists(self.topics)
                lists.prefetch(self.subscribers)
                tables.update((t, lists.get(t)) for t in self.subscribers)
            ev = self.changes_of(pos)
            if not owned and ev:
                fresh = self._fresh(ev, tables, g.subscription(i))
                if fresh is not None:
                    by_member[i] = [fresh]
                    continue
            by_member[i] = [self._replay(pos, i, ev, lists)]
        return ServerNumbers(self.topics, [m.member_id for m in members], by_member)

    @cached_property
    def changes(self) -> tuple[_Ints, _Ints]:
        """Every change as (member position, change): those of :meth:`assign_remaining`,
        topic by topic, then the later ones member by member; so each member's in the order
        they were made."""
        late = self.events
        members = [recipients for recipients, _ in self.handed]
        members.append(np.repeat(np.arange(len(late)), list(map(len, late))))
        changes = [handed for _, handed in self.handed]
        changes.append(np.array(list(chain.from_iterable(late)), dtype=np.int64))
        return np.concatenate(members), np.concatenate(changes)

    @cached_property
    def changed(self) -> list[bool]:
        """Per member position: were changes made."""
        members = self.changes[0]
        counts: list[int] = np.bincount(members, minlength=len(self.events)).tolist()
        return list(map(bool, counts))

    @cached_property
    def _by_member(self) -> tuple[_Ints, list[int]]:
        """:attr:`changes` grouped by member (each in order) and where each member's start."""
        members, changes = self.changes
        order = np.argsort(members, kind="stable")
        starts = np.zeros(len(self.events) + 1, dtype=np.int64)
        np.cumsum(np.bincount(members, minlength=len(self.events)), out=starts[1:])
        return changes[order], starts.tolist()

    def changes_of(self, pos: int) -> list[int]:
        """The changes of the member at ``pos``, in order."""
        changes, starts = self._by_member
        ev: list[int] = changes[starts[pos] : starts[pos + 1]].tolist()
        return ev

    @cached_property
    def set_masks(self) -> dict[int, int]:
        """Per topic, ``capacity - 1`` of a member's set that never grew."""
        return {t: cap - 1 for t, cap in self.estimates.items()}

    @cached_property
    def small_sets(self) -> int:
        """Sets with fewer partitions than this never grew nor filled a bin."""
        return min([9, *(cap * 3 // 4 + 1 for cap in self.estimates.values())])

    @cached_property
    def estimates(self) -> dict[int, int]:
        """Per topic, the table size of ``new HashSet<>((int) (ceil(P / S) / 0.75f + 1))``."""
        counts = self.topics.counts
        return {
            t: table_size_for(float_capacity((counts[t] + len(subs) - 1) // len(subs)))
            for t, subs in self.subscribers.items()
        }

    def _roomy(self, subscription: list[int]) -> bool:
        """No 8 of these topics share a bin of 16 (nor then of any larger table)."""
        roomy = self._roomy_cache.get(id(subscription))
        if roomy is None:
            spreads = self.topics.spreads
            roomy = _no_full_bin([spreads[t] for t in subscription], 16, _CIA_LIMIT)
            self._roomy_cache[id(subscription)] = roomy
        return roomy

    def _fresh(
        self, ev: list[int], tables: dict[int, list[TopicPartition]], subscription: list[int]
    ) -> list[TopicPartition] | None:
        """The target of a member that owned nothing, from its changes, or ``None`` if the
        general replay must compute it.

        Its map got ``computeIfAbsent`` for every partition added (a new key goes first in
        its bin, the table grows on the call after the one that crossed the threshold); a
        removal does not touch the map unless it empties a set (then: ``None``). A set
        iterates by bin, then addition order; a removal leaves the others' order alone."""
        if min(ev) < 0:
            removals = list(map(gt, repeat(0), ev))
            removed = set(map(invert, compress(ev, removals)))
            adds = list(compress(ev, map(not_, removals)))
            kept = list(compress(adds, map(not_, map(removed.__contains__, adds))))
            if len(kept) + len(removed) != len(adds) or len(set(adds)) != len(adds):
                return None  # a partition removed twice or added back
        else:
            adds = kept = ev
            removed = set()
        n = len(adds)
        ts = list(map(rshift, adds, repeat(_SHIFT)))
        first = dict(zip(reversed(ts), range(n - 1, -1, -1), strict=True))  # topic -> 1st call
        inserted = sorted(first, key=first.__getitem__)
        z = len(inserted)
        # new HashMap<>(0): before each insertion the table holds the keys (z - 1 before the
        # last); a call after the last insertion grows it once more if needed
        cap = _cia_capacity(z - 1)
        if first[inserted[-1]] < n - 1 and z > cap * 3 // 4:
            cap *= 2
        spreads = self.topics.spreads
        crowded = False
        if z >= _CIA_LIMIT and not self._roomy(subscription):
            # while the table had c bins it held at most c * 3 / 4 + 1 keys: none of those
            # bins may have reached 8 (computeIfAbsent would have treeified or resized)
            level = 16
            while level <= cap and not crowded:
                k = min(z, level * 3 // 4 + 1)
                crowded = k >= _CIA_LIMIT and not _no_full_bin(
                    [spreads[t] for t in inserted[:k]], level, _CIA_LIMIT
                )
                level *= 2
        if crowded:  # the simulator, on the calls that matter (each insertion, then one more)
            calls: list[tuple[str, int]] = []
            for j, t in enumerate(inserted):
                calls.append(("c", t))
                after = first[inserted[j + 1]] if j + 1 < z else n
                if after > first[t] + 1:
                    calls.append(("c", t))
            by_map = self.topics.replay(1, calls)
            rank = dict(zip(by_map, _RANKS, strict=False))
        else:  # by bin, a later insertion first within a bin
            bins = list(map(and_, map(spreads.__getitem__, inserted), repeat(cap - 1)))
            by_bin = sorted(
                range(z), key=list(map(sub_, map(mul, bins, repeat(z)), range(z))).__getitem__
            )
            rank = dict(zip(map(inserted.__getitem__, by_bin), _RANKS, strict=False))
        masks = self.set_masks
        counts = Counter(ts)  # additions per set: at least its largest size
        small = self.small_sets
        if max(counts.values()) >= small:
            masks = {t: masks[t] for t in inserted}
            estimates = self.estimates
            lost = {k >> _SHIFT for k in removed} if kept is not adds else set()
            ps = list(map(and_, adds, repeat(_LOW)))
            for t in compress(counts, map(le, repeat(small), counts.values())):
                c = counts[t]
                pending = estimates[t]
                if t in lost and c > pending * 3 // 4:
                    return None  # its capacity depends on when it lost the partition
                if c >= 9:
                    group = [p for p, t2 in zip(ps, ts, strict=True) if t2 == t]
                    if not _safe_adds(group, pending):
                        return None
                masks[t] = grown_capacity(pending, c) - 1
        if kept is not adds:
            ts = list(map(rshift, kept, repeat(_SHIFT)))
            if len(set(ts)) != z:
                return None  # a set emptied: its topic left the map
        ps = list(map(and_, kept, repeat(_LOW)))
        if max(ps) >= 65536:
            return None
        keys = list(
            map(
                or_,
                map(rank.__getitem__, ts),
                map(and_, ps, map(masks.__getitem__, ts)),
            )
        )
        order = sorted(range(len(keys)), key=keys.__getitem__)
        return list(
            map(
                getitem,
                map(tables.__getitem__, map(ts.__getitem__, order)),
                map(ps.__getitem__, order),
            )
        )

    def _fresh_batch(self, positions: list[int]) -> dict[int, Pairs]:
        """:meth:`_fresh` of many members at once, with numpy.

        Done for the members whose changes are additions only, of partitions below 65536, at
        most 8 per topic, into a map no bin of which can have held 8 topics (the others are
        left out of the answer, for :meth:`_fresh`). The changes are grouped by (member,
        topic): each member's sets, each set's additions in order. A member's answer is its
        sets in the order of its map (by bin, a later insertion first within a bin), each
        set's partitions by bin, then in order of addition, as there."""
        k = len(positions)
        n_topics = len(self.topics.counts)
        if k < _BATCH_MIN or n_topics >= 1 << 15:
            return {}
        g = self.g
        # their changes, in the order of :attr:`changes` (each member's in order); a member
        # that removed a partition or added one from 65536 on is left to _fresh
        all_members, all_changes = self.changes
        local = np.full(len(self.events), -1, dtype=np.int64)
        local[positions] = np.arange(k)
        mem = local[all_members]
        ok = np.ones(k + 1, dtype=bool)  # the last one: every other member
        ok[mem[(all_changes < 0) | (all_changes & _LOW >= 65536)]] = False
        ok[k] = False
        taken = ok[mem]
        ok = ok[:k]
        if not taken.all():
            mem = mem[taken]
            flat = all_changes[taken]
        else:
            flat = all_changes
        total = len(flat)
        if not total:
            return {}
        lens = np.bincount(mem, minlength=k)
        # topics by their order in assign_remaining: then each member's sets come in order of
        # insertion, unless a later change inserted one
        rank_of = self.hand_out_ranks
        ts = flat >> _SHIFT
        by_pair = _stable_order(mem, rank_of[ts], n_topics)
        mem = mem[by_pair]
        ts = ts[by_pair]
        ps = flat[by_pair] & _LOW
        heads = np.ones(total, dtype=bool)
        heads[1:] = (mem[1:] != mem[:-1]) | (ts[1:] != ts[:-1])
        head_at = np.flatnonzero(heads)
        pair_of = np.cumsum(heads) - 1  # each change's set
        first = by_pair[head_at]  # each set's first change (computeIfAbsent inserting it)
        adds = np.diff(np.append(head_at, total))
        pm = mem[head_at]
        pt = ts[head_at]
        z = np.bincount(pm, minlength=k)
        pair_heads = np.zeros(k + 1, np.int64)
        np.cumsum(z, out=pair_heads[1:])
        # insertion index of each topic in its member's map (first computeIfAbsent)
        j = np.arange(len(pm)) - pair_heads[pm]
        if not ((first[1:] > first[:-1]) | (pm[1:] != pm[:-1])).all():
            inserted = np.argsort(pm * total + first)
            j[inserted] = np.arange(len(pm)) - pair_heads[pm[inserted]]
        last = np.full(k, -1, dtype=np.int64)
        np.maximum.at(last, mem, by_pair)
        # new HashMap<>(0): the capacity holding z - 1 keys, grown once more by a call after
        # the last insertion
        if int(z.max()) > len(_CIA_CAPACITIES):
            return {}
        z_some = np.maximum(z, 1)  # a member left out has none
        caps = np.array(_CIA_CAPACITIES, np.int64)[z_some - 1]
        inserting = np.full(k, -1, dtype=np.int64)
        np.maximum.at(inserting, pm, first)
        later = inserting < last
        caps = np.where(later & (z > caps * 3 // 4), caps * 2, caps)
        spreads = np.array(self.topics.spreads, np.int64)[pt]
        # a map no bin of which may have reached 8 keys while it had fewer bins
        roomy = np.fromiter(
            (self._roomy(g.subscription(g.order[pos])) for pos in positions), bool, k
        )
        suspect = ok & ~roomy & (z >= _CIA_LIMIT)
        level = 16
        while suspect.any() and level <= int(caps[suspect].max()):
            held = np.minimum(z, level * 3 // 4 + 1)
            check = suspect & (caps >= level) & (held >= _CIA_LIMIT)
            sel = check[pm] & (j < held[pm])
            ok[_at_least(pm[sel] * level + (spreads[sel] & (level - 1)), _CIA_LIMIT) // level] = (
                False
            )
            suspect &= ok
            level *= 2
        # by bin of the map, a later insertion first within a bin
        by_bin = np.argsort(pm << 32 | (spreads & (caps[pm] - 1)) << 12 | (4095 - j))
        # each set: new HashSet<>(estimate), grown by its additions, which it iterates by
        # bin if they span fewer than 8 tables of the estimate (else: _fresh)
        estimates = self.estimates
        est = np.zeros(n_topics, np.int64)
        est[list(estimates)] = list(estimates.values())
        set_caps = est[pt]
        many = adds >= _SET_BIN_LIMIT
        if many.any():
            lo = np.minimum.reduceat(ps, head_at)
            hi = np.maximum.reduceat(ps, head_at)
            # no bin of a table of 16 or more bins holds 9 of a span of fewer than 8 tables
            doubt = many & (hi - lo >= (_SET_BIN_LIMIT - 1) * np.maximum(set_caps, 16))
            if doubt.any():
                self._unsafe_sets(doubt, pair_of, head_at, ps, adds, set_caps, pm, ok)
        growing = adds > set_caps * 3 // 4
        while growing.any():
            set_caps = np.where(growing, set_caps * 2, set_caps)
            growing = adds > set_caps * 3 // 4
        # each set's partitions by bin (stable: in order of addition)
        multi = (adds > 1)[pair_of]
        if multi.any():
            several = np.flatnonzero(multi)
            bins = pair_of[several] << 16 | (ps[several] & (set_caps - 1)[pair_of[several]])
            ps[several] = ps[several[np.argsort(bins, kind="stable")]]
        # the sets in the order of their maps
        kept = by_bin[ok[pm[by_bin]]]
        sizes = adds[kept]
        gather = np.arange(int(sizes.sum())) + np.repeat(
            head_at[kept] - (np.cumsum(sizes) - sizes), sizes
        )
        ordered_topics = ts[gather]
        ordered_parts = ps[gather]
        stops = np.cumsum(lens[ok]).tolist()
        return {
            pos: _tuple_new(Pairs, (ordered_topics, ordered_parts, stop - n, stop))
            for pos, n, stop in zip(
                compress(positions, ok.tolist()), lens[ok].tolist(), stops, strict=True
            )
        }

    @cached_property
    def hand_out_ranks(self) -> _Ints:
        """Per topic index, its place in :meth:`assign_remaining`'s order (the topics it
        handed nothing of after those)."""
        order = sorted(self.subscribers, key=self.topic_key)
        others = set(range(len(self.topics.counts))).difference(order)
        ranks = np.empty(len(self.topics.counts), dtype=np.int64)
        ranks[[*order, *others]] = np.arange(len(ranks))
        return ranks

    @staticmethod
    def _unsafe_sets(
        doubt: np.ndarray[Any, np.dtype[np.bool_]],
        pair_of: _Ints,
        head_at: _Ints,
        ps: _Ints,
        adds: _Ints,
        set_caps: _Ints,
        pm: _Ints,
        ok: np.ndarray[Any, np.dtype[np.bool_]],
    ) -> None:
        """:func:`~assign_core.javacompat.hashmap.adds_iterate_by_bin` of the sets in
        ``doubt`` (``_put_only_safe``): clears ``ok`` of a member with a set a bin of which
        held 9 partitions while the set had some capacity. The changes are grouped by set
        (``pair_of``), in order of addition."""
        chosen = np.flatnonzero(doubt[pair_of])
        set_of = pair_of[chosen]
        nth = chosen - head_at[set_of]  # addition index
        n = adds[set_of]
        base = set_caps[set_of]
        parts = ps[chosen]
        top = int(base.max())
        while int(n.max()) > top * 3 // 4:
            top *= 2
        level = 16
        while level <= top:
            held = np.minimum(n, level * 3 // 4 + 1)  # keys present while it had `level` bins
            check = (
                (level >= base)
                & ((level == base) | ((level // 2) * 3 // 4 + 1 < n))
                & (held >= _SET_BIN_LIMIT)
                & (nth < held)
            )
            full = _at_least(set_of[check] * level + (parts[check] & (level - 1)), _SET_BIN_LIMIT)
            ok[pm[full // level]] = False
            level *= 2

    def _replay(
        self, pos: int, i: int, ev: list[int], lists: TopicPartitionLists
    ) -> list[TopicPartition]:
        """Apply the changes to the ``deepCopyAssignment`` of the current assignment, on the
        map model and each set's list of calls."""
        base = self.olds(i)
        model = MapModel(self.topics, table_size_for(len(base)))
        calls: dict[int, list[int]] = {}
        pending: dict[int, int] = {}
        live: dict[int, set[int]] = {}
        for o in base:
            model.put(o.topic)
            calls[o.topic] = list(o.partitions)
            pending[o.topic] = hashset_copy_capacity(len(o.partitions))
            live[o.topic] = set(o.partitions)
        for t in self.dropped.get(pos, ()):
            model.remove(t)
            del live[t]
        estimate = self.estimates
        grown = False  # the map's size changed since its last computeIfAbsent
        for e in ev:
            if e >= 0:
                t = e >> _SHIFT
                p = e & _LOW
                members = live.get(t)
                if members is None:
                    model.compute_if_absent(t)
                    members = live[t] = set()
                    calls[t] = []
                    pending[t] = estimate[t]
                    grown = True
                elif grown:
                    model.compute_if_absent(t)  # may resize, lazily
                    grown = False
                if p not in members:
                    members.add(p)
                    calls[t].append(p)
            else:
                e = ~e
                t = e >> _SHIFT
                p = e & _LOW
                members = live.get(t)
                if members is not None and p in members:
                    members.discard(p)
                    calls[t].append(~p)
                    if not members:
                        model.remove(t)
                        del live[t]
        out: list[TopicPartition] = []
        for t in model.order():
            out += lists.of(t, int_set_order(pending[t], calls[t]))
        return out


def _beyond(topics: TopicTable, ts: list[int], parts: Sequence[int]) -> AssignmentError:
    names = ", ".join(topics.names[t] for t in ts)
    return AssignmentError(
        f"a current assignment of {names} names a partition beyond the topic's partitions "
        f"(max {max(parts)}; Java: ArrayIndexOutOfBoundsException)"
    )


def _served(levels: _Ints, count: int) -> _Ints:
    """Which of the subscribers sorted by size (``levels``, ascending) receive ``count``
    partitions, in turn, as indices into them: round ``r`` serves the prefix of those whose
    size was at most ``levels[0] + r``, until the partitions run out."""
    s = len(levels)
    base = int(levels[0])
    rounds = min(int(levels[-1]) - base + 1, count)  # from the last of these on, all of them
    widths = np.searchsorted(levels, np.arange(base, base + rounds), side="right")
    served = np.cumsum(widths)
    if served[-1] >= count:
        end = int(np.searchsorted(served, count))
        widths = widths[: end + 1]
        widths[-1] -= served[end] - count
    else:
        full, rest = divmod(count - int(served[-1]), s)
        widths = np.concatenate(
            [widths, np.full(full, s, dtype=np.int64), np.full(int(rest > 0), rest, dtype=np.int64)]
        )
    starts = np.cumsum(widths) - widths
    return np.arange(count) - np.repeat(starts, widths)


def _at_least(values: _Ints, times: int) -> _Ints:
    """The values found at least ``times`` times in ``values`` (some more than once)."""
    ordered = np.sort(values)
    found: _Ints = ordered[times - 1 :][ordered[times - 1 :] == ordered[: len(ordered) - times + 1]]
    return found


def _stable_order(major: _Ints, minor: _Ints, minors: int) -> _Ints:
    """``np.argsort(major * minors + minor, kind="stable")``, in two radix sorts when both
    fit 16 bits."""
    if minors <= 1 << 16 and (not len(major) or int(major.max()) < 1 << 16):
        by_minor = np.argsort(minor.astype(np.uint16), kind="stable")
        order: _Ints = by_minor[np.argsort(major[by_minor].astype(np.uint16), kind="stable")]
        return order
    return np.argsort(major * minors + minor, kind="stable")


def _cia_capacity(size: int) -> int:
    """The least capacity of ``new HashMap<>(0)``'s doubling chain holding ``size`` keys."""
    cap = 1
    while size > cap * 3 // 4:
        cap *= 2
    return cap


#: From this many members that owned nothing, :meth:`_Hetero._fresh_batch` orders them.
_BATCH_MIN = 4
#: ``_cia_capacity(size)`` for the sizes of a member's map.
_CIA_CAPACITIES = [_cia_capacity(size) for size in range(1 << 12)]

#: rank << 32, the high part of the sort keys of ``_Hetero._fresh``
_RANKS = [r << _SHIFT for r in range(1 << 16)]


def _no_full_bin(spreads: list[int], cap: int, limit: int) -> bool:
    bins = sorted(map((cap - 1).__and__, spreads))
    return not any(map(eq, bins, bins[limit - 1 :]))


def _safe_adds(partitions: list[int], pending: int) -> bool:
    """Adding ``partitions`` to a fresh ``HashSet<>(pending)`` iterates them by bin of its
    final table."""
    if adds_iterate_by_bin(pending, partitions):
        return True
    return int_set_order(pending, partitions) == sorted(
        partitions, key=(grown_capacity(pending, len(partitions)) - 1).__and__
    )


def _heterogeneous(g: ServerGroup, olds: _Olds) -> _Hetero | None:
    h = _Hetero(g, olds)
    if not h.subscribers:
        return None
    h.revoke()
    h.assign_remaining()
    h.balance()
    return h
