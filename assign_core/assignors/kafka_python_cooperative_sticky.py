"""kafka-python's ``cooperative-sticky`` assignor
(``kafka.coordinator.assignors.cooperative_sticky``).

kafka-python's sticky algorithm (:mod:`assign_core.assignors._kafka_python_sticky`) on the
owned partitions of the subscription (version 1: no generation, so every claim is of
generation -1 and a partition claimed twice stays with its first claimant), then the
cooperative step: a partition the algorithm gives to another member than the one that owns
it (the last member in JoinGroup order naming it) is left out of this round
(:attr:`~assign_core.model.AssignmentResult.withheld` says who gets it). Unlike Java and
librdkafka, nothing else changes: a partition owned but given to nobody is not handed back.
Every member's list is sorted by topic, then partition.

The canonical example: C1 and C2 read Order (4 partitions) and Stock (3), then C3 joins.
The partitions C3 is to get are withheld until C1 and C2 have revoked them::

    >>> from assign_core.model import GroupSpec, Member
    >>> def show(result):
    ...     for member_id, partitions in result.assignment.items():
    ...         print(" ".join([member_id, *map(str, partitions)]))
    ...     moves = [f"{tp} -> {member_id}" for tp, member_id in result.withheld.items()]
    ...     print("withheld:", ", ".join(moves) or "-")
    >>> topics = {"Order": 4, "Stock": 3}
    >>> first = KafkaPythonCooperativeStickyAssignor().assign(GroupSpec(
    ...     topics=topics, members=tuple(Member(c, ("Order", "Stock")) for c in ("C1", "C2"))))
    >>> members = tuple(
    ...     Member(c, ("Order", "Stock"), owned_partitions=tuple(tps))
    ...     for c, tps in first.assignment.items()) + (Member("C3", ("Order", "Stock")),)
    >>> show(KafkaPythonCooperativeStickyAssignor().assign(GroupSpec(topics, members)))
    C1 Order-0 Order-2 Stock-0
    C2 Order-1 Order-3
    C3
    withheld: Stock-1 -> C3, Stock-2 -> C3
"""

from __future__ import annotations

from assign_core.assignors._kafka_python_sticky import Picks, alternatives, sticky_lists
from assign_core.errors import AssignmentError
from assign_core.model import AssignmentResult, GroupSpec, Side, TopicPartition

__all__ = ["KafkaPythonCooperativeStickyAssignor"]


class KafkaPythonCooperativeStickyAssignor:
    """kafka-python's ``CooperativeStickyAssignor`` (kafka-python 3.0); ``native`` as
    :class:`~assign_core.assignors.kafka_python_sticky.KafkaPythonStickyAssignor`'s."""

    name = "cooperative-sticky"
    side: Side = "client"
    implementation = "kafka-python"

    def __init__(self, *, native: bool = False) -> None:
        self.native = native

    def _assign(self, spec: GroupSpec, picks: Picks) -> AssignmentResult:
        final = sticky_lists(spec, picks)
        owner: dict[TopicPartition, str] = {}
        for m in spec.members:
            for tp in m.owned_partitions:
                owner[tp] = m.member_id
        lists: dict[str, list[TopicPartition]] = {}
        withheld: dict[TopicPartition, str] = {}
        for member_id, tps in final.items():
            lists[member_id] = []
            for tp in tps:
                if owner.get(tp, member_id) == member_id:
                    lists[member_id].append(tp)
                else:
                    withheld[tp] = member_id
        return AssignmentResult(strategy=self.name, assignment=lists, withheld=withheld)

    def assign(self, spec: GroupSpec) -> AssignmentResult:
        return self._assign(spec, Picks(native=self.native))

    def alternatives(
        self, spec: GroupSpec, limit: int
    ) -> tuple[list[AssignmentResult | AssignmentError], bool]:
        """Answers over the leader's possible hash orders, and whether they are all of them
        (:func:`~assign_core.assignors._kafka_python_sticky.alternatives`)."""
        return alternatives(lambda picks: self._assign(spec, picks), limit)
