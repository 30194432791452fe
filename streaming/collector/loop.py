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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import kafka.errors as kafka_errors
from kafka import (
    KafkaAdminClient,
    KafkaProducer,
)

from streaming.collector.admin import describe_error, gather_answers
from streaming.collector.events import MembershipEvent, build_events
from streaming.config import (
    CollectorConfig,
)
from streaming.errors import EXIT_FAILED, RebalanceMonitorError

log = logging.getLogger("streaming.collector")


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
        self._reported: frozenset[str] = frozenset()

    # -- one snapshot

    def snapshot_once(self) -> SnapshotReport:
        """Take one snapshot and publish its events; ``SnapshotError`` if that fails."""
        t0 = time.monotonic()
        try:
            admin = self._admin_client()
            self._ensure_topic(admin)
            answers = gather_answers(admin, self.config, clock=self._clock)
            snapshot_id = uuid.uuid4().hex
            events = build_events(answers, cluster=self.config.cluster, snapshot_id=snapshot_id)
            published = self.publish(events)
        except SnapshotError:
            raise
        except Exception as exc:
            raise SnapshotError(describe_error(exc)) from exc
        return SnapshotReport(
            snapshot_id=snapshot_id,
            groups=len(answers.groups),
            offsets_only_groups=sum(
                1
                for e in events
                if e.value["event_type"] == "group"
                and e.value["membership_source"] == "consumer_offsets"
            ),
            topics=len(events[-1].value["topics"]),
            events_published=published,
            errors=tuple(
                f"{err['stage']} ({err['group_id'] or err['topic'] or 'cluster'}): {err['message']}"
                for e in events
                for err in e.value["errors"]
            ),
            elapsed_s=time.monotonic() - t0,
        )

    def publish(self, events: Sequence[MembershipEvent]) -> int:
        """Send the events to the membership topic and wait until all are acknowledged."""
        producer = self._producer_client()
        futures = []
        for event in events:
            key, value = event.encode()
            futures.append(producer.send(self.config.topic, key=key, value=value))
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
                        "snapshot %d: %d groups (%d without DescribeGroups membership), "
                        "%d topics, %d events published in %.2f s, %d errors "
                        "[totals: %d events, %d errors, %d failed snapshots]",
                        stats.snapshots,
                        report.groups,
                        report.offsets_only_groups,
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
            }
            answer = admin.create_topics({topic: spec}, raise_errors=False)
            [created] = answer["topics"]
            created_code = int(created.get("error_code") or 0)
            if created_code not in (0, kafka_errors.TopicAlreadyExistsError.errno):
                error = kafka_errors.for_code(created_code)
                raise SnapshotError(f"cannot create topic {topic}: {error.__name__}")
            admin.wait_for_topics([topic], timeout_ms=self.config.request_timeout_ms)
            log.info("created topic %s", topic)
        elif code:
            error = kafka_errors.for_code(code)
            raise SnapshotError(f"cannot use topic {topic}: {error.__name__}")
        self._topic_ready = True
