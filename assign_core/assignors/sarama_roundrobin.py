"""Sarama's ``roundrobin`` balance strategy (``balance_strategy.go``, ``roundRobinBalancer``).

One deal over all partitions of the subscribed topics, in the order of the strings
``"<topic>-<partition>"`` compared byte by byte (so ``t-10`` comes before ``t-2``), to the
members sorted by member id (group instance ids play no part), a member not subscribed to a
partition's topic losing its turn. Java sorts topics by name and partitions by number and
puts static members first.

    >>> from assign_core.model import GroupSpec, Member
    >>> spec = GroupSpec(topics={"t": 12}, members=(Member("m-1", ("t",)), Member("m-2", ("t",))))
    >>> result = SaramaRoundRobinAssignor().assign(spec)
    >>> for member_id, partitions in result.assignment.items():
    ...     print(member_id, *(p.partition for p in partitions))
    m-1 0 10 2 4 6 8
    m-2 1 11 3 5 7 9
"""

from __future__ import annotations

from assign_core.model import AssignmentResult, GroupSpec, Side, TopicPartition

__all__ = ["SaramaRoundRobinAssignor"]


class SaramaRoundRobinAssignor:
    """Sarama's ``roundrobin`` (``roundRobinBalancer.Plan``)."""

    name = "roundrobin"
    side: Side = "client"
    implementation = "sarama"

    def assign(self, spec: GroupSpec) -> AssignmentResult:
        members = sorted(spec.members, key=lambda m: m.member_id.encode())
        lists: dict[str, list[TopicPartition]] = {m.member_id: [] for m in spec.members}
        subscribed = set().union(*(m.topics for m in members))
        partitions = sorted(
            (
                TopicPartition(t, p)
                for t in spec.topics
                if t in subscribed
                for p in range(spec.topics[t])
            ),
            key=lambda tp: f"{tp.topic}-{tp.partition}".encode(),
        )
        i, n = 0, len(members)
        for tp in partitions:
            # the next member from i on that subscribes to the topic (i moves past the others)
            for _ in range(n):
                if tp.topic in members[i % n].topics:
                    break
                i += 1
            lists[members[i % n].member_id].append(tp)
            i += 1
        return AssignmentResult(strategy=self.name, assignment=lists)
