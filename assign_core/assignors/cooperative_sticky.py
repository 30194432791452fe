"""Kafka's client-side ``cooperative-sticky`` assignor (``CooperativeStickyAssignor``).

The same algorithm as ``sticky`` (:mod:`assign_core.assignors._sticky_common`), with the
previous assignment taken from the subscription (``Member.owned_partitions`` and
``Member.generation``), followed by the incremental-cooperative adjustment: a partition that
moves from one member to another is first only revoked. It is left out of this rebalance's
assignment (:attr:`~assign_core.model.AssignmentResult.withheld` says who gets it) and the
revoking member triggers a follow-up rebalance in which the new owner receives it. A
partition claimed by two members in the same generation is withheld the same way.

The canonical example: C1 and C2 read Order (7 partitions) and Stock (5), then C3 joins.
C3's share has to be revoked from C1 and C2 first, so C3 gets nothing in the first rebalance
after joining and everything in the follow-up::

    >>> from assign_core.model import GroupSpec, Member
    >>> def show(result):
    ...     for member_id, partitions in result.assignment.items():
    ...         print(" ".join([member_id, *map(str, partitions)]))
    ...     moves = [f"{tp} -> {member_id}" for tp, member_id in result.withheld.items()]
    ...     print("withheld:", ", ".join(moves) or "-")
    >>> topics = {"Order": 7, "Stock": 5}
    >>> first = CooperativeStickyAssignor().assign(GroupSpec(
    ...     topics=topics, members=tuple(Member(c, ("Order", "Stock")) for c in ("C1", "C2"))))
    >>> show(first)
    C1 Order-0 Order-2 Order-4 Order-6 Stock-1 Stock-3
    C2 Order-1 Order-3 Order-5 Stock-0 Stock-2 Stock-4
    withheld: -
    >>> def rejoin(result, generation):
    ...     return tuple(
    ...         Member(c, ("Order", "Stock"), owned_partitions=tuple(tps), generation=generation)
    ...         for c, tps in result.assignment.items())
    >>> joined = CooperativeStickyAssignor().assign(GroupSpec(
    ...     topics=topics, members=rejoin(first, 1) + (Member("C3", ("Order", "Stock")),)))
    >>> show(joined)
    C1 Order-0 Stock-1 Order-2 Stock-3
    C2 Stock-0 Order-1 Stock-2 Order-3
    C3
    withheld: Order-4 -> C3, Order-5 -> C3, Order-6 -> C3, Stock-4 -> C3
    >>> show(CooperativeStickyAssignor().assign(
    ...     GroupSpec(topics=topics, members=rejoin(joined, 2))))
    C1 Order-0 Stock-1 Order-2 Stock-3
    C2 Stock-0 Order-1 Stock-2 Order-3
    C3 Order-4 Order-5 Order-6 Stock-4
    withheld: -

Like Java's, an instance remembers the highest generation it has seen (``maxGeneration``);
use a fresh instance per independent group.
"""

from __future__ import annotations

from assign_core.assignors._sticky_common import StickyState, run_sticky
from assign_core.model import AssignmentResult, GroupSpec, Side

__all__ = ["CooperativeStickyAssignor"]


class CooperativeStickyAssignor:
    """``org.apache.kafka.clients.consumer.CooperativeStickyAssignor`` of kafka-clients 4.4.0."""

    name = "cooperative-sticky"
    side: Side = "client"

    def __init__(self) -> None:
        self._state = StickyState()

    def assign(self, spec: GroupSpec) -> AssignmentResult:
        """The assignment Java's ``assign`` returns (after ``adjustAssignment``), list order
        included, and the withheld partitions with the member each goes to next.

        Raises :class:`~assign_core.errors.AssignmentError` where Java throws.
        """
        outcome = run_sticky(spec, cooperative=True, state=self._state)
        return AssignmentResult(
            strategy=self.name, assignment=outcome.assignment, withheld=outcome.transferring
        )
