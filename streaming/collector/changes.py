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

Both are split by topic into chunks of at most ``chunk_bytes`` of JSON (:mod:`.chunks`), each
a record under a key of its own (:func:`topics_key`, :func:`end_offsets_key`: the first
chunk's is the unsplit event's) naming the groups its topics reach; a ``topics`` chunk is
published when its content changed, every ``end_offsets`` chunk each time, and the keys past
the last chunk (fewer chunks than before) get tombstones, so the compacted topic keeps the
current chunks only.

The group content is that of version 1's ``group`` event (:mod:`streaming.collector.events`),
without the committed offsets: the job reads those from ``__consumer_offsets``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from streaming import membership_event as wire
from streaming.collector.chunks import Piece, json_length, pack
from streaming.collector.events import (
    AdminAnswers,
    MembershipEvent,
    consumed_partitions,
    group_event_v1,
    poll_envelope,
    split_issues,
    topics_event_v1,
)
from streaming.config import DEFAULT_CHUNK_BYTES
from streaming.membership_event import Issue

#: The second part of a heartbeat's and of the end offsets' record key (after a NUL).
HEARTBEAT_KEY = "heartbeat"
END_OFFSETS_KEY = "end_offsets"
TOPICS_KEY = "topics"
POLL_KEY = "poll"

Json = dict[str, Any]


def heartbeat_key(group_id: str) -> str:
    return f"{group_id}\x00{HEARTBEAT_KEY}"


def end_offsets_key(cluster: str, chunk: int = 0) -> str:
    """The key of the ``end_offsets`` event's chunk ``chunk`` (the first: no index)."""
    key = f"{cluster}\x00{END_OFFSETS_KEY}"
    return key if chunk == 0 else f"{key}\x00{chunk}"


def topics_key(cluster: str, chunk: int = 0) -> str:
    """The key of the ``topics`` event's chunk ``chunk``: the cluster label for the first
    (the key of the unsplit event), else the label, NUL, ``topics``, NUL and the index."""
    return cluster if chunk == 0 else f"{cluster}\x00{TOPICS_KEY}\x00{chunk}"


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
    end_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    full_ts_ms: int | None = None
    end_offsets_ts_ms: int | None = None
    """The ``end_offsets_ts_ms`` of the last ``end_offsets`` event."""
    reaches: list[dict[str, frozenset[str]]] = field(default_factory=list)
    """The groups consuming each topic as of the last :data:`STEADY_EVENTS` ``end_offsets``
    events, newest last."""
    failed_topics: frozenset[str] = frozenset()
    """The topics whose end offsets the last ``end_offsets`` event could not give (readers
    have no end offset of its time to add a change to)."""
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    topics_digests: dict[int, str] = field(default_factory=dict)
    """The digest of the ``topics`` chunk last published under each chunk key."""
    topics_keys: int = 0
    """How many ``topics`` chunk keys hold a record (tombstones for those past the current
    chunks); carried over to the memory that replaces this one after a failed poll."""
    end_offsets_keys: int = 0

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
        """The ``topics`` event in chunks of at most ``chunk_bytes`` (:mod:`.chunks`): those
        whose content changed since they were published under their key, and the tombstones
        of the keys past the last chunk."""
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
        by_name = {t.topic: t for t in topics}
        reach = _reach(touched_by)
        topic_issues, other_issues = _issues_by_topic(v1.errors, by_name)
        idle = frozenset(g for g, ts in touched_by.items() if not ts)
        fixed = wire.TopicsEventV2(
            **envelope,
            event_type="topics",
            chunk=_WIDEST,
            chunks=_WIDEST,
            controller_id=v1.controller_id,
            brokers=v1.brokers,
            errors=other_issues,
        )
        pieces = [Piece(None, 0, idle)] + [
            Piece(
                t.topic,
                json_length(t) + 1 + sum(json_length(i) + 1 for i in topic_issues.get(t.topic, ())),
                reach.get(t.topic, frozenset()),
            )
            for t in topics
        ]
        chunks = pack(pieces, fixed=json_length(fixed), bound=self.chunk_bytes)
        out: list[MembershipEvent] = []
        for index, chunk in enumerate(chunks):
            content: Json = {
                "chunk": index,
                "chunks": len(chunks),
                "group_ids": sorted(chunk.groups),
                "controller_id": v1.controller_id,
                "brokers": v1.brokers,
                "topics": [by_name[t] for t in chunk.topics],
                "errors": [i for t in chunk.topics for i in topic_issues.get(t, ())]
                + (other_issues if index == 0 else []),
            }
            # the groups touching each topic count too: a group that starts consuming a topic
            # another group already touches needs the topic's metadata (its id, its racks)
            digest = digest_of([content, [(t, sorted(reach.get(t, ()))) for t in chunk.topics]])
            if self.topics_digests.get(index) == digest:
                continue
            self.topics_digests[index] = digest
            event = wire.TopicsEventV2(**envelope, event_type="topics", **content)
            out.append(
                MembershipEvent.of(
                    topics_key(self.cluster, index), event, partition_key=self.cluster
                )
            )
        for index in range(len(chunks), self.topics_keys):
            self.topics_digests.pop(index, None)
        out += _tombstones(self.cluster, topics_key, len(chunks), self.topics_keys)
        self.topics_keys = len(chunks)
        return out

    def _end_offsets(
        self, envelope: Json, answers: AdminAnswers, issues: list[Issue]
    ) -> list[MembershipEvent]:
        """The ``end_offsets`` event in chunks of at most ``chunk_bytes``, every chunk at
        every call; each covers its topics (``covered_topics``, null when there is one) and
        names the groups consuming them.

        Unless ``full``, the partitions of a *steady* topic (consumed by the same groups in
        the last :data:`STEADY_EVENTS` events, its end offsets read in the last one) that
        moved, each as its change since the last event (``moved_by``) when that event gave
        it; every partition of any other topic, as its end offset (a group newly on the
        topic has no end offset to add a change to). A change is a few digits where an
        end offset is many, most of what the event weighs."""
        assert answers.end_offsets_ts_ms is not None
        by_group = consumed_partitions(answers.descriptions, answers.committed)
        consumed = set().union(*by_group.values())
        ts = answers.snapshot_ts_ms
        full = self.full_ts_ms is None or ts - self.full_ts_ms >= self.full_interval_ms
        known = {tp: o for tp, o in answers.end_offsets.items() if tp in consumed}
        reach = _reach({g: sorted({t for t, _ in tps}) for g, tps in by_group.items()})
        base: dict[tuple[str, int], int] = {}
        if full:
            self.full_ts_ms = ts
            moved = known
            self.end_offsets = dict(known)
        else:
            steady = {
                t
                for t in reach
                if len(self.reaches) == STEADY_EVENTS
                and all(r.get(t) == reach[t] for r in self.reaches)
                and t not in self.failed_topics
            }
            # a topic not steady: every partition, as its end offset (a group new on the
            # topic, or one whose last read failed, has none as of the last event)
            moved = {
                tp: o
                for tp, o in known.items()
                if tp[0] not in steady or self.end_offsets.get(tp) != o
            }
            base = {
                tp: self.end_offsets[tp]
                for tp in moved
                if tp[0] in steady and tp in self.end_offsets
            }
            self.end_offsets.update(moved)
            for tp in set(self.end_offsets) - consumed:
                del self.end_offsets[tp]
        previous_ts = None if full else self.end_offsets_ts_ms
        self.end_offsets_ts_ms = answers.end_offsets_ts_ms
        self.reaches = [*self.reaches, reach][-STEADY_EVENTS:]
        failed = [i for i in issues if i.stage == "list_partition_offsets"]
        self.failed_topics = frozenset(i.topic for i in failed if i.topic is not None)
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for (topic, partition), offset in sorted(moved.items()):
            by_topic.setdefault(topic, []).append((partition, offset))
        entries = {t: _topic_end_offsets(t, parts, base) for t, parts in by_topic.items()}
        topic_issues, other_issues = _issues_by_topic(failed, reach)
        fixed = wire.EndOffsetsEvent(
            **envelope,
            event_type="end_offsets",
            chunk=_WIDEST,
            chunks=_WIDEST,
            end_offsets_ts_ms=answers.end_offsets_ts_ms,
            full=full,
            covered_topics=[],
            previous_end_offsets_ts_ms=previous_ts,
            errors=other_issues,
        )
        pieces = [
            Piece(
                t,
                json_length(t)
                + 1
                + (json_length(entries[t]) + 1 if t in entries else 0)
                + sum(json_length(i) + 1 for i in topic_issues.get(t, ())),
                reach[t],
            )
            for t in sorted(reach)
        ]
        chunks = pack(pieces, fixed=json_length(fixed), bound=self.chunk_bytes)
        out: list[MembershipEvent] = []
        for index, chunk in enumerate(chunks):
            event = wire.EndOffsetsEvent(
                **envelope,
                event_type="end_offsets",
                chunk=index,
                chunks=len(chunks),
                group_ids=sorted(chunk.groups),
                end_offsets_ts_ms=answers.end_offsets_ts_ms,
                full=full,
                covered_topics=None if len(chunks) == 1 else list(chunk.topics),
                previous_end_offsets_ts_ms=previous_ts,
                topics=[entries[t] for t in chunk.topics if t in entries],
                errors=[i for t in chunk.topics for i in topic_issues.get(t, ())]
                + (other_issues if index == 0 else []),
            )
            out.append(
                MembershipEvent.of(
                    end_offsets_key(self.cluster, index), event, partition_key=self.cluster
                )
            )
        out += _tombstones(self.cluster, end_offsets_key, len(chunks), self.end_offsets_keys)
        self.end_offsets_keys = len(chunks)
        return out

    def chunk_keys(self) -> tuple[int, int]:
        """How many ``topics`` and ``end_offsets`` chunk keys hold a record (those published
        since this memory started and not tombstoned since)."""
        return self.topics_keys, self.end_offsets_keys


#: A chunk index as wide as any: the fixed part of a chunk is measured with it.
_WIDEST = 999_999
#: ``end_offsets`` events in a row a topic is consumed by the same groups before its moved
#: partitions are given as changes: a group that joined the topic has had the end offsets
#: by then, even if it read the event of its join before its first commit on the topic.
STEADY_EVENTS = 2


def _topic_end_offsets(
    topic: str, parts: Sequence[tuple[int, int]], base: Mapping[tuple[str, int], int]
) -> wire.TopicEndOffsets:
    """One topic's moved partitions: changes against ``base`` where it has them, else end
    offsets."""
    given = [(p, o) for p, o in parts if (topic, p) not in base]
    moves = [(p, o - base[(topic, p)]) for p, o in parts if (topic, p) in base]
    return wire.TopicEndOffsets(
        topic=topic,
        partitions=[p for p, _ in given],
        end_offsets=[o for _, o in given],
        moved_partitions=[p for p, _ in moves],
        moved_by=[d for _, d in moves],
    )


def _reach(topics_by_group: Mapping[str, Sequence[str]]) -> dict[str, frozenset[str]]:
    """Topic -> the groups touching it."""
    out: dict[str, set[str]] = {}
    for group_id, topics in topics_by_group.items():
        for t in topics:
            out.setdefault(t, set()).add(group_id)
    return {t: frozenset(gs) for t, gs in out.items()}


def _issues_by_topic(
    issues: Sequence[Issue], topics: Container[str]
) -> tuple[dict[str, list[Issue]], list[Issue]]:
    """The issues about one of ``topics``, by topic (they go to its chunk), and the others
    (they go to the first chunk)."""
    by_topic: dict[str, list[Issue]] = {}
    others: list[Issue] = []
    for issue in issues:
        if issue.topic is not None and issue.topic in topics:
            by_topic.setdefault(issue.topic, []).append(issue)
        else:
            others.append(issue)
    return by_topic, others


def _tombstones(
    cluster: str, key: Callable[[str, int], str], chunks: int, published: int
) -> list[MembershipEvent]:
    """The tombstones of the chunk keys from ``chunks`` up to ``published`` (the keys that
    held a record and are past the event's last chunk now)."""
    return [
        MembershipEvent.tombstone(key(cluster, index), partition_key=cluster)
        for index in range(chunks, published)
    ]
