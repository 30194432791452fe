"""Kafka's client-side ``sticky`` assignor (``StickyAssignor``, eager protocol).

Balance first, then stickiness: every member ends with ``⌊P/N⌋`` or ``⌈P/N⌉`` partitions when
all subscribe the same topics, and keeps as many of its previous partitions as that allows.
The previous assignment comes from the member's ``StickyAssignor`` user data
(``Member.owned_partitions`` and ``Member.generation``; no generation means a v0 user data).
The algorithm is the shared ``AbstractStickyAssignor``
(:mod:`assign_core.assignors._sticky_common`): claims resolved by generation in the leader's
``HashMap`` order, then the constrained builder (equal subscriptions) or the general one.

The canonical examples. First an initial assignment with different subscriptions (C0 reads
t0, C1 reads t0 and t1, C2 reads all three topics): partitions are taken topic by topic,
topics with fewer subscribers first, each going to the least loaded subscriber::

    >>> from assign_core.model import GroupSpec, Member
    >>> def show(result):
    ...     for member_id, partitions in result.assignment.items():
    ...         print(member_id, " ".join(map(str, partitions)))
    >>> show(StickyAssignor().assign(GroupSpec(
    ...     topics={"t0": 1, "t1": 2, "t2": 3},
    ...     members=(Member("C0", ("t0",)), Member("C1", ("t0", "t1")),
    ...              Member("C2", ("t0", "t1", "t2"))))))
    C0 t0-0
    C1 t1-0 t1-1
    C2 t2-0 t2-1 t2-2

Then Order (7 partitions) and Stock (5) read by C1..C3, after which C3 crashes. The first
round deals all partitions, sorted by (topic, partition), round-robin over the members
sorted by id::

    >>> topics = {"Order": 7, "Stock": 5}
    >>> group = tuple(Member(c, ("Order", "Stock")) for c in ("C1", "C2", "C3"))
    >>> first = StickyAssignor().assign(GroupSpec(topics=topics, members=group))
    >>> show(first)
    C1 Order-0 Order-3 Order-6 Stock-2
    C2 Order-1 Order-4 Stock-0 Stock-3
    C3 Order-2 Order-5 Stock-1 Stock-4

In the second round C1 and C2 keep everything they had (ordered by partition number, then
topic) and C3's orphans Order-2, Order-5, Stock-1, Stock-4 are dealt between them::

    >>> survivors = tuple(
    ...     Member(c, ("Order", "Stock"), owned_partitions=tuple(first.assignment[c]), generation=1)
    ...     for c in ("C1", "C2"))
    >>> show(StickyAssignor().assign(GroupSpec(topics=topics, members=survivors)))
    C1 Order-0 Stock-2 Order-3 Order-6 Order-2 Stock-1
    C2 Stock-0 Order-1 Stock-3 Order-4 Order-5 Stock-4

Like Java's, an instance remembers the highest generation it has seen (``maxGeneration``);
use a fresh instance per independent group.
"""

from __future__ import annotations

from assign_core.assignors._sticky_common import StickyState, run_sticky
from assign_core.model import AssignmentResult, GroupSpec, Side

__all__ = ["StickyAssignor"]


class StickyAssignor:
    """``org.apache.kafka.clients.consumer.StickyAssignor`` of kafka-clients 4.4.0."""

    name = "sticky"
    side: Side = "client"

    def __init__(self) -> None:
        self._state = StickyState()

    def assign(self, spec: GroupSpec) -> AssignmentResult:
        """The assignment Java's ``StickyAssignor.assign`` returns, list order included.

        Raises :class:`~assign_core.errors.AssignmentError` where Java throws.
        """
        outcome = run_sticky(spec, cooperative=False, state=self._state)
        return AssignmentResult(strategy=self.name, assignment=outcome.assignment)
