"""Pure: each poll's admin answers -> the version 2 events that publish what changed.

:class:`Changes` remembers, between polls, what it last published of each group, of the
topics and of the end offsets, and turns one poll's :class:`AdminAnswers` into:

* a ``group`` event for a group that is new or whose content (what the tracker uses: state,
  protocol, members, subscriptions, assignments, topics, session timeout, errors) changed,
  keyed by the group id;
* a ``heartbeat`` for a group that did not change, once every ``heartbeat_interval_ms``,
  keyed by the group id + NUL + ``heartbeat``, to its group event's partition;
* a ``poll`` event (key: the cluster + NUL + ``poll``) naming the other groups, unchanged
  at this poll, once every ``poll_event_interval_ms``: with the heartbeats, what tells
  "unchanged" from "not polled" (the job's snapshot age);
* in a ``group`` event, the poll before it (``previous_poll_ts_ms``, with the digest that
  poll found): the last time the group was seen as it was, which no ``poll`` event may
  have named. The tracker learns when a group was last seen settled and when a member was
  last listed to the poll, as with version 1's copies at every poll, when the change comes
  before the coordinator's record of it (a rebalance that starts and ends between two polls
  is judged by the last ``poll`` event or heartbeat naming the group: ``docs/events.md``);
* tombstones of both keys for a group no longer listed, so compaction forgets it;
* a ``topics`` event (key: the cluster) when the topics' metadata, the brokers, the listed
  groups or the topics any group touches changed;
* an ``end_offsets`` event (key: the cluster + NUL + ``end_offsets``) when the answers carry
  end offsets (the loop asks for them every ``end_offsets_interval_s``): the partitions some
  group consumes (has committed, or is assigned) whose end offset moved since the previous
  one, or all of them every ``full_interval_ms`` and the first time.

The group content is that of version 1's ``group`` event (:mod:`streaming.collector.events`),
without the committed offsets: the job reads those from ``__consumer_offsets``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from streaming import membership_event as wire
from streaming.collector.events import (
    AdminAnswers,
    MembershipEvent,
    consumed_partitions,
    group_event_v1,
    poll_envelope,
    split_issues,
    topics_event_v1,
)
from streaming.membership_event import Issue

#: The second part of a heartbeat's and of the end offsets' record key (after a NUL).
HEARTBEAT_KEY = "heartbeat"
END_OFFSETS_KEY = "end_offsets"
POLL_KEY = "poll"

Json = dict[str, Any]


def heartbeat_key(group_id: str) -> str:
    return f"{group_id}\x00{HEARTBEAT_KEY}"


def end_offsets_key(cluster: str) -> str:
    return f"{cluster}\x00{END_OFFSETS_KEY}"


def poll_key(cluster: str) -> str:
    return f"{cluster}\x00{POLL_KEY}"


def digest_of(value: Any) -> str:
    """A short hash of a JSON-able value (16 hex digits of BLAKE2b)."""
    return hashlib.blake2b(msgspec.json.encode(value), digest_size=8).hexdigest()


@dataclass
class _Group:
    digest: str
    published_ts_ms: int
    seen_ts_ms: int
    """The newest poll that found the group with ``digest``."""


@dataclass
class Changes:
    """What was last published; :meth:`events` turns one poll into the events to publish.

    Partition keys: a group's heartbeat goes where its ``group`` event goes (the record's
    ``partition_key``), so the two stay in order on one partition.
    """

    cluster: str
    heartbeat_interval_ms: int
    full_interval_ms: int
    poll_event_interval_ms: int = 0
    groups: dict[str, _Group] = field(default_factory=dict)
    poll_event_ts_ms: int | None = None
    topics_digest: str | None = None
    end_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    full_ts_ms: int | None = None

    def events(self, answers: AdminAnswers, *, snapshot_id: str) -> list[MembershipEvent]:
        """The events of one poll, in publishing order (groups sorted by id, then the
        ``topics`` event, then the ``end_offsets`` event); updates what was published."""
        ts = answers.snapshot_ts_ms
        envelope = poll_envelope(answers, 2, self.cluster, snapshot_id)
        group_issues, other_issues = split_issues(answers.issues)
        listed = {str(g["group_id"]): g for g in answers.groups}
        events: list[MembershipEvent] = []
        touched: set[str] = set()
        touched_by: dict[str, list[str]] = {}
        unchanged: list[str] = []
        for group_id in sorted(listed):
            full, topics = group_event_v1(
                {**envelope, "schema_version": 1},
                listed[group_id],
                answers.descriptions.get(group_id),
                answers.committed.get(group_id),
                {},
                group_issues.pop(group_id, []),
                answers.session_timeouts.get(group_id),
            )
            touched |= topics
            touched_by[group_id] = sorted(topics)
            published = self._group(envelope, full, ts)
            if published is None:
                unchanged.append(group_id)
            else:
                events.extend(published)
        if unchanged and self._poll_event_due(ts):
            self.poll_event_ts_ms = ts
            poll = wire.PollEvent(**envelope, event_type="poll", group_ids=unchanged)
            events.append(
                MembershipEvent.of(poll_key(self.cluster), poll, partition_key=self.cluster)
            )
        for group_id in sorted(set(self.groups) - set(listed)):
            events.extend(self._gone(envelope, group_id))
        for issues in group_issues.values():  # about a group that was not listed
            other_issues.extend(issues)
        events.extend(self._topics(envelope, answers, touched, other_issues, touched_by))
        if answers.end_offsets_ts_ms is not None:
            events.extend(self._end_offsets(envelope, answers, other_issues))
        return events

    def _poll_event_due(self, ts: int) -> bool:
        return (
            self.poll_event_ts_ms is None
            or ts - self.poll_event_ts_ms >= self.poll_event_interval_ms
        )

    # -- groups

    def _group(
        self, envelope: Json, full: wire.GroupEvent, ts: int
    ) -> list[MembershipEvent] | None:
        """The group's event at this poll; None when it is unchanged and no heartbeat is due
        (the poll's ``poll`` event names it)."""
        content: Json = {
            "group_id": full.group_id,
            "group_type": full.group_type,
            "protocol_type": full.protocol_type,
            "state": full.state,
            "protocol_name": full.protocol_name,
            "membership_source": full.membership_source,
            "member_count": full.member_count,
            "members": full.members,
            "topics": full.topics,
            "session_timeout_ms": full.session_timeout_ms,
        }
        digest = digest_of([content, full.errors])
        known = self.groups.get(full.group_id)
        if known is None or known.digest != digest:
            self.groups[full.group_id] = _Group(digest, ts, ts)
            event = wire.GroupEventV2(
                **envelope,
                event_type="group",
                **content,
                digest=digest,
                previous_poll_ts_ms=None if known is None else known.seen_ts_ms,
                previous_digest=None if known is None else known.digest,
                errors=full.errors,
            )
            return [MembershipEvent.of(full.group_id, event)]
        known.seen_ts_ms = ts
        if ts - known.published_ts_ms < self.heartbeat_interval_ms:
            return None
        beat = wire.HeartbeatEvent(
            **envelope,
            event_type="heartbeat",
            group_id=full.group_id,
            state=full.state,
            digest=digest,
        )
        self.groups[full.group_id] = _Group(digest, ts, ts)
        return [MembershipEvent.of(heartbeat_key(full.group_id), beat, partition_key=full.group_id)]

    def _gone(self, envelope: Json, group_id: str) -> list[MembershipEvent]:
        """A group no longer listed: the tombstones of its two keys."""
        del self.groups[group_id]
        out: list[MembershipEvent] = []
        out.append(MembershipEvent.tombstone(group_id))
        out.append(MembershipEvent.tombstone(heartbeat_key(group_id), partition_key=group_id))
        return out

    # -- topics and end offsets

    def _topics(
        self,
        envelope: Json,
        answers: AdminAnswers,
        touched: set[str],
        issues: list[Issue],
        touched_by: Mapping[str, list[str]],
    ) -> list[MembershipEvent]:
        v1 = topics_event_v1(
            {**envelope, "schema_version": 1},
            answers,
            touched,
            [i for i in issues if i.stage != "list_partition_offsets"],
            sorted(touched_by),
        )
        topics = [
            wire.TopicV2(
                topic=t.topic,
                topic_id=t.topic_id,
                is_internal=t.is_internal,
                partition_count=t.partition_count,
                error=t.error,
                partitions=[
                    wire.PartitionV2(
                        partition=p.partition,
                        leader_id=p.leader_id,
                        replicas=p.replicas,
                        isr=p.isr,
                        offline_replicas=p.offline_replicas,
                        replica_racks=p.replica_racks,
                    )
                    for p in t.partitions
                ],
            )
            for t in v1.topics
        ]
        content: Json = {
            "group_ids": v1.group_ids,
            "controller_id": v1.controller_id,
            "brokers": v1.brokers,
            "topics": topics,
            "errors": v1.errors,
        }
        # the topics each group touches count too: a group that starts consuming a topic
        # another group already touches needs the topic's metadata (its id, its racks)
        digest = digest_of([content, sorted(touched_by.items())])
        if digest == self.topics_digest:
            return []
        self.topics_digest = digest
        event = wire.TopicsEventV2(**envelope, event_type="topics", **content)
        return [MembershipEvent.of(self.cluster, event)]

    def _end_offsets(
        self, envelope: Json, answers: AdminAnswers, issues: list[Issue]
    ) -> list[MembershipEvent]:
        assert answers.end_offsets_ts_ms is not None
        by_group = consumed_partitions(answers.descriptions, answers.committed)
        consumers = set(by_group)
        consumed = set().union(*by_group.values())
        ts = answers.snapshot_ts_ms
        full = self.full_ts_ms is None or ts - self.full_ts_ms >= self.full_interval_ms
        known = {tp: o for tp, o in answers.end_offsets.items() if tp in consumed}
        if full:
            self.full_ts_ms = ts
            moved = known
            self.end_offsets = dict(known)
        else:
            moved = {tp: o for tp, o in known.items() if self.end_offsets.get(tp) != o}
            self.end_offsets.update(moved)
            for tp in set(self.end_offsets) - consumed:
                del self.end_offsets[tp]
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for (topic, partition), offset in sorted(moved.items()):
            by_topic.setdefault(topic, []).append((partition, offset))
        event = wire.EndOffsetsEvent(
            **envelope,
            event_type="end_offsets",
            group_ids=sorted(consumers),
            end_offsets_ts_ms=answers.end_offsets_ts_ms,
            full=full,
            topics=[
                wire.TopicEndOffsets(
                    topic=t,
                    partitions=[p for p, _ in parts],
                    end_offsets=[o for _, o in parts],
                )
                for t, parts in by_topic.items()
            ],
            errors=[i for i in issues if i.stage == "list_partition_offsets"],
        )
        return [
            MembershipEvent.of(end_offsets_key(self.cluster), event, partition_key=self.cluster)
        ]
