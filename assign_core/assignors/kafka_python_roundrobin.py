"""kafka-python's ``roundrobin`` assignor (``kafka.coordinator.assignors.roundrobin``).

Java's deal (all partitions sorted by topic and partition, dealt in a circle, a member not
subscribed to the topic losing its turn) over kafka-python's member order
(:mod:`assign_core.assignors._kafka_python_common`): when static and dynamic members
alternate in JoinGroup order, only the last run of each kind is in the circle and the others
get nothing. Lists are sorted by topic, then partition, as Java's come out. When the member
whose turn it is does not subscribe to the partition's topic, kafka-python fails (its skip
loop looks the next member up by the wrong key: ``KeyError``), so groups with different
subscriptions get no assignment from a kafka-python leader; this raises
:class:`~assign_core.errors.AssignmentError` there.

The canonical example: the static ``S1``, the dynamic ``D1`` and the static ``S2`` join in
that order and read Order (5 partitions)::

    >>> from assign_core.model import GroupSpec, Member
    >>> spec = GroupSpec(topics={"Order": 5}, members=(
    ...     Member("S1-1", ("Order",), group_instance_id="s1"), Member("D1-1", ("Order",)),
    ...     Member("S2-1", ("Order",), group_instance_id="s2")))
    >>> result = KafkaPythonRoundRobinAssignor().assign(spec)
    >>> for member_id, partitions in result.assignment.items():
    ...     print(member_id, *map(str, partitions))
    S1-1
    D1-1 Order-1 Order-3
    S2-1 Order-0 Order-2 Order-4
"""

from __future__ import annotations

from assign_core.assignors._kafka_python_common import member_order
from assign_core.errors import AssignmentError
from assign_core.model import AssignmentResult, GroupSpec, Side, TopicPartition

__all__ = ["KafkaPythonRoundRobinAssignor"]


class KafkaPythonRoundRobinAssignor:
    """kafka-python's ``RoundRobinPartitionAssignor`` (kafka-python 3.0)."""

    name = "roundrobin"
    side: Side = "client"
    implementation = "kafka-python"

    def assign(self, spec: GroupSpec) -> AssignmentResult:
        members = spec.members
        lists: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
        subscribed = set().union(*(m.topics for m in members))
        circle = member_order(members)
        turn = 0
        for topic in sorted(t for t in subscribed if t in spec.topics):
            for p in range(spec.topics[topic]):
                member = circle[turn % len(circle)]
                if topic not in member.topics:
                    raise AssignmentError(
                        f"kafka-python's roundrobin fails (KeyError): {member.member_id!r} "
                        f"has the turn for {topic}-{p} but does not subscribe to {topic!r}"
                    )
                lists[member.member_id].append(TopicPartition(topic, p))
                turn += 1
        return AssignmentResult(strategy=self.name, assignment=lists)
