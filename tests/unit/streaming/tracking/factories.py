"""Factories of codec records, collector events and observations for the tracker tests.

Records are built as the codec would decode them (``streaming.codec.model``), so scenarios
read like the coordinator's log: ``log.gm(generation, members, ts=...)`` appends a
GroupMetadata record at the next offset of ``__consumer_offsets`` partition 7.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assign_core.assignors.registry import get_assignor
from assign_core.model import GroupSpec, Member, TopicPartition
from streaming.codec.model import (
    Assignment,
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    CooperativeStickyUserData,
    GroupMetadata,
    GroupMetadataTombstone,
    MemberKey,
    MemberMetadata,
    OffsetCommit,
    OffsetCommitTombstone,
    StickyUserData,
    Subscription,
    Tombstone,
    TopicIdPartitions,
    TopicMetadata,
    TopicPartitions,
)
from streaming.tracking import GroupState, Observation, apply
from streaming.tracking.config import DEFAULT_CONFIG, TrackerConfig
from streaming.tracking.events import TrackerEvent
from streaming.tracking.model import (
    GroupSnapshot,
    Payload,
    SnapshotBroker,
    SnapshotMember,
    SnapshotPartition,
    SnapshotTopic,
    TopicsSnapshot,
)

CLUSTER = "local"
GROUP = "orders-app"
OFFSETS_PARTITION = 7


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def tps(topic: str, *partitions: int) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(topic, p) for p in partitions)


def entries(partitions: Iterable[TopicPartition]) -> tuple[TopicPartitions, ...]:
    """Consumer-protocol entries, topics in first-appearance order (as the Java client)."""
    by_topic: dict[str, list[int]] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(p)
    return tuple(TopicPartitions(t, tuple(ps)) for t, ps in by_topic.items())


def subscription(
    topics: Sequence[str],
    *,
    owned: Iterable[TopicPartition] = (),
    generation: int = -1,
    rack: str | None = None,
    user_data: bytes | None = None,
    assignor_data: StickyUserData | CooperativeStickyUserData | None = None,
) -> Subscription:
    return Subscription(
        version=3,
        topics=tuple(sorted(topics)),
        user_data=user_data,
        owned_partitions=entries(owned),
        generation_id=generation,
        rack_id=rack,
        assignor_data=assignor_data,
    )


def member(
    member_id: str,
    topics: Sequence[str],
    partitions: Iterable[TopicPartition] = (),
    *,
    instance: str | None = None,
    session_timeout_ms: int = 45_000,
    owned: Iterable[TopicPartition] = (),
    generation: int = -1,
    rack: str | None = None,
    user_data: bytes | None = None,
    assignor_data: StickyUserData | CooperativeStickyUserData | None = None,
) -> MemberMetadata:
    return MemberMetadata(
        member_id=member_id,
        group_instance_id=instance,
        client_id=member_id.split("-")[0],
        client_host="/10.0.0.1",
        rebalance_timeout_ms=300_000,
        session_timeout_ms=session_timeout_ms,
        subscription=subscription(
            topics,
            owned=owned,
            generation=generation,
            rack=rack,
            user_data=user_data,
            assignor_data=assignor_data,
        ),
        assignment=Assignment(3, entries(partitions), None),
        subscription_bytes=None,
        assignment_bytes=None,
    )


def group_metadata(
    generation: int,
    members: Sequence[MemberMetadata],
    *,
    protocol: str | None = "range",
    leader: str | None = None,
    current_state_ts_ms: int = -1,
    protocol_type: str = "consumer",
    group: str = GROUP,
) -> GroupMetadata:
    return GroupMetadata(
        group_id=group,
        value_version=3,
        protocol_type=protocol_type,
        generation=generation,
        protocol=protocol if members else None,
        leader=(leader or members[0].member_id) if members else None,
        current_state_ts_ms=current_state_ts_ms,
        members=tuple(members),
    )


def commit(
    topic: str,
    partition: int,
    offset: int,
    *,
    ts: int,
    group: str = GROUP,
    topic_id: str = "AAAAAAAAAAAAAAAAAAAAAA",
) -> OffsetCommit:
    """An OffsetCommit value; ``topic_id`` as Kafka 4.x writes it (v4 tag 0; zero: none)."""
    return OffsetCommit(
        record_type=1,
        group_id=group,
        topic=topic,
        partition=partition,
        value_version=3,
        offset=offset,
        leader_epoch=0,
        metadata="",
        commit_ts_ms=ts,
        expire_ts_ms=-1,
        topic_id=topic_id,
    )


def assign(
    strategy: str,
    members: Sequence[tuple[str, Sequence[str]]],
    topics: Mapping[str, int],
    *,
    owned: Mapping[str, Sequence[TopicPartition]] | None = None,
    generation: int | None = None,
    instances: Mapping[str, str] | None = None,
) -> dict[str, tuple[TopicPartition, ...]]:
    """What ``assign_core`` gives (used as the *actual* assignment of realistic records)."""
    owned = owned or {}
    instances = instances or {}
    spec = GroupSpec(
        topics=dict(topics),
        members=tuple(
            Member(
                member_id=m,
                topics=tuple(ts),
                group_instance_id=instances.get(m),
                owned_partitions=tuple(owned.get(m, ())),
                generation=generation if owned.get(m) else None,
            )
            for m, ts in members
        ),
    )
    result = get_assignor(strategy).assign(spec)
    return {m: tuple(p) for m, p in result.assignment.items()}


# -- KIP-848 --------------------------------------------------------------------------------

TOPIC_IDS = {
    "Order": "T3JkZXItdG9waWMtaWQtMQ",
    "Stock": "U3RvY2stdG9waWMtaWQtMg",
    "Big": "QmlnLXRvcGljLWlkLTMtLQ",
}


def id_entries(partitions: Iterable[TopicPartition]) -> tuple[TopicIdPartitions, ...]:
    by_topic: dict[str, list[int]] = {}
    for t, p in partitions:
        by_topic.setdefault(TOPIC_IDS[t], []).append(p)
    return tuple(TopicIdPartitions(tid, tuple(ps)) for tid, ps in by_topic.items())


def cg_member(
    member_id: str, topics: Sequence[str], *, instance: str | None = None, group: str = GROUP
) -> ConsumerGroupMemberMetadata:
    return ConsumerGroupMemberMetadata(
        group_id=group,
        member_id=member_id,
        value_version=0,
        instance_id=instance,
        rack_id=None,
        client_id="java-client",
        client_host="/10.0.0.9",
        subscribed_topic_names=tuple(sorted(topics)),
        subscribed_topic_regex=None,
        rebalance_timeout_ms=300_000,
        server_assignor=None,
        classic_member_metadata=None,
    )


def cg_epoch(epoch: int, group: str = GROUP) -> ConsumerGroupMetadata:
    return ConsumerGroupMetadata(group_id=group, value_version=0, epoch=epoch, metadata_hash=0)


def cg_partitions(counts: Mapping[str, int], group: str = GROUP) -> ConsumerGroupPartitionMetadata:
    return ConsumerGroupPartitionMetadata(
        group_id=group,
        value_version=0,
        topics=tuple(TopicMetadata(TOPIC_IDS[t], t, n, ()) for t, n in counts.items()),
    )


def cg_target(
    member_id: str, partitions: Iterable[TopicPartition], group: str = GROUP
) -> ConsumerGroupTargetAssignmentMember:
    return ConsumerGroupTargetAssignmentMember(
        group_id=group,
        member_id=member_id,
        value_version=0,
        topic_partitions=id_entries(partitions),
    )


def cg_target_epoch(epoch: int, group: str = GROUP) -> ConsumerGroupTargetAssignmentMetadata:
    return ConsumerGroupTargetAssignmentMetadata(
        group_id=group, value_version=0, assignment_epoch=epoch, assignment_ts_ms=0
    )


def cg_current(
    member_id: str,
    epoch: int,
    partitions: Iterable[TopicPartition],
    *,
    state: int = 0,
    pending: Iterable[TopicPartition] = (),
    group: str = GROUP,
) -> ConsumerGroupCurrentMemberAssignment:
    return ConsumerGroupCurrentMemberAssignment(
        group_id=group,
        member_id=member_id,
        value_version=0,
        member_epoch=epoch,
        previous_member_epoch=epoch - 1,
        state=state,
        assigned_partitions=id_entries(partitions),
        partitions_pending_revocation=id_entries(pending),
    )


def cg_member_gone(member_id: str, group: str = GROUP) -> list[Tombstone]:
    """The three tombstones of a member that leaves, in the coordinator's order."""
    key = MemberKey(group, member_id)
    return [Tombstone(8, key), Tombstone(7, key), Tombstone(5, key)]


# -- collector events -----------------------------------------------------------------------


def snapshot_member(member_id: str, instance: str | None = None) -> SnapshotMember:
    return SnapshotMember(
        member_id=member_id,
        group_instance_id=instance,
        client_id=member_id.split("-")[0],
        client_host="/10.0.0.1",
        rack_id=None,
        subscribed_topics=None,
        owned_partitions=None,
        subscription_generation_id=None,
        assignment=None,
        assigned_partition_count=None,
    )


def group_snapshot(
    ts: int,
    state: str,
    member_ids: Sequence[str] = (),
    *,
    topics: Sequence[str] = (),
    group: str = GROUP,
) -> GroupSnapshot:
    return GroupSnapshot(
        cluster=CLUSTER,
        kafka_cluster_id="cI-bUO6oTYqMKKMlo1H_xg",
        snapshot_id=f"snap-{ts}",
        snapshot_ts_ms=ts,
        errors=(),
        group_id=group,
        group_type="classic",
        protocol_type="consumer",
        state=state,
        protocol_name="range" if state == "Stable" else None,
        membership_source="describe_groups",
        member_count=len(member_ids),
        members=tuple(snapshot_member(m) for m in member_ids),
        topics=tuple(sorted(topics)),
        committed_offsets=None,
    )


def admin_topics(topics: Mapping[str, int]) -> list[dict[str, Any]]:
    """The collector's metadata answer for ``topics`` (topic -> partition count), every
    partition led by broker 1 (the shape :class:`~streaming.collector.AdminAnswers` holds)."""
    return [
        {
            "name": t,
            "error_code": 0,
            "is_internal": False,
            "topic_id": None,
            "partitions": [
                {"partition_index": p, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}
                for p in range(n)
            ],
        }
        for t, n in topics.items()
    ]


def topics_snapshot(
    ts: int,
    topics: Mapping[str, Sequence[int]],
    *,
    racks: Mapping[str, Sequence[Sequence[str]]] | None = None,
    end_offsets_ts_ms: int | None = None,
    groups: Sequence[str] = (GROUP,),
) -> TopicsSnapshot:
    """``topics`` maps topic -> end offset of each partition (the count is the length)."""
    racks = racks or {}
    return TopicsSnapshot(
        cluster=CLUSTER,
        kafka_cluster_id="cI-bUO6oTYqMKKMlo1H_xg",
        snapshot_id=f"snap-{ts}",
        snapshot_ts_ms=ts,
        errors=(),
        group_ids=tuple(groups),
        controller_id=1,
        brokers=(SnapshotBroker(1, "127.0.0.1", 19092, None, False),),
        end_offsets_ts_ms=end_offsets_ts_ms if end_offsets_ts_ms is not None else ts,
        topics=tuple(
            SnapshotTopic(
                topic=t,
                topic_id=TOPIC_IDS.get(t),
                is_internal=False,
                partition_count=len(ends),
                error=None,
                partitions=tuple(
                    SnapshotPartition(
                        partition=p,
                        leader_id=1,
                        replicas=(1,),
                        isr=(1,),
                        offline_replicas=(),
                        replica_racks=tuple(racks[t][p]) if t in racks else (None,),
                        end_offset=end,
                    )
                    for p, end in enumerate(ends)
                ),
            )
            for t, ends in topics.items()
        ),
    )


# -- a log of observations and a tracker that applies them ----------------------------------


@dataclass
class Log:
    """Builds observations with increasing offsets per source."""

    offsets_partition: int = OFFSETS_PARTITION
    next_offset: int = 0
    next_membership_offset: int = 0
    observations: list[Observation] = field(default_factory=list)

    def rec(self, payload: Payload, ts: int) -> Observation:
        o = Observation("offsets", self.offsets_partition, self.next_offset, ts, payload)
        self.next_offset += 1
        self.observations.append(o)
        return o

    def snap(self, payload: GroupSnapshot | TopicsSnapshot) -> Observation:
        o = Observation(
            "membership", 0, self.next_membership_offset, payload.snapshot_ts_ms + 5, payload
        )
        self.next_membership_offset += 1
        self.observations.append(o)
        return o

    def gm(
        self, generation: int, members: Sequence[MemberMetadata], *, ts: int, **kw: Any
    ) -> Observation:
        kw.setdefault("current_state_ts_ms", ts - 200)
        return self.rec(group_metadata(generation, members, **kw), ts)

    def commits(
        self, partitions: Iterable[TopicPartition], *, ts: int, offset: int | None = None
    ) -> list[Observation]:
        return [
            self.rec(commit(t, p, offset if offset is not None else ts // 100, ts=ts), ts)
            for t, p in partitions
        ]

    def take(self) -> list[Observation]:
        out, self.observations = self.observations, []
        return out


@dataclass
class Tracker:
    """Applies batches and keeps every event."""

    config: TrackerConfig = DEFAULT_CONFIG
    state: GroupState = field(default_factory=lambda: GroupState.new(CLUSTER, GROUP))
    events: list[TrackerEvent] = field(default_factory=list)

    def feed(
        self, observations: Sequence[Observation], now_ms: int | None = None
    ) -> list[TrackerEvent]:
        now = (
            now_ms if now_ms is not None else max((o.timestamp_ms for o in observations), default=0)
        )
        self.state, events = apply(self.state, observations, now, config=self.config)
        self.events.extend(events)
        return events

    def of(self, cls: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]


def offset_tombstone(topic: str, partition: int, group: str = GROUP) -> OffsetCommitTombstone:
    return OffsetCommitTombstone(record_type=1, group_id=group, topic=topic, partition=partition)


def group_tombstone(group: str = GROUP) -> GroupMetadataTombstone:
    return GroupMetadataTombstone(group_id=group)
