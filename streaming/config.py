"""The Spark job's configuration: one frozen, validated :class:`JobConfig`, loaded once.

Precedence, lowest first::

    defaults  <  config file (TOML)  <  environment (REBALANCE_MONITOR_*)  <  CLI flags

:func:`load_config` merges the layers and builds the :class:`JobConfig`; every error is a
:class:`JobConfigError` whose message starts with the setting's name (and says which layer
the value came from). Nothing here connects to anything or imports pyspark: the job
validates its configuration before it starts Spark (STYLE habit 9).

The config file (``--config FILE`` or ``REBALANCE_MONITOR_CONFIG``) uses the field names::

    bootstrap_servers = "broker-1:9092,broker-2:9092"
    cluster = "prod-eu"
    trigger_interval_s = 5
    [spark_conf]
    "spark.sql.shuffle.partitions" = "16"      # quoted or dotted keys are both fine
    [kafka_options]
    "security.protocol" = "SASL_SSL"

Environment variables are ``REBALANCE_MONITOR_<FIELD>`` in capitals
(``REBALANCE_MONITOR_BOOTSTRAP_SERVERS``...); ``REBALANCE_MONITOR_SPARK_CONF`` and
``REBALANCE_MONITOR_KAFKA_OPTIONS`` hold a JSON object. ``spark_master`` set to ``""`` or
``none`` leaves the master to ``spark-submit``; when the job runs under ``spark-submit``
(``PYSPARK_GATEWAY_PORT`` is set) and no layer names a master, none is set.

Exceptions::

    JobConfigError      (streaming.errors.ConfigError, a ValueError) an invalid setting;
                        the message names it
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from streaming.errors import ConfigError

__all__ = [
    "DEFAULT_BOOTSTRAP_SERVERS",
    "DEFAULT_JOB_DIR",
    "ENV_PREFIX",
    "FORBIDDEN_KAFKA_OPTIONS",
    "OFFSET_COMMITS_HISTORY",
    "JobConfig",
    "JobConfigError",
    "load_config",
    "parse_key_value",
    "under_spark_submit",
]

REPO = Path(__file__).resolve().parents[1]
DEFAULT_JOB_DIR = REPO / ".local" / "job"
DEFAULT_BOOTSTRAP_SERVERS = "127.0.0.1:19092"  # streaming.kafka_local.DEFAULT_PORT
ENV_PREFIX = "REBALANCE_MONITOR_"
CONFIG_FILE_ENV = ENV_PREFIX + "CONFIG"

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
_SECRET_HINTS = ("password", "jaas", "secret", "token", "key")
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_STARTING_OFFSETS = ("earliest", "latest")
#: ``JobConfig.offset_commits_history`` values.
OFFSET_COMMITS_HISTORY = ("latest", "every")


#: The largest config file read (``--config /dev/zero`` ends here).
MAX_CONFIG_BYTES = 1024 * 1024
#: The longest duration a setting takes, in seconds (a day): ``inf`` or 1e300 are mistakes.
_MAX_S = 86_400.0


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


class JobConfigError(ConfigError):
    """An invalid job setting; the message starts with the setting's name."""


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
    * ``offset_commits_history``: what the ``offset_commits`` table keeps: ``latest`` (the
      default), the last commit (or offset tombstone) of each partition of each group per
      micro-batch; ``every``, every commit record. ``docs/tables.md`` gives the volumes.
    * ``metrics_web_config_file``: the exporter's TLS and basic auth, a file in Prometheus'
      exporter-toolkit format (:mod:`streaming.sinks.web_config`); None: plain HTTP.
    * ``broker_check_timeout_s``: how long the check of the cluster before Spark starts may
      take (:mod:`streaming.kafka_check`; exit 2 when it fails); 0 skips it.
    * ``broker_watch_interval_s``: while the job runs, the cluster is checked this often
      (``rebalance_monitor_kafka_up``, a line when it goes down or comes back); 0: never.
    * ``lag_status_window_s``: the lag status's sliding window, in record time (Burrow's
      evaluation, ``docs/tracking.md`` "Lag status"), 600 s by default.
    """

    bootstrap_servers: str = DEFAULT_BOOTSTRAP_SERVERS
    cluster: str = "local"
    membership_topic: str = "rebalance-monitor.membership"
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
    offset_commits_history: str = "latest"
    consumer_session_timeout_ms: int = 45_000
    metrics_web_config_file: str | None = None
    broker_check_timeout_s: float = 30.0
    broker_watch_interval_s: float = 5.0
    lag_status_window_s: float = 600.0

    def __post_init__(self) -> None:
        servers = [s.strip() for s in str(self.bootstrap_servers).split(",")]
        if not servers or not all(_is_host_port(s) for s in servers):
            raise JobConfigError(
                f"bootstrap_servers: expected host:port[,host:port...], "
                f"got {self.bootstrap_servers!r}"
            )
        object.__setattr__(self, "bootstrap_servers", ",".join(servers))
        if not isinstance(self.cluster, str) or not self.cluster.strip():
            raise JobConfigError("cluster: the cluster label must not be empty")
        for name in ("membership_topic", "offsets_topic"):
            topic = getattr(self, name)
            if (
                not isinstance(topic, str)
                or not _TOPIC_NAME.fullmatch(topic)
                or topic in (".", "..")
            ):
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
        for name in ("max_offsets_per_trigger", "decode_partitions", "consumer_session_timeout_ms"):
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
        conf = _string_map("spark_conf", self.spark_conf)
        for key in conf:
            if not key.startswith("spark."):
                raise JobConfigError(f"spark_conf: {key!r} is not a Spark setting (spark.*)")
        object.__setattr__(self, "spark_conf", MappingProxyType(conf))
        options: dict[str, str] = {}
        for key, value in _string_map("kafka_options", self.kafka_options).items():
            bare = key.removeprefix("kafka.")
            if bare in FORBIDDEN_KAFKA_OPTIONS:
                raise JobConfigError(
                    f"kafka_options: {bare!r} cannot be set here (the Kafka source sets it"
                    + (", use bootstrap_servers" if bare == "bootstrap.servers" else "")
                    + ")"
                )
            options[bare] = value
        object.__setattr__(self, "kafka_options", MappingProxyType(options))

    def redacted_kafka_options(self) -> dict[str, str]:
        """``kafka_options`` for logs, secrets masked."""
        return {
            k: "***" if any(h in k.lower() for h in _SECRET_HINTS) else v
            for k, v in sorted(self.kafka_options.items())
        }


# -- loading --------------------------------------------------------------------------------

_FIELDS = {f.name: f for f in fields(JobConfig)}
_INT_FIELDS = frozenset(
    {"metrics_port", "max_offsets_per_trigger", "decode_partitions", "consumer_session_timeout_ms"}
)
_FLOAT_FIELDS = frozenset(
    {
        "trigger_interval_s",
        "broker_check_timeout_s",
        "broker_watch_interval_s",
        "lag_status_window_s",
    }
)
_MAP_FIELDS = frozenset({"spark_conf", "kafka_options"})
_OPTIONAL_FIELDS = frozenset(
    {"spark_master", "max_offsets_per_trigger", "decode_partitions", "metrics_web_config_file"}
)


def under_spark_submit(environ: Mapping[str, str] | None = None) -> bool:
    """True when ``spark-submit`` launched this interpreter (its JVM gateway is waiting)."""
    env = os.environ if environ is None else environ
    return "PYSPARK_GATEWAY_PORT" in env


def parse_key_value(text: str, setting: str) -> tuple[str, str]:
    """``"KEY=VALUE"`` -> ``(key, value)``; the value may contain ``=``."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise JobConfigError(f"{setting}: expected KEY=VALUE, got {text!r}")
    return key, value


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
    values: dict[str, Any] = {}
    path = config_file if config_file is not None else env.get(CONFIG_FILE_ENV)
    if path:
        _merge(values, _read_file(Path(path)), "config file")
    _merge(values, _from_env(env), "environment")
    _merge(values, {k: v for k, v in (overrides or {}).items() if v is not None}, "CLI")
    if "spark_master" not in values and under_spark_submit(env):
        values["spark_master"] = None
    if isinstance(values.get("spark_master"), str) and values["spark_master"].strip().lower() in (
        "",
        "none",
    ):
        values["spark_master"] = None
    return JobConfig(**values)


def _merge(values: dict[str, Any], layer: Mapping[str, Any], origin: str) -> None:
    for key, value in layer.items():
        if key not in _FIELDS:
            known = ", ".join(sorted(_FIELDS))
            raise JobConfigError(f"{key}: unknown setting in the {origin} (known: {known})")
        if key in _MAP_FIELDS:
            if not isinstance(value, Mapping):
                raise JobConfigError(f"{key}: expected a table of KEY = VALUE in the {origin}")
            merged = dict(values.get(key, {}))
            merged.update(_string_map(key, value))
            values[key] = merged
        else:
            values[key] = value


def _read_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise JobConfigError(
                f"config: {path} is larger than {MAX_CONFIG_BYTES // 1024} KiB: not a config file"
            )
        data = tomllib.loads(raw.decode("utf-8"))
    except OSError as e:
        raise JobConfigError(f"config: cannot read {path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise JobConfigError(f"config: {path} is not valid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise JobConfigError(
            f"config: {path} is not UTF-8 text (byte {e.start}: {e.reason})"
        ) from None
    except RecursionError:
        raise JobConfigError(f"config: {path} is nested too deeply") from None
    for key in _MAP_FIELDS & data.keys():
        if isinstance(data[key], Mapping):
            data[key] = _flatten(data[key])
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


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in _FIELDS:
        var = ENV_PREFIX + name.upper()
        if var not in env:
            continue
        raw = env[var]
        if name in _MAP_FIELDS:
            try:
                parsed = json.loads(raw)
            except ValueError:
                raise JobConfigError(f"{name}: {var} must be a JSON object") from None
            if not isinstance(parsed, dict):
                raise JobConfigError(f"{name}: {var} must be a JSON object")
            out[name] = parsed
        elif name in _INT_FIELDS:
            if name in _OPTIONAL_FIELDS and raw.strip().lower() in ("", "none"):
                out[name] = None
                continue
            try:
                out[name] = int(raw)
            except ValueError:
                raise JobConfigError(f"{name}: {var} must be an integer, got {raw!r}") from None
        elif name in _FLOAT_FIELDS:
            try:
                out[name] = float(raw)
            except ValueError:
                raise JobConfigError(f"{name}: {var} must be a number, got {raw!r}") from None
        else:
            out[name] = raw
    return out


def _string_map(name: str, value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise JobConfigError(f"{name}: expected a mapping of KEY to VALUE")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key.strip():
            raise JobConfigError(f"{name}: keys must be non-empty strings, got {key!r}")
        if isinstance(item, bool):
            item = "true" if item else "false"
        elif isinstance(item, int | float):
            item = str(item)
        if not isinstance(item, str):
            raise JobConfigError(f"{name}: {key} must be a string, number or boolean")
        out[key.strip()] = item
    return out


def _is_host_port(value: str) -> bool:
    host, sep, port = value.rpartition(":")
    return bool(sep and host and port.isdigit() and 0 < int(port) < 65536)


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
