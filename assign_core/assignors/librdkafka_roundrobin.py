"""librdkafka's ``roundrobin`` assignor (``rdkafka_roundrobin_assignor.c``).

The same deal as Java's ``roundrobin``: all partitions, topics sorted by name and partitions
ascending, go one by one to the members in a circle, a member not subscribed to the topic
losing its turn. The members are in librdkafka's order
(:mod:`assign_core.assignors._librdkafka_common`): group instance ids are compared only
between two static members, member ids otherwise, where Java puts every static member first.

The canonical example: the static member ``D`` (instance id ``static-d``) and the dynamic
``A`` read Order (7 partitions); ``A`` is dealt first, Java would start with ``D``::

    >>> from assign_core.model import GroupSpec, Member
    >>> spec = GroupSpec(topics={"Order": 7}, members=(
    ...     Member("D-1", ("Order",), group_instance_id="static-d"), Member("A-1", ("Order",))))
    >>> result = LibrdkafkaRoundRobinAssignor().assign(spec)
    >>> for member_id, partitions in result.assignment.items():
    ...     print(member_id, *map(str, partitions))
    D-1 Order-1 Order-3 Order-5
    A-1 Order-0 Order-2 Order-4 Order-6
"""

from __future__ import annotations

from assign_core.assignors._librdkafka_common import sorted_members
from assign_core.errors import AssignmentError
from assign_core.model import AssignmentResult, GroupSpec, Side, TopicPartition

__all__ = ["LibrdkafkaRoundRobinAssignor"]


class LibrdkafkaRoundRobinAssignor:
    """librdkafka's ``roundrobin`` (``rd_kafka_roundrobin_assignor_assign_cb``)."""

    name = "roundrobin"
    side: Side = "client"
    implementation = "librdkafka"

    def assign(self, spec: GroupSpec) -> AssignmentResult:
        members = sorted_members(spec.members)
        lists: dict[str, list[TopicPartition]] = {m.member_id: [] for m in spec.members}
        subscribed = set().union(*(m.topics for m in members))
        nxt = -1
        for topic in sorted(t for t in spec.topics if t in subscribed):
            for p in range(spec.topics[topic]):
                # the next member in the circle that subscribes to the topic
                for _ in range(len(members)):
                    nxt = (nxt + 1) % len(members)
                    if topic in members[nxt].topics:
                        break
                else:  # unreachable: the topic is eligible, so someone subscribes
                    raise AssignmentError(f"no subscriber of {topic!r}")
                lists[members[nxt].member_id].append(TopicPartition(topic, p))
        return AssignmentResult(strategy=self.name, assignment=lists)
