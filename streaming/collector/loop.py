"""I/O: the collector's loop (:class:`Collector`): a snapshot every interval, published
with a producer (acks=all), failures retried with exponential backoff on fresh clients.

Exceptions::

    CollectorError      root of the collector's errors (a RebalanceMonitorError)
    └── SnapshotError   a snapshot could not be taken or published (exit status 1)

(An invalid setting is :class:`streaming.config.CollectorConfigError`.)
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kafka.errors as kafka_errors
from kafka import (
    KafkaAdminClient,
    KafkaProducer,
)
from kafka.partitioner import murmur2

from streaming.collector.admin import CONNECTION_ERRORS, describe_error, gather_answers
from streaming.collector.changes import Changes
from streaming.collector.events import Committed, MembershipEvent, build_events, is_classic
from streaming.collector.topic import TOPIC_CONFIGS, config_mismatches, describe_topic_configs
from streaming.config import (
    CollectorConfig,
)
from streaming.errors import EXIT_FAILED, RebalanceMonitorError
from streaming.membership_event import Issue

log = logging.getLogger("streaming.collector")


def partition_of(key: bytes, partitions: Sequence[int]) -> int:
    """The partition Kafka's default partitioner gives ``key`` (murmur2, as the Java client)."""
    return partitions[(int(murmur2(key)) & 0x7FFFFFFF) % len(partitions)]


# --------------------------------------------------------------------------- errors


class CollectorError(RebalanceMonitorError):
    """Root of the collector's errors."""


class SnapshotError(CollectorError):
    """A snapshot could not be taken or published."""

    exit_status = EXIT_FAILED


# --------------------------------------------------------------------------- I/O: loop


@dataclass(frozen=True, kw_only=True)
class SnapshotReport:
    """What one successful snapshot did."""

    snapshot_id: str
    groups: int
    offsets_only_groups: int
    described_groups: int
    topics: int
    events_published: int
    errors: tuple[str, ...]
    elapsed_s: float


@dataclass(kw_only=True)
class RunStats:
    """Totals of a ``Collector.run``."""

    snapshots: int = 0
    failed_snapshots: int = 0
    events_published: int = 0
    errors: int = 0
    last_error: str | None = None


AdminFactory = Callable[[CollectorConfig], Any]
ProducerFactory = Callable[[CollectorConfig], Any]


def _default_admin(config: CollectorConfig) -> Any:
    return KafkaAdminClient(**config.admin_configs())


def _default_producer(config: CollectorConfig) -> Any:
    return KafkaProducer(**config.producer_configs())


class Collector:
    """Takes snapshots and publishes them; owns one admin client and one producer.

    Clients are created on first use and dropped after a failed snapshot, so the next
    attempt reconnects. ``admin_factory`` and ``producer_factory`` exist for tests.
    """

    def __init__(
        self,
        config: CollectorConfig,
        *,
        admin_factory: AdminFactory = _default_admin,
        producer_factory: ProducerFactory = _default_producer,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self._admin_factory = admin_factory
        self._producer_factory = producer_factory
        self._clock = clock
        self._admin: Any = None
        self._producer: Any = None
        self._topic_ready = False
        self._configs_checked = False
        self._changes: Changes | None = None
        self._chunk_keys = (0, 0)
        self._end_offsets_ts_ms: int | None = None
        self._described_ts_ms: int | None = None
        self._descriptions: dict[str, Mapping[str, Any]] = {}
        self._committed: dict[str, tuple[Any, Mapping[tuple[str, int], Committed]]] = {}
        self._reported: frozenset[str] = frozenset()

    # -- one snapshot

    def snapshot_once(self) -> SnapshotReport:
        """Take one snapshot and publish its events; ``SnapshotError`` if that fails.

        Schema version 2 publishes what changed since the previous snapshot
        (:class:`~streaming.collector.changes.Changes`), and asks for end offsets, and every
        group's committed offsets, only every ``end_offsets_interval_s`` (in between, only
        for the groups that are new or whose state moved), and DescribeGroups of every
        classic group only every ``describe_interval_s`` (in between, only for the groups
        :func:`~streaming.collector.admin.to_describe` picks); a failed snapshot forgets
        what was published, so the next one describes and publishes every group, the
        topics and all end offsets again.
        """
        t0 = time.monotonic()
        v2 = self.config.schema_version == 2
        try:
            admin = self._admin_client()
            self._ensure_topic(admin)
            now_ms = self._clock() * 1000
            due = v2 and self._end_offsets_due(now_ms)
            full_describe = not v2 or self._describe_due(now_ms)
            answers = gather_answers(
                admin,
                self.config,
                clock=self._clock,
                end_offsets="touched" if not v2 else "consumed" if due else "none",
                known_committed=None if not v2 or due else self._committed,
                known_descriptions=None if full_describe else self._descriptions,
            )
            if v2:
                states = {str(g["group_id"]): g.get("group_state") for g in answers.groups}
                self._committed = {
                    g: (states[g], offsets)
                    for g, offsets in answers.committed.items()
                    if g in states
                }
            snapshot_id = uuid.uuid4().hex
            if v2:
                changes = self._changes_memory()
                events = changes.events(answers, snapshot_id=snapshot_id)
            else:
                events = build_events(answers, cluster=self.config.cluster, snapshot_id=snapshot_id)
            published = self.publish(events)
            if v2:
                self._chunk_keys = changes.chunk_keys()
            if due:
                self._end_offsets_ts_ms = answers.snapshot_ts_ms
            if v2:
                self._descriptions = dict(answers.descriptions)
                if full_describe:
                    self._described_ts_ms = answers.snapshot_ts_ms
        except SnapshotError:
            self._forget_changes()
            raise
        except Exception as exc:
            self._forget_changes()
            raise SnapshotError(describe_error(exc)) from exc
        problems = [i for i in answers.issues]
        for event in events:
            if event.value is not None and event.value["event_type"] == "group":
                problems.extend(
                    Issue(**e) for e in event.value["errors"] if e["stage"] == "decode_member"
                )
        return SnapshotReport(
            snapshot_id=snapshot_id,
            groups=len(answers.groups),
            offsets_only_groups=sum(1 for g in answers.groups if not is_classic(g)),
            described_groups=len(answers.described),
            topics=len(answers.topics),
            events_published=published,
            errors=tuple(
                f"{i.stage} ({i.group_id or i.topic or 'cluster'}): {i.message}"
                for i in dict.fromkeys(problems)
            ),
            elapsed_s=time.monotonic() - t0,
        )

    def _forget_changes(self) -> None:
        """After a failed poll: the next one publishes everything again; the chunk keys that
        may hold a record (before or after this poll's events) are remembered, so the next
        publish tombstones those past its chunks."""
        if self._changes is not None:
            after = self._changes.chunk_keys()
            self._chunk_keys = (
                max(self._chunk_keys[0], after[0]),
                max(self._chunk_keys[1], after[1]),
            )
        self._changes = None

    def _changes_memory(self) -> Changes:
        if self._changes is None:
            interval_ms = self.config.interval_s * 1000
            # half a poll's slack: a cadence that is a multiple of the interval is kept even
            # when a poll starts a few milliseconds early
            self._changes = Changes(
                cluster=self.config.cluster,
                heartbeat_interval_ms=int(
                    self.config.heartbeat_interval_s * 1000 - interval_ms / 2
                ),
                full_interval_ms=int(
                    self.config.full_end_offsets_interval_s * 1000 - interval_ms / 2
                ),
                poll_event_interval_ms=int(
                    self.config.poll_event_interval_s * 1000 - interval_ms / 2
                ),
                chunk_bytes=self.config.chunk_bytes,
                topics_keys=self._chunk_keys[0],
                end_offsets_keys=self._chunk_keys[1],
            )
            self._end_offsets_ts_ms = None
            self._described_ts_ms = None
        return self._changes

    def _end_offsets_due(self, now_ms: float) -> bool:
        if self._changes is None or self._end_offsets_ts_ms is None:
            return True
        slack_ms = self.config.interval_s * 1000 / 2
        return (
            now_ms - self._end_offsets_ts_ms >= self.config.end_offsets_interval_s * 1000 - slack_ms
        )

    def _describe_due(self, now_ms: float) -> bool:
        """Whether this poll describes every classic group (the first poll after a start or
        a failure, then every ``describe_interval_s``)."""
        if self._changes is None or self._described_ts_ms is None:
            return True
        slack_ms = self.config.interval_s * 1000 / 2
        return now_ms - self._described_ts_ms >= self.config.describe_interval_s * 1000 - slack_ms

    def publish(self, events: Sequence[MembershipEvent]) -> int:
        """Send the events to the membership topic and wait until all are acknowledged.

        A record goes to the partition of its ``partition_key`` as Kafka's default
        partitioner would place that key (murmur2), so a group's heartbeats share its
        ``group`` events' partition."""
        producer = self._producer_client()
        futures = []
        partitions: list[int] | None = None
        for event in events:
            key, value = event.encode()
            partition = None
            if event.partition_key is not None:
                if partitions is None:
                    partitions = sorted(producer.partitions_for(self.config.topic))
                partition = partition_of(event.partition_key.encode("utf-8"), partitions)
            futures.append(
                producer.send(self.config.topic, key=key, value=value, partition=partition)
            )
        timeout_s = self.config.request_timeout_ms / 1000
        producer.flush(timeout=timeout_s)
        for future in futures:
            future.get(timeout=timeout_s)  # raises the send's KafkaError
        return len(futures)

    # -- the loop

    def run(
        self,
        *,
        stop: threading.Event | None = None,
        once: bool = False,
        duration_s: float | None = None,
    ) -> RunStats:
        """Snapshot every ``interval_s`` until ``stop`` is set or ``duration_s`` has passed.

        With ``once``, stop after the first successful snapshot (retrying a failure with
        backoff only while ``duration_s`` allows; without ``duration_s``, one attempt).
        """
        stop = stop or threading.Event()
        stats = RunStats()
        deadline = None if duration_s is None else time.monotonic() + duration_s
        backoff = self.config.backoff_initial_s
        log.info(
            "collecting from %s every %g s into %s (cluster %r, groups matching %r)%s",
            ",".join(self.config.bootstrap_servers),
            self.config.interval_s,
            self.config.topic,
            self.config.cluster,
            self.config.group_filter,
            f", options {self.config.redacted_options()}" if self.config.kafka_options else "",
        )
        try:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    report = self.snapshot_once()
                except SnapshotError as exc:
                    stats.failed_snapshots += 1
                    stats.last_error = str(exc)
                    self.close()
                    # A traceback only for what is not a plain Kafka or network error.
                    cause = exc.__cause__
                    trace = cause is not None and not isinstance(
                        cause, kafka_errors.KafkaError | OSError
                    )
                    if once and deadline is None:
                        log.error("snapshot failed: %s", exc, exc_info=trace)
                        break
                    log.warning(
                        "snapshot failed: %s; retrying in %.1f s", exc, backoff, exc_info=trace
                    )
                    wait_s = backoff
                    backoff = min(backoff * 2, self.config.backoff_max_s)
                else:
                    stats.snapshots += 1
                    stats.events_published += report.events_published
                    stats.errors += len(report.errors)
                    backoff = self.config.backoff_initial_s
                    self._log_errors(report.errors)
                    log.info(
                        "snapshot %d: %d groups (%d without DescribeGroups membership, "
                        "%d described), %d topics, %d events published in %.2f s, %d errors "
                        "[totals: %d events, %d errors, %d failed snapshots]",
                        stats.snapshots,
                        report.groups,
                        report.offsets_only_groups,
                        report.described_groups,
                        report.topics,
                        report.events_published,
                        report.elapsed_s,
                        len(report.errors),
                        stats.events_published,
                        stats.errors,
                        stats.failed_snapshots,
                    )
                    if once:
                        break
                    wait_s = max(0.0, self.config.interval_s - (time.monotonic() - started))
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or wait_s >= remaining:
                        break
                stop.wait(wait_s)
        finally:
            self.close()
        log.info(
            "collector stopped after %d snapshots: %d events published, %d errors, "
            "%d failed snapshots",
            stats.snapshots,
            stats.events_published,
            stats.errors,
            stats.failed_snapshots,
        )
        return stats

    def _log_errors(self, errors: tuple[str, ...]) -> None:
        """Each partial error at WARNING when it first appears, at DEBUG while it repeats."""
        for message in errors:
            level = logging.DEBUG if message in self._reported else logging.WARNING
            log.log(level, "snapshot error: %s", message)
        self._reported = frozenset(errors)

    def close(self) -> None:
        """Close the clients (idempotent); the next snapshot creates new ones."""
        for name in ("_producer", "_admin"):
            client = getattr(self, name)
            setattr(self, name, None)
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close()
        self._topic_ready = False

    # -- clients

    def _admin_client(self) -> Any:
        if self._admin is None:
            self._admin = self._admin_factory(self.config)
        return self._admin

    def _producer_client(self) -> Any:
        if self._producer is None:
            self._producer = self._producer_factory(self.config)
        return self._producer

    def _ensure_topic(self, admin: Any) -> None:
        """Create the membership topic if it does not exist (once per connection)."""
        if self._topic_ready:
            return
        topic = self.config.topic
        [meta] = admin.describe_topics([topic])
        code = int(meta.get("error_code") or 0)
        if code == kafka_errors.UnknownTopicOrPartitionError.errno:
            spec = {
                "num_partitions": self.config.topic_partitions or -1,
                "replication_factor": self.config.topic_replication_factor or -1,
                "configs": dict(TOPIC_CONFIGS),
            }
            answer = admin.create_topics({topic: spec}, raise_errors=False)
            [created] = answer["topics"]
            created_code = int(created.get("error_code") or 0)
            if created_code not in (0, kafka_errors.TopicAlreadyExistsError.errno):
                error = kafka_errors.for_code(created_code)
                raise SnapshotError(f"cannot create topic {topic}: {error.__name__}")
            admin.wait_for_topics([topic], timeout_ms=self.config.request_timeout_ms)
            log.info(
                "created topic %s (%s)",
                topic,
                ", ".join(f"{k}={v}" for k, v in TOPIC_CONFIGS.items()),
            )
        elif code:
            error = kafka_errors.for_code(code)
            raise SnapshotError(f"cannot use topic {topic}: {error.__name__}")
        else:
            self._check_topic_configs(admin)
        self._topic_ready = True

    def _check_topic_configs(self, admin: Any) -> None:
        """Warn (once per collector) when the existing topic is not set up as the collector
        would create it; the topic is used as it is, never altered."""
        if self._configs_checked:
            return
        self._configs_checked = True
        topic = self.config.topic
        try:
            actual = describe_topic_configs(admin, topic)
        except CONNECTION_ERRORS:
            raise
        except kafka_errors.KafkaError as exc:  # e.g. no DESCRIBE_CONFIGS on the topic
            log.warning(
                "topic %s: its settings could not be checked (%s); the collector creates its "
                "topic with %s",
                topic,
                describe_error(exc),
                ", ".join(f"{k}={v}" for k, v in TOPIC_CONFIGS.items()),
            )
            return
        mismatches = config_mismatches(actual)
        if mismatches:
            log.warning(
                "topic %s exists with other settings than the collector creates it with: %s. "
                "The collector does not change them; without compaction the topic grows with "
                "time (docs/events.md, The topic)",
                topic,
                "; ".join(mismatches),
            )
