"""The typed model shared by every assignor, metric and CLI command.

A :class:`GroupSpec` is one group's membership at the moment of a rebalance: the topics with
their partition counts, the members in JoinGroup order (the order the leader inserts them into
its ``HashMap``), and optionally the replica racks of each partition and the topic ids (server
side). An assignor turns it into an :class:`AssignmentResult`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol, runtime_checkable


class TopicPartition(NamedTuple):
    """A partition of a topic; orders like Java's ``(topic, partition)`` for BMP topic names."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class Member:
    """One member of a group as the assignor sees it.

    ``owned_partitions`` and ``generation`` mean, per strategy:

    * ``sticky``: the previous assignment and generation encoded in the StickyAssignor user
      data (``generation=None``: a v0 user data without generation, or none at all when
      nothing is owned);
    * ``cooperative-sticky``: the subscription's owned partitions and generation id;
    * server-side strategies: the member's current (target) assignment; ``generation`` unused;
    * ``range``/``roundrobin``: unused (these assignors are not sticky).
    """

    member_id: str
    topics: tuple[str, ...]
    group_instance_id: str | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation: int | None = None
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """The input of an assignor: one group's membership and the topic metadata it sees.

    ``topics`` maps topic name to partition count. ``members`` is in JoinGroup order.
    ``partition_racks[topic][p]`` lists the racks of the replicas of partition ``p``.
    ``topic_ids`` maps topic name to its Kafka ``Uuid`` (22-char URL-safe base64), needed by
    the server-side assignors (iteration order of ``HashSet<Uuid>`` depends on it).
    """

    topics: Mapping[str, int]
    members: tuple[Member, ...]
    partition_racks: Mapping[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)
    topic_ids: Mapping[str, str] = field(default_factory=dict)

    def member(self, member_id: str) -> Member:
        for m in self.members:
            if m.member_id == member_id:
                return m
        raise KeyError(member_id)


#: member id -> partitions, each list in the order the Java assignor returns it.
Assignment = dict[str, list[TopicPartition]]

Side = Literal["client", "server"]


class PartitionNumbers(Protocol):
    """A result as the coordinator's assignors hold it: every member's partitions as numbers
    per topic, already in the iteration order of Java's ``Map<Uuid, Set<Integer>>``.

    :meth:`lists` makes the ``TopicPartition`` lists from them (the Java oracle makes Java's
    lists from its result after its clock stops; here on the first read of
    :attr:`AssignmentResult.assignment`), with the same lists as an assignor that made them
    at once.
    """

    def lists(self) -> Assignment:
        """Member id -> ``TopicPartition`` list, an entry for every member in ``GroupSpec``
        order."""
        ...


class AssignmentResult:
    """What an assignor returns.

    ``assignment`` has an entry (possibly empty) for every member, in ``GroupSpec.members``
    order. ``withheld`` (cooperative-sticky only) maps each partition held back for the
    second, follow-up rebalance to the member that will receive it then.

    A server-side assignor may return its answer as :class:`PartitionNumbers` (``numbers=``)
    instead of lists: ``assignment`` then makes the lists on its first read (once, the
    collector paused meanwhile: :func:`~assign_core.partition_cache.made_in_bulk`) and
    keeps them. Either way the result reads the same, and compares equal by its strategy,
    lists and withheld partitions. Immutable once made.
    """

    __slots__ = ("_assignment", "_lock", "_numbers", "strategy", "withheld")

    strategy: str
    withheld: dict[TopicPartition, str]
    _assignment: Assignment | None
    _numbers: PartitionNumbers | None
    _lock: threading.Lock | None

    def __init__(
        self,
        strategy: str,
        assignment: Assignment | None = None,
        withheld: dict[TopicPartition, str] | None = None,
        *,
        numbers: PartitionNumbers | None = None,
    ) -> None:
        if (assignment is None) == (numbers is None):
            raise TypeError("AssignmentResult takes either an assignment or numbers")
        setattr_ = object.__setattr__
        setattr_(self, "strategy", strategy)
        setattr_(self, "withheld", {} if withheld is None else withheld)
        setattr_(self, "_assignment", assignment)
        setattr_(self, "_numbers", numbers)
        setattr_(self, "_lock", None if numbers is None else threading.Lock())

    @property
    def assignment(self) -> Assignment:
        made = self._assignment
        if made is not None:
            return made
        assert self._lock is not None and self._numbers is not None
        with self._lock:
            if self._assignment is None:
                from assign_core.partition_cache import made_in_bulk

                object.__setattr__(self, "_assignment", made_in_bulk(self._numbers.lists))
        assert self._assignment is not None
        return self._assignment

    @property
    def numbers(self) -> PartitionNumbers | None:
        """The answer as partition numbers, when the assignor gave it so."""
        return self._numbers

    def __reduce__(self) -> tuple[type[AssignmentResult], tuple[object, ...]]:
        """Pickled and copied with its lists (made first if held as numbers)."""
        return (AssignmentResult, (self.strategy, self.assignment, self.withheld))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"AssignmentResult is immutable (cannot set {name!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AssignmentResult):
            return NotImplemented
        return (self.strategy, self.assignment, self.withheld) == (
            other.strategy,
            other.assignment,
            other.withheld,
        )

    __hash__ = None  # type: ignore[assignment]  # holds dicts, as the dataclass it was

    def __repr__(self) -> str:
        return (
            f"AssignmentResult(strategy={self.strategy!r}, assignment={self.assignment!r}, "
            f"withheld={self.withheld!r})"
        )


class Assignor(Protocol):
    """A partition assignor, registered under its Kafka protocol name."""

    name: str
    side: Side

    def assign(self, spec: GroupSpec) -> AssignmentResult: ...


@runtime_checkable
class HashOrderedAssignor(Assignor, Protocol):
    """An assignor whose answer depends on the string hash order of the process that runs
    it (kafka-python's sticky family): ``alternatives`` gives its answers over such orders
    (an answer that fails is the exception), at most ``limit``, and whether they are all."""

    def alternatives(
        self, spec: GroupSpec, limit: int
    ) -> tuple[Sequence[AssignmentResult | Exception], bool]: ...
