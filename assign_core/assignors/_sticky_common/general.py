"""``GeneralAssignmentBuilder``: the sticky builder when subscriptions differ.

Members keep the owned partitions they still subscribe to; each unassigned partition (topics
by number of subscribers, then name) goes to the least loaded subscriber; partitions are then
moved off overloaded members until ``isBalanced``, and the moves are undone unless the
balance score improved.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from typing import TYPE_CHECKING

from assign_core.assignors._sticky_common.inputs import _Racks
from assign_core.assignors._sticky_common.movements import _Movements, _SortedMembers
from assign_core.assignors._sticky_common.partitions import (
    _consume,
    _Layout,
    _out_of_range_cut,
    _remove_first,
)
from assign_core.errors import AssignmentError
from assign_core.javacompat import (
    JavaHashOrder,
    capacity_for_initial,
    hash_order,
    string_hash,
)
from assign_core.model import GroupSpec, Member

if TYPE_CHECKING:  # assign imports this module
    from assign_core.assignors._sticky_common.assign import StickyState


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
