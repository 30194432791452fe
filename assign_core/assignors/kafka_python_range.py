"""kafka-python's ``range`` assignor (``kafka.coordinator.assignors.range``).

Java's contiguous ranges per topic, over the topic's subscribers in kafka-python's member
order (:mod:`assign_core.assignors._kafka_python_common`). Where it differs from Java's:

* when static and dynamic members alternate in JoinGroup order, only the last run of each
  kind is kept per topic, and the members of the earlier runs get nothing of that topic;
* every member's list is sorted by topic name, then partition (Java's follows its
  ``HashMap`` of topics).

The canonical example: the static ``S1``, the dynamic ``D1`` and the static ``S2`` join in
that order and read Order (6 partitions); ``S1``'s run is replaced by ``S2``'s::

    >>> from assign_core.model import GroupSpec, Member
    >>> spec = GroupSpec(topics={"Order": 6}, members=(
    ...     Member("S1-1", ("Order",), group_instance_id="s1"), Member("D1-1", ("Order",)),
    ...     Member("S2-1", ("Order",), group_instance_id="s2")))
    >>> for member_id, partitions in KafkaPythonRangeAssignor().assign(spec).assignment.items():
    ...     print(member_id, *map(str, partitions))
    S1-1
    D1-1 Order-3 Order-4 Order-5
    S2-1 Order-0 Order-1 Order-2
"""

from __future__ import annotations

from assign_core.assignors._kafka_python_common import member_order
from assign_core.model import AssignmentResult, GroupSpec, Side, TopicPartition

__all__ = ["KafkaPythonRangeAssignor"]


class KafkaPythonRangeAssignor:
    """kafka-python's ``RangePartitionAssignor`` (kafka-python 3.0)."""

    name = "range"
    side: Side = "client"
    implementation = "kafka-python"

    def assign(self, spec: GroupSpec) -> AssignmentResult:
        members = spec.members
        per_member: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
        topics = dict.fromkeys(t for m in members for t in m.topics)
        for topic in topics:
            count = spec.topics.get(topic)
            if count is None:
                continue  # no metadata for the topic: kafka-python logs and skips it
            consumers = member_order([m for m in members if topic in m.topics])
            quota, extra = divmod(count, len(consumers))
            start = 0
            for i, m in enumerate(consumers):
                length = quota + (i < extra)
                per_member[m.member_id] += (
                    TopicPartition(topic, p) for p in range(start, start + length)
                )
                start += length
        return AssignmentResult(
            strategy=self.name,
            assignment={m: sorted(tps) for m, tps in per_member.items()},
        )
