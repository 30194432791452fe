"""kafka-python's ``sticky`` assignor (``kafka.coordinator.assignors.sticky``).

kafka-python's own port of Java's old sticky algorithm
(:mod:`assign_core.assignors._kafka_python_sticky`), eager. The previous assignment comes
from kafka-python's user data, a version-prefixed ``StickyAssignorUserData`` (Java cannot read
it): ``Member.owned_partitions`` and ``Member.generation`` are that claim as kafka-python
parses it (empty user data: nothing, generation -1). Every member's list is sorted by topic,
then partition.

The canonical example: C1 and C2 read Order (4 partitions) and Stock (3), then C3 joins.
The first round deals the partitions, sorted by topic and partition, to the least loaded
member (then the lowest member id); when C3 joins, each partition to move is taken from the
member holding the most (then the highest member id), its last one first::

    >>> from assign_core.model import GroupSpec, Member
    >>> def show(result):
    ...     for member_id, partitions in result.assignment.items():
    ...         print(" ".join([member_id, *map(str, partitions)]))
    >>> topics = {"Order": 4, "Stock": 3}
    >>> first = KafkaPythonStickyAssignor().assign(GroupSpec(
    ...     topics=topics, members=tuple(Member(c, ("Order", "Stock")) for c in ("C1", "C2"))))
    >>> show(first)
    C1 Order-0 Order-2 Stock-0 Stock-2
    C2 Order-1 Order-3 Stock-1
    >>> members = tuple(
    ...     Member(c, ("Order", "Stock"), owned_partitions=tuple(tps), generation=1)
    ...     for c, tps in first.assignment.items()) + (Member("C3", ("Order", "Stock")),)
    >>> show(KafkaPythonStickyAssignor().assign(GroupSpec(topics, members)))
    C1 Order-0 Order-2 Stock-0
    C2 Order-1 Order-3
    C3 Stock-1 Stock-2
"""

from __future__ import annotations

from assign_core.assignors._kafka_python_sticky import Picks, alternatives, sticky_lists
from assign_core.errors import AssignmentError
from assign_core.model import AssignmentResult, GroupSpec, Side

__all__ = ["KafkaPythonStickyAssignor"]


class KafkaPythonStickyAssignor:
    """kafka-python's ``StickyPartitionAssignor`` (kafka-python 3.0).

    ``native``: make the hash-order choices as this process's ``set`` does (to compare with
    kafka-python's class in the same process); by default the first candidate in (topic,
    partition) order, so answers do not depend on the process.
    """

    name = "sticky"
    side: Side = "client"
    implementation = "kafka-python"

    def __init__(self, *, native: bool = False) -> None:
        self.native = native

    def _assign(self, spec: GroupSpec, picks: Picks) -> AssignmentResult:
        return AssignmentResult(strategy=self.name, assignment=sticky_lists(spec, picks))

    def assign(self, spec: GroupSpec) -> AssignmentResult:
        return self._assign(spec, Picks(native=self.native))

    def alternatives(
        self, spec: GroupSpec, limit: int
    ) -> tuple[list[AssignmentResult | AssignmentError], bool]:
        """Answers over the leader's possible hash orders, and whether they are all of them
        (:func:`~assign_core.assignors._kafka_python_sticky.alternatives`)."""
        return alternatives(lambda picks: self._assign(spec, picks), limit)
