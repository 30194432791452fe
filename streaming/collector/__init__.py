"""The membership collector: admin-API snapshots of every consumer group -> a Kafka topic.

A package along the pipeline's seams: ``events`` (pure: answers -> version 1's events),
``changes`` (pure: answers -> version 2's events, what changed), ``chunks`` (pure: a
cluster-wide event split into records of bounded size), ``admin`` (I/O: the admin
calls), ``topic`` (the topic's settings), ``loop`` (I/O: :class:`Collector`), ``cli``
(``rebalance-monitor collect``); the settings are :class:`streaming.config.CollectorConfig`,
and the events :mod:`streaming.membership_event`.

``rebalance-monitor collect`` (``cli_collect``) asks the cluster, every ``interval_s``
seconds, what its groups look like, and publishes what changed as JSON events (schema
``streaming/schemas/membership_event_v2.json``, documented in ``docs/events.md``) to a
compacted, zstd-compressed topic, ``rebalance-monitor.membership`` by default, created if
absent (``topic``)::

    gather_answers(admin, config)      I/O: describe_cluster, list_groups (filtered by the
        │                              group regex), describe_groups (classic groups:
        │                              every describe_interval_s, else only groups new,
        │                              rebalancing or whose ListGroups state moved),
        │                              list_group_offsets (every group every
        │                              end_offsets_interval_s, else only groups new or whose
        │                              state moved), describe_configs (KIP-848 groups: the
        │                              session timeout), describe_topics (the topics the
        │                              groups touch; every topic while a KIP-848 group has
        │                              committed nothing), list_partition_offsets (LATEST,
        │                              the consumed partitions, every end_offsets_interval_s)
        ▼
    AdminAnswers                       plain data: what the admin calls answered, and the
        │                              calls that failed (``Issue``)
        ▼
    Changes.events(answers)            pure: a ``group`` event per group new or changed, a
        │                              ``heartbeat`` per unchanged group every
        │                              heartbeat_interval_s, a ``poll`` event naming the other
        │                              unchanged groups every poll_event_interval_s (a group
        │                              event names the poll before it), tombstones, a
        │                              ``topics`` event on change, an ``end_offsets`` event,
        │                              both in chunks of at most chunk_bytes of JSON
        │                              (``build_events``: version 1's full copy)
        ▼
    Collector.publish(events)          I/O: KafkaProducer, acks=all, zstd, flushed per poll

``Collector.run`` loops: one snapshot per interval, a progress line per snapshot, failures
logged and retried with exponential backoff (``backoff_initial_s`` doubling up to
``backoff_max_s``) on fresh clients; the loop only ends when ``stop`` is set, ``duration_s``
has passed or, with ``once``, after the first successful snapshot.

What the admin API cannot give. kafka-python 3.0 speaks only the classic group protocol:
DescribeGroups on a KIP-848 ``consumer``-protocol group answers error 69
(``GroupIdNotFoundError: Group <id> is not a classic group.``, state ``Dead``, no members),
and ConsumerGroupDescribe (API 69) is not implemented. ListGroups v5 reports such groups
with ``group_type == "consumer"`` and their state (``Stable``, ``Assigning``,
``Reconciling``, ``Empty``); OffsetFetch returns their committed offsets. Their events
carry that, ``members: null`` and ``membership_source: "consumer_offsets"``: membership
must come from the KIP-848 records in ``__consumer_offsets`` (``streaming.codec.kip848``).
The session timeout of a KIP-848 group is not in its records either (it is a group config,
not a member's): DescribeConfigs on the group gives it (``session_timeout_ms``). The
membership of ``share`` and ``streams`` groups is not described either (share groups get no
committed offsets: OffsetFetch does not serve them).

Exceptions::

    CollectorError                   root of this module's errors (a RebalanceMonitorError)
    ├── CollectorConfigError         (also ConfigError) an invalid CollectorConfig or option
    └── SnapshotError                a snapshot could not be taken or published; the loop
                                     logs it and retries with backoff
"""

from __future__ import annotations

from streaming.collector.admin import gather_answers
from streaming.collector.cli import (
    DEFAULT_INTERVAL_S,
    DEFAULT_TOPIC,
    FLAGS,
    add_collect_arguments,
    cli_collect,
    config_from_args,
    run_collect,
)
from streaming.collector.events import (
    AdminAnswers,
    MembershipEvent,
    build_events,
    group_topics,
    is_classic,
    load_schema,
)
from streaming.collector.loop import (
    Collector,
    CollectorError,
    RunStats,
    SnapshotError,
    SnapshotReport,
)
from streaming.config import (
    DEFAULT_BOOTSTRAP_SERVERS,
    DEFAULT_CLUSTER,
    KAFKA_OPTION_KEYS,
    KAFKA_OPTIONS_ENV,
    CollectorConfig,
    CollectorConfigError,
    kafka_options_from_env,
    parse_kafka_option,
)
from streaming.membership_event import SCHEMA_PATH, SCHEMA_VERSION, Issue

__all__ = [
    "DEFAULT_BOOTSTRAP_SERVERS",
    "DEFAULT_CLUSTER",
    "DEFAULT_INTERVAL_S",
    "DEFAULT_TOPIC",
    "FLAGS",
    "KAFKA_OPTIONS_ENV",
    "KAFKA_OPTION_KEYS",
    "SCHEMA_PATH",
    "SCHEMA_VERSION",
    "AdminAnswers",
    "Collector",
    "CollectorConfig",
    "CollectorConfigError",
    "CollectorError",
    "Issue",
    "MembershipEvent",
    "RunStats",
    "SnapshotError",
    "SnapshotReport",
    "add_collect_arguments",
    "build_events",
    "cli_collect",
    "config_from_args",
    "gather_answers",
    "group_topics",
    "is_classic",
    "kafka_options_from_env",
    "load_schema",
    "parse_kafka_option",
    "run_collect",
]
