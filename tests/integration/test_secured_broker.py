"""The local broker secured (``kafka start --security scram+tls``: SCRAM-SHA-512 over TLS,
keystores by keytool) and the clients against it: the collector publishes and a kafka-python
reader with the mapped settings reads it back; a wrong password, an untrusted certificate and
a plaintext client each get their one-line error and exit 2, for ``collect`` and for ``run``
(before Spark starts); the simulator plays scenarios with kafka-python and Java members on it;
no password reaches the output, the members' logs or the broker's log."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from streaming import kafka_local
from streaming.kafka_check import kafka_python_options
from streaming.kafka_local import BrokerConfig, BrokerInfo
from tests.conftest import free_ports
from tests.tls import make_certs

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
ENTRY = "import sys; from streaming.cli import main; sys.exit(main(sys.argv[1:]))"


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def side_by_side(argvs: Iterable[Sequence[str]]) -> list[subprocess.CompletedProcess[str]]:
    """:func:`cli` of each ``argv`` at the same time (each mostly waits on the broker)."""
    from concurrent.futures import ThreadPoolExecutor

    calls = list(argvs)
    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(lambda argv: cli(*argv), calls))


def python_options(info: BrokerInfo, **changes: str) -> list[str]:
    """``collect --kafka-option`` flags for the broker's ``monitor`` user."""
    options = {**kafka_python_options(info.kafka_options).options, **changes}
    return [f for k, v in options.items() for f in ("--kafka-option", f"{k}={v}")]


def password(info: BrokerInfo) -> str:
    jaas = info.kafka_options["sasl.jaas.config"]
    return jaas.split('password="')[1].split('"')[0]


def test_the_broker_listens_only_with_sasl_ssl(secured_broker: BrokerInfo) -> None:
    props = secured_broker.properties_path.read_text()
    assert f"listeners=SECURED://{secured_broker.bootstrap_servers}," in props
    assert "SECURED:SASL_SSL" in props
    assert secured_broker.kafka_options["security.protocol"] == "SASL_SSL"
    security = secured_broker.folder / "security"
    for name in ("ca.p12", "broker.p12", "truststore.p12", "secrets.json"):
        assert (security / name).stat().st_mode & 0o077 == 0, name  # owner only


def _collect_and_read_back(info: BrokerInfo, cluster: str) -> None:
    """``collect --once`` publishes with the broker's client settings (kafka-python's) and a
    kafka-python reader with the same settings reads its events back."""
    from kafka import KafkaConsumer

    topic = f"{cluster}.membership"
    proc = cli(
        "collect", "--once", "--bootstrap-server", info.bootstrap_servers,
        "--topic", topic, "--cluster", cluster, "--verbose", *python_options(info),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    if "sasl.jaas.config" in info.kafka_options:
        assert password(info) not in proc.stdout + proc.stderr
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=info.bootstrap_servers,
        auto_offset_reset="earliest",
        consumer_timeout_ms=15_000,
        **kafka_python_options(info.kafka_options).options,
    )
    try:
        events = [json.loads(m.value) for m in consumer]
    finally:
        consumer.close()
    assert events and {e["cluster"] for e in events} == {cluster}


def test_the_collector_publishes_and_a_reader_reads_it_back(secured_broker: BrokerInfo) -> None:
    _collect_and_read_back(secured_broker, "secured")


@pytest.mark.parametrize(("mode", "protocol"), [("scram", "SASL_PLAINTEXT"), ("tls", "SSL")])
def test_a_broker_of_each_other_mode_serves_its_settings_only(
    mode: str, protocol: str, tmp_path: Path
) -> None:
    """``kafka start --security scram`` and ``--security tls``: one client listener of that
    protocol; its own client settings publish and read, a plaintext client gets its one
    line and exit 2."""
    port, controller_port = free_ports(2)
    config = BrokerConfig(
        port=port,
        controller_port=controller_port,
        folder=tmp_path / "kafka",
        security=mode,
        startup_timeout_s=180.0,
    )
    info = kafka_local.start(config)
    try:
        props = config.properties_path.read_text()
        assert f"listeners=SECURED://{info.bootstrap_servers},CONTROLLER:" in props
        assert f"SECURED:{protocol}\n" in props
        assert info.kafka_options["security.protocol"] == protocol
        _collect_and_read_back(info, mode)
        proc = cli("collect", "--once", "--bootstrap-server", info.bootstrap_servers,
                   "--broker-check-timeout", "15")  # fmt: skip
        assert proc.returncode == 2, proc.stderr[-2000:]
        line = proc.stderr.strip()
        assert "\n" not in line and "Traceback" not in line, line
        assert line.startswith(
            f"rebalance-monitor collect: error: kafka: {info.bootstrap_servers}: "
        )
        assert "gave no Kafka answer" in line, line
    finally:
        kafka_local.stop(config)


def _refused_in_one_line(
    proc: subprocess.CompletedProcess[str], command: str, server: str, cause: str, secret: str
) -> None:
    """Exit 2 with one line naming the broker and ``cause``, no traceback, no ``secret``."""
    assert proc.returncode == 2, (cause, proc.stderr[-2000:])
    line = proc.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, line
    assert line.startswith(f"rebalance-monitor {command}: error: kafka: {server}: "), line
    assert cause in line, line
    assert secret not in line


def test_bad_client_settings_exit_2_with_their_cause(
    secured_broker: BrokerInfo, tmp_path: Path
) -> None:
    server = secured_broker.bootstrap_servers
    other_ca = make_certs(tmp_path / "certs").other_ca
    cases = [
        (python_options(secured_broker, sasl_plain_password="wrong"), "SASL authentication failed"),
        (
            python_options(secured_broker, ssl_cafile=str(other_ca)),
            "TLS handshake failed: the broker's certificate is not trusted",
        ),
        ([], "gave no Kafka answer"),  # plaintext: the check's timeout runs out
    ]
    runs = side_by_side(
        ("collect", "--once", "--bootstrap-server", server, *flags,
         "--broker-check-timeout", "5" if not flags else "15")
        for flags, _ in cases
    )  # fmt: skip
    for (_, cause), proc in zip(cases, runs, strict=True):
        _refused_in_one_line(proc, "collect", server, cause, password(secured_broker))


def test_run_checks_the_java_settings_before_spark(
    secured_broker: BrokerInfo, tmp_path: Path
) -> None:
    """``run`` (as ``demo``, through the same check) with the Java client's settings: a wrong
    password, an untrusted certificate and a plaintext client each end in one line naming
    the cause, exit 2, before Spark starts."""
    server = secured_broker.bootstrap_servers
    java = dict(secured_broker.kafka_options)
    wrong = {
        **java,
        "sasl.jaas.config": java["sasl.jaas.config"].replace(password(secured_broker), "nope"),
    }
    other_ca = make_certs(tmp_path / "certs").other_ca
    untrusted = {**java, "ssl.truststore.type": "PEM", "ssl.truststore.location": str(other_ca)}
    cases = [
        (wrong, "SASL authentication failed"),
        (untrusted, "TLS handshake failed: the broker's certificate is not trusted"),
        ({}, "gave no Kafka answer"),  # plaintext: the check's timeout runs out
    ]
    runs = side_by_side(
        ("run", "--bootstrap-server", server,
         *[f for k, v in options.items() for f in ("--kafka-option", f"{k}={v}")],
         "--broker-check-timeout", "5" if not options else "15")
        for options, _ in cases
    )  # fmt: skip
    for (_, cause), proc in zip(cases, runs, strict=True):
        _refused_in_one_line(proc, "run", server, cause, password(secured_broker))
        assert "started:" not in proc.stdout


def test_the_simulator_plays_on_the_secured_broker(
    secured_broker: BrokerInfo, tmp_path: Path
) -> None:
    """The job's Java settings, in the job's environment variable: the admin client and the
    kafka-python members map them, the Java (KIP-848) members take them as they are."""
    import os

    env = {
        **os.environ,
        "REBALANCE_MONITOR_KAFKA_OPTIONS": json.dumps(secured_broker.kafka_options),
    }
    proc = subprocess.run(
        [sys.executable, "-c", ENTRY, "simulate", "graceful-leave", "kip848", "--json",
         "--bootstrap-server", secured_broker.bootstrap_servers, "--log-dir", str(tmp_path),
         "--timeout", "120"],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-2000:])
    results = [r for r in map(json.loads, proc.stdout.splitlines()) if r.get("type") == "result"]
    assert [r["scenario"] for r in results] == ["graceful-leave", "kip848"]
    assert all(r["ok"] for r in results), results
    secret = password(secured_broker)
    assert secret not in proc.stdout + proc.stderr
    logs = list(tmp_path.rglob("*"))
    assert not [p for p in logs if p.name == "client.properties"], "removed after the run"
    assert all(secret not in p.read_text(errors="replace") for p in logs if p.is_file())


def test_no_client_password_in_the_broker_s_log(secured_broker: BrokerInfo) -> None:
    logs = "".join(p.read_text(errors="replace") for p in secured_broker.log_path.parent.glob("*"))
    assert logs and password(secured_broker) not in logs


def test_a_folder_of_another_mode_is_one_line_and_exit_2(
    kafka_broker_config: BrokerConfig,
    kafka_broker: BrokerInfo,
    secured_broker: BrokerInfo,
    tmp_path: Path,
) -> None:
    """A broker folder's storage is formatted for one mode (the SCRAM users are written at
    format time): a plaintext folder asked for SCRAM (the demo's old trap: a broker that
    never answers, a time-out) and a secured one asked for plaintext are refused at once,
    before anything starts; the running brokers are left alone."""
    plain = kafka_broker_config
    started = time.monotonic()
    cases = [
        (("kafka", "start", "--security", "scram", "--dir", str(plain.folder),
          "--port", str(plain.port)), "kafka", "'plaintext', not 'scram'"),
        (("kafka", "start", "--dir", str(secured_broker.folder),
          "--port", secured_broker.bootstrap_servers.rsplit(":", 1)[1]),
         "kafka", "'scram+tls', not 'plaintext'"),
        (("demo", "--security", "scram+tls", "--kafka-folder", str(plain.folder),
          "--kafka-port", str(plain.port), "--kafka-controller-port", str(plain.controller_port),
          "--state-dir", str(tmp_path / "demo"), "--duration", "5"),
         "demo", "'plaintext', not 'scram+tls'"),
    ]  # fmt: skip
    for argv, prog, cause in cases:
        proc = cli(*argv)
        assert proc.returncode == 2, (argv, proc.stdout[-2000:], proc.stderr[-2000:])
        line = proc.stderr.strip()
        assert "\n" not in line and "Traceback" not in line, line
        assert line.startswith(f"rebalance-monitor {prog}: error: "), line
        assert cause in line and "choose another folder" in line, line
    assert time.monotonic() - started < 90  # no start-up time-out: refused before starting
    assert not (tmp_path / "demo" / "spark.log").exists()  # the demo never got to Spark
    port = int(secured_broker.bootstrap_servers.rsplit(":", 1)[1])
    secured = BrokerConfig(
        port=port, controller_port=port + 1, folder=secured_broker.folder, security="scram+tls"
    )
    assert kafka_local.status(plain).answering and kafka_local.status(secured).answering
