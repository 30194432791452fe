"""kafka-python's sticky algorithm (``kafka.coordinator.assignors.sticky``), shared by its
``sticky`` and ``cooperative-sticky`` assignors.

kafka-python ports Java's *old* ``StickyAssignor`` (KIP-54, before the constrained builder),
and its answers are its own:

* **Input.** Members in JoinGroup order, each with its subscription in wire order (not
  sorted: two members listing the same topics in another order do not count as identical
  subscriptions), the partitions it claims and the generation of that claim (-1 when
  absent). The leader's metadata holds the group's subscribed topics; partitions of a topic
  are visited in ascending order.
* **Claims.** A partition claimed twice with the same non-zero generation stays with its
  first claimant; otherwise the highest generation owns it and the next highest is its
  previous owner (a generation 0 claim overwrites an earlier one of generation 0).
* **Ties.** Members are ordered by (partitions held, member id) in code-point order;
  partitions by (potential consumers, topic, partition).
* **Hash order.** Twice kafka-python takes "any" element of a ``set`` of partitions: the
  previous owner's partition to list first for a member (identical subscriptions), and the
  partition to move back when undoing a move of the same topic. Which one it takes follows
  the leader process's string hashing (``PYTHONHASHSEED``, random per process), which no
  record shows. :class:`Picks` makes each such choice: ``native`` takes what Python's ``set``
  gives in *this* process (the sets are built exactly as kafka-python builds them, so an
  assignor called in the same process answers identically), otherwise the choices follow a
  script over the candidates sorted by (topic, partition), the first by default;
  :func:`alternatives` runs every script.
* **Its slips, kept.** Looking a member up in the current assignment adds it with no
  partitions (a ``defaultdict``): a member held out of the reassignment comes back as an
  empty one while the balance scores are compared. Only the second reassignment pass decides
  whether the more balanced result is kept. Where kafka-python raises (a member that was held
  out would receive a partition), :class:`~assign_core.errors.AssignmentError` is raised.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TypeVar

from assign_core.assignors._client_common import balance_score
from assign_core.errors import AssignmentError
from assign_core.model import GroupSpec, Member, TopicPartition

__all__ = ["NO_GENERATION", "Picks", "alternatives", "sticky_lists"]

#: kafka-python's ``DEFAULT_GENERATION_ID``: the generation of a claim that carries none.
NO_GENERATION = -1

_Pair = tuple[str, str]
_T = TypeVar("_T")


@dataclass
class Picks:
    """How each hash-order choice is made (module docstring).

    ``native``: as Python's ``set`` iterates in this process. Otherwise the ``k``-th choice
    among more than one candidate takes ``script[k]`` of the candidates sorted by (topic,
    partition); past the script, a random one when ``rng`` is given, else the first.
    ``options`` records how many candidates each such choice had.
    """

    native: bool = False
    script: Sequence[int] = ()
    rng: random.Random | None = None
    options: list[int] = field(default_factory=list)

    def choose(self, candidates: set[TopicPartition]) -> TopicPartition:
        if len(candidates) > 1:
            k = len(self.options)
            self.options.append(len(candidates))
            if not self.native:
                if k < len(self.script):
                    index = self.script[k]
                else:
                    index = 0 if self.rng is None else self.rng.randrange(len(candidates))
                return sorted(candidates)[index]
        return next(iter(candidates))


class _Movements:
    """``PartitionMovements``: each moved partition's net move, and per topic the partitions
    behind each (from, to) pair in a ``set`` (whose order :class:`Picks` reads)."""

    def __init__(self, picks: Picks) -> None:
        self.picks = picks
        self.moves: dict[TopicPartition, _Pair] = {}
        self.by_topic: dict[str, dict[_Pair, set[TopicPartition]]] = {}

    def _drop(self, tp: TopicPartition) -> _Pair:
        pair = self.moves.pop(tp)
        pairs = self.by_topic[tp.topic]
        pairs[pair].remove(tp)
        if not pairs[pair]:
            del pairs[pair]
        if not pairs:
            del self.by_topic[tp.topic]
        return pair

    def _record(self, tp: TopicPartition, pair: _Pair) -> None:
        self.moves[tp] = pair
        self.by_topic.setdefault(tp.topic, {}).setdefault(pair, set()).add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp not in self.moves:
            self._record(tp, (old, new))
            return
        src, dst = self._drop(tp)
        if dst != old:
            raise AssignmentError(f"kafka-python fails (ValueError): {tp} is not on {old!r}")
        if src != new:  # not back where it started
            self._record(tp, (src, new))

    def to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        """The partition to move instead of ``tp`` from ``old`` to ``new``: one of its topic
        that moved from ``new`` to ``tp``'s original owner, if any (moving it back keeps
        both sticky), else ``tp``."""
        pairs = self.by_topic.get(tp.topic)
        if pairs is None:
            return tp
        if tp in self.moves:
            src, dst = self.moves[tp]
            if dst != old:
                raise AssignmentError(f"kafka-python fails (ValueError): {tp} is not on {old!r}")
            old = src
        back = pairs.get((new, old))
        return tp if back is None else self.picks.choose(back)


class _Run:
    """One run of kafka-python's ``StickyAssignmentExecutor`` (module docstring)."""

    def __init__(self, spec: GroupSpec, picks: Picks) -> None:
        self.picks = picks
        self.movements = _Movements(picks)
        members: dict[str, Member] = {}
        for m in spec.members:
            members.setdefault(m.member_id, m)
        self.members = members
        # the current assignment, as a defaultdict: a lookup adds an empty member
        self.current: defaultdict[str, list[TopicPartition]] = defaultdict(list)
        self.previous: dict[TopicPartition, str] = {}
        self.owner: dict[TopicPartition, str] = {}
        self._claims()
        subscribed = {t for m in members.values() for t in m.topics}
        counts = {t: n for t, n in spec.topics.items() if t in subscribed}
        self.consumers_of: dict[TopicPartition, list[str]] = {
            TopicPartition(t, p): [] for t, n in counts.items() for p in range(n)
        }
        self.potential: dict[str, list[TopicPartition]] = {}
        self.can_take: dict[str, set[TopicPartition]] = {}
        for member_id, m in members.items():
            tps = [TopicPartition(t, p) for t in m.topics if t in counts for p in range(counts[t])]
            self.potential[member_id] = tps
            self.can_take[member_id] = set(tps)
            for tp in tps:
                self.consumers_of[tp].append(member_id)
            if member_id not in self.current:
                self.current[member_id] = []
        self.subscriptions: set[str] = set()  # the members in ``sortedCurrentSubscriptions``
        self.sorted_partitions: list[TopicPartition] = []
        self.unassigned: list[TopicPartition] = []
        self.revocation_required = False

    def _claims(self) -> None:
        by_generation: dict[TopicPartition, dict[int, str]] = {}
        for member_id, m in self.members.items():
            generation = NO_GENERATION if m.generation is None else m.generation
            for tp in m.owned_partitions:
                claims = by_generation.setdefault(tp, {})
                if claims and generation and generation in claims:
                    continue  # claimed twice in one generation: the first claim stands
                claims[generation] = member_id
        for tp, claims in by_generation.items():
            newest, *older = sorted(claims, reverse=True)
            self.current[claims[newest]].append(tp)
            if older:
                self.previous[tp] = claims[older[0]]
        self.fresh = not self.current
        for member_id, tps in self.current.items():
            for tp in tps:
                self.owner[tp] = member_id

    # -- the order of partitions to (re)assign ----------------------------------------------

    def _identical_subscriptions(self) -> bool:
        def same(lists: list[list[str]] | list[list[TopicPartition]]) -> bool:
            return all(a == b for a, b in pairwise(lists))

        return same(list(self.consumers_of.values())) and same(list(self.potential.values()))

    def order_partitions(self) -> None:
        by_consumers = sorted(self.consumers_of, key=lambda tp: (len(self.consumers_of[tp]), tp))
        if self.fresh or not self._identical_subscriptions():
            self.sorted_partitions = by_consumers
        else:
            self.sorted_partitions = self._round_robin_from_busiest()
            listed = set(self.sorted_partitions)
            self.sorted_partitions += [tp for tp in by_consumers if tp not in listed]
        self._to_reassign()

    def _round_robin_from_busiest(self) -> list[TopicPartition]:
        """Identical subscriptions, not fresh: one partition at a time from the member
        holding the most (then the highest member id): a partition some other member held
        before if it has one (a hash-order pick), else its last one."""
        held = {
            member_id: [tp for tp in tps if tp in self.consumers_of]
            for member_id, tps in self.current.items()
        }
        queue = set(held)
        out: list[TopicPartition] = []
        while queue:
            busiest = max(queue, key=lambda c: (len(held[c]), c))
            queue.discard(busiest)
            remaining = held[busiest]
            # built as kafka-python builds it: from the keys view (no presized table, unlike
            # set(dict)), so that the set iterates in the same order in one process
            before = set(self.previous.keys()).intersection(set(remaining))
            if before:
                tp = self.picks.choose(before)
                remaining.remove(tp)
            elif remaining:
                tp = remaining.pop()
            else:
                continue
            out.append(tp)
            queue.add(busiest)
        return out

    def _to_reassign(self) -> None:
        self.unassigned = list(self.sorted_partitions)
        gone: list[str] = []
        for member_id, tps in self.current.items():
            if member_id not in self.members:
                for tp in tps:
                    del self.owner[tp]
                gone.append(member_id)
                continue
            dropped: list[TopicPartition] = []
            for tp in tps:
                if tp not in self.consumers_of:
                    dropped.append(tp)
                elif tp.topic not in self.members[member_id].topics:
                    dropped.append(tp)
                    self.revocation_required = True
                else:
                    self.unassigned.remove(tp)
            for tp in dropped:
                tps.remove(tp)
                del self.owner[tp]
        for member_id in gone:
            del self.current[member_id]

    # -- balancing --------------------------------------------------------------------------

    def _key(self, member_id: str) -> tuple[int, str]:
        return len(self.current[member_id]), member_id

    def _ascending(self) -> list[str]:
        return sorted(self.subscriptions, key=self._key)

    def _leave(self, member_id: str) -> None:
        if member_id not in self.subscriptions:
            raise AssignmentError(
                f"kafka-python fails (KeyError): {member_id!r} is not among the members "
                "being balanced"
            )
        self.subscriptions.remove(member_id)

    def balance(self) -> None:
        self.subscriptions = set(self.current)
        busiest = max(self.subscriptions, key=self._key)
        initializing = not self.current[busiest]
        for tp in self.unassigned:
            if self.consumers_of[tp]:
                self._assign(tp)
        fixed_partitions = {tp for tp, cs in self.consumers_of.items() if len(cs) < 2}
        for tp in fixed_partitions:
            _remove_if_present(self.sorted_partitions, tp)
            _remove_if_present(self.unassigned, tp)
        fixed: dict[str, list[TopicPartition]] = {}
        for member_id in self.potential:
            if not self._can_participate(member_id):
                self._leave(member_id)
                fixed[member_id] = self.current.pop(member_id)
        before = defaultdict(list, {c: list(tps) for c, tps in self.current.items()})
        owners_before = dict(self.owner)
        if not self.revocation_required:
            self._reassign_all(self.unassigned)
        moved = self._reassign_all(self.sorted_partitions)
        if not initializing and moved and balance_score(self.current) >= balance_score(before):
            self.current = before
            self.owner = owners_before
        for member_id, tps in fixed.items():
            self.current[member_id] = tps
            self.subscriptions.add(member_id)

    def _assign(self, tp: TopicPartition) -> None:
        for member_id in self._ascending():
            if tp in self.can_take[member_id]:
                self.current[member_id].append(tp)
                self.owner[tp] = member_id
                return

    def _can_participate(self, member_id: str) -> bool:
        held = self.current[member_id]
        if len(held) < len(self.potential[member_id]):
            return True
        return any(len(self.consumers_of[tp]) >= 2 for tp in held)

    def _is_balanced(self) -> bool:
        if not self.subscriptions:
            return True
        ascending = self._ascending()
        if len(self.current[ascending[0]]) >= len(self.current[ascending[-1]]) - 1:
            return True
        assigned = {tp: c for c, tps in self.current.items() for tp in tps}
        for member_id in ascending:
            count = len(self.current[member_id])
            if count == len(self.potential[member_id]):
                continue
            held = self.current[member_id]
            for tp in self.potential[member_id]:
                if tp not in held:
                    other = assigned.get(tp)
                    if other is None:
                        raise AssignmentError(f"kafka-python fails (KeyError): {tp} unassigned")
                    if count < len(self.current[other]):
                        return False
        return True

    def _reassign_all(self, partitions: list[TopicPartition]) -> bool:
        """``_perform_reassignments``: move partitions until balanced; whether any moved."""
        performed = False
        while True:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                owner = self.owner.get(tp)
                count = len(self.current[owner]) if owner is not None else 0
                previous = self.previous.get(tp)
                if previous is not None and count > len(self.current[previous]) + 1:
                    self._reassign_to(tp, previous)
                    performed = modified = True
                    continue
                for other in self.consumers_of[tp]:
                    if count > len(self.current[other]) + 1:
                        self._reassign(tp)
                        performed = modified = True
                        break
            if not modified:
                return performed

    def _reassign(self, tp: TopicPartition) -> None:
        for member_id in self._ascending():
            if tp in self.can_take[member_id]:
                self._reassign_to(tp, member_id)
                return
        raise AssignmentError(f"kafka-python fails (AssertionError): no member can take {tp}")

    def _reassign_to(self, tp: TopicPartition, new: str) -> None:
        owner = self.owner[tp]
        instead = self.movements.to_move(tp, owner, new)
        substitute = self.owner[instead]
        if substitute != owner:  # both moved before: undo both
            self._move(tp, substitute)
        self._move(instead, new)

    def _move(self, tp: TopicPartition, new: str) -> None:
        old = self.owner[tp]
        self._leave(old)
        self._leave(new)
        self.movements.move(tp, old, new)
        self.current[old].remove(tp)
        self.current[new].append(tp)
        self.owner[tp] = new
        self.subscriptions.add(new)
        self.subscriptions.add(old)

    def lists(self) -> dict[str, list[TopicPartition]]:
        return {member_id: sorted(self.current[member_id]) for member_id in self.members}


def _remove_if_present(tps: list[TopicPartition], tp: TopicPartition) -> None:
    if tp in tps:
        tps.remove(tp)


def sticky_lists(spec: GroupSpec, picks: Picks | None = None) -> dict[str, list[TopicPartition]]:
    """What kafka-python's sticky executor assigns each member (in ``spec.members`` order,
    each list sorted by topic, then partition, as kafka-python sends it).

    ``Member.owned_partitions`` and ``Member.generation`` are the claim as kafka-python
    parses it (``None``: -1). Raises :class:`~assign_core.errors.AssignmentError` where
    kafka-python raises.
    """
    run = _Run(spec, picks or Picks())
    run.order_partitions()
    if run.members:
        run.balance()
    return run.lists()


def alternatives(
    compute: Callable[[Picks], _T], limit: int
) -> tuple[list[_T | AssignmentError], bool]:
    """``compute``'s answers over the leader's possible hash orders, the first with every
    choice the first candidate, at most ``limit`` of them; and whether they are all of them.

    Every combination of choices is tried while there are at most ``limit``; beyond, the
    rest of the budget goes to random choices (a fixed seed, so the same input gives the
    same answers). An answer that raises is the :class:`~assign_core.errors.AssignmentError`.
    """
    answers: list[_T | AssignmentError] = []

    def run(picks: Picks) -> None:
        try:
            answers.append(compute(picks))
        except AssignmentError as e:
            answers.append(e)

    pending: list[tuple[int, ...]] = [()]
    while pending and len(answers) + len(pending) <= limit:
        script = pending.pop(0)
        picks = Picks(script=script)
        run(picks)
        made = picks.options
        for k in range(len(script), len(made)):
            prefix = script + (0,) * (k - len(script))
            pending.extend((*prefix, i) for i in range(1, made[k]))
    if not pending:
        return answers, True
    rng = random.Random(0)
    while len(answers) < limit:
        run(Picks(rng=rng))
    return answers, False
