"""The typed model shared by every assignor, metric and CLI command.

A :class:`GroupSpec` is one group's membership at the moment of a rebalance: the topics with
their partition counts, the members in JoinGroup order (the order the leader inserts them into
its ``HashMap``), and optionally the replica racks of each partition and the topic ids (server
side). An assignor turns it into an :class:`AssignmentResult`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol


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


@dataclass(frozen=True, slots=True)
class AssignmentResult:
    """What an assignor returns.

    ``assignment`` has an entry (possibly empty) for every member, in ``GroupSpec.members``
    order. ``withheld`` (cooperative-sticky only) maps each partition held back for the
    second, follow-up rebalance to the member that will receive it then.
    """

    strategy: str
    assignment: Assignment
    withheld: dict[TopicPartition, str] = field(default_factory=dict)


class Assignor(Protocol):
    """A partition assignor, registered under its Kafka protocol name."""

    name: str
    side: Side

    def assign(self, spec: GroupSpec) -> AssignmentResult: ...
