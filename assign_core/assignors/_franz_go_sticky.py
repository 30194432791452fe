"""franz-go's sticky balancer (``pkg/kgo/internal/sticky``, franz-go 1.22), written anew.

Its steps, in franz-go's order:

1. number the topics in the order the leader's ``map[string]int32`` of partition counts is
   iterated, each topic's partitions consecutively (a *partNum*);
2. read every member's claims: a partition claimed twice goes to the higher generation, the
   other claimant is kept as *stale*; a claim of an unknown topic or partition is skipped;
3. drop claims of topics the member no longer subscribes to; give a stale partition back to
   its older claimant when it now sits on a member holding two more (the stales in the
   order their Go map iterates, which decides when the moves depend on each other);
4. deal the unassigned partitions, by partNum, to the least loaded subscriber (a binary
   heap of members sifted down after each deal: its ties fall as the heap lies);
5. balance: with uniform subscriptions move partitions from the top load level to the
   bottom one (a member gives its last partition, ordered by partition then topic); else
   let each member of the lowest level steal along the shortest path of a steal graph;
6. repair (non-uniform subscriptions only): cycle cancelling over a table of members by
   subscription classes, so that as many partitions as possible stay where they were.

Go randomises each map's iteration order on every run: :class:`MapOrder` makes the two
choices (the topic order, and which outcome of step 3), :func:`map_orders` enumerates them.
Racks are not used (franz-go uses them only with its ``BalanceRacks`` option).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from assign_core.model import TopicPartition

#: A partition nobody holds (franz-go's ``unassignedPart``).
_NONE = -1
_HIGH_BIT = 1 << 31
_UNSET = -1
_NO_DROP = 1 << 62
_MAX_INT32 = (1 << 31) - 1


_T = TypeVar("_T")


#: At most this many states of the re-sticking of doubly claimed partitions are explored
#: (:meth:`_Balancer.resticky_outcomes`); beyond, the outcomes found so far are the options.
RESTICKY_STATES = 4096


@dataclass(slots=True)
class MapOrder:
    """How the choices that follow a Go map's iteration order are made: the ``k``-th choice
    among more than one option takes ``script[k]`` of them (in the order given); past the
    script a random one when ``rng`` is given, else the first. ``options`` records each
    choice's number of options; ``partial`` is set when a choice's options could not all be
    found. ``memo`` keeps what runs over the same input share (the re-sticking outcomes by
    topic order)."""

    script: Sequence[int] = ()
    rng: random.Random | None = None
    options: list[int] = field(default_factory=list)
    partial: bool = False
    memo: dict[object, object] = field(default_factory=dict)

    def choose(self, n: int) -> int:
        if n <= 1:
            return 0
        k = len(self.options)
        self.options.append(n)
        if k < len(self.script):
            return self.script[k]
        return 0 if self.rng is None else self.rng.randrange(n)

    def order(self, keys: Sequence[_T]) -> list[_T]:
        """``keys`` in an iteration order: each next key one of those left."""
        left, out = list(keys), []
        while left:
            out.append(left.pop(self.choose(len(left))))
        return out


def map_orders(compute: Callable[[MapOrder], _T], limit: int) -> tuple[list[_T], bool]:
    """``compute``'s distinct answers over the map orders, the first with every key in the
    order given, from at most ``limit`` runs; and whether those were all the orders. Every
    order is tried while there are at most ``limit``; beyond, the rest of the budget goes to
    random orders (a fixed seed, so the same input gives the same answers)."""
    answers: list[_T] = []
    runs = 0

    def run(order: MapOrder) -> None:
        nonlocal runs
        runs += 1
        answer = compute(order)
        if answer not in answers:
            answers.append(answer)

    pending: list[tuple[int, ...]] = [()]
    partial = False
    memo: dict[object, object] = {}
    while pending and runs + len(pending) <= limit:
        script = pending.pop(0)
        order = MapOrder(script=script, memo=memo)
        run(order)
        partial = partial or order.partial
        made = order.options
        for k in range(len(script), len(made)):
            prefix = script + (0,) * (k - len(script))
            pending.extend((*prefix, i) for i in range(1, made[k]))
    if not pending:
        return answers, not partial
    rng = random.Random(0)
    while runs < limit:
        run(MapOrder(rng=rng, memo=memo))
    return answers, False


@dataclass(frozen=True, slots=True)
class Claimant:
    """One member as the balancer reads it: its subscription (franz-go sorts it), its claims
    in order, and the generation of the claims (``<= 0`` all count as 0)."""

    member_id: str
    topics: tuple[str, ...]
    claims: tuple[TopicPartition, ...]
    generation: int


@dataclass(slots=True)
class _Level:
    """Members holding ``level`` partitions, in franz-go's list order."""

    level: int
    members: list[int] = field(default_factory=list)

    def remove(self, member: int) -> None:
        ms = self.members
        for i, v in enumerate(ms):
            if v == member:
                ms[i] = ms[-1]
                ms.pop()
                return


def _swap_remove(parts: list[int], needle: int) -> None:
    at = 0
    for i, p in enumerate(parts):
        if p == needle:
            at = i
            break
    parts[at] = parts[-1]
    parts.pop()


class _Heap:
    """Members ordered by load, sifted down only (franz-go's ``membersByPartitions``)."""

    def __init__(self, members: list[int], plan: list[list[int]]) -> None:
        self.members = members
        self.plan = plan
        n = len(members)
        for i in range(n // 2 - 1, -1, -1):
            self._down(i, n)

    def fix0(self) -> None:
        self._down(0, len(self.members))

    def _down(self, node: int, n: int) -> None:
        ms, plan = self.members, self.plan
        while True:
            left = 2 * node + 1
            if left >= n:
                return
            swap, swap_len = left, len(plan[ms[left]])
            right = left + 1
            if right < n and len(plan[ms[right]]) < swap_len:
                swap, swap_len = right, len(plan[ms[right]])
            if len(plan[ms[node]]) <= swap_len:
                return
            ms[node], ms[swap] = ms[swap], ms[node]
            node = swap


class _Balancer:
    def __init__(
        self,
        members: Sequence[Claimant],
        topic_order: Sequence[tuple[str, int]],
        map_order: MapOrder,
    ):
        self.members = members
        self.map_order = map_order
        self.topic_nums: dict[str, int] = {}
        self.bases: list[int] = []
        self.counts: list[int] = []
        self.names: list[str] = []
        self.owners: list[int] = []  # partNum -> topicNum
        for t, n in topic_order:
            self.topic_nums[t] = len(self.names)
            self.bases.append(len(self.owners))
            self.counts.append(n)
            self.names.append(t)
            self.owners.extend([len(self.names) - 1] * n)
        self.plan: list[list[int]] = [[] for _ in members]
        self.stales: dict[int, int] = {}
        self.levels: dict[int, _Level] = {}
        self.complex = False
        self.subscribers: list[list[int]] = []
        self.orig: list[int] = []

    # -- 2. claims
    def parse_claims(self) -> None:
        n = len(self.owners)
        new_m, old_m, new_g, old_g = [0] * n, [0] * n, [0] * n, [0] * n
        for num, member in enumerate(self.members):
            gen = (member.generation if member.generation > 0 else 0) | _HIGH_BIT
            for topic, partition in member.claims:
                t = self.topic_nums.get(topic)
                if t is None or partition < 0 or partition >= self.counts[t]:
                    continue
                p = self.bases[t] + partition
                if gen > new_g[p]:
                    old_m[p], old_g[p] = new_m[p], new_g[p]
                    new_m[p], new_g[p] = num, gen
                elif gen > old_g[p]:
                    old_m[p], old_g[p] = num, gen
        for p in range(n):
            if new_g[p] & _HIGH_BIT:
                self.plan[new_m[p]].append(p)
                if old_g[p] & _HIGH_BIT:
                    self.stales[p] = old_m[p]

    # -- 3., 4.
    def assign_unassigned(self) -> list[int]:
        potentials: list[list[int]] = [[] for _ in self.names]
        subs: list[set[int]] = []
        for num, member in enumerate(self.members):
            mine: set[int] = set()
            for topic in member.topics:
                t = self.topic_nums.get(topic)
                if t is None or t in mine:
                    continue
                mine.add(t)
                potentials[t].append(num)
            subs.append(mine)
        self.subscribers = potentials
        self.complex = any(len(ps) != len(self.members) for ps in potentials)

        owner = [_NONE] * len(self.owners)
        orig = [_NONE] * len(self.owners)
        for num in range(len(self.plan)):
            keep = [p for p in self.plan[num] if self.owners[p] in subs[num]]
            self.plan[num] = keep
            for p in keep:
                owner[p] = orig[p] = num

        if self.stales:
            outcomes = self.resticky_outcomes(potentials, owner)
            self.plan, owner = outcomes[self.map_order.choose(len(outcomes))]
            for p, last in self.stales.items():
                if owner[p] == last:
                    orig[p] = last
        self.orig = orig

        if not self.complex and potentials:
            heap = _Heap(potentials[0], self.plan)  # in place, as franz-go
            for p in range(len(owner)):
                if owner[p] != _NONE:
                    continue
                chosen = heap.members[0]
                self.plan[chosen].append(p)
                heap.fix0()
                owner[p] = chosen
        else:
            heap_topic = -1
            current_heap: _Heap | None = None
            for p in range(len(owner)):
                if owner[p] != _NONE:
                    continue
                t = self.owners[p]
                if not potentials[t]:
                    continue
                if t != heap_topic or current_heap is None:
                    heap_topic = t
                    current_heap = _Heap(list(potentials[t]), self.plan)
                chosen = current_heap.members[0]
                self.plan[chosen].append(p)
                current_heap.fix0()
                owner[p] = chosen
        return owner

    def _resticky(
        self,
        p: int,
        last: int,
        potentials: list[list[int]],
        plan: list[list[int]],
        owner: list[int],
    ) -> bool:
        """Give stale ``p`` back to its older claimant ``last`` if it may take it and ``p`` is
        unassigned or on a member holding two more; whether it moved."""
        if last not in potentials[self.owners[p]]:
            return False
        current = owner[p]
        if current != _NONE:
            if len(plan[last]) + 1 >= len(plan[current]):
                return False
            _swap_remove(plan[current], p)
        plan[last].append(p)
        owner[p] = last
        return True

    def resticky_outcomes(
        self, potentials: list[list[int]], owner: list[int]
    ) -> list[tuple[list[list[int]], list[int]]]:
        """The distinct (plan, owner) the re-sticking of the doubly claimed partitions may
        leave, over the orders franz-go's map of them may iterate in; the one of ascending
        partitions first. A search over the states (partitions done, plan), each state once;
        beyond :data:`RESTICKY_STATES` the outcomes found so far (``map_order.partial``).
        With uniform subscriptions the order within a member's list never matters (it is
        sorted before anything is taken from it), so plans that differ only there are one."""
        memo_key = ("resticky", tuple(self.names))
        known = cast(
            "tuple[list[tuple[list[list[int]], list[int]]], bool] | None",
            self.map_order.memo.get(memo_key),
        )
        if known is not None:
            found_outcomes, partial = known
            self.map_order.partial = self.map_order.partial or partial
            return [([list(parts) for parts in plan], list(o)) for plan, o in found_outcomes]
        outcomes = self._search_outcomes(potentials, owner)
        self.map_order.memo[memo_key] = (
            [([list(parts) for parts in plan], list(o)) for plan, o in outcomes],
            self.map_order.partial,
        )
        return outcomes

    def _search_outcomes(
        self, potentials: list[list[int]], owner: list[int]
    ) -> list[tuple[list[list[int]], list[int]]]:
        stales = sorted(self.stales.items())
        outcomes: list[tuple[list[list[int]], list[int]]] = []
        found: set[tuple[tuple[int, ...], ...]] = set()
        seen: set[tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]] = set()
        stack = [(tuple(range(len(stales))), self.plan, owner)]
        while stack:
            left, plan, owned = stack.pop()
            key = tuple(tuple(parts if self.complex else sorted(parts)) for parts in plan)
            if (left, key) in seen:
                continue
            if len(seen) >= RESTICKY_STATES:
                self.map_order.partial = True
                break
            seen.add((left, key))
            if not left:
                if key not in found:
                    found.add(key)
                    outcomes.append((plan, owned))
                continue
            for i in reversed(left):  # the lowest partition popped first
                next_plan = [list(parts) for parts in plan]
                next_owner = list(owned)
                p, last = stales[i]
                self._resticky(p, last, potentials, next_plan, next_owner)
                stack.append((tuple(j for j in left if j != i), next_plan, next_owner))
        return outcomes

    # -- levels
    def _find_level(self, level: int) -> _Level:
        found = self.levels.get(level)
        if found is None:
            found = self.levels[level] = _Level(level)
        return found

    def _fix_member_level(self, old: int, member: int) -> None:
        item = self.levels[old]
        item.remove(member)
        if not item.members:
            del self.levels[old]
        self._find_level(len(self.plan[member])).members.append(member)

    # -- 5.
    def balance(self, owner: list[int]) -> None:
        for num, parts in enumerate(self.plan):
            self._find_level(len(parts)).members.append(num)
        if self.complex:
            self._balance_complex(owner)
            return
        lo = self.levels[min(self.levels)]
        hi = self.levels[max(self.levels)]
        if hi.level <= lo.level + 1:
            return
        for parts in self.plan:
            if len(parts) > lo.level + 1:
                parts.sort(
                    key=lambda p: (p - self.bases[self.owners[p]], self.names[self.owners[p]])
                )
        while hi.level > lo.level + 1:
            pairs = min(len(lo.members), len(hi.members))
            for i in range(pairs):
                self.plan[lo.members[i]].append(self.plan[hi.members[i]].pop())
            up = self._find_level(lo.level + 1)
            down = self._find_level(hi.level - 1)
            up.members.extend(lo.members[:pairs])
            down.members.extend(hi.members[:pairs])
            lo.members = lo.members[pairs:]
            hi.members = hi.members[pairs:]
            if not lo.members:
                del self.levels[lo.level]
                lo = self.levels[min(self.levels)]
            if not hi.members:
                del self.levels[hi.level]
                hi = self.levels[max(self.levels)]

    def _balance_complex(self, owner: list[int]) -> None:
        graph = _StealGraph(self, owner)
        while len(self.levels) > 1:
            level = self.levels[min(self.levels)]
            hi = self.levels[max(self.levels)]
            if hi.level <= level.level + 1:
                return
            while level.members:
                member = level.members[0]
                path = graph.find_steal(member)
                if path is not None:
                    for src, dst, p in path:
                        self._reassign(graph, src, dst, p)
                    if not hi.members:
                        break
                    continue
                level.remove(member)
                if not level.members:
                    del self.levels[min(self.levels)]

    def _reassign(self, graph: _StealGraph, src: int, dst: int, p: int) -> None:
        old_src, old_dst = len(self.plan[src]), len(self.plan[dst])
        _swap_remove(self.plan[src], p)
        self.plan[dst].append(p)
        self._fix_member_level(old_src, src)
        self._fix_member_level(old_dst, dst)
        graph.change_owner(p, dst)

    # -- 6.
    def repair(self) -> None:
        if not self.complex:
            return
        _Repair(self).run()

    def lists(self) -> list[list[TopicPartition]]:
        out = []
        for parts in self.plan:
            tps = [
                TopicPartition(self.names[self.owners[p]], p - self.bases[self.owners[p]])
                for p in parts
            ]
            tps.sort(key=lambda tp: (tp.topic.encode(), tp.partition))
            out.append(tps)
        return out


class _StealGraph:
    """Members and the topics each may steal from (franz-go's ``graph``)."""

    def __init__(self, b: _Balancer, owner: list[int]) -> None:
        self.b = b
        self.owner = owner
        self.out: list[list[int]] = [[] for _ in b.members]
        for t, potentials in enumerate(b.subscribers):
            for m in potentials:
                self.out[m].append(t)
        # topic -> [(member, parts)] in order of first ownership; entries never removed
        self.topic_owners: list[list[tuple[int, list[int]]]] = [[] for _ in b.names]
        self.at: dict[tuple[int, int], int] = {}
        self.pos = [0] * len(owner)
        for p, m in enumerate(owner):
            if m != _NONE:
                self._add(p, m)

    def _parts(self, t: int, m: int) -> list[int]:
        i = self.at.get((t, m))
        if i is None:
            i = self.at[(t, m)] = len(self.topic_owners[t])
            self.topic_owners[t].append((m, []))
        return self.topic_owners[t][i][1]

    def _add(self, p: int, m: int) -> None:
        parts = self._parts(self.b.owners[p], m)
        self.pos[p] = len(parts)
        parts.append(p)

    def _remove(self, p: int, m: int) -> None:
        parts = self._parts(self.b.owners[p], m)
        i = self.pos[p]
        parts[i] = parts[-1]
        self.pos[parts[i]] = i
        parts.pop()

    def change_owner(self, p: int, dst: int) -> None:
        self._remove(p, self.owner[p])
        self.owner[p] = dst
        self._add(p, dst)

    def find_steal(self, start: int) -> list[tuple[int, int, int]] | None:
        """Dijkstra from ``start`` to the first member two levels above it, the highest
        level first: the moves (src, dst, partNum) from the far end back."""
        plan = self.b.plan
        first_level = len(plan[start])
        # node -> (level, distance, parent, edge)
        scores: dict[int, tuple[int, int, int, int]] = {start: (first_level, 0, -1, -1)}
        heap = [(-first_level, 0, start)]
        while heap:
            neg_level, distance, node = heapq.heappop(heap)
            if -neg_level > first_level + 1:
                path: list[tuple[int, int, int]] = []
                while True:
                    _, _, parent, edge = scores[node]
                    if parent < 0:
                        return path
                    path.append((node, parent, edge))
                    node = parent
            for t in self.out[node]:
                for m, parts in self.topic_owners[t]:
                    if not parts or m in scores:
                        continue
                    level = len(plan[m])
                    scores[m] = (level, distance + 1, node, parts[0])
                    heapq.heappush(heap, (-level, distance + 1, m))
        return None


@dataclass(slots=True)
class _Cell:
    row: int
    member: int
    x: int = 0
    held: int = 0
    add: int = 0
    drop: int = 0

    def reprice(self) -> None:
        self.add = 1 if self.x >= self.held else 0
        self.drop = -1 if self.x > self.held else 0
        if self.x == 0:
            self.drop = _NO_DROP

    def room(self, delta: int) -> int:
        if delta > 0:
            return self.held - self.x if self.x < self.held else _MAX_INT32
        return self.x - self.held if self.x > self.held else self.x


class _Repair:
    """Cycle cancelling on the members-by-classes table (franz-go's ``repairAssignment``),
    without racks: one row per class of topics with the same subscribers."""

    def __init__(self, b: _Balancer) -> None:
        self.b = b
        classes: dict[frozenset[int], int] = {}
        self.class_of = [
            classes.setdefault(frozenset(subs), len(classes)) for subs in b.subscribers
        ]
        self.nrows = len(classes)
        member_classes: list[set[int]] = [set() for _ in b.members]
        for t, subs in enumerate(b.subscribers):
            for m in subs:
                member_classes[m].add(self.class_of[t])
        self.member_classes = [sorted(c) for c in member_classes]
        slots: list[_Cell] = []
        self.slot_start: list[int] = []
        for m, mine in enumerate(self.member_classes):
            self.slot_start.append(len(slots))
            slots.extend(_Cell(row=c, member=m) for c in mine)
        self.crossed = False
        for m, parts in enumerate(b.plan):
            for p in parts:
                if b.orig[p] != _NONE and b.orig[p] != m:
                    self.crossed = True
                s = self._slot(p, m)
                if s >= 0:
                    slots[s].x += 1
        for p, orig in enumerate(b.orig):
            if orig != _NONE:
                s = self._slot(p, orig)
                if s >= 0:
                    slots[s].held += 1
        row_total = [0] * self.nrows
        for c in slots:
            row_total[c.row] += c.x
        self.cell_at: list[int] = []
        self.cells: list[_Cell] = []
        for c in slots:
            if row_total[c.row] > 0:
                self.cell_at.append(len(self.cells))
                c.reprice()
                self.cells.append(c)
            else:
                self.cell_at.append(-1)

    def _slot(self, p: int, m: int) -> int:
        cls = self.class_of[self.b.owners[p]]
        mine = self.member_classes[m]
        try:
            return self.slot_start[m] + mine.index(cls)
        except ValueError:
            return -1

    def run(self) -> None:
        if not self.cells:
            return
        loads = [0] * len(self.b.members)
        for c in self.cells:
            loads[c.member] += c.x
        moved = False
        while cycles := self._find(loads):
            moved = True
            for steps, shifts in cycles:
                n = 1
                if not shifts:
                    n = _MAX_INT32
                    for cell, delta in steps:
                        n = min(n, self.cells[cell].room(delta))
                for cell, delta in steps:
                    c = self.cells[cell]
                    c.x += delta * n
                    c.reprice()
                    loads[c.member] += delta * n
        if not moved and not self.crossed:
            return
        self._realize()

    def _find(self, loads: list[int]) -> list[tuple[list[tuple[int, int]], bool]]:
        """Bellman-Ford from every node at once; the price-lowering cycles found, disjoint."""
        nrows, nmembers = self.nrows, len(self.b.members)
        top = max(loads) if loads else 0
        level_at = [_UNSET] * (top + 2)
        nodes = nrows + nmembers
        for load in loads:
            if load > 0 and level_at[load] == _UNSET:
                level_at[load] = nodes
                nodes += 1
        dist = [0] * nodes
        via_cell = [_UNSET] * nodes
        via_from = [_UNSET] * nodes
        for _ in range(nodes):
            moved = False
            for i, c in enumerate(self.cells):
                r, m = c.row, nrows + c.member
                d = dist[r] + c.add
                if d < dist[m]:
                    dist[m], via_cell[m], via_from[m] = d, i, r
                    moved = True
                d = dist[m] + c.drop
                if d < dist[r]:
                    dist[r], via_cell[r], via_from[r] = d, i, m
                    moved = True
            for mem in range(nmembers):
                node = nrows + mem
                take = level_at[loads[mem] + 1]
                if take != _UNSET and dist[node] < dist[take]:
                    dist[take], via_cell[take], via_from[take] = dist[node], _UNSET, node
                    moved = True
                if loads[mem] > 0:
                    shed = level_at[loads[mem]]
                    if dist[shed] < dist[node]:
                        dist[node], via_cell[node], via_from[node] = dist[shed], _UNSET, shed
                        moved = True
            if not moved:
                return []
            roots = self._on_cycles(via_from, nodes)
            if roots:
                return [self._extract(at, via_cell, via_from) for at in roots]
        return []

    @staticmethod
    def _on_cycles(via_from: list[int], nodes: int) -> list[int]:
        seen = [_UNSET] * nodes
        roots = []
        for start in range(nodes):
            if seen[start] != _UNSET:
                continue
            node = start
            while node != _UNSET and seen[node] == _UNSET:
                seen[node] = start
                node = via_from[node]
            if node != _UNSET and seen[node] == start:
                roots.append(node)
        return roots

    def _extract(
        self, at: int, via_cell: list[int], via_from: list[int]
    ) -> tuple[list[tuple[int, int]], bool]:
        steps: list[tuple[int, int]] = []
        shifts = False
        nrows, nmembers = self.nrows, len(self.b.members)
        node = at
        while True:
            if node >= nrows + nmembers:
                shifts = True
            elif via_cell[node] == _UNSET:
                pass
            elif node >= nrows:
                steps.append((via_cell[node], 1))
            else:
                steps.append((via_cell[node], -1))
            node = via_from[node]
            if node == at:
                return steps, shifts

    def _realize(self) -> None:
        b = self.b
        need = [c.x for c in self.cells]
        piles: list[list[int]] = [[] for _ in range(self.nrows)]
        every = [p for parts in b.plan for p in parts]
        for parts in b.plan:
            parts.clear()
        for p in every:
            orig = b.orig[p]
            if orig != _NONE:
                s = self._slot(p, orig)
                at = self.cell_at[s] if s >= 0 else -1
                if at >= 0 and need[at] > 0:
                    need[at] -= 1
                    b.plan[orig].append(p)
                    continue
            piles[self.class_of[b.owners[p]]].append(p)
        for i, c in enumerate(self.cells):
            b.plan[c.member].extend(piles[c.row][: need[i]])
            piles[c.row] = piles[c.row][need[i] :]


def member_order(ids: Sequence[tuple[str, str | None]]) -> list[int]:
    """Indexes of (member id, instance id) in franz-go's balancing order: static members
    first by instance id, then the others by member id (byte order); the first of a repeated
    member id only."""
    seen: set[str] = set()
    firsts = []
    for i, (member_id, _) in enumerate(ids):
        if member_id not in seen:
            seen.add(member_id)
            firsts.append(i)

    def key(i: int) -> tuple[int, bytes]:
        member_id, instance = ids[i]
        if instance is not None:
            return (0, instance.encode())
        return (1, member_id.encode())

    return sorted(firsts, key=key)


def balance(
    members: Sequence[Claimant], topics: Sequence[tuple[str, int]], map_order: MapOrder
) -> list[list[TopicPartition]]:
    """Each member's partitions (``members`` in franz-go's balancing order), each list by
    topic name then partition, as the leader's SyncGroup carries them; ``map_order`` orders
    ``topics`` and the doubly claimed partitions as the leader's Go maps iterate them."""
    if not members:
        return []
    b = _Balancer(members, map_order.order(topics), map_order)
    if not b.owners:
        return [[] for _ in members]
    b.parse_claims()
    owner = b.assign_unassigned()
    b.balance(owner)
    b.repair()
    return b.lists()
