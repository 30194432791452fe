"""franz-go's ``sticky`` and ``cooperative-sticky`` balancers (``kgo.StickyBalancer``,
``kgo.CooperativeStickyBalancer``, franz-go 1.22).

franz-go's own algorithm (:mod:`assign_core.assignors._franz_go_sticky`), not Java's: the
leader sorts the members (static ones by instance id, then by member id), reads their claims
(``Member.owned_partitions`` at ``Member.generation``, as franz-go parses them:
``streaming.tracking.expected.owned_for_strategy``), deals, balances and repairs. Each
member's list is sorted by topic, then partition, as the SyncGroup request carries it.
``cooperative-sticky`` then withholds every partition that moves from a member that owns it
(:attr:`AssignmentResult.withheld`; a claim beaten by a higher generation is no ownership).

Its answer depends on the order the leader's Go maps iterate (the topics, and the partitions
claimed by two members), which Go randomises on every run: :meth:`assign` takes them in
order (topics by name), :meth:`alternatives` gives the answers over all orders (a leader's
answer is one of them).

The canonical example: C1 and C2 read Order (4 partitions), then C3 joins. The first round
deals the partitions to the root of a heap of members by load (C1, C2, C2, C1); when C3
joins, the member holding the most (the first of them) gives its highest partition::

    >>> from assign_core.model import GroupSpec, Member, TopicPartition as TP
    >>> def show(result):
    ...     for member_id, partitions in result.assignment.items():
    ...         print(" ".join([member_id, *map(str, partitions)]))
    >>> first = FranzGoStickyAssignor().assign(GroupSpec(
    ...     topics={"Order": 4}, members=(Member("C1", ("Order",)), Member("C2", ("Order",)))))
    >>> show(first)
    C1 Order-0 Order-3
    C2 Order-1 Order-2
    >>> members = tuple(
    ...     Member(c, ("Order",), owned_partitions=tuple(tps), generation=1)
    ...     for c, tps in first.assignment.items()) + (Member("C3", ("Order",)),)
    >>> show(FranzGoStickyAssignor().assign(GroupSpec({"Order": 4}, members)))
    C1 Order-0
    C2 Order-1 Order-2
    C3 Order-3
"""

from __future__ import annotations

from collections.abc import Sequence

from assign_core.assignors._franz_go_sticky import (
    Claimant,
    MapOrder,
    balance,
    map_orders,
    member_order,
)
from assign_core.model import AssignmentResult, GroupSpec, Member, Side, TopicPartition

__all__ = [
    "FranzGoCooperativeStickyAssignor",
    "FranzGoStickyAssignor",
    "cooperative_adjust",
]


def _topics(spec: GroupSpec) -> list[tuple[str, int]]:
    """The topics the leader balances: those some member subscribes to, with known counts."""
    wanted = {t for m in spec.members for t in m.topics}
    return [(t, n) for t, n in spec.topics.items() if t in wanted]


def _lists(spec: GroupSpec, order: MapOrder) -> tuple[list[Member], list[list[TopicPartition]]]:
    members = [
        spec.members[i]
        for i in member_order([(m.member_id, m.group_instance_id) for m in spec.members])
    ]
    claimants = [
        Claimant(
            m.member_id,
            tuple(sorted(m.topics, key=str.encode)),
            m.owned_partitions,
            -1 if m.generation is None else m.generation,
        )
        for m in members
    ]
    topics = sorted(_topics(spec), key=lambda tn: tn[0].encode())
    return members, balance(claimants, topics, order)


def cooperative_adjust(
    members: Sequence[Member], planned: dict[str, list[TopicPartition]]
) -> tuple[dict[str, list[TopicPartition]], dict[TopicPartition, str]]:
    """franz-go's ``AdjustCooperative``: a partition planned for a member that did not own
    it (a claim beaten by a strictly higher generation owns nothing) while another owner
    loses it is withheld; (the lists sent, the withheld partitions with their next owner).
    ``members`` in balancing order; a generation ``None`` is franz-go's -1."""
    newest: dict[TopicPartition, int] = {}
    for m in members:
        gen = -1 if m.generation is None else m.generation
        for tp in m.owned_partitions:
            if tp not in newest or gen > newest[tp]:
                newest[tp] = gen
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for m in members:
        gen = -1 if m.generation is None else m.generation
        mine = set(planned[m.member_id])
        planned_topics = {tp.topic for tp in mine}
        owned = set(m.owned_partitions)
        owned_topics = {tp.topic for tp in owned}
        for tp in m.owned_partitions:
            if tp.topic not in planned_topics or tp not in mine:
                revoked.add(tp)
        for tp in planned[m.member_id]:
            if tp.topic not in owned_topics:
                added[tp] = m.member_id
                continue
            if tp not in owned or gen < newest[tp]:
                added[tp] = m.member_id
    out: dict[str, list[TopicPartition]] = {}
    withheld: dict[TopicPartition, str] = {}
    for m in members:
        kept = []
        for tp in planned[m.member_id]:
            if tp in revoked and added.get(tp) == m.member_id:
                withheld[tp] = m.member_id
            else:
                kept.append(tp)
        out[m.member_id] = kept
    return out, withheld


class FranzGoStickyAssignor:
    """franz-go's ``StickyBalancer`` (eager): claims from its sticky user data."""

    name = "sticky"
    side: Side = "client"
    implementation = "franz-go"

    def _result(self, spec: GroupSpec, order: MapOrder) -> AssignmentResult:
        members, lists = _lists(spec, order)
        planned = {m.member_id: tps for m, tps in zip(members, lists, strict=True)}
        return self._finish(spec, members, planned)

    def _finish(
        self, spec: GroupSpec, members: list[Member], planned: dict[str, list[TopicPartition]]
    ) -> AssignmentResult:
        return AssignmentResult(
            strategy=self.name,
            assignment={m.member_id: planned.get(m.member_id, []) for m in spec.members},
        )

    def assign(self, spec: GroupSpec) -> AssignmentResult:
        """The answer with the topics numbered by name, the doubly claimed partitions taken
        in order."""
        return self._result(spec, MapOrder())

    def alternatives(self, spec: GroupSpec, limit: int) -> tuple[list[AssignmentResult], bool]:
        """The distinct answers over the leader's map orders (of at most ``limit`` runs:
        :func:`~assign_core.assignors._franz_go_sticky.map_orders`), and whether every
        order was tried."""
        return map_orders(lambda order: self._result(spec, order), limit)


class FranzGoCooperativeStickyAssignor(FranzGoStickyAssignor):
    """franz-go's ``CooperativeStickyBalancer``: the sticky plan, then
    :func:`cooperative_adjust`."""

    name = "cooperative-sticky"

    def _finish(
        self, spec: GroupSpec, members: list[Member], planned: dict[str, list[TopicPartition]]
    ) -> AssignmentResult:
        lists, withheld = cooperative_adjust(members, planned)
        return AssignmentResult(
            strategy=self.name,
            assignment={m.member_id: lists.get(m.member_id, []) for m in spec.members},
            withheld=withheld,
        )
