"""Every Prometheus metric of rebalance-monitor: name, type, help text, labels, buckets.

The one module that defines them (``docs/tables.md`` lists them). Names follow the
existing Kafka exporters (danielqsj/kafka_exporter, kafka-lag-exporter, KMinion): group
metrics start with ``kafka_consumergroup_`` and carry ``cluster`` and ``group`` (plus
``topic``/``partition`` per partition, ``strategy`` per assignor, ``member`` per member);
the job's own health starts with ``rebalance_monitor_``. Base units only (seconds, not
milliseconds; ratios, not percent), counters end with ``_total``.

``kafka_consumergroup_state`` is a state set, as KMinion and kafka-lag-exporter expose
states: one series per state of :data:`GROUP_STATES` (plus the current one if Kafka reports
another), ``1`` for the current state and ``0`` for the others, so ``== 1`` selects it and
alerts can name states rather than numeric codes.

``kafka_consumergroup_status`` and ``kafka_consumergroup_partition_status`` are the lag
status (:mod:`streaming.tracking.lag_status`, ``docs/tracking.md``) as a code, Burrow's
numbers: 1 OK, 2 WARN, 3 ERR (groups only), 4 STOP, 5 STALL, 6 REWIND (partitions only).
One series per group / committed partition, so ``>= 3`` selects every group in error and a
change of status is a change of value, not of series.

``kafka_consumergroup_whatif_*_total`` count, per strategy (``strategy="actual"``: what the
group really did), what each rebalance cost: the sums of the ``group_metrics`` table's
``paused_partition_seconds`` and ``moved_partitions`` (``docs/tracking.md``, rules C1-C6),
so the dashboard and ``rebalance-monitor audit advise`` agree.

``kafka_consumergroup_assignor_info`` is an info metric (the ``*_info`` convention of
kube-state-metrics and node_exporter): always ``1``, its labels carry the facts. One series per
group names the group's own strategy, with the same ``strategy`` value as the assignment
metrics, so a rule selects the own strategy's series with ``and on (cluster, group, strategy)``
(or ``* on (cluster, group, strategy)``) against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ALL_METRICS",
    "ASSIGNMENT_DIVERGENT",
    "ASSIGNMENT_IMBALANCE_RATIO",
    "ASSIGNMENT_SKEW_PARTITIONS",
    "ASSIGNOR_IMPLEMENTATION_INFO",
    "ASSIGNOR_INFO",
    "BAD_RECORDS",
    "BATCHES",
    "BATCH_DURATION_SECONDS",
    "BATCH_INPUT_ROWS",
    "BUILD_INFO",
    "END_OFFSETS_AGE_SECONDS",
    "EXPORTER_SERIES",
    "GENERATION",
    "GROUP_LABELS",
    "GROUP_LAG_STATUS",
    "GROUP_STATES",
    "INPUT_ROWS",
    "KAFKA_UP",
    "LAG",
    "LAG_SECONDS",
    "LAST_BATCH_AGE_SECONDS",
    "LAST_BATCH_TIMESTAMP_SECONDS",
    "LAST_REBALANCE_TIMESTAMP_SECONDS",
    "MEMBERS",
    "MEMBERSHIP_SNAPSHOT_AGE_SECONDS",
    "MEMBER_ASSIGNED_PARTITIONS",
    "OFFSET_GAPS",
    "PARTITIONS_MOVED",
    "PARTITIONS_REVOKED",
    "PARTITION_LABELS",
    "PARTITION_LAG_STATUS",
    "REBALANCES",
    "REBALANCE_DURATION_SECONDS",
    "ROWS_WRITTEN",
    "SOURCE_LABELS",
    "SOURCE_LAG",
    "SOURCE_LAG_SECONDS",
    "SOURCE_RECORD_AGE_SECONDS",
    "STATE",
    "TRIGGER_INTERVAL_SECONDS",
    "UNROUTED_RECORDS",
    "WHATIF_PARTITIONS_MOVED",
    "WHATIF_PAUSED_PARTITION_SECONDS",
    "MetricSpec",
    "MetricType",
]

MetricType = Literal["counter", "gauge", "histogram"]

#: Label sets shared by several metrics.
GROUP_LABELS: tuple[str, ...] = ("cluster", "group")
PARTITION_LABELS: tuple[str, ...] = ("cluster", "group", "topic", "partition")
#: A partition of a topic the job reads (``__consumer_offsets``, the membership topic).
SOURCE_LABELS: tuple[str, ...] = ("topic", "partition")

#: Group states of the classic (Empty .. Dead) and KIP-848 (Assigning, Reconciling) protocols,
#: as the admin API names them; ``Unknown`` when the tracker cannot tell.
GROUP_STATES: tuple[str, ...] = (
    "Empty",
    "PreparingRebalance",
    "CompletingRebalance",
    "Assigning",
    "Reconciling",
    "Stable",
    "Dead",
    "Unknown",
)


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One metric. ``name`` is the exposed name (counters with their ``_total``);
    ``buckets`` only for histograms (upper bounds, in the metric's unit)."""

    name: str
    type: MetricType
    help: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...] = ()

    @property
    def base_name(self) -> str:
        """The name ``prometheus_client`` wants (it appends ``_total`` to counters itself)."""
        return self.name.removesuffix("_total") if self.type == "counter" else self.name


# -- per group -------------------------------------------------------------------------------

REBALANCES = MetricSpec(
    "kafka_consumergroup_rebalances_total",
    "counter",
    "Rebalances of the group seen by rebalance-monitor (new generation or target epoch), by cause.",
    (*GROUP_LABELS, "cause"),
)
GENERATION = MetricSpec(
    "kafka_consumergroup_generation",
    "gauge",
    "Current generation of a classic group, or target-assignment epoch of a KIP-848 group.",
    GROUP_LABELS,
)
MEMBERS = MetricSpec(
    "kafka_consumergroup_members",
    "gauge",
    "Members of the group.",
    GROUP_LABELS,
)
STATE = MetricSpec(
    "kafka_consumergroup_state",
    "gauge",
    "Group state as a state set: 1 for the current state, 0 for the others.",
    (*GROUP_LABELS, "state"),
)
ASSIGNOR_INFO = MetricSpec(
    "kafka_consumergroup_assignor_info",
    "gauge",
    "Always 1: the group's own assignment strategy (named as in the strategy label of the "
    "assignment metrics), rebalance protocol (eager, cooperative) and group protocol "
    "(classic, consumer). One series per group; absent while the group has no strategy.",
    (*GROUP_LABELS, "strategy", "rebalance_protocol", "group_protocol"),
)
ASSIGNOR_IMPLEMENTATION_INFO = MetricSpec(
    "kafka_consumergroup_assignor_implementation_info",
    "gauge",
    "Always 1: the implementation (java, librdkafka, kafka-python, sarama) whose assignor "
    "the group's own strategy was judged against at its last rebalance: a classic group's leader's "
    "client library, or the first that matched; java (the broker's) for a KIP-848 group. "
    "Absent when the last rebalance matched none or had no verdict.",
    (*GROUP_LABELS, "strategy", "implementation"),
)
LAST_REBALANCE_TIMESTAMP_SECONDS = MetricSpec(
    "kafka_consumergroup_last_rebalance_timestamp_seconds",
    "gauge",
    "Unix time when the group's last rebalance completed.",
    GROUP_LABELS,
)
ASSIGNMENT_SKEW_PARTITIONS = MetricSpec(
    "kafka_consumergroup_assignment_skew_partitions",
    "gauge",
    "Partitions of the most loaded member minus partitions of the least loaded member, "
    "in the actual assignment.",
    GROUP_LABELS,
)
ASSIGNMENT_IMBALANCE_RATIO = MetricSpec(
    "kafka_consumergroup_assignment_imbalance_ratio",
    "gauge",
    "Partitions of the most loaded member divided by the mean (1 = balanced), for the actual "
    'assignment (strategy="actual") and what each strategy would have assigned.',
    (*GROUP_LABELS, "strategy"),
)
ASSIGNMENT_DIVERGENT = MetricSpec(
    "kafka_consumergroup_assignment_divergent",
    "gauge",
    "1 if the strategy's assignment differs from the actual one, 0 if equal "
    "(absent when the strategy gave no answer).",
    (*GROUP_LABELS, "strategy"),
)
PARTITIONS_MOVED = MetricSpec(
    "kafka_consumergroup_partitions_moved_total",
    "counter",
    "Partitions that changed owner in a rebalance (members matched by static identity).",
    GROUP_LABELS,
)
PARTITIONS_REVOKED = MetricSpec(
    "kafka_consumergroup_partitions_revoked_total",
    "counter",
    "Partitions taken from a member that stays in the group, over rebalances.",
    GROUP_LABELS,
)
REBALANCE_DURATION_SECONDS = MetricSpec(
    "kafka_consumergroup_rebalance_duration_seconds",
    "histogram",
    "Rebalance duration from start to completion (a lower bound when the start is only "
    "known from a collector snapshot).",
    GROUP_LABELS,
    (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0),
)

WHATIF_PAUSED_PARTITION_SECONDS = MetricSpec(
    "kafka_consumergroup_whatif_paused_partition_seconds_total",
    "counter",
    'Partition-seconds the group\'s rebalances paused (strategy="actual") or would have '
    "paused under each strategy: eager pauses every owned partition, cooperative only the "
    "moved ones, for the rebalance's measured duration.",
    (*GROUP_LABELS, "strategy"),
)
WHATIF_PARTITIONS_MOVED = MetricSpec(
    "kafka_consumergroup_whatif_partitions_moved_total",
    "counter",
    'Partitions that changed owner in the group\'s rebalances (strategy="actual") or '
    "would have under each strategy.",
    (*GROUP_LABELS, "strategy"),
)
GROUP_LAG_STATUS = MetricSpec(
    "kafka_consumergroup_status",
    "gauge",
    "Lag status of the group, its worst partition (Burrow's codes): 1 OK, 2 WARN, 3 ERR "
    "(a partition is STOP, STALL or REWIND).",
    GROUP_LABELS,
)

# -- per member and per partition -----------------------------------------------------------

MEMBER_ASSIGNED_PARTITIONS = MetricSpec(
    "kafka_consumergroup_member_assigned_partitions",
    "gauge",
    "Partitions assigned to the member in the current generation (removed when it departs).",
    (*GROUP_LABELS, "member", "client_id"),
)
LAG = MetricSpec(
    "kafka_consumergroup_lag",
    "gauge",
    "Records between the committed offset and the log end offset.",
    PARTITION_LABELS,
)
LAG_SECONDS = MetricSpec(
    "kafka_consumergroup_lag_seconds",
    "gauge",
    "Seconds since the log end offset passed the committed offset (estimated from the "
    "end-offset history).",
    PARTITION_LABELS,
)

PARTITION_LAG_STATUS = MetricSpec(
    "kafka_consumergroup_partition_status",
    "gauge",
    "Lag status of the partition (Burrow's codes): 1 OK, 2 WARN, 4 STOP, 5 STALL, 6 REWIND.",
    PARTITION_LABELS,
)

# -- the query's own health ------------------------------------------------------------------

BATCHES = MetricSpec(
    "rebalance_monitor_batches_total",
    "counter",
    "Micro-batches the streaming query has completed.",
    (),
)
BATCH_DURATION_SECONDS = MetricSpec(
    "rebalance_monitor_batch_duration_seconds",
    "histogram",
    "Wall time of one micro-batch.",
    (),
    (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0),
)
INPUT_ROWS = MetricSpec(
    "rebalance_monitor_input_rows_total",
    "counter",
    "Kafka records read by the streaming query.",
    (),
)
BATCH_INPUT_ROWS = MetricSpec(
    "rebalance_monitor_batch_input_rows",
    "gauge",
    "Kafka records read by the last micro-batch.",
    (),
)
BAD_RECORDS = MetricSpec(
    "rebalance_monitor_bad_records_total",
    "counter",
    "Records that failed to decode and went to the bad_records table.",
    (),
)
UNROUTED_RECORDS = MetricSpec(
    "rebalance_monitor_unrouted_records_total",
    "counter",
    "Records that decoded but belong to no group (e.g. a membership event without a group "
    "id); counted, not tracked.",
    (),
)
OFFSET_GAPS = MetricSpec(
    "rebalance_monitor_offset_gaps_total",
    "counter",
    "Source offsets the query never saw: holes left by compaction or retention of "
    "__consumer_offsets (read with failOnDataLoss=false) and by deleted records.",
    (),
)
LAST_BATCH_TIMESTAMP_SECONDS = MetricSpec(
    "rebalance_monitor_last_batch_timestamp_seconds",
    "gauge",
    "Unix time when the last micro-batch completed.",
    (),
)
KAFKA_UP = MetricSpec(
    "rebalance_monitor_kafka_up",
    "gauge",
    "1 when the job's last check of the Kafka cluster succeeded (connection, login, "
    "DescribeCluster), 0 when it failed.",
    (),
)
LAST_BATCH_AGE_SECONDS = MetricSpec(
    "rebalance_monitor_last_batch_age_seconds",
    "gauge",
    "Seconds since the last micro-batch completed, as of the last Kafka check.",
    (),
)
BUILD_INFO = MetricSpec(
    "rebalance_monitor_build_info",
    "gauge",
    "Always 1; the labels say what runs: rebalance-monitor's version and those of Python, "
    "PySpark and Delta Lake.",
    ("version", "python_version", "pyspark_version", "delta_version"),
)
TRACKED_GROUPS = MetricSpec(
    "rebalance_monitor_tracked_groups",
    "gauge",
    "Groups the job keeps a state of (each bucket of the stateful step as of its last "
    "report: when its count changes, and once a minute of record time); a group is "
    "forgotten after its tombstone or a week without records or a collector snapshot "
    "listing it.",
    (),
)


# -- the inputs' freshness and the job's own lag (docs/alerts.md) ----------------------------

MEMBERSHIP_SNAPSHOT_AGE_SECONDS = MetricSpec(
    "rebalance_monitor_membership_snapshot_age_seconds",
    "gauge",
    "Seconds since the newest collector group snapshot the job has read was taken (its "
    "snapshot_ts_ms), at scrape time; since the job started while it has read none.",
    ("cluster",),
)
END_OFFSETS_AGE_SECONDS = MetricSpec(
    "rebalance_monitor_end_offsets_age_seconds",
    "gauge",
    "Seconds since the end offsets of the newest collector topics snapshot the job has read "
    "were listed (its end_offsets_ts_ms), at scrape time; since the job started while it has "
    "read none. Lag against end offsets older than the job's end_offsets_max_age_s is "
    "unknown.",
    ("cluster",),
)
SOURCE_RECORD_AGE_SECONDS = MetricSpec(
    "rebalance_monitor_source_record_age_seconds",
    "gauge",
    "Seconds since the newest record the job has read from the source partition was "
    "appended (its Kafka timestamp), at scrape time.",
    SOURCE_LABELS,
)
SOURCE_LAG = MetricSpec(
    "rebalance_monitor_source_lag",
    "gauge",
    "Records of the source partition the job has not read yet: the latest offset Spark "
    "saw minus the offset its last micro-batch read up to.",
    SOURCE_LABELS,
)
SOURCE_LAG_SECONDS = MetricSpec(
    "rebalance_monitor_source_lag_seconds",
    "gauge",
    "Seconds since the source partition's latest offset passed the offset the job's last "
    "micro-batch read up to (estimated from the latest offsets of the query's progress).",
    SOURCE_LABELS,
)
TRIGGER_INTERVAL_SECONDS = MetricSpec(
    "rebalance_monitor_trigger_interval_seconds",
    "gauge",
    "The query's trigger interval: a micro-batch starts this often when the previous one "
    "is done (trigger_interval_s); absent in a run that processes what is available once.",
    (),
)
ROWS_WRITTEN = MetricSpec(
    "rebalance_monitor_rows_written_total",
    "counter",
    "Rows the job appended to each Delta table (Delta's own count of each append).",
    ("table",),
)
EXPORTER_SERIES = MetricSpec(
    "rebalance_monitor_exporter_series",
    "gauge",
    "Series the exporter serves (every metric's, histogram buckets counted once per series).",
    (),
)

#: Every metric, in exposition order.
ALL_METRICS: tuple[MetricSpec, ...] = (
    REBALANCES,
    GENERATION,
    MEMBERS,
    STATE,
    ASSIGNOR_INFO,
    ASSIGNOR_IMPLEMENTATION_INFO,
    LAST_REBALANCE_TIMESTAMP_SECONDS,
    ASSIGNMENT_SKEW_PARTITIONS,
    ASSIGNMENT_IMBALANCE_RATIO,
    ASSIGNMENT_DIVERGENT,
    PARTITIONS_MOVED,
    PARTITIONS_REVOKED,
    REBALANCE_DURATION_SECONDS,
    WHATIF_PAUSED_PARTITION_SECONDS,
    WHATIF_PARTITIONS_MOVED,
    GROUP_LAG_STATUS,
    MEMBER_ASSIGNED_PARTITIONS,
    LAG,
    LAG_SECONDS,
    PARTITION_LAG_STATUS,
    BATCHES,
    BATCH_DURATION_SECONDS,
    INPUT_ROWS,
    BATCH_INPUT_ROWS,
    BAD_RECORDS,
    UNROUTED_RECORDS,
    OFFSET_GAPS,
    LAST_BATCH_TIMESTAMP_SECONDS,
    LAST_BATCH_AGE_SECONDS,
    KAFKA_UP,
    BUILD_INFO,
    TRACKED_GROUPS,
    MEMBERSHIP_SNAPSHOT_AGE_SECONDS,
    END_OFFSETS_AGE_SECONDS,
    SOURCE_RECORD_AGE_SECONDS,
    SOURCE_LAG,
    SOURCE_LAG_SECONDS,
    TRIGGER_INTERVAL_SECONDS,
    ROWS_WRITTEN,
    EXPORTER_SERIES,
)
