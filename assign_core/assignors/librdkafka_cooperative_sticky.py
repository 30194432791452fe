"""librdkafka's ``cooperative-sticky`` assignor (``rdkafka_sticky_assignor.c``, followed by
the cooperative adjustment of ``rdkafka_cgrp.c``).

librdkafka's sticky assignor is a port of Java's *old* ``AbstractStickyAssignor`` (before the
constrained builder): every run takes the general path. What makes its answers its own:

* **Maps iterate newest first.** librdkafka's hash map keeps its elements in a list it
  inserts at the head; setting an existing key keeps its place. Copying a map therefore
  reverses it. A member's starting list is its owned partitions in that order: newest first
  among the partitions in the order the members' owned lists first name them.
* **Ownership.** A partition claimed by two members with the *same* generation (any two
  claimers, not only the newest) is owned by nobody; otherwise the highest generation owns
  it and the next highest is its previous owner. Generations come from the subscription
  (``-1`` when absent).
* **Always "not fresh".** ``isFreshAssignment`` tests a map that holds every member, so it is
  never true: partitions are ordered by number of potential consumers (then topic, partition)
  unless all members can take the same partitions; then, round-robin from the consumer with
  the most partitions, each consumer's list is first sorted by (topic, partition) in place,
  and the partitions nobody keeps follow in map order: the leader's metadata topics last
  first, partitions descending.
* **Movements.** Undoing a move looks for the reverse pair of the partition's *current*
  owner (Java looks for its original one).

Then the cooperative adjustment (KIP-429): a partition the assignor gives to another member
than the one that owns it is withheld (:attr:`AssignmentResult.withheld`); a partition owned
but given to nobody goes back to its owner. Each member's list is: the partitions it keeps
(in the assignor's order), the ones nobody owned, then owned ones nobody was given.

The members are in JoinGroup order and the topics in the leader's metadata order
(``GroupSpec.topics`` order). Rack-aware assignment (when librdkafka's KIP-881 gate passes:
a member's rack holds replicas and not every partition has replicas on every rack) is not
reproduced: :class:`~assign_core.errors.AssignmentError`. Where librdkafka would abort on an
assertion, :class:`~assign_core.errors.AssignmentError` is raised too.

The canonical example: C1 and C2 read Order (7 partitions) and Stock (5), then C3 joins.
C3's share is first revoked from C1 and C2; with identical subscriptions the partitions to
move are taken round-robin from the front of each member's sorted list, so C3 is to get the
low Order partitions (Java's answer moves the high ones)::

    >>> from assign_core.model import GroupSpec, Member
    >>> def show(result):
    ...     for member_id, partitions in result.assignment.items():
    ...         print(" ".join([member_id, *map(str, partitions)]))
    ...     moves = [f"{tp} -> {member_id}" for tp, member_id in result.withheld.items()]
    ...     print("withheld:", ", ".join(moves) or "-")
    >>> topics = {"Order": 7, "Stock": 5}
    >>> first = LibrdkafkaCooperativeStickyAssignor().assign(GroupSpec(
    ...     topics=topics, members=tuple(Member(c, ("Order", "Stock")) for c in ("C1", "C2"))))
    >>> show(first)
    C1 Order-0 Order-2 Order-4 Order-6 Stock-1 Stock-3
    C2 Order-1 Order-3 Order-5 Stock-0 Stock-2 Stock-4
    withheld: -
    >>> members = tuple(
    ...     Member(c, ("Order", "Stock"), owned_partitions=tuple(tps), generation=1)
    ...     for c, tps in first.assignment.items()) + (Member("C3", ("Order", "Stock")),)
    >>> show(LibrdkafkaCooperativeStickyAssignor().assign(GroupSpec(topics, members)))
    C1 Order-4 Order-6 Stock-1 Stock-3
    C2 Order-5 Stock-0 Stock-2 Stock-4
    C3
    withheld: Order-1 -> C3, Order-0 -> C3, Order-3 -> C3, Order-2 -> C3
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise

from assign_core.assignors._client_common import balance_score
from assign_core.errors import AssignmentError
from assign_core.model import AssignmentResult, GroupSpec, Member, Side, TopicPartition

__all__ = ["LibrdkafkaCooperativeStickyAssignor", "cooperative_adjust", "sticky_lists"]

_Pair = tuple[str, str]


def _newest_first(d: Mapping[TopicPartition, object]) -> list[TopicPartition]:
    return list(d)[::-1]


class _Movements:
    """``PartitionMovements``: the net move of each moved partition, grouped by topic."""

    def __init__(self) -> None:
        self.moves: dict[TopicPartition, _Pair] = {}
        self.by_topic: dict[str, dict[_Pair, list[TopicPartition]]] = {}
        self.live: set[TopicPartition] = set()  # records not removed from by_topic

    def _remove(self, tp: TopicPartition) -> _Pair:
        pair = self.moves[tp]
        pairs = self.by_topic.get(tp.topic)
        if tp not in self.live or pairs is None or pair not in pairs:
            raise AssignmentError(f"librdkafka asserts: stale movement record of {tp}")
        pairs[pair].remove(tp)
        self.live.discard(tp)
        if not pairs[pair]:
            del pairs[pair]
        if not pairs:
            del self.by_topic[tp.topic]
        return pair  # the record stays in ``moves`` (librdkafka does not delete it)

    def _add(self, tp: TopicPartition, pair: _Pair) -> None:
        self.moves[tp] = pair
        self.live.add(tp)
        self.by_topic.setdefault(tp.topic, {}).setdefault(pair, []).append(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self.moves:
            src, dst = self._remove(tp)
            if dst != old:
                raise AssignmentError(f"librdkafka asserts: {tp} moves from {old}, not {dst}")
            if src != new:
                self._add(tp, (src, new))
        else:
            self._add(tp, (old, new))

    def actual(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        """``getTheActualPartitionToBeMoved``: a partition of the same topic that moved
        from ``new`` to ``old`` (the current owner), if any, else ``tp``."""
        pairs = self.by_topic.get(tp.topic)
        if pairs is None:
            return tp
        if tp in self.moves and self.moves[tp][1] != old:
            raise AssignmentError(f"librdkafka asserts: {tp} is not at {old}")
        reverse = pairs.get((new, old))
        return reverse[0] if reverse else tp


class _Run:
    """One ``rd_kafka_sticky_assignor_assign_cb``."""

    def __init__(self, spec: GroupSpec) -> None:
        self.members = spec.members
        if _rack_aware(spec):
            raise AssignmentError("librdkafka's rack-aware sticky assignment is not modelled")
        ids = [m.member_id for m in self.members]
        if len(set(ids)) != len(ids):
            raise AssignmentError("two members share a member id")
        self.current: dict[str, list[TopicPartition]] = {m: [] for m in ids}
        self.owner: dict[TopicPartition, str] = {}
        self.prev: dict[TopicPartition, str] = {}
        self.potential: dict[str, list[TopicPartition]] = {m: [] for m in ids}
        self.potential_sets: dict[str, set[TopicPartition]] = {}
        self.consumers: dict[TopicPartition, list[str]] = {}
        self.moves = _Movements()
        self.sorted: list[str] = []
        self._prepopulate()
        self._potential_maps(spec)

    def _prepopulate(self) -> None:
        claims: dict[TopicPartition, list[tuple[str, int]]] = {}
        for m in self.members:
            gen = -1 if m.generation is None else m.generation
            for tp in m.owned_partitions:
                claims.setdefault(tp, []).append((m.member_id, gen))
                self.owner[tp] = m.member_id
        for tp in _newest_first(claims):
            pairs = sorted(claims[tp], key=lambda c: c[1])  # stable, like glibc's msort
            if any(a[1] == b[1] for a, b in pairwise(pairs)):
                del self.owner[tp]  # claimed twice in one generation: nobody's
                continue
            self.current[pairs[-1][0]].append(tp)
            if len(pairs) >= 2:
                self.prev[tp] = pairs[-2][0]

    def _potential_maps(self, spec: GroupSpec) -> None:
        for topic, count in spec.topics.items():  # the metadata's order
            subscribers = [m.member_id for m in self.members if topic in m.topics]
            for member_id in subscribers:
                for p in range(count):
                    tp = TopicPartition(topic, p)
                    self.potential[member_id].append(tp)
                    self.consumers.setdefault(tp, []).append(member_id)
        self.potential_sets = {m: set(tps) for m, tps in self.potential.items()}

    # --- helpers -------------------------------------------------------------------------

    def _resort(self) -> None:
        self.sorted.sort(key=lambda m: (len(self.current[m]), m))

    def _identical(self) -> bool:
        sets = list(self.potential_sets.values())
        return all(s == sets[0] for s in sets[1:])

    # --- sortPartitions ------------------------------------------------------------------

    def _sort_partitions(self) -> list[TopicPartition]:
        if not self._identical():
            return sorted(self.consumers, key=lambda tp: (len(self.consumers[tp]), tp))
        out: list[TopicPartition] = []
        remaining: dict[str, list[TopicPartition]] = {}
        for member_id in reversed(self.current):
            lst = self.current[member_id]
            lst.sort()  # in place: the kept partitions stay sorted in the answer
            valid = [tp for tp in lst if tp in self.consumers]
            if valid:
                remaining[member_id] = valid
        order = sorted(remaining, key=lambda m: (len(remaining[m]), m))
        while order:
            member_id = order[-1]
            left = remaining[member_id]
            moved = [tp for tp in left if tp in self.prev]
            if moved:
                left.remove(moved[0])
                out.append(moved[0])
            elif left:
                out.append(left.pop(0))
            else:
                order.pop()
                continue
            order.sort(key=lambda m: (len(remaining[m]), m))
        was_empty = not out
        listed = set(out)
        for tp in _newest_first(self.consumers):
            if tp not in listed:
                out.append(tp)
                listed.add(tp)
        if was_empty:
            out.sort()
        return out

    # --- balance -------------------------------------------------------------------------

    def run(self) -> dict[str, list[TopicPartition]]:
        if not self.members:
            return {}
        sorted_partitions = self._sort_partitions()
        unassigned = list(sorted_partitions)
        revocation_required = False
        for member_id in reversed(self.current):
            subscribed = next(m.topics for m in self.members if m.member_id == member_id)
            kept: list[TopicPartition] = []
            for tp in self.current[member_id]:
                if tp not in self.consumers:
                    self.owner.pop(tp, None)
                elif tp.topic not in subscribed:
                    revocation_required = True
                else:
                    if tp in unassigned:
                        unassigned.remove(tp)
                    kept.append(tp)
            self.current[member_id] = kept
        self.sorted = list(self.current)
        self._resort()
        self._balance(sorted_partitions, unassigned, revocation_required)
        return {m.member_id: list(self.current[m.member_id]) for m in self.members}

    def _balance(
        self,
        sorted_partitions: list[TopicPartition],
        unassigned: list[TopicPartition],
        revocation_required: bool,
    ) -> None:
        initializing = len(self.current[self.sorted[-1]]) == 0
        for tp in unassigned:  # maybeAssign
            for member_id in self.sorted:
                if tp in self.potential_sets[member_id]:
                    self.current[member_id].append(tp)
                    self.owner[tp] = member_id
                    self._resort()
                    break
        for tp in _newest_first(self.consumers):
            if len(self.consumers[tp]) < 2:
                _remove_first(sorted_partitions, tp)
                _remove_first(unassigned, tp)
        fixed: dict[str, list[TopicPartition]] = {}
        for member_id in list(self.sorted):
            if not self._can_participate(member_id):
                self.sorted.remove(member_id)
                fixed[member_id] = self.current.pop(member_id)
        before = {m: list(tps) for m, tps in self.current.items()}
        owners_before = dict(self.owner)
        if not revocation_required and unassigned:
            self._perform(unassigned)
        performed = self._perform(sorted_partitions)
        if not initializing and performed and balance_score(self.current) >= balance_score(before):
            for member_id, tps in before.items():
                self.current[member_id] = tps
            self.owner = owners_before
        for member_id, tps in fixed.items():
            self.current[member_id] = tps
            self.sorted.append(member_id)
        self._resort()

    def _can_participate(self, member_id: str) -> bool:
        current = self.current[member_id]
        if len(current) < len(self.potential[member_id]):
            return True
        return any(len(self.consumers.get(tp, ())) >= 2 for tp in current)

    def _perform(self, reassignable: list[TopicPartition]) -> bool:
        performed = False
        modified = True
        while modified:
            modified = False
            i = 0
            while i < len(reassignable) and not self._is_balanced():
                tp = reassignable[i]
                i += 1
                consumer = self.owner.get(tp)
                if consumer is None or consumer not in self.current:
                    raise AssignmentError(f"librdkafka asserts: {tp} has no current consumer")
                size = len(self.current[consumer])
                prev = self.prev.get(tp)
                if prev is not None:
                    if prev not in self.current:
                        raise AssignmentError(f"librdkafka crashes: {prev} is a fixed consumer")
                    if size > len(self.current[prev]) + 1:
                        self._reassign_to(tp, prev)
                        performed = modified = True
                        continue
                for other in self.consumers[tp]:
                    if other != consumer and other not in self.current:
                        raise AssignmentError(f"librdkafka crashes: {other} is a fixed consumer")
                    if other == consumer or size <= len(self.current[other]) + 1:
                        continue
                    self._reassign(tp)
                    performed = modified = True
                    break
        return performed

    def _is_balanced(self) -> bool:
        low = len(self.current[self.sorted[0]])
        high = len(self.current[self.sorted[-1]])
        if low >= high - 1:
            return True
        holder: dict[TopicPartition, str] = {}
        for member_id in reversed(self.current):
            for tp in self.current[member_id]:
                holder[tp] = member_id
        for member_id in self.sorted:
            mine = self.current[member_id]
            potential = self.potential[member_id]
            if len(mine) == len(potential):
                continue
            mine_set = set(mine)
            for tp in potential:
                if tp in mine_set:
                    continue
                if tp not in holder:
                    raise AssignmentError(f"librdkafka crashes: {tp} has no consumer")
                if len(mine) < len(self.current[holder[tp]]):
                    return False
        return True

    def _reassign(self, tp: TopicPartition) -> None:
        for member_id in self.sorted:
            if tp in self.potential_sets[member_id]:
                self._reassign_to(tp, member_id)
                return
        raise AssignmentError(f"librdkafka asserts: no new consumer for {tp}")

    def _reassign_to(self, tp: TopicPartition, new: str) -> None:
        moving = self.moves.actual(tp, self.owner[tp], new)
        old = self.owner[moving]
        self.moves.move(moving, old, new)
        self.current[new].append(moving)
        _remove_first(self.current[old], moving)
        self.owner[moving] = new
        self._resort()


def _rack_aware(spec: GroupSpec) -> bool:
    """``rd_kafka_use_rack_aware_assignment``: a member of an eligible topic has a rack, it
    is the rack of some replica, and not every partition has replicas on every rack."""
    eligible = [t for t in spec.topics if any(t in m.topics for m in spec.members)]
    consumer_racks = {
        m.rack for m in spec.members if m.rack and any(t in m.topics for t in eligible)
    }
    if not consumer_racks:
        return False
    per_partition = []
    for topic in eligible:
        racks = spec.partition_racks.get(topic, ())
        for p in range(spec.topics[topic]):
            per_partition.append(set(racks[p]) if p < len(racks) else set())
    every = set().union(*per_partition)
    if not every or not consumer_racks & every:
        return False
    return any(len(racks) != len(every) for racks in per_partition)


def _remove_first(lst: list[TopicPartition], tp: TopicPartition) -> None:
    if tp in lst:
        lst.remove(tp)


def sticky_lists(spec: GroupSpec) -> dict[str, list[TopicPartition]]:
    """What librdkafka's sticky ``assign_cb`` returns (before the cooperative adjustment),
    per member in ``spec.members`` order; what its ``debug=assignor`` log lists."""
    return _Run(spec).run()


def cooperative_adjust(
    members: Sequence[Member], lists: dict[str, list[TopicPartition]]
) -> tuple[dict[str, list[TopicPartition]], dict[TopicPartition, str]]:
    """``rd_kafka_cooperative_protocol_adjust_assignment``: (the lists sent to the members,
    the withheld partitions with the member each goes to next)."""
    assigned = _collect((m.member_id, lists[m.member_id]) for m in members)
    owned = _collect((m.member_id, m.owned_partitions) for m in members)
    out: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    withheld: dict[TopicPartition, str] = {}
    for tp, member_id in assigned.items():  # maybe revoking: owned by someone
        if tp in owned:
            if owned[tp] == member_id:
                out[member_id].append(tp)
            else:
                withheld[tp] = member_id
    for tp, member_id in assigned.items():  # ready to migrate: owned by nobody
        if tp not in owned:
            out[member_id].append(tp)
    for tp, member_id in owned.items():  # owned, assigned to nobody: back to its owner
        if tp not in assigned:
            out[member_id].append(tp)
    return out, withheld


def _collect(
    lists: Iterable[tuple[str, Sequence[TopicPartition]]],
) -> dict[TopicPartition, str]:
    """``rd_kafka_collect_partitions`` as its set operations iterate it: first-seen order,
    the last member naming a partition as its value."""
    out: dict[TopicPartition, str] = {}
    for member_id, tps in lists:
        for tp in tps:
            out[tp] = member_id
    return out


class LibrdkafkaCooperativeStickyAssignor:
    """librdkafka's ``cooperative-sticky`` (``rd_kafka_sticky_assignor_assign_cb`` and
    ``rd_kafka_cooperative_protocol_adjust_assignment``)."""

    name = "cooperative-sticky"
    side: Side = "client"
    implementation = "librdkafka"

    def assign(self, spec: GroupSpec) -> AssignmentResult:
        lists, withheld = cooperative_adjust(spec.members, sticky_lists(spec))
        return AssignmentResult(strategy=self.name, assignment=lists, withheld=withheld)
