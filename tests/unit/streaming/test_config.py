"""``streaming.config``: defaults, the four layers in order, and errors that name the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from streaming.config import (
    DEFAULT_JOB_DIR,
    JobConfig,
    JobConfigError,
    load_config,
    parse_key_value,
    under_spark_submit,
)
from streaming.errors import ConfigError

pytestmark = [pytest.mark.unit]


def test_defaults() -> None:
    c = load_config(environ={})
    assert c.bootstrap_servers == "127.0.0.1:19092"
    assert c.cluster == "local"
    assert c.membership_topic == "rebalance-monitor.membership"
    assert c.offsets_topic == "__consumer_offsets"
    assert c.starting_offsets == "earliest"
    assert c.checkpoint_dir == str(DEFAULT_JOB_DIR / "checkpoint")
    assert c.delta_path == str(DEFAULT_JOB_DIR / "delta")
    assert c.trigger_interval_s == 1.0
    assert (c.metrics_host, c.metrics_port) == ("127.0.0.1", 9108)
    assert c.spark_master == "local[*]"
    assert dict(c.spark_conf) == {} and dict(c.kafka_options) == {}
    assert c.max_offsets_per_trigger is None
    assert c.decode_partitions == 4
    assert c.offset_commits_history == "kept"
    assert (c.offset_commits_interval_s, c.offset_commits_jump_records) == (3600.0, 1_000)
    assert (c.partition_lag_interval_s, c.group_lag_interval_s) == (600.0, 60.0)
    assert c.lag_export_interval_s == 30.0
    assert (c.lag_status_window_s, c.lag_status_hold_s) == (600.0, 300.0)
    assert c.consumer_session_timeout_ms == 45_000


def test_frozen() -> None:
    c = JobConfig()
    with pytest.raises(AttributeError):
        c.cluster = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        c.spark_conf["spark.x"] = "1"  # type: ignore[index]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "job.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_layers_file_then_environment_then_cli(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
bootstrap_servers = "file:1"
cluster = "from-file"
trigger_interval_s = 5
membership_topic = "file.topic"
[spark_conf]
spark.sql.shuffle.partitions = "16"
"spark.driver.memory" = "4g"
[kafka_options]
"security.protocol" = "SSL"
""",
    )
    env = {
        "REBALANCE_MONITOR_CONFIG": str(path),
        "REBALANCE_MONITOR_CLUSTER": "from-env",
        "REBALANCE_MONITOR_BOOTSTRAP_SERVERS": "env:2",
        "REBALANCE_MONITOR_METRICS_PORT": "0",
        "REBALANCE_MONITOR_SPARK_CONF": '{"spark.driver.memory": "8g"}',
    }
    c = load_config(
        environ=env,
        overrides={
            "bootstrap_servers": "cli:3, cli:4",
            "cluster": None,  # not given on the command line
            "spark_conf": {"spark.sql.shuffle.partitions": "2"},
            "kafka_options": {"kafka.sasl.mechanism": "PLAIN"},
        },
    )
    assert c.bootstrap_servers == "cli:3,cli:4"
    assert c.cluster == "from-env"
    assert c.membership_topic == "file.topic"
    assert c.trigger_interval_s == 5
    assert c.metrics_port == 0
    # maps merge key by key across the layers
    assert dict(c.spark_conf) == {
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.memory": "8g",
    }
    assert dict(c.kafka_options) == {"security.protocol": "SSL", "sasl.mechanism": "PLAIN"}


def test_explicit_config_file_wins_over_the_environment_variable(tmp_path: Path) -> None:
    path = _write(tmp_path, 'cluster = "explicit"\n')
    c = load_config(config_file=path, environ={"REBALANCE_MONITOR_CONFIG": "/nonexistent"})
    assert c.cluster == "explicit"


def test_spark_submit_leaves_the_master_alone() -> None:
    env = {"PYSPARK_GATEWAY_PORT": "4321"}
    assert under_spark_submit(env)
    assert load_config(environ=env).spark_master is None
    assert load_config(environ=env, overrides={"spark_master": "local[2]"}).spark_master == (
        "local[2]"
    )
    assert load_config(environ={}, overrides={"spark_master": "none"}).spark_master is None


def test_secrets_are_not_shown() -> None:
    c = JobConfig(kafka_options={"sasl.jaas.config": "secret-text", "security.protocol": "SSL"})
    assert "secret-text" not in repr(c)
    assert c.redacted_kafka_options() == {"sasl.jaas.config": "***", "security.protocol": "SSL"}


# Each invalid input, and the setting its error must name.
INVALID: list[tuple[dict[str, object], str]] = [
    ({"bootstrap_servers": "no-port"}, "bootstrap_servers"),
    ({"bootstrap_servers": "h:99999"}, "bootstrap_servers"),
    ({"cluster": " "}, "cluster"),
    ({"membership_topic": "bad topic"}, "membership_topic"),
    ({"offsets_topic": "a/b"}, "offsets_topic"),
    ({"offsets_topic": "rebalance-monitor.membership"}, "offsets_topic"),
    ({"starting_offsets": "yesterday"}, "starting_offsets"),
    ({"checkpoint_dir": ""}, "checkpoint_dir"),
    ({"trigger_interval_s": 0}, "trigger_interval_s"),
    ({"metrics_port": 70000}, "metrics_port"),
    ({"spark_master": 5}, "spark_master"),
    ({"max_offsets_per_trigger": 0}, "max_offsets_per_trigger"),
    ({"decode_partitions": 0}, "decode_partitions"),
    ({"offset_commits_history": "sometimes"}, "offset_commits_history"),
    ({"consumer_session_timeout_ms": 0}, "consumer_session_timeout_ms"),
    ({"offset_commits_interval_s": 0}, "offset_commits_interval_s"),
    ({"offset_commits_jump_records": 0}, "offset_commits_jump_records"),
    ({"partition_lag_interval_s": -1}, "partition_lag_interval_s"),
    ({"partition_lag_interval_s": 45}, "partition_lag_interval_s"),  # not a multiple of 30
    ({"lag_export_interval_s": -1}, "lag_export_interval_s"),
    ({"group_lag_interval_s": "1m"}, "group_lag_interval_s"),
    ({"lag_status_window_s": 0}, "lag_status_window_s"),
    ({"lag_status_window_s": "10m"}, "lag_status_window_s"),
    ({"lag_status_hold_s": -1}, "lag_status_hold_s"),
    ({"lag_status_hold_s": "5m"}, "lag_status_hold_s"),
    ({"lag_status_hold_s": 86_400 * 31}, "lag_status_hold_s"),
    ({"group_filter": "orders-("}, "group_filter"),
    ({"group_filter": "orders-.*", "offset_commits_history": "every"}, "group_filter"),
    ({"group_retention_s": -1}, "group_retention_s"),
    ({"group_retention_s": "a week"}, "group_retention_s"),
    ({"spark_conf": {"shuffle": "1"}}, "spark_conf"),
    ({"kafka_options": {"auto.offset.reset": "latest"}}, "kafka_options"),
    ({"kafka_options": {"kafka.bootstrap.servers": "x:1"}}, "kafka_options"),
    ({"kafka_options": {"ssl.x": ["a"]}}, "kafka_options"),
    ({"no_such_setting": 1}, "no_such_setting"),
]


@pytest.mark.parametrize(("overrides", "setting"), INVALID)
def test_errors_name_the_setting(overrides: dict[str, object], setting: str) -> None:
    with pytest.raises(JobConfigError, match=rf"^{setting}:"):
        load_config(environ={}, overrides=overrides)


def test_json_starting_offsets_are_accepted() -> None:
    offsets = '{"__consumer_offsets": {"0": 5}}'
    assert load_config(environ={}, overrides={"starting_offsets": offsets}).starting_offsets == (
        offsets
    )


@pytest.mark.parametrize(
    ("env", "setting"),
    [
        ({"REBALANCE_MONITOR_METRICS_PORT": "x"}, "metrics_port"),
        ({"REBALANCE_MONITOR_TRIGGER_INTERVAL_S": "soon"}, "trigger_interval_s"),
        ({"REBALANCE_MONITOR_SPARK_CONF": "spark.x=1"}, "spark_conf"),
        ({"REBALANCE_MONITOR_KAFKA_OPTIONS": "[1]"}, "kafka_options"),
    ],
)
def test_environment_errors_name_the_setting(env: dict[str, str], setting: str) -> None:
    with pytest.raises(JobConfigError, match=rf"^{setting}:"):
        load_config(environ=env)


def test_config_file_errors(tmp_path: Path) -> None:
    with pytest.raises(JobConfigError, match=r"^config: cannot read"):
        load_config(config_file=tmp_path / "missing.toml", environ={})
    with pytest.raises(JobConfigError, match=r"^config: .* not valid TOML"):
        load_config(config_file=_write(tmp_path, "cluster = \n"), environ={})
    with pytest.raises(JobConfigError, match=r"^spark_conf: expected a table"):
        load_config(config_file=_write(tmp_path, 'spark_conf = "x"\n'), environ={})


def test_parse_key_value() -> None:
    assert parse_key_value("sasl.jaas.config=a b=c;", "--kafka-option") == (
        "sasl.jaas.config",
        "a b=c;",
    )
    with pytest.raises(JobConfigError, match=r"^--conf: expected KEY=VALUE"):
        parse_key_value("novalue", "--conf")


# -- the Kafka connection and the collector's layers ------------------------------------------


def test_a_connection_redacts_its_secrets_and_maps_java_settings() -> None:
    from streaming.kafka_connection import KafkaConnection

    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="u" password="pw1";'
    )
    c = KafkaConnection.of(
        "h1:9092, h2:9093",
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": jaas,
            "ssl_cafile": "/ca.pem",
        },
    )
    assert c.bootstrap_servers == ("h1:9092", "h2:9093") and c.servers == "h1:9092,h2:9093"
    assert "pw1" not in repr(c) and "pw1" not in str(c)
    assert c.redacted()["sasl.jaas.config"] == "***"
    assert c.java() == {"sasl.jaas.config": jaas}  # kafka-python names stay Python's
    python = c.kafka_python()
    assert python["sasl_plain_username"] == "u" and python["sasl_plain_password"] == "pw1"
    assert python["security_protocol"] == "SASL_SSL" and python["ssl_cafile"] == "/ca.pem"
    with pytest.raises(AttributeError):
        c.options = {}  # type: ignore[misc]


def test_the_job_shares_the_connection_model() -> None:
    c = load_config(environ={}, overrides={"kafka_options": {"security.protocol": "SSL"}})
    assert c.kafka.bootstrap_servers == ("127.0.0.1:19092",)
    assert c.kafka.kafka_python()["security_protocol"] == "SSL"


def test_collector_layers_file_then_environment_then_flags(tmp_path: Path) -> None:
    from streaming.config import load_collector_config

    path = _write(
        tmp_path,
        """
cluster = "job-level"
[collect]
bootstrap_servers = "file:1"
cluster = "from-file"
interval_s = 7
topic = "file.topic"
[collect.kafka_options]
security_protocol = "SSL"
ssl_check_hostname = false
""",
    )
    env = {
        "REBALANCE_MONITOR_COLLECT_CLUSTER": "from-env",
        "REBALANCE_MONITOR_COLLECT_INTERVAL_S": "3",
        "REBALANCE_MONITOR_COLLECT_KAFKA_OPTIONS": '{"ssl_cafile": "/env.pem"}',
    }
    c = load_collector_config(
        config_file=path,
        environ=env,
        overrides={"bootstrap_servers": "flag:2", "cluster": None},
    )
    assert c.bootstrap_servers == ("flag:2",)
    assert (c.cluster, c.interval_s, c.topic) == ("from-env", 3.0, "file.topic")
    assert dict(c.kafka_options) == {
        "security_protocol": "SSL",
        "ssl_check_hostname": False,
        "ssl_cafile": "/env.pem",
    }
    # the job reads the same file and leaves the [collect] table to the collector
    assert load_config(config_file=path, environ={}).cluster == "job-level"


@pytest.mark.parametrize(
    ("file_text", "env", "overrides", "origin"),
    [
        ("[collect]\ninterval_s = -1\n", {}, {}, "(from the config file "),
        ("", {"REBALANCE_MONITOR_COLLECT_INTERVAL_S": "-1"}, {}, "$REBALANCE_MONITOR_COLLECT_"),
        ("", {}, {"interval_s": -1.0}, "(from --interval)"),
        ("", {"REBALANCE_MONITOR_COLLECT_INTERVAL_S": "soon"}, {}, "REBALANCE_MONITOR_COLLECT_"),
        ("[collect]\nno_such = 1\n", {}, {}, "unknown setting in the config file"),
    ],
)
def test_collector_errors_name_where_the_value_came_from(
    tmp_path: Path, file_text: str, env: dict[str, str], overrides: dict[str, object], origin: str
) -> None:
    from streaming.collector import FLAGS
    from streaming.config import CollectorConfigError, load_collector_config

    path = _write(tmp_path, file_text)
    with pytest.raises(CollectorConfigError) as raised:
        load_collector_config(config_file=path, environ=env, overrides=overrides, flags=FLAGS)
    message = str(raised.value)
    assert message.split(":")[0] in ("interval_s", "no_such"), message
    assert origin in message, message


def test_job_errors_name_the_environment_variable() -> None:
    with pytest.raises(
        JobConfigError, match=r"^metrics_port: .*\(from \$REBALANCE_MONITOR_METRICS_PORT\)"
    ):
        load_config(environ={"REBALANCE_MONITOR_METRICS_PORT": "70000"})


def test_the_collector_takes_the_job_s_java_settings() -> None:
    """``collect --kafka-option`` takes what ``run --kafka-option`` takes (mapped once)."""
    from streaming.config import CollectorConfig, CollectorConfigError, parse_kafka_option

    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="monitor" password="s3cret";'
    )
    java = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": jaas,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/ca.pem",
    }
    options = dict(parse_kafka_option(f"{k}={v}") for k, v in java.items())
    c = CollectorConfig(kafka_options=options)
    assert c.check_configs() == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "monitor",
        "sasl_plain_password": "s3cret",
        "ssl_cafile": "/ca.pem",
    }
    assert "s3cret" not in repr(c) and "s3cret" not in str(c.kafka)
    with pytest.raises(CollectorConfigError, match=r"location has no kafka-python"):
        CollectorConfig(kafka_options={"ssl.truststore.location": "/trust.jks"})


def test_properties_files_round_trip_and_are_private(tmp_path: Path) -> None:
    from streaming.kafka_connection import read_properties, write_properties

    options = {"sasl.jaas.config": 'x required password="a\\\\b=c";', "k": "two\nlines"}
    path = write_properties(tmp_path / "client.properties", options)
    assert read_properties(path) == options
    assert path.stat().st_mode & 0o077 == 0


def test_the_simulator_takes_the_job_s_settings_flags_over_the_environment() -> None:
    import argparse

    from streaming.simulate.cli import connection_from_args
    from streaming.simulate.member import security_options

    args = argparse.Namespace(
        bootstrap_server="h:1",
        kafka_option=['sasl.jaas.config=x required username="u" password="flag";'],
    )
    env = {
        "REBALANCE_MONITOR_KAFKA_OPTIONS": '{"security.protocol": "SASL_PLAINTEXT", '
        '"sasl.mechanism": "PLAIN", "sasl.jaas.config": "overridden"}'
    }
    c = connection_from_args(args, env)
    assert c.bootstrap_servers == ("h:1",)
    assert c.kafka_python()["sasl_plain_password"] == "flag"
    assert c.kafka_python()["security_protocol"] == "SASL_PLAINTEXT"
    with pytest.raises(ConfigError, match="REBALANCE_MONITOR_KAFKA_OPTIONS must be a JSON"):
        connection_from_args(args, {"REBALANCE_MONITOR_KAFKA_OPTIONS": "[1]"})
    assert security_options("h:1", None) == {}


def test_a_member_maps_its_client_config(tmp_path: Path) -> None:
    from streaming.kafka_connection import write_properties
    from streaming.simulate.member import security_options

    path = write_properties(
        tmp_path / "client.properties",
        {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": "/c"},
    )
    assert security_options("h:1", path) == {"security_protocol": "SSL", "ssl_cafile": "/c"}


def test_run_takes_the_group_filter_and_retention_as_flags_and_settings() -> None:
    from streaming.job import build_parser, config_from_args

    default = load_config(environ={})
    assert (default.group_filter, default.group_retention_s) == (".*", 7 * 86_400.0)
    args = build_parser().parse_args(["--group-filter", "orders-.*", "--group-retention", "3600"])
    config = config_from_args(args, environ={})
    assert (config.group_filter, config.group_retention_s) == ("orders-.*", 3600.0)
    # the collector's matching: the whole id
    assert config.group_pattern.fullmatch("orders-1")
    from streaming.config import group_matches

    assert group_matches(config.group_pattern, "orders-1")
    assert not group_matches(config.group_pattern, "my-orders-1")
    env = {"REBALANCE_MONITOR_GROUP_FILTER": "billing", "REBALANCE_MONITOR_GROUP_RETENTION_S": "0"}
    from_env = load_config(environ=env)
    assert (from_env.group_filter, from_env.group_retention_s) == ("billing", 0)


def test_the_lag_status_hold_is_read_from_the_environment() -> None:
    c = load_config(environ={"REBALANCE_MONITOR_LAG_STATUS_HOLD_S": "0"})
    assert c.lag_status_hold_s == 0
