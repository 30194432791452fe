"""Sarama's ``range`` balance strategy (``balance_strategy.go``, ``NewBalanceStrategyRange``).

Per topic, its subscribers sorted by member id (group instance ids play no part: Java and
kafka-python put static members first, librdkafka compares instance ids between two static
members), each given a contiguous range of the partitions, the first ones one more when they
do not divide evenly.

    >>> from assign_core.model import GroupSpec, Member
    >>> spec = GroupSpec(topics={"t": 5}, members=(
    ...     Member("b-1", ("t",), group_instance_id="static-a"), Member("a-1", ("t",))))
    >>> result = SaramaRangeAssignor().assign(spec)
    >>> for member_id, partitions in result.assignment.items():
    ...     print(member_id, *(p.partition for p in partitions))
    b-1 3 4
    a-1 0 1 2
"""

from __future__ import annotations

from assign_core.model import AssignmentResult, GroupSpec, Side, TopicPartition

__all__ = ["SaramaRangeAssignor"]


class SaramaRangeAssignor:
    """Sarama's ``range`` (``balanceStrategy.Plan`` with the range core)."""

    name = "range"
    side: Side = "client"
    implementation = "sarama"

    def assign(self, spec: GroupSpec) -> AssignmentResult:
        lists: dict[str, list[TopicPartition]] = {m.member_id: [] for m in spec.members}
        for topic, count in spec.topics.items():
            subscribers = sorted(
                {m.member_id for m in spec.members if topic in m.topics}, key=str.encode
            )
            if not subscribers:
                continue
            quota, extra = divmod(count, len(subscribers))
            for i, member_id in enumerate(subscribers):
                start = i * quota + min(extra, i)
                end = start + quota + (i < extra)
                lists[member_id] += (TopicPartition(topic, p) for p in range(start, end))
        return AssignmentResult(
            strategy=self.name, assignment={m: sorted(tps) for m, tps in lists.items()}
        )
