"""The settings of the job and of the collector, and the Kafka connection they share: frozen,
validated values, loaded once.

::

    KafkaConnection     (:mod:`streaming.kafka_connection`, re-exported) bootstrap servers
                        + the client's security settings (Java client spellings, as Spark
                        and the Java members take them; kafka-python's keyword arguments
                        where only Python has them), redacted in repr/str
    JobConfig           the Spark job (``rebalance-monitor run``)       JobConfigError
    CollectorConfig     the collector (``rebalance-monitor collect``)   CollectorConfigError

Both configurations load the same way, lowest first::

    defaults  <  config file (TOML)  <  environment  <  CLI flags

:func:`load_config` (the job) and :func:`load_collector_config` merge the layers with one
loader (:func:`_layers`) and build the frozen value; every error names the setting first and
says which layer the value came from (the flag, the environment variable or the file).
Nothing here connects to anything or imports pyspark: a command validates its configuration
before it starts Spark or a client.

The job's config file (``--config FILE`` or ``REBALANCE_MONITOR_CONFIG``) uses the field
names; a ``[collect]`` table in the same file holds the collector's (the job ignores it)::

    bootstrap_servers = "broker-1:9092,broker-2:9092"
    cluster = "prod-eu"
    trigger_interval_s = 5
    [spark_conf]
    "spark.sql.shuffle.partitions" = "16"      # quoted or dotted keys are both fine
    [kafka_options]
    "security.protocol" = "SASL_SSL"
    [collect]
    bootstrap_servers = "broker-1:9092"
    interval_s = 10

Environment variables are ``REBALANCE_MONITOR_<FIELD>`` for the job and
``REBALANCE_MONITOR_COLLECT_<FIELD>`` for the collector, in capitals
(``REBALANCE_MONITOR_BOOTSTRAP_SERVERS``...); the maps (``..._SPARK_CONF``,
``..._KAFKA_OPTIONS``) hold a JSON object, which keeps passwords out of the process list.
``spark_master`` set to ``""`` or ``none`` leaves the master to ``spark-submit``; when the job
runs under ``spark-submit`` (``PYSPARK_GATEWAY_PORT`` is set) and no layer names a master,
none is set.

Exceptions (:mod:`streaming.errors`)::

    ConfigError                 (ValueError) a KafkaConnection's bad servers or options
    ├── JobConfigError          an invalid job setting; the message names it
    └── CollectorConfigError    an invalid collector setting or option; the message names it
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from streaming.errors import ConfigError
from streaming.kafka_connection import (
    BOOL_OPTIONS,
    DEFAULT_BOOTSTRAP_SERVERS,
    JAVA_SECURITY_KEYS,
    KAFKA_OPTION_KEYS,
    OBJECT_OPTIONS,
    PRODUCER_ONLY_OPTIONS,
    KafkaConnection,
    check_kafka_option,
    is_host_port,
    python_option_name,
    string_map,
    tuple_servers,
)

__all__ = [
    "DEFAULT_BOOTSTRAP_SERVERS",
    "DEFAULT_CLUSTER",
    "DEFAULT_JOB_DIR",
    "DEFAULT_MEMBERSHIP_TOPIC",
    "ENV_PREFIX",
    "FORBIDDEN_KAFKA_OPTIONS",
    "KAFKA_OPTION_KEYS",
    "OFFSET_COMMITS_HISTORY",
    "CollectorConfig",
    "CollectorConfigError",
    "JobConfig",
    "JobConfigError",
    "KafkaConnection",
    "group_matches",
    "group_pattern",
    "is_host_port",
    "job_kafka_options_from_env",
    "kafka_options_from_env",
    "load_collector_config",
    "load_config",
    "parse_kafka_option",
    "parse_key_value",
    "under_spark_submit",
]

REPO = Path(__file__).resolve().parents[1]
DEFAULT_JOB_DIR = REPO / ".local" / "job"
#: The collector's topic, which the job reads (``docs/events.md``).
DEFAULT_MEMBERSHIP_TOPIC = "rebalance-monitor.membership"
DEFAULT_CLUSTER = "local"
ENV_PREFIX = "REBALANCE_MONITOR_"
CONFIG_FILE_ENV = ENV_PREFIX + "CONFIG"
COLLECT_ENV_PREFIX = ENV_PREFIX + "COLLECT_"
#: The collector's security options from the environment (:func:`kafka_options_from_env`).
KAFKA_OPTIONS_ENV = COLLECT_ENV_PREFIX + "KAFKA_OPTIONS"
#: The ``[collect]`` table of a config file: the collector's settings.
COLLECT_TABLE = "collect"

#: Kafka client settings the Spark Kafka source sets itself or rejects (Spark's
#: ``KafkaSourceProvider``), plus ``bootstrap.servers`` (its own setting here).
FORBIDDEN_KAFKA_OPTIONS: frozenset[str] = frozenset(
    {
        "bootstrap.servers",
        "auto.offset.reset",
        "enable.auto.commit",
        "key.deserializer",
        "value.deserializer",
        "interceptor.classes",
    }
)
#: A Kafka topic name (``.`` and ``..`` excepted).
TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_STARTING_OFFSETS = ("earliest", "latest")
#: ``JobConfig.offset_commits_history`` values.
OFFSET_COMMITS_HISTORY = ("kept", "latest", "every")

#: The largest config file read (``--config /dev/zero`` ends here).
MAX_CONFIG_BYTES = 1024 * 1024
#: The longest duration a job setting takes, in seconds (a day): ``inf`` or 1e300 are mistakes.
_MAX_S = 86_400.0
#: ``group_retention_s`` at most: a year.
_MAX_RETENTION_S = 366 * 86_400.0
#: ``maintenance_interval_s`` at most: a week.
_MAX_MAINTENANCE_S = 7 * 86_400.0
#: The retention settings at most, in days: a hundred years.
_MAX_RETENTION_DAYS = 36_500
#: The collector's intervals and ``--duration``: ten years at most (not inf).
MAX_COLLECT_S = 10 * 365 * 86_400.0
#: the largest membership event the collector sends, before compression (the producer's
#: max_request_size)
MAX_EVENT_BYTES = 64 * 1024 * 1024
#: ``CollectorConfig.chunk_bytes`` by default: a ``topics`` or ``end_offsets`` record's JSON
#: at most, before compression. zstd never makes a record much bigger than its input, so a
#: record of half a MiB stays under the broker's default ``max.message.bytes`` (1 MiB, checked
#: on the compressed batch) whatever its content, without compressing it to find out.
DEFAULT_CHUNK_BYTES = 512 * 1024
#: ``chunk_bytes`` at least: room for a chunk's envelope, a few brokers and a topic.
MIN_CHUNK_BYTES = 1024


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def is_topic_name(value: Any) -> bool:
    return isinstance(value, str) and bool(TOPIC_NAME.fullmatch(value)) and value not in (".", "..")


class JobConfigError(ConfigError):
    """An invalid job setting; the message starts with the setting's name."""


class CollectorConfigError(ConfigError):
    """An invalid collector setting or option; the message names it."""


def parse_kafka_option(text: str, *, where: str = "--kafka-option") -> tuple[str, str | bool]:
    """``"KEY=VALUE"`` for a Python client (the collector) -> ``(key, value)``, validated
    (``where`` names the origin in error messages; :class:`CollectorConfigError`).

    kafka-python's names may use dots or dashes (``security.protocol``, ``sasl-mechanism``);
    booleans (``ssl_check_hostname``) accept true/false/yes/no/1/0. The Java client's
    security settings that have a Python equivalent (``sasl.jaas.config``,
    ``ssl.truststore.location``... :data:`JAVA_SECURITY_KEYS`) are kept as they are, so the
    collector takes the job's ``--kafka-option`` too.
    """
    raw_key, sep, value = text.partition("=")
    if not sep or not raw_key.strip():
        raise CollectorConfigError(f"{where}: expected KEY=VALUE, got {text!r}")
    if raw_key.strip() in JAVA_SECURITY_KEYS - {"security.protocol", "sasl.mechanism"}:
        if not value:
            raise CollectorConfigError(f"{where}: {raw_key.strip()} must be a non-empty string")
        return raw_key.strip(), value
    key = python_option_name(raw_key)
    if key in OBJECT_OPTIONS:
        raise CollectorConfigError(
            f"{where}: {key} takes a Python object; set it through CollectorConfig"
        )
    parsed: str | bool = value
    if key in BOOL_OPTIONS:
        lowered = value.strip().lower()
        if lowered in ("true", "yes", "1"):
            parsed = True
        elif lowered in ("false", "no", "0"):
            parsed = False
        else:
            raise CollectorConfigError(f"{where}: {key} must be true or false")
    _collector(check_kafka_option, key, parsed, where)
    return key, parsed


def kafka_options_from_env(environ: Mapping[str, str] | None = None) -> dict[str, str | bool]:
    """The collector's security options in ``$REBALANCE_MONITOR_COLLECT_KAFKA_OPTIONS`` (a
    JSON object of what ``--kafka-option`` takes: ``{"sasl_plain_password": "..."}``;
    ``true``/``false`` for booleans), validated; ``{}`` when unset. It keeps secrets out of
    the process list; ``--kafka-option`` flags override it key by key."""
    env = os.environ if environ is None else environ
    text = env.get(KAFKA_OPTIONS_ENV, "")
    if not text.strip():
        return {}
    try:
        given = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CollectorConfigError(f"{KAFKA_OPTIONS_ENV}: not valid JSON: {exc}") from None
    if not isinstance(given, dict):
        raise CollectorConfigError(
            f"{KAFKA_OPTIONS_ENV}: expected a JSON object of option: value, "
            f"got a JSON {type(given).__name__}"
        )
    out: dict[str, str | bool] = {}
    for key, value in given.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        if not isinstance(value, str):
            raise CollectorConfigError(
                f"{KAFKA_OPTIONS_ENV}: {key}: expected a string, got {json.dumps(value)}"
            )
        name, parsed = parse_kafka_option(f"{key}={value}", where=KAFKA_OPTIONS_ENV)
        out[name] = parsed
    return out


def group_pattern(text: object, error: type[ConfigError]) -> re.Pattern[str]:
    """A ``group_filter`` setting compiled: a regular expression the whole group id must
    match (:func:`group_matches`); raises ``error`` naming the setting when it is not one."""
    try:
        return re.compile(text)  # type: ignore[call-overload, no-any-return]
    except (re.error, TypeError) as exc:
        raise error(f"group_filter: invalid regular expression: {exc}") from exc


def group_matches(pattern: re.Pattern[str], group_id: str) -> bool:
    """Whether a group passes a ``group_filter`` (the collector's and the job's): the whole
    id matches."""
    return pattern.fullmatch(group_id) is not None


def parse_key_value(text: str, setting: str) -> tuple[str, str]:
    """``"KEY=VALUE"`` -> ``(key, value)``; the value may contain ``=``."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise JobConfigError(f"{setting}: expected KEY=VALUE, got {text!r}")
    return key, value


# -- the job ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class JobConfig:
    """Everything the job needs, validated on construction (see the module docstring).

    * ``bootstrap_servers``: ``host:port[,host:port...]`` of the monitored cluster.
    * ``cluster``: the label every row and metric carries.
    * ``membership_topic``: the collector's topic (``docs/events.md``).
    * ``offsets_topic``: where the coordinator records are read, ``__consumer_offsets``;
      another topic only for a copy of its records (a captured log replayed, benchmarks).
    * ``starting_offsets``: ``earliest`` (backfill, the default), ``latest`` or Spark's JSON
      form; applies to a new checkpoint only.
    * ``checkpoint_dir`` / ``delta_path``: the query's checkpoint and the Delta tables' base
      (local paths or URIs).
    * ``trigger_interval_s``: the micro-batch interval.
    * ``metrics_host`` / ``metrics_port``: the Prometheus exporter (port 0: no exporter).
    * ``spark_master``: ``local[*]`` by default; None leaves it to ``spark-submit``.
    * ``spark_conf``: Spark settings over :data:`streaming.spark.session.DEFAULT_CONF`.
    * ``kafka_options``: Kafka client settings of both sources (security settings), without
      the ``kafka.`` prefix; ``repr`` never shows them.
    * ``max_offsets_per_trigger``: caps a micro-batch (None, the default: no cap). Spark
      shares the cap out over the partitions of both topics in proportion to their backlog,
      so a catch-up advances through both together, but only roughly in time: a collector
      snapshot can be read before the coordinator records it follows on from.
    * ``decode_partitions``: the decode stage's tasks per micro-batch (the Kafka source's
      one task per partition, 50+ mostly empty ones for ``__consumer_offsets``, coalesced
      to this many); None: one task per Kafka partition.
    * ``consumer_session_timeout_ms``: the cluster's KIP-848 session timeout
      (``group.consumer.session.timeout.ms``), for groups the collector could not ask the
      broker about (``docs/tracking.md``, rule S1).
    * ``offset_commits_history``: what the ``offset_commits`` table keeps: ``kept`` (the
      default), the commits that matter (rewinds, jumps, tombstones, the first after a
      rebalance, :mod:`streaming.tracking.keep`) and one sample per partition per
      ``offset_commits_interval_s``, each with its ``reason``; ``latest``, the last commit
      (or offset tombstone) of each partition of each group per micro-batch; ``every``,
      every commit record. ``docs/tables.md`` gives the volumes.
    * ``offset_commits_interval_s``: with ``kept``, the sampling window (record time), an
      hour by default.
    * ``offset_commits_jump_records``: with ``kept``, the least forward move (records) that
      is a ``jump`` (it must also be 10 times the partition's largest recent step); 1,000.
    * ``partition_lag_interval_s``: ``partition_lag`` keeps a partition's first lag
      measurement in each window of this length (record time); 0: every measurement (one
      per commit and per collector snapshot). 600 s by default; a multiple of
      ``lag_export_interval_s``.
    * ``lag_export_interval_s``: the exporter's lag gauges take a partition's first
      measurement in each window of this length (record time), and at once each one that
      changes its status; 0: every measurement (a row each through the job: what a batch
      costs grows with it). 30 s by default.
    * ``group_lag_interval_s``: ``group_lag`` keeps a row per group per window of this
      length (record time); 0: none. 60 s by default.
    * ``metrics_web_config_file``: the exporter's TLS and basic auth, a file in Prometheus'
      exporter-toolkit format (:mod:`streaming.sinks.web_config`); None: plain HTTP.
    * ``broker_check_timeout_s``: how long the check of the cluster before Spark starts may
      take (:mod:`streaming.kafka_check`; exit 2 when it fails); 0 skips it.
    * ``broker_watch_interval_s``: while the job runs, the cluster is checked this often
      (``rebalance_monitor_kafka_up``, a line when it goes down or comes back); 0: never.
    * ``lag_status_window_s``: the lag status's sliding window, in record time (Burrow's
      evaluation, ``docs/tracking.md`` "Lag status"), 600 s by default.
    * ``lag_status_hold_s``: a partition's new lag status reaches ``lag_transitions`` (and
      the group's status there) only once it has lasted this long, in record time, so a
      status flapping between verdicts writes nothing; 0: every change. 300 s by default.
    * ``group_filter``: only groups whose whole id matches this regular expression are
      tracked and written (the collector's ``group_filter``, the same matching); not with
      ``offset_commits_history=every``, whose commit lane never leaves the JVM.
    * ``group_retention_s``: a group without a record in ``__consumer_offsets`` and without
      a collector snapshot listing it for this long, in record time, is forgotten: its
      state dropped, its series removed (:mod:`streaming.tracking.forget`). A week by
      default; 0: never. A deleted group (its tombstone) is forgotten at once.
    * ``end_offsets_max_age_s``: lag measured more than this long after the partition's
      newest end offset (the collector's snapshots) is unknown, never 0 or OK (record
      time); also the age past which the exporter drops lag series. 60 s by default.
    * ``maintenance_interval_s``: how often the running job maintains its tables (compaction,
      clustering, retention, VACUUM: :mod:`streaming.sinks.maintenance`), off the
      micro-batches' path; an hour by default, 0: never (``rebalance-monitor maintain``).
    * ``audit_retention_days`` / ``lag_retention_days`` / ``bad_records_retention_days``: the
      whole ``date`` partitions older than this many days that maintenance deletes, of the
      audit tables (``rebalance_events``, ``member_assignments``, ``group_metrics``; 400), of
      the commit and lag tables (every other table of the job but ``bad_records``; 30) and of
      ``bad_records`` (90); 0: keep every day.
    * ``delta_log_retention_hours``: the tables' ``delta.logRetentionDuration``, how long
      Delta keeps a commit in ``_delta_log`` (the history and time travel; 48).
    * ``deleted_file_retention_hours``: the tables' ``delta.deletedFileRetentionDuration``,
      how long a data file a commit removed stays for readers of older versions before
      VACUUM deletes it (24).
    """

    bootstrap_servers: str = DEFAULT_BOOTSTRAP_SERVERS
    cluster: str = DEFAULT_CLUSTER
    membership_topic: str = DEFAULT_MEMBERSHIP_TOPIC
    offsets_topic: str = "__consumer_offsets"
    starting_offsets: str = "earliest"
    checkpoint_dir: str = str(DEFAULT_JOB_DIR / "checkpoint")
    delta_path: str = str(DEFAULT_JOB_DIR / "delta")
    trigger_interval_s: float = 1.0
    metrics_host: str = "127.0.0.1"
    metrics_port: int = 9108
    spark_master: str | None = "local[*]"
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    kafka_options: Mapping[str, str] = field(default_factory=dict, repr=False)
    max_offsets_per_trigger: int | None = None
    decode_partitions: int | None = 4
    offset_commits_history: str = "kept"
    offset_commits_interval_s: float = 3600.0
    offset_commits_jump_records: int = 1_000
    partition_lag_interval_s: float = 600.0
    lag_export_interval_s: float = 30.0
    group_lag_interval_s: float = 60.0
    consumer_session_timeout_ms: int = 45_000
    metrics_web_config_file: str | None = None
    broker_check_timeout_s: float = 30.0
    broker_watch_interval_s: float = 5.0
    lag_status_window_s: float = 600.0
    lag_status_hold_s: float = 300.0
    group_filter: str = ".*"
    group_retention_s: float = 7 * 24 * 3600.0
    end_offsets_max_age_s: float = 60.0
    maintenance_interval_s: float = 3600.0
    audit_retention_days: int = 400
    lag_retention_days: int = 30
    bad_records_retention_days: int = 90
    delta_log_retention_hours: float = 48.0
    deleted_file_retention_hours: float = 24.0

    def __post_init__(self) -> None:
        servers = [s.strip() for s in str(self.bootstrap_servers).split(",")]
        if not servers or not all(is_host_port(s) for s in servers):
            raise JobConfigError(
                f"bootstrap_servers: expected host:port[,host:port...], "
                f"got {self.bootstrap_servers!r}"
            )
        object.__setattr__(self, "bootstrap_servers", ",".join(servers))
        if not isinstance(self.cluster, str) or not self.cluster.strip():
            raise JobConfigError("cluster: the cluster label must not be empty")
        for name in ("membership_topic", "offsets_topic"):
            topic = getattr(self, name)
            if not is_topic_name(topic):
                raise JobConfigError(f"{name}: {topic!r} is not a valid Kafka topic name")
        if self.offsets_topic == self.membership_topic:
            raise JobConfigError("offsets_topic: must differ from membership_topic")
        _check_starting_offsets(self.starting_offsets)
        for name in ("checkpoint_dir", "delta_path"):
            value = getattr(self, name)
            if not isinstance(value, str | Path) or not str(value).strip():
                raise JobConfigError(f"{name}: expected a path or URI, got {value!r}")
            # a local path or a URI Spark understands (hdfs://, s3a://, abfss://...)
            object.__setattr__(self, name, str(value))
        if not _is_number(self.trigger_interval_s) or not 0 < self.trigger_interval_s <= _MAX_S:
            raise JobConfigError(
                f"trigger_interval_s: expected a number of seconds in (0, {_MAX_S:g}], "
                f"got {self.trigger_interval_s!r}"
            )
        for name in ("broker_check_timeout_s", "broker_watch_interval_s"):
            value = getattr(self, name)
            if not _is_number(value) or not 0 <= value <= _MAX_S:
                raise JobConfigError(
                    f"{name}: expected a number of seconds in [0, {_MAX_S:g}] (0: off), "
                    f"got {value!r}"
                )
        window = self.lag_status_window_s
        if not _is_number(window) or not 0.001 <= window <= 86_400 * 30:
            raise JobConfigError(
                f"lag_status_window_s: expected seconds in [0.001, 2592000], got {window!r}"
            )
        group_pattern(self.group_filter, JobConfigError)
        if self.group_filter != ".*" and self.offset_commits_history == "every":
            raise JobConfigError(
                "group_filter: not with offset_commits_history=every (its commit lane writes "
                "every commit from the JVM, unfiltered); use kept or latest"
            )
        sample = self.offset_commits_interval_s
        if not _is_number(sample) or not 0.001 <= sample <= 86_400 * 30:
            raise JobConfigError(
                f"offset_commits_interval_s: expected seconds in [0.001, 2592000], got {sample!r}"
            )
        for name, zero in (
            ("partition_lag_interval_s", "every measurement"),
            ("lag_export_interval_s", "every measurement"),
            ("group_lag_interval_s", "none"),
            ("lag_status_hold_s", "every change"),
        ):
            value = getattr(self, name)
            if not _is_number(value) or not 0 <= value <= 86_400 * 30:
                raise JobConfigError(
                    f"{name}: expected seconds in [0, 2592000] (0: {zero}), got {value!r}"
                )
        stored = round(self.partition_lag_interval_s * 1000)
        exported = round(self.lag_export_interval_s * 1000)
        if exported and stored % exported:
            raise JobConfigError(
                f"partition_lag_interval_s: expected a multiple of lag_export_interval_s "
                f"({self.lag_export_interval_s:g}) or 0, got {self.partition_lag_interval_s:g}"
            )
        retention = self.group_retention_s
        if not _is_number(retention) or not 0 <= retention <= _MAX_RETENTION_S:
            raise JobConfigError(
                f"group_retention_s: expected seconds in [0, {_MAX_RETENTION_S:g}] (0: never), "
                f"got {retention!r}"
            )
        max_age = self.end_offsets_max_age_s
        if not _is_number(max_age) or not 0.001 <= max_age <= 86_400 * 30:
            raise JobConfigError(
                f"end_offsets_max_age_s: expected seconds in [0.001, 2592000], got {max_age!r}"
            )
        interval = self.maintenance_interval_s
        if not _is_number(interval) or not 0 <= interval <= _MAX_MAINTENANCE_S:
            raise JobConfigError(
                f"maintenance_interval_s: expected seconds in [0, {_MAX_MAINTENANCE_S:g}] "
                f"(0: never), got {interval!r}"
            )
        for name in ("audit_retention_days", "lag_retention_days", "bad_records_retention_days"):
            days = getattr(self, name)
            if not _is_int(days) or not 0 <= days <= _MAX_RETENTION_DAYS:
                raise JobConfigError(
                    f"{name}: expected whole days in [0, {_MAX_RETENTION_DAYS}] (0: keep every "
                    f"day), got {days!r}"
                )
        for name in ("delta_log_retention_hours", "deleted_file_retention_hours"):
            hours = getattr(self, name)
            if not _is_number(hours) or not 1 <= hours <= _MAX_RETENTION_DAYS * 24:
                raise JobConfigError(
                    f"{name}: expected hours in [1, {_MAX_RETENTION_DAYS * 24}], got {hours!r}"
                )
        if not isinstance(self.metrics_host, str) or not self.metrics_host:
            raise JobConfigError("metrics_host: must not be empty")
        if (
            isinstance(self.metrics_port, bool)
            or not isinstance(self.metrics_port, int)
            or not 0 <= self.metrics_port < 65536
        ):
            raise JobConfigError(
                f"metrics_port: expected 0 (off) or a port 1-65535, got {self.metrics_port!r}"
            )
        if self.metrics_web_config_file is not None:
            if not isinstance(self.metrics_web_config_file, str | Path) or not str(
                self.metrics_web_config_file
            ):
                raise JobConfigError(
                    f"metrics_web_config_file: expected a file path, "
                    f"got {self.metrics_web_config_file!r}"
                )
            object.__setattr__(self, "metrics_web_config_file", str(self.metrics_web_config_file))
        if self.spark_master is not None and (
            not isinstance(self.spark_master, str) or not self.spark_master.strip()
        ):
            raise JobConfigError(f"spark_master: expected a master URL, got {self.spark_master!r}")
        for name in (
            "max_offsets_per_trigger",
            "decode_partitions",
            "consumer_session_timeout_ms",
            "offset_commits_jump_records",
        ):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise JobConfigError(f"{name}: expected a positive integer, got {value!r}")
        if self.offset_commits_history not in OFFSET_COMMITS_HISTORY:
            raise JobConfigError(
                f"offset_commits_history: expected one of {', '.join(OFFSET_COMMITS_HISTORY)}, "
                f"got {self.offset_commits_history!r}"
            )
        conf = string_map("spark_conf", self.spark_conf, JobConfigError)
        for key in conf:
            if not key.startswith("spark."):
                raise JobConfigError(f"spark_conf: {key!r} is not a Spark setting (spark.*)")
        object.__setattr__(self, "spark_conf", MappingProxyType(conf))
        options: dict[str, str] = {}
        for key, value in string_map("kafka_options", self.kafka_options, JobConfigError).items():
            bare = key.removeprefix("kafka.")
            if bare in FORBIDDEN_KAFKA_OPTIONS:
                raise JobConfigError(
                    f"kafka_options: {bare!r} cannot be set here (the Kafka source sets it"
                    + (", use bootstrap_servers" if bare == "bootstrap.servers" else "")
                    + ")"
                )
            options[bare] = value
        object.__setattr__(self, "kafka_options", MappingProxyType(options))

    @property
    def group_pattern(self) -> re.Pattern[str]:
        """``group_filter`` compiled (:func:`group_matches`)."""
        return group_pattern(self.group_filter, JobConfigError)

    @property
    def kafka(self) -> KafkaConnection:
        """The monitored cluster: ``bootstrap_servers`` and ``kafka_options``."""
        return KafkaConnection(tuple_servers(self.bootstrap_servers), self.kafka_options)

    def redacted_kafka_options(self) -> dict[str, str]:
        """``kafka_options`` for logs, secrets masked."""
        return self.kafka.redacted()


# -- the collector ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CollectorConfig:
    """What the collector connects to and where it publishes; validated on construction.

    ``bootstrap_servers`` accepts a comma-separated string or a sequence of ``host:port``
    and is stored as a tuple. ``group_filter`` is a regular expression that must match the
    whole group id (``re.fullmatch``). ``kafka_options`` are the connection's security
    settings: kafka-python's names (``KAFKA_OPTION_KEYS``) or the Java client's
    (:data:`JAVA_SECURITY_KEYS`, mapped); ``repr`` never shows them. ``kafka`` is the
    :class:`KafkaConnection` they make. ``topic_partitions`` and ``topic_replication_factor``
    apply when the collector creates the topic (``None``: the broker's defaults).

    ``schema_version`` is the membership events' version it writes (``docs/events.md``): 2
    publishes changes (a group's event when it changed, a heartbeat every
    ``heartbeat_interval_s`` while it does not, the end offsets that moved every
    ``end_offsets_interval_s`` and all of them every ``full_end_offsets_interval_s``, a
    ``poll`` event naming the unchanged groups every ``poll_event_interval_s``); 1, a
    full copy of every group and end offset every ``interval_s``, for one release. A
    cadence shorter than ``interval_s`` (or, for the full end offsets, than
    ``end_offsets_interval_s``) acts as that: the collector publishes only when it polls.

    ``describe_interval_s`` (version 2): DescribeGroups asks for every classic group this
    often; in between, only for a group that is new, whose ListGroups state moved since its
    last description, or that is not settled (any state but ``Stable`` and ``Empty``).

    ``chunk_bytes`` (version 2): a ``topics`` or ``end_offsets`` event whose JSON would be
    longer is split by topic into records of at most this many bytes before compression
    (one topic whose entry alone is longer gets a record of its own); keep it well under
    the membership topic's ``max.message.bytes``.
    """

    bootstrap_servers: tuple[str, ...] | str = (DEFAULT_BOOTSTRAP_SERVERS,)
    interval_s: float = 5.0
    schema_version: int = 2
    heartbeat_interval_s: float = 120.0
    end_offsets_interval_s: float = 30.0
    full_end_offsets_interval_s: float = 600.0
    describe_interval_s: float = 30.0
    poll_event_interval_s: float = 20.0
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    topic: str = DEFAULT_MEMBERSHIP_TOPIC
    cluster: str = DEFAULT_CLUSTER
    group_filter: str = ".*"
    kafka_options: Mapping[str, Any] = field(default_factory=dict, repr=False, hash=False)
    topic_partitions: int | None = None
    topic_replication_factor: int | None = None
    client_id: str = "rebalance-monitor-collector"
    request_timeout_ms: int = 30_000
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 60.0
    kafka: KafkaConnection = field(init=False, repr=False, hash=False, compare=False)

    def __post_init__(self) -> None:
        options = dict(self.kafka_options)
        for key, value in options.items():
            if key not in JAVA_SECURITY_KEYS:
                _collector(check_kafka_option, key, value)
        kafka = _collector(KafkaConnection.of, self.bootstrap_servers, options)
        object.__setattr__(self, "bootstrap_servers", kafka.bootstrap_servers)
        object.__setattr__(self, "kafka_options", MappingProxyType(options))
        object.__setattr__(self, "kafka", kafka)
        if not (_is_number(self.interval_s) and 0 < self.interval_s <= MAX_COLLECT_S):
            raise CollectorConfigError(
                f"interval_s: must be positive (at most {MAX_COLLECT_S:g} s), got {self.interval_s}"
            )
        if self.schema_version not in (1, 2) or isinstance(self.schema_version, bool):
            raise CollectorConfigError(
                f"schema_version: must be 1 or 2, got {self.schema_version!r}"
            )
        for name in (
            "heartbeat_interval_s",
            "end_offsets_interval_s",
            "full_end_offsets_interval_s",
            "describe_interval_s",
            "poll_event_interval_s",
        ):
            value = getattr(self, name)
            if not (_is_number(value) and 0 < value <= MAX_COLLECT_S):
                raise CollectorConfigError(
                    f"{name}: must be positive (at most {MAX_COLLECT_S:g} s), got {value}"
                )
        if not (
            _is_int(self.chunk_bytes) and MIN_CHUNK_BYTES <= self.chunk_bytes <= MAX_EVENT_BYTES
        ):
            raise CollectorConfigError(
                f"chunk_bytes: must be an integer from {MIN_CHUNK_BYTES} to {MAX_EVENT_BYTES}, "
                f"got {self.chunk_bytes!r}"
            )
        if not is_topic_name(self.topic):
            raise CollectorConfigError(
                f"topic: {self.topic!r} is not a valid Kafka topic name "
                "(1-249 of a-z A-Z 0-9 . _ -, not '.' or '..')"
            )
        if not isinstance(self.cluster, str) or not self.cluster.strip():
            raise CollectorConfigError("cluster: the cluster label must not be empty")
        group_pattern(self.group_filter, CollectorConfigError)
        for name in ("topic_partitions", "topic_replication_factor"):
            value = getattr(self, name)
            if value is not None and (not _is_int(value) or value < 1):
                raise CollectorConfigError(f"{name}: must be at least 1, got {value}")
        if not _is_int(self.request_timeout_ms) or self.request_timeout_ms < 1:
            raise CollectorConfigError("request_timeout_ms: must be positive")
        if not (
            _is_number(self.backoff_initial_s)
            and _is_number(self.backoff_max_s)
            and 0 < self.backoff_initial_s <= self.backoff_max_s
        ):
            raise CollectorConfigError(
                "backoff_initial_s and backoff_max_s: need 0 < backoff_initial_s <= backoff_max_s"
            )
        unmapped = kafka.mapped()[1]
        if unmapped:
            raise CollectorConfigError(
                f"kafka_options: {', '.join(unmapped)} has no kafka-python equivalent "
                "(use PEM files: ssl.truststore.type=PEM, or ssl_cafile)"
            )

    @property
    def group_pattern(self) -> re.Pattern[str]:
        return group_pattern(self.group_filter, CollectorConfigError)

    def admin_configs(self) -> dict[str, Any]:
        """Keyword arguments for ``KafkaAdminClient``."""
        configs = self._common_configs()
        configs.update(self.check_configs())
        return configs

    def producer_configs(self) -> dict[str, Any]:
        """Keyword arguments for ``KafkaProducer`` (acks=all, zstd batches; the JSON is
        encoded here)."""
        configs = self._common_configs()
        configs.update(
            {
                "acks": "all",
                "linger_ms": 20,
                "max_block_ms": self.request_timeout_ms,
                # the membership topic's compression.type (streaming.collector.topic)
                "compression_type": "zstd",
                # the client checks a record before compressing it, the broker the
                # compressed batch against the topic's max.message.bytes: chunk_bytes bounds
                # the topics and end_offsets records, but a topic whose entry alone is longer
                # (thousands of partitions) is one record past it, which zstd shrinks
                "max_request_size": MAX_EVENT_BYTES,
            }
        )
        configs.update(self.kafka.kafka_python())
        return configs

    def check_configs(self) -> dict[str, Any]:
        """The security options for :func:`streaming.kafka_check.check_broker` (and the
        admin client)."""
        return {
            k: v for k, v in self.kafka.kafka_python().items() if k not in PRODUCER_ONLY_OPTIONS
        }

    def redacted_options(self) -> dict[str, str]:
        """``kafka_options`` for logs: secrets and objects masked."""
        return self.kafka.redacted()

    def _common_configs(self) -> dict[str, Any]:
        return {
            "bootstrap_servers": list(self.kafka.bootstrap_servers),
            "client_id": self.client_id,
            "request_timeout_ms": self.request_timeout_ms,
            "bootstrap_timeout_ms": self.request_timeout_ms,
            # kafka-python's default (30 s) would hide a broker that is back; the loop has
            # its own backoff between snapshots.
            "reconnect_backoff_max_ms": 1000,
        }


def _collector(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)``, its ConfigError raised as a CollectorConfigError."""
    try:
        return function(*args)
    except CollectorConfigError:
        raise
    except ConfigError as exc:
        raise CollectorConfigError(str(exc)) from None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# -- loading: defaults < file < environment < flags -----------------------------------------


@dataclass(frozen=True)
class _Layout:
    """How one configuration class loads: its fields by kind, its error, its environment
    prefix, where its settings are in a config file, and how a map setting's entries are
    read (``map_entries(name, value, origin)``)."""

    cls: type[Any]
    error: type[ConfigError]
    env_prefix: str
    table: str | None
    ignored: frozenset[str]
    map_entries: Callable[[str, Mapping[str, Any], str], dict[str, Any]]
    env_map: Callable[[str, str, str], dict[str, Any]]

    @property
    def names(self) -> dict[str, str]:
        """field name -> its annotation (a string: ``from __future__ import annotations``)."""
        return {f.name: str(f.type) for f in fields(self.cls) if f.init}

    def kind(self, name: str) -> str:
        annotation = self.names[name]
        if "Mapping" in annotation:
            return "map"
        if annotation.startswith("int"):
            return "int"
        if annotation.startswith("float"):
            return "float"
        return "str"

    def optional(self, name: str) -> bool:
        return "None" in self.names[name]


def _job_map_entries(name: str, value: Mapping[str, Any], origin: str) -> dict[str, Any]:
    return string_map(name, value, JobConfigError)


def _job_env_map(name: str, var: str, raw: str) -> dict[str, Any]:
    try:
        parsed = json.loads(raw)
    except ValueError:
        raise JobConfigError(f"{name}: {var} must be a JSON object") from None
    if not isinstance(parsed, dict):
        raise JobConfigError(f"{name}: {var} must be a JSON object")
    return parsed


def job_kafka_options_from_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The job's Kafka client settings in ``$REBALANCE_MONITOR_KAFKA_OPTIONS`` (a JSON object),
    read as the job's own loader reads them (the simulator takes them too)."""
    env = os.environ if environ is None else environ
    var = ENV_PREFIX + "KAFKA_OPTIONS"
    raw = env.get(var, "")
    if not raw.strip():
        return {}
    return string_map("kafka_options", _job_env_map("kafka_options", var, raw), JobConfigError)


def _collector_map_entries(name: str, value: Mapping[str, Any], origin: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, bool):
            item = "true" if item else "false"
        if not isinstance(item, str):
            raise CollectorConfigError(f"{name}: {key} in the {origin}: expected a string")
        parsed = parse_kafka_option(f"{key}={item}", where=f"kafka_options in the {origin}")
        out[parsed[0]] = parsed[1]
    return out


def _collector_env_map(name: str, var: str, raw: str) -> dict[str, Any]:
    return dict(kafka_options_from_env({var: raw}))


_JOB = _Layout(
    JobConfig,
    JobConfigError,
    ENV_PREFIX,
    None,
    frozenset({COLLECT_TABLE}),
    _job_map_entries,
    _job_env_map,
)
_COLLECTOR = _Layout(
    CollectorConfig,
    CollectorConfigError,
    COLLECT_ENV_PREFIX,
    COLLECT_TABLE,
    frozenset(),
    _collector_map_entries,
    _collector_env_map,
)


def under_spark_submit(environ: Mapping[str, str] | None = None) -> bool:
    """True when ``spark-submit`` launched this interpreter (its JVM gateway is waiting)."""
    env = os.environ if environ is None else environ
    return "PYSPARK_GATEWAY_PORT" in env


def load_config(
    *,
    config_file: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> JobConfig:
    """Defaults < ``config_file`` (else ``$REBALANCE_MONITOR_CONFIG``) < ``environ`` (default:
    ``os.environ``) < ``overrides`` (CLI flags, already typed; None values are ignored;
    ``spark_conf``/``kafka_options`` are merged key by key into the lower layers)."""
    env = dict(os.environ if environ is None else environ)
    values, origins = _layers(_JOB, config_file, env, overrides, {})
    if "spark_master" not in values and under_spark_submit(env):
        values["spark_master"] = None
    if isinstance(values.get("spark_master"), str) and values["spark_master"].strip().lower() in (
        "",
        "none",
    ):
        values["spark_master"] = None
    config: JobConfig = _build(_JOB, values, origins)
    return config


def load_collector_config(
    *,
    config_file: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> CollectorConfig:
    """Defaults < ``config_file``'s ``[collect]`` table (or its top level when it has no
    such table) < ``environ`` (``REBALANCE_MONITOR_COLLECT_*``) < ``overrides`` (flags,
    typed; None values ignored; ``kafka_options`` merged key by key). ``flags`` names the
    flag of each setting, for error messages."""
    env = dict(os.environ if environ is None else environ)
    values, origins = _layers(_COLLECTOR, config_file, env, overrides, flags or {})
    config: CollectorConfig = _build(_COLLECTOR, values, origins)
    return config


def _layers(
    layout: _Layout,
    config_file: str | Path | None,
    env: Mapping[str, str],
    overrides: Mapping[str, Any] | None,
    flags: Mapping[str, str],
) -> tuple[dict[str, Any], dict[str, str]]:
    """The merged settings, and where each came from (for error messages)."""
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    path = config_file
    if path is None and layout is _JOB:
        path = env.get(CONFIG_FILE_ENV)
    if path:
        data = _read_file(Path(path), layout.error)
        if layout.table is not None:
            table = data.get(layout.table, data)
            if not isinstance(table, Mapping):
                raise layout.error(f"config: [{layout.table}] in {path} must be a table")
            data = dict(table)
        for key in layout.ignored:
            data.pop(key, None)
        _merge(layout, values, data, f"config file {path}", origins)
    _merge(layout, values, _from_env(layout, env), "environment", origins)
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    _merge(layout, values, given, "command line", origins, flags)
    return values, origins


def _build(layout: _Layout, values: dict[str, Any], origins: Mapping[str, str]) -> Any:
    """``layout.cls(**values)``; an error about a setting says where its value came from."""
    try:
        return layout.cls(**values)
    except ConfigError as exc:
        message = str(exc)
        setting = message.split(":", 1)[0]
        origin = origins.get(setting)
        if origin is None or "\n" in message:
            raise
        raise layout.error(f"{message} (from {origin})") from None


def _merge(
    layout: _Layout,
    values: dict[str, Any],
    layer: Mapping[str, Any],
    origin: str,
    origins: dict[str, str],
    flags: Mapping[str, str] | None = None,
) -> None:
    names = layout.names
    for key, value in layer.items():
        if key not in names:
            known = ", ".join(sorted(names))
            raise layout.error(f"{key}: unknown setting in the {origin} (known: {known})")
        if origin == "environment":
            origins[key] = "$" + layout.env_prefix + key.upper()
        elif flags is not None:
            origins[key] = flags.get(key, "the command line")
        else:
            origins[key] = f"the {origin}"
        if layout.kind(key) == "map":
            if not isinstance(value, Mapping):
                raise layout.error(f"{key}: expected a table of KEY = VALUE in the {origin}")
            merged = dict(values.get(key, {}))
            merged.update(layout.map_entries(key, value, origin))
            values[key] = merged
        else:
            values[key] = value


def _read_file(path: Path, error: type[ConfigError] = JobConfigError) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise error(
                f"config: {path} is larger than {MAX_CONFIG_BYTES // 1024} KiB: not a config file"
            )
        data = tomllib.loads(raw.decode("utf-8"))
    except OSError as e:
        raise error(f"config: cannot read {path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise error(f"config: {path} is not valid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise error(f"config: {path} is not UTF-8 text (byte {e.start}: {e.reason})") from None
    except RecursionError:
        raise error(f"config: {path} is nested too deeply") from None
    return _flatten_maps(data)


def _flatten_maps(data: dict[str, Any]) -> dict[str, Any]:
    for key in ("spark_conf", "kafka_options"):
        if isinstance(data.get(key), Mapping):
            data[key] = _flatten(data[key])
    if isinstance(data.get(COLLECT_TABLE), Mapping):
        data[COLLECT_TABLE] = _flatten_maps(dict(data[COLLECT_TABLE]))
    return data


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """TOML dotted keys (``spark.sql.x = 1``) are nested tables: join them back."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def _from_env(layout: _Layout, env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    error = layout.error
    for name in layout.names:
        var = layout.env_prefix + name.upper()
        if var not in env:
            continue
        raw = env[var]
        kind = layout.kind(name)
        if kind == "map":
            out[name] = layout.env_map(name, var, raw)
        elif (
            kind in ("int", "float")
            and layout.optional(name)
            and raw.strip().lower()
            in (
                "",
                "none",
            )
        ):
            out[name] = None
        elif kind == "int":
            try:
                out[name] = int(raw)
            except ValueError:
                raise error(f"{name}: {var} must be an integer, got {raw!r}") from None
        elif kind == "float":
            try:
                out[name] = float(raw)
            except ValueError:
                raise error(f"{name}: {var} must be a number, got {raw!r}") from None
        else:
            out[name] = raw
    return out


def _check_starting_offsets(value: Any) -> None:
    if not isinstance(value, str):
        raise JobConfigError(f"starting_offsets: expected a string, got {value!r}")
    if value in _STARTING_OFFSETS:
        return
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise JobConfigError(
            "starting_offsets: expected 'earliest', 'latest' or Spark's JSON "
            f'{{"topic": {{"0": offset}}}}, got {value!r}'
        )
